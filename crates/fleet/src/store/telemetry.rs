//! What agents report: ingest de-duplication, metric series and points, inventory
//! snapshots (latest plus history) and process lists. Everything of one batch is written in
//! the caller's transaction.

use crate::store::metric_rows::{self, Sample, Stat};
use sqlx::types::Json;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
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

/// The cache's maps hash with foldhash, seeded per process: every ingest request looks up
/// each of its samples' series (SipHash, the standard map's hash, made those lookups 5 % of
/// the hub's CPU under load; bench/RESULTS.md 2026-12-01), and a per-process seed keeps an
/// agent from choosing series names that collide.
type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

#[derive(Debug, Default)]
struct Known {
    agents: FastMap<Uuid, AgentKnown>,
    series: usize,
}

#[derive(Debug, Default)]
struct AgentKnown {
    seq: Option<i64>,
    /// By [`series_key`].
    series: FastMap<String, i64>,
}

/// `name`, a byte no metric name has, then the canonical labels: one string per series, built
/// into a reused buffer so that a known series costs no allocation.
fn series_key(buf: &mut String, s: &MetricSample) {
    buf.clear();
    buf.push_str(&s.name);
    buf.push('\u{1}');
    if s.labels.is_empty() {
        buf.push_str("{}");
    } else {
        buf.push_str(&labels_key(&s.labels));
    }
}

/// The series ids (and the agent's number) the cache knew for a batch's samples when it was
/// queued: looked up on the request's thread, so that the ingest writer — the one serial stage —
/// need not build each sample's key again (see [`resolve_series`]).
#[derive(Debug, Default)]
pub struct Resolved {
    seq: Option<i64>,
    /// Per sample, in order.
    ids: Vec<Option<i64>>,
    /// When every series was known: the batch's point rows, encoded (timestamp, text), for
    /// the writer to store as they are when no other batch of its group shares their key.
    rows: Vec<(i64, Arc<str>)>,
}

/// The samples of one batch per timestamp, each sorted by series with the first of a
/// repeated series kept: the rows it stores when no other batch shares their keys.
fn batch_rows(samples: &[MetricSample], ids: &[i64]) -> BTreeMap<i64, Vec<Sample>> {
    let mut at: BTreeMap<i64, Vec<Sample>> = BTreeMap::new();
    for (s, id) in samples.iter().zip(ids) {
        at.entry(unix_ms(s.ts)).or_default().push((*id, s.value));
    }
    at.values_mut().for_each(row_order);
    at
}

/// A row's samples in the order it stores them: sorted by series (stable), the first of a
/// repeated series kept.
fn row_order(v: &mut Vec<Sample>) {
    v.sort_by_key(|s| s.0);
    v.dedup_by_key(|s| s.0);
}

impl SeriesCache {
    /// What the cache knows of `samples`' series. The keys are built before the lock is
    /// taken (one buffer for all of them), so request threads hold it only for the lookups.
    pub fn resolve(&self, agent: Uuid, samples: &[MetricSample]) -> Resolved {
        let mut keys = String::new();
        let mut ends = Vec::with_capacity(samples.len());
        let mut buf = String::with_capacity(64);
        for s in samples {
            series_key(&mut buf, s);
            keys.push_str(&buf);
            ends.push(keys.len());
        }
        let Ok(known) = self.0.lock() else {
            return Resolved::default();
        };
        let Some(a) = known.agents.get(&agent) else {
            return Resolved::default();
        };
        let mut start = 0;
        let ids: Vec<Option<i64>> = ends
            .iter()
            .map(|&end| {
                let id = a.series.get(&keys[start..end]).copied();
                start = end;
                id
            })
            .collect();
        let seq = a.seq;
        drop(known);
        let all: Option<Vec<i64>> = ids.iter().copied().collect();
        let rows = match (seq, all) {
            (Some(_), Some(all)) => batch_rows(samples, &all)
                .into_iter()
                .map(|(ts, v)| (ts, Arc::from(metric_rows::encode(&v))))
                .collect(),
            _ => Vec::new(),
        };
        Resolved { seq, ids, rows }
    }

    /// Remembers what resolving a batch looked up. Call it only after the transaction that
    /// may have created the series committed: an id from a rolled-back transaction would
    /// point nowhere.
    pub fn learn(&self, agent: Uuid, learned: Learned) {
        if learned.agent_seq.is_none() && learned.series.is_empty() {
            return;
        }
        if let Ok(mut known) = self.0.lock() {
            if known.series > 1_000_000 {
                *known = Known::default();
            }
            known.series += learned.series.len();
            let entry = known.agents.entry(agent).or_default();
            if let Some(seq) = learned.agent_seq {
                entry.seq = Some(seq);
            }
            entry.series.extend(learned.series);
        }
    }
}

