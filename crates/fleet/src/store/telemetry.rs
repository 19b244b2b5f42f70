//! What agents report: ingest de-duplication, metric series and points, inventory
//! snapshots (latest plus history) and process lists. Everything of one batch is written in
//! the caller's transaction.

use sqlx::types::Json;
use std::collections::{BTreeMap, HashMap};
use time::OffsetDateTime;
use trusthub_core::agent::MetricSample;
use trusthub_store::{Exec, Handle, StoreResult, TenantId, on};
use uuid::Uuid;

/// Remembers several batch ids at once; returns those that were new.
pub async fn claim_batches(
    ex: &mut impl Exec,
    batches: &[(Uuid, Uuid)],
    now: OffsetDateTime,
) -> StoreResult<std::collections::HashSet<(Uuid, Uuid)>> {
    if batches.is_empty() {
        return Ok(Default::default());
    }
    let rows: Vec<(Uuid, Uuid)> = match ex.handle() {
        Handle::Postgres(c) => {
            let mut qb = sqlx::QueryBuilder::<sqlx::Postgres>::new(
                "INSERT INTO ingest_batches (agent_id, batch_id, received_at) ",
            );
            qb.push_values(batches, |mut b, (a, id)| {
                b.push_bind(*a).push_bind(*id).push_bind(now);
            });
            qb.push(" ON CONFLICT DO NOTHING RETURNING agent_id, batch_id");
            qb.build_query_as().fetch_all(&mut *c).await?
        }
        Handle::Sqlite(c) => {
            let mut qb = sqlx::QueryBuilder::<sqlx::Sqlite>::new(
                "INSERT INTO ingest_batches (agent_id, batch_id, received_at) ",
            );
            qb.push_values(batches, |mut b, (a, id)| {
                b.push_bind(*a).push_bind(*id).push_bind(now);
            });
            qb.push(" ON CONFLICT DO NOTHING RETURNING agent_id, batch_id");
            qb.build_query_as().fetch_all(&mut *c).await?
        }
    };
    Ok(rows.into_iter().collect())
}

/// Forgets batch ids received before `before`.
pub async fn purge_batches(ex: &mut impl Exec, before: OffsetDateTime) -> StoreResult<u64> {
    Ok(
        on!(ex, c => sqlx::query("DELETE FROM ingest_batches WHERE received_at < $1")
        .bind(before).execute(&mut *c).await?.rows_affected()),
    )
}

/// Unix milliseconds of a timestamp.
pub fn unix_ms(t: OffsetDateTime) -> i64 {
    (t.unix_timestamp_nanos() / 1_000_000) as i64
}

fn labels_key(labels: &BTreeMap<String, String>) -> String {
    serde_json::to_string(labels).unwrap_or_else(|_| "{}".into())
}

/// Series ids and agent numbers (`agents.seq`, the first part of the points' key) already
/// known, so a batch of known series needs no lookup. Entries never go stale: a series lives
/// as long as its agent, an agent keeps its number, and a deleted agent can send nothing more.
#[derive(Debug, Default)]
pub struct SeriesCache(std::sync::Mutex<Known>);

#[derive(Debug, Default)]
struct Known {
    series: HashMap<(Uuid, String, String), i64>,
    agents: HashMap<Uuid, i64>,
}

impl SeriesCache {
    fn series(&self, agent: Uuid, name: &str, labels: &str) -> Option<i64> {
        let known = self.0.lock().ok()?;
        known
            .series
            .get(&(agent, name.to_owned(), labels.to_owned()))
            .copied()
    }

    fn agent_seq(&self, agent: Uuid) -> Option<i64> {
        self.0.lock().ok()?.agents.get(&agent).copied()
    }

    /// Remembers what resolving a batch looked up. Call it only after the transaction that
    /// may have created the series committed: an id from a rolled-back transaction would
    /// point nowhere.
    pub fn learn(&self, agent: Uuid, learned: Learned) {
        if learned.agent_seq.is_none() && learned.series.is_empty() {
            return;
        }
        if let Ok(mut known) = self.0.lock() {
            if known.series.len() > 1_000_000 {
                *known = Known::default();
            }
            if let Some(seq) = learned.agent_seq {
                known.agents.insert(agent, seq);
            }
            for (name, labels, id) in learned.series {
                known.series.insert((agent, name, labels), id);
            }
        }
    }
}

