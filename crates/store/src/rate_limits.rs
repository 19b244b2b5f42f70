//! Fixed-window rate-limit counters shared by every hub process on one database.

use crate::{Exec, StoreResult, on};

/// Counts one hit of `key` in the window that starts at `window_start` (unix seconds) and
/// returns the count including this hit. Atomic on both engines (one upsert statement).
pub async fn hit(ex: &mut impl Exec, key: &str, window_start: i64) -> StoreResult<i64> {
    Ok(on!(ex, c => sqlx::query_scalar::<_, i64>(
        "INSERT INTO rate_limit_counters (key, window_start, count) VALUES ($1, $2, 1) \
         ON CONFLICT (key, window_start) DO UPDATE SET count = rate_limit_counters.count + 1 RETURNING count")
        .bind(key).bind(window_start).fetch_one(&mut *c).await?))
}

/// Drops windows that ended before `before` (unix seconds).
pub async fn purge(ex: &mut impl Exec, before: i64) -> StoreResult<u64> {
    Ok(
        on!(ex, c => sqlx::query("DELETE FROM rate_limit_counters WHERE window_start < $1")
        .bind(before).execute(&mut *c).await?.rows_affected()),
    )
}