/// What resolving a batch's series looked up in the database, for [`SeriesCache::learn`].
#[derive(Debug, Default)]
pub struct Learned {
    /// The agent's number, when it was not known.
    pub agent_seq: Option<i64>,
    /// Series: key (name and labels), id.
    series: Vec<(String, i64)>,
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
/// series) and returns the rows to insert plus the ids to learn after the commit. The cache
/// is locked once per batch.
///
/// `known`: what [`SeriesCache::resolve`] found when the batch was queued; only what it did
/// not know is looked up again (a group committed since may have learned it).
pub async fn resolve_series(
    ex: &mut impl Exec,
    agent_id: Uuid,
    samples: &[MetricSample],
    cache: &SeriesCache,
    rows: &mut PointRows,
    known: Option<&Resolved>,
) -> StoreResult<Learned> {
    let mut learned = Learned::default();
    if samples.is_empty() {
        return Ok(learned);
    }
    let mut buf = String::with_capacity(64);
    let (mut ids, mut seq) = match known {
        Some(k) if k.ids.len() == samples.len() => (k.ids.clone(), k.seq),
        _ => (vec![None; samples.len()], None),
    };
    if (seq.is_none() || ids.contains(&None))
        && let Ok(known) = cache.0.lock()
        && let Some(agent) = known.agents.get(&agent_id)
    {
        for (s, id) in samples.iter().zip(ids.iter_mut()) {
            if id.is_none() {
                series_key(&mut buf, s);
                *id = agent.series.get(buf.as_str()).copied();
            }
        }
        seq = seq.or(agent.seq);
    }
    let seq = match seq {
        Some(seq) => seq,
        None => {
            let seq: i64 = on!(ex, c => sqlx::query_scalar("SELECT seq FROM agents WHERE id = $1")
                .bind(agent_id).fetch_one(&mut *c).await?);
            learned.agent_seq = Some(seq);
            seq
        }
    };
    // Series the cache does not know: each looked up (or created) once.
    let mut looked_up: HashMap<String, i64> = HashMap::new();
    let first = rows.ts.len();
    for (s, cached) in samples.iter().zip(ids) {
        let id = match cached {
            Some(id) => id,
            None => {
                series_key(&mut buf, s);
                match looked_up.get(buf.as_str()) {
                    Some(id) => *id,
                    None => {
                        let labels = &buf[s.name.len() + 1..];
                        let id = series_id(ex, agent_id, &s.name, labels).await?;
                        looked_up.insert(buf.clone(), id);
                        learned.series.push((buf.clone(), id));
                        id
                    }
                }
            }
        };
        rows.agents.push(seq);
        rows.series.push(id);
        rows.ts.push(unix_ms(s.ts));
        rows.values.push(s.value);
    }
    rows.owners.insert(seq, agent_id);
    // The batch's rows encoded already (one per timestamp it has) serve only keys no other
    // batch of the group shares; a batch without them has the writer encode its keys.
    match known.filter(|k| k.seq == Some(seq) && !k.rows.is_empty()) {
        Some(k) => {
            for (ts, text) in &k.rows {
                rows.texts
                    .entry((seq, *ts))
                    .and_modify(|t| *t = None)
                    .or_insert_with(|| Some(text.clone()));
            }
        }
        None => {
            for &ts in &rows.ts[first..] {
                rows.texts.insert((seq, ts), None);
            }
        }
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
    /// The agent of each agent number.
    pub owners: HashMap<i64, Uuid>,
    /// Per (agent number, timestamp): the row one batch encoded before it was queued, or
    /// `None` when it did not, or when several batches of the group share the key.
    texts: HashMap<(i64, i64), Option<Arc<str>>>,
}

/// Stores samples (a sample repeating a series' timestamp is kept once).
pub async fn insert_samples(
    ex: &mut impl Exec,
    agent_id: Uuid,
    samples: &[MetricSample],
    cache: &SeriesCache,
) -> StoreResult<Inserted> {
    let mut rows = PointRows::default();
    let learned = resolve_series(ex, agent_id, samples, cache, &mut rows, None).await?;
    let (points, _) = insert_points(ex, &rows, None, None, false).await?;
    Ok(Inserted { points, learned })
}

/// Inserts points and folds the new ones into the rollups; returns how many were new. With
/// `log_at` (forwarding is on: unix milliseconds of now), the new points' keys are appended
/// to the metric log in the same transaction, and (SQLite) the new points are answered with
/// their log rows, for handing to forwarding after the commit.
///
/// Points are stored one row per agent and timestamp (`metric_rows`). A row that exists
/// already (a second batch at the same timestamp, or an agent re-sending what the hub has)
/// takes the series it lacks; a series it has keeps its first value.
///
/// With `held` (SQLite's one writer), rollup rows it holds are folded into without reading
/// them back, and with `defer` the new points may be folded by a later transaction instead
/// (see [`HeldRollups`]; not when a stored row took series, nor when folding is due).
pub async fn insert_points(
    ex: &mut impl Exec,
    rows: &PointRows,
    log_at: Option<i64>,
    held: Option<&mut HeldRollups>,
    defer: bool,
) -> StoreResult<(u64, Option<crate::store::metric_log::Committed>)> {
    let (agents, series, ts, values) = (&rows.agents, &rows.series, &rows.ts, &rows.values);
    if series.is_empty() {
        // Nothing new (say, only duplicates): the group still folds what earlier ones left
        // when nothing more comes or folding is due, so that rollups are current once a
        // burst is answered (nothing to fold costs no statement).
        if let Some(held) = held {
            held.take(ex, &[], &rows.owners, defer).await?;
        }
        return Ok((0, None));
    }
    // The samples per (agent, timestamp), sorted by series, the first of a repeated one kept.
    let mut at: BTreeMap<(i64, i64), Vec<Sample>> = BTreeMap::new();
    for i in 0..series.len() {
        at.entry((agents[i], ts[i]))
            .or_default()
            .push((series[i], values[i]));
    }
    at.values_mut().for_each(row_order);
    let texts: Vec<std::borrow::Cow<'_, str>> = at
        .iter()
        .map(|(k, v)| match rows.texts.get(k) {
            Some(Some(t)) => std::borrow::Cow::Borrowed(&**t),
            _ => std::borrow::Cow::Owned(metric_rows::encode(v)),
        })
        .collect();
    let fresh: Vec<(i64, i64, &str)> = at
        .keys()
        .zip(&texts)
        .map(|(k, t)| (k.0, k.1, t.as_ref()))
        .collect();
    let inserted: std::collections::HashSet<(i64, i64)> =
        metric_rows::insert_new(ex, metric_rows::POINTS, &fresh)
            .await?
            .into_iter()
            .collect();
    let mut new_points: Vec<Point> = Vec::with_capacity(series.len());
    let mut merged = Vec::new();
    let taken: Vec<(i64, i64)> = at
        .keys()
        .filter(|k| !inserted.contains(k))
        .copied()
        .collect();
    if !taken.is_empty() {
        // Rare: rows at these keys exist. Each takes the series it lacks.
        for (agent, t, text) in metric_rows::read(ex, metric_rows::POINTS, &taken, true).await? {
            let have = metric_rows::samples(&text)?;
            let add: Vec<Sample> = at[&(agent, t)]
                .iter()
                .filter(|(s, _)| metric_rows::find(&have, *s, |h| h.0).is_none())
                .copied()
                .collect();
            if add.is_empty() {
                continue;
            }
            new_points.extend(add.iter().map(|(s, v)| (agent, *s, t, *v)));
            let mut all = have;
            all.extend(add);
            all.sort_by_key(|s| s.0);
            merged.push((agent, t, metric_rows::encode(&all)));
        }
        metric_rows::write(ex, metric_rows::POINTS, &merged).await?;
    }
    for (key, samples) in &at {
        if inserted.contains(key) {
            new_points.extend(samples.iter().map(|(s, v)| (key.0, *s, key.1, *v)));
        }
    }
    let inserted = new_points.len() as u64;
    let mut logged = None;
    if let Some(when) = log_at {
        let keys: std::collections::BTreeSet<(i64, i64)> =
            new_points.iter().map(|(a, _, t, _)| (*a, *t)).collect();
        logged = crate::store::metric_log::append(ex, &keys, when)
            .await?
            .map(|ids| (ids, when));
    }
    match held {
        // A row that took series may be one whose points are not folded yet: fold now, so that
        // what is unfolded is always whole rows (a restart folds the rows it names).
        Some(held) => {
            held.take(ex, &new_points, &rows.owners, defer && merged.is_empty())
                .await?
        }
        None => {
            for (i, (table, width)) in ROLLUP_TABLES.into_iter().enumerate() {
                let add = rollup(&new_points, width);
                fold_rollup(ex, (i, table), add, &rows.owners, None).await?;
            }
        }
    }
    let committed =
        logged.map(
            |((first_id, last_id), stored_at)| crate::store::metric_log::Committed {
                first_id,
                last_id,
                stored_at,
                points: new_points,
                agents: Vec::new(),
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

/// The stats of points per (agent number, bucket start), sorted by series.
fn rollup(points: &[Point], width: i64) -> BTreeMap<(i64, i64), Vec<Stat>> {
    // Sorted by (agent, bucket, series), then folded in one pass.
    let mut keyed: Vec<(i64, i64, i64, f64)> = points
        .iter()
        .map(|(agent, series, ts, v)| (*agent, ts.div_euclid(width) * width, *series, *v))
        .collect();
    keyed.sort_unstable_by_key(|p| (p.0, p.1, p.2));
    let mut out: Vec<((i64, i64), Vec<Stat>)> = Vec::new();
    for (agent, bucket, series, v) in keyed {
        if out.last().is_none_or(|(key, _)| *key != (agent, bucket)) {
            out.push(((agent, bucket), Vec::new()));
        }
        let Some((_, list)) = out.last_mut() else {
            continue;
        };
        match list.last_mut() {
            Some(e) if e.0 == series => {
                e.1 += 1;
                e.2 = metric_rows::finite(e.2 + v);
                e.3 = e.3.min(v);
                e.4 = e.4.max(v);
            }
            _ => list.push((series, 1, v, v, v)),
        }
    }
    out.into_iter().collect()
}

/// The rollup tables and their bucket widths.
const ROLLUP_TABLES: [(metric_rows::Table, i64); 2] = [
    (
        metric_rows::Table {
            name: "metric_rollup_1m",
            key: "bucket",
            column: "stats",
        },
        MINUTE_MS,
    ),
    (
        metric_rows::Table {
            name: "metric_rollup_1h",
            key: "bucket",
            column: "stats",
        },
        HOUR_MS,
    ),
];

/// Folds stats (per agent number and bucket, see [`rollup`]) into a rollup table: each
/// (agent, bucket) row is read (locked, on PostgreSQL, where several processes may fold into
/// it), folded and written back. A row `held` holds is not read. `owners`: the agent at each
/// agent number.
async fn fold_rollup(
    ex: &mut impl Exec,
    (index, table): (usize, metric_rows::Table),
    add: BTreeMap<(i64, i64), Vec<Stat>>,
    owners: &HashMap<i64, Uuid>,
    held: Option<&mut HeldRollups>,
) -> StoreResult<()> {
    if add.is_empty() {
        return Ok(());
    }
    // A held row is folded into where it is held (not copied); the others are read.
    let missing: Vec<(i64, i64)> = add
        .keys()
        .filter(|k| {
            held.as_deref()
                .and_then(|h| h.get(index, **k, owners))
                .is_none()
        })
        .copied()
        .collect();
    metric_rows::ensure(ex, table, &missing).await?;
    let mut stored: HashMap<(i64, i64), Vec<Stat>> = HashMap::new();
    for (agent, bucket, text) in metric_rows::read(ex, table, &missing, true).await? {
        stored.insert((agent, bucket), metric_rows::stats(&text)?);
    }
    let mut rows: Vec<(i64, i64, String)> = Vec::with_capacity(add.len());
    let mut written = Vec::new();
    for ((agent, bucket), new) in add {
        let have = held
            .as_deref()
            .and_then(|h| h.get(index, (agent, bucket), owners))
            .or_else(|| stored.get(&(agent, bucket)).map(Vec::as_slice));
        let all = match have {
            Some(have) => metric_rows::fold(have, &new),
            None => new,
        };
        rows.push((agent, bucket, metric_rows::encode(&all)));
        if let (true, Some(owner)) = (held.is_some(), owners.get(&agent)) {
            written.push(((index, agent, bucket), (*owner, all)));
        }
    }
    if let Some(h) = held {
        h.pending.extend(written);
    }
    metric_rows::write(ex, table, &rows).await
}

/// Bumped whenever rollup rows are deleted other than with their agent ([`purge_points`]):
/// what [`HeldRollups`] holds is then dropped.
static ROLLUP_PURGES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// SQLite's one ingest writer's rollup state: the rollup rows it wrote last, and the points
/// it stored but has not folded yet.
///
/// **Held rows.** A commit folds its points into rows held here without reading and parsing
/// them back (on PostgreSQL other processes fold into the same rows, which are read and
/// locked each time). Exact: a row is held only once its transaction committed, it is used
/// only for the agent that wrote it (by id: a deleted agent's number can be handed out
/// again), and a purge of rollups drops everything held. At most [`HeldRollups::MAX`] rows
/// (the newest buckets are kept).
///
/// **Deferred folding.** Under load (more batches waiting or on their way), a transaction
/// stores its points and leaves their folding to a later one: it writes one
/// `metric_unfolded` row naming the points' keys, and their stats are kept here. A transaction then folds everything unfolded
/// at once, and deletes those rows, when nothing more waits or is on its way, when the oldest
/// unfolded point is [`FOLD_WITHIN`] old, when [`MAX_UNFOLDED`] rows are waiting, or when a
/// stored row took more series; the writer also folds on its own when no batch comes before
/// then. So rollups trail the raw points by at most about a second under sustained load, and not at
/// all once it stops. Exact: the stats here are those of the committed `metric_unfolded` rows;
/// after a restart, or a transaction that did not commit, they are read again from those rows
/// and the points they name. A deleted agent's unfolded points go with it.
#[derive(Debug)]
pub struct HeldRollups {
    rows: HashMap<HeldKey, (Uuid, Vec<Stat>)>,
    purges: u64,
    /// Rows written by the open transaction, with their agents.
    pending: Vec<(HeldKey, (Uuid, Vec<Stat>))>,
    /// Stats of committed points not folded yet, by rollup row, with their agents.
    unfolded: HashMap<HeldKey, (Uuid, Vec<Stat>)>,
    /// When the oldest of them was stored.
    unfolded_since: Option<std::time::Instant>,
    /// Stats the open transaction leaves unfolded.
    deferring: Vec<(HeldKey, (Uuid, Vec<Stat>))>,
    /// The open transaction folds everything unfolded.
    folding: bool,
    /// A transaction is open (`begin` without `committed`).
    open: bool,
    /// `unfolded` is not known: read it from `metric_unfolded` (at start, and after a
    /// transaction that did not commit).
    recover: bool,
    /// After a fold that failed: not again before this.
    retry_at: Option<std::time::Instant>,
}

impl Default for HeldRollups {
    fn default() -> Self {
        HeldRollups {
            rows: HashMap::new(),
            purges: 0,
            pending: Vec::new(),
            unfolded: HashMap::new(),
            unfolded_since: None,
            deferring: Vec::new(),
            folding: false,
            open: false,
            recover: true,
            retry_at: None,
        }
    }
}

/// A held rollup row's key: the table (its index in `ROLLUP_TABLES`), agent number, bucket.
type HeldKey = (usize, i64, i64);

/// Unfolded points are folded once the oldest is this old.
pub const FOLD_WITHIN: std::time::Duration = std::time::Duration::from_secs(1);

/// Unfolded points are folded once they touch this many rollup rows.
pub const MAX_UNFOLDED: usize = 8_192;

impl HeldRollups {
    /// Most rows held (100 series each: about 4 KB a row).
    pub const MAX: usize = 4_096;

    /// Call at the start of a transaction, once it holds the write lock: drops what a purge
    /// since made stale, and what an earlier transaction left pending.
    pub fn begin(&mut self) {
        if self.open {
            // The last transaction did not commit: what is unfolded is read again.
            self.recover = true;
        }
        self.open = true;
        self.pending.clear();
        self.deferring.clear();
        self.folding = false;
        let purges = ROLLUP_PURGES.load(std::sync::atomic::Ordering::Acquire);
        if purges != self.purges {
            self.rows.clear();
            self.purges = purges;
        }
    }

    /// Call once the transaction committed: holds the rows it wrote, and keeps the stats it
    /// left unfolded.
    pub fn committed(&mut self) {
        self.open = false;
        for (key, row) in self.pending.drain(..) {
            self.rows.insert(key, row);
        }
        if self.folding {
            self.unfolded.clear();
            self.unfolded_since = None;
            self.recover = false;
            self.retry_at = None;
        }
        if !self.deferring.is_empty() && self.unfolded_since.is_none() {
            self.unfolded_since = Some(std::time::Instant::now());
        }
        for (key, (owner, stats)) in self.deferring.drain(..) {
            match self.unfolded.entry(key) {
                std::collections::hash_map::Entry::Occupied(mut e) if e.get().0 == owner => {
                    let folded = metric_rows::fold(&e.get().1, &stats);
                    e.get_mut().1 = folded;
                }
                // Another agent's (a deleted agent's number handed out again): it went with
                // its agent.
                std::collections::hash_map::Entry::Occupied(mut e) => {
                    e.insert((owner, stats));
                }
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert((owner, stats));
                }
            }
        }
        if self.rows.len() > Self::MAX {
            // Keep each table's newest bucket; past that, start over.
            let mut newest: HashMap<usize, i64> = HashMap::new();
            for (table, _, bucket) in self.rows.keys() {
                let n = newest.entry(*table).or_insert(*bucket);
                *n = (*n).max(*bucket);
            }
            self.rows.retain(|k, _| newest.get(&k.0) == Some(&k.2));
            if self.rows.len() > Self::MAX {
                self.rows.clear();
            }
        }
    }

    /// Call when a transaction failed (it may or may not have committed): what is unfolded is
    /// read again, not before a second from now.
    pub fn failed(&mut self) {
        self.open = false;
        self.recover = true;
        self.retry_at = Some(std::time::Instant::now() + FOLD_WITHIN);
    }

    /// How long until the writer should fold on its own (`None`: nothing to fold).
    pub fn fold_in(&self) -> Option<std::time::Duration> {
        let now = std::time::Instant::now();
        let retry = self.retry_at.map_or(std::time::Duration::ZERO, |t| {
            t.saturating_duration_since(now)
        });
        if self.recover {
            return Some(retry);
        }
        let since = self.unfolded_since?;
        Some(FOLD_WITHIN.saturating_sub(since.elapsed()).max(retry))
    }

    /// Whether the open transaction must fold.
    fn due(&self) -> bool {
        self.recover
            || self.unfolded.len() >= MAX_UNFOLDED
            || self
                .unfolded_since
                .is_some_and(|t| t.elapsed() >= FOLD_WITHIN)
    }

    /// The row held at a key, if the agent now at that number is the one that wrote it.
    fn get(
        &self,
        table: usize,
        (agent, bucket): (i64, i64),
        owners: &HashMap<i64, Uuid>,
    ) -> Option<&[Stat]> {
        let (held_for, stats) = self.rows.get(&(table, agent, bucket))?;
        (Some(held_for) == owners.get(&agent)).then_some(stats.as_slice())
    }

    /// Takes a transaction's new points (`owners`: the agent at each number): left unfolded
    /// with `defer` unless folding is due, else folded now with everything unfolded.
    async fn take(
        &mut self,
        ex: &mut impl Exec,
        points: &[Point],
        owners: &HashMap<i64, Uuid>,
        defer: bool,
    ) -> StoreResult<()> {
        if !defer || self.due() {
            return self.fold(ex, points, owners).await;
        }
        if points.is_empty() {
            return Ok(());
        }
        let keys: std::collections::BTreeSet<(i64, i64)> =
            points.iter().map(|p| (p.0, p.2)).collect();
        let text = serde_json::to_string(&keys).unwrap_or_else(|_| "[]".into());
        on!(ex, c => sqlx::query("INSERT INTO metric_unfolded (keys) VALUES ($1)")
            .bind(&text).execute(&mut *c).await?.rows_affected());
        for (i, (_, width)) in ROLLUP_TABLES.into_iter().enumerate() {
            for ((agent, bucket), stats) in rollup(points, width) {
                if let Some(owner) = owners.get(&agent) {
                    self.deferring.push(((i, agent, bucket), (*owner, stats)));
                }
            }
        }
        Ok(())
    }

    /// Folds everything unfolded into the rollups (the writer, on its own).
    pub async fn fold_unfolded(&mut self, ex: &mut impl Exec) -> StoreResult<()> {
        self.fold(ex, &[], &HashMap::new()).await
    }

    /// Folds `points` and everything unfolded (read from `metric_unfolded` when it is not
    /// known here) into the rollups, and deletes the `metric_unfolded` rows.
    async fn fold(
        &mut self,
        ex: &mut impl Exec,
        points: &[Point],
        owners: &HashMap<i64, Uuid>,
    ) -> StoreResult<()> {
        self.folding = true;
        let had_rows = self.recover || !self.unfolded.is_empty();
        // Taken, not copied: after a transaction that does not commit, what is unfolded is
        // read again from `metric_unfolded` (see `begin` and `failed`).
        let earlier = std::mem::take(&mut self.unfolded);
        let (earlier, recovered) = if self.recover {
            (HashMap::new(), unfolded_points(ex).await?)
        } else {
            (earlier, Vec::new())
        };
        // Earlier transactions' stats and recovered points count for the agent now at their
        // number, if it is theirs.
        let mut seqs: Vec<i64> = earlier
            .keys()
            .map(|k| k.1)
            .chain(recovered.iter().map(|p| p.0))
            .filter(|s| !owners.contains_key(s))
            .collect();
        seqs.sort_unstable();
        seqs.dedup();
        let mut all_owners = agents_at(ex, &seqs).await?;
        all_owners.extend(owners.iter().map(|(k, v)| (*k, *v)));
        // A key this transaction stored anew is its own row (the one named was deleted with
        // its agent, whose number was handed out again).
        let own: std::collections::HashSet<(i64, i64)> =
            points.iter().map(|p| (p.0, p.2)).collect();
        let recovered: Vec<Point> = recovered
            .into_iter()
            .filter(|p| all_owners.contains_key(&p.0) && !own.contains(&(p.0, p.2)))
            .collect();
        let mut earlier_of = vec![Vec::new(); ROLLUP_TABLES.len()];
        for ((t, agent, bucket), (owner, stats)) in earlier {
            if all_owners.get(&agent) == Some(&owner) {
                earlier_of[t].push(((agent, bucket), stats));
            }
        }
        for (i, (table, width)) in ROLLUP_TABLES.into_iter().enumerate() {
            let mut add = rollup(points, width);
            for (key, stats) in rollup(&recovered, width) {
                merge_stats(&mut add, key, stats);
            }
            for (key, stats) in std::mem::take(&mut earlier_of[i]) {
                merge_stats(&mut add, key, stats);
            }
            fold_rollup(ex, (i, table), add, &all_owners, Some(&mut *self)).await?;
        }
        // No `metric_unfolded` rows unless something was left unfolded.
        if had_rows {
            on!(ex, c => sqlx::query("DELETE FROM metric_unfolded").execute(&mut *c).await?.rows_affected());
        }
        Ok(())
    }
}

/// Adds stats to those at `key`.
fn merge_stats(into: &mut BTreeMap<(i64, i64), Vec<Stat>>, key: (i64, i64), stats: Vec<Stat>) {
    match into.entry(key) {
        std::collections::btree_map::Entry::Occupied(mut e) => {
            let folded = metric_rows::fold(e.get(), &stats);
            *e.get_mut() = folded;
        }
        std::collections::btree_map::Entry::Vacant(e) => {
            e.insert(stats);
        }
    }
}

/// The points the `metric_unfolded` rows name (a key named twice counts once; a row since
/// deleted with its agent, or unreadable, is left out).
async fn unfolded_points(ex: &mut impl Exec) -> StoreResult<Vec<Point>> {
    let texts: Vec<String> = on!(ex, c => sqlx::query_scalar("SELECT keys FROM metric_unfolded")
        .fetch_all(&mut *c).await?);
    let mut keys = std::collections::BTreeSet::new();
    for text in texts {
        match serde_json::from_str::<Vec<(i64, i64)>>(&text) {
            Ok(k) => keys.extend(k),
            Err(e) => tracing::warn!(error = %e, "an unreadable metric_unfolded row is left out"),
        }
    }
    let keys: Vec<(i64, i64)> = keys.into_iter().collect();
    let mut out = Vec::new();
    for (agent, ts, text) in metric_rows::read(ex, metric_rows::POINTS, &keys, false).await? {
        match metric_rows::samples(&text) {
            Ok(samples) => out.extend(samples.into_iter().map(|(s, v)| (agent, s, ts, v))),
            Err(e) => tracing::warn!(error = %e, agent, ts, "an unreadable point row is left out"),
        }
    }
    Ok(out)
}

/// The agent at each of these numbers (numbers without an agent are left out).
async fn agents_at(ex: &mut impl Exec, seqs: &[i64]) -> StoreResult<HashMap<i64, Uuid>> {
    Ok(crate::store::metric_log::agent_labels(ex, seqs)
        .await?
        .into_iter()
        .map(|a| (a.seq, a.id))
        .collect())
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
    // Before the commit: a writer that takes the write lock after it sees the purge.
    ROLLUP_PURGES.fetch_add(1, std::sync::atomic::Ordering::Release);
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
    let rows: Vec<(Uuid, i64, i64, String)> = on!(ex, c => sqlx::query_as(
        "SELECT a.id, s.id, r.bucket, CAST(r.stats AS TEXT) FROM agents a \
         JOIN metric_series s ON s.agent_id = a.id AND s.name = $2 AND s.labels = '{}' \
         JOIN metric_rollup_1m r ON r.agent_seq = a.seq AND r.bucket >= $3 AND r.bucket < $4 \
         WHERE a.tenant_id = $1 AND ($5 IS NULL OR a.id = $5) ORDER BY a.id, r.bucket")
        .bind(tenant.0).bind(name).bind(from_ms).bind(to_ms).bind(agent).fetch_all(&mut *c).await?);
    let mut out = Vec::with_capacity(rows.len());
    for (agent, series, bucket, text) in rows {
        let stats = metric_rows::stats(&text)?;
        if let Some(s) = metric_rows::find(&stats, series, |s| s.0)
            && s.1 > 0
        {
            out.push((agent, bucket, s.2 / s.1 as f64));
        }
    }
    Ok(out)
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

/// Points of an agent's series (`series`: their ids) in `[from_ms, to_ms)`, oldest first, at
/// most `limit` per series: raw, or averaged per `bucket_ms` (the bucket's start as its
/// timestamp). Buckets that are whole hours are served from the hour rollup, whole minutes
/// from the minute rollup (so they outlive the raw retention), anything else from the raw
/// points. The agent's rows are read once for all the series, a page at a time, and reading
/// stops once every series has its `limit` (or, raw, once more than `limit` points were found
/// in all: callers refuse or cut such answers).
pub async fn points(
    ex: &mut impl Exec,
    agent_seq: i64,
    series: &[i64],
    from_ms: i64,
    to_ms: i64,
    bucket_ms: Option<i64>,
    limit: i64,
) -> StoreResult<Vec<Vec<(i64, f64)>>> {
    const PAGE: i64 = 1_000;
    let cap = usize::try_from(limit).unwrap_or(usize::MAX);
    let table = match bucket_ms {
        Some(b) if b % HOUR_MS == 0 && from_ms % HOUR_MS == 0 => Some(ROLLUP_TABLES[1].0),
        Some(b) if b % MINUTE_MS == 0 && from_ms % MINUTE_MS == 0 => Some(ROLLUP_TABLES[0].0),
        _ => None,
    };
    let mut raw: Vec<Vec<(i64, f64)>> = vec![Vec::new(); series.len()];
    // Per series: bucket start → (sum, count), in order.
    let mut sums: Vec<BTreeMap<i64, (f64, i64)>> = vec![BTreeMap::new(); series.len()];
    let mut found = 0usize;
    let mut cursor = from_ms;
    loop {
        let page = metric_rows::range(
            ex,
            table.unwrap_or(metric_rows::POINTS),
            agent_seq,
            cursor,
            to_ms,
            PAGE,
        )
        .await?;
        let done = (page.len() as i64) < PAGE;
        for (key, text) in &page {
            match (bucket_ms, table) {
                (Some(b), Some(_)) => {
                    let stats = metric_rows::stats(text)?;
                    for (i, id) in series.iter().enumerate() {
                        if let Some(s) = metric_rows::find(&stats, *id, |s| s.0) {
                            let e = sums[i].entry(key / b * b).or_insert((0.0, 0));
                            e.0 += s.2;
                            e.1 += s.1;
                        }
                    }
                }
                (b, _) => {
                    let samples = metric_rows::samples(text)?;
                    for (i, id) in series.iter().enumerate() {
                        if let Some(s) = metric_rows::find(&samples, *id, |s| s.0) {
                            match b {
                                None if raw[i].len() < cap => {
                                    raw[i].push((*key, s.1));
                                    found += 1;
                                }
                                None => {}
                                Some(b) => {
                                    let e = sums[i].entry(key / b * b).or_insert((0.0, 0));
                                    e.0 += s.1;
                                    e.1 += 1;
                                }
                            }
                        }
                    }
                }
            }
        }
        // A series is complete when it has `limit` points, or `limit` finished buckets (one
        // more started: rows come in time order).
        let complete = match bucket_ms {
            None => found > cap || raw.iter().all(|r| r.len() >= cap),
            Some(_) => sums.iter().all(|m| m.len() > cap),
        };
        match page.last() {
            Some((key, _)) if !done && !complete => cursor = key + 1,
            _ => break,
        }
    }
    Ok(match bucket_ms {
        None => raw,
        Some(_) => sums
            .into_iter()
            .map(|m| {
                m.into_iter()
                    .take(cap)
                    .filter(|(_, (_, n))| *n > 0)
                    .map(|(k, (sum, n))| (k, sum / n as f64))
                    .collect()
            })
            .collect(),
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
    let list: Vec<(i64, i64, Uuid, String)> = on!(ex, c => sqlx::query_as(
        "SELECT g.seq, s.id, s.agent_id, s.labels FROM metric_series s JOIN agents g ON g.id = s.agent_id \
         WHERE g.tenant_id = $1 AND s.name = $2 ORDER BY g.seq, s.id")
        .bind(tenant.0).bind(metric).fetch_all(&mut *c).await?);
    let mut agents: Vec<i64> = list.iter().map(|l| l.0).collect();
    agents.dedup();
    let table = if hourly {
        ROLLUP_TABLES[1].0
    } else {
        metric_rows::POINTS
    };
    // (sum, count) per series, in `list` order.
    let mut acc: Vec<(f64, i64)> = vec![(0.0, 0); list.len()];
    let of_agent = |seq: i64| {
        let start = list.partition_point(|l| l.0 < seq);
        start..list.partition_point(|l| l.0 <= seq)
    };
    for (seq, _, text) in metric_rows::range_of_agents(ex, table, &agents, from_ms, to_ms).await? {
        let wanted = of_agent(seq);
        if hourly {
            let stats = metric_rows::stats(&text)?;
            for i in wanted {
                if let Some(s) = metric_rows::find(&stats, list[i].1, |s| s.0) {
                    acc[i].0 += s.2;
                    acc[i].1 += s.1;
                }
            }
        } else {
            let samples = metric_rows::samples(&text)?;
            for i in wanted {
                if let Some(s) = metric_rows::find(&samples, list[i].1, |s| s.0) {
                    acc[i].0 += s.1;
                    acc[i].1 += 1;
                }
            }
        }
    }
    Ok(list
        .into_iter()
        .zip(acc)
        .filter(|(_, (_, n))| *n > 0)
        .map(|((_, _, agent_id, labels), (sum, count))| SeriesWindow {
            agent_id,
            labels,
            sum,
            count,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_of_known_series_is_encoded_before_it_is_queued_as_the_writer_would() {
        let sample = |name: &str, ms: i64, value: f64, cpu: &str| MetricSample {
            name: name.into(),
            ts: OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000)
                .expect("a time in range"),
            value,
            labels: [("cpu".to_string(), cpu.to_string())].into_iter().collect(),
        };
        let samples = vec![
            sample("cpu.percent", 2_000, 3.5, "1"),
            sample("cpu.percent", 2_000, 1.25, "0"),
            sample("cpu.percent", 1_000, 7.0, "0"),
            // A repeated series at one timestamp: the first is kept.
            sample("cpu.percent", 2_000, 99.0, "1"),
        ];
        let agent = Uuid::from_u128(7);
        let cache = SeriesCache::default();
        // Unknown agent or series: nothing resolved, nothing encoded.
        let none = cache.resolve(agent, &samples);
        assert!(none.ids.iter().all(Option::is_none) && none.rows.is_empty());
        let mut buf = String::new();
        let key = |buf: &mut String, s: &MetricSample| {
            series_key(buf, s);
            buf.clone()
        };
        cache.learn(
            agent,
            Learned {
                agent_seq: Some(4),
                series: vec![(key(&mut buf, &samples[0]), 11)],
            },
        );
        let partial = cache.resolve(agent, &samples);
        assert_eq!(partial.ids, vec![Some(11), None, None, Some(11)]);
        assert!(
            partial.rows.is_empty(),
            "a batch with an unknown series is encoded by the writer"
        );
        cache.learn(
            agent,
            Learned {
                agent_seq: None,
                series: vec![(key(&mut buf, &samples[1]), 10)],
            },
        );
        let all = cache.resolve(agent, &samples);
        assert_eq!(all.seq, Some(4));
        assert_eq!(all.ids, vec![Some(11), Some(10), Some(10), Some(11)]);
        let rows: Vec<(i64, String)> = all.rows.iter().map(|(t, r)| (*t, r.to_string())).collect();
        assert_eq!(
            rows,
            vec![
                (1_000, metric_rows::encode(&[(10i64, 7.0f64)])),
                (2_000, metric_rows::encode(&[(10i64, 1.25f64), (11, 3.5)])),
            ]
        );
    }

    #[test]
    fn rollup_folds_per_agent_bucket_and_series_in_series_order() {
        let points = [
            (2, 7, 61_000, 1.0),
            (1, 9, 1_000, 4.0),
            (1, 3, 2_000, -1.0),
            (1, 9, 59_999, 2.0),
            (1, 9, 60_000, 8.0),
            (2, 7, 62_000, 5.0),
            (1, 3, 1_000, f64::MAX),
            (1, 3, 3_000, f64::MAX),
        ];
        let got = rollup(&points, MINUTE_MS);
        let want: BTreeMap<(i64, i64), Vec<Stat>> = [
            (
                (1, 0),
                vec![(3, 3, f64::MAX, -1.0, f64::MAX), (9, 2, 6.0, 2.0, 4.0)],
            ),
            ((1, 60_000), vec![(9, 1, 8.0, 8.0, 8.0)]),
            ((2, 60_000), vec![(7, 2, 6.0, 1.0, 5.0)]),
        ]
        .into_iter()
        .collect();
        assert_eq!(got, want);
        let hours = rollup(&points, HOUR_MS);
        assert_eq!(hours.len(), 2);
        assert_eq!(hours[&(1, 0)][1], (9, 3, 14.0, 2.0, 8.0));
    }
}