/// What resolving a batch's series looked up in the database, for [`SeriesCache::learn`].
#[derive(Debug, Default)]
pub struct Learned {
    /// The agent's number, when it was not known.
    pub agent_seq: Option<i64>,
    /// Series: name, labels, id.
    pub series: Vec<(String, String, i64)>,
}

/// What [`insert_samples`] did.
#[derive(Debug, Default)]
pub struct Inserted {
    /// Points that were new.
    pub points: u64,
    /// What was looked up, for [`SeriesCache::learn`] after the commit.
    pub learned: Learned,
}

async fn series_id(
    ex: &mut impl Exec,
    agent_id: Uuid,
    name: &str,
    labels: &str,
) -> StoreResult<i64> {
    let inserted: Option<i64> = on!(ex, c => sqlx::query_scalar(
        "INSERT INTO metric_series (agent_id, name, labels) VALUES ($1, $2, $3) ON CONFLICT (agent_id, name, labels) DO NOTHING RETURNING id")
        .bind(agent_id).bind(name).bind(labels).fetch_optional(&mut *c).await?);
    if let Some(id) = inserted {
        return Ok(id);
    }
    Ok(
        on!(ex, c => sqlx::query_scalar("SELECT id FROM metric_series WHERE agent_id = $1 AND name = $2 AND labels = $3")
        .bind(agent_id).bind(name).bind(labels).fetch_one(&mut *c).await?),
    )
}

/// Resolves the series of each sample (from the cache, else the database, creating missing
/// series) and returns the rows to insert plus the ids to learn after the commit.
pub async fn resolve_series(
    ex: &mut impl Exec,
    agent_id: Uuid,
    samples: &[MetricSample],
    cache: &SeriesCache,
    rows: &mut PointRows,
) -> StoreResult<Learned> {
    let mut learned = Learned::default();
    if samples.is_empty() {
        return Ok(learned);
    }
    let seq = match cache.agent_seq(agent_id) {
        Some(seq) => seq,
        None => {
            let seq: i64 = on!(ex, c => sqlx::query_scalar("SELECT seq FROM agents WHERE id = $1")
                .bind(agent_id).fetch_one(&mut *c).await?);
            learned.agent_seq = Some(seq);
            seq
        }
    };
    let mut ids: HashMap<(&str, String), i64> = HashMap::new();
    for s in samples {
        let key = (s.name.as_str(), labels_key(&s.labels));
        let id = match ids.get(&key) {
            Some(id) => *id,
            None => {
                let id = match cache.series(agent_id, key.0, &key.1) {
                    Some(id) => id,
                    None => {
                        let id = series_id(ex, agent_id, key.0, &key.1).await?;
                        learned.series.push((key.0.to_owned(), key.1.clone(), id));
                        id
                    }
                };
                ids.insert(key, id);
                id
            }
        };
        rows.agents.push(seq);
        rows.series.push(id);
        rows.ts.push(unix_ms(s.ts));
        rows.values.push(s.value);
    }
    Ok(learned)
}

/// Points to insert, column by column.
#[derive(Debug, Default)]
pub struct PointRows {
    /// Agent numbers (`agents.seq`, the first part of the points' key).
    pub agents: Vec<i64>,
    /// Series ids.
    pub series: Vec<i64>,
    /// Unix milliseconds.
    pub ts: Vec<i64>,
    /// Values.
    pub values: Vec<f64>,
}

/// Stores samples (a sample repeating a series' timestamp is kept once).
pub async fn insert_samples(
    ex: &mut impl Exec,
    agent_id: Uuid,
    samples: &[MetricSample],
    cache: &SeriesCache,
) -> StoreResult<Inserted> {
    let mut rows = PointRows::default();
    let learned = resolve_series(ex, agent_id, samples, cache, &mut rows).await?;
    let (points, _) = insert_points(ex, &rows, None).await?;
    Ok(Inserted { points, learned })
}

