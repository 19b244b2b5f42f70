//! Test harness: the real hub on a real port, on a fresh SQLite file or a fresh PostgreSQL
//! database per test, plus a local SMTP sink that speaks real SMTP.

use reqwest::{Method, RequestBuilder, Response, StatusCode};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use trusthub_hub::{AppState, Server, Settings};
use trusthub_store::{Db, DbOptions};
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

pub const OWNER_EMAIL: &str = "owner@example.com";
pub const OWNER_PASSWORD: &str = "correct horse battery";
pub const TEST_KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

/// Which engine a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// The server-level PostgreSQL URL tests create their databases from.
pub fn pg_admin_url() -> String {
    std::env::var("TRUSTHUB_TEST_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

fn pg_url_for(db: &str) -> String {
    let admin = pg_admin_url();
    let base = admin.rsplit_once('/').map(|(b, _)| b).unwrap_or(&admin);
    format!("{base}/{db}")
}

/// Whether the PostgreSQL half runs: mandatory in CI (`CI` set), skipped with a notice
/// elsewhere when no server answers.
pub async fn require_postgres() -> bool {
    let ok = tokio::time::timeout(
        Duration::from_secs(5),
        Db::connect(&pg_admin_url(), &DbOptions::default()),
    )
    .await
    .is_ok_and(|r| r.is_ok());
    if ok {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!(
            "PostgreSQL at {} is required in CI but does not answer",
            pg_admin_url()
        );
    }
    eprintln!(
        "NOTICE: PostgreSQL at {} does not answer; skipping the PostgreSQL half of this test",
        pg_admin_url()
    );
    false
}

/// Creates an empty PostgreSQL database and returns its name.
pub async fn create_pg_database() -> String {
    let name = format!("th_test_{}", Uuid::new_v4().simple());
    let admin = Db::connect(&pg_admin_url(), &DbOptions::default())
        .await
        .expect("connect to PostgreSQL");
    if let Db::Postgres(pool) = &admin {
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(pool)
            .await
            .expect("create database");
    }
    admin.close().await;
    name
}

/// Drops a test database, from any context (used by `Drop`).
pub fn drop_pg_database(name: String) {
    let _ = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            if let Ok(Db::Postgres(pool)) =
                Db::connect(&pg_admin_url(), &DbOptions::default()).await
            {
                let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
                    "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
                )))
                .execute(&pool)
                .await;
                pool.close().await;
            }
        });
    })
    .join();
}

/// A fresh, private temporary directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new() -> TempDir {
        let p = std::env::temp_dir().join(format!("trusthub-test-{}", Uuid::new_v4().simple()));
        std::fs::create_dir_all(&p).expect("temp dir");
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// An HTTP client. When the workspace is built together, the agent's `rustls-no-provider`
/// feature of reqwest is on for everyone, so the process needs a rustls provider first.
pub fn http_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

/// How a request authenticates.
#[derive(Debug, Clone)]
pub enum Auth {
    None,
    Cookie(String),
    Bearer(String),
}

/// A running hub with a database handle for assertions.
pub struct TestApp {
    pub base: String,
    pub client: reqwest::Client,
    pub db: Db,
    pub state: AppState,
    pub owner: Auth,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<()>>,
    settings: Settings,
    pg_db: Option<String>,
    _dir: TempDir,
}

impl TestApp {
    pub async fn spawn(backend: Backend) -> TestApp {
        TestApp::spawn_full(backend, |_| {}, OpenApiRouter::new()).await
    }

    pub async fn spawn_with(backend: Backend, configure: impl FnOnce(&mut Settings)) -> TestApp {
        TestApp::spawn_full(backend, configure, OpenApiRouter::new()).await
    }

