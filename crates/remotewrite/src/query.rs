//! Reading ranges back (CONTRACT 26): with `TRUSTHUB_METRICS_QUERY_URL` (a Prometheus
//! HTTP API: VictoriaMetrics, Prometheus, Mimir, Thanos), `GET /agents/:id/metrics` and the
//! host page's charts read points from there, in the shape of CONTRACT 4.
//!
//! - Raw points: the range selector `name{tenant_id, agent_id}[<to - from + 1>ms]` at
//!   `to - 1 ms` (`/api/v1/query`), cut to [from, to).
//! - Buckets of width `b`, labelled with their start `s` and holding [s, s + b):
//!   `avg_over_time(name{...}[<b>ms])` evaluated at `s + b - 1 ms` for each bucket
//!   (`/api/v1/query_range`, step `b`, in runs of at most 10,000 steps). Engines whose windows
//!   are left-open (VictoriaMetrics, Prometheus 3) take exactly [s, s + b); Prometheus 2's
//!   closed windows also take a sample stamped exactly `s - 1 ms`.
//!
//! The answer's series are matched to the hub's by their own labels (the contract's labels —
//! tenant, agent, host name, tags — set aside).

use crate::wire::metric_name;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;
use trusthub_fleet::ranges::{RangeAnswer, RangeRequest};
use trusthub_platform::AppState;

/// A series' labels.
type Labels = BTreeMap<String, String>;

/// Steps asked in one `query_range` at most (Prometheus refuses more than 11,000).
const MAX_STEPS: i64 = 10_000;

/// The outside store ranges are read from (a part of the state; `None` inside when
/// `TRUSTHUB_METRICS_QUERY_URL` is not set).
#[derive(Debug, Default)]
pub struct MetricsStore(Option<Store>);

#[derive(Debug)]
struct Store {
    /// The API's base (`http://vm:8428`, or with a path prefix), without userinfo.
    base: String,
    basic: Option<crate::sender::Credentials>,
    client: reqwest::Client,
}

impl MetricsStore {
    /// The store of `TRUSTHUB_METRICS_QUERY_URL`: an `http`/`https` URL of a Prometheus
    /// HTTP API's root (the part before `/api/v1/...`); its userinfo is basic auth.
    pub fn from_settings(url: Option<&str>) -> Result<MetricsStore, String> {
        let Some(raw) = url.map(str::trim).filter(|u| !u.is_empty()) else {
            return Ok(MetricsStore(None));
        };
        let (base, basic) = crate::sender::split_userinfo(raw)
            .map_err(|e| format!("TRUSTHUB_METRICS_QUERY_URL: {e}"))?;
        let base = base
            .trim_end_matches('/')
            .trim_end_matches("/api/v1")
            .to_owned();
        Ok(MetricsStore(Some(Store {
            base,
            basic,
            client: crate::sender::client(),
        })))
    }

    /// Whether ranges are read from outside.
    pub fn enabled(&self) -> bool {
        self.0.is_some()
    }
}

/// The range function the fleet calls (installed when the store is configured).
pub fn ranges<'a>(
    state: &'a AppState,
    request: &'a RangeRequest<'a>,
) -> trusthub_platform::BoxFuture<'a, RangeAnswer> {
    Box::pin(async move {
        let Some(store) = &state.part::<MetricsStore>().0 else {
            return Err("no metrics store is configured".into());
        };
        store.ranges(request).await
    })
}

