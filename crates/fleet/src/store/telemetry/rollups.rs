//! Minute and hour rollups: folded from the points, held briefly in memory so one batch's rows fold together, and purged.

use super::*;

/// One minute in milliseconds.
pub const MINUTE_MS: i64 = 60_000;
/// One hour in milliseconds.
pub const HOUR_MS: i64 = 3_600_000;

/// A stored point: agent number, series, unix milliseconds, value.
pub(super) type Point = (i64, i64, i64, f64);

/// The stats of points per (agent number, bucket start), sorted by series.
pub(super) fn rollup(points: &[Point], width: i64) -> BTreeMap<(i64, i64), Vec<Stat>> {
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
pub(super) const ROLLUP_TABLES: [(metric_rows::Table, i64); 2] = [
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
pub(super) async fn fold_rollup(
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
pub(super) static ROLLUP_PURGES: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(0);

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
    pub(super) rows: HashMap<HeldKey, (Uuid, Vec<Stat>)>,
    pub(super) purges: u64,
    /// Rows written by the open transaction, with their agents.
    pub(super) pending: Vec<(HeldKey, (Uuid, Vec<Stat>))>,
    /// Stats of committed points not folded yet, by rollup row, with their agents.
    pub(super) unfolded: HashMap<HeldKey, (Uuid, Vec<Stat>)>,
    /// When the oldest of them was stored.
    pub(super) unfolded_since: Option<std::time::Instant>,
    /// Stats the open transaction leaves unfolded.
    pub(super) deferring: Vec<(HeldKey, (Uuid, Vec<Stat>))>,
    /// The open transaction folds everything unfolded.
    pub(super) folding: bool,
    /// A transaction is open (`begin` without `committed`).
    pub(super) open: bool,
    /// `unfolded` is not known: read it from `metric_unfolded` (at start, and after a
    /// transaction that did not commit).
    pub(super) recover: bool,
    /// After a fold that failed: not again before this.
    pub(super) retry_at: Option<std::time::Instant>,
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
pub(super) type HeldKey = (usize, i64, i64);

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
    pub(super) fn due(&self) -> bool {
        self.recover
            || self.unfolded.len() >= MAX_UNFOLDED
            || self
                .unfolded_since
                .is_some_and(|t| t.elapsed() >= FOLD_WITHIN)
    }

    /// The row held at a key, if the agent now at that number is the one that wrote it.
    pub(super) fn get(
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
    pub(super) async fn take(
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
    pub(super) async fn fold(
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
pub(super) fn merge_stats(
    into: &mut BTreeMap<(i64, i64), Vec<Stat>>,
    key: (i64, i64),
    stats: Vec<Stat>,
) {
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
pub(super) async fn unfolded_points(ex: &mut impl Exec) -> StoreResult<Vec<Point>> {
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
pub(super) async fn agents_at(ex: &mut impl Exec, seqs: &[i64]) -> StoreResult<HashMap<i64, Uuid>> {
    Ok(crate::store::metric_log::agent_labels(ex, seqs)
        .await?
        .into_iter()
        .map(|a| (a.seq, a.id))
        .collect())
}