/// Inserts points and folds the new ones into the rollups; returns how many were new. With
/// `log_at` (forwarding is on: unix milliseconds of now), the new points' keys are appended
/// to the metric log in the same transaction, and (SQLite) the new points are answered with
/// their log rows, for handing to forwarding after the commit.
pub async fn insert_points(
    ex: &mut impl Exec,
    rows: &PointRows,
    log_at: Option<i64>,
) -> StoreResult<(u64, Option<crate::store::metric_log::Committed>)> {
    let (agents, series, ts, values) = (&rows.agents, &rows.series, &rows.ts, &rows.values);
    if series.is_empty() {
        return Ok((0, None));
    }
    // Insert, keeping only the points that were new (a repeated (series, ts) is kept once
    // and must not be counted twice in the rollups).
    let new_points: Vec<Point> = match ex.handle() {
        Handle::Postgres(c) => {
            sqlx::query_as(
                "INSERT INTO metric_points (agent_seq, ts, series_id, value) \
                 SELECT * FROM UNNEST($1::BIGINT[], $2::BIGINT[], $3::BIGINT[], $4::DOUBLE PRECISION[]) \
                 ON CONFLICT DO NOTHING RETURNING agent_seq, series_id, ts, value",
            )
            .bind(agents)
            .bind(ts)
            .bind(series)
            .bind(values)
            .fetch_all(&mut *c)
            .await?
        }
        Handle::Sqlite(c) => {
            // One multi-row VALUES list per 8,000 rows (4 variables a row; SQLite allows
            // 32766). Compiling it anew each group costs less than either alternative measured
            // (fixed-size statements padded to one shape, or one JSON array read with
            // json_each: bench/RESULTS.md). RETURNING would hand every row back through sqlx's
            // worker channel one message at a time; instead all rows are inserted and, only
            // when fewer were new than sent (rare: a re-sent sample), rolled back to a
            // savepoint, and the new ones found by reading the keys that exist.
            sqlx::query("SAVEPOINT points").execute(&mut *c).await?;
            let mut affected = 0;
            for start in (0..series.len()).step_by(8_000) {
                let chunk = start..(start + 8_000).min(series.len());
                let mut qb = sqlx::QueryBuilder::<sqlx::Sqlite>::new(
                    "INSERT INTO metric_points (agent_seq, ts, series_id, value) ",
                );
                qb.push_values(chunk, |mut b, i| {
                    b.push_bind(agents[i])
                        .push_bind(ts[i])
                        .push_bind(series[i])
                        .push_bind(values[i]);
                });
                qb.push(" ON CONFLICT DO NOTHING");
                affected += qb.build().execute(&mut *c).await?.rows_affected();
            }
            let all = (0..series.len()).map(|i| (agents[i], series[i], ts[i], values[i]));
            if affected as usize == series.len() {
                sqlx::query("RELEASE points").execute(&mut *c).await?;
                all.collect()
            } else {
                // Some points were stored already (an agent re-sending after losing its spool
                // state). Undo, read which of the batch's keys exist with one range read per
                // agent, and insert only the others: a repeated point costs a key lookup, not
                // a statement of its own (it cost ten times a new batch).
                sqlx::query("ROLLBACK TO points").execute(&mut *c).await?;
                sqlx::query("RELEASE points").execute(&mut *c).await?;
                let mut ranges: std::collections::BTreeMap<i64, (i64, i64)> = Default::default();
                for i in 0..series.len() {
                    let r = ranges.entry(agents[i]).or_insert((ts[i], ts[i]));
                    r.0 = r.0.min(ts[i]);
                    r.1 = r.1.max(ts[i]);
                }
                let mut stored: std::collections::HashSet<(i64, i64, i64)> = Default::default();
                for (agent, (from, to)) in ranges {
                    let keys: Vec<(i64, i64)> = sqlx::query_as(
                        "SELECT ts, series_id FROM metric_points WHERE agent_seq = $1 AND ts BETWEEN $2 AND $3",
                    )
                    .bind(agent)
                    .bind(from)
                    .bind(to)
                    .fetch_all(&mut *c)
                    .await?;
                    stored.extend(keys.into_iter().map(|(t, s)| (agent, t, s)));
                }
                // New points, each once (a batch may repeat itself too).
                let mut rows: Vec<Point> = Vec::with_capacity(series.len());
                for (agent, s, t, v) in all {
                    if stored.insert((agent, t, s)) {
                        rows.push((agent, s, t, v));
                    }
                }
                for chunk in rows.chunks(8_000) {
                    let mut qb = sqlx::QueryBuilder::<sqlx::Sqlite>::new(
                        "INSERT INTO metric_points (agent_seq, ts, series_id, value) ",
                    );
                    qb.push_values(chunk, |mut b, (agent, s, t, v)| {
                        b.push_bind(*agent).push_bind(*t).push_bind(*s).push_bind(*v);
                    });
                    qb.build().execute(&mut *c).await?;
                }
                rows
            }
        }
    };
    let inserted = new_points.len() as u64;
    let mut logged = None;
    if let Some(at) = log_at {
        let keys: std::collections::BTreeSet<(i64, i64)> =
            new_points.iter().map(|(a, _, t, _)| (*a, *t)).collect();
        logged = crate::store::metric_log::append(ex, &keys, at)
            .await?
            .map(|ids| (ids, at));
    }
    for table in &ROLLUP_TABLES {
        upsert_rollup(ex, table, &rollup(&new_points, table.width)).await?;
    }
    let committed =
        logged.map(
            |((first_id, last_id), stored_at)| crate::store::metric_log::Committed {
                first_id,
                last_id,
                stored_at,
                points: new_points,
            },
        );
    Ok((inserted, committed))
}

