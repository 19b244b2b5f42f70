//! Integrity anomalies (CONTRACT 14): what an operator must look at — a client certificate of
//! another agent, a revoked or expired one, a pinned agent's batch with a bad signature.

use time::OffsetDateTime;
use trusthub_store::{Exec, StoreResult, TenantId, on};
use uuid::Uuid;

/// An anomaly row.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Anomaly {
    /// Id.
    pub id: Uuid,
    /// Tenant.
    pub tenant_id: Uuid,
    /// The agent concerned.
    pub agent_id: Option<Uuid>,
    /// `cert_cn_mismatch`, `revoked_cert_used`, ...
    pub kind: String,
    /// For a human.
    pub detail: String,
    /// JSON object: what was seen.
    pub evidence: String,
    /// When.
    pub created_at: OffsetDateTime,
    /// Resolved at.
    pub resolved_at: Option<OffsetDateTime>,
    /// `user:<id>`.
    pub resolved_by: Option<String>,
}

const COLUMNS: &str =
    "id, tenant_id, agent_id, kind, detail, evidence, created_at, resolved_at, resolved_by";

/// Stores a new anomaly.
pub async fn insert(ex: &mut impl Exec, a: &Anomaly) -> StoreResult<()> {
    let sql = format!(
        "INSERT INTO integrity_anomalies ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, NULL, NULL)"
    );
    on!(ex, c => sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(a.id).bind(a.tenant_id).bind(a.agent_id).bind(&a.kind).bind(&a.detail)
        .bind(&a.evidence).bind(a.created_at).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// Whether an unresolved anomaly of this kind is open for the agent.
pub async fn open_exists(
    ex: &mut impl Exec,
    tenant: TenantId,
    agent_id: Uuid,
    kind: &str,
) -> StoreResult<bool> {
    let n: i64 = on!(ex, c => sqlx::query_scalar(
        "SELECT COUNT(*) FROM integrity_anomalies WHERE tenant_id = $1 AND agent_id = $2 AND kind = $3 AND resolved_at IS NULL")
        .bind(tenant.0).bind(agent_id).bind(kind).fetch_one(&mut *c).await?);
    Ok(n > 0)
}

/// The tenant's anomalies, newest first; resolved ones only with `include_resolved`.
pub async fn list(
    ex: &mut impl Exec,
    tenant: TenantId,
    include_resolved: bool,
    limit: i64,
) -> StoreResult<Vec<Anomaly>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM integrity_anomalies WHERE tenant_id = $1 AND ($2 OR resolved_at IS NULL) \
         ORDER BY created_at DESC, id DESC LIMIT $3"
    );
    Ok(
        on!(ex, c => sqlx::query_as::<_, Anomaly>(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).bind(include_resolved).bind(limit).fetch_all(&mut *c).await?),
    )
}

/// One anomaly of the tenant.
pub async fn get(ex: &mut impl Exec, tenant: TenantId, id: Uuid) -> StoreResult<Option<Anomaly>> {
    let sql = format!("SELECT {COLUMNS} FROM integrity_anomalies WHERE tenant_id = $1 AND id = $2");
    Ok(
        on!(ex, c => sqlx::query_as::<_, Anomaly>(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).bind(id).fetch_optional(&mut *c).await?),
    )
}

/// Resolves an open anomaly; false when it was resolved already.
pub async fn resolve(
    ex: &mut impl Exec,
    tenant: TenantId,
    id: Uuid,
    by: &str,
    now: OffsetDateTime,
) -> StoreResult<bool> {
    let n = on!(ex, c => sqlx::query(
        "UPDATE integrity_anomalies SET resolved_at = $1, resolved_by = $2 WHERE tenant_id = $3 AND id = $4 AND resolved_at IS NULL")
        .bind(now).bind(by).bind(tenant.0).bind(id).execute(&mut *c).await?.rows_affected());
    Ok(n == 1)
}

/// How many anomalies of the tenant are open (the overview).
pub async fn open_count(ex: &mut impl Exec, tenant: TenantId) -> StoreResult<i64> {
    Ok(on!(ex, c => sqlx::query_scalar(
        "SELECT COUNT(*) FROM integrity_anomalies WHERE tenant_id = $1 AND resolved_at IS NULL")
        .bind(tenant.0).fetch_one(&mut *c).await?))
}
