//! Each app's availability timeline (the liveness verdicts as spans) and its maintenance
//! windows (CONTRACT 16): written by the liveness check, read by SLOs.

use time::OffsetDateTime;
use trusthub_store::{Exec, Handle, StoreResult, TenantId, on};
use uuid::Uuid;

/// A span as stored (Unix seconds).
#[derive(sqlx::FromRow)]
struct Row {
    id: i64,
    app_id: Uuid,
    start_s: i64,
    end_s: i64,
    down: bool,
}

fn at(s: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(s).unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

impl From<Row> for Span {
    fn from(r: Row) -> Span {
        Span {
            id: r.id,
            app_id: r.app_id,
            start_at: at(r.start_s),
            end_at: at(r.end_s),
            down: r.down,
        }
    }
}

fn spans_of(rows: Vec<Row>) -> Vec<Span> {
    rows.into_iter().map(Span::from).collect()
}

/// A span of an app's timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    /// Row id.
    pub id: i64,
    /// The app.
    pub app_id: Uuid,
    /// Start.
    pub start_at: OffsetDateTime,
    /// End (exclusive).
    pub end_at: OffsetDateTime,
    /// Whether the observed state differed from the expected one.
    pub down: bool,
}

/// The last span of each app that has one.
pub async fn last_spans(ex: &mut impl Exec) -> StoreResult<Vec<Span>> {
    let rows: Vec<Row> = on!(ex, c => sqlx::query_as(
        "SELECT t.id, t.app_id, t.start_s, t.end_s, t.down FROM app_timeline t \
         JOIN (SELECT app_id, MAX(id) AS id FROM app_timeline GROUP BY app_id) m ON m.id = t.id")
        .fetch_all(&mut *c).await?);
    Ok(spans_of(rows))
}

