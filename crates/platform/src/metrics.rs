//! Prometheus text exposition for `//metrics` (SPEC 4.11): request counts and latency
//! histograms per route and status, database pool figures and process figures.
//!
//! A small registry of our own: the figures are few and fixed, and the exposition format is
//! a stable standard, so a metrics framework would add more code than it saves.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use trusthub_store::PoolStats;

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

#[derive(Default)]
struct Series {
    count: u64,
    sum: f64,
    buckets: [u64; BUCKETS.len()],
}

/// Request figures of this process.
#[derive(Default)]
pub struct Metrics {
    http: Mutex<BTreeMap<(String, String, u16), Series>>,
    batches_stored: AtomicU64,
    batches_duplicate: AtomicU64,
    samples_stored: AtomicU64,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Metrics {
    /// Records one finished request.
    pub fn observe(&self, method: &str, route: &str, status: u16, seconds: f64) {
        let Ok(mut map) = self.http.lock() else {
            return;
        };
        let s = map
            .entry((method.to_owned(), route.to_owned(), status))
            .or_default();
        s.count += 1;
        s.sum += seconds;
        for (i, le) in BUCKETS.iter().enumerate() {
            if seconds <= *le {
                s.buckets[i] += 1;
            }
        }
    }

    /// Records one acknowledged ingest batch.
    pub fn ingested(&self, fresh: bool, samples: usize) {
        if fresh {
            self.batches_stored.fetch_add(1, Ordering::Relaxed);
            self.samples_stored
                .fetch_add(samples as u64, Ordering::Relaxed);
        } else {
            self.batches_duplicate.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The exposition text.
    pub fn render(
        &self,
        pool: PoolStats,
        backend: &str,
        repeated_points: u64,
        ingest_arriving: usize,
    ) -> String {
        let mut out = String::with_capacity(4096);
        out.push_str(
            "# HELP trusthub_http_requests_total HTTP requests answered, by route and status.\n",
        );
        out.push_str("# TYPE trusthub_http_requests_total counter\n");
        let map = match self.http.lock() {
            Ok(m) => m,
            Err(p) => p.into_inner(),
        };
        for ((method, route, status), s) in map.iter() {
            let _ = writeln!(
                out,
                "trusthub_http_requests_total{{method=\"{method}\",route=\"{}\",status=\"{status}\"}} {}",
                escape(route),
                s.count
            );
        }
        out.push_str(
            "# HELP trusthub_http_request_duration_seconds Time to answer HTTP requests.\n",
        );
        out.push_str("# TYPE trusthub_http_request_duration_seconds histogram\n");
        for ((method, route, status), s) in map.iter() {
            let labels = format!(
                "method=\"{method}\",route=\"{}\",status=\"{status}\"",
                escape(route)
            );
            for (i, le) in BUCKETS.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "trusthub_http_request_duration_seconds_bucket{{{labels},le=\"{le}\"}} {}",
                    s.buckets[i]
                );
            }
            let _ = writeln!(
                out,
                "trusthub_http_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}",
                s.count
            );
            let _ = writeln!(
                out,
                "trusthub_http_request_duration_seconds_sum{{{labels}}} {}",
                s.sum
            );
            let _ = writeln!(
                out,
                "trusthub_http_request_duration_seconds_count{{{labels}}} {}",
                s.count
            );
        }
        drop(map);
        let _ = write!(
            out,
            "# HELP trusthub_ingest_batches_total Agent batches acknowledged, by result.\n\
             # TYPE trusthub_ingest_batches_total counter\n\
             trusthub_ingest_batches_total{{result=\"stored\"}} {}\n\
             trusthub_ingest_batches_total{{result=\"duplicate\"}} {}\n\
             # HELP trusthub_ingest_samples_total Metric samples in stored batches.\n\
             # TYPE trusthub_ingest_samples_total counter\n\
             trusthub_ingest_samples_total {}\n\
             # HELP trusthub_ingest_points_repeated_total Samples of stored batches whose point (series and timestamp) was stored already; kept once.\n\
             # TYPE trusthub_ingest_points_repeated_total counter\n\
             trusthub_ingest_points_repeated_total {}\n\
             # HELP trusthub_ingest_requests_arriving Ingest requests authenticated whose batch is being read and checked, not yet queued for the writer.\n\
             # TYPE trusthub_ingest_requests_arriving gauge\n\
             trusthub_ingest_requests_arriving {}\n",
            self.batches_stored.load(Ordering::Relaxed),
            self.batches_duplicate.load(Ordering::Relaxed),
            self.samples_stored.load(Ordering::Relaxed),
            repeated_points,
            ingest_arriving
        );
        let _ = write!(
            out,
            "# HELP trusthub_db_pool_connections Database pool connections by state.\n\
             # TYPE trusthub_db_pool_connections gauge\n\
             trusthub_db_pool_connections{{backend=\"{backend}\",state=\"idle\"}} {}\n\
             trusthub_db_pool_connections{{backend=\"{backend}\",state=\"in_use\"}} {}\n\
             # HELP trusthub_db_pool_max_connections Configured maximum of the database pool.\n\
             # TYPE trusthub_db_pool_max_connections gauge\n\
             trusthub_db_pool_max_connections{{backend=\"{backend}\"}} {}\n",
            pool.idle,
            pool.size.saturating_sub(pool.idle),
            pool.max
        );
        process_figures(&mut out);
        out
    }
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Standard `process_*` figures read from `/proc/self` (Linux; nothing elsewhere).
fn process_figures(out: &mut String) {
    if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
        let kb = |key: &str| {
            status
                .lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
        };
        if let Some(rss) = kb("VmRSS:") {
            let _ = write!(
                out,
                "# HELP process_resident_memory_bytes Resident memory size in bytes.\n\
                 # TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes {}\n",
                rss * 1024
            );
        }
        if let Some(vsz) = kb("VmSize:") {
            let _ = write!(
                out,
                "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n\
                 # TYPE process_virtual_memory_bytes gauge\nprocess_virtual_memory_bytes {}\n",
                vsz * 1024
            );
        }
        if let Some(threads) = kb("Threads:") {
            let _ = write!(
                out,
                "# HELP process_threads OS threads of the process.\n# TYPE process_threads gauge\nprocess_threads {threads}\n"
            );
        }
    }
    if let Ok(stat) = std::fs::read_to_string("/proc/self/stat") {
        // Fields after the parenthesised command name; utime and stime are fields 14 and 15
        // (1-based), counted in clock ticks of 1/100 s on Linux.
        if let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) {
            let f: Vec<&str> = rest.split_whitespace().collect();
            let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
            let cpu = (ticks(11) + ticks(12)) / 100.0;
            let _ = write!(
                out,
                "# HELP process_cpu_seconds_total User and system CPU time spent in seconds.\n\
                 # TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total {cpu}\n"
            );
        }
    }
    if let Ok(dir) = std::fs::read_dir("/proc/self/fd") {
        let _ = write!(
            out,
            "# HELP process_open_fds Open file descriptors.\n# TYPE process_open_fds gauge\nprocess_open_fds {}\n",
            dir.count()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_cumulative_and_count_matches() {
        let m = Metrics::default();
        m.observe("GET", "/api/v1/health", 200, 0.003);
        m.observe("GET", "/api/v1/health", 200, 0.2);
        let text = m.render(
            PoolStats {
                size: 3,
                idle: 2,
                max: 10,
            },
            "sqlite",
            7,
            2,
        );
        assert!(text.contains("trusthub_ingest_points_repeated_total 7"));
        assert!(text.contains("trusthub_ingest_requests_arriving 2"));
        assert!(text.contains(
            "trusthub_http_requests_total{method=\"GET\",route=\"/api/v1/health\",status=\"200\"} 2"
        ));
        assert!(text.contains("le=\"0.005\"} 1"));
        assert!(text.contains("le=\"0.25\"} 2"));
        assert!(text.contains("le=\"+Inf\"} 2"));
        assert!(
            text.contains("trusthub_db_pool_connections{backend=\"sqlite\",state=\"in_use\"} 1")
        );
    }
}
