//! The drift tables: each watched path's baseline and latest report, the patterns' first
//! reports, and rebases.

use serde_json::Value;
use time::OffsetDateTime;
use trusthub_core::drift::{ConfigHash, Status};
use trusthub_store::{Exec, StoreError, StoreResult, TenantId, on};
use uuid::Uuid;

/// A watched path as stored.
#[derive(Debug, Clone)]
pub struct FileRow {
    /// The host.
    pub agent_id: Uuid,
    /// The path.
    pub path: String,
    /// Its state.
    pub status: Status,
    /// Its baseline (none for a `new` file until a rebase).
    pub baseline: Option<ConfigHash>,
    /// When the baseline was taken.
    pub baseline_at: Option<OffsetDateTime>,
    /// What the latest scan saw (none: no longer reported).
    pub current: Option<ConfigHash>,
    /// When the latest change of the report arrived.
    pub reported_at: OffsetDateTime,
    /// When the state or the file last changed.
    pub changed_at: OffsetDateTime,
    /// The package update that explains it: `{package, from_version, to_version, changed_at}`.
    pub explained: Option<Value>,
}

#[derive(sqlx::FromRow)]
struct Raw {
    agent_id: Uuid,
    path: String,
    status: String,
    baseline: Option<String>,
    baseline_at: Option<OffsetDateTime>,
    current: Option<String>,
    reported_at: OffsetDateTime,
    changed_at: OffsetDateTime,
    explained: Option<String>,
}

fn read<T: serde::de::DeserializeOwned>(
    s: Option<String>,
    what: &'static str,
) -> StoreResult<Option<T>> {
    s.map(|s| serde_json::from_str(&s).map_err(|_| StoreError::Corrupt(what)))
        .transpose()
}

impl TryFrom<Raw> for FileRow {
    type Error = StoreError;
    fn try_from(r: Raw) -> StoreResult<FileRow> {
        Ok(FileRow {
            agent_id: r.agent_id,
            path: r.path,
            status: Status::parse(&r.status).ok_or(StoreError::Corrupt("drift_files.status"))?,
            baseline: read(r.baseline, "drift_files.baseline")?,
            baseline_at: r.baseline_at,
            current: read(r.current, "drift_files.current")?,
            reported_at: r.reported_at,
            changed_at: r.changed_at,
            explained: read(r.explained, "drift_files.explained")?,
        })
    }
}

const COLUMNS: &str =
    "agent_id, path, status, baseline, baseline_at, current, reported_at, changed_at, explained";

fn json(h: Option<&ConfigHash>) -> Option<String> {
    h.map(report_json)
}

/// Every watched path of a host, by path.
pub async fn of_agent(
    ex: &mut impl Exec,
    tenant: TenantId,
    agent: Uuid,
) -> StoreResult<Vec<FileRow>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM drift_files WHERE tenant_id = $1 AND agent_id = $2 ORDER BY path"
    );
    let rows = on!(ex, c => sqlx::query_as::<_, Raw>(sqlx::AssertSqlSafe(sql)).bind(tenant.0).bind(agent).fetch_all(&mut *c).await?);
    rows.into_iter().map(FileRow::try_from).collect()
}

/// A host's reported state as stored, unparsed: `(path, current JSON)` — what a steady scan
/// is compared with before any row is read in full.
pub async fn reported(
    ex: &mut impl Exec,
    tenant: TenantId,
    agent: Uuid,
) -> StoreResult<Vec<(String, Option<String>)>> {
    Ok(on!(ex, c => sqlx::query_as::<_, (String, Option<String>)>(
        "SELECT path, current FROM drift_files WHERE tenant_id = $1 AND agent_id = $2 ORDER BY path")
        .bind(tenant.0).bind(agent).fetch_all(&mut *c).await?))
}

/// The JSON a report is stored as (deterministic: the same report, the same text).
pub fn report_json(h: &ConfigHash) -> String {
    serde_json::to_string(h).unwrap_or_default()
}

/// The tenant's watched paths, optionally of one host and in one state.
pub async fn list(
    ex: &mut impl Exec,
    tenant: TenantId,
    agent: Option<Uuid>,
    status: Option<Status>,
) -> StoreResult<Vec<FileRow>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM drift_files WHERE tenant_id = $1 AND ($2 IS NULL OR agent_id = $2) \
         AND ($3 IS NULL OR status = $3) ORDER BY agent_id, path"
    );
    let rows = on!(ex, c => sqlx::query_as::<_, Raw>(sqlx::AssertSqlSafe(sql)).bind(tenant.0).bind(agent)
        .bind(status.map(Status::as_str)).fetch_all(&mut *c).await?);
    rows.into_iter().map(FileRow::try_from).collect()
}