/// One minute in milliseconds.
pub const MINUTE_MS: i64 = 60_000;
/// One hour in milliseconds.
pub const HOUR_MS: i64 = 3_600_000;

/// A stored point: agent number, series, unix milliseconds, value.
type Point = (i64, i64, i64, f64);

/// count, sum, min and max of points per (agent number, bucket start, series).
type Rollup = BTreeMap<(i64, i64, i64), (i64, f64, f64, f64)>;

fn rollup(points: &[Point], width: i64) -> Rollup {
    let mut out = Rollup::new();
    for (agent, series, ts, v) in points {
        let e = out
            .entry((*agent, ts.div_euclid(width) * width, *series))
            .or_insert((0, 0.0, *v, *v));
        e.0 += 1;
        e.1 += v;
        e.2 = e.2.min(*v);
        e.3 = e.3.max(*v);
    }
    out
}

/// A rollup table: its name and bucket width.
struct RollupTable {
    name: &'static str,
    width: i64,
}

const ROLLUP_TABLES: [RollupTable; 2] = [
    RollupTable {
        name: "metric_rollup_1m",
        width: MINUTE_MS,
    },
    RollupTable {
        name: "metric_rollup_1h",
        width: HOUR_MS,
    },
];

impl RollupTable {
    /// The `ON CONFLICT` end of an upsert: folds the new row into the stored one, with the
    /// engine's two-argument minimum and maximum (`LEAST`/`GREATEST` or `MIN`/`MAX`).
    fn on_conflict(&self, least: &str, greatest: &str) -> String {
        let t = self.name;
        format!(
            " ON CONFLICT (agent_seq, bucket, series_id) DO UPDATE SET count = {t}.count + excluded.count, \
             sum = {t}.sum + excluded.sum, min = {least}({t}.min, excluded.min), \
             max = {greatest}({t}.max, excluded.max)"
        )
    }
}

