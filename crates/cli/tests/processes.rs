//! The `trusthub` binary as operators run it: several processes on one PostgreSQL database,
//! SIGTERM, the admin commands next to a running hub, JSON logs, the SQLite lock.

use serde_json::{Value, json};
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;
use trusthub_store::{Db, DbOptions};

mod common;

use common::*;
const KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hubs_on_one_postgres_database_make_one_owner_share_sessions_and_limits() {
    let Some((name, url)) = pg_database().await else {
        return;
    };
    let (dir_a, dir_b) = (TempDir::new(), TempDir::new());
    let envs = [
        ("TRUSTHUB_DATABASE_URL", url.as_str()),
        ("CLOUD_ENCRYPTION_KEY", KEY),
    ];
    // Both start at the same moment on the empty database.
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| Hub::start(&dir_a.0, &envs));
        let b = s.spawn(|| Hub::start(&dir_b.0, &envs));
        (a.join().expect("a"), b.join().expect("b"))
    });
    assert!(
        a.created_owner() ^ b.created_owner(),
        "exactly one process bootstrapped"
    );
    let winner_dir = if a.created_owner() {
        &dir_a.0
    } else {
        &dir_b.0
    };
    let mode = std::fs::metadata(winner_dir.join("initial-admin.txt"))
        .expect("file")
        .permissions();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
        0o600
    );
    let password = initial_password(winner_dir);
    let db = Db::connect(&url, &DbOptions::default()).await.expect("db");
    let Db::Postgres(pool) = &db else { panic!() };
    let owners: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM users WHERE role = 'owner'")
        .fetch_one(pool)
        .await
        .expect("q");
    let tenants: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM tenants")
        .fetch_one(pool)
        .await
        .expect("q");
    assert_eq!((owners, tenants), (1, 1));

    // Both processes sign action tokens with the one hub key created at first start.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let key_of = |base: String| async move {
        let v: Value = reqwest::get(format!("{base}/agents/eat-public-key"))
            .await
            .expect("get")
            .json()
            .await
            .expect("json");
        v["public_key_hex"].as_str().expect("hex").to_owned()
    };
    assert_eq!(key_of(a.base.clone()).await, key_of(b.base.clone()).await);

    // A session made on one process works on the other. (The counted logins start with at
    // least 12 s left in the minute: the limit's windows are whole minutes.)
    while std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() % 60)
        .unwrap_or(0)
        >= 48
    {
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let resp = login(&client, &a.base, "admin@trusthub.local", &password).await;
    assert_eq!(resp.status(), 200);
    let session = cookie(&resp);
    let me = client
        .get(format!("{}/me", b.base))
        .header("cookie", &session)
        .send()
        .await
        .expect("me");
    assert_eq!(me.status(), 200);

    // The login limit (10 a minute per IP) is counted in the database: attempts spread over
    // both processes share one budget. The login above was the first of this window unless
    // the minute turned over; the 11th attempt must be refused either way within 12.
    let mut refused_at = None;
    for i in 2..=12 {
        let base = if i % 2 == 0 { &b.base } else { &a.base };
        let r = login(&client, base, "admin@trusthub.local", "wrong password").await;
        if r.status() == 429 {
            refused_at = Some(i);
            break;
        }
        assert_eq!(r.status(), 401);
    }
    assert!(
        refused_at.is_some_and(|i| i >= 11),
        "refused at {refused_at:?}"
    );
    db.close().await;
    drop((a, b));
    drop_pg_database(&name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_an_in_flight_request_finish_then_exits_cleanly() {
    let dir = TempDir::new();
    let mut hub = Hub::start(&dir.0, &[("TRUSTHUB_ADMIN_PASSWORD", "a fine password")]);
    let addr = hub
        .base
        .trim_start_matches("http://")
        .trim_end_matches("/api/v1")
        .to_owned();
    let body = json!({"email": "admin@trusthub.local", "password": "a fine password"}).to_string();
    let mut stream = std::net::TcpStream::connect(&addr).expect("connect");
    let head = format!(
        "POST /api/v1/auth/login HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).expect("head");
    stream.write_all(&body.as_bytes()[..10]).expect("part");
    std::thread::sleep(Duration::from_millis(300));
    // SIGTERM while the request is half sent.
    Command::new("kill")
        .args(["-TERM", &hub.pid()])
        .status()
        .expect("kill");
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        hub.child.try_wait().expect("wait").is_none(),
        "still finishing the request"
    );
    stream.write_all(&body.as_bytes()[10..]).expect("rest");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("answer");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let status = hub.terminate();
    assert!(status.success(), "{status:?}");
    // New connections are no longer accepted.
    assert!(std::net::TcpStream::connect(&addr).is_err());
    // Its log went to a pipe, not a terminal: plain text, no colour codes.
    let log: Vec<String> = hub.stderr.try_iter().collect();
    assert!(!log.is_empty());
    assert!(log.iter().all(|l| !l.contains('\u{1b}')), "{log:?}");
}

/// A SIGTERM while the hub is still starting (here while the first start makes its CA, which
/// takes seconds) is a graceful stop once it serves, not the signal's default kill.
#[test]
fn sigterm_during_start_up_is_a_graceful_stop() {
    let dir = TempDir::new();
    let mut hub = Hub::start(&dir.0, &[("TRUSTHUB_ADMIN_PASSWORD", "a fine password")]);
    let status = hub.terminate();
    // The process has ended: its log is whole once the reader reaches the pipe's end.
    let log: Vec<String> = hub.stderr.iter().collect();
    assert!(status.success(), "{status:?}: {log:?}");
    assert!(log.iter().any(|l| l.contains("shutting down")), "{log:?}");
}

/// The hub turns transparent huge pages off for itself (its own `prctl` flag, which the
/// kernel shows as `THP_enabled` in the process's status), unless `MIMALLOC_ALLOW_THP` is set.
#[test]
fn the_hub_turns_transparent_huge_pages_off_for_itself_unless_told_otherwise() {
    fn thp_enabled(hub: &Hub) -> Option<String> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", hub.pid())).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("THP_enabled:"))
            .map(|v| v.trim().to_owned())
    }
    let ours = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    // Off already for these tests (the flag is inherited from whatever started them): then
    // no hub they start can have them on.
    let inherited_off = ours
        .lines()
        .any(|l| l.replace(char::is_whitespace, "") == "THP_enabled:0");
    let dir = TempDir::new();
    let mut hub = Hub::start(&dir.0, &[("TRUSTHUB_ADMIN_PASSWORD", "a fine password")]);
    let Some(off) = thp_enabled(&hub) else {
        // A kernel without transparent huge pages shows no such line: nothing to turn off.
        assert!(hub.terminate().success());
        return;
    };
    assert_eq!(off, "0", "the hub's own flag");
    let status = hub.terminate();
    let log: Vec<String> = hub.stderr.try_iter().collect();
    assert!(status.success(), "{status:?}: {log:?}");
    let dir = TempDir::new();
    let mut hub = Hub::start(
        &dir.0,
        &[
            ("TRUSTHUB_ADMIN_PASSWORD", "a fine password"),
            ("MIMALLOC_ALLOW_THP", "1"),
        ],
    );
    if !inherited_off {
        assert_eq!(thp_enabled(&hub).as_deref(), Some("1"), "left to mimalloc");
    }
    assert!(hub.terminate().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_commands_work_next_to_a_running_sqlite_hub() {
    let dir = TempDir::new();
    let hub = Hub::start(
        &dir.0,
        &[
            ("TRUSTHUB_ADMIN_PASSWORD", "a fine password"),
            ("TRUSTHUB_LOG_FORMAT", "json"),
        ],
    );
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let session = cookie(
        &login(
            &client,
            &hub.base,
            "admin@trusthub.local",
            "a fine password",
        )
        .await,
    );

    let out = Command::new(BIN)
        .args([
            "admin",
            "create-tenant",
            "--name",
            "acme",
            "--owner-email",
            "boss@acme.example",
            "--owner-password",
            "acme password",
        ])
        .arg("--data-dir")
        .arg(&dir.0)
        .output()
        .expect("create-tenant");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("created tenant acme"));
    let acme = login(&client, &hub.base, "boss@acme.example", "acme password").await;
    assert_eq!(acme.status(), 200);
    let me: Value = client
        .get(format!("{}/me", hub.base))
        .header("cookie", cookie(&acme))
        .send()
        .await
        .expect("me")
        .json()
        .await
        .expect("json");
    assert_eq!(me["tenant"]["name"], "acme");
    assert_eq!(me["user"]["role"], "owner");

    let dup = Command::new(BIN)
        .args([
            "admin",
            "create-tenant",
            "--name",
            "acme",
            "--owner-email",
            "x@acme.example",
            "--owner-password",
            "acme password",
        ])
        .arg("--data-dir")
        .arg(&dir.0)
        .output()
        .expect("dup");
    assert!(!dup.status.success());
    assert!(String::from_utf8_lossy(&dup.stderr).contains("exists already"));

    let reset = Command::new(BIN)
        .args(["admin", "reset-password", "--email", "admin@trusthub.local"])
        .arg("--data-dir")
        .arg(&dir.0)
        .output()
        .expect("reset");
    assert!(
        reset.status.success(),
        "{}",
        String::from_utf8_lossy(&reset.stderr)
    );
    let stdout = String::from_utf8_lossy(&reset.stdout).to_string();
    let new_password = stdout
        .lines()
        .find_map(|l| l.strip_prefix("new password: "))
        .expect("printed")
        .to_owned();
    let old = client
        .get(format!("{}/me", hub.base))
        .header("cookie", &session)
        .send()
        .await
        .expect("me");
    assert_eq!(old.status(), 401, "sessions ended by the reset");
    assert_eq!(
        login(&client, &hub.base, "admin@trusthub.local", &new_password)
            .await
            .status(),
        200
    );

    // Logs are JSON lines when TRUSTHUB_LOG_FORMAT=json.
    let line = hub
        .stderr
        .recv_timeout(Duration::from_secs(5))
        .expect("a log line");
    let parsed: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
    assert!(parsed["level"].is_string() && parsed["timestamp"].is_string());

    // A second hub on the same SQLite database is refused with a clear message.
    let second = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&dir.0)
        .output()
        .expect("second");
    assert!(!second.status.success());
    assert!(String::from_utf8_lossy(&second.stderr).contains("another `trusthub serve`"));
}

/// Issue 3 crash test: `kill -9` during sustained ingest; after a restart every batch that
/// got a 202 is stored, and none twice.
async fn crash_during_ingest_loses_no_acknowledged_batch(db_url: Option<&str>) {
    let dir = TempDir::new();
    let mut envs = vec![
        ("TRUSTHUB_ADMIN_PASSWORD", "crash password"),
        ("TRUSTHUB_RATE_LIMITS", "off"),
        ("CLOUD_ENCRYPTION_KEY", KEY),
    ];
    if let Some(u) = db_url {
        envs.push(("TRUSTHUB_DATABASE_URL", u));
    }
    let mut hub = Hub::start(&dir.0, &envs);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let session =
        cookie(&login(&client, &hub.base, "admin@trusthub.local", "crash password").await);
    let agent = std::sync::Arc::new(register_agent(&client, &hub.base, &session, "crash").await);
    let base_ts = time::OffsetDateTime::now_utc();
    let make = move |i: u64| {
        let metrics: Vec<Value> = (0..10)
            .map(|j| json!({"name": "crash.test", "ts": (base_ts + time::Duration::milliseconds((i * 10 + j) as i64)).format(&time::format_description::well_known::Rfc3339).expect("fmt"), "value": i as f64}))
            .collect();
        (uuid::Uuid::new_v4(), metrics)
    };
    let acked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let counter = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut senders = Vec::new();
    for _ in 0..8 {
        let (client, base, agent, acked, stop, counter) = (
            client.clone(),
            hub.base.clone(),
            agent.clone(),
            acked.clone(),
            stop.clone(),
            counter.clone(),
        );
        senders.push(tokio::spawn(async move {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let i = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let (id, metrics) = make(i);
                if send_batch(&client, &base, &agent, id, &metrics)
                    .await
                    .is_some()
                {
                    acked.lock().expect("lock").push((id, metrics));
                }
            }
        }));
    }
    // Crash in the middle of sustained ingest: once enough batches were acknowledged (not
    // after a fixed time, which a loaded machine may not fill).
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while acked.lock().expect("lock").len() <= 25 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    hub.child.kill().expect("kill -9");
    let _ = hub.child.wait();
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for s in senders {
        let _ = s.await;
    }
    let acked: Vec<(uuid::Uuid, Vec<Value>)> = acked.lock().expect("lock").clone();
    assert!(
        acked.len() > 20,
        "sustained ingest before the crash: {}",
        acked.len()
    );
    drop(hub);

    let hub = Hub::start(&dir.0, &envs);
    let url = db_url
        .map(str::to_owned)
        .unwrap_or_else(|| format!("sqlite://{}", dir.0.join("trusthub.db").display()));
    let db = Db::connect(&url, &DbOptions::default()).await.expect("db");
    let count = |sql: &'static str| {
        let db = db.clone();
        async move {
            match &db {
                Db::Sqlite { read, .. } => sqlx::query_scalar::<_, i64>(sql)
                    .fetch_one(read)
                    .await
                    .expect("q"),
                Db::Postgres(p) => sqlx::query_scalar::<_, i64>(sql)
                    .fetch_one(p)
                    .await
                    .expect("q"),
            }
        }
    };
    let points = count(
        "SELECT CAST(COALESCE(SUM(json_array_length(points)), 0) AS BIGINT) FROM metric_points",
    )
    .await;
    let batches = count("SELECT COUNT(*) FROM ingest_batches").await;
    assert!(
        batches >= acked.len() as i64,
        "every acknowledged batch is stored ({batches} >= {})",
        acked.len()
    );
    assert_eq!(
        points,
        batches * 10,
        "each stored batch has all its samples, once"
    );
    // Every acknowledged batch, sent again, is recognised as stored: nothing twice.
    for (id, metrics) in &acked {
        let ans = send_batch(&client, &hub.base, &agent, *id, metrics)
            .await
            .expect("202");
        assert_eq!(
            ans["duplicate"], true,
            "batch {id} was stored before the crash"
        );
    }
    assert_eq!(
        count(
            "SELECT CAST(COALESCE(SUM(json_array_length(points)), 0) AS BIGINT) FROM metric_points"
        )
        .await,
        points
    );
    db.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_ingest_loses_no_acknowledged_batch_on_sqlite() {
    crash_during_ingest_loses_no_acknowledged_batch(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_ingest_loses_no_acknowledged_batch_on_postgres() {
    let Some((name, url)) = pg_database().await else {
        return;
    };
    crash_during_ingest_loses_no_acknowledged_batch(Some(&url)).await;
    drop_pg_database(&name).await;
}

/// A local webhook receiver: records `X-Service-Delivery` of every POST and answers with
/// the next status of its script (200 after that).
#[derive(Clone)]
struct Receiver {
    url: String,
    ids: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    script: std::sync::Arc<std::sync::Mutex<std::collections::VecDeque<u16>>>,
}

impl Receiver {
    async fn start(script: &[u16]) -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let r = Receiver {
            url: format!("http://{}/hook", listener.local_addr().expect("addr")),
            ids: Default::default(),
            script: std::sync::Arc::new(std::sync::Mutex::new(script.iter().copied().collect())),
        };
        let me = r.clone();
        let app = axum::Router::new().fallback(move |headers: axum::http::HeaderMap| {
            let me = me.clone();
            async move {
                let id = headers
                    .get("x-service-delivery")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned();
                me.ids.lock().expect("lock").push(id);
                let code = me.script.lock().expect("lock").pop_front().unwrap_or(200);
                axum::http::StatusCode::from_u16(code).expect("status")
            }
        });
        tokio::spawn(async move { axum::serve(listener, app).await });
        r
    }

    fn ids(&self) -> Vec<String> {
        self.ids.lock().expect("lock").clone()
    }

    async fn wait_for(&self, n: usize, secs: u64) -> Vec<String> {
        for _ in 0..secs * 20 {
            let ids = self.ids();
            if ids.len() >= n {
                return ids;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("{} of {n} deliveries after {secs} s", self.ids().len());
    }
}

async fn delivery_status(client: &reqwest::Client, base: &str, session: &str, hook: &str) -> Value {
    client
        .get(format!("{base}/webhooks/{hook}/deliveries"))
        .header("cookie", session)
        .send()
        .await
        .expect("get")
        .json::<Value>()
        .await
        .expect("json")[0]
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_delivery_survives_kill_9_between_attempts() {
    let dir = TempDir::new();
    let envs = [
        ("TRUSTHUB_ADMIN_PASSWORD", "hook password"),
        ("TRUSTHUB_RATE_LIMITS", "off"),
        ("TRUSTHUB_WEBHOOK_RETRY_SCHEDULE", "2s,2s,2s"),
    ];
    let receiver = Receiver::start(&[500]).await;
    let mut hub = Hub::start(&dir.0, &envs);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let session = admin_session(&client, &hub.base, "hook password").await;
    let hook = post_json(
        &client,
        format!("{}/webhooks", hub.base),
        &session,
        json!({"url": receiver.url}),
    )
    .await;
    let hook_id = hook["id"].as_str().expect("id").to_owned();
    let ping = post_json(
        &client,
        format!("{}/webhooks/{hook_id}/test", hub.base),
        &session,
        json!({}),
    )
    .await;
    let first = receiver.wait_for(1, 20).await;
    assert_eq!(first[0], ping["id"].as_str().expect("id"));
    // Once the failed first attempt is recorded, the hub dies without warning.
    for _ in 0..100 {
        if delivery_status(&client, &hub.base, &session, &hook_id).await["status"] == "retrying" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    hub.child.kill().expect("kill -9");
    hub.child.wait().expect("wait");
    let hub = Hub::start(&dir.0, &envs);
    let ids = receiver.wait_for(2, 30).await;
    assert_eq!(ids[1], ids[0], "the retry keeps the delivery id");
    let session = admin_session(&client, &hub.base, "hook password").await;
    let mut last = Value::Null;
    for _ in 0..100 {
        last = delivery_status(&client, &hub.base, &session, &hook_id).await;
        if last["status"] == "succeeded" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(last["status"], "succeeded");
    assert_eq!(last["attempts"], 2);
    assert_eq!(receiver.ids().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hubs_on_postgres_send_each_webhook_delivery_once() {
    let Some((name, url)) = pg_database().await else {
        return;
    };
    let (d1, d2) = (TempDir::new(), TempDir::new());
    let envs = [
        ("TRUSTHUB_ADMIN_PASSWORD", "pair password"),
        ("TRUSTHUB_RATE_LIMITS", "off"),
        ("CLOUD_ENCRYPTION_KEY", KEY),
        ("TRUSTHUB_DATABASE_URL", url.as_str()),
    ];
    let receiver = Receiver::start(&[]).await;
    let a = Hub::start(&d1.0, &envs);
    let b = Hub::start(&d2.0, &envs);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let session = admin_session(&client, &a.base, "pair password").await;
    let hook = post_json(
        &client,
        format!("{}/webhooks", a.base),
        &session,
        json!({"url": receiver.url}),
    )
    .await;
    let hook_id = hook["id"].as_str().expect("id").to_owned();
    let mut sent = Vec::new();
    for i in 0..30 {
        let base = if i % 2 == 0 { &a.base } else { &b.base };
        let d = post_json(
            &client,
            format!("{base}/webhooks/{hook_id}/test"),
            &session,
            json!({}),
        )
        .await;
        sent.push(d["id"].as_str().expect("id").to_owned());
    }
    receiver.wait_for(30, 30).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut got = receiver.ids();
    got.sort();
    sent.sort();
    assert_eq!(got, sent, "each delivery exactly once across both hubs");
    drop((a, b));
    drop_pg_database(&name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transparency_verify_checks_the_chain_and_signature_online_and_offline() {
    let dir = TempDir::new();
    let hub = Hub::start(
        &dir.0,
        &[
            ("TRUSTHUB_ADMIN_PASSWORD", "log password"),
            ("TRUSTHUB_RATE_LIMITS", "off"),
        ],
    );
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let session = admin_session(&client, &hub.base, "log password").await;
    let token = post_json(
        &client,
        format!("{}/api-tokens", hub.base),
        &session,
        json!({"name": "auditor", "scope": "read"}),
    )
    .await;
    let token = token["token"].as_str().expect("token").to_owned();
    // Three entries, appended as the hub appends them.
    let db = Db::connect(
        &format!("sqlite://{}", dir.0.join("trusthub.db").display()),
        &DbOptions::default(),
    )
    .await
    .expect("db");
    let mut c = db.conn().await.expect("conn");
    let owner =
        trusthub_identity::raw::users::find_by_email_any_tenant(&mut c, "admin@trusthub.local")
            .await
            .expect("q")
            .expect("owner");
    drop(c);
    let mut tx = db.begin().await.expect("tx");
    for i in 0..3 {
        trusthub_fleet::append_log(
            &mut tx,
            owner.tenant_id,
            "restart_app_result",
            &format!("app:{i}"),
            &json!({"exit_code": i, "note": "é ✓"}),
            time::OffsetDateTime::now_utc()
                .replace_nanosecond(0)
                .expect("t"),
        )
        .await
        .expect("append");
    }
    tx.commit().await.expect("commit");
    // The schema refuses to change an entry.
    let mut tx = db.begin().await.expect("tx");
    let changed = match &mut tx {
        trusthub_store::Tx::Sqlite(t) => {
            sqlx::query("UPDATE transparency_log SET payload = '{}' WHERE seq = 2")
                .execute(&mut **t)
                .await
        }
        trusthub_store::Tx::Postgres(_) => unreachable!("sqlite"),
    };
    assert!(changed.is_err(), "append-only");
    drop(tx);
    db.close().await;

    let verify = |args: &[&str]| {
        let out = Command::new(BIN)
            .arg("transparency")
            .arg("verify")
            .args(args)
            .output()
            .expect("run");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };
    let saved = dir.0.join("saved");
    let base = hub.base.trim_end_matches("/api/v1").to_owned();
    let (code, text) = verify(&[
        "--hub",
        &base,
        "--token",
        &token,
        "--save",
        saved.to_str().expect("p"),
    ]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("ok: 3 entries"), "{text}");
    let head: Value =
        serde_json::from_slice(&std::fs::read(saved.join("head.json")).expect("head"))
            .expect("json");
    let key = head["public_key_hex"].as_str().expect("key").to_owned();
    let (log, headf) = (saved.join("log.json"), saved.join("head.json"));
    let offline = [
        "--log",
        log.to_str().expect("p"),
        "--head",
        headf.to_str().expect("p"),
    ];
    let (code, text) = verify(&[&offline[..], &["--expect-key", &key]].concat());
    assert_eq!(code, Some(0), "{text}");
    let (code, text) = verify(&[&offline[..], &["--expect-key", &"ab".repeat(32)]].concat());
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("not by the expected key"), "{text}");
    // Tampering with one entry is caught, and named.
    let mut entries: Value =
        serde_json::from_slice(&std::fs::read(&log).expect("log")).expect("json");
    entries[1]["payload"]["exit_code"] = json!(0);
    std::fs::write(&log, entries.to_string()).expect("write");
    let (code, text) = verify(&offline);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("entry 2"), "{text}");
    // A forged head signature is caught.
    entries[1]["payload"]["exit_code"] = json!(1);
    std::fs::write(&log, entries.to_string()).expect("write");
    assert_eq!(verify(&offline).0, Some(0));
    let mut forged = head.clone();
    forged["signature"] = json!(data_encoding_free_b64(&[0u8; 64]));
    std::fs::write(&headf, forged.to_string()).expect("write");
    let (code, text) = verify(&offline);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("signature"), "{text}");
    drop(hub);
}

/// Base64 without pulling a crate into the test.
fn data_encoding_free_b64(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Two hub processes on one PostgreSQL database and the real agent (in this process)
/// connected to hub A; an admin session with TOTP.
struct TwoHubs {
    a: Hub,
    b: Hub,
    client: reqwest::Client,
    session: String,
    secret: Vec<u8>,
    /// TOTP steps spent so far.
    spent: Vec<i64>,
    agent_id: String,
    state: TempDir,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    agent: Option<tokio::task::JoinHandle<Result<(), String>>>,
    name: String,
    _dirs: (TempDir, TempDir),
}

impl TwoHubs {
    async fn start(agent_args: &[&str]) -> Option<TwoHubs> {
        let (name, url) = pg_database().await?;
        let (d1, d2, state) = (TempDir::new(), TempDir::new(), TempDir::new());
        let envs = [
            ("TRUSTHUB_ADMIN_PASSWORD", "route password"),
            ("TRUSTHUB_RATE_LIMITS", "off"),
            ("CLOUD_ENCRYPTION_KEY", KEY),
            ("TRUSTHUB_DATABASE_URL", url.as_str()),
        ];
        let a = Hub::start(&d1.0, &envs);
        let b = Hub::start(&d2.0, &envs);
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::new();
        let session = admin_session(&client, &a.base, "route password").await;
        let setup = post_json(
            &client,
            format!("{}/auth/totp/setup", a.base),
            &session,
            json!({}),
        )
        .await;
        let secret =
            trusthub_core::totp::secret_from_base32(setup["secret_base32"].as_str().expect("b32"))
                .expect("s");
        let t0 = time::OffsetDateTime::now_utc().unix_timestamp();
        post_json(
            &client,
            format!("{}/auth/totp/verify", a.base),
            &session,
            json!({"code": trusthub_core::totp::code_at(&secret, t0)}),
        )
        .await;
        let enroll = post_json(
            &client,
            format!("{}/agents/enrollment-tokens", a.base),
            &session,
            json!({}),
        )
        .await;
        #[derive(clap::Parser)]
        struct AgentCli {
            #[command(flatten)]
            o: trusthub_agent::Options,
        }
        let hub = a.base.trim_end_matches("/api/v1").to_owned();
        let token = enroll["token"].as_str().expect("t").to_owned();
        let dir = state.0.to_str().expect("p").to_owned();
        let mut args = vec![
            "agent",
            "--hub",
            &hub,
            "--enroll",
            &token,
            "--state-dir",
            &dir,
            "--interval-secs",
            "1",
        ];
        args.extend_from_slice(agent_args);
        let opts = <AgentCli as clap::Parser>::parse_from(args).o;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let agent = tokio::spawn(trusthub_agent::run(opts, async move {
            let _ = stopped.await;
        }));
        let mut agent_id = String::new();
        for _ in 0..100 {
            let list: Value = client
                .get(format!("{}/agents", b.base))
                .header("cookie", &session)
                .send()
                .await
                .expect("get")
                .json()
                .await
                .expect("json");
            if list[0]["connected"] == true {
                agent_id = list[0]["id"].as_str().expect("id").to_owned();
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert!(!agent_id.is_empty(), "the agent connected");
        Some(TwoHubs {
            a,
            b,
            client,
            session,
            secret,
            spent: vec![t0.div_euclid(30)],
            agent_id,
            state,
            stop: Some(stop),
            agent: Some(agent),
            name,
            _dirs: (d1, d2),
        })
    }

    /// A TOTP code of a step not spent yet (the next step first), not in the last seconds of
    /// the current step.
    async fn code(&mut self) -> String {
        let mut now = time::OffsetDateTime::now_utc().unix_timestamp();
        while now.rem_euclid(30) >= 26 {
            tokio::time::sleep(Duration::from_millis(500)).await;
            now = time::OffsetDateTime::now_utc().unix_timestamp();
        }
        let t = [now + 30, now, now - 30]
            .into_iter()
            .find(|t| !self.spent.contains(&t.div_euclid(30)))
            .expect("a spare step");
        self.spent.push(t.div_euclid(30));
        trusthub_core::totp::code_at(&self.secret, t)
    }

    async fn get(&self, base: &str, path: &str) -> Value {
        self.client
            .get(format!("{base}{path}"))
            .header("cookie", &self.session)
            .send()
            .await
            .expect("get")
            .json()
            .await
            .expect("json")
    }

    /// Starts a console on the hub at `base`; its session id.
    async fn console_start(&mut self, base: &str, reason: &str) -> String {
        let code = self.code().await;
        let started = self
            .client
            .post(format!("{base}/agents/{}/console/start", self.agent_id))
            .header("cookie", &self.session)
            .header("x-totp-code", code)
            .json(&json!({"reason": reason, "cols": 100, "rows": 30}))
            .send()
            .await
            .expect("start");
        assert_eq!(started.status(), 201);
        started.json::<Value>().await.expect("json")["session_id"]
            .as_str()
            .expect("id")
            .to_owned()
    }

    /// The newest console session once its recording is closed (hashed), as `base` lists it.
    async fn closed_session(&self, base: &str) -> Value {
        let mut row = Value::Null;
        for _ in 0..50 {
            let path = format!("/console/sessions?agent_id={}", self.agent_id);
            row = self.get(base, &path).await[0].clone();
            if row["recording_sha256"].is_string() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        row
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(agent) = self.agent.take() {
            let _ = agent.await;
        }
        let name = self.name.clone();
        drop(self);
        drop_pg_database(&name).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_entered_on_one_hub_reaches_the_agent_connected_to_another_once() {
    let Some(mut h) = TwoHubs::start(&["--allow-actions", "restart_app"]).await else {
        return;
    };
    let marker = h.state.0.join("restarted.txt");
    let script = h.state.0.join("restart.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\necho once >> {}\n", marker.display()),
    )
    .expect("script");
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let app = post_json(&h.client, format!("{}/apps", h.b.base), &h.session, json!({"agent_id": h.agent_id, "name": "w",
        "app_type": "process", "identifier": "/opt/w/bin/w", "restart_command": script.to_str().expect("p")})).await;

    // Entered on hub B.
    let code = h.code().await;
    let r = h
        .client
        .post(format!(
            "{}/apps/{}/restart",
            h.b.base,
            app["id"].as_str().expect("id")
        ))
        .header("cookie", &h.session)
        .header("x-totp-code", code)
        .json(&json!({"reason": "routing test"}))
        .send()
        .await
        .expect("restart");
    assert_eq!(r.status(), 202);
    let jti = r.json::<Value>().await.expect("json")["jti"]
        .as_str()
        .expect("jti")
        .to_owned();
    let mut status = Value::Null;
    for _ in 0..100 {
        let v = h.get(&h.b.base, &format!("/actions/{jti}")).await;
        if v["status"] != "dispatched" {
            status = v["status"].clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status, "succeeded");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        std::fs::read_to_string(&marker).expect("marker"),
        "once\n",
        "executed exactly once"
    );
    h.stop().await;
}

/// A console socket opened on `base` (as the hub's own page would: its cookie and Origin).
async fn console_socket(
    base: &str,
    cookie: &str,
    session_id: &str,
) -> tokio_tungstenite::WebSocketStream<tokio::net::TcpStream> {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let root = base.trim_end_matches("/api/v1");
    let url = format!(
        "{}/api/v1/ws/console/{session_id}",
        root.replacen("http://", "ws://", 1)
    );
    let mut req = url.into_client_request().expect("request");
    req.headers_mut()
        .insert("cookie", cookie.parse().expect("cookie"));
    req.headers_mut()
        .insert("origin", root.parse().expect("origin"));
    let tcp = tokio::net::TcpStream::connect(root.trim_start_matches("http://"))
        .await
        .expect("tcp");
    tokio_tungstenite::client_async(req, tcp)
        .await
        .expect("the console socket opens")
        .0
}

/// Reads a console socket until `want` shows in the output or the session exits; answers
/// the output and the exit frame's code (`None` while it has not exited).
async fn console_read(
    ws: &mut tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>,
    want: &str,
) -> (String, Option<Value>) {
    use futures_util::StreamExt;
    let mut seen = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while want.is_empty() || !seen.contains(want) {
        let msg = tokio::time::timeout_at(deadline, ws.next())
            .await
            .unwrap_or_else(|_| panic!("`{want}` never came; the terminal shows: {seen}"));
        let Some(Ok(tokio_tungstenite::tungstenite::Message::Text(t))) = msg else {
            break;
        };
        let v: Value = serde_json::from_str(t.as_str()).expect("json frame");
        match v["type"].as_str() {
            Some("output") => seen.push_str(v["data"].as_str().unwrap_or_default()),
            Some("exit") => return (seen, Some(v["code"].clone())),
            _ => {}
        }
    }
    (seen, None)
}

async fn console_send(
    ws: &mut tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>,
    v: Value,
) {
    use futures_util::SinkExt;
    ws.send(tokio_tungstenite::tungstenite::Message::Text(
        v.to_string().into(),
    ))
    .await
    .expect("send");
}

/// A console whose start, host socket and browser socket are on different hub processes
/// (CONTRACT 11, 22): the owner records, output larger than one routed message arrives
/// whole, the exit code comes back; a terminate entered on the other hub ends the owner's
/// session, tells the browser and closes the recording.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_console_works_when_its_start_agent_and_browser_are_on_different_hubs() {
    let Some(mut h) = TwoHubs::start(&["--allow-console"]).await else {
        return;
    };
    // Started on B (the owner); the agent is on A; the browser on A.
    let id = h.console_start(&h.b.base.clone(), "routing check").await;
    let mut ws = console_socket(&h.a.base, &h.session, &id).await;
    console_send(&mut ws, json!({"type": "resize", "cols": 120, "rows": 40})).await;
    // 30,000 characters of output in one go: more than one routed message holds.
    console_send(
        &mut ws,
        json!({"type": "input", "data": "stty size; head -c 30000 /dev/zero | tr '\\0' x; echo; echo routed-$((6*7))\n"}),
    )
    .await;
    let (seen, exit) = console_read(&mut ws, "routed-42").await;
    assert!(exit.is_none(), "{seen}");
    assert!(
        seen.contains("40 120"),
        "the resize reached the PTY: {seen}"
    );
    assert!(seen.contains(&"x".repeat(30000)), "all the output came");
    console_send(&mut ws, json!({"type": "input", "data": "exit 3\n"})).await;
    let (_, exit) = console_read(&mut ws, "").await;
    assert_eq!(exit, Some(json!(3)));
    let row = h.closed_session(&h.a.base).await;
    assert_eq!(row["status"], "ended", "{row}");
    assert_eq!(row["exit_code"], 3, "{row}");
    // The owner wrote the recording: every output event, the resize.
    let cast = h
        .client
        .get(format!("{}/console/sessions/{id}/recording", h.b.base))
        .header("cookie", &h.session)
        .send()
        .await
        .expect("cast")
        .text()
        .await
        .expect("text");
    assert_eq!(
        cast.len() as i64,
        row["recording_bytes"].as_i64().expect("n")
    );
    let mut output = String::new();
    for l in cast.lines().skip(1) {
        let e: Value = serde_json::from_str(l).expect("event");
        if e[1] == "o" {
            output.push_str(e[2].as_str().expect("data"));
        }
    }
    assert!(output.contains(&"x".repeat(30000)) && output.contains("routed-42"));
    assert!(cast.contains(r#""r","120x40""#), "{}", &cast[..200]);

    // Started on A (the owner, with the agent); the browser on B; terminated on B.
    let id = h.console_start(&h.a.base.clone(), "terminate across").await;
    let mut ws = console_socket(&h.b.base, &h.session, &id).await;
    console_send(
        &mut ws,
        json!({"type": "input", "data": "echo across-$((2+3))\n"}),
    )
    .await;
    console_read(&mut ws, "across-5").await;
    let r = h
        .client
        .delete(format!("{}/console/sessions/{id}", h.b.base))
        .header("cookie", &h.session)
        .send()
        .await
        .expect("terminate");
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.json::<Value>().await.expect("json")["status"],
        "terminated"
    );
    let (_, exit) = console_read(&mut ws, "").await;
    assert!(exit.is_some(), "the browser is told the session ended");
    let row = h.closed_session(&h.b.base).await;
    assert_eq!(row["end_reason"], "admin", "{row}");
    assert!(
        row["recording_sha256"].is_string(),
        "the owner closed the recording: {row}"
    );
    let audit = h
        .get(
            &h.a.base,
            "/audit-log?event_type=console_session_terminated_by_admin",
        )
        .await;
    assert!(audit.to_string().contains(&id), "one audit row: {audit}");
    h.stop().await;
}

/// First start as a new user meets it: a busy port creates nothing (the generated password
/// would be lost), every start says where the password is until someone logged in, and the
/// admin CLI from the wrong directory or against a dead hub says what to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_start_binds_first_and_points_at_the_password_until_the_first_login() {
    let tmp = TempDir::new();
    let dir = TempDir(tmp.0.join("data"));
    let busy = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = busy.local_addr().expect("addr").port().to_string();
    let out = Command::new(BIN)
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--data-dir",
        ])
        .arg(&dir.0)
        .env_remove("TRUSTHUB_ADMIN_PASSWORD")
        .env_remove("TRUSTHUB_DATABASE_URL")
        .env_remove("CLOUD_ENCRYPTION_KEY")
        .output()
        .expect("serve");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("cannot listen on") && err.contains(&port),
        "{err}"
    );
    assert!(
        !dir.0.exists(),
        "not even the data dir is made on a busy port"
    );
    drop(busy);

    // The real first start creates the owner and prints the password, and says what the
    // seconds of making the CA are spent on.
    let mut hub = Hub::start(&dir.0, &[]);
    assert!(hub.created_owner(), "{:?}", hub.stdout);
    std::thread::sleep(Duration::from_millis(200));
    let logged: Vec<String> = hub.stderr.try_iter().collect();
    assert!(
        logged.iter().any(|l| l.contains("making the hub's CA")),
        "{logged:?}"
    );
    let password = initial_password(&dir.0);
    assert!(hub.stdout.iter().any(|l| l.contains(&password)));
    hub.terminate();
    // The next start does not create it again but says where the password is…
    let mut hub = Hub::start(&dir.0, &[]);
    assert!(!hub.created_owner());
    let file = dir.0.join("initial-admin.txt");
    assert!(
        hub.stdout
            .iter()
            .any(|l| l.contains("nobody has logged in yet") && l.contains(&*file.to_string_lossy())),
        "{:?}",
        hub.stdout
    );
    // …until the owner logged in.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let r = login(&client, &hub.base, "admin@trusthub.local", &password).await;
    assert_eq!(r.status(), 200);
    hub.terminate();
    let hub = Hub::start(&dir.0, &[]);
    assert!(
        !hub.stdout
            .iter()
            .any(|l| l.contains("nobody has logged in yet")),
        "{:?}",
        hub.stdout
    );
    // …and the file with the generated password is gone once it has served.
    assert!(!file.exists(), "{} is still there", file.display());

    // The admin CLI from a directory without the hub's data: the path and the flag to use.
    let elsewhere = TempDir::new();
    let out = Command::new(BIN)
        .args(["admin", "reset-password", "--email", "admin@trusthub.local"])
        .current_dir(&elsewhere.0)
        .env_remove("TRUSTHUB_DATA_DIR")
        .env_remove("TRUSTHUB_DATABASE_URL")
        .output()
        .expect("admin");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("no hub database at") && err.contains("--data-dir"),
        "{err}"
    );
    assert!(
        !elsewhere.0.join("data").exists(),
        "no database created elsewhere"
    );

    // A CLI talking to a hub that is not there says so; a refused request shows the detail.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let out = Command::new(BIN)
        .args([
            "transparency",
            "verify",
            "--hub",
            &format!("http://127.0.0.1:{dead}"),
        ])
        .args(["--token", "tht_nothing"])
        .output()
        .expect("verify");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("connection refused"), "{err}");
    let out = Command::new(BIN)
        .args([
            "transparency",
            "verify",
            "--hub",
            hub.base.trim_end_matches("/api/v1"),
        ])
        .args(["--token", "tht_nothing"])
        .output()
        .expect("verify");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("401") && err.contains("API token"), "{err}");
}

/// `trusthub cve import` next to a running SQLite hub: a folder in the OSV bucket's layout,
/// then a tar.gz made by `tar` with a newer version of one record; the hub's API sees both
/// (hub-wide data reaches every tenant). A path that is not there is a clear error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cve_import_loads_a_folder_and_a_tar_gz_next_to_a_running_hub() {
    let dir = TempDir::new();
    let hub = Hub::start(&dir.0, &[("TRUSTHUB_ADMIN_PASSWORD", "a fine password")]);
    let osv = dir.0.join("osv");
    let record = |id: &str, modified: &str, eco: &str, name: &str| {
        json!({"id": id, "modified": modified, "affected": [{"package": {"ecosystem": eco, "name": name},
            "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": "1.0"}]}]}]})
        .to_string()
    };
    for (path, body) in [
        (
            "npm/GHSA-1.json",
            record("GHSA-1", "2024-01-01T00:00:00Z", "npm", "a"),
        ),
        (
            "PyPI/PYSEC-2.json",
            record("PYSEC-2", "2024-02-01T00:00:00Z", "PyPI", "b"),
        ),
        (
            "Debian:12/DSA-3.json",
            record("DSA-3", "2024-03-01T00:00:00Z", "Debian:12", "openssl"),
        ),
    ] {
        let p = osv.join(path);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("dir");
        std::fs::write(p, body).expect("write");
    }
    let import = |path: &Path| {
        let out = Command::new(BIN)
            .args(["cve", "import"])
            .arg(path)
            .arg("--data-dir")
            .arg(&dir.0)
            .output()
            .expect("cve import");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };
    let (ok, text) = import(&osv);
    assert!(
        ok && text.contains("3 files") && text.contains("3 new"),
        "{text}"
    );
    // A tar.gz by tar itself, with a newer GHSA-1.
    let newer = dir.0.join("newer");
    std::fs::create_dir_all(newer.join("npm")).expect("dir");
    std::fs::write(
        newer.join("npm/GHSA-1.json"),
        record("GHSA-1", "2024-06-01T00:00:00Z", "npm", "a"),
    )
    .expect("write");
    let tgz = dir.0.join("newer.tar.gz");
    let status = Command::new("tar")
        .arg("czf")
        .arg(&tgz)
        .arg("-C")
        .arg(&newer)
        .arg("npm")
        .status()
        .expect("tar");
    assert!(status.success());
    let (ok, text) = import(&tgz);
    assert!(
        ok && text.contains("1 files") && text.contains("1 updated"),
        "{text}"
    );
    let (ok, text) = import(&dir.0.join("nothing-here"));
    assert!(!ok && text.contains("nothing-here"), "{text}");

    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let session = cookie(
        &login(
            &client,
            &hub.base,
            "admin@trusthub.local",
            "a fine password",
        )
        .await,
    );
    let sources: Value = client
        .get(format!("{}/cve/sources", hub.base))
        .header("cookie", &session)
        .send()
        .await
        .expect("sources")
        .json()
        .await
        .expect("json");
    let ecosystems: Vec<&str> = sources
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|s| s["ecosystem"].as_str())
        .collect();
    assert_eq!(ecosystems, ["Debian:12", "PyPI", "npm"], "{sources}");
    assert_eq!(sources[2]["newest_modified"], "2024-06-01T00:00:00Z");
}