/// Inserts new rows, many per statement.
pub async fn insert_many(
    ex: &mut impl Exec,
    tenant: TenantId,
    rows: &[FileRow],
) -> StoreResult<()> {
    for chunk in rows.chunks(trusthub_store::ROWS_PER_INSERT) {
        let sql = format!(
            "INSERT INTO drift_files (tenant_id, {COLUMNS}) VALUES {}",
            trusthub_store::values(chunk.len(), 10)
        );
        on!(ex, c => {
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql.clone()));
            for r in chunk {
                q = q.bind(tenant.0).bind(r.agent_id).bind(&r.path).bind(r.status.as_str())
                    .bind(json(r.baseline.as_ref())).bind(r.baseline_at).bind(json(r.current.as_ref()))
                    .bind(r.reported_at).bind(r.changed_at).bind(r.explained.as_ref().map(Value::to_string));
            }
            q.execute(&mut *c).await?.rows_affected()
        });
    }
    Ok(())
}

/// Rewrites a row (its baseline, report and state).
pub async fn update(ex: &mut impl Exec, tenant: TenantId, r: &FileRow) -> StoreResult<()> {
    on!(ex, c => sqlx::query(
        "UPDATE drift_files SET status = $1, baseline = $2, baseline_at = $3, current = $4, reported_at = $5, \
         changed_at = $6, explained = $7 WHERE tenant_id = $8 AND agent_id = $9 AND path = $10")
        .bind(r.status.as_str()).bind(json(r.baseline.as_ref())).bind(r.baseline_at).bind(json(r.current.as_ref()))
        .bind(r.reported_at).bind(r.changed_at).bind(r.explained.as_ref().map(Value::to_string))
        .bind(tenant.0).bind(r.agent_id).bind(&r.path).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// Forgets paths no longer watched.
pub async fn delete(
    ex: &mut impl Exec,
    tenant: TenantId,
    agent: Uuid,
    path: &str,
) -> StoreResult<()> {
    on!(ex, c => sqlx::query("DELETE FROM drift_files WHERE tenant_id = $1 AND agent_id = $2 AND path = $3")
        .bind(tenant.0).bind(agent).bind(path).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// The patterns of a host already reported, with their first report.
pub async fn patterns(
    ex: &mut impl Exec,
    agent: Uuid,
) -> StoreResult<Vec<(String, OffsetDateTime)>> {
    Ok(on!(ex, c => sqlx::query_as::<_, (String, OffsetDateTime)>(
        "SELECT pattern, first_reported_at FROM drift_patterns WHERE agent_id = $1")
        .bind(agent).fetch_all(&mut *c).await?))
}

/// Records the first report of patterns.
pub async fn add_patterns(
    ex: &mut impl Exec,
    agent: Uuid,
    patterns: &[&str],
    now: OffsetDateTime,
) -> StoreResult<()> {
    for p in patterns {
        on!(ex, c => sqlx::query(
            "INSERT INTO drift_patterns (agent_id, pattern, first_reported_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING")
            .bind(agent).bind(*p).bind(now).execute(&mut *c).await?.rows_affected());
    }
    Ok(())
}

/// A rebase as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Rebase {
    /// Id.
    pub id: Uuid,
    /// The host.
    pub agent_id: Uuid,
    /// `[{path, previous_sha256, sha256}]`.
    pub paths: String,
    /// `{type, id, email?}`.
    pub by_actor: String,
    /// Made by an infrastructure service account's token.
    pub infrastructure: bool,
    /// Why.
    pub reason: String,
    /// When.
    pub at: OffsetDateTime,
}

/// Records a rebase.
pub async fn insert_rebase(ex: &mut impl Exec, tenant: TenantId, r: &Rebase) -> StoreResult<()> {
    on!(ex, c => sqlx::query(
        "INSERT INTO drift_rebases (id, tenant_id, agent_id, paths, by_actor, infrastructure, reason, at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)")
        .bind(r.id).bind(tenant.0).bind(r.agent_id).bind(&r.paths).bind(&r.by_actor).bind(r.infrastructure)
        .bind(&r.reason).bind(r.at).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// The host's latest rebase made at or after `since`.
pub async fn last_rebase(
    ex: &mut impl Exec,
    agent: Uuid,
    since: OffsetDateTime,
) -> StoreResult<Option<Rebase>> {
    Ok(on!(ex, c => sqlx::query_as::<_, Rebase>(
        "SELECT id, agent_id, paths, by_actor, infrastructure, reason, at FROM drift_rebases \
         WHERE agent_id = $1 AND at >= $2 ORDER BY at DESC LIMIT 1")
        .bind(agent).bind(since).fetch_optional(&mut *c).await?))
}

/// The host's rebases, newest first.
pub async fn rebases(
    ex: &mut impl Exec,
    tenant: TenantId,
    agent: Uuid,
    limit: i64,
) -> StoreResult<Vec<Rebase>> {
    Ok(on!(ex, c => sqlx::query_as::<_, Rebase>(
        "SELECT id, agent_id, paths, by_actor, infrastructure, reason, at FROM drift_rebases \
         WHERE tenant_id = $1 AND agent_id = $2 ORDER BY at DESC LIMIT $3")
        .bind(tenant.0).bind(agent).bind(limit).fetch_all(&mut *c).await?))
}
