//! npm packages as the registry shows them (SPEC 2.7, CONTRACT 15): maintainer sets, their
//! changes, deprecation, and the polling state (ETag, next try).

use time::OffsetDateTime;
use trusthub_store::{Exec, StoreResult, on};

/// A package row.
#[derive(Debug, Clone, Default, sqlx::FromRow)]
pub struct Package {
    /// Package name (`@scope/name` for scoped ones).
    pub name: String,
    /// The registry's ETag of the last packument (for `If-None-Match`).
    pub etag: Option<String>,
    /// JSON array, sorted.
    pub maintainers: String,
    /// JSON array, the set before the last change (`[]` before any).
    pub previous_maintainers: String,
    /// The latest version's deprecation message.
    pub deprecated: Option<String>,
    /// `dist-tags.latest`.
    pub latest_version: Option<String>,
    /// When the hub saw the last change of the maintainer set.
    pub changed_at: Option<OffsetDateTime>,
    /// The packument's `time.modified` when that change was seen.
    pub registry_modified_at: Option<OffsetDateTime>,
    /// Last answer of the registry (200 or 304).
    pub fetched_at: Option<OffsetDateTime>,
    /// Not asked again before (after a 429 or an error).
    pub retry_at: Option<OffsetDateTime>,
    /// Failures in a row.
    pub failures: i64,
    /// The last failure.
    pub last_error: Option<String>,
}

const COLUMNS: &str = "name, etag, maintainers, previous_maintainers, deprecated, latest_version, \
    changed_at, registry_modified_at, fetched_at, retry_at, failures, last_error";

/// Every package known.
pub async fn all(ex: &mut impl Exec) -> StoreResult<Vec<Package>> {
    let sql = format!("SELECT {COLUMNS} FROM npm_packages");
    Ok(on!(ex, c => sqlx::query_as(sqlx::AssertSqlSafe(sql)).fetch_all(&mut *c).await?))
}

/// Packages whose maintainer set changed at or after `since`.
pub async fn changed_since(ex: &mut impl Exec, since: OffsetDateTime) -> StoreResult<Vec<Package>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM npm_packages WHERE changed_at >= $1 ORDER BY changed_at DESC, name"
    );
    Ok(on!(ex, c => sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(since).fetch_all(&mut *c).await?))
}

/// Inserts or replaces a package's row.
pub async fn save(ex: &mut impl Exec, p: &Package) -> StoreResult<()> {
    on!(ex, c => {
        sqlx::query("DELETE FROM npm_packages WHERE name = $1").bind(&p.name).execute(&mut *c).await?;
        let sql = format!("INSERT INTO npm_packages ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)");
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(&p.name).bind(&p.etag).bind(&p.maintainers).bind(&p.previous_maintainers)
            .bind(&p.deprecated).bind(&p.latest_version).bind(p.changed_at).bind(p.registry_modified_at)
            .bind(p.fetched_at).bind(p.retry_at).bind(p.failures).bind(&p.last_error)
            .execute(&mut *c).await?;
    });
    Ok(())
}
