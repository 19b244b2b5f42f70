//! Operator commands of the fleet run against the database directly (`trusthub up`).

use crate::state::now;
use serde_json::json;
use trusthub_core::audit as ev;
use trusthub_identity::admin::AdminError;
use trusthub_store::{Db, audit};

/// A one-hour enrollment token for the tenant named `tenant` (used by `trusthub up` to enrol
/// its local agent). The token is returned once and stored hashed.
pub async fn local_enrollment_token(db: &Db, tenant: &str) -> Result<String, AdminError> {
    let now = now();
    let mut tx = db.begin().await?;
    let t = trusthub_identity::tenant_by_name(&mut tx, tenant)
        .await?
        .ok_or_else(|| AdminError::Invalid(format!("no tenant named {tenant}")))?;
    let token = trusthub_core::secret::new_token(trusthub_core::agent::ENROLLMENT_TOKEN_PREFIX)
        .map_err(|e| AdminError::Invalid(e.to_string()))?;
    let hash = trusthub_core::secret::token_hash(&token);
    let id = crate::store::agents::insert_enrollment_token(
        &mut tx,
        &crate::store::agents::NewEnrollmentToken {
            tenant: t.tenant_id(),
            token_hash: &hash,
            tags: &["local".to_owned()],
            created_by: None,
            now,
            expires_at: now + time::Duration::hours(1),
            single_use: false,
        },
    )
    .await?;
    audit::append(
        &mut tx,
        t.tenant_id(),
        &audit::NewEntry {
            event_type: ev::ENROLLMENT_TOKEN_CREATED,
            actor: "system".into(),
            subject: format!("enrollment_token:{id}"),
            details: json!({"purpose": "trusthub up local agent"}),
            ip: None,
            request_id: None,
        },
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(token)
}
