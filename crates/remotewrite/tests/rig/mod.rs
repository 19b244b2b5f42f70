//! Real remote-write receivers for tests (CONTRACT 26): VictoriaMetrics and Prometheus (its
//! remote-write receiver on, out-of-order writes allowed for at-least-once resends), from
//! Debian's packages (`.ci/run` installs them), each on a free port in its own directory,
//! stopped when dropped. Shared by this crate's tests and the hub's API tests.
#![allow(dead_code)]

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running receiver.
pub struct Receiver {
    child: Option<Child>,
    kind: Kind,
    pub dir: PathBuf,
    pub port: u16,
    pub base: String,
}

#[derive(Clone, Copy)]
enum Kind {
    VictoriaMetrics,
    Prometheus,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Receiver {
    /// Its remote-write URL.
    pub fn write_url(&self) -> String {
        format!("{}/api/v1/write", self.base)
    }

    /// Stops it as a service manager does (SIGTERM, then SIGKILL after 30 s); what it
    /// accepted stays on disk. (Both flush accepted samples to disk only every few seconds:
    /// a SIGKILL loses what they acknowledged last.)
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = Command::new("kill")
                .arg("-TERM")
                .arg(c.id().to_string())
                .status();
            for _ in 0..300 {
                if let Ok(Some(_)) = c.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts it again on the same port and data.
    pub async fn start_again(&mut self) {
        self.kill();
        self.child = Some(spawn(self.kind, &self.dir, self.port));
        self.ready().await;
    }

    async fn ready(&mut self) {
        let path = match self.kind {
            Kind::VictoriaMetrics => "/health",
            Kind::Prometheus => "/-/ready",
        };
        let client = client();
        for _ in 0..300 {
            if client
                .get(format!("{}{path}", self.base))
                .send()
                .await
                .is_ok_and(|x| x.status().is_success())
            {
                return;
            }
            if let Some(Ok(Some(status))) = self.child.as_mut().map(|c| c.try_wait()) {
                panic!("{} exited: {status}", self.base);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{} did not come up", self.base);
    }

    /// VictoriaMetrics: every sample of the series `selector` matches, as `/api/v1/export`
    /// lines (`{metric, values, timestamps}`), after a flush.
    pub async fn export(&self, selector: &str) -> Vec<Value> {
        let client = client();
        let _ = client
            .get(format!("{}/internal/force_flush", self.base))
            .send()
            .await;
        let text = client
            .get(format!(
                "{}/api/v1/export?{}={}&start=0&end={}",
                self.base,
                enc("match[]"),
                enc(selector),
                now_ms() / 1000 + 3600
            ))
            .send()
            .await
            .expect("export")
            .text()
            .await
            .expect("text");
        text.lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// VictoriaMetrics: waits until the series `selector` matches hold `samples` samples in
    /// all, and returns them.
    pub async fn wait_for_samples(&self, selector: &str, samples: usize, secs: u64) -> Vec<Value> {
        let deadline = std::time::Instant::now() + Duration::from_secs(secs);
        loop {
            let rows = self.export(selector).await;
            let n: usize = rows
                .iter()
                .map(|r| r["values"].as_array().map_or(0, Vec::len))
                .sum();
            if n >= samples || std::time::Instant::now() > deadline {
                return rows;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// An HTTP client (reqwest's TLS is built without a crypto provider in this workspace: ring
/// is installed first, as the hub and agent do).
pub fn client() -> reqwest::Client {
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
    let d = std::env::temp_dir().join(format!(
        "th-rw-{name}-{}-{}",
        std::process::id(),
        free_port()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("dir");
    d
}

fn spawn(kind: Kind, dir: &std::path::Path, port: u16) -> Child {
    match kind {
        Kind::VictoriaMetrics => Command::new("victoria-metrics")
            .arg(format!("-storageDataPath={}", dir.join("data").display()))
            .arg(format!("-httpListenAddr=127.0.0.1:{port}"))
            .arg("-retentionPeriod=100y")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("victoria-metrics (Debian's package, installed by .ci/run)"),
        Kind::Prometheus => {
            std::fs::write(
                dir.join("prometheus.yml"),
                "global:\n  scrape_interval: 1h\nstorage:\n  tsdb:\n    out_of_order_time_window: 1d\n",
            )
            .expect("config");
            Command::new("prometheus")
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
                .expect("prometheus (Debian's package, installed by .ci/run)")
        }
    }
}

async fn start(kind: Kind, name: &str) -> Receiver {
    let dir = temp(name);
    let port = free_port();
    let mut r = Receiver {
        child: Some(spawn(kind, &dir, port)),
        kind,
        dir,
        port,
        base: format!("http://127.0.0.1:{port}"),
    };
    r.ready().await;
    r
}

/// A VictoriaMetrics of its own.
pub async fn victoria_metrics() -> Receiver {
    start(Kind::VictoriaMetrics, "vm").await
}

/// A Prometheus of its own, its remote-write receiver on.
pub async fn prometheus() -> Receiver {
    start(Kind::Prometheus, "prom").await
}

/// Prometheus: the answer of an instant query at `at_ms`.
pub async fn prom_query(base: &str, query: &str, at_ms: i64) -> Value {
    client()
        .get(format!(
            "{base}/api/v1/query?query={}&time={}",
            enc(query),
            enc(&format!("{:.3}", at_ms as f64 / 1000.0))
        ))
        .send()
        .await
        .expect("query")
        .json()
        .await
        .expect("json")
}

/// A query parameter, percent-encoded.
pub fn enc(s: &str) -> String {
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

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}
