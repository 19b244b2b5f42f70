//! Metric series: the cache of known series per agent, and resolving a batch's samples to series ids (new ones learned in the caller's transaction).

use super::*;

/// Series ids and agent numbers (`agents.seq`, the first part of the points' key) already
/// known, so a batch of known series needs no lookup. Entries never go stale: a series lives
/// as long as its agent, an agent keeps its number, and a deleted agent can send nothing more.
#[derive(Debug, Default)]
pub struct SeriesCache(std::sync::Mutex<Known>);

/// The cache's maps hash with foldhash, seeded per process: every ingest request looks up
/// each of its samples' series (SipHash, the standard map's hash, made those lookups 5 % of
/// the hub's CPU under load; bench/RESULTS.md 2026-12-01), and a per-process seed keeps an
/// agent from choosing series names that collide.
pub(super) type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

#[derive(Debug, Default)]
pub(super) struct Known {
    pub(super) agents: FastMap<Uuid, AgentKnown>,
    pub(super) series: usize,
}

#[derive(Debug, Default)]
pub(super) struct AgentKnown {
    pub(super) seq: Option<i64>,
    /// By [`series_key`].
    pub(super) series: FastMap<String, i64>,
}

/// `name`, a byte no metric name has, then the canonical labels: one string per series, built
/// into a reused buffer so that a known series costs no allocation.
pub(super) fn series_key(buf: &mut String, s: &MetricSample) {
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
    pub(super) seq: Option<i64>,
    /// Per sample, in order.
    pub(super) ids: Vec<Option<i64>>,
    /// When every series was known: the batch's point rows, encoded (timestamp, text), for
    /// the writer to store as they are when no other batch of its group shares their key.
    pub(super) rows: Vec<(i64, Arc<str>)>,
}

/// The samples of one batch per timestamp, each sorted by series with the first of a
/// repeated series kept: the rows it stores when no other batch shares their keys.
pub(super) fn batch_rows(samples: &[MetricSample], ids: &[i64]) -> BTreeMap<i64, Vec<Sample>> {
    let mut at: BTreeMap<i64, Vec<Sample>> = BTreeMap::new();
    for (s, id) in samples.iter().zip(ids) {
        at.entry(unix_ms(s.ts)).or_default().push((*id, s.value));
    }
    at.values_mut().for_each(row_order);
    at
}

/// A row's samples in the order it stores them: sorted by series (stable), the first of a
/// repeated series kept.
pub(super) fn row_order(v: &mut Vec<Sample>) {
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
    pub(super) series: Vec<(String, i64)>,
}

/// What [`insert_samples`] did.
#[derive(Debug, Default)]
pub struct Inserted {
    /// Points that were new.
    pub points: u64,
    /// What was looked up, for [`SeriesCache::learn`] after the commit.
    pub learned: Learned,
}

pub(super) async fn series_id(
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
