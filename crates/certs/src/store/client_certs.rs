//! Client certificates issued by the hub CA (CONTRACT 12, 14): at most one active certificate
//! per agent (a partial unique index), rotation in one transaction, revocation, the CRL's rows.

use time::OffsetDateTime;
use trusthub_store::{Exec, StoreResult, TenantId, on};
use uuid::Uuid;

/// A certificate row.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ClientCert {
    /// Serial number, lowercase hex.
    pub serial: String,
    /// Tenant (the certificate's OU).
    pub tenant_id: Uuid,
    /// Agent (the certificate's CN).
    pub agent_id: Uuid,
    /// SHA-256 of the certificate DER, lowercase hex.
    pub fingerprint_sha256: String,
    /// The certificate.
    pub certificate_pem: String,
    /// The hub made the key pair (no CSR) and handed the key out once.
    pub key_generated_by_hub: bool,
    /// Valid from.
    pub not_before: OffsetDateTime,
    /// Valid until.
    pub not_after: OffsetDateTime,
    /// Issued.
    pub created_at: OffsetDateTime,
    /// Revoked at.
    pub revoked_at: Option<OffsetDateTime>,
    /// Why (`rotated`, `agent_deleted`, or an admin's words).
    pub revoke_reason: Option<String>,
    /// Last request that presented it (batched).
    pub last_seen_at: Option<OffsetDateTime>,
}

const COLUMNS: &str = "serial, tenant_id, agent_id, fingerprint_sha256, certificate_pem, key_generated_by_hub, \
    not_before, not_after, created_at, revoked_at, revoke_reason, last_seen_at";

/// Revokes the agent's active certificate as `rotated` and stores `cert` as the active one;
/// call inside a transaction. A concurrent issuance for the same agent makes the insert fail
/// with a conflict on `client_certs_one_active` (the caller retries).
pub async fn rotate(ex: &mut impl Exec, cert: &ClientCert) -> StoreResult<()> {
    on!(ex, c => {
        sqlx::query("UPDATE client_certs SET revoked_at = $1, revoke_reason = 'rotated' \
             WHERE agent_id = $2 AND revoked_at IS NULL")
            .bind(cert.created_at).bind(cert.agent_id).execute(&mut *c).await?;
        let sql = format!("INSERT INTO client_certs ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, NULL, NULL, NULL)");
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(&cert.serial).bind(cert.tenant_id).bind(cert.agent_id).bind(&cert.fingerprint_sha256)
            .bind(&cert.certificate_pem).bind(cert.key_generated_by_hub).bind(cert.not_before)
            .bind(cert.not_after).bind(cert.created_at)
            .execute(&mut *c).await?;
    });
    Ok(())
}

/// An agent's certificates, newest first.
pub async fn list(
    ex: &mut impl Exec,
    tenant: TenantId,
    agent_id: Uuid,
) -> StoreResult<Vec<ClientCert>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM client_certs WHERE tenant_id = $1 AND agent_id = $2 ORDER BY created_at DESC, serial DESC"
    );
    Ok(
        on!(ex, c => sqlx::query_as::<_, ClientCert>(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).bind(agent_id).fetch_all(&mut *c).await?),
    )
}

/// One certificate of the tenant's agent.
pub async fn get(
    ex: &mut impl Exec,
    tenant: TenantId,
    agent_id: Uuid,
    serial: &str,
) -> StoreResult<Option<ClientCert>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM client_certs WHERE tenant_id = $1 AND agent_id = $2 AND serial = $3"
    );
    Ok(
        on!(ex, c => sqlx::query_as::<_, ClientCert>(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).bind(agent_id).bind(serial).fetch_optional(&mut *c).await?),
    )
}

/// The certificate with this fingerprint (any tenant: the TLS layer knows no tenant).
pub async fn by_fingerprint(
    ex: &mut impl Exec,
    fingerprint: &str,
) -> StoreResult<Option<ClientCert>> {
    let sql = format!("SELECT {COLUMNS} FROM client_certs WHERE fingerprint_sha256 = $1");
    Ok(
        on!(ex, c => sqlx::query_as::<_, ClientCert>(sqlx::AssertSqlSafe(sql))
        .bind(fingerprint).fetch_optional(&mut *c).await?),
    )
}

/// The tenant's agents holding an active certificate (neither revoked nor expired at `now`)
/// with its end of validity.
pub async fn active_by_agent(
    ex: &mut impl Exec,
    tenant: TenantId,
    now: OffsetDateTime,
) -> StoreResult<std::collections::HashMap<Uuid, OffsetDateTime>> {
    let rows: Vec<(Uuid, OffsetDateTime)> = on!(ex, c => sqlx::query_as(
        "SELECT agent_id, not_after FROM client_certs \
         WHERE tenant_id = $1 AND revoked_at IS NULL AND not_after > $2")
        .bind(tenant.0).bind(now).fetch_all(&mut *c).await?);
    Ok(rows.into_iter().collect())
}

/// Records that a certificate was presented.
pub async fn touch(ex: &mut impl Exec, serial: &str, now: OffsetDateTime) -> StoreResult<()> {
    on!(ex, c => sqlx::query("UPDATE client_certs SET last_seen_at = $1 WHERE serial = $2")
        .bind(now).bind(serial).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// Revokes one certificate; false when it was revoked already (or is not the tenant's).
pub async fn revoke(
    ex: &mut impl Exec,
    tenant: TenantId,
    serial: &str,
    reason: &str,
    now: OffsetDateTime,
) -> StoreResult<bool> {
    let n = on!(ex, c => sqlx::query(
        "UPDATE client_certs SET revoked_at = $1, revoke_reason = $2 \
         WHERE tenant_id = $3 AND serial = $4 AND revoked_at IS NULL")
        .bind(now).bind(reason).bind(tenant.0).bind(serial).execute(&mut *c).await?.rows_affected());
    Ok(n == 1)
}

/// Every revoked certificate still within its validity (an expired one needs no CRL entry),
/// for the CRL: `(serial, revoked_at, reason)`.
pub async fn revoked(
    ex: &mut impl Exec,
    now: OffsetDateTime,
) -> StoreResult<Vec<(String, OffsetDateTime, Option<String>)>> {
    Ok(on!(ex, c => sqlx::query_as(
        "SELECT serial, revoked_at, revoke_reason FROM client_certs \
         WHERE revoked_at IS NOT NULL AND not_after > $1 ORDER BY revoked_at, serial")
        .bind(now).fetch_all(&mut *c).await?))
}

/// Revokes every active certificate of an agent (when it is deleted); how many.
pub async fn revoke_all_of_agent(
    ex: &mut impl Exec,
    tenant: TenantId,
    agent_id: Uuid,
    reason: &str,
    now: OffsetDateTime,
) -> StoreResult<u64> {
    Ok(on!(ex, c => sqlx::query(
        "UPDATE client_certs SET revoked_at = $1, revoke_reason = $2 \
         WHERE tenant_id = $3 AND agent_id = $4 AND revoked_at IS NULL")
        .bind(now).bind(reason).bind(tenant.0).bind(agent_id).execute(&mut *c).await?.rows_affected()))
}
