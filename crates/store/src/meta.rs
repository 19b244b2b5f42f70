//! Hub-wide facts kept once per database (first-start bootstrap).

use crate::{Exec, StoreResult, on};
use time::OffsetDateTime;

/// Claims a one-time key. Exactly one caller, across every process sharing the database,
/// gets `true`; a concurrent claimer waits for the winner's transaction and then gets
/// `false`. Call it inside the transaction that does the one-time work.
pub async fn claim(
    ex: &mut impl Exec,
    key: &str,
    value: &str,
    now: OffsetDateTime,
) -> StoreResult<bool> {
    let n = on!(ex, c => sqlx::query("INSERT INTO hub_meta (key, value, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING")
        .bind(key).bind(value).bind(now).execute(&mut *c).await?.rows_affected());
    Ok(n == 1)
}

/// Whether any tenant exists.
pub async fn has_tenants(ex: &mut impl Exec) -> StoreResult<bool> {
    Ok(
        on!(ex, c => sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM tenants").fetch_one(&mut *c).await?)
            > 0,
    )
}

/// The value of a key, if set.
pub async fn get(ex: &mut impl Exec, key: &str) -> StoreResult<Option<String>> {
    Ok(
        on!(ex, c => sqlx::query_scalar::<_, String>("SELECT value FROM hub_meta WHERE key = $1")
        .bind(key).fetch_optional(&mut *c).await?),
    )
}

/// Whether anyone ever logged in (the first owner's generated password is pointed at until
/// then).
pub async fn anyone_logged_in(ex: &mut impl Exec) -> StoreResult<bool> {
    Ok(on!(ex, c => sqlx::query_scalar::<_, i64>(
        "SELECT COUNT(*) FROM (SELECT 1 FROM audit_log WHERE event_type = 'login_succeeded' LIMIT 1) t")
        .fetch_one(&mut *c).await?)
        > 0)
}
