//! Password-reset tokens: single use, short-lived, stored hashed.

use time::OffsetDateTime;
use trusthub_store::{Exec, StoreResult, TenantId, on};
use uuid::Uuid;

/// Stores a reset token for a user.
pub async fn insert(
    ex: &mut impl Exec,
    tenant: TenantId,
    user_id: Uuid,
    token_hash: &str,
    now: OffsetDateTime,
    expires_at: OffsetDateTime,
) -> StoreResult<()> {
    on!(ex, c => sqlx::query(
        "INSERT INTO password_resets (id, tenant_id, user_id, token_hash, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)")
        .bind(Uuid::now_v7()).bind(tenant.0).bind(user_id).bind(token_hash).bind(now).bind(expires_at)
        .execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// Spends the unexpired, unused token with this hash; returns its tenant and user.
pub async fn consume(
    ex: &mut impl Exec,
    token_hash: &str,
    now: OffsetDateTime,
) -> StoreResult<Option<(TenantId, Uuid)>> {
    let row: Option<(Uuid, Uuid)> = on!(ex, c => sqlx::query_as(
        "UPDATE password_resets SET used_at = $1 WHERE token_hash = $2 AND used_at IS NULL AND expires_at > $1 \
         RETURNING tenant_id, user_id")
        .bind(now).bind(token_hash).fetch_optional(&mut *c).await?);
    Ok(row.map(|(t, u)| (TenantId(t), u)))
}

/// Invalidates every outstanding token of a user (after a reset, the others must die too).
pub async fn revoke_for_user(
    ex: &mut impl Exec,
    tenant: TenantId,
    user_id: Uuid,
    now: OffsetDateTime,
) -> StoreResult<()> {
    on!(ex, c => sqlx::query("UPDATE password_resets SET used_at = $1 WHERE tenant_id = $2 AND user_id = $3 AND used_at IS NULL")
        .bind(now).bind(tenant.0).bind(user_id).execute(&mut *c).await?.rows_affected());
    Ok(())
}
