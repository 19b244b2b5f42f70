//! What the `trusthub` binary's tests share: a scratch directory, a running `trusthub serve`
//! and its first owner, a fresh PostgreSQL database, logging in.
#![allow(dead_code)]

use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;
use trusthub_store::{Db, DbOptions};

pub const BIN: &str = env!("CARGO_BIN_EXE_trusthub");

pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new() -> TempDir {
        let p = std::env::temp_dir().join(format!(
            "trusthub-cli-test-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&p).expect("dir");
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running `trusthub serve`.
pub struct Hub {
    pub child: Child,
    /// `http://127.0.0.1:<port>/api/v1`.
    pub base: String,
    pub stdout: Vec<String>,
    pub stderr: mpsc::Receiver<String>,
}

impl Hub {
    pub fn start(data_dir: &Path, envs: &[(&str, &str)]) -> Hub {
        let mut cmd = Command::new(BIN);
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data_dir)
            .env_remove("TRUSTHUB_ADMIN_PASSWORD")
            .env_remove("TRUSTHUB_DATABASE_URL")
            .env_remove("CLOUD_ENCRYPTION_KEY")
            .env_remove("MIMALLOC_ALLOW_THP")
            // The webhook receivers of these tests listen on this machine.
            .env("TRUSTHUB_OUTBOUND_ALLOW_CIDRS", "127.0.0.0/8")
            .envs(envs.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn trusthub");
        let (tx, rx) = mpsc::channel();
        let out = child.stdout.take().expect("stdout");
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let (etx, erx) = mpsc::channel();
        let err = child.stderr.take().expect("stderr");
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let _ = etx.send(line);
            }
        });
        let mut stdout = Vec::new();
        loop {
            let Ok(line) = rx.recv_timeout(Duration::from_secs(90)) else {
                let _ = child.kill();
                let _ = child.wait();
                let errs: Vec<String> = erx.try_iter().collect();
                panic!("hub did not start: {stdout:?} {errs:?}");
            };
            stdout.push(line.clone());
            if let Some(addr) = line.strip_prefix("Trusthub hub listening on ") {
                return Hub {
                    child,
                    base: format!("{addr}/api/v1"),
                    stdout,
                    stderr: erx,
                };
            }
        }
    }

    pub fn created_owner(&self) -> bool {
        self.stdout.iter().any(|l| l.contains("first start"))
    }

    pub fn pid(&self) -> String {
        self.child.id().to_string()
    }

    pub fn terminate(&mut self) -> std::process::ExitStatus {
        Command::new("kill")
            .args(["-TERM", &self.pid()])
            .status()
            .expect("kill");
        for _ in 0..200 {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("hub did not stop within 10 s of SIGTERM");
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn pg_admin_url() -> String {
    std::env::var("TRUSTHUB_TEST_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// A fresh PostgreSQL database, or `None` (with a notice) outside CI when none answers.
pub async fn pg_database() -> Option<(String, String)> {
    let admin = match tokio::time::timeout(
        Duration::from_secs(5),
        Db::connect(&pg_admin_url(), &DbOptions::default()),
    )
    .await
    {
        Ok(Ok(db)) => db,
        _ if std::env::var_os("CI").is_some() => panic!("PostgreSQL is required in CI"),
        _ => {
            eprintln!("NOTICE: PostgreSQL does not answer; skipping this PostgreSQL test");
            return None;
        }
    };
    let name = format!("th_cli_{}", uuid::Uuid::new_v4().simple());
    if let Db::Postgres(p) = &admin {
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(p)
            .await
            .expect("create db");
    }
    admin.close().await;
    let base = pg_admin_url();
    let url = format!(
        "{}/{name}",
        base.rsplit_once('/').map(|(b, _)| b).unwrap_or(&base)
    );
    Some((name, url))
}

pub async fn drop_pg_database(name: &str) {
    if let Ok(Db::Postgres(p)) = Db::connect(&pg_admin_url(), &DbOptions::default()).await {
        let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
            "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
        )))
        .execute(&p)
        .await;
    }
}

pub async fn login(
    client: &reqwest::Client,
    base: &str,
    email: &str,
    password: &str,
) -> reqwest::Response {
    client
        .post(format!("{base}/auth/login"))
        .json(&json!({"email": email, "password": password}))
        .send()
        .await
        .expect("login")
}

pub fn cookie(resp: &reqwest::Response) -> String {
    resp.headers()["set-cookie"]
        .to_str()
        .expect("cookie")
        .split(';')
        .next()
        .expect("pair")
        .to_owned()
}

pub fn initial_password(dir: &Path) -> String {
    let text = std::fs::read_to_string(dir.join("initial-admin.txt")).expect("initial-admin.txt");
    text.lines()
        .find_map(|l| l.strip_prefix("password: "))
        .expect("password line")
        .to_owned()
}

pub async fn admin_session(client: &reqwest::Client, base: &str, password: &str) -> String {
    cookie(&login(client, base, "admin@trusthub.local", password).await)
}

pub async fn post_json(client: &reqwest::Client, url: String, session: &str, body: Value) -> Value {
    let r = client
        .post(url)
        .header("cookie", session)
        .json(&body)
        .send()
        .await
        .expect("post");
    assert!(r.status().is_success(), "{}", r.status());
    r.json().await.expect("json")
}

/// A simulated agent registered on a hub: its id, token and signing key.
pub struct TestAgent {
    pub id: String,
    pub token: String,
    pub key: ed25519_dalek::SigningKey,
}

/// Enrolls and registers a simulated agent (`machine_id`, its hostname the same) with an
/// admin session.
pub async fn register_agent(
    client: &reqwest::Client,
    base: &str,
    session: &str,
    machine_id: &str,
) -> TestAgent {
    register_host(client, base, session, machine_id, machine_id).await
}

/// [`register_agent`] with a hostname of its own.
pub async fn register_host(
    client: &reqwest::Client,
    base: &str,
    session: &str,
    machine_id: &str,
    hostname: &str,
) -> TestAgent {
    let enroll = post_json(
        client,
        format!("{base}/agents/enrollment-tokens"),
        session,
        json!({}),
    )
    .await;
    let key = ed25519_dalek::SigningKey::from_bytes(
        &trusthub_core::secret::random_bytes::<32>().expect("rand"),
    );
    let reg_body = json!({"machine_id": machine_id, "hostname": hostname, "os": "t", "arch": "t", "agent_version": "t", "signing_pubkey": trusthub_core::secret::hex(key.verifying_key().as_bytes())}).to_string();
    let reg: Value = client
        .post(format!("{base}/agents/register"))
        .bearer_auth(enroll["token"].as_str().expect("t"))
        .header("content-type", "application/json")
        .header(
            "x-service-signature",
            trusthub_core::agent::sign_header(&key, reg_body.as_bytes()),
        )
        .body(reg_body)
        .send()
        .await
        .expect("register")
        .json()
        .await
        .expect("json");
    TestAgent {
        id: reg["agent_id"].as_str().expect("id").to_owned(),
        token: reg["agent_token"].as_str().expect("token").to_owned(),
        key,
    }
}

/// Posts one signed batch of `metrics`; its answer when it was acknowledged (202).
pub async fn send_batch(
    client: &reqwest::Client,
    base: &str,
    agent: &TestAgent,
    id: uuid::Uuid,
    metrics: &[Value],
) -> Option<Value> {
    let body = json!({"batch_id": id, "sent_at": time::OffsetDateTime::now_utc().format(&time::format_description::well_known::Rfc3339).expect("fmt"), "metrics": metrics}).to_string();
    let r = client
        .post(format!("{base}/ingest"))
        .bearer_auth(&agent.token)
        .header("content-type", "application/json")
        .header(
            "x-service-signature",
            trusthub_core::agent::sign_header(&agent.key, body.as_bytes()),
        )
        .body(body)
        .send()
        .await
        .ok()?;
    (r.status().as_u16() == 202).then_some(())?;
    r.json::<Value>().await.ok()
}

/// `GET /ready` of a hub on `port`, over a plain TCP connection: the answer when it is 200.
pub fn ready_answer(port: u16) -> Option<String> {
    use std::io::{Read as _, Write as _};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.write_all(b"GET /ready HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).ok()?;
    answer.starts_with("HTTP/1.1 200").then_some(answer)
}

/// Waits up to two minutes for `/ready` of a hub on `port`; its answer, or empty.
pub fn wait_ready(port: u16) -> String {
    for _ in 0..600 {
        if let Some(a) = ready_answer(port) {
            return a;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    String::new()
}

/// `trusthub <args>` with none of this process's `TRUSTHUB_` variables (nor
/// `CLOUD_ENCRYPTION_KEY`), only `envs`.
pub fn trusthub_clean(args: &[&str], envs: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args);
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("TRUSTHUB_")) {
        cmd.env_remove(k);
    }
    cmd.env_remove("CLOUD_ENCRYPTION_KEY");
    cmd.envs(envs.iter().copied());
    cmd.output().expect("run trusthub")
}

/// What a run printed, stdout then stderr.
pub fn printed(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}