    /// Settings for a test hub on port 0 (rate limits off unless a test turns them on).
    pub async fn settings(backend: Backend, dir: &TempDir) -> (Settings, Option<String>) {
        let mut s = Settings::with_data_dir(dir.0.clone());
        s.listen = "127.0.0.1:0".parse().expect("addr");
        s.admin_email = OWNER_EMAIL.into();
        s.admin_password = Some(OWNER_PASSWORD.into());
        s.rate_limits = "off".into();
        s.shutdown_grace_secs = 2;
        // Tests drive liveness and rule ticks themselves (trusthub_hub::workers).
        s.sections
            .edit(|v: &mut trusthub_hub::sections::Monitors| v.liveness_interval_secs = 3600);
        s.sections
            .edit(|v: &mut trusthub_hub::sections::Monitors| v.probe_tick_secs = 3600);
        s.sections
            .edit(|v: &mut trusthub_hub::sections::Monitors| v.rule_eval_interval_secs = 3600);
        s.sections
            .edit(|v: &mut trusthub_hub::sections::Slo| v.slo_eval_interval_secs = 3600);
        // Tests scan with chosen instants (`cve_scan::scan_due`): no job runs early either
        // (an import would wake the scan, CONTRACT 33).
        s.sections
            .edit(|v: &mut trusthub_hub::sections::Vulns| v.cve_scan_check_secs = 3600);
        s.job_nudges = "off".into();
        // Tests drive the maintainer tracking with chosen instants, against a local registry.
        s.sections
            .edit(|v: &mut trusthub_hub::sections::Vulns| v.supply_chain_check_secs = 86_400);
        s.sections.edit(|v: &mut trusthub_hub::sections::Vulns| {
            v.npm_registry = "http://127.0.0.1:9".into()
        });
        // Receivers, registries and buckets of the tests listen on this machine (CONTRACT 18:
        // the hub calls no loopback address unless allowed).
        s.outbound_allow_cidrs = "127.0.0.0/8,::1/128".into();
        // A 2048-bit CA: made per test database, and 4096-bit keys take seconds each. The
        // 4096-bit default is checked in `client_certs.rs`.
        s.ca_key_bits = 2048;
        let mut pg_db = None;
        if backend == Backend::Postgres {
            let name = create_pg_database().await;
            s.db.database_url = Some(pg_url_for(&name));
            s.encryption_key = Some(TEST_KEY.into());
            pg_db = Some(name);
        }
        (s, pg_db)
    }

    pub async fn spawn_full(
        backend: Backend,
        configure: impl FnOnce(&mut Settings),
        extra: OpenApiRouter<AppState>,
    ) -> TestApp {
        let dir = TempDir::new();
        let (mut settings, pg_db) = TestApp::settings(backend, &dir).await;
        configure(&mut settings);
        // With a TLS front, the client trusts its certificate chain (or, with `--tls-self`,
        // the hub CA the hub writes) and speaks HTTPS.
        let root = match (&settings.tls_cert, settings.tls_self) {
            (Some(c), _) => Some(c.clone()),
            (None, true) => Some(settings.db.data_dir.join("hub-ca.pem")),
            (None, false) => None,
        };
        let kept = settings.clone();
        let server = Server::build_with(settings, extra)
            .await
            .expect("hub starts");
        let tls = root.map(|c| std::fs::read(c).expect("the TLS certificate"));
        let addr = server.local_addr();
        let db = server.state().db.clone();
        let state = server.state().clone();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let running = tokio::spawn(async move {
            let _ = server
                .run(async move {
                    let _ = rx.await;
                })
                .await;
        });
        let (client, scheme) = match tls {
            None => (http_client(), "http"),
            Some(pem) => (
                {
                    let _ = rustls::crypto::ring::default_provider().install_default();
                    // The chain's certificates are trusted (a test CA is its last one).
                    let mut b =
                        reqwest::Client::builder().redirect(reqwest::redirect::Policy::none());
                    for c in reqwest::Certificate::from_pem_bundle(&pem).expect("pem") {
                        b = b.add_root_certificate(c);
                    }
                    b.build().expect("client")
                },
                "https",
            ),
        };
        let mut app = TestApp {
            base: format!("{scheme}://{addr}"),
            client,
            db,
            state,
            owner: Auth::None,
            shutdown: Some(tx),
            server: Some(running),
            settings: kept,
            pg_db,
            _dir: dir,
        };
        app.owner = app.login(OWNER_EMAIL, OWNER_PASSWORD).await;
        app
    }