async fn upsert_rollup(ex: &mut impl Exec, table: &RollupTable, rows: &Rollup) -> StoreResult<()> {
    if rows.is_empty() {
        return Ok(());
    }
    match ex.handle() {
        Handle::Postgres(c) => {
            let n = rows.len();
            let (mut agents, mut buckets, mut series, mut counts) = (
                Vec::with_capacity(n),
                Vec::with_capacity(n),
                Vec::with_capacity(n),
                Vec::with_capacity(n),
            );
            let (mut sums, mut mins, mut maxs) = (
                Vec::with_capacity(n),
                Vec::with_capacity(n),
                Vec::with_capacity(n),
            );
            for ((agent, bucket, s), (count, sum, lo, hi)) in rows {
                agents.push(*agent);
                buckets.push(*bucket);
                series.push(*s);
                counts.push(*count);
                sums.push(*sum);
                mins.push(*lo);
                maxs.push(*hi);
            }
            // One text per table, so sqlx prepares it once per connection.
            let sql = format!(
                "INSERT INTO {} (agent_seq, bucket, series_id, count, sum, min, max) \
                 SELECT * FROM UNNEST($1::BIGINT[], $2::BIGINT[], $3::BIGINT[], $4::BIGINT[], \
                 $5::DOUBLE PRECISION[], $6::DOUBLE PRECISION[], $7::DOUBLE PRECISION[]){}",
                table.name,
                table.on_conflict("LEAST", "GREATEST")
            );
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(agents)
                .bind(buckets)
                .bind(series)
                .bind(counts)
                .bind(sums)
                .bind(mins)
                .bind(maxs)
                .execute(&mut *c)
                .await?;
        }
        Handle::Sqlite(c) => {
            // One multi-row VALUES list: compiling it costs less than reading the rows out of
            // one JSON array (measured, bench/RESULTS.md). 7 variables a row; SQLite allows
            // 32766.
            let conflict = table.on_conflict("MIN", "MAX");
            let rows: Vec<_> = rows.iter().collect();
            for chunk in rows.chunks(4000) {
                let mut qb = sqlx::QueryBuilder::<sqlx::Sqlite>::new("INSERT INTO ");
                qb.push(table.name);
                qb.push(" (agent_seq, bucket, series_id, count, sum, min, max) ");
                qb.push_values(chunk, |mut b, ((agent, k, s), (n, sum, lo, hi))| {
                    b.push_bind(*agent)
                        .push_bind(*k)
                        .push_bind(*s)
                        .push_bind(*n)
                        .push_bind(*sum)
                        .push_bind(*lo)
                        .push_bind(*hi);
                });
                qb.push(&conflict);
                qb.build().execute(&mut *c).await?;
            }
        }
    }
    Ok(())
}

/// Deletes raw points older than `before_ms`, and minute rollups older than
/// `minute_before_ms` (hour rollups are kept).
pub async fn purge_points(
    ex: &mut impl Exec,
    before_ms: i64,
    minute_before_ms: i64,
) -> StoreResult<u64> {
    let raw = on!(ex, c => sqlx::query("DELETE FROM metric_points WHERE ts < $1").bind(before_ms).execute(&mut *c).await?.rows_affected());
    let minutes = on!(ex, c => sqlx::query("DELETE FROM metric_rollup_1m WHERE bucket < $1").bind(minute_before_ms).execute(&mut *c).await?.rows_affected());
    Ok(raw + minutes)
}

