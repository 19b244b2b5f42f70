//! The real agent binary against the real hub: enrolment, real host data, file modes, the
//! allowlist, and no data lost across a hub outage and an agent restart (CONTRACT 4).

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use trusthub_hub::{Server, Settings};

// The hub's WebDriver client; this file uses only part of it.
#[allow(dead_code)]
#[path = "../../hub/tests/api/webdriver.rs"]
mod webdriver;

mod apt_rig;
mod dpkg_rig;
mod npm_rig;

const AGENT: &str = env!("CARGO_BIN_EXE_trusthub-agent");

struct TempDir(PathBuf);
impl TempDir {
    fn new() -> TempDir {
        let p = std::env::temp_dir().join(format!(
            "trusthub-agent-test-{}",
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

struct Agent(Child);
impl Agent {
    fn start(state: &Path, extra: &[&str]) -> Agent {
        Agent::start_with_env(state, extra, &[])
    }
    fn start_with_env(state: &Path, extra: &[&str], envs: &[(String, String)]) -> Agent {
        let mut cmd = Command::new(AGENT);
        cmd.envs(envs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        cmd.args(["run", "--state-dir"])
            .arg(state)
            .args(["--interval-secs", "1"]);
        if !extra.contains(&"--allow-actions") {
            cmd.args(["--allow-actions", "restart_app,install_package"]);
        }
        let child = cmd
            .args(extra)
            .env(
                "RUST_LOG",
                std::env::var("AGENT_LOG").unwrap_or("warn".into()),
            )
            .stdout(Stdio::null())
            .stderr(if std::env::var_os("AGENT_LOG").is_some() {
                Stdio::inherit()
            } else {
                Stdio::null()
            })
            .spawn()
            .expect("agent starts");
        Agent(child)
    }
    fn stop(mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let _ = self.0.wait();
    }
}
impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

struct Hub {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn start_hub(settings: Settings) -> (Hub, std::net::SocketAddr) {
    let server = Server::build(settings).await.expect("hub starts");
    let addr = server.local_addr();
    let (stop, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(server.run(async move {
        let _ = rx.await;
    }));
    (Hub { stop, task }, addr)
}

impl Hub {
    async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}

fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).expect("meta").permissions().mode() & 0o777
}

async fn get(client: &reqwest::Client, base: &str, cookie: &str, path: &str) -> Value {
    client
        .get(format!("{base}/api/v1{path}"))
        .header("cookie", cookie)
        .send()
        .await
        .expect("get")
        .json()
        .await
        .expect("json")
}

fn spooled(state: &Path) -> usize {
    std::fs::read_dir(state.join("spool"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// A running hub with a logged-in owner.
struct Fixture {
    hub: Hub,
    settings: Settings,
    base: String,
    client: reqwest::Client,
    cookie: String,
    _dir: TempDir,
}

async fn fixture() -> Fixture {
    fixture_with(|_| {}).await
}

async fn fixture_with(configure: impl FnOnce(&mut Settings)) -> Fixture {
    let dir = TempDir::new();
    let mut settings = Settings::with_data_dir(dir.0.clone());
    settings.listen = "127.0.0.1:0".parse().expect("addr");
    settings.admin_password = Some("agent test password".into());
    settings.rate_limits = "off".into();
    // No test reads the public npm registry.
    settings
        .sections
        .edit(|v: &mut trusthub_hub::sections::Vulns| v.npm_registry = "http://127.0.0.1:9".into());
    settings.outbound_allow_cidrs = "127.0.0.0/8".into();
    configure(&mut settings);
    let (hub, addr) = start_hub(settings.clone()).await;
    settings.listen = addr; // a restarted hub comes back on the same port
    let _ = rustls::crypto::ring::default_provider().install_default();
    // With --tls-self the hub serves HTTPS with a certificate of its own CA, written to
    // <data-dir>/hub-ca.pem: the test's client trusts only that.
    let (base, client) = if settings.tls_self {
        let ca = std::fs::read(settings.db.data_dir.join("hub-ca.pem")).expect("hub-ca.pem");
        let client = reqwest::Client::builder()
            .tls_certs_only([reqwest::Certificate::from_pem(&ca).expect("ca")])
            .build()
            .expect("client");
        (format!("https://{addr}"), client)
    } else {
        (format!("http://{addr}"), reqwest::Client::new())
    };
    let login = client
        .post(format!("{base}/api/v1/auth/login"))
        .json(&json!({"email": "admin@trusthub.local", "password": "agent test password"}))
        .send()
        .await
        .expect("login");
    let cookie = login.headers()["set-cookie"]
        .to_str()
        .expect("c")
        .split(';')
        .next()
        .expect("c")
        .to_owned();
    Fixture {
        hub,
        settings,
        base,
        client,
        cookie,
        _dir: dir,
    }
}

impl Fixture {
    /// A new enrollment token with these tags.
    async fn enrollment_token(&self, tags: Value) -> String {
        let v: Value = self
            .client
            .post(format!("{}/api/v1/agents/enrollment-tokens", self.base))
            .header("cookie", &self.cookie)
            .json(&json!({"tags": tags}))
            .send()
            .await
            .expect("enroll")
            .json()
            .await
            .expect("json");
        v["token"].as_str().expect("token").to_owned()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_enrols_pushes_this_host_and_loses_nothing_across_a_hub_outage_and_an_agent_restart()
{
    let state = TempDir::new();
    let f = fixture().await;
    let token = f.enrollment_token(json!(["env:test"])).await;
    let Fixture {
        hub,
        settings,
        base,
        client,
        cookie,
        _dir,
    } = f;

    let agent = Agent::start(&state.0, &["--hub", &base, "--enroll", &token]);
    let mut agent_id = String::new();
    for _ in 0..100 {
        let agents = get(&client, &base, &cookie, "/agents").await;
        if agents[0]["status"] == "online" {
            agent_id = agents[0]["id"].as_str().expect("id").to_owned();
            let m = get(
                &client,
                &base,
                &cookie,
                &format!("/agents/{agent_id}/metrics?name=cpu.percent"),
            )
            .await;
            if m["series"].as_array().is_some_and(|s| !s.is_empty()) {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(!agent_id.is_empty(), "the agent registered and pushed");
    // Real host data.
    let inv = get(
        &client,
        &base,
        &cookie,
        &format!("/agents/{agent_id}/inventory"),
    )
    .await;
    assert!(!inv["os"]["kernel"].as_str().unwrap_or_default().is_empty());
    assert!(inv["processes"].as_array().is_some_and(|p| p.len() > 3));
    // Sockets with their processes (CONTRACT 24): the hub's own listener, owned by the hub.
    let hub_port: u64 = base
        .rsplit(':')
        .next()
        .and_then(|p| p.split('/').next())
        .and_then(|p| p.parse().ok())
        .expect("port");
    let listener = inv["listening"]
        .as_array()
        .and_then(|l| {
            l.iter()
                .find(|s| s["port"] == hub_port && s["proto"] == "tcp")
        })
        .unwrap_or_else(|| panic!("the hub's listener: {}", inv["listening"]));
    assert!(
        listener["pid"].as_u64().is_some()
            && !listener["process"].as_str().unwrap_or_default().is_empty(),
        "{listener}"
    );
    assert!(inv["connections"].is_array(), "{}", inv["connections"]);
    let mem = get(
        &client,
        &base,
        &cookie,
        &format!("/agents/{agent_id}/metrics?name=mem.total_bytes"),
    )
    .await;
    assert!(
        mem["series"][0]["points"][0][1]
            .as_f64()
            .is_some_and(|v| v > 1e7)
    );
    // The host's allowlist reached the hub.
    let gov = get(
        &client,
        &base,
        &cookie,
        &format!("/agents/{agent_id}/governance"),
    )
    .await;
    assert_eq!(
        gov["host_allowed_actions"],
        json!(["restart_app", "install_package"])
    );
    assert_eq!(
        gov["effective_actions"],
        json!(["restart_app", "install_package"])
    );
    // File modes.
    assert_eq!(mode(&state.0), 0o700);
    assert_eq!(mode(&state.0.join("spool")), 0o700);
    assert_eq!(mode(&state.0.join("signing.key")), 0o600);
    assert_eq!(mode(&state.0.join("registration.json")), 0o600);

    // Outage: the hub goes away; the agent keeps collecting into its spool.
    hub.stop().await;
    let outage_start = time::OffsetDateTime::now_utc();
    // At least 3 s of outage (the window's samples are counted below), then polled: on a
    // loaded machine the agent's next push can come a few seconds late.
    tokio::time::sleep(Duration::from_secs(3)).await;
    wait_for(20, || spooled(&state.0) >= 2).await;
    assert!(
        spooled(&state.0) >= 2,
        "batches spooled while the hub is down"
    );
    // The agent restarts during the outage (no enrolment needed any more).
    agent.stop();
    let before_restart = spooled(&state.0);
    let agent = Agent::start(&state.0, &[]);
    tokio::time::sleep(Duration::from_secs(3)).await;
    wait_for(20, || spooled(&state.0) > before_restart).await;
    let outage_end = time::OffsetDateTime::now_utc();
    assert!(
        spooled(&state.0) > before_restart,
        "the restarted agent spools too"
    );

    let (hub, _) = start_hub(settings).await;
    for _ in 0..150 {
        if spooled(&state.0) == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(spooled(&state.0), 0, "the spool drained");
    let fmt = |t: time::OffsetDateTime| {
        t.format(&time::format_description::well_known::Rfc3339)
            .expect("fmt")
    };
    let m = get(
        &client,
        &base,
        &cookie,
        &format!(
            "/agents/{agent_id}/metrics?name=uptime.seconds&from={}&to={}",
            fmt(outage_start),
            fmt(outage_end)
        ),
    )
    .await;
    let points = m["series"][0]["points"]
        .as_array()
        .map(Vec::len)
        .unwrap_or(0);
    assert!(points >= 4, "samples of the outage window arrived: {m}");
    agent.stop();
    hub.stop().await;

    // `status` reads the state without the hub.
    let out = Command::new(AGENT)
        .args(["status", "--state-dir"])
        .arg(&state.0)
        .output()
        .expect("status");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains(&agent_id) && text.contains("spooled batches:    0"),
        "{text}"
    );
    assert!(!text.contains(&token));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_tls_the_agent_makes_its_key_gets_a_certificate_presents_it_and_renews_it() {
    let state = TempDir::new();
    // Certificates of 10 days: below the agent's 30-day renewal threshold, so every check
    // (every 2 s here) renews.
    let f = fixture_with(|s| {
        s.tls_self = true;
        s.ca_key_bits = 2048;
        s.client_cert_days = 10;
    })
    .await;
    assert!(f.base.starts_with("https://"));
    let ca = f.settings.db.data_dir.join("hub-ca.pem");
    let token = f.enrollment_token(json!([])).await;
    let agent = Agent::start(
        &state.0,
        &[
            "--hub",
            &f.base,
            "--enroll",
            &token,
            "--ca-cert",
            ca.to_str().expect("utf-8"),
            "--cert-check-secs",
            "2",
        ],
    );
    let certs = |id: String| {
        let (client, base, cookie) = (f.client.clone(), f.base.clone(), f.cookie.clone());
        async move {
            get(
                &client,
                &base,
                &cookie,
                &format!("/agents/{id}/client-certs"),
            )
            .await
        }
    };
    let mut agent_id = String::new();
    let mut listed = Value::Null;
    for _ in 0..150 {
        let agents = get(&f.client, &f.base, &f.cookie, "/agents").await;
        if let Some(id) = agents[0]["id"].as_str() {
            agent_id = id.to_owned();
            listed = certs(agent_id.clone()).await;
            let n = listed.as_array().map(Vec::len).unwrap_or(0);
            // Enrolment's certificate, then renewals, the newest in use.
            if n >= 3 && listed[0]["last_seen_at"].is_string() && agents[0]["status"] == "online" {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let rows = listed.as_array().expect("certificates listed");
    assert!(rows.len() >= 3, "issued at enrolment and renewed: {listed}");
    assert!(
        listed[0]["last_seen_at"].is_string(),
        "the renewed certificate is presented: {listed}"
    );
    for old in &rows[1..] {
        assert_eq!(old["revoke_reason"], "rotated", "{listed}");
    }
    let agent_row = get(
        &f.client,
        &f.base,
        &f.cookie,
        &format!("/agents/{agent_id}"),
    )
    .await;
    assert_eq!(agent_row["has_client_cert"], true, "{agent_row}");
    agent.stop();

    // The files: mode 600 in a 700 directory; the key is RSA-2048, made here; the
    // certificate is the one active certificate and verifies against the CA beside it.
    let dir = state.0.join("mtls");
    assert_eq!(mode(&dir), 0o700);
    for file in ["client.crt", "client.key", "hub-ca.crt"] {
        assert_eq!(mode(&dir.join(file)), 0o600, "{file}");
    }
    let listed = certs(agent_id.clone()).await;
    let active: Vec<&Value> = listed
        .as_array()
        .expect("list")
        .iter()
        .filter(|c| c["revoked_at"].is_null())
        .collect();
    assert_eq!(active.len(), 1, "one active certificate: {listed}");
    let openssl = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .output()
            .expect("openssl");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let crt = dir.join("client.crt");
    let (crt, key, hub_ca) = (
        crt.to_str().expect("utf-8"),
        dir.join("client.key"),
        dir.join("hub-ca.crt"),
    );
    let fp = openssl(&["x509", "-in", crt, "-noout", "-fingerprint", "-sha256"]);
    let fp = fp
        .trim()
        .rsplit('=')
        .next()
        .expect("fingerprint")
        .replace(':', "")
        .to_lowercase();
    assert_eq!(active[0]["fingerprint_sha256"], fp.as_str());
    let verified = openssl(&["verify", "-CAfile", hub_ca.to_str().expect("utf-8"), crt]);
    assert!(verified.contains(": OK"), "{verified}");
    let key_text = openssl(&[
        "pkey",
        "-in",
        key.to_str().expect("utf-8"),
        "-noout",
        "-text",
    ]);
    assert!(
        key_text.contains("2048 bit"),
        "an RSA-2048 key made on the host"
    );
    let subject = openssl(&[
        "x509", "-in", crt, "-noout", "-subject", "-nameopt", "RFC2253",
    ]);
    assert!(subject.contains(&format!("CN={agent_id}")), "{subject}");
    // Renewals never left an old certificate presented after its revocation.
    let anomalies = get(&f.client, &f.base, &f.cookie, "/integrity-anomalies").await;
    assert_eq!(anomalies, json!([]), "no refusals during renewals");

    // `status` shows the certificate and its expiry.
    let out = Command::new(AGENT)
        .args(["status", "--state-dir"])
        .arg(&state.0)
        .output()
        .expect("status");
    let text = String::from_utf8_lossy(&out.stdout);
    let serial = active[0]["serial"].as_str().expect("serial");
    assert!(
        text.contains(&format!("serial {serial}")) && text.contains("days left, due for renewal"),
        "{text}"
    );
    assert!(text.contains(&fp), "{text}");
    f.hub.stop().await;
}

#[test]
fn install_writes_a_systemd_unit_and_an_unregistered_agent_explains_itself() {
    let dir = TempDir::new();
    let out = Command::new(AGENT)
        .args([
            "install",
            "--state-dir",
            "/var/lib/trusthub-agent",
            "--unit-dir",
        ])
        .arg(&dir.0)
        .output()
        .expect("install");
    assert!(out.status.success());
    let unit = std::fs::read_to_string(dir.0.join("trusthub-agent.service")).expect("unit");
    assert!(
        unit.contains("ExecStart=")
            && unit.contains("run --state-dir /var/lib/trusthub-agent")
            && unit.contains("Restart=always")
    );
    let state = TempDir::new();
    let out = Command::new(AGENT)
        .args(["run", "--state-dir"])
        .arg(&state.0)
        .output()
        .expect("run");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--enroll"));
    let bad = Command::new(AGENT)
        .args(["run", "--allow-actions", "reboot", "--state-dir"])
        .arg(&state.0)
        .output()
        .expect("run");
    assert!(!bad.status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_token_rotation_the_agent_recovers_by_enrolling_again_with_the_same_identity() {
    let state = TempDir::new();
    let f = fixture().await;
    let (base, client, cookie) = (f.base.clone(), f.client.clone(), f.cookie.clone());
    let agent = Agent::start(
        &state.0,
        &[
            "--hub",
            &base,
            "--enroll",
            &f.enrollment_token(json!([])).await,
        ],
    );
    let mut id = String::new();
    for _ in 0..100 {
        if let Some(a) = get(&client, &base, &cookie, "/agents")
            .await
            .as_array()
            .and_then(|a| a.first().cloned())
            && a["last_seen_at"].is_string()
        {
            id = a["id"].as_str().expect("id").to_owned();
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(!id.is_empty(), "registered and pushing");
    let rotated = client
        .post(format!("{base}/api/v1/agents/{id}/rotate-token"))
        .header("cookie", &cookie)
        .send()
        .await
        .expect("rotate");
    assert_eq!(rotated.status(), 200);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(spooled(&state.0) >= 1, "refused batches stay spooled");
    agent.stop();
    // Enrolling again (no --hub: the registration remembers it) keeps the agent id.
    let agent = Agent::start(
        &state.0,
        &["--enroll", &f.enrollment_token(json!([])).await],
    );
    for _ in 0..100 {
        if spooled(&state.0) == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(spooled(&state.0), 0, "the spool drained with the new token");
    let agents = get(&client, &base, &cookie, "/agents").await;
    assert_eq!(agents.as_array().map(Vec::len), Some(1));
    assert_eq!(agents[0]["id"].as_str(), Some(id.as_str()));
    agent.stop();
    f.hub.stop().await;
}

async fn post(
    client: &reqwest::Client,
    base: &str,
    cookie: &str,
    path: &str,
    body: Value,
) -> Value {
    let r = client
        .post(format!("{base}/api/v1{path}"))
        .header("cookie", cookie)
        .json(&body)
        .send()
        .await
        .expect("post");
    assert_eq!(r.status(), 201, "POST {path}");
    r.json().await.expect("json")
}

/// Polls `GET path` until `done` holds (panics after `secs`).
async fn wait_until(
    f: &Fixture,
    path: &str,
    secs: u64,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let mut last = Value::Null;
    for _ in 0..secs * 5 {
        let v = get(&f.client, &f.base, &f.cookie, path).await;
        if done(&v) {
            return v;
        }
        last = v;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("timed out waiting for {what}; last answer: {last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_process_app_alerts_after_three_checks_and_resolves_when_it_is_back() {
    let state = TempDir::new();
    let f = fixture_with(|s| {
        s.sections
            .edit(|v: &mut trusthub_hub::sections::Monitors| v.liveness_interval_secs = 1)
    })
    .await;
    // The app: a copy of sleep under its own absolute path, running for real.
    let bin = state.0.join("demo-app");
    std::fs::copy("/bin/sleep", &bin).expect("copy sleep");
    let start_app = || Command::new(&bin).arg("600").spawn().expect("app runs");
    let mut proc_ = start_app();
    let agent = Agent::start(
        &state.0,
        &[
            "--hub",
            &f.base,
            "--enroll",
            &f.enrollment_token(json!(["env:e2e"])).await,
        ],
    );
    let agents = wait_until(&f, "/agents", 20, "the agent", |v| {
        v[0]["last_seen_at"].is_string()
    })
    .await;
    let agent_id = agents[0]["id"].as_str().expect("id").to_owned();
    let app = post(
        &f.client,
        &f.base,
        &f.cookie,
        "/apps",
        json!({"agent_id": agent_id, "name": "demo",
        "app_type": "process", "identifier": bin.display().to_string()}),
    )
    .await;
    let path = format!("/apps/{}", app["id"].as_str().expect("id"));
    wait_until(&f, &path, 20, "the app observed running", |v| {
        v["observed_state"] == "running"
    })
    .await;
    // An http app the agent checks from the host: the hub's own health endpoint.
    let http = post(
        &f.client,
        &f.base,
        &f.cookie,
        "/apps",
        json!({"agent_id": agent_id, "name": "hub health",
        "type": "http", "endpoint": format!("{}/api/v1/health", f.base), "interval_seconds": 10}),
    )
    .await;
    let hpath = format!("/apps/{}", http["id"].as_str().expect("id"));
    let h = wait_until(&f, &hpath, 30, "the http app checked", |v| {
        v["observed_state"] == "running"
    })
    .await;
    assert_eq!(h["last_check"]["status_code"], 200);

    // dns and ping checks from the host (CONTRACT 32): a real DNS server on loopback
    // (dnsmasq, installed by .ci/run) and an ICMP echo to loopback, run by the agent.
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .expect("a free port")
        .port();
    let mut dnsmasq = Command::new("/usr/sbin/dnsmasq")
        .args([
            "--keep-in-foreground",
            "--conf-file=/dev/null",
            "--no-resolv",
            "--no-hosts",
            "--bind-interfaces",
            "--listen-address=127.0.0.1",
            "--user=root",
            "--pid-file=",
            &format!("--port={port}"),
            "--local=/test/",
            "--host-record=web.test,192.0.2.20",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("dnsmasq runs (dnsmasq-base, installed by .ci/run)");
    let mut checks = Vec::new();
    for (name, kind, endpoint, expected) in [
        (
            "web dns",
            "dns",
            format!("dns://web.test?type=A&server=127.0.0.1:{port}"),
            json!(["192.0.2.20"]),
        ),
        (
            "gone dns",
            "dns",
            format!("dns://gone.test?type=A&server=127.0.0.1:{port}"),
            json!(null),
        ),
        (
            "loopback",
            "ping",
            "icmp://127.0.0.1".to_owned(),
            json!(null),
        ),
    ] {
        let mut b = json!({"agent_id": agent_id, "name": name, "type": kind,
            "endpoint": endpoint, "interval_seconds": 10, "retries": 0});
        if !expected.is_null() {
            b["expected"] = expected;
        }
        let made = post(&f.client, &f.base, &f.cookie, "/apps", b).await;
        checks.push(format!("/apps/{}", made["id"].as_str().expect("id")));
    }
    let web = wait_until(&f, &checks[0], 30, "the dns check up", |v| {
        v["observed_state"] == "running"
    })
    .await;
    assert_eq!(web["last_check"]["ok"], true, "{web}");
    let gone = wait_until(&f, &checks[1], 30, "the missing name down", |v| {
        v["observed_state"] == "stopped"
    })
    .await;
    let why = gone["last_check"]["error"].as_str().unwrap_or_default();
    assert!(
        why.contains("`gone.test` does not exist (NXDOMAIN from 127.0.0.1"),
        "{gone}"
    );
    let ping = wait_until(&f, &checks[2], 30, "the ping check up", |v| {
        v["observed_state"] == "running"
    })
    .await;
    assert!(
        ping["last_check"]["latency_ms"].as_i64().is_some(),
        "{ping}"
    );
    let _ = dnsmasq.kill();
    let _ = dnsmasq.wait();

    proc_.kill().expect("kill the app");
    proc_.wait().expect("reap");
    let mut alert = Value::Null;
    for _ in 0..150 {
        let open = get(&f.client, &f.base, &f.cookie, "/alerts?is_resolved=false").await;
        let app_now = get(&f.client, &f.base, &f.cookie, &path).await;
        if let Some(a) = open
            .as_array()
            .and_then(|l| l.iter().find(|a| a["app_id"] == app["id"]))
        {
            assert!(
                app_now["consecutive_mismatch"].as_i64() >= Some(3),
                "alert only from the third check: {app_now}"
            );
            assert_eq!(app_now["alerting"], true);
            alert = a.clone();
            break;
        }
        assert!(app_now["consecutive_mismatch"].as_i64() < Some(3) || app_now["alerting"] == true);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(alert["severity"], "warning");
    assert_eq!(alert["agent"]["tags"], json!(["env:e2e"]));

    let mut proc_ = start_app();
    let alert_path = format!("/alerts/{}", alert["id"].as_str().expect("id"));
    let resolved = wait_until(&f, &alert_path, 30, "the alert resolved", |v| {
        v["is_resolved"] == true
    })
    .await;
    assert_eq!(resolved["resolved_by"], "liveness");
    let v = get(&f.client, &f.base, &f.cookie, &path).await;
    assert_eq!(
        (v["observed_state"].clone(), v["alerting"].clone()),
        (json!("running"), json!(false))
    );
    let _ = proc_.kill();
    let _ = proc_.wait();
    agent.stop();
    f.hub.stop().await;
}

/// Turns TOTP on for the logged-in owner; the raw secret.
async fn enrol_totp(f: &Fixture) -> Vec<u8> {
    let setup: Value = f
        .client
        .post(format!("{}/api/v1/auth/totp/setup", f.base))
        .header("cookie", &f.cookie)
        .send()
        .await
        .expect("setup")
        .json()
        .await
        .expect("json");
    let secret =
        trusthub_core::totp::secret_from_base32(setup["secret_base32"].as_str().expect("b32"))
            .expect("secret");
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let r = f
        .client
        .post(format!("{}/api/v1/auth/totp/verify", f.base))
        .header("cookie", &f.cookie)
        .json(&json!({"code": trusthub_core::totp::code_at(&secret, now)}))
        .send()
        .await
        .expect("verify");
    assert_eq!(r.status(), 200);
    secret
}

/// Waits until the current 30 s TOTP step has at least 8 s left.
/// Polls `done` every 200 ms for up to `secs` seconds (the caller asserts afterwards).
async fn wait_for(secs: u64, done: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    while !done() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn fresh_totp_window() -> i64 {
    loop {
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        if now.rem_euclid(30) < 22 {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// A TOTP step (unix time / 30) whose code the hub accepts now (the current one or either
/// neighbour) and that is not in `spent`; when all three are spent, the next step boundary
/// brings a fresh one.
async fn unspent_totp_step(spent: &[i64]) -> i64 {
    loop {
        let current = time::OffsetDateTime::now_utc().unix_timestamp() / 30;
        if let Some(step) = [current + 1, current, current - 1]
            .into_iter()
            .find(|s| !spent.contains(s))
        {
            return step;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

async fn restart(
    f: &Fixture,
    app: &str,
    auth: Option<(&str, &str)>,
    code: Option<String>,
) -> reqwest::Response {
    let mut r = f
        .client
        .post(format!("{}/api/v1/apps/{app}/restart", f.base))
        .json(&json!({"reason": "stuck workers"}));
    r = match auth {
        Some(("bearer", t)) => r.bearer_auth(t),
        _ => r.header("cookie", &f.cookie),
    };
    if let Some(c) = code {
        r = r.header("x-totp-code", c);
    }
    r.send().await.expect("restart")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_totp_gated_restart_runs_once_on_the_agent_and_is_recorded_everywhere() {
    let state = TempDir::new();
    let mut f = fixture().await;
    let secret = enrol_totp(&f).await;
    let bin = state.0.join("demo-app");
    std::fs::copy("/bin/sleep", &bin).expect("copy sleep");
    let marker = state.0.join("restarted.txt");
    let script = state.0.join("restart.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho restarted >> {}\necho done\n",
            marker.display()
        ),
    )
    .expect("script");
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let agent = Agent::start(
        &state.0,
        &[
            "--hub",
            &f.base,
            "--enroll",
            &f.enrollment_token(json!([])).await,
        ],
    );
    let agents = wait_until(&f, "/agents", 20, "the agent connected", |v| {
        v[0]["connected"] == true
    })
    .await;
    let agent_id = agents[0]["id"].as_str().expect("id").to_owned();
    let app = post(&f.client, &f.base, &f.cookie, "/apps", json!({"agent_id": agent_id, "name": "demo",
        "app_type": "process", "identifier": bin.display().to_string(), "restart_command": script.display().to_string()})).await;
    let app_id = app["id"].as_str().expect("id").to_owned();

    // Refused: no code, a wrong code, an API token (never TOTP).
    let r = restart(&f, &app_id, None, None).await;
    assert_eq!(r.status(), 403);
    assert_eq!(r.json::<Value>().await.expect("j")["code"], "totp_required");
    let r = restart(&f, &app_id, None, Some("000000".into())).await;
    assert_eq!(r.status(), 403);
    assert_eq!(r.json::<Value>().await.expect("j")["code"], "totp_invalid");
    let token: Value = f
        .client
        .post(format!("{}/api/v1/api-tokens", f.base))
        .header("cookie", &f.cookie)
        .json(&json!({"name": "ci", "scope": "write"}))
        .send()
        .await
        .expect("t")
        .json()
        .await
        .expect("j");
    let r = restart(
        &f,
        &app_id,
        Some(("bearer", token["token"].as_str().expect("t"))),
        Some("123456".into()),
    )
    .await;
    assert_eq!(r.status(), 403);
    assert!(!marker.exists(), "nothing ran");

    let now = fresh_totp_window().await;
    let code = trusthub_core::totp::code_at(&secret, now + 30);
    let r = restart(&f, &app_id, None, Some(code.clone())).await;
    assert_eq!(r.status(), 202);
    let d: Value = r.json().await.expect("json");
    assert_eq!(d["status"], "dispatched");
    let jti = d["jti"].as_str().expect("jti").to_owned();
    let action = wait_until(&f, &format!("/actions/{jti}"), 20, "the result", |v| {
        v["status"] != "dispatched"
    })
    .await;
    assert_eq!(action["status"], "succeeded", "{action}");
    assert_eq!(action["exit_code"], 0);
    assert_eq!(action["stdout"], "done\n");
    assert_eq!(action["act"], "restart_app");
    assert_eq!(
        std::fs::read_to_string(&marker).expect("marker"),
        "restarted\n"
    );
    // The same code again is a replay.
    let r = restart(&f, &app_id, None, Some(code)).await;
    assert_eq!(r.status(), 403);
    assert_eq!(
        std::fs::read_to_string(&marker).expect("marker"),
        "restarted\n"
    );

    // Audit and transparency log.
    let audit = get(&f.client, &f.base, &f.cookie, "/audit-log?limit=50").await;
    let kinds: Vec<&str> = audit
        .as_array()
        .expect("a")
        .iter()
        .filter_map(|e| e["event_type"].as_str())
        .collect();
    assert!(
        kinds.contains(&"action_requested") && kinds.contains(&"action_result"),
        "{kinds:?}"
    );
    let log = get(&f.client, &f.base, &f.cookie, "/transparency-log").await;
    assert_eq!(log.as_array().map(Vec::len), Some(1));
    assert_eq!(log[0]["kind"], "restart_app_result");
    assert_eq!(log[0]["payload"]["jti"], json!(jti));
    assert_eq!(log[0]["payload"]["exit_code"], 0);
    let head = get(&f.client, &f.base, &f.cookie, "/transparency-log/head").await;
    let pinned = get(&f.client, &f.base, &f.cookie, "/agents/eat-public-key").await;
    let entries: Vec<trusthub_core::canonical::LogEntry> =
        serde_json::from_value(log.clone()).expect("entries");
    trusthub_core::canonical::verify_log(
        &entries,
        head["seq"].as_i64().expect("seq"),
        head["entry_hash"].as_str().expect("h"),
        head["signature"].as_str().expect("s"),
        head["public_key_hex"].as_str().expect("k"),
    )
    .expect("the log verifies");
    assert_eq!(head["public_key_hex"], pinned["public_key_hex"]);

    // The hub restarts: the agent is connected again within seconds and restarts still work.
    let settings = f.settings.clone();
    f.hub.stop().await;
    let (hub, _) = start_hub(settings).await;
    f.hub = hub;
    // The session survives the restart (sessions live in the database).
    let started = std::time::Instant::now();
    wait_until(
        &f,
        &format!("/agents/{agent_id}"),
        15,
        "the agent reconnected",
        |v| v["connected"] == true,
    )
    .await;
    eprintln!("reconnected {:?} after the hub restart", started.elapsed());
    agent.stop();
    wait_until(
        &f,
        &format!("/agents/{agent_id}"),
        15,
        "the socket closed",
        |v| v["connected"] == false,
    )
    .await;
    f.hub.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_allowlist_vetoes_a_restart_and_the_refusal_is_reported() {
    let state = TempDir::new();
    let f = fixture().await;
    let secret = enrol_totp(&f).await;
    let agent = Agent::start(
        &state.0,
        &[
            "--hub",
            &f.base,
            "--enroll",
            &f.enrollment_token(json!([])).await,
            "--allow-actions",
            "install_package",
        ],
    );
    let agents = wait_until(&f, "/agents", 20, "the agent connected", |v| {
        v[0]["connected"] == true
    })
    .await;
    let app = post(
        &f.client,
        &f.base,
        &f.cookie,
        "/apps",
        json!({"agent_id": agents[0]["id"], "name": "cron",
        "app_type": "systemd", "identifier": "cron"}),
    )
    .await;
    let now = fresh_totp_window().await;
    let r = restart(
        &f,
        app["id"].as_str().expect("id"),
        None,
        Some(trusthub_core::totp::code_at(&secret, now + 30)),
    )
    .await;
    assert_eq!(r.status(), 202);
    let jti = r.json::<Value>().await.expect("j")["jti"]
        .as_str()
        .expect("jti")
        .to_owned();
    let action = wait_until(&f, &format!("/actions/{jti}"), 20, "the refusal", |v| {
        v["status"] != "dispatched"
    })
    .await;
    assert_eq!(action["status"], "failed");
    assert!(
        action["refused_reason"]
            .as_str()
            .is_some_and(|r| r.contains("allowlist")),
        "{action}"
    );
    assert!(action["exit_code"].is_null());
    let log = get(&f.client, &f.base, &f.cookie, "/transparency-log").await;
    assert_eq!(
        log[0]["payload"]["refused_reason"],
        action["refused_reason"]
    );
    agent.stop();
    f.hub.stop().await;
}

/// The dashboard's restart: an admin fills the reason and a TOTP code in the browser, the real
/// agent runs the app's restart command, and the action page shows the result when it
/// arrives, then the transparency log page shows the signed entry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_from_the_dashboard_asks_for_totp_and_shows_the_result_as_it_arrives() {
    let state = TempDir::new();
    let f = fixture().await;
    let Some(browser) = webdriver::Browser::start("agent-restart").await else {
        return;
    };
    let bin = state.0.join("demo-app");
    std::fs::copy("/bin/sleep", &bin).expect("copy sleep");
    let script = state.0.join("restart.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\nsleep 1\necho restarted from the dashboard\n",
    )
    .expect("script");
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let agent = Agent::start(
        &state.0,
        &[
            "--hub",
            &f.base,
            "--enroll",
            &f.enrollment_token(json!([])).await,
        ],
    );
    let agents = wait_until(&f, "/agents", 20, "the agent connected", |v| {
        v[0]["connected"] == true
    })
    .await;
    let agent_id = agents[0]["id"].as_str().expect("id").to_owned();
    let app = post(&f.client, &f.base, &f.cookie, "/apps", json!({"agent_id": agent_id, "name": "demo",
        "app_type": "process", "identifier": bin.display().to_string(), "restart_command": script.display().to_string()})).await;
    let app_id = app["id"].as_str().expect("id").to_owned();

    // Signed in before TOTP is on, the restart page says to set it up first.
    browser
        .sign_in(&f.base, "admin@trusthub.local", "agent test password")
        .await;
    browser.goto(&format!("{}/ui/apps", f.base)).await;
    browser
        .click(&format!("a[href='/ui/apps/{app_id}/restart']"))
        .await;
    browser.wait_text("Restarting needs TOTP").await;
    let now = fresh_totp_window().await;
    let secret = enrol_totp(&f).await;
    browser
        .goto(&format!("{}/ui/apps/{app_id}/restart", f.base))
        .await;
    browser
        .type_into("input[name=reason]", "stuck workers")
        .await;
    browser.type_into("input[name=code]", "000000").await;
    let restart_button = format!("form[action='/ui/apps/{app_id}/restart'] button");
    browser.click(&restart_button).await;
    browser.wait_text("TOTP code is wrong").await;
    assert_eq!(
        get(&f.client, &f.base, &f.cookie, "/actions").await,
        json!([]),
        "nothing signed"
    );
    browser
        .type_into(
            "input[name=code]",
            &trusthub_core::totp::code_at(&secret, now + 30),
        )
        .await;
    browser.click(&restart_button).await;
    // The action page: waiting, then the result without a reload.
    browser.find("#action-live").await;
    assert!(browser.current_url().await.contains("/ui/actions/"));
    browser.screenshot("dispatched").await;
    let page = browser.wait_text(">succeeded<").await;
    assert!(page.contains("restarted from the dashboard"), "{page}");
    browser.screenshot("succeeded").await;
    let actions = get(&f.client, &f.base, &f.cookie, "/actions").await;
    assert_eq!(actions[0]["status"], "succeeded", "{actions}");
    assert_eq!(actions[0]["reason"], "stuck workers");

    browser.goto(&format!("{}/ui/transparency", f.base)).await;
    let page = browser.wait_text("restart_app_result").await;
    let head = get(&f.client, &f.base, &f.cookie, "/transparency-log/head").await;
    assert!(
        page.contains(head["signature"].as_str().expect("sig")),
        "the signed head"
    );
    assert!(page.contains("trusthub transparency verify"));
    browser.screenshot("transparency").await;
    browser.assert_no_js_errors().await;
    drop(browser);
    agent.stop();
    f.hub.stop().await;
}

/// Imports a zip of OSV records over the API, as an operator would.
async fn import_osv(f: &Fixture, zip: Vec<u8>) {
    let r = f
        .client
        .post(format!("{}/api/v1/cve/sources/import", f.base))
        .header("cookie", &f.cookie)
        .header("content-type", "application/zip")
        .body(zip)
        .send()
        .await
        .expect("import");
    assert_eq!(r.status(), 200);
}

/// A zip of OSV records made by Python's zipfile (what `POST /cve/sources/import` takes).
fn osv_zip(dir: &Path, records: &[Value]) -> Vec<u8> {
    let src = dir.join("osv");
    std::fs::create_dir_all(src.join("npm")).expect("dir");
    for r in records {
        std::fs::write(
            src.join("npm")
                .join(format!("{}.json", r["id"].as_str().expect("id"))),
            serde_json::to_vec(r).expect("json"),
        )
        .expect("write");
    }
    let out = dir.join("osv.zip");
    let status = Command::new("python3")
        .args(["-m", "zipfile", "-c"])
        .arg(&out)
        .arg(src.join("npm"))
        .status()
        .expect("python3 zipfile");
    assert!(status.success());
    std::fs::read(out).expect("zip")
}

/// A hub scanning every second, with the lodash advisory (fixed in 4.17.21) imported.
async fn hub_with_the_lodash_advisory(dir: &Path) -> Fixture {
    let f = fixture_with(|s| {
        s.sections
            .edit(|v: &mut trusthub_hub::sections::Vulns| v.cve_scan_check_secs = 1)
    })
    .await;
    let zip = osv_zip(
        dir,
        &[
            json!({"id": "GHSA-35jh-r3h4-6jhm", "modified": "2024-01-01T00:00:00Z",
            "aliases": ["CVE-2021-23337"], "summary": "Command injection in lodash",
            "severity": [{"type": "CVSS_V3", "score": "CVSS:3.1/AV:N/AC:L/PR:H/UI:N/S:U/C:H/I:H/A:H"}],
            "affected": [{"package": {"ecosystem": "npm", "name": "lodash"},
                "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "4.17.21"}]}]}]}),
        ],
    );
    import_osv(&f, zip).await;
    f
}

/// Waits for the lodash finding and returns it.
async fn lodash_finding(f: &Fixture) -> Value {
    let page = wait_until(f, "/inventory/cves", 60, "the lodash finding", |p| {
        p["items"]
            .as_array()
            .is_some_and(|i| i.iter().any(|x| x["package"] == "lodash"))
    })
    .await;
    page["items"]
        .as_array()
        .and_then(|i| i.iter().find(|x| x["package"] == "lodash").cloned())
        .expect("lodash")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_reports_a_lockfile_whose_dependency_is_vulnerable_and_the_upgrade_fixes_it() {
    let state = TempDir::new();
    let project = TempDir::new();
    let lock = |lodash: &str| {
        json!({"name": "web", "lockfileVersion": 3, "packages": {
            "": {"name": "web", "dependencies": {"lodash": "^4.17.0"}},
            "node_modules/lodash": {"version": lodash},
            "node_modules/left-pad": {"version": "1.3.0"},
        }})
    };
    std::fs::write(
        project.0.join("package-lock.json"),
        serde_json::to_vec(&lock("4.17.20")).expect("json"),
    )
    .expect("lockfile");
    // Scans checked every second (the schedule is the product's; only its period is short).
    let f = hub_with_the_lodash_advisory(&state.0).await;
    let token = f.enrollment_token(json!([])).await;
    let project_path = project.0.display().to_string();
    let agent = Agent::start(
        &state.0,
        &[
            "--hub",
            &f.base,
            "--enroll",
            &token,
            "--project-path",
            &project_path,
            "--inventory-interval-secs",
            "1",
        ],
    );
    let finding = lodash_finding(&f).await;
    assert_eq!(finding["vuln_id"], "GHSA-35jh-r3h4-6jhm");
    assert_eq!(finding["installed_version"], "4.17.20");
    assert_eq!(finding["project_path"], project_path.as_str());
    assert_eq!(finding["fixed_versions"], json!(["4.17.21"]));
    assert_eq!(finding["status"], "open");
    assert_eq!(finding["severity"], "HIGH");
    // The alert of the scan, and the SARIF location is the lockfile the agent read.
    let alerts = get(&f.client, &f.base, &f.cookie, "/alerts").await;
    assert!(
        alerts
            .as_array()
            .is_some_and(|a| a.iter().any(|x| x["source"] == "cve")),
        "{alerts}"
    );
    let sarif = get(
        &f.client,
        &f.base,
        &f.cookie,
        "/inventory/cves/export.sarif",
    )
    .await;
    assert_eq!(
        sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        format!("file://{project_path}/package-lock.json")
    );
    // The upgrade on the host: the next inventory moves past the fix and the finding is fixed.
    std::fs::write(
        project.0.join("package-lock.json"),
        serde_json::to_vec(&lock("4.17.21")).expect("json"),
    )
    .expect("lockfile");
    let id = finding["id"].as_str().expect("id").to_owned();
    let page = wait_until(
        &f,
        "/inventory/cves?status=fixed",
        60,
        "the finding fixed",
        |p| {
            p["items"]
                .as_array()
                .is_some_and(|i| i.iter().any(|x| x["id"] == id.as_str()))
        },
    )
    .await;
    assert!(page["items"][0]["fixed_at"].is_string(), "{page}");
    agent.stop();
    f.hub.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_app_killed_for_a_while_spends_its_slo_budget_in_the_status_and_the_csv() {
    let state = TempDir::new();
    let f = fixture_with(|s| {
        s.sections
            .edit(|v: &mut trusthub_hub::sections::Monitors| v.liveness_interval_secs = 1)
    })
    .await;
    let bin = state.0.join("slo-app");
    std::fs::copy("/bin/sleep", &bin).expect("copy sleep");
    let start_app = || Command::new(&bin).arg("600").spawn().expect("app runs");
    let mut proc_ = start_app();
    let agent = Agent::start(
        &state.0,
        &[
            "--hub",
            &f.base,
            "--enroll",
            &f.enrollment_token(json!([])).await,
        ],
    );
    let agents = wait_until(&f, "/agents", 20, "the agent", |v| {
        v[0]["last_seen_at"].is_string()
    })
    .await;
    let agent_id = agents[0]["id"].as_str().expect("id").to_owned();
    let app = post(
        &f.client,
        &f.base,
        &f.cookie,
        "/apps",
        json!({"agent_id": agent_id, "name": "slo demo", "app_type": "process",
            "identifier": bin.display().to_string()}),
    )
    .await;
    let id = app["id"].as_str().expect("id").to_owned();
    // A one-day window; a fresh app has only seconds of data, so no coverage guard.
    post(
        &f.client,
        &f.base,
        &f.cookie,
        &format!("/apps/{id}/slo"),
        json!({"target": 0.99, "window_days": 1, "minimum_data": 0}),
    )
    .await;
    let slo = format!("/apps/{id}/slo");
    wait_until(&f, &slo, 30, "observed minutes", |v| {
        v["minutes_observed"].as_f64().is_some_and(|m| m > 0.03)
    })
    .await;
    // Down for a while: at least 5 seconds of verdicts that differ.
    proc_.kill().expect("kill the app");
    proc_.wait().expect("reap");
    let down = wait_until(&f, &slo, 60, "downtime counted", |v| {
        v["minutes_down"].as_f64().is_some_and(|m| m >= 5.0 / 60.0)
    })
    .await;
    assert_eq!(down["state"], "burning", "{down}");
    let mut proc_ = start_app();
    wait_until(&f, &format!("/apps/{id}"), 30, "running again", |v| {
        v["observed_state"] == "running"
    })
    .await;
    let s = get(&f.client, &f.base, &f.cookie, &slo).await;
    let minutes_down = s["minutes_down"].as_f64().expect("minutes_down");
    let total = s["budget_total_minutes"].as_f64().expect("total");
    assert!((total - 14.4).abs() < 1e-9, "1 % of a day: {s}");
    let remaining = s["budget_remaining_minutes"].as_f64().expect("remaining");
    assert!((remaining - (total - minutes_down)).abs() < 1e-6, "{s}");
    assert!(
        s["uptime_percent"].as_f64().is_some_and(|u| u < 100.0),
        "{s}"
    );
    assert!(s["burn_rate_1h"].as_f64().is_some_and(|b| b > 1.0), "{s}");
    // The CSV's row of today has the downtime.
    let csv = f
        .client
        .get(format!("{}/api/v1/apps/{id}/slo/history?days=1", f.base))
        .header("cookie", &f.cookie)
        .send()
        .await
        .expect("csv")
        .text()
        .await
        .expect("text");
    let row = csv.split("\r\n").nth(1).expect("today's row");
    let cols: Vec<&str> = row.split(',').collect();
    let today = time::OffsetDateTime::now_utc().date().to_string();
    assert_eq!(cols[0], today, "{csv}");
    assert!(
        cols[2].parse::<f64>().is_ok_and(|m| m >= 5.0 / 60.0),
        "{csv}"
    );
    let _ = proc_.kill();
    let _ = proc_.wait();
    agent.stop();
    f.hub.stop().await;
}

/// Auto-patch end to end (CONTRACT 19): a real agent on a package root of its own with two
/// vulnerable packages, advisory data imported, auto-patch turned on with TOTP; the hub's
/// worker scans, plans and sends signed `install_package` actions; apt upgrades one, the
/// other's postinst fails and the agent restores it; the attempts, alerts and the
/// attestation chain say so, and every entry's hash recomputes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_patch_upgrades_a_vulnerable_package_rolls_back_a_broken_one_and_attests_both() {
    use apt_rig::*;
    let rig = rig();
    package(&rig, "demo", "1.0-1", None, None);
    package(&rig, "demo", "1.1-1", None, None);
    package(&rig, "broken", "1.0", None, None);
    package(&rig, "broken", "2.0", Some(1), None);
    index(&rig);
    apt_get(&rig, &["update", "-q"]);
    apt_get(&rig, &["install", "-y", "-q", "demo=1.0-1", "broken=1.0"]);
    let f = fixture_with(|s| {
        s.sections
            .edit(|v: &mut trusthub_hub::sections::Vulns| v.cve_scan_check_secs = 1);
        s.sections
            .edit(|v: &mut trusthub_hub::sections::Autopatch| {
                v.autopatch_warmup_secs = 1;
                v.autopatch_cycle_secs = 1;
                v.autopatch_min_gap_secs = 1;
            });
    })
    .await;
    // Advisories for both, in this host's distribution release.
    let release = std::fs::read_to_string("/etc/os-release").expect("os-release");
    let version_id = release
        .lines()
        .find_map(|l| l.strip_prefix("VERSION_ID="))
        .expect("VERSION_ID")
        .trim_matches('"')
        .to_owned();
    let ecosystem = format!("Debian:{version_id}");
    let high =
        json!([{"type": "CVSS_V3", "score": "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:N/A:N"}]);
    let record = |id: &str, name: &str, fixed: &str| {
        json!({"id": id, "modified": "2026-01-01T00:00:00Z", "severity": high, "summary": format!("{name}: test"),
            "affected": [{"package": {"ecosystem": ecosystem, "name": name},
                "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": fixed}]}]}]})
    };
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for r in [
        record("DSA-9101-1", "demo", "1.0-2"),
        record("DSA-9102-1", "broken", "2.0"),
    ] {
        zip.start_file(
            format!("{}.json", r["id"].as_str().expect("id")),
            zip::write::SimpleFileOptions::default(),
        )
        .expect("entry");
        std::io::Write::write_all(&mut zip, r.to_string().as_bytes()).expect("write");
    }
    let zipped = zip.finish().expect("zip").into_inner();
    import_osv(&f, zipped).await;

    let state = TempDir::new();
    let _agent = Agent::start_with_env(
        &state.0,
        &[
            "--hub",
            &f.base,
            "--enroll",
            &f.enrollment_token(json!([])).await,
            "--inventory-interval-secs",
            "2",
        ],
        &envs(&rig),
    );
    let agents = wait_until(&f, "/agents", 20, "the agent connected", |v| {
        v[0]["connected"] == true
    })
    .await;
    let agent_id = agents[0]["id"].as_str().expect("id").to_owned();
    let found = wait_until(&f, "/inventory/cves", 30, "both findings", |v| {
        v["items"].as_array().is_some_and(|i| i.len() == 2)
    })
    .await;
    assert!(
        found["items"]
            .as_array()
            .expect("items")
            .iter()
            .all(|i| i["agent_id"] == agent_id.as_str()),
        "{found}"
    );

    // Auto-patch on for OS packages, with TOTP.
    let secret = enrol_totp(&f).await;
    let now = fresh_totp_window().await;
    let r = f
        .client
        .patch(format!("{}/api/v1/agents/{agent_id}/auto-patch", f.base))
        .header("cookie", &f.cookie)
        .header(
            "x-totp-code",
            trusthub_core::totp::code_at(&secret, now + 30),
        )
        .json(&json!({"os_packages": true}))
        .send()
        .await
        .expect("patch");
    assert_eq!(r.status(), 200);

    let runs = wait_until(
        &f,
        &format!("/agents/{agent_id}/auto-patch/runs"),
        90,
        "both attempts answered",
        |v| {
            v.as_array()
                .is_some_and(|a| a.len() == 2 && a.iter().all(|x| x["status"] != "proposed"))
        },
    )
    .await;
    let by_package = |name: &str| {
        runs.as_array()
            .expect("runs")
            .iter()
            .find(|a| a["packages"][0]["name"] == name)
            .cloned()
            .expect("attempt")
    };
    let demo = by_package("demo");
    assert_eq!(demo["status"], "applied", "{runs}");
    assert_eq!(demo["exit_code"], 0);
    assert_eq!(demo["category"], "os_packages");
    assert_eq!(demo["manager"], "apt");
    assert_eq!(
        demo["packages"],
        json!([{"name": "demo", "from": "1.0-1", "to": "1.0-2", "vuln_ids": ["DSA-9101-1"]}])
    );
    let broken = by_package("broken");
    assert_eq!(broken["status"], "rolled_back", "{runs}");
    assert_ne!(broken["exit_code"], 0);
    assert!(
        broken["note"]
            .as_str()
            .is_some_and(|n| n.starts_with("rolled back:")),
        "{broken}"
    );
    // On the host: demo is at the distribution's candidate; broken is as it was.
    assert_eq!(installed_file(&rig, "demo"), "1.1-1");
    assert_eq!(installed_file(&rig, "broken"), "1.0");
    let db = database(&rig);
    assert!(
        db.contains("demo 1.1-1 ii") && db.contains("broken 1.0 ii"),
        "{db}"
    );

    // Alerts: one info per package sent, one warning for the rollback.
    let alerts = get(&f.client, &f.base, &f.cookie, "/alerts").await;
    let titles: Vec<(String, String)> = alerts
        .as_array()
        .expect("alerts")
        .iter()
        .filter(|a| a["source"] == "auto_patch")
        .map(|a| {
            (
                a["severity"].as_str().unwrap_or_default().to_owned(),
                a["title"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert!(
        titles.contains(&("info".into(), "Auto-patch dispatched: demo -> 1.0-2".into())),
        "{titles:?}"
    );
    assert!(
        titles.contains(&("info".into(), "Auto-patch dispatched: broken -> 2.0".into())),
        "{titles:?}"
    );
    assert!(
        titles.contains(&("warning".into(), "Auto-patch rolled back".into())),
        "{titles:?}"
    );

    // The chain: the flag, both proposals, each with its result.
    let chains = get(
        &f.client,
        &f.base,
        &f.cookie,
        &format!("/attestations?agent_id={agent_id}"),
    )
    .await;
    assert_eq!(chains.as_array().map(Vec::len), Some(1), "{chains}");
    let chain = &chains[0];
    assert_eq!(chain["flag_set"]["kind"], "remediation.auto_flag_set");
    assert_eq!(chain["flag_set"]["payload"]["turned_on"], true);
    let attempts = chain["attempts"].as_array().expect("attempts");
    assert_eq!(attempts.len(), 2, "{chain}");
    for a in attempts {
        let p = &a["proposed"]["payload"];
        assert_eq!(p["flag_set_at"], chain["flag_set"]["created_at"]);
        assert_eq!(p["severity"], "HIGH");
        let result = &a["result"];
        assert_eq!(result["payload"]["eat_nonce"], p["eat_nonce"]);
        let expected = if p["package"] == "demo" {
            "remediation.auto_applied"
        } else {
            "remediation.auto_rolled_back"
        };
        assert_eq!(result["kind"], expected, "{a}");
    }
    // Every entry's hash recomputes, and the whole log verifies against the signed head.
    for e in attempts
        .iter()
        .flat_map(|a| [a["proposed"].clone(), a["result"].clone()])
        .chain([chain["flag_set"].clone()])
    {
        let entry: trusthub_core::canonical::LogEntry =
            serde_json::from_value(e.clone()).expect("entry");
        assert_eq!(
            trusthub_core::canonical::entry_hash(
                entry.seq,
                &entry.kind,
                &entry.subject_ref,
                &entry.payload,
                &entry.prev_hash,
                &entry.created_at
            ),
            entry.entry_hash
        );
    }
    let log = get(
        &f.client,
        &f.base,
        &f.cookie,
        "/transparency-log?limit=1000",
    )
    .await;
    let head = get(&f.client, &f.base, &f.cookie, "/transparency-log/head").await;
    let entries: Vec<trusthub_core::canonical::LogEntry> =
        serde_json::from_value(log).expect("entries");
    trusthub_core::canonical::verify_log(
        &entries,
        head["seq"].as_i64().expect("seq"),
        head["entry_hash"].as_str().expect("h"),
        head["signature"].as_str().expect("s"),
        head["public_key_hex"].as_str().expect("k"),
    )
    .expect("the log verifies");

    // The rolled-back target is not sent again while its advisories stay the same.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let again = get(
        &f.client,
        &f.base,
        &f.cookie,
        &format!("/agents/{agent_id}/auto-patch/runs"),
    )
    .await;
    assert_eq!(again.as_array().map(Vec::len), Some(2), "{again}");
    f.hub.stop().await;
}

/// Emergency actions end to end (CONTRACT 19): a runaway process on this host killed through
/// a TOTP-gated signed action, and an action the host's own allowlist forbids refused by the
/// agent, both reported back and recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_emergency_kills_a_process_and_the_host_refuses_what_its_allowlist_forbids() {
    let state = TempDir::new();
    let f = fixture().await;
    std::fs::create_dir_all(&state.0).expect("state");
    std::fs::write(
        state.0.join("actions.toml"),
        "allow = [\"emergency\"]\nemergency_actions = [\"kill_process\"]\n",
    )
    .expect("actions.toml");
    let mut runaway = Command::new("sleep").arg("300").spawn().expect("sleep");
    let _agent = Agent::start(
        &state.0,
        &[
            "--hub",
            &f.base,
            "--enroll",
            &f.enrollment_token(json!([])).await,
            "--allow-actions",
            "emergency",
        ],
    );
    let agents = wait_until(&f, "/agents", 20, "the agent connected", |v| {
        v[0]["connected"] == true
    })
    .await;
    let agent_id = agents[0]["id"].as_str().expect("id").to_owned();
    let enrolled = time::OffsetDateTime::now_utc().unix_timestamp();
    let secret = enrol_totp(&f).await;
    let now = fresh_totp_window().await;
    let send = |body: Value, code: String| {
        let f = &f;
        let agent_id = agent_id.clone();
        async move {
            f.client
                .post(format!("{}/api/v1/agents/{agent_id}/emergency", f.base))
                .header("cookie", &f.cookie)
                .header("x-totp-code", code)
                .json(&body)
                .send()
                .await
                .expect("emergency")
        }
    };
    let r = send(
        json!({"action": "kill_process", "target": runaway.id().to_string(), "reason": "runaway job"}),
        trusthub_core::totp::code_at(&secret, now + 30),
    )
    .await;
    assert_eq!(r.status(), 202);
    let jti = r.json::<Value>().await.expect("json")["jti"]
        .as_str()
        .expect("jti")
        .to_owned();
    let action = wait_until(&f, &format!("/actions/{jti}"), 20, "the result", |v| {
        v["status"] != "dispatched"
    })
    .await;
    assert_eq!(action["status"], "succeeded", "{action}");
    assert_eq!(action["act"], "emergency");
    assert!(
        action["stdout"]
            .as_str()
            .is_some_and(|o| o.contains("ended after SIGTERM")),
        "{action}"
    );
    let status = runaway.wait().expect("wait");
    assert!(!status.success(), "the process was killed: {status:?}");
    // block_ip is not on this host's emergency_actions: the agent refuses it.
    // A step whose code is valid now and was not spent (the kill may have run past the
    // step's end on a busy machine).
    // When all three acceptable steps are spent (verify crossed a step boundary and the kill
    // ran into the next one), the next step boundary brings a fresh one.
    let spent = [enrolled / 30, (enrolled + 2) / 30, now / 30 + 1];
    let step = unspent_totp_step(&spent).await;
    let r = send(
        json!({"action": "block_ip", "target": "203.0.113.7", "reason": "scanner"}),
        trusthub_core::totp::code_at(&secret, step * 30),
    )
    .await;
    assert_eq!(r.status(), 202);
    let jti = r.json::<Value>().await.expect("json")["jti"]
        .as_str()
        .expect("jti")
        .to_owned();
    let action = wait_until(&f, &format!("/actions/{jti}"), 20, "the result", |v| {
        v["status"] != "dispatched"
    })
    .await;
    assert_eq!(action["status"], "failed", "{action}");
    assert!(
        action["stderr"]
            .as_str()
            .is_some_and(|o| o.contains("not on this host's emergency_actions")),
        "{action}"
    );
    let log = get(&f.client, &f.base, &f.cookie, "/transparency-log").await;
    let kinds: Vec<&str> = log
        .as_array()
        .expect("log")
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect();
    assert_eq!(kinds, vec!["emergency_result", "emergency_result"]);
}

/// Auto-update-all end to end (CONTRACT 19): a real agent watching an npm project whose
/// transitive dependency is vulnerable; an admin's TOTP-gated request sends one signed
/// `update_packages` action, the agent forces the fixed version with `overrides` against a
/// local verdaccio, verifies the tree and reports; the attempt is applied, the chain starts at
/// the request and every hash recomputes, and the next inventory shows the finding fixed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_update_all_updates_a_live_agents_npm_project_and_attests_it() {
    let registry_dir = TempDir::new();
    let reg = npm_rig::verdaccio(&registry_dir.0);
    let pkgs = registry_dir.0.join("packages");
    npm_rig::publish(&reg, &pkgs, "th-c", "1.0.1", "");
    npm_rig::publish(&reg, &pkgs, "th-c", "1.0.2", "");
    npm_rig::publish(
        &reg,
        &pkgs,
        "th-a",
        "1.0.0",
        r#","dependencies":{"th-c":"^1.0.0"}"#,
    );
    let project = TempDir::new();
    std::fs::write(
        project.0.join("package.json"),
        "{\n  \"name\": \"web\",\n  \"version\": \"1.0.0\",\n  \"dependencies\": {\n    \"th-a\": \"1.0.0\"\n  }\n}\n",
    )
    .expect("manifest");
    std::fs::write(project.0.join(".npmrc"), format!("registry={}\n", reg.url)).expect("npmrc");
    // th-c 1.0.2 is published, so a fresh install would take it; pin 1.0.1 as the lockfile had.
    let out = Command::new("npm")
        .args([
            "install",
            "--no-audit",
            "--no-fund",
            "th-c@1.0.1",
            "--no-save",
        ])
        .current_dir(&project.0)
        .output()
        .expect("npm");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund"])
        .current_dir(&project.0)
        .output()
        .expect("npm");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lock_c = || {
        let lock: Value = serde_json::from_slice(
            &std::fs::read(project.0.join("package-lock.json")).expect("lock"),
        )
        .expect("json");
        lock["packages"]["node_modules/th-c"]["version"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(lock_c(), "1.0.1");

    let f = fixture_with(|s| {
        s.sections
            .edit(|v: &mut trusthub_hub::sections::Vulns| v.cve_scan_check_secs = 1)
    })
    .await;
    let state = TempDir::new();
    let zip = osv_zip(
        &state.0,
        &[
            json!({"id": "GHSA-th-c-0001", "modified": "2026-01-01T00:00:00Z",
            "summary": "th-c: test advisory",
            "affected": [{"package": {"ecosystem": "npm", "name": "th-c"},
                "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "1.0.2"}]}]}]}),
        ],
    );
    import_osv(&f, zip).await;
    let project_path = project.0.display().to_string();
    let agent = Agent::start(
        &state.0,
        &[
            "--hub",
            &f.base,
            "--enroll",
            &f.enrollment_token(json!([])).await,
            "--project-path",
            &project_path,
            "--inventory-interval-secs",
            "2",
            "--allow-actions",
            "update_packages",
        ],
    );
    wait_until(&f, "/agents", 20, "the agent connected", |v| {
        v[0]["connected"] == true
    })
    .await;
    let page = wait_until(&f, "/inventory/cves", 60, "the th-c finding", |p| {
        p["items"]
            .as_array()
            .is_some_and(|i| i.iter().any(|x| x["package"] == "th-c"))
    })
    .await;
    let finding = page["items"][0].clone();
    let agent_id = finding["agent_id"].as_str().expect("agent").to_owned();

    // The plan, then the request with a TOTP code.
    let plan: Value = f
        .client
        .post(format!("{}/api/v1/cve/auto-update-all", f.base))
        .header("cookie", &f.cookie)
        .json(&json!({"dry_run": true}))
        .send()
        .await
        .expect("plan")
        .json()
        .await
        .expect("json");
    assert_eq!(
        plan["dispatched"][0]["packages"],
        json!([{"name": "th-c", "from": "1.0.1", "to": "1.0.2", "vuln_ids": ["GHSA-th-c-0001"]}]),
        "{plan}"
    );
    let secret = enrol_totp(&f).await;
    let now = fresh_totp_window().await;
    let r = f
        .client
        .post(format!("{}/api/v1/cve/auto-update-all", f.base))
        .header("cookie", &f.cookie)
        .header(
            "x-totp-code",
            trusthub_core::totp::code_at(&secret, now + 30),
        )
        .json(&json!({"ecosystems": ["npm"]}))
        .send()
        .await
        .expect("update all");
    assert_eq!(r.status(), 202);
    let sent: Value = r.json().await.expect("json");
    let nonce = sent["dispatched"][0]["eat_nonce"]
        .as_str()
        .expect("sent")
        .to_owned();
    assert_eq!(sent["dispatched"][0]["project_path"], project_path.as_str());

    let runs = wait_until(
        &f,
        &format!("/agents/{agent_id}/auto-patch/runs"),
        120,
        "the attempt answered",
        |v| v[0]["status"] != "proposed" && v[0]["status"].is_string(),
    )
    .await;
    assert_eq!(runs[0]["status"], "applied", "{runs}");
    assert_eq!(runs[0]["eat_nonce"], nonce.as_str());
    assert_eq!(runs[0]["category"], "app_deps");
    // On the host: the lockfile and the manifest moved, the tree is consistent.
    assert_eq!(lock_c(), "1.0.2");
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(project.0.join("package.json")).expect("read"))
            .expect("json");
    assert_eq!(manifest["overrides"]["th-c"], "1.0.2");
    let ls = Command::new("npm")
        .args(["ls", "--all"])
        .current_dir(&project.0)
        .output()
        .expect("npm ls");
    assert!(
        ls.status.success(),
        "{}",
        String::from_utf8_lossy(&ls.stdout)
    );

    // The chain: the request heads it, the proposal links to it, the result to the proposal.
    let chains = get(
        &f.client,
        &f.base,
        &f.cookie,
        &format!("/attestations?agent_id={agent_id}"),
    )
    .await;
    let chain = &chains[0];
    assert_eq!(
        chain["flag_set"]["kind"], "remediation.auto_update_all",
        "{chains}"
    );
    let attempt = &chain["attempts"][0];
    assert_eq!(attempt["proposed"]["payload"]["eat_nonce"], nonce.as_str());
    assert_eq!(attempt["proposed"]["payload"]["trigger"], "auto_update_all");
    assert_eq!(
        attempt["proposed"]["payload"]["flag_set_seq"],
        chain["flag_set"]["seq"]
    );
    assert_eq!(attempt["result"]["kind"], "remediation.auto_applied");
    for e in [
        chain["flag_set"].clone(),
        attempt["proposed"].clone(),
        attempt["result"].clone(),
    ] {
        let entry: trusthub_core::canonical::LogEntry = serde_json::from_value(e).expect("entry");
        assert_eq!(
            trusthub_core::canonical::entry_hash(
                entry.seq,
                &entry.kind,
                &entry.subject_ref,
                &entry.payload,
                &entry.prev_hash,
                &entry.created_at
            ),
            entry.entry_hash
        );
    }
    // The next inventory reads the new lockfile: the finding is fixed.
    let id = finding["id"].as_str().expect("id").to_owned();
    wait_until(
        &f,
        "/inventory/cves?status=fixed",
        60,
        "the finding fixed",
        |p| {
            p["items"]
                .as_array()
                .is_some_and(|i| i.iter().any(|x| x["id"] == id.as_str()))
        },
    )
    .await;
    agent.stop();
    f.hub.stop().await;
}

/// Configuration drift with the real agent (CONTRACT 20): governance names a glob, the agent
/// reports the files with their dpkg facts, an upgrade of the owning package is explained,
/// a change by hand is seen by inotify at once and alerts, and a rebase adopts it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_drift_is_explained_by_a_package_upgrade_and_a_change_by_hand_alerts_at_once() {
    let state = TempDir::new();
    let files = TempDir::new();
    let rig = dpkg_rig::DpkgRig::new(&files.0);
    let conf = files.0.join("etc/thapp/app.conf");
    let v1 = rig.build("thapp", "1.0-1", &[(&conf, "port = 80\n")], true);
    let v2 = rig.build("thapp", "1.1-1", &[(&conf, "port = 8080\n")], true);
    rig.install(&v1);
    let f = fixture().await;
    let token = f.enrollment_token(json!([])).await;
    let admindir = rig.admindir.display().to_string();
    let _agent = Agent::start(
        &state.0,
        &[
            "--hub",
            &f.base,
            "--enroll",
            &token,
            "--dpkg-admindir",
            &admindir,
        ],
    );
    let agents = wait_until(&f, "/agents", 30, "the agent", |v| {
        v.as_array().is_some_and(|a| !a.is_empty())
    })
    .await;
    let id = agents[0]["id"].as_str().expect("id").to_owned();
    let glob = format!("{}/etc/thapp/*", files.0.display());
    let r = f
        .client
        .put(format!("{}/api/v1/agents/{id}/governance", f.base))
        .header("cookie", &f.cookie)
        .json(
            &json!({"ingest_interval_secs": 60, "inventory_interval_secs": 3600, "tags": [],
            "allowed_actions": [], "config_paths": [glob], "config_scan_interval_secs": 3600}),
        )
        .send()
        .await
        .expect("governance");
    assert_eq!(r.status(), 200);
    let path = format!("/agents/{id}/config-hashes");
    let conf_s = conf.display().to_string();
    let row = |v: &Value| -> Option<Value> {
        v.as_array()?
            .iter()
            .find(|r| r["path"] == conf_s.as_str())
            .cloned()
    };
    let base = wait_until(&f, &path, 30, "the first scan", |v| row(v).is_some()).await;
    let b = row(&base).expect("row");
    assert_eq!(b["status"], "ok");
    assert_eq!(b["baseline"]["package"], "thapp");
    assert_eq!(b["baseline"]["package_version"], "1.0-1");
    let sha = Command::new("sha256sum")
        .arg(&conf)
        .output()
        .expect("sha256sum");
    let sha = String::from_utf8_lossy(&sha.stdout);
    assert_eq!(
        b["baseline"]["sha256"],
        sha.split_whitespace().next().unwrap_or_default()
    );

    // The package upgrade: inotify wakes a scan (the schedule says an hour); explained.
    rig.install(&v2);
    let up = wait_until(&f, &path, 30, "the upgrade explained", |v| {
        row(v).is_some_and(|r| r["explained_by"]["to_version"] == "1.1-1")
    })
    .await;
    let u = row(&up).expect("row");
    assert_eq!(u["status"], "drifted");
    assert_eq!(u["explained_by"]["from_version"], "1.0-1");
    let alerts = get(&f.client, &f.base, &f.cookie, "/alerts?is_resolved=false").await;
    assert!(
        !alerts.to_string().contains("\"source\":\"drift\""),
        "an explained drift raises no alert: {alerts}"
    );

    // A change by hand: unexplained, and an alert.
    std::fs::write(&conf, "port = 8080\nbind = 0.0.0.0\n").expect("edit");
    let hand = wait_until(&f, &path, 30, "the change by hand", |v| {
        row(v).is_some_and(|r| {
            r["explained_by"].is_null() && r["current"]["package_verified"] == false
        })
    })
    .await;
    assert_eq!(row(&hand).expect("row")["status"], "drifted");
    let alerts = wait_until(
        &f,
        "/alerts?is_resolved=false",
        10,
        "the drift alert",
        |v| v.to_string().contains("\"source\":\"drift\""),
    )
    .await;
    assert!(alerts.to_string().contains("app.conf"), "{alerts}");

    // The rebase adopts it; the alert resolves.
    let r = f
        .client
        .post(format!(
            "{}/api/v1/agents/{id}/config-hashes/rebase",
            f.base
        ))
        .header("cookie", &f.cookie)
        .json(&json!({"paths": [conf_s], "reason": "bind on all interfaces, change 7"}))
        .send()
        .await
        .expect("rebase");
    assert_eq!(r.status(), 200);
    let after = get(&f.client, &f.base, &f.cookie, &path).await;
    assert_eq!(row(&after).expect("row")["status"], "ok");
    let alerts = get(&f.client, &f.base, &f.cookie, "/alerts?is_resolved=false").await;
    assert!(
        !alerts.to_string().contains("\"source\":\"drift\""),
        "{alerts}"
    );
}

/// A console's WebSocket from the test, as a browser of the hub would open it.
struct Term {
    ws: tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>,
    seen: String,
}

impl Term {
    async fn open(f: &Fixture, ws_url: &str) -> Term {
        use tokio_tungstenite::tungstenite::client::IntoClientRequest;
        let mut req = ws_url.into_client_request().expect("request");
        req.headers_mut()
            .insert("cookie", f.cookie.parse().expect("cookie"));
        req.headers_mut()
            .insert("origin", f.base.parse().expect("origin"));
        let addr = f.base.trim_start_matches("http://").to_owned();
        let tcp = tokio::net::TcpStream::connect(addr).await.expect("tcp");
        let (ws, _) = tokio_tungstenite::client_async(req, tcp)
            .await
            .expect("the console socket opens");
        Term {
            ws,
            seen: String::new(),
        }
    }

    async fn send(&mut self, v: Value) {
        use futures_util::SinkExt;
        self.ws
            .send(tokio_tungstenite::tungstenite::Message::Text(
                v.to_string().into(),
            ))
            .await
            .expect("send");
    }

    async fn type_line(&mut self, line: &str) {
        self.send(json!({"type": "input", "data": format!("{line}\n")}))
            .await;
    }

    /// Reads output until `want` shows (panics after 20 s); `Some(code)` when the session
    /// exited first.
    async fn until(&mut self, want: &str) -> Option<Option<i64>> {
        self.until_fn(want, |s| s.contains(want)).await
    }

    async fn until_fn(&mut self, want: &str, done: impl Fn(&str) -> bool) -> Option<Option<i64>> {
        use futures_util::StreamExt;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while !done(&self.seen) {
            let msg = tokio::time::timeout_at(deadline, self.ws.next())
                .await
                .unwrap_or_else(|_| {
                    panic!("`{want}` never came; the terminal shows: {}", self.seen)
                });
            let Some(Ok(tokio_tungstenite::tungstenite::Message::Text(t))) = msg else {
                return Some(None);
            };
            let v: Value = serde_json::from_str(t.as_str()).expect("json frame");
            match v["type"].as_str() {
                Some("output") => self.seen.push_str(v["data"].as_str().unwrap_or_default()),
                Some("exit") => return Some(v["code"].as_i64()),
                _ => {}
            }
        }
        None
    }
}

async fn console_start(f: &Fixture, agent: &str, code: String) -> reqwest::Response {
    f.client
        .post(format!("{}/api/v1/agents/{agent}/console/start", f.base))
        .header("cookie", &f.cookie)
        .header("x-totp-code", code)
        .json(&json!({"reason": "disk full on /var", "cols": 80, "rows": 24}))
        .send()
        .await
        .expect("start")
}

/// Checks an asciicast v2 file line by line: the header's keys, non-decreasing times, event
/// codes; answers the events.
fn check_cast(cast: &str) -> Vec<Value> {
    let mut lines = cast.lines();
    let header: Value = serde_json::from_str(lines.next().expect("header")).expect("header json");
    assert_eq!(header["version"], 2, "{header}");
    for k in ["width", "height", "timestamp"] {
        assert!(header[k].as_i64().is_some(), "{k} in {header}");
    }
    assert!(
        header["title"]
            .as_str()
            .is_some_and(|t| t.contains(": disk full on /var")),
        "{header}"
    );
    assert_eq!(header["env"]["TERM"], "xterm-256color");
    assert!(
        header["env"]["SHELL"]
            .as_str()
            .is_some_and(|s| s.starts_with('/')),
        "{header}"
    );
    let mut last = 0.0;
    let mut events = Vec::new();
    for l in lines {
        let e: Value = serde_json::from_str(l).expect("event json");
        let t = e[0].as_f64().expect("time");
        assert!(t >= last, "times go forward: {l}");
        last = t;
        assert!(
            ["o", "r", "i"].contains(&e[1].as_str().unwrap_or_default()),
            "{l}"
        );
        assert!(e[2].is_string(), "{l}");
        events.push(e);
    }
    events
}

/// CONTRACT 30: a console's shell does not outlive its session across a hub restart. The
/// session fails at the hub (`agent_lost`); the agent, reconnecting, ends the shell it held
/// with its background job; a `DELETE` of the failed session asks the host again (202).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_restart_leaves_no_console_shell_on_the_host() {
    let state = TempDir::new();
    let mut f = fixture().await;
    let token = f.enrollment_token(json!([])).await;
    let _agent = Agent::start(
        &state.0,
        &["--hub", &f.base, "--enroll", &token, "--allow-console"],
    );
    let agents = wait_until(&f, "/agents", 30, "the agent connected", |v| {
        v[0]["connected"] == true
    })
    .await;
    let id = agents[0]["id"].as_str().expect("id").to_owned();
    let t = fresh_totp_window().await;
    let secret = enrol_totp(&f).await;
    let r = console_start(&f, &id, trusthub_core::totp::code_at(&secret, t - 30)).await;
    assert_eq!(r.status(), 201);
    let s: Value = r.json().await.expect("json");
    let session = s["session_id"].as_str().expect("session").to_owned();
    let mut term = Term::open(&f, s["ws_url"].as_str().expect("ws_url")).await;
    term.type_line("sleep 1000 & echo BG$((10000000+$!))").await;
    let pid_of = |s: &str| -> Option<i32> {
        let rest = s.rsplit_once("BG1")?.1;
        let (digits, _) = rest.split_once("\r\n")?;
        digits.parse::<i32>().ok()
    };
    assert_eq!(
        term.until_fn("the background pid", |s| pid_of(s).is_some())
            .await,
        None
    );
    let bg = pid_of(&term.seen).expect("the background pid");
    assert!(Path::new(&format!("/proc/{bg}")).exists());
    drop(term);

    let settings = f.settings.clone();
    f.hub.stop().await;
    let (hub, _) = start_hub(settings).await;
    f.hub = hub;
    wait_until(
        &f,
        &format!("/agents/{id}"),
        30,
        "the agent reconnected",
        |v| v["connected"] == true,
    )
    .await;
    // The agent ended the shell it held: the background job is gone within the grace.
    for _ in 0..150 {
        if !Path::new(&format!("/proc/{bg}")).exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        !Path::new(&format!("/proc/{bg}")).exists(),
        "the console's background job outlived the hub restart"
    );
    let row = wait_until(
        &f,
        &format!("/console/sessions?agent_id={id}"),
        30,
        "the session ended",
        |v| v[0]["ended_at"].is_string(),
    )
    .await;
    assert_eq!(row[0]["id"], session.as_str());
    assert_eq!(row[0]["status"], "failed", "{row}");
    // The sessions page offers an admin the same: "End on host" for the failed session.
    let page = f
        .client
        .get(format!("{}/ui/console", f.base))
        .header("cookie", &f.cookie)
        .send()
        .await
        .expect("page")
        .text()
        .await
        .expect("html");
    let form = format!("action=\"/ui/console/{session}/terminate\"");
    let at = page.find(&form).expect("a form for the failed session");
    assert!(
        page[at..]
            .split("</form>")
            .next()
            .unwrap_or_default()
            .contains("End on host"),
        "{page}"
    );
    let r = f
        .client
        .delete(format!("{}/api/v1/console/sessions/{session}", f.base))
        .header("cookie", &f.cookie)
        .send()
        .await
        .expect("terminate");
    assert_eq!(r.status(), 202);
    let v: Value = r.json().await.expect("json");
    assert_eq!(v["status"], "failed");
}

/// The emergency console with the real agent on a real PTY (CONTRACT 22): a typed command and
/// its output, a resize `stty size` sees, a terminate that kills a background child, an exit
/// code, the recording checked line by line and its hash; a host without `--allow-console`
/// fails the session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_console_runs_a_real_shell_records_it_and_a_terminate_kills_its_background_jobs() {
    let state = TempDir::new();
    let f = fixture().await;
    let token = f.enrollment_token(json!([])).await;
    let _agent = Agent::start(
        &state.0,
        &["--hub", &f.base, "--enroll", &token, "--allow-console"],
    );
    let agents = wait_until(&f, "/agents", 30, "the agent connected", |v| {
        v[0]["connected"] == true
    })
    .await;
    let id = agents[0]["id"].as_str().expect("id").to_owned();
    let t = fresh_totp_window().await;
    let secret = enrol_totp(&f).await;
    let code = |dt: i64| trusthub_core::totp::code_at(&secret, t + dt);

    // No code, no console.
    let r = f
        .client
        .post(format!("{}/api/v1/agents/{id}/console/start", f.base))
        .header("cookie", &f.cookie)
        .json(&json!({"reason": "x"}))
        .send()
        .await
        .expect("start");
    assert_eq!(r.status(), 403);

    let r = console_start(&f, &id, code(-30)).await;
    assert_eq!(r.status(), 201);
    let s: Value = r.json().await.expect("json");
    let session = s["session_id"].as_str().expect("session").to_owned();
    let mut term = Term::open(&f, s["ws_url"].as_str().expect("ws_url")).await;
    // A second connection is refused.
    let again = f
        .client
        .get(
            s["ws_url"]
                .as_str()
                .expect("url")
                .replace("ws://", "http://"),
        )
        .header("cookie", &f.cookie)
        .header("connection", "upgrade")
        .header("upgrade", "websocket")
        .header("sec-websocket-version", "13")
        .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
        .send()
        .await
        .expect("second");
    assert_eq!(again.status(), 409);
    term.type_line("echo hello-$((6*7))").await;
    assert_eq!(term.until("hello-42").await, None);
    term.type_line("stty size").await;
    assert_eq!(term.until("24 80").await, None);
    term.send(json!({"type": "resize", "cols": 100, "rows": 30}))
        .await;
    term.type_line("stty size").await;
    assert_eq!(term.until("30 100").await, None);
    // The pid printed as 10000000 + pid, so the echoed command line cannot match.
    term.type_line("sleep 1000 & echo BG$((10000000+$!))").await;
    let pid_of = |s: &str| -> Option<i32> {
        let rest = s.rsplit_once("BG1")?.1;
        let (digits, _) = rest.split_once("\r\n")?;
        digits.parse::<i32>().ok()
    };
    assert_eq!(
        term.until_fn("the background pid", |s| pid_of(s).is_some())
            .await,
        None
    );
    let bg = pid_of(&term.seen).expect("the background pid");
    assert!(Path::new(&format!("/proc/{bg}")).exists());
    let list = get(
        &f.client,
        &f.base,
        &f.cookie,
        "/console/sessions?status=active",
    )
    .await;
    assert_eq!(list[0]["id"], session.as_str(), "{list}");

    // Terminate: every process of the console's session dies, the background job too.
    let r = f
        .client
        .delete(format!("{}/api/v1/console/sessions/{session}", f.base))
        .header("cookie", &f.cookie)
        .send()
        .await
        .expect("terminate");
    assert_eq!(r.status(), 200);
    let ended: Value = r.json().await.expect("json");
    assert_eq!(ended["status"], "terminated");
    assert_eq!(ended["end_reason"], "admin");
    for _ in 0..50 {
        if !Path::new(&format!("/proc/{bg}")).exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        !Path::new(&format!("/proc/{bg}")).exists(),
        "the background sleep was killed"
    );

    // A second session exits with a code; its recording is checked line by line.
    let r = console_start(&f, &id, code(30)).await;
    assert_eq!(r.status(), 201);
    let s: Value = r.json().await.expect("json");
    let session = s["session_id"].as_str().expect("session").to_owned();
    let mut term = Term::open(&f, s["ws_url"].as_str().expect("ws_url")).await;
    term.type_line("echo recorded-line").await;
    assert_eq!(term.until("recorded-line\r\n").await, None);
    term.type_line("exit 3").await;
    assert_eq!(term.until("never printed").await, Some(Some(3)));
    let done = wait_until(
        &f,
        &format!("/console/sessions?agent_id={id}&status=ended"),
        10,
        "the ended session",
        |v| v.as_array().is_some_and(|a| !a.is_empty()),
    )
    .await;
    assert_eq!(done[0]["exit_code"], 3);
    assert_eq!(done[0]["end_reason"], "exit");
    let cast = f
        .client
        .get(format!(
            "{}/api/v1/console/sessions/{session}/recording",
            f.base
        ))
        .header("cookie", &f.cookie)
        .send()
        .await
        .expect("recording");
    assert_eq!(cast.headers()["content-type"], "application/x-asciicast");
    let cast = cast.text().await.expect("text");
    let events = check_cast(&cast);
    assert!(
        events
            .iter()
            .any(|e| e[2].as_str().is_some_and(|d| d.contains("recorded-line")))
    );
    use sha2::Digest;
    let sha: String = sha2::Sha256::digest(cast.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(done[0]["recording_sha256"], sha.as_str());
    assert_eq!(done[0]["recording_bytes"], cast.len());
    let audit = get(
        &f.client,
        &f.base,
        &f.cookie,
        "/audit-log?event_type=console_session_ended",
    )
    .await;
    assert!(audit.to_string().contains(&session), "{audit}");
    // CONTRACT 30: each download of a recording is audited.
    let audit = get(
        &f.client,
        &f.base,
        &f.cookie,
        "/audit-log?event_type=console_recording_downloaded",
    )
    .await;
    assert!(audit.to_string().contains(&session), "{audit}");
}

async fn wait_session(f: &Fixture, session: &str, what: &str) -> Value {
    let list = wait_until(f, "/console/sessions", 20, what, |v| {
        v.as_array().is_some_and(|a| {
            a.iter()
                .any(|s| s["id"] == session && !s["ended_at"].is_null())
        })
    })
    .await;
    list.as_array()
        .and_then(|a| a.iter().find(|s| s["id"] == session).cloned())
        .expect("session")
}

/// A host started without `--allow-console` fails the session (`console_disabled`); an idle
/// session ends by itself and its shell goes with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_console_fails_on_a_host_that_refuses_it_and_ends_when_idle() {
    let state = TempDir::new();
    let f = fixture_with(|s| {
        s.sections
            .edit(|v: &mut trusthub_hub::sections::Console| v.console_idle_secs = 2)
    })
    .await;
    let token = f.enrollment_token(json!([])).await;
    let agent = Agent::start(&state.0, &["--hub", &f.base, "--enroll", &token]);
    let agents = wait_until(&f, "/agents", 30, "the agent connected", |v| {
        v[0]["connected"] == true
    })
    .await;
    let id = agents[0]["id"].as_str().expect("id").to_owned();
    let t = fresh_totp_window().await;
    let secret = enrol_totp(&f).await;
    let code = |dt: i64| trusthub_core::totp::code_at(&secret, t + dt);
    let r = console_start(&f, &id, code(-30)).await;
    assert_eq!(
        r.status(),
        201,
        "a start answers 201 whatever the host says"
    );
    let s: Value = r.json().await.expect("json");
    let refused = wait_session(&f, s["session_id"].as_str().expect("id"), "the refusal").await;
    assert_eq!(refused["status"], "failed");
    assert_eq!(refused["end_reason"], "console_disabled");

    agent.stop();
    let _agent = Agent::start(&state.0, &["--allow-console"]);
    wait_until(&f, "/agents", 30, "the agent back", |v| {
        v[0]["connected"] == true
    })
    .await;
    // The reconnection may take a moment to be routable. A refused start spent its code (the
    // proof is checked first), so each attempt takes a step not used yet: enrolment's and the
    // first start's are spent, and the next step boundary brings a fresh one.
    let mut spent = vec![t / 30 - 1, t / 30, (t + 8) / 30];
    let mut started = None;
    for _ in 0..20 {
        let step = unspent_totp_step(&spent).await;
        spent.push(step);
        let r = console_start(&f, &id, code(step * 30 - t)).await;
        if r.status() == 201 {
            started = Some(r.json::<Value>().await.expect("json"));
            break;
        }
        assert_eq!(r.status(), 409, "only 'not connected' is worth a retry");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let s = started.expect("a session on the host that allows it");
    let session = s["session_id"].as_str().expect("id").to_owned();
    let mut term = Term::open(&f, s["ws_url"].as_str().expect("url")).await;
    term.type_line("echo $$ > /dev/null; echo SH$((10000000+$$))")
        .await;
    let pid_of = |s: &str| -> Option<i32> {
        let rest = s.rsplit_once("SH1")?.1;
        rest.split_once("\r\n")?.0.parse().ok()
    };
    assert_eq!(
        term.until_fn("the shell's pid", |s| pid_of(s).is_some())
            .await,
        None
    );
    let shell = pid_of(&term.seen).expect("pid");
    // No more input: the idle time (2 s) ends it.
    assert_eq!(term.until("never printed").await, Some(None));
    let ended = wait_session(&f, &session, "the idle end").await;
    assert_eq!(ended["status"], "ended");
    assert_eq!(ended["end_reason"], "idle");
    for _ in 0..50 {
        if !Path::new(&format!("/proc/{shell}")).exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        !Path::new(&format!("/proc/{shell}")).exists(),
        "the idle shell was killed"
    );
}

/// Strict recording: when the recording cannot be written, there is no session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_console_whose_recording_cannot_be_written_fails() {
    let state = TempDir::new();
    let blocker = TempDir::new();
    let file = blocker.0.join("not-a-directory");
    std::fs::write(&file, "x").expect("file");
    let dir = file.join("console");
    let f = fixture_with(move |s| {
        s.sections
            .edit(|v: &mut trusthub_hub::sections::Console| v.console_recording_dir = Some(dir))
    })
    .await;
    let token = f.enrollment_token(json!([])).await;
    let _agent = Agent::start(
        &state.0,
        &["--hub", &f.base, "--enroll", &token, "--allow-console"],
    );
    let agents = wait_until(&f, "/agents", 30, "the agent connected", |v| {
        v[0]["connected"] == true
    })
    .await;
    let id = agents[0]["id"].as_str().expect("id").to_owned();
    let t = fresh_totp_window().await;
    let secret = enrol_totp(&f).await;
    let r = console_start(&f, &id, trusthub_core::totp::code_at(&secret, t - 30)).await;
    assert_eq!(r.status(), 201);
    let s: Value = r.json().await.expect("json");
    let failed = wait_session(&f, s["session_id"].as_str().expect("id"), "the failure").await;
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["end_reason"], "recording_failed");
}

/// A session whose host's socket goes away ends at once (`agent_lost`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_console_ends_when_its_agent_goes_away() {
    let state = TempDir::new();
    let f = fixture().await;
    let token = f.enrollment_token(json!([])).await;
    let agent = Agent::start(
        &state.0,
        &["--hub", &f.base, "--enroll", &token, "--allow-console"],
    );
    let agents = wait_until(&f, "/agents", 30, "the agent connected", |v| {
        v[0]["connected"] == true
    })
    .await;
    let id = agents[0]["id"].as_str().expect("id").to_owned();
    let t = fresh_totp_window().await;
    let secret = enrol_totp(&f).await;
    let r = console_start(&f, &id, trusthub_core::totp::code_at(&secret, t - 30)).await;
    assert_eq!(r.status(), 201);
    let s: Value = r.json().await.expect("json");
    let session = s["session_id"].as_str().expect("id").to_owned();
    let mut term = Term::open(&f, s["ws_url"].as_str().expect("url")).await;
    term.type_line("echo up-$((1+1))").await;
    assert_eq!(term.until("up-2").await, None);
    agent.stop();
    assert_eq!(term.until("never printed").await, Some(None));
    let lost = wait_session(&f, &session, "the lost session").await;
    assert_eq!(lost["status"], "failed");
    assert_eq!(lost["end_reason"], "agent_lost");
}

/// The console from the dashboard (CONTRACT 22): the start form asks for the TOTP code, the
/// xterm.js terminal shows the real shell and takes keys, the sessions page lists it and
/// terminates it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_opens_a_console_in_the_browser_types_in_it_and_terminates_it() {
    let state = TempDir::new();
    let f = fixture().await;
    let Some(browser) = webdriver::Browser::start("agent-console").await else {
        return;
    };
    let _agent = Agent::start(
        &state.0,
        &[
            "--hub",
            &f.base,
            "--enroll",
            &f.enrollment_token(json!([])).await,
            "--allow-console",
        ],
    );
    let agents = wait_until(&f, "/agents", 30, "the agent connected", |v| {
        v[0]["connected"] == true
    })
    .await;
    let id = agents[0]["id"].as_str().expect("id").to_owned();
    // Signed in before TOTP is on (the session stays valid once it is).
    browser
        .sign_in(&f.base, "admin@trusthub.local", "agent test password")
        .await;
    let now = fresh_totp_window().await;
    let secret = enrol_totp(&f).await;
    browser.goto(&format!("{}/ui/agents/{id}", f.base)).await;
    browser
        .click(&format!("a[href='/ui/agents/{id}/console']"))
        .await;
    browser
        .type_into(
            "form#console-start input[name=reason]",
            "nginx will not start",
        )
        .await;
    browser
        .type_into(
            "form#console-start input[name=code]",
            &trusthub_core::totp::code_at(&secret, now + 30),
        )
        .await;
    browser
        .click("form#console-start button[type=submit]")
        .await;
    browser
        .wait_text("Connected: everything shown here is recorded.")
        .await;
    browser.find("#console .xterm-rows").await;
    browser
        .type_into(".xterm-helper-textarea", "echo browser-$((6*7))\u{E007}")
        .await;
    browser.wait_text("browser-42").await;
    browser.screenshot("console").await;
    let live = get(
        &f.client,
        &f.base,
        &f.cookie,
        "/console/sessions?status=active",
    )
    .await;
    let session = live[0]["id"].as_str().expect("session").to_owned();
    browser.goto(&format!("{}/ui/console", f.base)).await;
    browser.wait_text("nginx will not start").await;
    browser
        .click(&format!(
            "form[action='/ui/console/{session}/terminate'] button"
        ))
        .await;
    browser.wait_text("Terminated: the host killed").await;
    let s = get(&f.client, &f.base, &f.cookie, "/console/sessions").await;
    assert_eq!(s[0]["status"], "terminated", "{s}");
    assert!(
        s[0]["recording_bytes"].as_i64().is_some_and(|b| b > 0),
        "{s}"
    );
    // The recording plays in asciinema-player: what was typed shows again.
    browser.goto(&format!("{}/ui/console", f.base)).await;
    browser
        .click(&format!("a[href='/ui/console/{session}/recording']"))
        .await;
    browser.find("#player .ap-player").await;
    browser.wait_text("browser-42").await;
    browser.screenshot("console-recording").await;
    browser.assert_no_js_errors().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_checks_this_host_reports_its_dna_and_sees_its_honeypots_touched() {
    let state = TempDir::new();
    let canaries = TempDir::new();
    let canary = canaries.0.join("backup-keys.txt");
    std::fs::write(&canary, "no secrets here\n").expect("canary");
    let auth_log = canaries.0.join("auth.log");
    std::fs::write(&auth_log, "").expect("auth log");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("port");
    let f = fixture().await;
    let token = f.enrollment_token(json!([])).await;
    let log_arg = auth_log.display().to_string();
    let _agent = Agent::start(
        &state.0,
        &["--hub", &f.base, "--enroll", &token, "--auth-log", &log_arg],
    );
    let agents = wait_until(&f, "/agents", 30, "the agent", |v| {
        v.as_array().is_some_and(|a| !a.is_empty())
    })
    .await;
    let id = agents[0]["id"].as_str().expect("id").to_owned();

    // The agent's own first run of the checks on this host (soon after its start).
    let list = wait_until(
        &f,
        &format!("/compliance?framework=cis-debian&agent_id={id}"),
        120,
        "the first run",
        |v| v.as_array().is_some_and(|a| a.len() == 21),
    )
    .await;
    for r in list.as_array().expect("list") {
        assert!(
            ["pass", "fail", "not_applicable", "error"]
                .contains(&r["status"].as_str().unwrap_or_default()),
            "{r}"
        );
        assert!(
            !r["evidence"].as_str().unwrap_or_default().is_empty(),
            "{r}"
        );
    }
    // What this host really has: /etc/passwd is not group- or world-writable here.
    let passwd = list
        .as_array()
        .expect("l")
        .iter()
        .find(|r| r["check_id"] == "passwd_mode")
        .expect("passwd_mode");
    let mode = mode(Path::new("/etc/passwd")) & 0o7777;
    let root_owned =
        std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/etc/passwd").expect("passwd"))
            == 0;
    assert_eq!(
        passwd["status"],
        if mode & !0o644 == 0 && root_owned {
            "pass"
        } else {
            "fail"
        },
        "{passwd}"
    );
    assert!(
        passwd["evidence"]
            .as_str()
            .unwrap_or_default()
            .contains(&format!("{mode:04o}")),
        "{passwd}"
    );

    // The DNA arrives with the inventory: this host's machine id and kernel.
    let sec = wait_until(&f, "/security", 30, "the DNA", |v| {
        v["dna"].as_array().is_some_and(|d| !d.is_empty())
    })
    .await;
    let dna = &sec["dna"][0];
    let machine_id = std::fs::read_to_string("/etc/machine-id").unwrap_or_default();
    assert_eq!(dna["parts"]["machine_id"], machine_id.trim());
    assert_eq!(
        dna["parts"]["kernel"],
        std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
    );
    assert_eq!(dna["fingerprint_sha256"].as_str().map(str::len), Some(64));

    // A run asked for is answered.
    let r = f
        .client
        .post(format!("{}/api/v1/compliance/run", f.base))
        .header("cookie", &f.cookie)
        .json(&json!({"agent_id": id}))
        .send()
        .await
        .expect("run");
    assert_eq!(r.status(), 202);
    let run: Value = r.json().await.expect("json");
    wait_until(&f, "/compliance/runs", 120, "the run's answer", |v| {
        v[0]["id"] == run["run_id"] && v[0]["done"] == 1
    })
    .await;

    // Honeypots: a canary file, a user in the auth log, a port.
    let pots = json!([{"kind": "file", "target": canary.display().to_string()}, {"kind": "user", "target": "oracle"}, {"kind": "port", "target": port.to_string()}]);
    let r = f
        .client
        .put(format!("{}/api/v1/agents/{id}/governance", f.base))
        .header("cookie", &f.cookie)
        .json(&json!({"ingest_interval_secs": 60, "inventory_interval_secs": 3600, "tags": [], "allowed_actions": [], "honeypots": pots}))
        .send()
        .await
        .expect("governance");
    assert_eq!(r.status(), 200);
    // Armed once the port listens (the agent heard the governance in an ingest answer).
    let mut connected = false;
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            connected = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(connected, "the honeypot port listens");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let _ = std::fs::read(&canary).expect("read the canary");
    use std::io::Write;
    std::fs::OpenOptions::new()
        .append(true)
        .open(&auth_log)
        .and_then(|mut l| l.write_all(b"Nov 27 10:00:00 web sshd[77]: Failed password for invalid user oracle from 198.51.100.23 port 4242 ssh2\n"))
        .expect("auth log");
    let sec = wait_until(&f, "/security", 30, "three touches", |v| {
        v["honeypots"]
            .as_array()
            .is_some_and(|h| h.len() == 3 && h.iter().all(|p| p["triggered_at"].is_string()))
    })
    .await;
    let by_kind = |k: &str| {
        sec["honeypots"]
            .as_array()
            .expect("h")
            .iter()
            .find(|h| h["kind"] == k)
            .cloned()
            .expect("kind")
    };
    assert!(
        by_kind("port")["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("from 127.0.0.1:")
    );
    assert!(
        by_kind("user")["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("198.51.100.23")
    );
    assert!(
        by_kind("file")["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("backup-keys.txt was")
    );
    let alerts = get(&f.client, &f.base, &f.cookie, "/alerts").await;
    let critical: Vec<&Value> = alerts
        .as_array()
        .expect("a")
        .iter()
        .filter(|a| a["source"] == "honeypot" && a["severity"] == "critical")
        .collect();
    assert_eq!(critical.len(), 3, "{alerts}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_is_installed_wins_over_what_the_lockfile_claims() {
    let state = TempDir::new();
    let project = TempDir::new();
    // The tree pnpm installed (its `.pnpm` store and links, as in tests/data), and a lockfile
    // that claims the fixed lodash: the host runs the vulnerable one.
    let tree =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/deps/installed/pnpm/node_modules");
    copy(&tree, &project.0.join("node_modules"));
    std::fs::write(
        project.0.join("package-lock.json"),
        serde_json::to_vec(&json!({"name": "web", "lockfileVersion": 3, "packages": {
            "": {"name": "web"}, "node_modules/lodash": {"version": "4.17.21"}, "node_modules/left-pad": {"version": "1.3.0"}}}))
        .expect("json"),
    )
    .expect("lockfile");
    let f = hub_with_the_lodash_advisory(&state.0).await;
    let token = f.enrollment_token(json!([])).await;
    let project_path = project.0.display().to_string();
    let agent = Agent::start(
        &state.0,
        &[
            "--hub",
            &f.base,
            "--enroll",
            &token,
            "--project-path",
            &project_path,
        ],
    );
    let finding = lodash_finding(&f).await;
    assert_eq!(
        finding["installed_version"], "4.17.20",
        "the installed version, not the lockfile's"
    );
    // The inventory says where each package was read.
    let agents = get(&f.client, &f.base, &f.cookie, "/agents").await;
    let id = agents[0]["id"].as_str().expect("id").to_owned();
    let inv = get(
        &f.client,
        &f.base,
        &f.cookie,
        &format!("/agents/{id}/inventory"),
    )
    .await;
    let deps = inv["inventory"]["app_dependencies"]
        .as_array()
        .or_else(|| inv["app_dependencies"].as_array())
        .cloned()
        .unwrap_or_default();
    let lodash: Vec<&Value> = deps.iter().filter(|d| d["name"] == "lodash").collect();
    assert_eq!(lodash.len(), 1, "{deps:?}");
    assert_eq!(lodash[0]["source_kind"], "installed");
    assert_eq!(lodash[0]["format"], "node-modules");
    assert_eq!(lodash[0]["source"], format!("{project_path}/node_modules"));
    let left_pad = deps
        .iter()
        .find(|d| d["name"] == "left-pad")
        .expect("left-pad, only in the lockfile");
    assert_eq!(
        (
            left_pad["source_kind"].as_str(),
            left_pad["format"].as_str()
        ),
        (Some("lockfile"), Some("package-lock"))
    );
    assert_eq!(
        left_pad["source"],
        format!("{project_path}/package-lock.json")
    );
    agent.stop();
    f.hub.stop().await;
}

/// Copies `from` (a file or a folder) to `to`, as `cp -a` does.
fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().expect("parent")).expect("dir");
    let status = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .expect("cp");
    assert!(status.success(), "cp {}", from.display());
}

/// Runs a tool that must be there (installed by .ci/run) and must succeed.
fn tool(program: &str, args: &[&str], dir: &Path, envs: &[(&str, &Path)]) {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .envs(envs.iter().map(|(k, v)| (*k, v.as_os_str())))
        .output()
        .unwrap_or_else(|e| panic!("{program} (installed by .ci/run): {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// CONTRACT 29 end to end: the real agent reads every kind of source — lockfiles the real
/// tools wrote (npm, yarn 1, yarn 4, pnpm, uv's uv.lock and pylock.toml, pipenv here;
/// poetry, pdm, composer and an npm-shrinkwrap.json by public projects), others in their
/// documented shapes (requirements.txt, Gemfile.lock, go.mod), installed trees without
/// a lockfile (node_modules npm installed, a virtualenv pip filled), a gem home the real
/// `gem` tool installed in a project found only because a process runs there, and a Go
/// binary the real toolchain built — and each vulnerable package becomes a finding naming
/// its source, with every source covered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kind_of_source_is_read_and_each_finding_names_its_source() {
    let state = TempDir::new();
    let projects = TempDir::new();
    let elsewhere = TempDir::new();
    let bins = TempDir::new();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/deps");
    let p = |rel: &str| projects.0.join(rel);
    let ps = |rel: &str| p(rel).display().to_string();
    for (from, to) in [
        ("npm/package-lock.json", "npm/package-lock.json"),
        ("yarn1/yarn.lock", "yarn1/yarn.lock"),
        ("berry/yarn.lock", "berry/yarn.lock"),
        ("pnpm/pnpm-lock.yaml", "pnpm/pnpm-lock.yaml"),
        ("py/uv.lock", "uv/uv.lock"),
        ("py/pylock.toml", "pylock/pylock.toml"),
        ("py/Pipfile.lock", "pipenv/Pipfile.lock"),
        ("installed/py/.venv", "pyapp/.venv"),
        ("installed/npm/node_modules", "nm/node_modules"),
        // Public projects' lockfiles their own tools wrote (tests/data/corpus).
        (
            "../corpus/python-stomp--root/poetry.lock",
            "poetry/poetry.lock",
        ),
        ("../corpus/python-asv-runner--root/pdm.lock", "pdm/pdm.lock"),
        (
            "../corpus/php-sql-formatter--vendor-bin-phpstan/composer.lock",
            "composer/composer.lock",
        ),
        (
            "../corpus/hapi--root/npm-shrinkwrap.json",
            "shrinkwrap/npm-shrinkwrap.json",
        ),
    ] {
        copy(&data.join(from), &p(to));
    }
    let write = |rel: &str, text: &str| {
        std::fs::create_dir_all(p(rel).parent().expect("parent")).expect("dir");
        std::fs::write(p(rel), text).expect("write");
    };
    write("req/requirements.txt", "Jinja2==2.11.2\n");
    write(
        "ruby/Gemfile.lock",
        "GEM\n  remote: https://rubygems.org/\n  specs:\n    rack (2.2.3)\n\nPLATFORMS\n  ruby\n\n\
         DEPENDENCIES\n  rack\n\nBUNDLED WITH\n   2.3.15\n",
    );
    write(
        "gomod/go.mod",
        "module example.com/app\n\ngo 1.19\n\nrequire example.com/dep v1.2.3\n",
    );
    // A gem home the real gem tool installed, in a project no --project-path names.
    let app = elsewhere.0.join("app");
    std::fs::create_dir_all(&app).expect("app");
    std::fs::write(
        elsewhere.0.join("rack.gemspec"),
        "Gem::Specification.new do |s|\n  s.name = \"rack\"\n  s.version = \"2.2.3\"\n  \
         s.summary = \"a local stand-in\"\n  s.authors = [\"t\"]\n  s.files = []\nend\n",
    )
    .expect("gemspec");
    tool("gem", &["build", "rack.gemspec"], &elsewhere.0, &[]);
    let home = app.join("vendor/bundle/ruby/3.1.0");
    let home_s = home.display().to_string();
    tool(
        "gem",
        &[
            "install",
            "--local",
            "--no-document",
            "--install-dir",
            &home_s,
            "rack-2.2.3.gem",
        ],
        &elsewhere.0,
        &[],
    );
    // A Go binary built offline with a dependency replaced by a local folder.
    let go = bins.0.join("src");
    for (rel, text) in [
        ("dep/go.mod", "module example.com/dep\n\ngo 1.19\n"),
        (
            "dep/dep.go",
            "package dep\n\nfunc Hello() string { return \"hi\" }\n",
        ),
        (
            "app/go.mod",
            "module example.com/app\n\ngo 1.19\n\nrequire example.com/dep v1.2.3\n\nreplace example.com/dep => ../dep\n",
        ),
        (
            "app/main.go",
            "package main\n\nimport (\n\t\"fmt\"\n\t\"example.com/dep\"\n)\n\nfunc main() { fmt.Println(dep.Hello()) }\n",
        ),
    ] {
        std::fs::create_dir_all(go.join(rel).parent().expect("parent")).expect("dir");
        std::fs::write(go.join(rel), text).expect("write");
    }
    let bin_dir = bins.0.join("bin");
    std::fs::create_dir_all(&bin_dir).expect("bin");
    let svc = bin_dir.join("svc");
    tool(
        "go",
        &["build", "-o", &svc.display().to_string(), "."],
        &go.join("app"),
        &[
            ("GOCACHE", &bins.0.join("cache")),
            ("GOPATH", &bins.0.join("gopath")),
        ],
    );
    // The process whose working directory leads to the gem home.
    let mut sleeper = Command::new("sleep")
        .arg("300")
        .current_dir(&app)
        .spawn()
        .expect("sleep");

    let f = fixture_with(|s| {
        s.sections
            .edit(|v: &mut trusthub_hub::sections::Vulns| v.cve_scan_check_secs = 1)
    })
    .await;
    let fixed = |eco: &str, name: &str, id: &str, fix: &str| {
        json!({"id": id, "modified": "2024-01-01T00:00:00Z", "summary": format!("{name} is vulnerable"),
            "affected": [{"package": {"ecosystem": eco, "name": name},
                "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": fix}]}]}]})
    };
    let zip = osv_zip(
        &state.0,
        &[
            json!({"id": "GHSA-35jh-r3h4-6jhm", "modified": "2024-01-01T00:00:00Z",
                "affected": [{"package": {"ecosystem": "npm", "name": "lodash"},
                    "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "4.17.21"}]}]}]}),
            fixed("PyPI", "jinja2", "GHSA-h5c8-rqwp-cp95", "3.1.3"),
            fixed("RubyGems", "rack", "GHSA-65f5-mfpf-vfhj", "2.2.6.2"),
            fixed("Go", "example.com/dep", "GO-2026-0001", "1.2.4"),
            fixed("PyPI", "atomicwrites", "PYSEC-2026-0001", "99"),
            fixed("PyPI", "cli-ui", "PYSEC-2026-0002", "99"),
            fixed("Packagist", "phpstan/phpstan", "GHSA-2026-0003", "99"),
            fixed("npm", "ammo", "GHSA-2026-0004", "99.0.0"),
        ],
    );
    import_osv(&f, zip).await;
    let token = f.enrollment_token(json!([])).await;
    let agent = Agent::start(
        &state.0,
        &[
            "--hub",
            &f.base,
            "--enroll",
            &token,
            "--project-path",
            &projects.0.display().to_string(),
            "--binary-path",
            &bin_dir.display().to_string(),
        ],
    );
    let ours = |s: &str| {
        s.starts_with(&projects.0.display().to_string())
            || s.starts_with(&elsewhere.0.display().to_string())
            || s.starts_with(&bins.0.display().to_string())
    };
    let venv = ps("pyapp/.venv/lib/python3.11/site-packages");
    let want: Vec<(String, &str, &str)> = vec![
        (ps("npm/package-lock.json"), "lockfile", "lodash"),
        (ps("yarn1/yarn.lock"), "lockfile", "lodash"),
        (ps("berry/yarn.lock"), "lockfile", "lodash"),
        (ps("pnpm/pnpm-lock.yaml"), "lockfile", "lodash"),
        (ps("nm/node_modules"), "installed", "lodash"),
        (ps("uv/uv.lock"), "lockfile", "jinja2"),
        (ps("pylock/pylock.toml"), "lockfile", "jinja2"),
        (ps("pipenv/Pipfile.lock"), "lockfile", "jinja2"),
        (ps("req/requirements.txt"), "lockfile", "Jinja2"),
        (venv.clone(), "installed", "Jinja2"),
        (ps("ruby/Gemfile.lock"), "lockfile", "rack"),
        (home_s.clone(), "installed", "rack"),
        (ps("gomod/go.mod"), "lockfile", "example.com/dep"),
        (svc.display().to_string(), "binary", "example.com/dep"),
        (ps("poetry/poetry.lock"), "lockfile", "atomicwrites"),
        (ps("pdm/pdm.lock"), "lockfile", "cli-ui"),
        (ps("composer/composer.lock"), "lockfile", "phpstan/phpstan"),
        (ps("shrinkwrap/npm-shrinkwrap.json"), "lockfile", "ammo"),
    ];
    let page = wait_until(
        &f,
        "/inventory/cves?limit=500",
        90,
        "a finding per source",
        |p| {
            p["items"].as_array().is_some_and(|i| {
                i.iter()
                    .filter(|x| x["source"].as_str().is_some_and(ours))
                    .count()
                    >= want.len()
            })
        },
    )
    .await;
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    let mut got: Vec<(String, String, String)> = page["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|x| x["source"].as_str().is_some_and(ours))
        .map(|x| {
            (
                x["source"].as_str().unwrap_or_default().to_owned(),
                x["source_kind"].as_str().unwrap_or_default().to_owned(),
                x["package"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    got.sort();
    let mut want: Vec<(String, String, String)> = want
        .into_iter()
        .map(|(s, k, n)| (s, k.to_owned(), n.to_owned()))
        .collect();
    want.sort();
    assert_eq!(got, want);
    // The coverage names every one of these sources, covered, with its format.
    let coverage = get(&f.client, &f.base, &f.cookie, "/inventory/cves/coverage").await;
    let formats: std::collections::BTreeMap<String, (String, String)> = coverage
        .as_array()
        .expect("rows")
        .iter()
        .filter(|r| r["source"].as_str().is_some_and(ours))
        .map(|r| {
            (
                r["source"].as_str().unwrap_or_default().to_owned(),
                (
                    r["format"].as_str().unwrap_or_default().to_owned(),
                    r["status"].as_str().unwrap_or_default().to_owned(),
                ),
            )
        })
        .collect();
    for (source, format) in [
        ("npm/package-lock.json", "package-lock"),
        ("yarn1/yarn.lock", "yarn-v1"),
        ("berry/yarn.lock", "yarn-berry"),
        ("pnpm/pnpm-lock.yaml", "pnpm-lock"),
        ("nm/node_modules", "node-modules"),
        ("uv/uv.lock", "uv-lock"),
        ("pylock/pylock.toml", "pylock"),
        ("pipenv/Pipfile.lock", "pipfile-lock"),
        ("req/requirements.txt", "requirements"),
        ("ruby/Gemfile.lock", "gemfile-lock"),
        ("gomod/go.mod", "go-mod"),
        ("poetry/poetry.lock", "poetry-lock"),
        ("pdm/pdm.lock", "pdm-lock"),
        ("composer/composer.lock", "composer-lock"),
        ("shrinkwrap/npm-shrinkwrap.json", "npm-shrinkwrap"),
    ] {
        assert_eq!(
            formats.get(&ps(source)),
            Some(&(format.to_owned(), "covered".to_owned())),
            "{source}: {coverage}"
        );
    }
    for (source, format) in [
        (venv.as_str(), "python-dist-info"),
        (home_s.as_str(), "gemspec"),
        (&svc.display().to_string(), "go-binary"),
    ] {
        assert_eq!(
            formats.get(source),
            Some(&(format.to_owned(), "covered".to_owned())),
            "{source}: {coverage}"
        );
    }
    agent.stop();
    f.hub.stop().await;
}
