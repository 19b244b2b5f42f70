//! Reading metric ranges (CONTRACT 4 and 26): from the hub's own tables, or, when a metrics
//! store outside the hub is configured (`TRUSTHUB_METRICS_QUERY_URL`), from there — the API
//! and the host page's charts both read through [`points_of`].

use crate::store::telemetry::{self, Series};
use std::collections::{BTreeMap, HashMap};
use trusthub_platform::AppState;
use trusthub_platform::error::{ApiError, ApiResult};
use trusthub_store::TenantId;
use uuid::Uuid;

/// A range of one metric of one agent, asked of the outside store.
#[derive(Debug)]
pub struct RangeRequest<'a> {
    /// The tenant.
    pub tenant: TenantId,
    /// The agent.
    pub agent_id: Uuid,
    /// The metric name as stored (`cpu.percent`).
    pub name: &'a str,
    /// The hub's series of that name: id and own labels (what the answer is matched to).
    pub series: Vec<(i64, BTreeMap<String, String>)>,
    /// The range.
    pub window: Window,
}

/// A range and its resolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Start, unix milliseconds (inclusive).
    pub from_ms: i64,
    /// End, unix milliseconds (exclusive).
    pub to_ms: i64,
    /// Bucket width in milliseconds: averages per bucket labelled with its start, holding
    /// [start, start + width); raw samples when `None`.
    pub bucket_ms: Option<i64>,
}

/// Points per series id, oldest first; an error says why the store could not answer.
pub type RangeAnswer = Result<HashMap<i64, Vec<(i64, f64)>>, String>;

/// The signature of [`MetricRanges`].
pub type RangesFn =
    for<'a> fn(&'a AppState, &'a RangeRequest<'a>) -> trusthub_platform::BoxFuture<'a, RangeAnswer>;

/// Where ranges are read when not from the hub's tables (a part of the state the composition
/// root installs: `None` unless `TRUSTHUB_METRICS_QUERY_URL` is set).
#[derive(Debug)]
pub struct MetricRanges(pub Option<RangesFn>);

/// The points of each series of one agent in the window, in the order given; at most
/// `limit` per series.
pub async fn points_of(
    state: &AppState,
    tenant: TenantId,
    agent_id: Uuid,
    series: &[&Series],
    window: Window,
    limit: i64,
) -> ApiResult<Vec<Vec<(i64, f64)>>> {
    let Some(remote) = state.part::<MetricRanges>().0 else {
        let mut c = state.db.conn().await?;
        // All of the agent's series at once: its rows hold every series.
        let mut out = vec![Vec::new(); series.len()];
        let mut by_agent: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
        for (i, s) in series.iter().enumerate() {
            by_agent.entry(s.agent_seq).or_default().push(i);
        }
        for (seq, at) in by_agent {
            let ids: Vec<i64> = at.iter().map(|i| series[*i].id).collect();
            let got = telemetry::points(
                &mut c,
                seq,
                &ids,
                window.from_ms,
                window.to_ms,
                window.bucket_ms,
                limit,
            )
            .await?;
            for (i, p) in at.into_iter().zip(got) {
                out[i] = p;
            }
        }
        return Ok(out);
    };
    let mut names: Vec<&str> = series.iter().map(|s| s.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    let mut found: HashMap<i64, Vec<(i64, f64)>> = HashMap::new();
    for name in names {
        let request = RangeRequest {
            tenant,
            agent_id,
            name,
            series: series
                .iter()
                .filter(|s| s.name == name)
                .map(|s| (s.id, serde_json::from_str(&s.labels).unwrap_or_default()))
                .collect(),
            window,
        };
        let answer = remote(state, &request).await.map_err(|e| {
            ApiError::Unavailable(format!(
                "the metrics store (TRUSTHUB_METRICS_QUERY_URL) did not answer: {e}"
            ))
        })?;
        found.extend(answer);
    }
    Ok(series
        .iter()
        .map(|s| {
            let mut p = found.remove(&s.id).unwrap_or_default();
            p.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
            p
        })
        .collect())
}
