//! Both SDKs against a real hub on a port (SQLite): the Rust client end to end, across a hub
//! that starts late, with a full buffer; and the Python SDK's own test suite, run here with
//! the hub's address, whose traces are then checked in the hub.

use serde_json::{Value, json};
use std::time::Duration;
use trusthub_hub::{Server, Settings};
use trusthub_sdk::{Client, Config};

const EMAIL: &str = "owner@example.com";
const PASSWORD: &str = "correct horse battery";

struct Hub {
    base: String,
    db: trusthub_store::Db,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl Hub {
    /// Stops the hub and waits until it let go of its port and database.
    async fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.task.take() {
            let _ = t.await;
        }
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

struct Dir(std::path::PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn new_dir() -> Dir {
    Dir(std::env::temp_dir().join(format!("th-sdk-{}", uuid::Uuid::new_v4().simple())))
}

async fn start_hub(listen: std::net::SocketAddr, dir: &Dir) -> Hub {
    let mut s = Settings::with_data_dir(dir.0.clone());
    s.listen = listen;
    s.admin_email = EMAIL.into();
    s.admin_password = Some(PASSWORD.into());
    s.rate_limits = "off".into();
    s.shutdown_grace_secs = 1;
    let server = Server::build(s).await.expect("hub starts");
    let base = format!("http://{}", server.local_addr());
    let db = server.state().db.clone();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(server.run(async move {
        let _ = rx.await;
    }));
    Hub {
        base,
        db,
        stop: Some(tx),
        task: Some(task),
    }
}

/// Logs in as the owner and makes an `ai_ingest` token; also returns the session cookie.
async fn token(hub: &Hub) -> (String, String) {
    let http = reqwest::Client::new();
    let r = http
        .post(format!("{}/api/v1/auth/login", hub.base))
        .json(&json!({"email": EMAIL, "password": PASSWORD}))
        .send()
        .await
        .expect("login");
    assert_eq!(r.status(), 200);
    let cookie = r.headers()["set-cookie"]
        .to_str()
        .expect("cookie")
        .split(';')
        .next()
        .expect("pair")
        .to_owned();
    let b: Value = http
        .post(format!("{}/api/v1/api-tokens", hub.base))
        .header("cookie", &cookie)
        .json(&json!({"name": "sdk", "scope": "ai_ingest"}))
        .send()
        .await
        .expect("token")
        .json()
        .await
        .expect("json");
    (b["token"].as_str().expect("token").to_owned(), cookie)
}

async fn get(hub: &Hub, cookie: &str, path: &str) -> Value {
    reqwest::Client::new()
        .get(format!("{}/api/v1{path}", hub.base))
        .header("cookie", cookie)
        .send()
        .await
        .expect("get")
        .json()
        .await
        .expect("json")
}

async fn count(hub: &Hub, sql: &str) -> i64 {
    let mut c = hub.db.conn().await.expect("conn");
    let trusthub_store::Conn::Sqlite(c) = &mut c else {
        unreachable!("these tests run on SQLite")
    };
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()))
        .fetch_one(&mut **c)
        .await
        .expect("count")
}

fn free_addr() -> std::net::SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr")
}

fn sha(s: &str) -> String {
    trusthub_core::evidence::sha256_hex(s.as_bytes())
}

