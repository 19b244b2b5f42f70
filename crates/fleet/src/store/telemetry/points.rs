//! Metric points: a batch's samples written as rows, and their purge.

use super::*;
use trusthub_store::purge_by_key;

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
    pub(super) texts: HashMap<(i64, i64), Option<Arc<str>>>,
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

/// Deletes raw points older than `before_ms`, and minute rollups older than
/// `minute_before_ms` (hour rollups are kept).
pub async fn purge_points(
    ex: &mut impl Exec,
    before_ms: i64,
    minute_before_ms: i64,
) -> StoreResult<u64> {
    // Through each agent's key: rows go with their agent (ON DELETE CASCADE).
    let agents = "SELECT seq FROM agents";
    let raw = purge_by_key(ex, "metric_points", "agent_seq", agents, "ts", before_ms).await?;
    let minutes = purge_by_key(
        ex,
        "metric_rollup_1m",
        "agent_seq",
        agents,
        "bucket",
        minute_before_ms,
    )
    .await?;
    // Before the commit: a writer that takes the write lock after it sees the purge.
    ROLLUP_PURGES.fetch_add(1, std::sync::atomic::Ordering::Release);
    Ok(raw + minutes)
}