/// Appends an inventory snapshot.
pub async fn insert_inventory(
    ex: &mut impl Exec,
    agent_id: Uuid,
    collected_at: OffsetDateTime,
    snapshot: &serde_json::Value,
    now: OffsetDateTime,
) -> StoreResult<()> {
    on!(ex, c => sqlx::query("INSERT INTO inventory_snapshots (agent_id, collected_at, received_at, snapshot) VALUES ($1, $2, $3, $4)")
        .bind(agent_id).bind(collected_at).bind(now).bind(Json(snapshot)).execute(&mut *c).await?.rows_affected());
    // What cloud discovery matches a host by (CONTRACT 23), kept beside the host.
    let addrs: Vec<&str> = snapshot["network"]["interfaces"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|i| i["addrs"].as_array().into_iter().flatten())
        .filter_map(|a| a.as_str())
        .collect();
    let instance = snapshot["cloud"]["instance_id"].as_str();
    on!(ex, c => sqlx::query("UPDATE agents SET net_addrs = $1, cloud_instance_id = $2 WHERE id = $3")
        .bind(Json(&addrs)).bind(instance).bind(agent_id).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// A tenant's hosts with what cloud discovery matches them by: id, host name, addresses,
/// cloud instance id.
pub async fn host_keys(
    ex: &mut impl Exec,
    tenant: TenantId,
) -> StoreResult<Vec<(Uuid, String, Json<Vec<String>>, Option<String>)>> {
    Ok(
        on!(ex, c => sqlx::query_as::<_, (Uuid, String, Json<Vec<String>>, Option<String>)>(
        "SELECT id, hostname, net_addrs, cloud_instance_id FROM agents WHERE tenant_id = $1")
        .bind(tenant.0).fetch_all(&mut *c).await?),
    )
}

/// Replaces the agent's process list.
pub async fn set_processes(
    ex: &mut impl Exec,
    agent_id: Uuid,
    processes: &[serde_json::Value],
    now: OffsetDateTime,
) -> StoreResult<()> {
    on!(ex, c => sqlx::query(
        "INSERT INTO agent_processes (agent_id, received_at, processes) VALUES ($1, $2, $3) \
         ON CONFLICT (agent_id) DO UPDATE SET received_at = excluded.received_at, processes = excluded.processes")
        .bind(agent_id).bind(now).bind(Json(processes)).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// A stored inventory snapshot.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Snapshot {
    /// When the agent collected it.
    pub collected_at: OffsetDateTime,
    /// When the hub stored it.
    pub received_at: OffsetDateTime,
    /// The snapshot.
    pub snapshot: Json<serde_json::Value>,
}

/// The latest snapshot of a tenant's agent.
pub async fn latest_inventory(
    ex: &mut impl Exec,
    tenant: TenantId,
    agent_id: Uuid,
) -> StoreResult<Option<Snapshot>> {
    Ok(on!(ex, c => sqlx::query_as::<_, Snapshot>(
        "SELECT s.collected_at, s.received_at, s.snapshot FROM inventory_snapshots s JOIN agents a ON a.id = s.agent_id \
         WHERE a.tenant_id = $1 AND s.agent_id = $2 ORDER BY s.id DESC LIMIT 1")
        .bind(tenant.0).bind(agent_id).fetch_optional(&mut *c).await?))
}

/// The latest snapshot of each of a tenant's agents, in one query: `(agent, snapshot)`.
pub async fn latest_snapshots(
    ex: &mut impl Exec,
    tenant: TenantId,
) -> StoreResult<Vec<(Uuid, Json<serde_json::Value>)>> {
    Ok(on!(ex, c => sqlx::query_as(
        "SELECT s.agent_id, s.snapshot FROM inventory_snapshots s JOIN agents a ON a.id = s.agent_id \
         WHERE a.tenant_id = $1 AND s.id = (SELECT MAX(i.id) FROM inventory_snapshots i WHERE i.agent_id = s.agent_id)")
        .bind(tenant.0).fetch_all(&mut *c).await?))
}

/// The process list of a tenant's agent.
pub async fn processes(
    ex: &mut impl Exec,
    tenant: TenantId,
    agent_id: Uuid,
) -> StoreResult<Option<(OffsetDateTime, Json<Vec<serde_json::Value>>)>> {
    Ok(on!(ex, c => sqlx::query_as(
        "SELECT p.received_at, p.processes FROM agent_processes p JOIN agents a ON a.id = p.agent_id \
         WHERE a.tenant_id = $1 AND p.agent_id = $2")
        .bind(tenant.0).bind(agent_id).fetch_optional(&mut *c).await?))
}

/// Per-minute averages of one metric (its label-less series) for every agent of a tenant (or
/// only `agent`) in `[from_ms, to_ms)`, from the minute rollup in one query: `(agent id,
/// minute, average)`, by agent and time (the overview's ranking and sparklines).
pub async fn fleet_minutes(
    ex: &mut impl Exec,
    tenant: TenantId,
    name: &str,
    agent: Option<Uuid>,
    from_ms: i64,
    to_ms: i64,
) -> StoreResult<Vec<(Uuid, i64, f64)>> {
    Ok(on!(ex, c => sqlx::query_as::<_, (Uuid, i64, f64)>(
        "SELECT a.id, r.bucket, r.sum / r.count FROM agents a \
         JOIN metric_series s ON s.agent_id = a.id AND s.name = $2 AND s.labels = '{}' \
         JOIN metric_rollup_1m r ON r.agent_seq = a.seq AND r.series_id = s.id AND r.bucket >= $3 AND r.bucket < $4 \
         WHERE a.tenant_id = $1 AND ($5 IS NULL OR a.id = $5) ORDER BY a.id, r.bucket")
        .bind(tenant.0).bind(name).bind(from_ms).bind(to_ms).bind(agent).fetch_all(&mut *c).await?))
}

/// A metric series of an agent.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Series {
    /// Id.
    pub id: i64,
    /// Its agent's number (`agents.seq`), the first part of its points' key.
    pub agent_seq: i64,
    /// Metric name.
    pub name: String,
    /// Canonical JSON of the labels.
    pub labels: String,
}

/// The series of a tenant's agent, optionally of one metric name.
pub async fn series(
    ex: &mut impl Exec,
    tenant: TenantId,
    agent_id: Uuid,
    name: Option<&str>,
) -> StoreResult<Vec<Series>> {
    Ok(on!(ex, c => sqlx::query_as::<_, Series>(
        "SELECT s.id, a.seq AS agent_seq, s.name, s.labels FROM metric_series s JOIN agents a ON a.id = s.agent_id \
         WHERE a.tenant_id = $1 AND s.agent_id = $2 AND ($3 IS NULL OR s.name = $3) ORDER BY s.name, s.labels")
        .bind(tenant.0).bind(agent_id).bind(name).fetch_all(&mut *c).await?))
}

/// Points of a series in `[from_ms, to_ms)`, oldest first, at most `limit`: raw, or averaged
/// per `bucket_ms` (the bucket's start as its timestamp). Buckets that are whole hours are
/// served from the hour rollup, whole minutes from the minute rollup (so they outlive the
/// raw retention), anything else from the raw points.
pub async fn points(
    ex: &mut impl Exec,
    series: &Series,
    from_ms: i64,
    to_ms: i64,
    bucket_ms: Option<i64>,
    limit: i64,
) -> StoreResult<Vec<(i64, f64)>> {
    let rollup_table = match bucket_ms {
        Some(b) if b % HOUR_MS == 0 && from_ms % HOUR_MS == 0 => Some("metric_rollup_1h"),
        Some(b) if b % MINUTE_MS == 0 && from_ms % MINUTE_MS == 0 => Some("metric_rollup_1m"),
        _ => None,
    };
    Ok(match (bucket_ms, rollup_table) {
        (None, _) => on!(ex, c => sqlx::query_as::<_, (i64, f64)>(
            "SELECT ts, value FROM metric_points WHERE agent_seq = $1 AND series_id = $2 AND ts >= $3 AND ts < $4 \
             ORDER BY ts LIMIT $5")
            .bind(series.agent_seq).bind(series.id).bind(from_ms).bind(to_ms).bind(limit).fetch_all(&mut *c).await?),
        (Some(b), Some(table)) => {
            let sql = format!(
                "SELECT (bucket / $5) * $5 AS b, SUM(sum) / SUM(count) FROM {table} \
                 WHERE agent_seq = $1 AND series_id = $2 AND bucket >= $3 AND bucket < $4 GROUP BY b ORDER BY b LIMIT $6"
            );
            on!(ex, c => sqlx::query_as::<_, (i64, f64)>(sqlx::AssertSqlSafe(sql))
                .bind(series.agent_seq).bind(series.id).bind(from_ms).bind(to_ms).bind(b).bind(limit).fetch_all(&mut *c).await?)
        }
        (Some(b), None) => on!(ex, c => sqlx::query_as::<_, (i64, f64)>(
            "SELECT (ts / $5) * $5 AS bucket, AVG(value) FROM metric_points \
             WHERE agent_seq = $1 AND series_id = $2 AND ts >= $3 AND ts < $4 \
             GROUP BY bucket ORDER BY bucket LIMIT $6")
            .bind(series.agent_seq).bind(series.id).bind(from_ms).bind(to_ms).bind(b).bind(limit).fetch_all(&mut *c).await?),
    })
}

/// Every agent with an inventory: `(tenant, agent, host name, latest snapshot id)`.
pub async fn agents_with_inventory(
    ex: &mut impl Exec,
) -> StoreResult<Vec<(Uuid, Uuid, String, i64)>> {
    Ok(on!(ex, c => sqlx::query_as(
        "SELECT a.tenant_id, a.id, a.hostname, MAX(s.id) FROM agents a \
         JOIN inventory_snapshots s ON s.agent_id = a.id GROUP BY a.tenant_id, a.id, a.hostname")
        .fetch_all(&mut *c).await?))
}

/// One inventory snapshot by its id, as the agent sent it.
pub async fn snapshot(ex: &mut impl Exec, id: i64) -> StoreResult<Option<serde_json::Value>> {
    let row: Option<(Json<serde_json::Value>,)> = on!(ex, c => sqlx::query_as(
        "SELECT snapshot FROM inventory_snapshots WHERE id = $1")
        .bind(id).fetch_optional(&mut *c).await?);
    Ok(row.map(|r| r.0.0))
}

/// Whether any agent of the tenant has ever sent this metric.
pub async fn metric_known(ex: &mut impl Exec, tenant: TenantId, metric: &str) -> StoreResult<bool> {
    Ok(on!(ex, c => sqlx::query_scalar::<_, i64>(
        "SELECT COUNT(*) FROM metric_series s JOIN agents g ON g.id = s.agent_id WHERE g.tenant_id = $1 AND s.name = $2")
        .bind(tenant.0).bind(metric).fetch_one(&mut *c).await?)
        > 0)
}

/// The metric names the tenant's agents send, sorted (for choosing a rule's metric).
pub async fn metric_names(ex: &mut impl Exec, tenant: TenantId) -> StoreResult<Vec<String>> {
    Ok(on!(ex, c => sqlx::query_scalar::<_, String>(
        "SELECT DISTINCT s.name FROM metric_series s JOIN agents g ON g.id = s.agent_id WHERE g.tenant_id = $1 ORDER BY s.name")
        .bind(tenant.0).fetch_all(&mut *c).await?))
}

/// Sum and count of one series over a window.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SeriesWindow {
    /// Agent.
    pub agent_id: Uuid,
    /// Canonical JSON labels.
    pub labels: String,
    /// Sum of values.
    pub sum: f64,
    /// Number of values.
    pub count: i64,
}

/// Per series of `metric` of the tenant: sum and count of the points in `[from_ms, to_ms)`;
/// from raw points, or from the hour rollups when `hourly` (windows longer than the raw
/// retention).
pub async fn window_sums(
    ex: &mut impl Exec,
    tenant: TenantId,
    metric: &str,
    from_ms: i64,
    to_ms: i64,
    hourly: bool,
) -> StoreResult<Vec<SeriesWindow>> {
    let sql = if hourly {
        "SELECT s.agent_id, s.labels, SUM(p.sum) AS sum, CAST(SUM(p.count) AS BIGINT) AS count FROM metric_rollup_1h p \
         JOIN agents g ON g.seq = p.agent_seq JOIN metric_series s ON s.agent_id = g.id AND s.id = p.series_id \
         WHERE g.tenant_id = $1 AND s.name = $2 AND p.bucket >= $3 AND p.bucket < $4 GROUP BY s.id, s.agent_id, s.labels"
    } else {
        "SELECT s.agent_id, s.labels, SUM(p.value) AS sum, COUNT(*) AS count FROM metric_points p \
         JOIN agents g ON g.seq = p.agent_seq JOIN metric_series s ON s.agent_id = g.id AND s.id = p.series_id \
         WHERE g.tenant_id = $1 AND s.name = $2 AND p.ts >= $3 AND p.ts < $4 GROUP BY s.id, s.agent_id, s.labels"
    };
    Ok(on!(ex, c => sqlx::query_as::<_, SeriesWindow>(sql)
        .bind(tenant.0).bind(metric).bind(from_ms).bind(to_ms).fetch_all(&mut *c).await?))
}
