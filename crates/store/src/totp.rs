//! TOTP replay refusal (used time steps) and single-use challenge tokens (CONTRACT 3).

use crate::{Exec, StoreResult, TenantId, on};
use time::OffsetDateTime;
use trusthub_core::TotpPurpose;
use uuid::Uuid;

/// Marks a time step of a user as spent; false when it was spent already (a replay).
pub async fn spend_step(
    ex: &mut impl Exec,
    user_id: Uuid,
    step: i64,
    now: OffsetDateTime,
) -> StoreResult<bool> {
    let n = on!(ex, c => sqlx::query("INSERT INTO totp_used_steps (user_id, step, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING")
        .bind(user_id).bind(step).bind(now).execute(&mut *c).await?.rows_affected());
    Ok(n == 1)
}

/// Forgets spent steps older than `before` (they can no longer verify anyway).
pub async fn purge_steps(ex: &mut impl Exec, before: OffsetDateTime) -> StoreResult<u64> {
    Ok(
        on!(ex, c => sqlx::query("DELETE FROM totp_used_steps WHERE created_at < $1")
        .bind(before).execute(&mut *c).await?.rows_affected()),
    )
}

/// Stores a challenge token (its hash) for one purpose.
pub async fn insert_challenge(
    ex: &mut impl Exec,
    tenant: TenantId,
    user_id: Uuid,
    token_hash: &str,
    purpose: TotpPurpose,
    now: OffsetDateTime,
    expires_at: OffsetDateTime,
) -> StoreResult<()> {
    on!(ex, c => sqlx::query(
        "INSERT INTO totp_challenges (id, tenant_id, user_id, token_hash, purpose, created_at, expires_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)")
        .bind(Uuid::now_v7()).bind(tenant.0).bind(user_id).bind(token_hash).bind(purpose.as_str()).bind(now).bind(expires_at)
        .execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// Spends a challenge token: true only once, for its own user and purpose, before expiry.
pub async fn consume_challenge(
    ex: &mut impl Exec,
    tenant: TenantId,
    user_id: Uuid,
    token_hash: &str,
    purpose: TotpPurpose,
    now: OffsetDateTime,
) -> StoreResult<bool> {
    let n = on!(ex, c => sqlx::query(
        "UPDATE totp_challenges SET used_at = $1 WHERE token_hash = $2 AND tenant_id = $3 AND user_id = $4 \
         AND purpose = $5 AND used_at IS NULL AND expires_at > $1")
        .bind(now).bind(token_hash).bind(tenant.0).bind(user_id).bind(purpose.as_str())
        .execute(&mut *c).await?.rows_affected());
    Ok(n == 1)
}

/// Replaces a user's recovery codes with `hashes` (their SHA-256, hex).
pub async fn replace_recovery_codes(
    ex: &mut impl Exec,
    user_id: Uuid,
    hashes: &[String],
    now: OffsetDateTime,
) -> StoreResult<()> {
    on!(ex, c => sqlx::query("DELETE FROM totp_recovery_codes WHERE user_id = $1")
        .bind(user_id).execute(&mut *c).await?.rows_affected());
    for h in hashes {
        on!(ex, c => sqlx::query(
            "INSERT INTO totp_recovery_codes (user_id, code_hash, created_at) VALUES ($1, $2, $3)")
            .bind(user_id).bind(h).bind(now).execute(&mut *c).await?.rows_affected());
    }
    Ok(())
}

/// Spends a recovery code: true only once per code.
pub async fn use_recovery_code(
    ex: &mut impl Exec,
    user_id: Uuid,
    hash: &str,
    now: OffsetDateTime,
) -> StoreResult<bool> {
    let n = on!(ex, c => sqlx::query(
        "UPDATE totp_recovery_codes SET used_at = $1 WHERE user_id = $2 AND code_hash = $3 AND used_at IS NULL")
        .bind(now).bind(user_id).bind(hash).execute(&mut *c).await?.rows_affected());
    Ok(n == 1)
}

/// Recovery codes a user has left.
pub async fn recovery_codes_left(ex: &mut impl Exec, user_id: Uuid) -> StoreResult<i64> {
    Ok(on!(ex, c => sqlx::query_scalar::<_, i64>(
        "SELECT COUNT(*) FROM totp_recovery_codes WHERE user_id = $1 AND used_at IS NULL")
        .bind(user_id).fetch_one(&mut *c).await?))
}
