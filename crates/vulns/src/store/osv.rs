//! Advisory data in the OSV schema (CONTRACT 15): one row per advisory and scope (`""` for
//! hub-wide data, a tenant id for a tenant's own upload), its package index, and the
//! per-ecosystem summary of `GET /cve/sources`.

use time::OffsetDateTime;
use trusthub_store::{Exec, StoreResult, on};

/// One advisory as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Advisory {
    /// `""` (hub-wide) or a tenant id.
    pub scope: String,
    /// OSV id.
    pub id: String,
    /// The record's `modified`.
    pub modified: OffsetDateTime,
    /// The record was withdrawn (it matches nothing).
    pub withdrawn: bool,
    /// JSON array of other ids.
    pub aliases: String,
    /// Summary (or the first line of details).
    pub summary: String,
    /// `CRITICAL` … `UNKNOWN`.
    pub severity: String,
    /// CVSS base score when a vector gave one.
    pub cvss_score: Option<f64>,
    /// The OSV JSON.
    pub record: String,
    /// When this version of it was imported.
    pub imported_at: OffsetDateTime,
}

/// What storing an advisory did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// New.
    Inserted,
    /// A newer `modified` replaced the stored one.
    Updated,
    /// The stored one is as new or newer: nothing changed.
    Unchanged,
}

const COLUMNS: &str =
    "scope, id, modified, withdrawn, aliases, summary, severity, cvss_score, record, imported_at";

/// Stores `a` with its packages (`(ecosystem, name)`) unless the stored version is as new.
pub async fn upsert(
    ex: &mut impl Exec,
    a: &Advisory,
    packages: &[(String, String)],
) -> StoreResult<Stored> {
    let existing: Option<OffsetDateTime> = on!(ex, c => sqlx::query_scalar(
        "SELECT modified FROM osv_advisories WHERE scope = $1 AND id = $2")
        .bind(&a.scope).bind(&a.id).fetch_optional(&mut *c).await?);
    let outcome = match existing {
        Some(m) if m >= a.modified => return Ok(Stored::Unchanged),
        Some(_) => Stored::Updated,
        None => Stored::Inserted,
    };
    on!(ex, c => {
        sqlx::query("DELETE FROM osv_advisories WHERE scope = $1 AND id = $2")
            .bind(&a.scope).bind(&a.id).execute(&mut *c).await?;
        sqlx::query("DELETE FROM osv_packages WHERE scope = $1 AND advisory_id = $2")
            .bind(&a.scope).bind(&a.id).execute(&mut *c).await?;
        let sql = format!("INSERT INTO osv_advisories ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)");
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(&a.scope).bind(&a.id).bind(a.modified).bind(a.withdrawn).bind(&a.aliases)
            .bind(&a.summary).bind(&a.severity).bind(a.cvss_score).bind(&a.record).bind(a.imported_at)
            .execute(&mut *c).await?;
        for (eco, name) in packages {
            sqlx::query("INSERT INTO osv_packages (scope, ecosystem, name, advisory_id) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT DO NOTHING")
                .bind(&a.scope).bind(eco).bind(name).bind(&a.id).execute(&mut *c).await?;
        }
    });
    Ok(outcome)
}

