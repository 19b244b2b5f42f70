//! Leases: periodic work that must run once per cluster takes a named lease first, so with
//! several hub processes on one PostgreSQL database only the holder ticks (CONTRACT 11).

use crate::{Exec, StoreResult, on};
use time::OffsetDateTime;

/// Takes or renews the lease `name` for `holder` until `until`; true when `holder` has it.
/// A lease held by another process is taken over only once it has expired.
pub async fn acquire(
    ex: &mut impl Exec,
    name: &str,
    holder: &str,
    now: OffsetDateTime,
    until: OffsetDateTime,
) -> StoreResult<bool> {
    let got = on!(ex, c => sqlx::query_scalar::<_, String>(
        "INSERT INTO leases (name, holder, expires_at) VALUES ($1, $2, $3) \
         ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at \
         WHERE leases.holder = excluded.holder OR leases.expires_at < $4 RETURNING holder")
        .bind(name).bind(holder).bind(until).bind(now).fetch_optional(&mut *c).await?);
    Ok(got.as_deref() == Some(holder))
}