    /// Stops the hub (as SIGTERM does) and starts it again on the same database and data
    /// directory, `configure` applied to its settings; sessions stay valid. Plain HTTP only.
    pub async fn restart(&mut self, configure: impl FnOnce(&mut Settings)) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(running) = self.server.take() {
            let _ = running.await;
        }
        configure(&mut self.settings);
        let server = Server::build_with(self.settings.clone(), OpenApiRouter::new())
            .await
            .expect("hub restarts");
        self.base = format!("http://{}", server.local_addr());
        self.db = server.state().db.clone();
        self.state = server.state().clone();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        self.server = Some(tokio::spawn(async move {
            let _ = server
                .run(async move {
                    let _ = rx.await;
                })
                .await;
        }));
        self.shutdown = Some(tx);
    }

    pub fn url(&self, path: &str) -> String {
        if path.starts_with("//") {
            format!("{}{}", self.base, &path[1..])
        } else {
            format!("{}/api/v1{path}", self.base)
        }
    }

    pub fn req(&self, method: Method, path: &str, auth: &Auth) -> RequestBuilder {
        let b = self.client.request(method, self.url(path));
        match auth {
            Auth::None => b,
            Auth::Cookie(c) => b.header("cookie", format!("trusthub_session={c}")),
            Auth::Bearer(t) => b.bearer_auth(t),
        }
    }

    pub async fn get(&self, path: &str, auth: &Auth) -> Response {
        self.req(Method::GET, path, auth)
            .send()
            .await
            .expect("request")
    }

    pub async fn send_json(
        &self,
        method: Method,
        path: &str,
        auth: &Auth,
        body: Value,
    ) -> Response {
        self.req(method, path, auth)
            .json(&body)
            .send()
            .await
            .expect("request")
    }

    pub async fn post(&self, path: &str, auth: &Auth, body: Value) -> Response {
        self.send_json(Method::POST, path, auth, body).await
    }

    pub async fn patch(&self, path: &str, auth: &Auth, body: Value) -> Response {
        self.send_json(Method::PATCH, path, auth, body).await
    }

    pub async fn delete(&self, path: &str, auth: &Auth) -> Response {
        self.req(Method::DELETE, path, auth)
            .send()
            .await
            .expect("request")
    }

    /// Logs in and returns the session; panics unless the login succeeds.
    pub async fn login(&self, email: &str, password: &str) -> Auth {
        let resp = self
            .post(
                "/auth/login",
                &Auth::None,
                json!({"email": email, "password": password}),
            )
            .await;
        assert_eq!(resp.status(), StatusCode::OK, "login of {email}");
        session_of(&resp)
    }

    /// A new user of the owner's tenant with `role`, logged in (through a real invitation).
    pub async fn user_with_role(&self, role: &str) -> (Auth, String) {
        self.invite_and_accept(
            &self.owner,
            &format!("{role}-{}@example.com", Uuid::new_v4().simple()),
            role,
        )
        .await
    }

    pub async fn invite_and_accept(&self, owner: &Auth, email: &str, role: &str) -> (Auth, String) {
        let inv = self
            .post("/invitations", owner, json!({"email": email, "role": role}))
            .await;
        assert_eq!(inv.status(), StatusCode::CREATED);
        let token = body(inv).await["token"].as_str().expect("token").to_owned();
        let acc = self
            .post(
                "/auth/accept-invite",
                &Auth::None,
                json!({"token": token, "password": "a fine password"}),
            )
            .await;
        assert_eq!(acc.status(), StatusCode::CREATED);
        let session = session_of(&acc);
        let id = body(acc).await["user"]["id"]
            .as_str()
            .expect("id")
            .to_owned();
        (session, id)
    }

    /// The owner session of a second tenant, made the way `trusthub admin create-tenant` does.
    pub async fn other_tenant(&self) -> Auth {
        let email = format!("other-{}@example.org", Uuid::new_v4().simple());
        trusthub_hub::admin::create_tenant(
            &self.db,
            &format!("other-{}", Uuid::new_v4().simple()),
            &email,
            "other password",
        )
        .await
        .expect("create tenant");
        self.login(&email, "other password").await
    }

    /// An API token of `auth`'s user.
    pub async fn token(&self, auth: &Auth, scope: &str) -> (String, String) {
        let resp = self
            .post(
                "/api-tokens",
                auth,
                json!({"name": format!("{scope} token"), "scope": scope}),
            )
            .await;
        assert_eq!(resp.status(), StatusCode::CREATED);
        let b = body(resp).await;
        (
            b["token"].as_str().expect("token").to_owned(),
            b["id"].as_str().expect("id").to_owned(),
        )
    }

    /// How many audit rows the whole database holds.
    pub async fn audit_count(&self) -> i64 {
        self.count("SELECT COUNT(*) FROM audit_log").await
    }

    /// Runs a statement as the hub's writer would (for tests that set up a state the API
    /// cannot make, like an expired certificate); the rows it changed.
    pub async fn execute(&self, sql: &str) -> u64 {
        let sql = sqlx::AssertSqlSafe(sql.to_owned());
        match &self.db {
            Db::Sqlite { write, .. } => sqlx::query(sql)
                .execute(write)
                .await
                .expect("execute")
                .rows_affected(),
            Db::Postgres(pool) => sqlx::query(sql)
                .execute(pool)
                .await
                .expect("execute")
                .rows_affected(),
        }
    }

    pub async fn count(&self, sql: &str) -> i64 {
        let sql = sqlx::AssertSqlSafe(sql.to_owned());
        match &self.db {
            Db::Sqlite { read, .. } => sqlx::query_scalar(sql)
                .fetch_one(read)
                .await
                .expect("count"),
            Db::Postgres(pool) => sqlx::query_scalar(sql)
                .fetch_one(pool)
                .await
                .expect("count"),
        }
    }

    /// Samples stored (`metric_points` holds a JSON array of samples per agent and timestamp).
    pub async fn stored_points(&self) -> i64 {
        self.count(
            "SELECT CAST(COALESCE(SUM(json_array_length(points)), 0) AS BIGINT) FROM metric_points",
        )
        .await
    }

    /// The samples a rollup table counts (its rows hold `[series, count, sum, min, max]`s).
    pub async fn rolled_up(&self, table: &str) -> i64 {
        let sql = match &self.db {
            Db::Sqlite { .. } => format!(
                "SELECT CAST(COALESCE(SUM(json_extract(e.value, '$[1]')), 0) AS BIGINT) \
                 FROM {table} r, json_each(r.stats) e"
            ),
            Db::Postgres(_) => format!(
                "SELECT CAST(COALESCE(SUM((e->>1)::BIGINT), 0) AS BIGINT) \
                 FROM {table} r, json_array_elements(r.stats) e"
            ),
        };
        self.count(&sql).await
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(name) = self.pg_db.take() {
            drop_pg_database(name);
        }
    }
}

