//! TOTP replay refusal (used time steps) and single-use challenge tokens (CONTRACT 3).

use time::OffsetDateTime;
use trusthub_core::TotpPurpose;
use trusthub_store::{Exec, StoreResult, TenantId, on};
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

/// Until when `user_id`'s TOTP-gated actions are locked, if they are at `now`.
pub async fn locked_until(
    ex: &mut impl Exec,
    user_id: Uuid,
    now: OffsetDateTime,
) -> StoreResult<Option<OffsetDateTime>> {
    let until: Option<Option<OffsetDateTime>> = on!(ex, c => sqlx::query_scalar(
        "SELECT locked_until FROM totp_failures WHERE user_id = $1 AND locked_until > $2")
        .bind(user_id).bind(now).fetch_optional(&mut *c).await?);
    Ok(until.flatten())
}

/// Counts a wrong code of `user_id` at `now` (CONTRACT 18): wrong codes are counted in a
/// window of `window` from the first; the `max`-th within it locks the user until
/// `now + lock` (and starts the count over). Returns the lock's end when this one set it.
/// One statement counts, so concurrent wrong codes on several hub processes all count.
pub async fn record_failure(
    ex: &mut impl Exec,
    user_id: Uuid,
    now: OffsetDateTime,
    window: time::Duration,
    max: i32,
    lock: time::Duration,
) -> StoreResult<Option<OffsetDateTime>> {
    let failures: i32 = on!(ex, c => sqlx::query_scalar(
        "INSERT INTO totp_failures (user_id, failures, window_start, locked_until) VALUES ($1, 1, $2, NULL) \
         ON CONFLICT (user_id) DO UPDATE SET \
           failures = CASE WHEN totp_failures.window_start <= $3 THEN 1 ELSE totp_failures.failures + 1 END, \
           window_start = CASE WHEN totp_failures.window_start <= $3 THEN $2 ELSE totp_failures.window_start END \
         RETURNING failures")
        .bind(user_id).bind(now).bind(now - window).fetch_one(&mut *c).await?);
    if failures < max {
        return Ok(None);
    }
    let until = now + lock;
    on!(ex, c => sqlx::query(
        "UPDATE totp_failures SET locked_until = $2, failures = 0, window_start = $3 WHERE user_id = $1")
        .bind(user_id).bind(until).bind(now).execute(&mut *c).await?.rows_affected());
    Ok(Some(until))
}