/// Extends a span to `end`.
pub async fn extend(ex: &mut impl Exec, id: i64, end: OffsetDateTime) -> StoreResult<()> {
    on!(ex, c => sqlx::query("UPDATE app_timeline SET end_s = $1 WHERE id = $2")
        .bind(end.unix_timestamp()).bind(id).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// The last span of one app.
pub async fn last_span(ex: &mut impl Exec, app: Uuid) -> StoreResult<Option<Span>> {
    let row: Option<Row> = on!(ex, c => sqlx::query_as(
        "SELECT id, app_id, start_s, end_s, down FROM app_timeline WHERE app_id = $1 ORDER BY id DESC LIMIT 1")
        .bind(app).fetch_optional(&mut *c).await?);
    Ok(row.map(Span::from))
}

/// Appends a span.
pub async fn append(
    ex: &mut impl Exec,
    app: Uuid,
    start: OffsetDateTime,
    end: OffsetDateTime,
    down: bool,
) -> StoreResult<()> {
    on!(ex, c => sqlx::query("INSERT INTO app_timeline (app_id, start_s, end_s, down) VALUES ($1, $2, $3, $4)")
        .bind(app).bind(start.unix_timestamp()).bind(end.unix_timestamp()).bind(down).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// The spans of an app ending after `since`, oldest first.
pub async fn spans(ex: &mut impl Exec, app: Uuid, since: OffsetDateTime) -> StoreResult<Vec<Span>> {
    let rows: Vec<Row> = on!(ex, c => sqlx::query_as(
        "SELECT id, app_id, start_s, end_s, down FROM app_timeline WHERE app_id = $1 AND end_s > $2 ORDER BY start_s, id")
        .bind(app).bind(since.unix_timestamp()).fetch_all(&mut *c).await?);
    Ok(spans_of(rows))
}

/// The spans of the tenant's apps ending after `since` (in no particular order: callers
/// group them by app and sort).
pub async fn spans_of_tenant(
    ex: &mut impl Exec,
    tenant: TenantId,
    since: OffsetDateTime,
) -> StoreResult<Vec<Span>> {
    let rows: Vec<Row> = on!(ex, c => sqlx::query_as(
        "SELECT t.id, t.app_id, t.start_s, t.end_s, t.down FROM app_timeline t \
         WHERE t.app_id IN (SELECT id FROM apps WHERE tenant_id = $1) AND t.end_s > $2")
        .bind(tenant.0).bind(since.unix_timestamp()).fetch_all(&mut *c).await?);
    Ok(spans_of(rows))
}

/// The spans of `apps` ending after `since`, by app, oldest first: `(start, end, down)` in
/// Unix seconds. Each app's come packed in one JSON array, which both engines build and
/// serde reads far faster than typed rows (a status page reads 90 days of 50 apps).
pub async fn spans_of_apps(
    ex: &mut impl Exec,
    apps: &[Uuid],
    since: OffsetDateTime,
) -> StoreResult<std::collections::HashMap<Uuid, Vec<(i64, i64, bool)>>> {
    let mut out = std::collections::HashMap::new();
    for chunk in apps.chunks(500) {
        let packed: Vec<(String, String)> = match ex.handle() {
            Handle::Sqlite(c) => {
                let mut qb = sqlx::QueryBuilder::<sqlx::Sqlite>::new(
                    "SELECT hex(app_id), json_group_array(json_array(start_s, end_s, down)) FROM \
                     (SELECT app_id, start_s, end_s, down FROM app_timeline WHERE end_s > ",
                );
                qb.push_bind(since.unix_timestamp())
                    .push(" AND app_id IN (");
                let mut list = qb.separated(", ");
                for a in chunk {
                    list.push_bind(*a);
                }
                qb.push(") ORDER BY app_id, start_s, id) GROUP BY app_id");
                qb.build_query_as().fetch_all(&mut *c).await?
            }
            Handle::Postgres(c) => {
                sqlx::query_as(
                    "SELECT app_id::text, json_agg(json_build_array(start_s, end_s, down) \
                     ORDER BY start_s, id)::text FROM app_timeline \
                     WHERE app_id = ANY($1) AND end_s > $2 GROUP BY app_id",
                )
                .bind(chunk.to_vec())
                .bind(since.unix_timestamp())
                .fetch_all(&mut *c)
                .await?
            }
        };
        let bad = |what: &'static str| trusthub_store::StoreError::Corrupt(what);
        for (id, rows) in packed {
            let id = Uuid::parse_str(&id).map_err(|_| bad("app_timeline.app_id"))?;
            let rows: Vec<(i64, i64, serde_json::Value)> =
                serde_json::from_str(&rows).map_err(|_| bad("app_timeline (packed spans)"))?;
            out.insert(
                id,
                rows.into_iter()
                    .map(|(a, b, d)| (a, b, d.as_bool().unwrap_or(d.as_i64() == Some(1))))
                    .collect(),
            );
        }
    }
    Ok(out)
}

/// Deletes spans that ended before `before` (retention), through each app's key (spans go
/// with their app).
pub async fn purge(ex: &mut impl Exec, before: OffsetDateTime) -> StoreResult<u64> {
    let apps = "SELECT id FROM apps";
    trusthub_store::purge_by_key(
        ex,
        "app_timeline",
        "app_id",
        apps,
        "end_s",
        before.unix_timestamp(),
    )
    .await
}

/// A maintenance window.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct Maintenance {
    /// Id.
    pub id: Uuid,
    /// Tenant.
    pub tenant_id: Uuid,
    /// The app.
    pub app_id: Uuid,
    /// Start.
    pub starts_at: OffsetDateTime,
    /// End.
    pub ends_at: OffsetDateTime,
    /// Why.
    pub reason: String,
    /// Who.
    pub created_by: String,
    /// When.
    pub created_at: OffsetDateTime,
}

const MAINT_COLUMNS: &str =
    "id, tenant_id, app_id, starts_at, ends_at, reason, created_by, created_at";

/// Stores a window.
pub async fn insert_maintenance(ex: &mut impl Exec, m: &Maintenance) -> StoreResult<()> {
    let sql = format!(
        "INSERT INTO maintenance_windows ({MAINT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
    );
    on!(ex, c => sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(m.id).bind(m.tenant_id).bind(m.app_id).bind(m.starts_at).bind(m.ends_at)
        .bind(&m.reason).bind(&m.created_by).bind(m.created_at)
        .execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// An app's windows ending after `since`, by start.
pub async fn maintenance(
    ex: &mut impl Exec,
    tenant: TenantId,
    app: Uuid,
    since: OffsetDateTime,
) -> StoreResult<Vec<Maintenance>> {
    let sql = format!(
        "SELECT {MAINT_COLUMNS} FROM maintenance_windows WHERE tenant_id = $1 AND app_id = $2 AND ends_at > $3 ORDER BY starts_at, id"
    );
    Ok(on!(ex, c => sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).bind(app).bind(since).fetch_all(&mut *c).await?))
}

/// Every app's windows open at `at` (for liveness).
pub async fn in_maintenance(ex: &mut impl Exec, at: OffsetDateTime) -> StoreResult<Vec<Uuid>> {
    let rows: Vec<(Uuid,)> = on!(ex, c => sqlx::query_as(
        "SELECT DISTINCT app_id FROM maintenance_windows WHERE starts_at <= $1 AND ends_at > $1")
        .bind(at).fetch_all(&mut *c).await?);
    Ok(rows.into_iter().map(|r| r.0).collect())
}

/// One window of the tenant.
pub async fn maintenance_window(
    ex: &mut impl Exec,
    tenant: TenantId,
    id: Uuid,
) -> StoreResult<Option<Maintenance>> {
    let sql =
        format!("SELECT {MAINT_COLUMNS} FROM maintenance_windows WHERE tenant_id = $1 AND id = $2");
    Ok(on!(ex, c => sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).bind(id).fetch_optional(&mut *c).await?))
}

/// Deletes a window.
pub async fn delete_maintenance(
    ex: &mut impl Exec,
    tenant: TenantId,
    id: Uuid,
) -> StoreResult<bool> {
    Ok(
        on!(ex, c => sqlx::query("DELETE FROM maintenance_windows WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.0).bind(id).execute(&mut *c).await?.rows_affected())
            > 0,
    )
}

/// The tenant's windows of apps with an SLO ending after `since`, by app.
pub async fn maintenance_of_tenant(
    ex: &mut impl Exec,
    tenant: TenantId,
    since: OffsetDateTime,
) -> StoreResult<Vec<Maintenance>> {
    let sql = format!(
        "SELECT {MAINT_COLUMNS} FROM maintenance_windows WHERE tenant_id = $1 AND ends_at > $2 ORDER BY app_id, starts_at"
    );
    Ok(on!(ex, c => sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).bind(since).fetch_all(&mut *c).await?))
}

/// The last span of each of `apps` that has one (the pings of a batch read them at once).
pub async fn last_spans_of_apps(ex: &mut impl Exec, apps: &[Uuid]) -> StoreResult<Vec<Span>> {
    let mut out = Vec::new();
    for chunk in apps.chunks(500) {
        let rows: Vec<Row> = on!(ex, c => {
            let mut qb = sqlx::QueryBuilder::new(
                "SELECT id, app_id, start_s, end_s, down FROM app_timeline WHERE id IN \
                 (SELECT MAX(id) FROM app_timeline WHERE app_id IN (",
            );
            let mut list = qb.separated(", ");
            for a in chunk {
                list.push_bind(*a);
            }
            qb.push(") GROUP BY app_id)");
            qb.build_query_as().fetch_all(&mut *c).await?
        });
        out.extend(spans_of(rows));
    }
    Ok(out)
}

/// Writes many spans at once: `ends` moves existing spans' ends (`(id, end)`), then `new`
/// appends spans (`(app, start, end, down)`) in their order.
pub async fn save_spans(
    ex: &mut impl Exec,
    ends: &[(i64, OffsetDateTime)],
    new: &[(Uuid, OffsetDateTime, OffsetDateTime, bool)],
) -> StoreResult<()> {
    for chunk in ends.chunks(trusthub_store::ROWS_PER_INSERT) {
        let sql = format!(
            "WITH v(id, end_s) AS (VALUES {}) UPDATE app_timeline SET end_s = v.end_s \
             FROM v WHERE app_timeline.id = v.id",
            trusthub_store::values(chunk.len(), 2)
        );
        on!(ex, c => {
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql.clone()));
            for (id, end) in chunk {
                q = q.bind(*id).bind(end.unix_timestamp());
            }
            q.execute(&mut *c).await?.rows_affected()
        });
    }
    for chunk in new.chunks(trusthub_store::ROWS_PER_INSERT) {
        let sql = format!(
            "INSERT INTO app_timeline (app_id, start_s, end_s, down) VALUES {}",
            trusthub_store::values(chunk.len(), 4)
        );
        on!(ex, c => {
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql.clone()));
            for (app, start, end, down) in chunk {
                q = q.bind(*app).bind(start.unix_timestamp()).bind(end.unix_timestamp()).bind(*down);
            }
            q.execute(&mut *c).await?.rows_affected()
        });
    }
    Ok(())
}

/// The windows of `apps` open at some time in `[from, to]`: `(app, start, end)`.
pub async fn maintenance_of_apps(
    ex: &mut impl Exec,
    apps: &[Uuid],
    from: OffsetDateTime,
    to: OffsetDateTime,
) -> StoreResult<Vec<(Uuid, OffsetDateTime, OffsetDateTime)>> {
    let mut out = Vec::new();
    for chunk in apps.chunks(500) {
        let rows: Vec<(Uuid, OffsetDateTime, OffsetDateTime)> = on!(ex, c => {
            let mut qb = sqlx::QueryBuilder::new(
                "SELECT app_id, starts_at, ends_at FROM maintenance_windows WHERE starts_at <= ",
            );
            qb.push_bind(to).push(" AND ends_at > ").push_bind(from).push(" AND app_id IN (");
            let mut list = qb.separated(", ");
            for a in chunk {
                list.push_bind(*a);
            }
            qb.push(")");
            qb.build_query_as().fetch_all(&mut *c).await?
        });
        out.extend(rows);
    }
    Ok(out)
}