/// The session in a response's `Set-Cookie`.
pub fn session_of(resp: &Response) -> Auth {
    let cookie = resp
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|v| v.strip_prefix("trusthub_session="))
        .expect("set-cookie");
    Auth::Cookie(cookie.split(';').next().unwrap_or_default().to_owned())
}

pub async fn body(resp: Response) -> Value {
    resp.json().await.expect("JSON body")
}

/// Whether a validation problem names `field` among its errors.
pub fn names_field(problem: &Value, field: &str) -> bool {
    problem["errors"]
        .as_array()
        .is_some_and(|errors| errors.iter().any(|e| e["field"] == field))
}

/// Asserts a problem+json answer with `status` and `code`; returns the body.
pub async fn assert_problem(resp: Response, status: u16, code: &str) -> Value {
    assert_eq!(resp.status().as_u16(), status, "status");
    let ct = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert_eq!(ct, "application/problem+json");
    let header_id = resp
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let b = body(resp).await;
    assert_eq!(b["status"], status, "{b}");
    assert_eq!(b["code"], code, "{b}");
    assert!(b["type"].as_str().is_some_and(|t| !t.is_empty()), "{b}");
    assert!(b["title"].is_string() && b["detail"].is_string(), "{b}");
    assert_eq!(
        b["request_id"].as_str().map(str::to_owned),
        header_id,
        "{b}"
    );
    b
}

