//! The encoder against real receivers (CONTRACT 26): VictoriaMetrics and Prometheus (its
//! remote-write receiver on), from Debian's packages, each started once for this binary.
//! What is written is read back through their own APIs — VictoriaMetrics' `/api/v1/export`,
//! Prometheus' `/api/v1/query` — with the names, labels, values and timestamps sent.

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use trusthub_remotewrite::{HEADERS, Series, encode, tag_label};

struct Receiver {
    child: Child,
    dir: PathBuf,
    base: String,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// An HTTP client (reqwest's TLS is built without a crypto provider in this workspace: ring
/// is installed first, as the hub and agent do).
fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("port")
}

fn temp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("th-rw-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("dir");
    d
}

async fn up(mut r: Receiver, ready: &str) -> Receiver {
    let client = client();
    for _ in 0..300 {
        if client
            .get(format!("{}{ready}", r.base))
            .send()
            .await
            .is_ok_and(|x| x.status().is_success())
        {
            return r;
        }
        if let Ok(Some(status)) = r.child.try_wait() {
            panic!("{} exited: {status}", r.base);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{} did not come up", r.base);
}

async fn victoria_metrics() -> Receiver {
    let dir = temp("vm");
    let port = free_port();
    let child = Command::new("victoria-metrics")
        .arg(format!("-storageDataPath={}", dir.display()))
        .arg(format!("-httpListenAddr=127.0.0.1:{port}"))
        .arg("-retentionPeriod=100y")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("victoria-metrics (Debian's package, installed by .ci/run)");
    up(
        Receiver {
            child,
            dir,
            base: format!("http://127.0.0.1:{port}"),
        },
        "/health",
    )
    .await
}

async fn prometheus() -> Receiver {
    let dir = temp("prom");
    let port = free_port();
    std::fs::write(
        dir.join("prometheus.yml"),
        "global:\n  scrape_interval: 1h\n",
    )
    .expect("config");
    let child = Command::new("prometheus")
        .arg(format!(
            "--config.file={}",
            dir.join("prometheus.yml").display()
        ))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg("--web.enable-remote-write-receiver")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("prometheus (Debian's package, installed by .ci/run)");
    up(
        Receiver {
            child,
            dir,
            base: format!("http://127.0.0.1:{port}"),
        },
        "/-/ready",
    )
    .await
}

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

/// A query parameter, percent-encoded.
fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn victoria_metrics_stores_what_was_written() {
    let vm = victoria_metrics().await;
    let now = now_ms();
    write(&vm.base, "/api/v1/write", &sample_series(now)).await;
    let client = client();
    let mut rows: Vec<Value> = Vec::new();
    for _ in 0..100 {
        let _ = client
            .get(format!("{}/internal/force_flush", vm.base))
            .send()
            .await;
        let text = client
            .get(format!(
                "{}/api/v1/export?{}={}&start=0&end={}",
                vm.base,
                enc("match[]"),
                enc("{tenant_id=\"t-1\"}"),
                now / 1000 + 60
            ))
            .send()
            .await
            .expect("export")
            .text()
            .await
            .expect("text");
        rows = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let samples: usize = rows
            .iter()
            .map(|r| r["values"].as_array().map_or(0, Vec::len))
            .sum();
        if samples == 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
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
    let client = client();
    let answer: Value = client
        .get(format!(
            "{}/api/v1/query?query={}&time={}",
            prom.base,
            enc("cpu_percent{tenant_id=\"t-1\"}[1m]"),
            enc(&format!("{:.3}", now as f64 / 1000.0))
        ))
        .send()
        .await
        .expect("query")
        .json()
        .await
        .expect("json");
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