/// The documented one-liner (CONTRACT 27) against a hub on loopback: the script downloads
/// the agent the hub serves (here the `trusthub` binary itself, which runs as the agent under
/// the name `trusthub-agent`), checks its SHA-256, installs it, enrolls, and the installed
/// agent then reports this host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_install_one_liner_installs_and_enrolls_a_real_agent() {
    let dir = TempDir::new();
    let data = dir.0.join("data");
    let mut hub = Hub::start(&data, &[("TRUSTHUB_AGENT_BINARY", BIN)]);
    let hub_url = hub.base.trim_end_matches("/api/v1").to_owned();
    let client = reqwest::Client::new();
    let session = admin_session(&client, &hub.base, &initial_password(&data)).await;

    // The script and the checksum are public; the checksum is the served binary's.
    let script = client
        .get(format!("{hub_url}/install.sh"))
        .send()
        .await
        .expect("script");
    assert_eq!(script.status(), 200);
    let script = script.text().await.expect("text");
    assert!(script.starts_with("#!/bin/sh") && script.contains(&format!("hub='{hub_url}'")));
    let arch = std::env::consts::ARCH;
    let sum = client
        .get(format!(
            "{hub_url}/downloads/trusthub-agent-linux-{arch}.sha256"
        ))
        .send()
        .await
        .expect("sum")
        .text()
        .await
        .expect("text");
    let built = Command::new("sha256sum")
        .arg(BIN)
        .output()
        .expect("sha256sum");
    let built = String::from_utf8_lossy(&built.stdout);
    assert_eq!(sum.split(' ').next(), built.split(' ').next(), "{sum}");
    let other = client
        .get(format!("{hub_url}/downloads/trusthub-agent-linux-sparc64"))
        .send()
        .await
        .expect("other");
    assert_eq!(other.status(), 404);

    let token = post_json(
        &client,
        format!("{}/agents/enrollment-tokens", hub.base),
        &session,
        json!({"tags": ["env:install"]}),
    )
    .await["token"]
        .as_str()
        .expect("token")
        .to_owned();
    let bin_dir = dir.0.join("bin");
    let state_dir = dir.0.join("agent");
    // Without a token the script says what it needs and exits 2.
    let usage = Command::new("sh")
        .arg("-c")
        .arg(format!("curl -fsSL {hub_url}/install.sh | sh -s --"))
        .output()
        .expect("sh");
    assert_eq!(usage.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&usage.stderr).contains("--enroll <token> is required"));

    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "curl -fsSL {hub_url}/install.sh | sh -s -- --enroll {token} --bin-dir {} --state-dir {} --no-service",
            bin_dir.display(),
            state_dir.display()
        ))
        .output()
        .expect("sh");
    let err = String::from_utf8_lossy(&out.stderr);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{err}\n{said}");
    assert!(
        err.contains("installed") && said.contains("registered with"),
        "{err}\n{said}"
    );
    let installed = bin_dir.join("trusthub-agent");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&installed)
            .expect("installed")
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o755);

    // The installed binary is the agent: it knows its registration…
    let status = Command::new(&installed)
        .args(["status", "--state-dir"])
        .arg(&state_dir)
        .output()
        .expect("status");
    let status_text = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.status.success()
            && status_text.contains(&hub_url)
            && status_text.contains("agent id:"),
        "{status_text}"
    );
    // …and, run, it reports this host.
    let mut agent = Command::new(&installed)
        .args(["run", "--state-dir"])
        .arg(&state_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("run the agent");
    let mut seen = Value::Null;
    for _ in 0..120 {
        seen = client
            .get(format!("{}/agents", hub.base))
            .header("cookie", &session)
            .send()
            .await
            .expect("agents")
            .json()
            .await
            .expect("json");
        if seen[0]["last_seen_at"].is_string() && seen[0]["status"] == "online" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let _ = agent.kill();
    let _ = agent.wait();
    assert_eq!(seen.as_array().map(Vec::len), Some(1), "{seen}");
    assert_eq!(seen[0]["status"], "online", "{seen}");
    assert_eq!(seen[0]["tags"], json!(["env:install"]), "{seen}");
    hub.terminate();
}

#[path = "../../remotewrite/tests/rig/mod.rs"]
mod rw_rig;

/// README "Scaling out", as written there: two hubs on one PostgreSQL database forwarding to
/// VictoriaMetrics and reading ranges back from it. Batches go to both hubs; the hub that
/// is sending to VictoriaMetrics is killed (-9) mid-stream; the other takes the receiver's
/// lease over and every acknowledged sample arrives. Ranges read through the survivor come
/// from VictoriaMetrics (the hub's own points deleted); the CLI shows the receiver.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scaling_out_two_hubs_on_postgres_forward_to_victoria_metrics_and_read_from_it() {
    let Some((name, url)) = pg_database().await else {
        return;
    };
    let vm = rw_rig::victoria_metrics().await;
    let (dir_a, dir_b) = (TempDir::new(), TempDir::new());
    let (write, query) = (vm.write_url(), vm.base.clone());
    let envs = [
        ("TRUSTHUB_DATABASE_URL", url.as_str()),
        ("CLOUD_ENCRYPTION_KEY", KEY),
        ("TRUSTHUB_ADMIN_PASSWORD", "scale password"),
        ("TRUSTHUB_RATE_LIMITS", "off"),
        ("TRUSTHUB_REMOTE_WRITE_URL", write.as_str()),
        ("TRUSTHUB_METRICS_QUERY_URL", query.as_str()),
        ("TRUSTHUB_METRICS_RAW_RETENTION_HOURS", "2"),
    ];
    let mut hubs = vec![Hub::start(&dir_a.0, &envs), Hub::start(&dir_b.0, &envs)];
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let session = admin_session(&client, &hubs[0].base, "scale password").await;
    let agent =
        std::sync::Arc::new(register_agent(&client, &hubs[0].base, &session, "scale").await);
    // An agent's shape: many series, one sample each, a new timestamp per batch.
    let t0 = time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .expect("ns")
        - time::Duration::minutes(30);
    let make = move |i: i64| -> Vec<Value> {
        let at = (t0 + time::Duration::milliseconds(i * 100))
            .format(&time::format_description::well_known::Rfc3339)
            .expect("fmt");
        (0..20)
            .map(|j| json!({"name": "scale.test", "ts": at, "value": (i * 100 + j) as f64, "labels": {"j": j.to_string()}}))
            .collect()
    };
    let bases: Vec<String> = hubs.iter().map(|h| h.base.clone()).collect();
    let acked = std::sync::Arc::new(std::sync::Mutex::new(Vec::<i64>::new()));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let counter = std::sync::Arc::new(std::sync::atomic::AtomicI64::new(0));
    let mut senders = Vec::new();
    for _ in 0..4 {
        let (client, bases, agent, acked, stop, counter) = (
            client.clone(),
            bases.clone(),
            agent.clone(),
            acked.clone(),
            stop.clone(),
            counter.clone(),
        );
        senders.push(tokio::spawn(async move {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let i = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let batch = make(i);
                // Each batch to one hub, the other when that one is gone.
                for k in 0..2 {
                    let base = &bases[(i as usize + k) % 2];
                    if send_batch(&client, base, &agent, uuid::Uuid::new_v4(), &batch)
                        .await
                        .is_some()
                    {
                        acked.lock().expect("lock").push(i);
                        break;
                    }
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }));
    }
    let status = |base: String| {
        let (client, session) = (client.clone(), session.clone());
        async move {
            client
                .get(format!("{base}/remote-write"))
                .header("cookie", session)
                .send()
                .await
                .ok()?
                .json::<Value>()
                .await
                .ok()
        }
    };
    // Mid-stream: the hub that sends is killed.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let sender = loop {
        let mut found = None;
        for (k, b) in bases.iter().enumerate() {
            let s = status(b.clone()).await;
            if s.as_ref().is_some_and(|s| {
                s["receivers"][0]["sending"] == true
                    && s["receivers"][0]["samples_sent"].as_u64().unwrap_or(0) > 0
            }) {
                found = Some(k);
            }
        }
        if let Some(k) = found
            && acked.lock().expect("lock").len() > 30
        {
            break k;
        }
        assert!(std::time::Instant::now() < deadline, "no hub forwards");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    hubs[sender].child.kill().expect("kill -9");
    let _ = hubs[sender].child.wait();
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for s in senders {
        let _ = s.await;
    }
    let mut acked: Vec<i64> = acked.lock().expect("lock").clone();
    acked.sort_unstable();
    let survivor = &bases[1 - sender];
    // Every acknowledged sample arrives (the survivor takes the lease over within 15 s).
    let selector = format!("{{agent_id=\"{}\"}}", agent.id);
    let rows = vm.wait_for_samples(&selector, acked.len() * 20, 120).await;
    let mut points: Vec<(String, i64)> = rows
        .iter()
        .flat_map(|r| {
            let j = r["metric"]["j"].as_str().unwrap_or_default().to_owned();
            r["timestamps"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .map(move |t| (j.clone(), t.as_i64().unwrap_or_default()))
        })
        .collect();
    points.sort();
    points.dedup();
    for i in &acked {
        let t = (t0 + time::Duration::milliseconds(i * 100)).unix_timestamp_nanos() / 1_000_000;
        for j in [0, 19] {
            assert!(
                points.binary_search(&(j.to_string(), t as i64)).is_ok(),
                "batch {i}, series {j} arrived"
            );
        }
    }
    assert!(
        points.len() >= acked.len() * 20,
        "{} < {}",
        points.len(),
        acked.len() * 20
    );
    let s = status(survivor.clone()).await.expect("status");
    assert_eq!(s["receivers"][0]["sending"], true, "{s}");

    // Ranges come from VictoriaMetrics: the hub's own points are gone.
    let db = Db::connect(&url, &DbOptions::default()).await.expect("db");
    let Db::Postgres(pool) = &db else { panic!() };
    sqlx::query("DELETE FROM metric_points")
        .execute(pool)
        .await
        .expect("delete");
    db.close().await;
    let from = t0
        .format(&time::format_description::well_known::Rfc3339)
        .expect("fmt");
    let to = (t0 + time::Duration::minutes(10))
        .format(&time::format_description::well_known::Rfc3339)
        .expect("fmt");
    let ranges: Value = client
        .get(format!(
            "{survivor}/agents/{}/metrics?name=scale.test&from={}&to={}",
            agent.id,
            rw_rig::enc(&from),
            rw_rig::enc(&to)
        ))
        .header("cookie", &session)
        .send()
        .await
        .expect("metrics")
        .json()
        .await
        .expect("json");
    let series = ranges["series"].as_array().expect("series");
    assert_eq!(series.len(), 20, "{ranges}");
    let total: usize = series
        .iter()
        .map(|s| s["points"].as_array().map_or(0, Vec::len))
        .sum();
    assert_eq!(total, points.len(), "every sample, read back once");

    // The operator CLI shows the receiver (an API token, TRUSTHUB_URL/TRUSTHUB_TOKEN).
    let token = post_json(
        &client,
        format!("{survivor}/api-tokens"),
        &session,
        json!({"name": "ops", "scope": "write"}),
    )
    .await;
    let out = Command::new(BIN)
        .args(["remote-write", "status", "-o", "json"])
        .env("TRUSTHUB_URL", survivor.trim_end_matches("/api/v1"))
        .env("TRUSTHUB_TOKEN", token["token"].as_str().expect("token"))
        .env("XDG_CONFIG_HOME", dir_a.0.join("config"))
        .output()
        .expect("cli");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cli: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(cli["receivers"][0]["url"], write.as_str());
    assert_eq!(cli["receivers"][0]["lag_seconds"], 0.0);
    drop(hubs);
    drop_pg_database(&name).await;
}