#[derive(Debug, Deserialize)]
struct Answer {
    status: String,
    #[serde(default)]
    data: Option<Data>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Data {
    #[serde(rename = "resultType")]
    result_type: String,
    result: Vec<Matrix>,
}

#[derive(Debug, Deserialize)]
struct Matrix {
    metric: BTreeMap<String, String>,
    #[serde(default)]
    values: Vec<(f64, String)>,
}

/// A PromQL string literal.
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A query string of these parameters, percent-encoded.
fn params(pairs: &[(&str, &str)]) -> String {
    serde_urlencoded::to_string(pairs).unwrap_or_default()
}

/// Unix milliseconds as the API's seconds.
fn secs(ms: i64) -> String {
    format!("{:.3}", ms as f64 / 1000.0)
}

/// The labels a series is matched by: its own, as the wire names them.
fn own_labels(labels: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    labels
        .iter()
        .filter(|(k, v)| !v.is_empty() && !k.is_empty())
        .map(|(k, v)| (metric_name(k).replace(':', "_"), v.clone()))
        .filter(|(k, _)| !reserved(k))
        .collect()
}

fn reserved(label: &str) -> bool {
    matches!(label, "__name__" | "tenant_id" | "agent_id" | "hostname") || label.starts_with("tag_")
}

impl Store {
    async fn get(&self, path_and_query: &str) -> Result<Vec<Matrix>, String> {
        let mut req = self
            .client
            .get(format!("{}{path_and_query}", self.base))
            .timeout(Duration::from_secs(30));
        if let Some((u, p)) = &self.basic {
            req = req.basic_auth(u, p.as_deref());
        }
        let resp = req.send().await.map_err(|e| e.to_string())?;
        let status = resp.status();
        let text = resp.text().await.map_err(|e| e.to_string())?;
        let answer: Answer = serde_json::from_str(&text)
            .map_err(|_| trusthub_platform::outbound::provider_error(status.as_u16(), &text))?;
        if answer.status != "success" {
            return Err(answer
                .error
                .unwrap_or_else(|| format!("HTTP {}", status.as_u16())));
        }
        let data = answer.data.ok_or("an answer without data")?;
        if data.result_type != "matrix" {
            return Err(format!(
                "a {} where a matrix was expected",
                data.result_type
            ));
        }
        Ok(data.result)
    }

    async fn ranges(&self, r: &RangeRequest<'_>) -> RangeAnswer {
        let selector = format!(
            "{}{{tenant_id={},agent_id={}}}",
            metric_name(r.name),
            quoted(&r.tenant.0.to_string()),
            quoted(&r.agent_id.to_string())
        );
        let w = r.window;
        // (unix ms, value) per series' own labels.
        let mut found: Vec<(Labels, Vec<(i64, f64)>)> = Vec::new();
        let mut take = |rows: Vec<Matrix>, shift: i64| {
            for m in rows {
                let own = own_labels(&m.metric);
                let points = m.values.into_iter().filter_map(|(t, v)| {
                    Some(((t * 1000.0).round() as i64 - shift, v.parse().ok()?))
                });
                match found.iter_mut().find(|(l, _)| *l == own) {
                    Some((_, p)) => p.extend(points),
                    None => found.push((own, points.collect())),
                }
            }
        };
        match w.bucket_ms {
            None => {
                let range = w.to_ms - w.from_ms + 1;
                let rows = self
                    .get(&format!(
                        "/api/v1/query?{}",
                        params(&[
                            ("query", &format!("{selector}[{range}ms]")),
                            ("time", &secs(w.to_ms - 1)),
                        ])
                    ))
                    .await?;
                take(rows, 0);
                for (_, p) in found.iter_mut() {
                    p.retain(|(t, _)| *t >= w.from_ms && *t < w.to_ms);
                }
            }
            Some(b) => {
                let first = w.from_ms.div_euclid(b) * b;
                let last = (w.to_ms - 1).div_euclid(b) * b;
                let query = format!("avg_over_time({selector}[{b}ms])");
                let mut start = first;
                while start <= last {
                    let end = (start + (MAX_STEPS - 1) * b).min(last);
                    let rows = self
                        .get(&format!(
                            "/api/v1/query_range?{}",
                            params(&[
                                ("query", &query),
                                ("start", &secs(start + b - 1)),
                                ("end", &secs(end + b - 1)),
                                ("step", &secs(b)),
                            ])
                        ))
                        .await?;
                    // Each step's time is its bucket's start + b - 1 ms.
                    take(rows, b - 1);
                    start = end + b;
                }
            }
        }
        let mut out = HashMap::new();
        for (id, labels) in &r.series {
            let own = own_labels(labels);
            if let Some((_, points)) = found.iter_mut().find(|(l, _)| *l == own) {
                let mut p = std::mem::take(points);
                p.sort_by_key(|x| x.0);
                p.dedup_by_key(|x| x.0);
                out.insert(*id, p);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_quote_and_seconds_keep_milliseconds() {
        assert_eq!(quoted("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(secs(1_764_000_000_123), "1764000000.123");
        assert_eq!(secs(999), "0.999");
        let mut l = BTreeMap::new();
        l.insert("mount".to_owned(), "/".to_owned());
        l.insert("hostname".to_owned(), "x".to_owned());
        l.insert("tag_env".to_owned(), "prod".to_owned());
        l.insert("disk.name".to_owned(), "sda".to_owned());
        assert_eq!(
            own_labels(&l).into_iter().collect::<Vec<_>>(),
            [
                ("disk_name".to_owned(), "sda".to_owned()),
                ("mount".to_owned(), "/".to_owned())
            ]
        );
    }
}
