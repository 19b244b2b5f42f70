//! The encoder against real receivers (CONTRACT 26): VictoriaMetrics and Prometheus (its
//! remote-write receiver on), from Debian's packages, each started by its test. What is
//! written is read back through their own APIs — VictoriaMetrics' `/api/v1/export`,
//! Prometheus' `/api/v1/query` — with the names, labels, values and timestamps sent.

mod rig;

use rig::{client, now_ms, prom_query, prometheus, victoria_metrics};
use trusthub_remotewrite::{HEADERS, Series, encode, tag_label};

async fn write(base: &str, path: &str, series: &[Series]) {
    let mut req = client()
        .post(format!("{base}{path}"))
        .header("user-agent", "trusthub-test")
        .body(encode(series));
    for (k, v) in HEADERS {
        req = req.header(k, v);
    }
    let r = req.send().await.expect("write");
    let status = r.status();
    assert!(
        status.is_success(),
        "{base}{path}: {status} {}",
        r.text().await.unwrap_or_default()
    );
}

fn sample_series(now_ms: i64) -> Vec<Series> {
    let (tag_key, tag_value) = tag_label("env:prod");
    vec![
        Series {
            name: "cpu.percent".into(),
            labels: vec![
                ("tenant_id".into(), "t-1".into()),
                ("agent_id".into(), "a-1".into()),
                ("hostname".into(), "web-1".into()),
                ("cpu".into(), "total".into()),
                (tag_key, tag_value),
            ],
            samples: vec![
                (now_ms - 2000, 12.5),
                (now_ms - 4000, 10.25),
                (now_ms, 0.125),
            ],
        },
        Series {
            name: "mem.used_bytes".into(),
            labels: vec![
                ("tenant_id".into(), "t-1".into()),
                ("agent_id".into(), "a-1".into()),
                ("hostname".into(), "web-1".into()),
            ],
            samples: vec![(now_ms - 1000, 8.0e9)],
        },
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn victoria_metrics_stores_what_was_written() {
    let vm = victoria_metrics().await;
    let now = now_ms();
    write(&vm.base, "/api/v1/write", &sample_series(now)).await;
    let mut rows = vm.wait_for_samples("{tenant_id=\"t-1\"}", 4, 20).await;
    rows.sort_by_key(|r| {
        r["metric"]["__name__"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    });
    assert_eq!(rows.len(), 2, "{rows:?}");
    let cpu = &rows[0];
    assert_eq!(
        cpu["metric"],
        serde_json::json!({"__name__": "cpu_percent", "tenant_id": "t-1", "agent_id": "a-1",
            "hostname": "web-1", "cpu": "total", "tag_env": "prod"})
    );
    assert_eq!(cpu["values"], serde_json::json!([10.25, 12.5, 0.125]));
    assert_eq!(
        cpu["timestamps"],
        serde_json::json!([now - 4000, now - 2000, now])
    );
    assert_eq!(rows[1]["metric"]["__name__"], "mem_used_bytes");
    assert_eq!(rows[1]["values"][0].as_f64(), Some(8.0e9));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_stores_what_was_written() {
    let prom = prometheus().await;
    let now = now_ms();
    write(&prom.base, "/api/v1/write", &sample_series(now)).await;
    let answer = prom_query(&prom.base, "cpu_percent{tenant_id=\"t-1\"}[1m]", now).await;
    let result = &answer["data"]["result"];
    assert_eq!(result.as_array().map(Vec::len), Some(1), "{answer}");
    assert_eq!(
        result[0]["metric"],
        serde_json::json!({"__name__": "cpu_percent", "tenant_id": "t-1", "agent_id": "a-1",
            "hostname": "web-1", "cpu": "total", "tag_env": "prod"})
    );
    // Prometheus answers [seconds, "value"] pairs.
    let values: Vec<(i64, String)> = result[0]["values"]
        .as_array()
        .expect("values")
        .iter()
        .map(|p| {
            (
                (p[0].as_f64().unwrap_or_default() * 1000.0).round() as i64,
                p[1].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        values,
        [
            (now - 4000, "10.25".to_owned()),
            (now - 2000, "12.5".to_owned()),
            (now, "0.125".to_owned())
        ]
    );
}