const NOV: &str = "/ai/teams?from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_sdk_sends_redacted_traces_and_survives_a_hub_outage() {
    let addr = free_addr();
    let dir = new_dir();
    let hub = start_hub(addr, &dir).await;
    let (key, _) = token(&hub).await;
    hub.stop().await;

    // The hub is down: recording neither blocks nor fails.
    let mut cfg = Config::new(&format!("http://{addr}"), &key, "rust-team");
    cfg.send_content = true;
    cfg.flush_interval = Duration::from_millis(100);
    cfg.tenant = Some("default".into());
    let client = Client::new(cfg).expect("client");
    let mut t = client.trace("answer");
    t.tag("env:test");
    let reply = t.call("gpt-4o", "Reset the password of jane@example.com", |c| {
        c.usage(900, 200)
            .provider("openai")
            .content("Done; mailed jane@example.com from 10.0.0.1");
        "done"
    });
    assert_eq!(reply, "done");
    let mut detail = trusthub_sdk::CallRecord::default();
    detail.usage_detail(trusthub_core::ai::Usage {
        prompt_tokens: 100,
        completion_tokens: 50,
        cache_read_tokens: 60,
        cache_write_tokens: 10,
        reasoning_tokens: 20,
    });
    detail.refused(true);
    t.record("in-house-llm", "card 4111 1111 1111 1111", 321, detail);
    assert!(t.end());
    for i in 0..3 {
        client.trace(&format!("background {i}")).end();
    }
    assert!(
        !client.flush(Duration::from_millis(500)),
        "nothing can be sent yet"
    );
    assert_eq!(client.stats().pending, 4);
    assert!(client.last_error().is_some());

    // The hub comes back on the same address: everything arrives, once.
    let hub = start_hub(addr, &dir).await;
    assert!(
        client.flush(Duration::from_secs(40)),
        "{:?}",
        client.last_error()
    );
    assert_eq!(client.stats().sent, 4);
    assert_eq!(client.stats().dropped, 0);
    let (_, cookie) = token(&hub).await;
    let teams = get(&hub, &cookie, NOV).await;
    assert_eq!(teams[0]["team"], "rust-team");
    assert_eq!(teams[0]["trace_count"], 4);
    assert_eq!(teams[0]["unpriced_calls"], 1);
    assert_eq!(teams[0]["refusal_rate"], 0.5);
    // Only redacted text left the process: the prompt as a hash, the content as a blob.
    let prompt = sha("Reset the password of [EMAIL]");
    assert_eq!(
        count(
            &hub,
            &format!("SELECT COUNT(*) FROM ai_calls WHERE prompt_sha256 = '{prompt}'")
        )
        .await,
        1
    );
    let content = "Done; mailed [EMAIL] from [IP]";
    assert_eq!(
        count(
            &hub,
            &format!(
                "SELECT COUNT(*) FROM ai_blobs WHERE sha256 = '{}' AND text = '{content}'",
                sha(content)
            )
        )
        .await,
        1
    );
    assert_eq!(
        count(
            &hub,
            "SELECT COUNT(*) FROM ai_blobs WHERE text LIKE '%@%' OR text LIKE '%4111%'"
        )
        .await,
        0
    );
    assert_eq!(
        count(&hub, "SELECT COUNT(*) FROM ai_traces WHERE tags LIKE '%team:rust-team%' AND tags LIKE '%tenant:default%'").await,
        4
    );
    drop(client);
    hub.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_sdk_bounds_its_buffer_and_counts_refusals() {
    let mut cfg = Config::new(&format!("http://{}", free_addr()), "tht_x", "t");
    cfg.max_buffer = 5;
    cfg.flush_interval = Duration::from_secs(60);
    cfg.shutdown_timeout = Duration::from_millis(100);
    let client = Client::new(cfg).expect("client");
    let kept: Vec<bool> = (0..8)
        .map(|i| client.trace(&format!("t{i}")).end())
        .collect();
    assert_eq!(kept.iter().filter(|k| !**k).count(), 3);
    assert_eq!(
        client.stats(),
        trusthub_sdk::Stats {
            sent: 0,
            dropped: 3,
            pending: 5
        }
    );
    drop(client);

    let dir = new_dir();
    let hub = start_hub(free_addr(), &dir).await;
    let (key, _) = token(&hub).await;
    let mut cfg = Config::new(&hub.base, &key, "t");
    cfg.flush_interval = Duration::from_millis(50);
    let client = Client::new(cfg).expect("client");
    let mut t = client.trace("bad");
    t.call("", "x", |_| ()); // an empty model name: the hub answers 422
    t.end();
    assert!(client.flush(Duration::from_secs(10)));
    assert_eq!(client.stats().dropped, 1);
    assert!(client.last_error().expect("error").contains("422"));
    drop(client);
    hub.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_suite_passes_against_the_hub() {
    let dir = new_dir();
    let hub = start_hub(free_addr(), &dir).await;
    let (key, cookie) = token(&hub).await;
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../sdk/python");
    let base = hub.base.clone();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("python3")
            .args(["-m", "unittest", "discover", "-s", "tests", "-v"])
            .current_dir(root)
            .env("PYTHONPATH", root)
            .env("TRUSTHUB_TEST_HUB_URL", base)
            .env("TRUSTHUB_TEST_TOKEN", key)
            .output()
            .expect("python3 runs")
    })
    .await
    .expect("join");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert!(!log.contains("skipped"), "every Python test ran:\n{log}");
    assert!(log.contains("Ran 7 tests"), "{log}");
    // What the Python client sent, as the hub stored it.
    let teams = get(&hub, &cookie, NOV).await;
    let py = teams
        .as_array()
        .expect("teams")
        .iter()
        .find(|t| t["team"] == "py-team")
        .expect("py-team")
        .clone();
    assert_eq!(py["trace_count"], 2);
    assert_eq!(py["unpriced_calls"], 1);
    let prompt = sha("Reset for [EMAIL] please");
    assert_eq!(
        count(&hub, &format!("SELECT COUNT(*) FROM ai_calls WHERE prompt_sha256 = '{prompt}' AND cache_read_tokens = 100 AND reasoning_tokens = 50")).await,
        1
    );
    assert_eq!(
        count(&hub, "SELECT COUNT(*) FROM ai_calls WHERE model = 'gpt-4o-mini' AND cache_read_tokens = 16 AND reasoning_tokens = 2").await,
        1
    );
    let content = "Done. I wrote to [EMAIL] from [IP]";
    assert_eq!(
        count(
            &hub,
            &format!(
                "SELECT COUNT(*) FROM ai_blobs WHERE sha256 = '{}'",
                sha(content)
            )
        )
        .await,
        1
    );
    assert_eq!(
        count(
            &hub,
            "SELECT COUNT(*) FROM ai_blobs WHERE text LIKE '%@%' OR text LIKE '%4111%'"
        )
        .await,
        0
    );
    hub.stop().await;
}
