//! What strict parsing costs an ingest batch (issue 27): the realistic batch (one sample of
//! each of 100 series, as an agent pushes) parsed as before (serde alone) and as now
//! (`extract::parse_json`: the JSON guard's pass for depth and duplicate keys, then serde with
//! unknown fields refused), in the same run. The hub's whole-request time for such a batch is
//! in `bench/ingest.sh`; this isolates the part that changed.
//!
//! `cargo run --release -p trusthub-bench-ingest --bin guard`

use std::time::Instant;
use trusthub_core::agent::Batch;

fn batch() -> String {
    let now = "2026-11-26T10:00:00Z";
    let metrics: Vec<String> = (0..100)
        .map(|i| {
            format!(
                r#"{{"name":"bench.series_{i}","ts":"{now}","value":{}.5,"labels":{{"shard":"{}"}}}}"#,
                i * 7,
                i % 10
            )
        })
        .collect();
    format!(
        r#"{{"batch_id":"{}","sent_at":"{now}","metrics":[{}]}}"#,
        uuid::Uuid::now_v7(),
        metrics.join(",")
    )
}

fn main() {
    let body = batch();
    let rounds = 20_000;
    let mut before = Vec::new();
    let mut after = Vec::new();
    for _ in 0..7 {
        let t = Instant::now();
        for _ in 0..rounds {
            let b: Batch = serde_json::from_slice(body.as_bytes()).expect("parses");
            std::hint::black_box(b);
        }
        before.push(t.elapsed().as_secs_f64() * 1e6 / rounds as f64);
        let t = Instant::now();
        for _ in 0..rounds {
            let b: Batch =
                trusthub_hub::extract::parse_json(body.as_bytes()).expect("parses strictly");
            std::hint::black_box(b);
        }
        after.push(t.elapsed().as_secs_f64() * 1e6 / rounds as f64);
    }
    before.sort_by(f64::total_cmp);
    after.sort_by(f64::total_cmp);
    let (b, a) = (before[3], after[3]);
    println!(
        "realistic batch ({} bytes, 100 samples): serde alone {b:.1} µs, guard + strict serde {a:.1} µs (median of 7 × {rounds}); +{:.1} µs per batch, ratio {:.2}",
        body.len(),
        a - b,
        a / b
    );
}