/// The advisories naming one package, visible to `tenant` (hub-wide and its own), in
/// `ecosystem` or a variant of it (`Ubuntu:22.04` also finds `Ubuntu:22.04:LTS`).
pub async fn for_package(
    ex: &mut impl Exec,
    tenant: &str,
    ecosystem: &str,
    name: &str,
) -> StoreResult<Vec<Advisory>> {
    let sql = format!(
        "SELECT {} FROM osv_advisories a JOIN osv_packages p ON p.scope = a.scope AND p.advisory_id = a.id \
         WHERE p.scope IN ('', $1) AND (p.ecosystem = $2 OR p.ecosystem LIKE $4) AND p.name = $3 ORDER BY a.id, a.scope",
        COLUMNS
            .split(", ")
            .map(|c| format!("a.{c}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(
        on!(ex, c => sqlx::query_as::<_, Advisory>(sqlx::AssertSqlSafe(sql))
        .bind(tenant).bind(ecosystem).bind(name).bind(format!("{ecosystem}:%")).fetch_all(&mut *c).await?),
    )
}

/// Every `(scope, ecosystem, name)` advisories name: the scan pass's index, so packages no
/// advisory names (most of a host's) cost no query.
pub async fn package_names(ex: &mut impl Exec) -> StoreResult<Vec<(String, String, String)>> {
    Ok(on!(ex, c => sqlx::query_as(
        "SELECT DISTINCT scope, ecosystem, name FROM osv_packages")
        .fetch_all(&mut *c).await?))
}

/// When advisory data last changed (any scope).
pub async fn newest_import(ex: &mut impl Exec) -> StoreResult<Option<OffsetDateTime>> {
    let rows: Vec<(OffsetDateTime,)> = on!(ex, c => sqlx::query_as(
        "SELECT imported_at FROM osv_advisories ORDER BY imported_at DESC LIMIT 1")
        .fetch_all(&mut *c).await?);
    Ok(rows.into_iter().next().map(|r| r.0))
}

/// What identifies the advisory data's state for caches: the newest import and the number
/// of package entries (two imports within one second still differ unless they add nothing).
pub async fn generation(ex: &mut impl Exec) -> StoreResult<(Option<OffsetDateTime>, i64)> {
    let newest = newest_import(&mut *ex).await?;
    let (n,): (i64,) = on!(ex, c => sqlx::query_as("SELECT COUNT(*) FROM osv_packages")
        .fetch_one(&mut *c).await?);
    Ok((newest, n))
}

/// A LIKE pattern finding `id` as a JSON string inside a JSON array (escaped with `\`).
pub fn json_member_pattern(id: &str) -> String {
    let quoted = serde_json::to_string(id).unwrap_or_default();
    format!(
        "%{}%",
        quoted
            .replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_")
    )
}

/// One advisory by id or alias, visible to `tenant`: the one with that id first (its own
/// upload before hub-wide data), else one naming it as an alias.
pub async fn get(ex: &mut impl Exec, tenant: &str, id: &str) -> StoreResult<Option<Advisory>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM osv_advisories WHERE scope IN ('', $1) AND (id = $2 OR aliases LIKE $3 ESCAPE '\\') \
         ORDER BY CASE WHEN id = $2 THEN 0 ELSE 1 END, scope DESC, id LIMIT 1"
    );
    Ok(
        on!(ex, c => sqlx::query_as::<_, Advisory>(sqlx::AssertSqlSafe(sql))
        .bind(tenant).bind(id).bind(json_member_pattern(id)).fetch_optional(&mut *c).await?),
    )
}

/// Per ecosystem: advisories, the newest `modified`, the last import (visible to `tenant`).
pub async fn sources(
    ex: &mut impl Exec,
    tenant: &str,
) -> StoreResult<Vec<(String, i64, OffsetDateTime, OffsetDateTime)>> {
    Ok(on!(ex, c => sqlx::query_as(
        "SELECT p.ecosystem, COUNT(DISTINCT a.id), MAX(a.modified), MAX(a.imported_at) \
         FROM osv_packages p JOIN osv_advisories a ON a.scope = p.scope AND a.id = p.advisory_id \
         WHERE p.scope IN ('', $1) AND NOT a.withdrawn GROUP BY p.ecosystem ORDER BY p.ecosystem")
        .bind(tenant).fetch_all(&mut *c).await?))
}

/// The pull state of one ecosystem of `TRUSTHUB_OSV_URL`.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Pull {
    /// OSV ecosystem (a folder of the bucket).
    pub ecosystem: String,
    /// The newest `modified` of modified_id.csv imported.
    pub high_water: Option<String>,
    /// The last pull.
    pub pulled_at: OffsetDateTime,
    /// Records it imported.
    pub records: i64,
    /// Its failure.
    pub last_error: Option<String>,
}

/// Every ecosystem's pull state.
pub async fn pulls(ex: &mut impl Exec) -> StoreResult<Vec<Pull>> {
    Ok(on!(ex, c => sqlx::query_as(
        "SELECT ecosystem, high_water, pulled_at, records, last_error FROM osv_pulls ORDER BY ecosystem")
        .fetch_all(&mut *c).await?))
}

/// Records a pull.
pub async fn save_pull(ex: &mut impl Exec, p: &Pull) -> StoreResult<()> {
    on!(ex, c => {
        sqlx::query("DELETE FROM osv_pulls WHERE ecosystem = $1").bind(&p.ecosystem).execute(&mut *c).await?;
        sqlx::query("INSERT INTO osv_pulls (ecosystem, high_water, pulled_at, records, last_error) VALUES ($1, $2, $3, $4, $5)")
            .bind(&p.ecosystem).bind(&p.high_water).bind(p.pulled_at).bind(p.records).bind(&p.last_error)
            .execute(&mut *c).await?;
    });
    Ok(())
}