/// Waits until the TOTP step has at least 8 seconds left, so codes of the previous, current
/// and next step all stay valid while the test runs.
pub async fn fresh_totp_window() -> i64 {
    loop {
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        if now.rem_euclid(30) < 22 {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Waits until the current minute has at least 12 seconds left, so that a test of a
/// per-minute rate limit cannot see its window turn over half-way (the windows are aligned to
/// whole minutes).
pub async fn fresh_minute() {
    while time::OffsetDateTime::now_utc()
        .unix_timestamp()
        .rem_euclid(60)
        >= 48
    {
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// One received mail.
#[derive(Debug, Clone)]
pub struct Mail {
    pub to: Vec<String>,
    pub data: String,
}

impl Mail {
    /// The value after `Token: ` in the body (undoing quoted-printable soft breaks).
    pub fn token(&self) -> String {
        let text = self.data.replace("=\r\n", "");
        text.lines()
            .find_map(|l| l.trim().strip_prefix("Token: "))
            .expect("token line")
            .trim()
            .to_owned()
    }
}

/// A local SMTP server (RFC 5321 subset: HELO/EHLO, MAIL, RCPT, DATA, RSET, NOOP, QUIT).
pub struct SmtpSink {
    pub port: u16,
    pub mails: Arc<Mutex<Vec<Mail>>>,
}

impl SmtpSink {
    pub async fn start() -> SmtpSink {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind smtp");
        let port = listener.local_addr().expect("addr").port();
        let mails = Arc::new(Mutex::new(Vec::new()));
        let store = mails.clone();
        tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                let store = store.clone();
                tokio::spawn(async move {
                    let (r, mut w) = sock.into_split();
                    let mut r = BufReader::new(r);
                    let _ = w.write_all(b"220 sink ESMTP ready\r\n").await;
                    let mut to = Vec::new();
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if r.read_line(&mut line).await.unwrap_or(0) == 0 {
                            break;
                        }
                        let cmd = line.trim_end().to_ascii_uppercase();
                        let reply: &[u8] = if cmd.starts_with("EHLO") {
                            b"250-sink\r\n250 8BITMIME\r\n"
                        } else if cmd.starts_with("HELO")
                            || cmd.starts_with("MAIL FROM")
                            || cmd.starts_with("NOOP")
                        {
                            b"250 OK\r\n"
                        } else if cmd.starts_with("RSET") {
                            to.clear();
                            b"250 OK\r\n"
                        } else if cmd.starts_with("RCPT TO") {
                            let addr = line.trim_end()[8..]
                                .trim()
                                .trim_start_matches('<')
                                .trim_end_matches('>')
                                .to_owned();
                            to.push(addr);
                            b"250 OK\r\n"
                        } else if cmd == "DATA" {
                            let _ = w.write_all(b"354 end with .\r\n").await;
                            let mut data = String::new();
                            loop {
                                line.clear();
                                if r.read_line(&mut line).await.unwrap_or(0) == 0 || line == ".\r\n"
                                {
                                    break;
                                }
                                data.push_str(&line);
                            }
                            if let Ok(mut m) = store.lock() {
                                m.push(Mail {
                                    to: std::mem::take(&mut to),
                                    data,
                                });
                            }
                            b"250 queued\r\n"
                        } else if cmd.starts_with("QUIT") {
                            let _ = w.write_all(b"221 bye\r\n").await;
                            break;
                        } else {
                            b"502 not implemented\r\n"
                        };
                        if w.write_all(reply).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        SmtpSink { port, mails }
    }

    pub fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    /// Waits up to 10 s for a mail to `to`.
    pub async fn wait_for(&self, to: &str) -> Mail {
        for _ in 0..100 {
            if let Some(m) = self
                .mails
                .lock()
                .expect("lock")
                .iter()
                .find(|m| m.to.iter().any(|t| t == to))
            {
                return m.clone();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("no mail to {to} arrived");
    }

    pub fn count_to(&self, to: &str) -> usize {
        self.mails
            .lock()
            .expect("lock")
            .iter()
            .filter(|m| m.to.iter().any(|t| t == to))
            .count()
    }
}

/// The hub clock in whole seconds, as the workers use it.
pub fn hub_now() -> time::OffsetDateTime {
    let t = time::OffsetDateTime::now_utc();
    t.replace_nanosecond(0).expect("whole second")
}

/// Generates, for each named `async fn name(b: Backend)`, a test on SQLite and one on
/// PostgreSQL.
#[macro_export]
macro_rules! dual {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::harness::Backend::Sqlite).await
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    if $crate::harness::require_postgres().await {
                        super::$name($crate::harness::Backend::Postgres).await
                    }
                }
            )*
        }
    };
}

/// One request a [`Receiver`] got.
#[derive(Debug, Clone)]
pub struct Received {
    pub headers: axum::http::HeaderMap,
    pub body: Vec<u8>,
}

impl Received {
    pub fn header(&self, name: &str) -> String {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("json body")
    }
}

/// A real HTTP server on a port that records every POST and answers with the next status
/// of its script (200 once the script is used up).
#[derive(Clone)]
pub struct Receiver {
    pub url: String,
    got: Arc<Mutex<Vec<Received>>>,
    script: Arc<Mutex<std::collections::VecDeque<u16>>>,
}

impl Receiver {
    pub async fn start(script: &[u16]) -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
        let r = Receiver {
            url,
            got: Arc::default(),
            script: Arc::new(Mutex::new(script.iter().copied().collect())),
        };
        let me = r.clone();
        let app = axum::Router::new().fallback(
            move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                let me = me.clone();
                async move {
                    me.got.lock().expect("lock").push(Received {
                        headers,
                        body: body.to_vec(),
                    });
                    let code = me.script.lock().expect("lock").pop_front().unwrap_or(200);
                    axum::http::StatusCode::from_u16(code).expect("status")
                }
            },
        );
        tokio::spawn(async move { axum::serve(listener, app).await });
        r
    }

    pub fn received(&self) -> Vec<Received> {
        self.got.lock().expect("lock").clone()
    }

    /// Waits until `n` requests arrived (panics after `secs`).
    pub async fn wait_for(&self, n: usize, secs: u64) -> Vec<Received> {
        let deadline = std::time::Instant::now() + Duration::from_secs(secs);
        loop {
            let got = self.received();
            if got.len() >= n {
                return got;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{} of {n} requests after {secs} s",
                got.len()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Polls `f` until it returns `Some` (panics after `secs`).
pub async fn eventually<T, F, Fut>(secs: u64, what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
