//! The operator CLI (CONTRACT 28) as operators run it: the real `trusthub` binary against a
//! real hub (`trusthub serve`, on SQLite and on PostgreSQL), its saved login in a scratch
//! `XDG_CONFIG_HOME`, a real agent enrolled from the hub's own install flow. Tables are
//! compared as printed; JSON is the API's; exit codes are CONTRACT 28's.

mod common;
#[path = "../../cloud/tests/fakes/hetzner.rs"]
mod hetzner;

use common::*;
use serde_json::{Value, json};
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// `trusthub <args>` with the scratch config, `stdin` fed in.
fn cli(config: &Path, args: &[&str], stdin: &str, envs: &[(&str, &str)]) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .env("XDG_CONFIG_HOME", config)
        .env_remove("TRUSTHUB_URL")
        .env_remove("TRUSTHUB_TOKEN")
        .env("NO_COLOR", "1")
        .envs(envs.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn trusthub");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("wait")
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        text(o),
        err(o)
    );
    text(o)
}

fn json_of(o: &Output) -> Value {
    serde_json::from_str(&ok(o)).expect("json")
}

async fn every_verb_against(db_url: Option<&str>) {
    let dir = TempDir::new();
    let data = dir.0.join("data");
    let config = dir.0.join("config");
    let _ = rustls::crypto::ring::default_provider().install_default();
    let key = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
    let envs: Vec<(&str, &str)> = db_url
        .map(|u| vec![("TRUSTHUB_DATABASE_URL", u), ("CLOUD_ENCRYPTION_KEY", key)])
        .unwrap_or_default();
    let mut hub = Hub::start(&data, &envs);
    let url = hub.base.trim_end_matches("/api/v1").to_owned();
    let password = initial_password(&data);

    // Not logged in yet: says how, exit 1.
    let o = cli(&config, &["agents", "ls"], "", &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("trusthub login"), "{}", err(&o));
    // A wrong password is refused (4) and saves nothing.
    let o = cli(
        &config,
        &["login", &url, "--email", "admin@trusthub.local"],
        "not the password\n",
        &[],
    );
    assert_eq!(o.status.code(), Some(4), "{}", err(&o));
    assert!(!config.join("trusthub/config.toml").exists());
    // Email and password asked (here on stdin), the session saved, mode 600.
    let o = cli(
        &config,
        &["login", &url, "--context", "lab"],
        &format!("admin@trusthub.local\n{password}\n"),
        &[],
    );
    ok(&o);
    assert!(
        err(&o).contains("logged in to") && err(&o).contains("context `lab`"),
        "{}",
        err(&o)
    );
    let saved = config.join("trusthub/config.toml");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&saved).expect("config").permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
    let stored = std::fs::read_to_string(&saved).expect("read");
    assert!(
        stored.contains("current = \"lab\"") && stored.contains("session = "),
        "{stored}"
    );
    assert!(!stored.contains(&password), "the password is never stored");

    let me = json_of(&cli(&config, &["whoami", "-o", "json"], "", &[]));
    assert_eq!(me["user"]["email"], "admin@trusthub.local");
    // The global flags go before the verb too (CONTRACT 30).
    let me = json_of(&cli(
        &config,
        &["--context", "lab", "-o", "json", "whoami"],
        "",
        &[],
    ));
    assert_eq!(me["user"]["email"], "admin@trusthub.local");
    let o = cli(&config, &["--context", "nosuch", "whoami"], "", &[]);
    assert!(err(&o).contains("no context `nosuch`"), "{}", err(&o));
    assert_eq!(me["auth"], "session");
    assert_eq!(
        ok(&cli(&config, &["whoami"], "", &[])),
        "EMAIL                 ROLE   TENANT   AUTH\nadmin@trusthub.local  owner  default  session\n"
    );

    // An empty fleet is a header; then a real agent enrols with the hub's install script.
    assert_eq!(
        ok(&cli(&config, &["agents", "ls"], "", &[])),
        "ID  HOSTNAME  STATUS  LAST SEEN  VERSION  TAGS\n"
    );
    let http = reqwest::Client::new();
    let session = admin_session(&http, &hub.base, &password).await;
    let token = post_json(
        &http,
        format!("{}/agents/enrollment-tokens", hub.base),
        &session,
        json!({"tags": ["env:cli"]}),
    )
    .await["token"]
        .as_str()
        .expect("token")
        .to_owned();
    let bin_dir = dir.0.join("bin");
    std::fs::create_dir_all(&bin_dir).expect("bin");
    let agent = bin_dir.join("trusthub-agent");
    std::os::unix::fs::symlink(BIN, &agent).expect("symlink");
    let enrolled = Command::new(&agent)
        .args(["enroll", "--hub", &url, "--enroll", &token, "--state-dir"])
        .arg(dir.0.join("agent"))
        .output()
        .expect("enroll");
    assert!(
        enrolled.status.success(),
        "{}",
        String::from_utf8_lossy(&enrolled.stderr)
    );
    let agents = json_of(&cli(&config, &["agents", "ls", "-o", "json"], "", &[]));
    let agent_id = agents[0]["id"].as_str().expect("id").to_owned();
    let host = agents[0]["hostname"].as_str().expect("host").to_owned();
    let table = ok(&cli(&config, &["agents", "ls"], "", &[]));
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 2, "{table}");
    assert!(
        lines[0].starts_with("ID") && lines[0].ends_with("TAGS"),
        "{table}"
    );
    assert!(
        lines[1].starts_with(&agent_id)
            && lines[1].contains(&host)
            && lines[1].ends_with("env:cli"),
        "{table}"
    );
    let yaml = ok(&cli(
        &config,
        &["agents", "get", &agent_id, "-o", "yaml"],
        "",
        &[],
    ));
    assert!(
        yaml.contains(&format!("id: \"{agent_id}\"")) && yaml.contains("tags:\n- \"env:cli\""),
        "{yaml}"
    );
    // Its hostname names it as well as its id (CONTRACT 33).
    let by_name = json_of(&cli(
        &config,
        &["agents", "get", &host, "-o", "json"],
        "",
        &[],
    ));
    assert_eq!(by_name["id"], agent_id.as_str(), "{by_name}");
    let csv = ok(&cli(&config, &["agents", "ls", "-o", "csv"], "", &[]));
    assert!(
        csv.starts_with("id,hostname,status,last seen,version,tags\r\n"),
        "{csv}"
    );

    // Apps: a check the hub runs, its expectation changed, listed, removed.
    let target = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let endpoint = format!("tcp://{}", target.local_addr().expect("addr"));
    let app = json_of(&cli(
        &config,
        &[
            "apps",
            "add",
            "--name",
            "db",
            "--type",
            "tcp",
            "--endpoint",
            &endpoint,
            "-o",
            "json",
        ],
        "",
        &[],
    ));
    let app_id = app["id"].as_str().expect("id").to_owned();
    assert_eq!(app["app_type"], "tcp");
    let apps = ok(&cli(&config, &["apps", "ls"], "", &[]));
    assert!(apps.starts_with("ID") && apps.contains(&endpoint), "{apps}");
    // The hub probes it at once: it answers.
    let mut seen = Value::Null;
    for _ in 0..100 {
        seen = json_of(&cli(
            &config,
            &["apps", "get", &app_id, "-o", "json"],
            "",
            &[],
        ));
        if !seen["observed_state"].is_null() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert_eq!(seen["observed_state"], "running", "{seen}");
    let changed = json_of(&cli(
        &config,
        &["apps", "expect", &app_id, "stopped", "-o", "json"],
        "",
        &[],
    ));
    assert_eq!(changed["expected_state"], "stopped");
    // Alerts: a check of a port nothing listens on, every 10 s, is down after its third
    // failure (the hub's own probes); the alert is listed, resolved, no longer open.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr");
    let dead = format!("tcp://{closed}");
    ok(&cli(
        &config,
        &[
            "apps",
            "add",
            "--name",
            "gone",
            "--type",
            "tcp",
            "--endpoint",
            &dead,
            "--interval",
            "10",
        ],
        "",
        &[],
    ));
    let mut open = Value::Null;
    for _ in 0..100 {
        open = json_of(&cli(
            &config,
            &["alerts", "ls", "--open", "-o", "json"],
            "",
            &[],
        ));
        if open.as_array().is_some_and(|a| !a.is_empty()) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert_eq!(open.as_array().map(Vec::len), Some(1), "{open}");
    assert!(
        open[0]["title"]
            .as_str()
            .is_some_and(|t| t.contains("gone")),
        "{open}"
    );
    assert!(
        open[0]["detail"]
            .as_str()
            .is_some_and(|t| t.contains(&dead)),
        "{open}"
    );
    let table = ok(&cli(
        &config,
        &["alerts", "ls", "--open", "--severity", "warning"],
        "",
        &[],
    ));
    assert!(
        table.contains("warning") && table.contains("gone is down"),
        "{table}"
    );
    let alert_id = open[0]["id"].as_str().expect("id").to_owned();
    let resolved = json_of(&cli(
        &config,
        &["alerts", "resolve", &alert_id, "-o", "json"],
        "",
        &[],
    ));
    assert_eq!(resolved["is_resolved"], true, "{resolved}");
    assert_eq!(
        json_of(&cli(
            &config,
            &["alerts", "ls", "--open", "-o", "json"],
            "",
            &[]
        )),
        json!([])
    );
    // A check has nothing to restart: refused before any TOTP code is looked at.
    let o = cli(
        &config,
        &[
            "apps", "restart", &app_id, "--reason", "x", "--totp", "123456",
        ],
        "",
        &[],
    );
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    // An SLO on it: set, read, its daily history as CSV.
    let slo = json_of(&cli(
        &config,
        &["slo", "set", &app_id, "--target", "0.99", "-o", "json"],
        "",
        &[],
    ));
    assert_eq!(slo["target"], 0.99);
    assert!(ok(&cli(&config, &["slo", "get", &app_id], "", &[])).contains("db"));
    let history = ok(&cli(
        &config,
        &["slo", "history", &app_id, "--days", "7"],
        "",
        &[],
    ));
    // One row per day since the app was created (today), its uptime empty while unobserved.
    assert!(
        history.starts_with("date,minutes_observed,minutes_down,uptime_percent,")
            && history.lines().count() == 2,
        "{history}"
    );
    ok(&cli(&config, &["apps", "rm", &app_id], "", &[]));
    // A push monitor (CONTRACT 32): its URL printed whole once; a ping keeps it up; a new
    // URL replaces it; a JSON assertion and dns values travel as the API takes them.
    let push = ok(&cli(
        &config,
        &[
            "apps",
            "add",
            "--name",
            "nightly",
            "--type",
            "push",
            "--interval",
            "3600",
            "--grace",
            "600",
        ],
        "",
        &[],
    ));
    let push_url = push
        .split_whitespace()
        .find(|w| w.contains("/api/v1/push/thp_"))
        .unwrap_or_else(|| panic!("the push URL is printed: {push}"))
        .to_owned();
    let pinged = http.get(&push_url).send().await.expect("ping");
    assert_eq!(pinged.status(), 200);
    let listed = json_of(&cli(
        &config,
        &["apps", "get", "nightly", "-o", "json"],
        "",
        &[],
    ));
    assert_eq!(listed["observed_state"], "running", "{listed}");
    assert!(
        listed["push_url"]
            .as_str()
            .is_some_and(|u| u.ends_with('…')),
        "{listed}"
    );
    let fresh = json_of(&cli(
        &config,
        &["apps", "push-url", "nightly", "-o", "json"],
        "",
        &[],
    ));
    assert_ne!(fresh["push_url"].as_str(), Some(push_url.as_str()));
    assert_eq!(http.get(&push_url).send().await.expect("old").status(), 404);
    let query = json_of(&cli(
        &config,
        &[
            "apps",
            "add",
            "--name",
            "api",
            "--type",
            "http",
            "--endpoint",
            "http://127.0.0.1:9/health",
            "--json-query",
            "$.status == ok",
            "-o",
            "json",
        ],
        "",
        &[],
    ));
    assert_eq!(
        query["json_query"],
        json!({"path": "$.status", "op": "==", "value": "ok"})
    );
    let dns = json_of(&cli(
        &config,
        &[
            "apps",
            "add",
            "--name",
            "mx",
            "--type",
            "dns",
            "--endpoint",
            "dns://example.test?type=MX&server=127.0.0.1:9",
            "--expected",
            "mx1.example.test",
            "--expected",
            "mx2.example.test",
            "-o",
            "json",
        ],
        "",
        &[],
    ));
    assert_eq!(
        dns["expected"],
        json!(["mx1.example.test", "mx2.example.test"])
    );
    let bad = cli(
        &config,
        &[
            "apps",
            "add",
            "--name",
            "x",
            "--type",
            "push",
            "--endpoint",
            "http://a.test/",
        ],
        "",
        &[],
    );
    assert_eq!(bad.status.code(), Some(1), "{}", err(&bad));
    assert!(err(&bad).contains("endpoint"), "{}", err(&bad));
    // Status pages and incidents (CONTRACT 32): made of apps by name, told, resolved.
    let page = json_of(&cli(
        &config,
        &[
            "status-pages",
            "add",
            "--slug",
            "acme",
            "--title",
            "Acme",
            "--app",
            "nightly",
            "--app",
            "api",
            "-o",
            "json",
        ],
        "",
        &[],
    ));
    assert_eq!(
        page["groups"][0]["app_ids"].as_array().map(Vec::len),
        Some(2),
        "{page}"
    );
    let badge = json_of(&cli(
        &config,
        &["apps", "badge", "api", "on", "-o", "json"],
        "",
        &[],
    ));
    let badge_url = badge["badge_url"].as_str().expect("badge url").to_owned();
    let drawn = http
        .get(format!("{badge_url}?type=uptime"))
        .send()
        .await
        .expect("badge");
    assert_eq!(drawn.status(), 200);
    assert!(
        drawn
            .text()
            .await
            .expect("svg")
            .contains("<title>api 30d: ")
    );
    ok(&cli(&config, &["apps", "badge", "api", "off"], "", &[]));
    assert_eq!(
        http.get(&badge_url).send().await.expect("gone").status(),
        404
    );
    let pages = ok(&cli(&config, &["status-pages", "ls"], "", &[]));
    assert!(pages.contains("/status/acme"), "{pages}");
    let incident = json_of(&cli(
        &config,
        &[
            "incidents",
            "add",
            "acme",
            "--title",
            "Slow exports",
            "--message",
            "Looking into it.",
            "--impact",
            "major",
            "-o",
            "json",
        ],
        "",
        &[],
    ));
    let incident_id = incident["id"].as_str().expect("id").to_owned();
    let public: Value = http
        .get(format!("{url}/status/acme.json"))
        .send()
        .await
        .expect("public")
        .json()
        .await
        .expect("json");
    assert_eq!(public["incidents"][0]["title"], "Slow exports", "{public}");
    let resolved = json_of(&cli(
        &config,
        &[
            "incidents",
            "update",
            &incident_id,
            "--status",
            "resolved",
            "--message",
            "Fixed.",
            "-o",
            "json",
        ],
        "",
        &[],
    ));
    assert_eq!(resolved["status"], "resolved");
    let listed = ok(&cli(&config, &["incidents", "ls", "acme"], "", &[]));
    assert!(
        listed.contains("Slow exports") && listed.contains("resolved"),
        "{listed}"
    );
    let bad = cli(
        &config,
        &[
            "incidents",
            "add",
            "acme",
            "--title",
            "x",
            "--message",
            "y",
            "--impact",
            "huge",
        ],
        "",
        &[],
    );
    assert_eq!(bad.status.code(), Some(1), "{}", err(&bad));
    ok(&cli(&config, &["status-pages", "rm", "acme"], "", &[]));
    assert_eq!(
        http.get(format!("{url}/status/acme"))
            .send()
            .await
            .expect("gone")
            .status(),
        404
    );
    for name in ["nightly", "api", "mx"] {
        ok(&cli(&config, &["apps", "rm", name], "", &[]));
    }
    assert_eq!(
        cli(&config, &["apps", "get", &app_id], "", &[])
            .status
            .code(),
        Some(3)
    );

    // A misspelt severity is the hub's refusal, word for word.
    let o = cli(&config, &["alerts", "ls", "--severity", "severe"], "", &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("severity"), "{}", err(&o));

    // Auto-patch of the host: its defaults; turning on needs TOTP, which this owner has not
    // set up (refused, 4); the minimum severity changes without; no attempts yet.
    assert_eq!(
        ok(&cli(&config, &["autopatch", "get", &agent_id], "", &[])),
        format!(
            "AGENT{}  OS PACKAGES  APP DEPS  MIN SEVERITY  ENABLED AT  LAST RUN\n{agent_id}  false        false     HIGH          -           -\n",
            " ".repeat(agent_id.len() - 5)
        )
    );
    let o = cli(
        &config,
        &[
            "autopatch",
            "set",
            &agent_id,
            "--os-packages",
            "on",
            "--totp",
            "123456",
        ],
        "",
        &[],
    );
    assert_eq!(o.status.code(), Some(4), "{}", err(&o));
    assert!(err(&o).contains("TOTP"), "{}", err(&o));
    let critical = json_of(&cli(
        &config,
        &[
            "autopatch",
            "set",
            &agent_id,
            "--min-severity",
            "CRITICAL",
            "-o",
            "json",
        ],
        "",
        &[],
    ));
    assert_eq!(critical["min_severity"], "CRITICAL");
    assert_eq!(
        cli(&config, &["autopatch", "set", &agent_id], "", &[])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        json_of(&cli(
            &config,
            &["autopatch", "runs", &agent_id, "-o", "json"],
            "",
            &[]
        )),
        json!([])
    );

    // Rules and webhooks: added, listed, deleted.
    let rule = json_of(&cli(
        &config,
        &[
            "rules",
            "add",
            "--name",
            "busy",
            "--metric",
            "cpu.percent",
            "--operator",
            ">",
            "--threshold",
            "90",
            "-o",
            "json",
        ],
        "",
        &[],
    ));
    let rule_id = rule["id"].as_str().expect("rule").to_owned();
    assert!(ok(&cli(&config, &["rules", "ls"], "", &[])).contains("cpu.percent"));
    ok(&cli(&config, &["rules", "rm", &rule_id], "", &[]));
    assert_eq!(
        json_of(&cli(&config, &["rules", "ls", "-o", "json"], "", &[])),
        json!([])
    );
    let hook = json_of(&cli(
        &config,
        &[
            "webhooks",
            "add",
            "--url",
            "https://hooks.example.com/x",
            "-o",
            "json",
        ],
        "",
        &[],
    ));
    assert!(hook["secret"].is_string(), "the secret shown once: {hook}");
    let hook_id = hook["id"].as_str().expect("hook").to_owned();
    assert!(ok(&cli(&config, &["webhooks", "ls"], "", &[])).contains("hooks.example.com"));
    ok(&cli(&config, &["webhooks", "rm", &hook_id], "", &[]));
    // Notification channels (CONTRACT 33): a signed webhook made without a secret gets one,
    // shown this once; tested and deleted by its name.
    let ch = json_of(&cli(
        &config,
        &[
            "notification-channels",
            "add",
            "--name",
            "oncall hook",
            "--kind",
            "webhook",
            "--config",
            r#"{"url": "http://127.0.0.1:9/hook"}"#,
            "-o",
            "json",
        ],
        "",
        &[],
    ));
    let secret = ch["secret"]
        .as_str()
        .expect("the generated secret")
        .to_owned();
    assert!(secret.starts_with("whsec_"), "{ch}");
    let table = ok(&cli(&config, &["notification-channels", "ls"], "", &[]));
    assert!(
        table.contains("oncall hook") && !table.contains(&secret),
        "{table}"
    );
    ok(&cli(
        &config,
        &["notification-channels", "test", "oncall hook"],
        "",
        &[],
    ));
    ok(&cli(
        &config,
        &["notification-channels", "rm", "oncall hook"],
        "",
        &[],
    ));
    assert_eq!(
        json_of(&cli(
            &config,
            &["notification-channels", "ls", "-o", "json"],
            "",
            &[]
        )),
        json!([])
    );

    // Vulnerabilities: nothing found yet; the CI gate passes; a bad gate is a usage error;
    // an unknown advisory is not found.
    ok(&cli(&config, &["cve", "ls", "--fail-on", "HIGH"], "", &[]));
    assert_eq!(
        cli(&config, &["cve", "ls", "--fail-on", "SEVERE"], "", &[])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        cli(&config, &["cve", "get", "CVE-1999-0001"], "", &[])
            .status
            .code(),
        Some(3)
    );
    // The Trust Score: a row per lost point; the gate passes, fails below, refuses nonsense.
    let o = cli(&config, &["trust", "get"], "", &[]);
    assert!(ok(&o).contains("access"), "{}", text(&o));
    assert!(err(&o).contains("trust score"), "{}", err(&o));
    let score = json_of(&cli(&config, &["trust", "get", "-o", "json"], "", &[]));
    assert_eq!(score["version"], "v13", "{score}");
    assert!(score["caps"].is_array(), "{score}");
    ok(&cli(&config, &["trust", "check", "--min", "10"], "", &[]));
    let o = cli(&config, &["trust", "check", "--min", "99.9"], "", &[]);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(err(&o).contains("is below 99.9"), "{}", err(&o));
    assert_eq!(
        cli(&config, &["trust", "check", "--min", "200"], "", &[])
            .status
            .code(),
        Some(2)
    );
    // The tenant's private networks, within the operator's (here 127.0.0.0/8).
    let o = cli(&config, &["tenant", "get"], "", &[]);
    assert!(ok(&o).contains("all the operator allows"), "{}", text(&o));
    assert!(ok(&o).contains("127.0.0.0/8"), "{}", text(&o));
    let o = cli(
        &config,
        &["tenant", "set", "--allowed-networks", "10.0.0.0/8"],
        "",
        &[],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        err(&o).contains("is not within what the hub's operator allows"),
        "{}",
        err(&o)
    );
    let o = cli(
        &config,
        &[
            "tenant",
            "set",
            "--allowed-networks",
            "127.0.0.1/32, 127.0.0.2",
        ],
        "",
        &[],
    );
    assert!(
        ok(&o).contains("127.0.0.1/32, 127.0.0.2/32"),
        "{}",
        text(&o)
    );
    let t = json_of(&cli(
        &config,
        &[
            "tenant",
            "set",
            "--allowed-networks",
            "operator",
            "-o",
            "json",
        ],
        "",
        &[],
    ));
    assert_eq!(t["allowed_networks"], serde_json::Value::Null, "{t}");
    assert_eq!(
        cli(&config, &["tenant", "set"], "", &[]).status.code(),
        Some(2)
    );
    // Forwarding is off on this hub: the status says so, and JSON shows no receiver.
    let o = cli(&config, &["remote-write", "status"], "", &[]);
    assert!(err(&o).contains("TRUSTHUB_REMOTE_WRITE_URL"), "{}", err(&o));
    let rw = json_of(&cli(
        &config,
        &["remote-write", "status", "-o", "json"],
        "",
        &[],
    ));
    assert_eq!(rw, serde_json::json!({"enabled": false, "receivers": []}));
    // Drift: the real agent runs until its first configuration scan of this host (the
    // default watch list) reached the hub; nothing drifted; a rebase adopts a file, an
    // unwatched path is refused naming it.
    let mut running = Command::new(&agent)
        .args(["run", "--interval-secs", "1", "--state-dir"])
        .arg(dir.0.join("agent"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("agent runs");
    let mut scanned = serde_json::Value::Null;
    for _ in 0..150 {
        scanned = json_of(&cli(
            &config,
            &["drift", "ls", "--status", "all", "-o", "json"],
            "",
            &[],
        ));
        if scanned.as_array().is_some_and(|a| !a.is_empty()) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let _ = running.kill();
    let _ = running.wait();
    assert!(
        scanned.as_array().is_some_and(|a| a
            .iter()
            .any(|r| r["path"] == "/etc/passwd" && r["status"] == "ok")),
        "{scanned}"
    );
    let o = cli(&config, &["drift", "ls"], "", &[]);
    assert!(
        ok(&o).trim().is_empty() || !ok(&o).contains("/etc/passwd"),
        "{}",
        text(&o)
    );
    let rb = json_of(&cli(
        &config,
        &[
            "drift",
            "rebase",
            &agent_id,
            "--path",
            "/etc/passwd",
            "--reason",
            "cli test",
            "-o",
            "json",
        ],
        "",
        &[],
    ));
    assert_eq!(rb["paths"][0]["path"], "/etc/passwd", "{rb}");
    assert_eq!(rb["by"]["type"], "user");
    let o = cli(
        &config,
        &[
            "drift", "rebase", &agent_id, "--path", "/nowhere", "--reason", "x",
        ],
        "",
        &[],
    );
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(err(&o).contains("/nowhere is not watched"), "{}", err(&o));
    // Update all: the plan is empty; an unknown ecosystem is the hub's 422, said plainly.
    let o = cli(&config, &["cve", "update-all", "--dry-run"], "", &[]);
    ok(&o);
    assert!(
        err(&o).contains("would send 0 action(s); 0 skipped"),
        "{}",
        err(&o)
    );
    let plan = json_of(&cli(
        &config,
        &["cve", "update-all", "--dry-run", "-o", "json"],
        "",
        &[],
    ));
    assert_eq!(plan["dry_run"], true, "{plan}");
    let o = cli(
        &config,
        &["cve", "update-all", "--dry-run", "--ecosystem", "cargo"],
        "",
        &[],
    );
    assert_ne!(o.status.code(), Some(0));
    assert!(
        err(&o).contains("cargo") && err(&o).contains("ecosystems"),
        "{}",
        err(&o)
    );

    // Advisory data over the API with a context: a folder of OSV records, zipped and sent.
    let osv = dir.0.join("osv/npm");
    std::fs::create_dir_all(&osv).expect("osv");
    std::fs::write(
        osv.join("GHSA-35jh-r3h4-6jhm.json"),
        json!({"schema_version": "1.6.0", "id": "GHSA-35jh-r3h4-6jhm", "modified": "2024-01-02T00:00:00Z",
            "aliases": ["CVE-2021-23337"], "summary": "Command Injection in lodash",
            "affected": [{"package": {"ecosystem": "npm", "name": "lodash"},
                "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "4.17.21"}]}]}]})
        .to_string(),
    )
    .expect("record");
    let folder = dir.0.join("osv").display().to_string();
    let imported = json_of(&cli(
        &config,
        &["cve", "import", &folder, "--context", "lab", "-o", "json"],
        "",
        &[],
    ));
    assert_eq!(imported["inserted"], 1, "{imported}");
    // Within the year a suppression may last, whatever day the test runs.
    let until = (time::OffsetDateTime::now_utc() + time::Duration::days(60))
        .date()
        .to_string();
    let suppression = json_of(&cli(
        &config,
        &[
            "cve",
            "suppress",
            "--package",
            "lodash",
            "--ecosystem",
            "npm",
            "--range",
            ">=4.0.0 <4.17.21",
            "--reason",
            "template() never sees user input",
            "--until",
            &until,
            "-o",
            "json",
        ],
        "",
        &[],
    ));
    assert_eq!(suppression["ecosystem"], "npm", "{suppression}");
    let o = cli(
        &config,
        &[
            "cve",
            "suppress",
            "--package",
            "lodash",
            "--ecosystem",
            "npm",
            "--range",
            "^1.2.3.4",
            "--reason",
            "r",
            "--until",
            &until,
        ],
        "",
        &[],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains("version_range"),
        "the hub's refusal, by field: {}",
        err(&o)
    );
    let advisory = json_of(&cli(
        &config,
        &["cve", "get", "CVE-2021-23337", "-o", "json"],
        "",
        &[],
    ));
    assert_eq!(advisory["id"], "GHSA-35jh-r3h4-6jhm", "{advisory}");
    // Coverage per source: a list (one row per source of every scanned host); the hub's
    // refusal of a state it does not know, by field; an id that is not one is 3.
    let coverage = json_of(&cli(&config, &["cve", "coverage", "-o", "json"], "", &[]));
    assert!(coverage.is_array(), "{coverage}");
    for row in coverage.as_array().into_iter().flatten() {
        assert!(
            row["status"] == "covered" || row["status"] == "not_covered",
            "{row}"
        );
    }
    let o = cli(&config, &["cve", "coverage", "--status", "clean"], "", &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("status"), "{}", err(&o));
    let o = cli(&config, &["cve", "coverage", "--agent", "web-1"], "", &[]);
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));

    // Evidence: a pack of a past period, downloaded, verified offline against the hub's key.
    let pack = json_of(&cli(
        &config,
        &[
            "evidence",
            "create",
            "--from",
            "2026-01-01T00:00:00Z",
            "--to",
            "2026-01-02T00:00:00Z",
            "-o",
            "json",
        ],
        "",
        &[],
    ));
    let pack_id = pack["pack_id"].as_str().expect("pack").to_owned();
    let file = dir.0.join("pack.tar.gz");
    let o = cli(
        &config,
        &[
            "evidence",
            "download",
            &pack_id,
            "--out",
            &file.display().to_string(),
        ],
        "",
        &[],
    );
    ok(&o);
    let key = pack["signing_public_hex"].as_str().expect("key").to_owned();
    ok(&cli(
        &config,
        &[
            "evidence",
            "verify",
            &file.display().to_string(),
            "--expect-key",
            &key,
        ],
        "",
        &[],
    ));

    // Tokens: a read token works through TRUSTHUB_URL + TRUSTHUB_TOKEN, and is refused (4)
    // what a read token may not do.
    let made = json_of(&cli(
        &config,
        &["tokens", "add", "--name", "ci", "-o", "json"],
        "",
        &[],
    ));
    let read_token = made["token"].as_str().expect("token").to_owned();
    let env = [
        ("TRUSTHUB_URL", url.as_str()),
        ("TRUSTHUB_TOKEN", read_token.as_str()),
    ];
    let empty = dir.0.join("no-config");
    let me = json_of(&cli(&empty, &["whoami", "-o", "json"], "", &env));
    assert_eq!(me["auth"], "api_token");
    let o = cli(&empty, &["agents", "rm", &agent_id], "", &env);
    assert_eq!(o.status.code(), Some(4), "{}", err(&o));
    let tokens = ok(&cli(&config, &["tokens", "ls"], "", &[]));
    assert!(tokens.contains("ci") && tokens.contains("read"), "{tokens}");

    // Revoked, the token is refused (4).
    let read_id = made["id"].as_str().expect("id").to_owned();
    ok(&cli(&config, &["tokens", "rm", &read_id], "", &[]));
    assert_eq!(cli(&empty, &["whoami"], "", &env).status.code(), Some(4));

    // The audit log names who did what.
    let audit = json_of(&cli(
        &config,
        &["audit", "ls", "--event", "api_token_created", "-o", "json"],
        "",
        &[],
    ));
    assert_eq!(audit[0]["actor_name"], "admin@trusthub.local");

    // Exit codes: not found (3), usage (2).
    let missing = uuid::Uuid::new_v4().to_string();
    assert_eq!(
        cli(&config, &["agents", "get", &missing], "", &[])
            .status
            .code(),
        Some(3)
    );
    let o = cli(&config, &["agents", "get", "not-an-id"], "", &[]);
    assert_eq!(o.status.code(), Some(3));
    assert!(
        err(&o).contains("no agent is named `not-an-id`"),
        "{}",
        err(&o)
    );
    // A name two hosts share is a usage error listing both (CONTRACT 33).
    let a = register_host(&http, &hub.base, &session, "twin-a", "twin").await;
    let b = register_host(&http, &hub.base, &session, "twin-b", "twin").await;
    let o = cli(&config, &["agents", "get", "twin"], "", &[]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        err(&o).contains(&a.id) && err(&o).contains(&b.id) && err(&o).contains("2 agents"),
        "{}",
        err(&o)
    );
    for twin in [&a.id, &b.id] {
        ok(&cli(&config, &["agents", "rm", twin], "", &[]));
    }
    assert_eq!(cli(&config, &["agents"], "", &[]).status.code(), Some(2));
    assert_eq!(
        cli(&config, &["apps", "expect", &agent_id, "sideways"], "", &[])
            .status
            .code(),
        Some(2)
    );

    // Contexts: listed, an unknown one refused (3); logout forgets it.
    let contexts = ok(&cli(&config, &["context", "ls"], "", &[]));
    assert!(
        contexts.contains("*") && contexts.contains("lab") && contexts.contains(&url),
        "{contexts}"
    );
    assert_eq!(
        cli(&config, &["context", "use", "nope"], "", &[])
            .status
            .code(),
        Some(3)
    );
    ok(&cli(&config, &["context", "use", "lab"], "", &[]));
    // --watch lists again every 2 s until stopped.
    let mut watch = Command::new(BIN)
        .args(["agents", "ls", "--watch", "-o", "json"])
        .env("XDG_CONFIG_HOME", &config)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("watch");
    std::thread::sleep(std::time::Duration::from_millis(3500));
    let _ = watch.kill();
    let watched = watch.wait_with_output().expect("wait");
    let listings = String::from_utf8_lossy(&watched.stdout)
        .matches(&format!("\"id\": \"{agent_id}\""))
        .count();
    assert!(listings >= 2, "listed {listings} times in 3.5 s");
    // An emergency for a host whose agent is not running: checked, then refused (409 -> 1)
    // before any code is looked at; a bad target is the hub's 422, word for word.
    let o = cli(
        &config,
        &[
            "agents",
            "emergency",
            &agent_id,
            "--action",
            "kill_process",
            "--target",
            "4242",
            "--reason",
            "runaway",
            "--totp",
            "123456",
        ],
        "",
        &[],
    );
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(err(&o).contains("not connected"), "{}", err(&o));
    let o = cli(
        &config,
        &[
            "agents",
            "emergency",
            &agent_id,
            "--action",
            "block_ip",
            "--target",
            "10.0.0.0/8",
            "--reason",
            "scanner",
            "--totp",
            "123456",
        ],
        "",
        &[],
    );
    assert!(err(&o).contains("IPv4 or IPv6 address"), "{}", err(&o));
    // A new agent token, shown once.
    let rotated = json_of(&cli(
        &config,
        &["agents", "rotate-token", &agent_id, "-o", "json"],
        "",
        &[],
    ));
    assert_eq!(rotated["agent_id"], agent_id.as_str());
    assert!(
        rotated["agent_token"]
            .as_str()
            .is_some_and(|t| t.len() > 20),
        "{rotated}"
    );
    ok(&cli(&config, &["agents", "rm", &agent_id], "", &[]));
    ok(&cli(&config, &["logout"], "", &[]));
    let o = cli(&config, &["whoami"], "", &[]);
    assert_eq!(o.status.code(), Some(1));
    // The session ended at the hub too.
    let r = http
        .get(format!("{}/me", hub.base))
        .header(
            "cookie",
            format!(
                "trusthub_session={}",
                stored
                    .split("session = \"")
                    .nth(1)
                    .and_then(|s| s.split('"').next())
                    .unwrap_or_default()
            ),
        )
        .send()
        .await
        .expect("me");
    assert_eq!(r.status(), 401);
    hub.terminate();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_verb_works_against_a_sqlite_hub() {
    every_verb_against(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_verb_works_against_a_postgres_hub() {
    let Some((name, url)) = pg_database().await else {
        return;
    };
    every_verb_against(Some(&url)).await;
    drop_pg_database(&name).await;
}

#[test]
fn completions_are_generated_for_each_shell_and_bash_reads_its_script() {
    let dir = TempDir::new();
    for shell in ["bash", "zsh", "fish"] {
        let o = cli(&dir.0, &["completion", shell], "", &[]);
        let script = ok(&o);
        assert!(
            script.contains("trusthub") && script.contains("agents"),
            "{shell}"
        );
        if shell == "bash" {
            let path = dir.0.join("trusthub.bash");
            std::fs::write(&path, &script).expect("write");
            let check = Command::new("bash")
                .arg("-n")
                .arg(&path)
                .output()
                .expect("bash");
            assert!(
                check.status.success(),
                "{}",
                String::from_utf8_lossy(&check.stderr)
            );
        }
    }
    // Man pages from the same definitions, one per verb.
    let man = dir.0.join("man1");
    ok(&cli(
        &dir.0,
        &["man", "--out", &man.display().to_string()],
        "",
        &[],
    ));
    for page in [
        "trusthub.1",
        "trusthub-agents.1",
        "trusthub-agents-ls.1",
        "trusthub-login.1",
    ] {
        let text = std::fs::read_to_string(man.join(page)).expect(page);
        assert!(
            text.starts_with(".ie") || text.contains(".TH"),
            "{page}: {text}"
        );
    }
    let help = ok(&cli(&dir.0, &["--help"], "", &[]));
    for verb in [
        "login",
        "agents",
        "apps",
        "alerts",
        "tokens",
        "audit",
        "completion",
        "serve",
        "up",
    ] {
        assert!(help.contains(verb), "{verb} in --help: {help}");
    }
    assert!(help.contains("Exit codes: 0 ok, 1 error, 2 usage, 3 not found, 4 refused"));
}

/// The prompts as a person meets them, through a pseudo-terminal (util-linux `script`): the
/// password is not echoed, and a user with TOTP on is asked for the code.
/// Turns TOTP on for the signed-in user through the API; its secret.
async fn totp_on(http: &reqwest::Client, base: &str, session: &str) -> Vec<u8> {
    let setup = post_json(http, format!("{base}/auth/totp/setup"), session, json!({})).await;
    let secret =
        trusthub_core::totp::secret_from_base32(setup["secret_base32"].as_str().expect("secret"))
            .expect("base32");
    // A code far from the step's end, so the next one is still fresh when it is typed.
    while unix_now() % 30 > 20 {
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    post_json(
        http,
        format!("{base}/auth/totp/verify"),
        session,
        json!({"code": trusthub_core::totp::code_at(&secret, unix_now())}),
    )
    .await;
    secret
}

fn unix_now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// `trusthub <args>` on a pseudo-terminal (util-linux `script`), `typed` lines entered as a
/// person would, once asked; the exit status and everything the screen showed.
fn on_a_terminal(config: &Path, args: &str, typed: &[&str]) -> (std::process::ExitStatus, String) {
    let mut child = Command::new("script")
        .args(["-qec", &format!("{BIN} {args}"), "/dev/null"])
        .env("XDG_CONFIG_HOME", config)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script (util-linux)");
    let mut stdin = child.stdin.take().expect("stdin");
    for line in typed {
        std::thread::sleep(std::time::Duration::from_millis(1500));
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .expect("type");
    }
    drop(stdin);
    let out = child.wait_with_output().expect("wait");
    (out.status, format!("{}{}", text(&out), err(&out)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_prompts_on_a_terminal_hide_the_password_and_ask_for_the_totp_code() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = TempDir::new();
    let data = dir.0.join("data");
    let config = dir.0.join("config");
    let mut hub = Hub::start(&data, &[]);
    let url = hub.base.trim_end_matches("/api/v1").to_owned();
    let password = initial_password(&data);
    let http = reqwest::Client::new();
    let session = admin_session(&http, &hub.base, &password).await;
    let secret = totp_on(&http, &hub.base, &session).await;
    let next = trusthub_core::totp::code_at(&secret, unix_now() + 30);
    let (status, screen) = on_a_terminal(
        &config,
        &format!("login {url} --email admin@trusthub.local --context tty"),
        &[&password, &next],
    );
    assert!(status.success(), "{screen}");
    assert!(screen.contains("Password:"), "{screen}");
    assert!(
        !screen.contains(&password),
        "the password is not echoed: {screen}"
    );
    assert!(screen.contains("TOTP code"), "{screen}");
    assert!(screen.contains("logged in to"), "{screen}");
    let me = json_of(&cli(&config, &["whoami", "-o", "json"], "", &[]));
    assert_eq!(me["user"]["totp_enabled"], true, "{me}");
    hub.terminate();
}

/// A running agent on this host: a restart typed at a terminal (the TOTP code asked for) runs
/// on it and its output comes back; its packages are scanned against advisory data imported
/// from the terminal, a finding fails the CI gate until acknowledged; its certificates are
/// listed and revoked.
async fn live_agent_verbs(db_url: Option<&str>) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = TempDir::new();
    let data = dir.0.join("data");
    let config = dir.0.join("config");
    let key = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
    let mut envs = vec![("TRUSTHUB_CVE_SCAN_CHECK_SECS", "1")];
    if let Some(u) = db_url {
        envs.extend([("TRUSTHUB_DATABASE_URL", u), ("CLOUD_ENCRYPTION_KEY", key)]);
    }
    let mut hub = Hub::start(&data, &envs);
    let url = hub.base.trim_end_matches("/api/v1").to_owned();
    let password = initial_password(&data);
    let http = reqwest::Client::new();
    let session = admin_session(&http, &hub.base, &password).await;
    let secret = totp_on(&http, &hub.base, &session).await;
    // Enrolling spent this step's code: login takes the previous step's (still valid), the
    // restart the next step's.
    let step = unix_now() / 30;
    let login_step = step - 1;
    let (status, screen) = on_a_terminal(
        &config,
        &format!("login {url} --email admin@trusthub.local"),
        &[
            &password,
            &trusthub_core::totp::code_at(&secret, login_step * 30),
        ],
    );
    assert!(status.success(), "{screen}");

    // The agent, as the install script leaves it: the multi-call binary, running.
    let token = post_json(
        &http,
        format!("{}/agents/enrollment-tokens", hub.base),
        &session,
        json!({}),
    )
    .await["token"]
        .as_str()
        .expect("token")
        .to_owned();
    let agent_bin = dir.0.join("trusthub-agent");
    std::os::unix::fs::symlink(BIN, &agent_bin).expect("symlink");
    let mut agent = Command::new(&agent_bin)
        .args([
            "run",
            "--allow-console",
            "--hub",
            &url,
            "--enroll",
            &token,
            "--state-dir",
        ])
        .arg(dir.0.join("agent"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("agent");
    let mut agents = Value::Null;
    for _ in 0..100 {
        agents = json_of(&cli(&config, &["agents", "ls", "-o", "json"], "", &[]));
        if agents[0]["connected"] == true {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert_eq!(agents[0]["connected"], true, "{agents}");
    let agent_id = agents[0]["id"].as_str().expect("id").to_owned();

    // A process on it, restarted by a script that leaves a mark.
    let marker = dir.0.join("restarted.txt");
    let script = dir.0.join("restart.sh");
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
    let app = json_of(&cli(
        &config,
        &[
            "apps",
            "add",
            "--agent",
            &agent_id,
            "--name",
            "demo",
            "--type",
            "process",
            "--identifier",
            "/bin/sleep",
            "--restart-command",
            &script.display().to_string(),
            "-o",
            "json",
        ],
        "",
        &[],
    ));
    let app_id = app["id"].as_str().expect("app").to_owned();
    let code_at = (step + 1) * 30;
    let (status, screen) = on_a_terminal(
        &config,
        &format!("apps restart {app_id} --reason 'from the terminal'"),
        &[&trusthub_core::totp::code_at(&secret, code_at)],
    );
    assert!(status.success(), "{screen}");
    assert!(screen.contains("TOTP code"), "{screen}");
    assert!(
        screen.contains("restart_app") && screen.contains("succeeded"),
        "{screen}"
    );
    assert!(screen.contains("--- stdout\r\ndone"), "{screen}");
    assert_eq!(
        std::fs::read_to_string(&marker).expect("marker"),
        "restarted\n"
    );
    let actions = json_of(&cli(&config, &["actions", "ls", "-o", "json"], "", &[]));
    assert_eq!(actions[0]["status"], "succeeded", "{actions}");
    assert_eq!(actions[0]["reason"], "from the terminal");
    let jti = actions[0]["jti"].as_str().expect("jti").to_owned();
    let one = ok(&cli(&config, &["actions", "get", &jti], "", &[]));
    assert!(one.starts_with("ACTION") && one.contains(&jti), "{one}");
    // Auto-patch on for the host: the hub asks for TOTP, the CLI asks the terminal. The
    // next step's code is valid once the clock is past the restart's step.
    while unix_now() / 30 < step + 1 {
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    let (status, screen) = on_a_terminal(
        &config,
        &format!("autopatch set {agent_id} --os-packages on"),
        &[&trusthub_core::totp::code_at(&secret, (step + 2) * 30)],
    );
    assert!(status.success(), "{screen}");
    assert!(screen.contains("TOTP code (agent_auto_patch)"), "{screen}");
    let settings = json_of(&cli(
        &config,
        &["autopatch", "get", &agent_id, "-o", "json"],
        "",
        &[],
    ));
    assert_eq!(settings["os_packages"], true, "{settings}");
    assert!(settings["enabled_at"].is_string(), "{settings}");
    // Off needs no code.
    ok(&cli(
        &config,
        &["autopatch", "set", &agent_id, "--os-packages", "off"],
        "",
        &[],
    ));
    // A wrong code is refused (4) and nothing runs.
    let o = cli(
        &config,
        &[
            "apps", "restart", &app_id, "--reason", "x", "--totp", "000000",
        ],
        "",
        &[],
    );
    assert_eq!(o.status.code(), Some(4), "{}", err(&o));
    assert_eq!(
        std::fs::read_to_string(&marker).expect("marker"),
        "restarted\n"
    );

    // The console in this terminal (a PTY under `script`): raw mode, a command and its
    // output, the shell's exit code; the session recorded on the hub.
    while unix_now() / 30 < step + 2 {
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    let (status, screen) = on_a_terminal(
        &config,
        &format!(
            "console {agent_id} --reason 'from the terminal' --totp {}",
            trusthub_core::totp::code_at(&secret, (step + 3) * 30)
        ),
        &["echo cli-$((6*7))", "exit 5"],
    );
    assert!(status.success(), "{screen}");
    assert!(screen.contains("cli-42"), "{screen}");
    assert!(
        screen.contains("the session ended (exit code 5)"),
        "{screen}"
    );
    let recorded: Value = http
        .get(format!("{}/console/sessions", hub.base))
        .header("cookie", &session)
        .send()
        .await
        .expect("sessions")
        .json()
        .await
        .expect("json");
    assert_eq!(recorded[0]["exit_code"], 5, "{recorded}");
    assert_eq!(recorded[0]["reason"], "from the terminal");

    // An advisory for a package this host has (by dpkg), fixed in a version no one has yet.
    let release = std::fs::read_to_string("/etc/os-release").expect("os-release");
    let version_id = release
        .lines()
        .find_map(|l| l.strip_prefix("VERSION_ID="))
        .expect("VERSION_ID")
        .trim_matches('"')
        .to_owned();
    let osv = dir.0.join("osv");
    std::fs::create_dir_all(&osv).expect("osv");
    std::fs::write(
        osv.join("DSA-9999-1.json"),
        json!({"id": "DSA-9999-1", "modified": "2026-01-01T00:00:00Z", "summary": "bash: test advisory",
            "severity": [{"type": "CVSS_V3", "score": "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:N/A:N"}],
            "affected": [{"package": {"ecosystem": format!("Debian:{version_id}"), "name": "bash"},
                "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": "99:1"}]}]}]})
        .to_string(),
    )
    .expect("record");
    // The context login saved is named after the hub's host and port.
    let context = url.trim_start_matches("http://").to_owned();
    ok(&cli(
        &config,
        &[
            "cve",
            "import",
            &osv.display().to_string(),
            "--context",
            &context,
        ],
        "",
        &[],
    ));
    let mut findings = Value::Null;
    for _ in 0..150 {
        findings = json_of(&cli(&config, &["cve", "ls", "-o", "json"], "", &[]));
        if findings.as_array().is_some_and(|f| !f.is_empty()) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert_eq!(findings[0]["package"], "bash", "{findings}");
    assert_eq!(findings[0]["severity"], "HIGH", "{findings}");
    let o = cli(&config, &["cve", "ls", "--fail-on", "HIGH"], "", &[]);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(
        err(&o).contains("1 open finding at or above HIGH"),
        "{}",
        err(&o)
    );
    ok(&cli(
        &config,
        &["cve", "ls", "--fail-on", "CRITICAL"],
        "",
        &[],
    ));
    let finding_id = findings[0]["id"].as_str().expect("finding").to_owned();
    let acked = json_of(&cli(
        &config,
        &[
            "cve",
            "ack",
            &finding_id,
            "--reason",
            "bash is never reachable from the network here",
            "-o",
            "json",
        ],
        "",
        &[],
    ));
    assert_eq!(acked["status"], "acknowledged", "{acked}");
    ok(&cli(&config, &["cve", "ls", "--fail-on", "HIGH"], "", &[]));

    // A client certificate issued to it (as the agent asks for one on a TLS hub): listed;
    // the CA printed; revoked, it is in the list as revoked and the CRL grows.
    let registration: Value = serde_json::from_slice(
        &std::fs::read(dir.0.join("agent/registration.json")).expect("registration"),
    )
    .expect("json");
    let issued = http
        .post(format!("{}/agents/issue-client-cert", hub.base))
        .bearer_auth(registration["agent_token"].as_str().expect("token"))
        .json(&json!({}))
        .send()
        .await
        .expect("issue");
    assert_eq!(issued.status(), 201, "{:?}", issued.text().await);
    let certs = json_of(&cli(
        &config,
        &["certs", "ls", &agent_id, "-o", "json"],
        "",
        &[],
    ));
    let serial = certs[0]["serial"].as_str().expect("serial").to_owned();
    let ca = ok(&cli(&config, &["certs", "ca"], "", &[]));
    assert!(ca.starts_with("-----BEGIN CERTIFICATE-----"), "{ca}");
    let crl = dir.0.join("ca.crl");
    ok(&cli(
        &config,
        &["certs", "ca", "--crl", "--out", &crl.display().to_string()],
        "",
        &[],
    ));
    let before = std::fs::metadata(&crl).expect("crl").len();
    let revoked = json_of(&cli(
        &config,
        &[
            "certs",
            "revoke",
            &agent_id,
            &serial,
            "--reason",
            "lost laptop",
            "-o",
            "json",
        ],
        "",
        &[],
    ));
    assert_eq!(revoked["revoke_reason"], "lost laptop", "{revoked}");
    ok(&cli(
        &config,
        &["certs", "ca", "--crl", "--out", &crl.display().to_string()],
        "",
        &[],
    ));
    assert!(
        std::fs::metadata(&crl).expect("crl").len() > before,
        "the CRL lists the serial now"
    );
    let table = ok(&cli(&config, &["certs", "ls", &agent_id], "", &[]));
    assert!(
        table.starts_with("SERIAL") && table.contains("lost laptop"),
        "{table}"
    );
    assert_eq!(
        cli(
            &config,
            &["certs", "revoke", &agent_id, "zz", "--reason", "x"],
            "",
            &[]
        )
        .status
        .code(),
        Some(3)
    );
    let anomalies = json_of(&cli(
        &config,
        &["certs", "anomalies", "--all", "-o", "json"],
        "",
        &[],
    ));
    assert!(anomalies.is_array(), "{anomalies}");

    // Compliance: the agent's own first run of the checks on this host, a run asked for,
    // the exports; the security view; a line explained by the built-in rules.
    let run = |args: &[&str]| cli(&config, args, "", &[]);
    let mut results = Value::Null;
    for _ in 0..240 {
        results = json_of(&run(&[
            "compliance",
            "ls",
            "--framework",
            "cis-debian",
            "--agent",
            &agent_id,
            "-o",
            "json",
        ]));
        if results.as_array().is_some_and(|a| a.len() == 21) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    assert_eq!(results.as_array().map(Vec::len), Some(21), "{results}");
    let table = ok(&run(&[
        "compliance",
        "ls",
        "--framework",
        "soc2",
        "--agent",
        &agent_id,
    ]));
    assert!(
        table.starts_with("HOST") && table.contains("CC6.1"),
        "{table}"
    );
    let asked = json_of(&run(&[
        "compliance",
        "run",
        "--agent",
        &agent_id,
        "-o",
        "json",
    ]));
    assert_eq!(asked["hosts"], 1, "{asked}");
    let runs = json_of(&run(&["compliance", "runs", "-o", "json"]));
    assert_eq!(runs[0]["id"], asked["id"]);
    // Tables name people and hosts, not ids (CONTRACT 33).
    assert_eq!(
        runs[0]["requested_by_name"], "admin@trusthub.local",
        "{runs}"
    );
    let table = ok(&run(&["compliance", "runs"]));
    assert!(
        table.contains("admin@trusthub.local") && !table.contains("user:"),
        "{table}"
    );
    let csv = dir.0.join("cyberday.csv");
    ok(&run(&[
        "compliance",
        "export",
        "cyberday",
        "--framework",
        "nis2",
        "--out",
        csv.to_str().expect("p"),
    ]));
    let text = std::fs::read_to_string(&csv).expect("csv");
    assert!(
        text.starts_with("framework,control_id,check_id,")
            && text.contains("\r\nnis2,Art.21(2)(i),"),
        "{text}"
    );
    let oscal = dir.0.join("oscal.json");
    ok(&run(&[
        "compliance",
        "export",
        "generic",
        "--out",
        oscal.to_str().expect("p"),
    ]));
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(&oscal).expect("oscal")).expect("json");
    assert_eq!(
        doc["assessment-results"]["metadata"]["oscal-version"],
        "1.1.2"
    );
    let o = run(&["compliance", "export", "excel", "--out", "x"]);
    assert_eq!(o.status.code(), Some(2), "clap refuses an unknown tool");
    let dna = json_of(&run(&["security", "dna", "-o", "json"]));
    let dna = dna.as_array().cloned().unwrap_or_default();
    assert!(
        dna.iter().any(|d| d["agent_id"] == agent_id.as_str()),
        "{dna:?}"
    );
    assert!(
        !ok(&run(&["security", "silent"])).contains(agent_id.as_str()),
        "the live agent is not silent"
    );
    let explained = json_of(&run(&[
        "explain",
        "kernel: Out of memory: Killed process 9 (java)",
        "--lang",
        "de",
        "-o",
        "json",
    ]));
    assert_eq!(explained["source"], "rules");
    assert!(
        explained["explanation"]
            .as_str()
            .unwrap_or_default()
            .contains("java"),
        "{explained}"
    );
    let _ = agent.kill();
    let _ = agent.wait();
    hub.terminate();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_runs_on_a_live_agent_and_findings_gate_ci_until_acknowledged_sqlite() {
    live_agent_verbs(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_runs_on_a_live_agent_and_findings_gate_ci_until_acknowledged_postgres() {
    let Some((name, url)) = pg_database().await else {
        return;
    };
    live_agent_verbs(Some(&url)).await;
    drop_pg_database(&name).await;
}

/// `trusthub cloud …` against a hub and a local Hetzner Cloud API (held true by `hcloud` in
/// the cloud tests): the token from `HCLOUD_TOKEN`, a refusal said plainly, a discovery
/// waited for, coverage, findings, the install command of an uncovered machine, removal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cloud_verbs_add_discover_list_and_install() {
    let dir = TempDir::new();
    let data = dir.0.join("data");
    let config = dir.0.join("config");
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut hub = Hub::start(&data, &[]);
    let url = hub.base.trim_end_matches("/api/v1").to_owned();
    let password = initial_password(&data);
    ok(&cli(
        &config,
        &["login", &url, "--email", "admin@trusthub.local"],
        &format!("{password}\n"),
        &[],
    ));
    let (servers, firewalls) = hetzner::fleet();
    let fake = hetzner::Hetzner::start(servers.clone(), firewalls).await;
    let add = |token: &str| {
        cli(
            &config,
            &[
                "cloud",
                "add",
                "hetzner",
                "--name",
                "fsn",
                "--endpoint",
                &fake.url,
                "-o",
                "json",
            ],
            "",
            &[("HCLOUD_TOKEN", token)],
        )
    };
    let o = add("not the token");
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(
        err(&o).contains("refused the credentials") && err(&o).contains("unable to authenticate"),
        "{}",
        err(&o)
    );
    let account = json_of(&add(&fake.token));
    assert_eq!(account["provider"], "hetzner");
    let id = account["id"].as_str().expect("id").to_owned();
    // The first run started with the account; wait for it, then run again and wait.
    for _ in 0..100 {
        let runs = json_of(&cli(
            &config,
            &["cloud", "runs", "--account", &id, "-o", "json"],
            "",
            &[],
        ));
        if runs[0]["status"] != "running" {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // A run that meets a 429 waits it out; a server deleted at Hetzner is removed.
    fake.throttle_once();
    fake.set_servers(servers[..59].to_vec());
    let run = json_of(&cli(
        &config,
        &["cloud", "discover", &id, "--wait", "-o", "json"],
        "",
        &[],
    ));
    assert_eq!(run["status"], "succeeded", "{run}");
    assert_eq!(
        (run["resources_seen"].clone(), run["removed"].clone()),
        (json!(59), json!(1)),
        "{run}"
    );
    assert_eq!(fake.throttled(), 1);
    let bare = json_of(&cli(
        &config,
        &["cloud", "resources", "--without-agent", "-o", "json"],
        "",
        &[],
    ));
    assert_eq!(bare.as_array().map(Vec::len), Some(59));
    let summary = ok(&cli(&config, &["cloud", "summary"], "", &[]));
    assert!(
        summary.starts_with("ACCOUNTS") && summary.contains("0.0"),
        "{summary}"
    );
    let rdp = json_of(&cli(
        &config,
        &["cloud", "findings", "--severity", "CRITICAL", "-o", "json"],
        "",
        &[],
    ));
    assert_eq!(
        rdp.as_array().map(Vec::len),
        Some(19),
        "the removed server's finding resolved"
    );
    let o = cli(
        &config,
        &["cloud", "install", bare[0]["id"].as_str().expect("id")],
        "",
        &[],
    );
    let line = ok(&o);
    assert!(
        line.starts_with("curl -fsSL ") && line.contains("--enroll the_"),
        "{line}"
    );
    assert!(err(&o).contains("single-use"), "{}", err(&o));
    let o = cli(&config, &["cloud", "rm", &id], "", &[]);
    ok(&o);
    assert_eq!(
        json_of(&cli(&config, &["cloud", "accounts", "-o", "json"], "", &[])),
        json!([])
    );
    hub.terminate();
    // The hub's log (JSON lines on stderr, at the default level) never holds the token.
    let log: Vec<String> = hub.stderr.try_iter().collect();
    assert!(!log.is_empty(), "the hub logged");
    assert!(
        !log.iter().any(|l| l.contains(&fake.token)),
        "the token is not in the log"
    );
}

/// `trusthub topology …`, `diagrams …` and `blast-radius` against a real hub: nodes, an
/// edge, a zone, the Mermaid export, a snapshot, a diagram shared and unshared, what fails
/// with a node, and a refusal's exit code.
#[test]
fn topology_diagrams_and_blast_radius_verbs() {
    let dir = TempDir::new();
    let data = dir.0.join("data");
    let config = dir.0.join("config");
    let hub = Hub::start(&data, &[]);
    let url = hub.base.trim_end_matches("/api/v1").to_owned();
    let password = initial_password(&data);
    ok(&cli(
        &config,
        &["login", &url, "--email", "admin@trusthub.local"],
        &format!("{password}\n"),
        &[],
    ));
    let run = |args: &[&str]| cli(&config, args, "", &[]);
    let zone = json_of(&run(&[
        "topology",
        "add-zone",
        "prod \"eu\"",
        "--kind",
        "region",
        "-o",
        "json",
    ]));
    let zid = zone["id"].as_str().expect("id").to_owned();
    let db = json_of(&run(&[
        "topology", "add-node", "db #1", "--kind", "database", "--zone", &zid, "-o", "json",
    ]));
    let web = json_of(&run(&[
        "topology", "add-node", "web", "--tag", "tier:web", "-o", "json",
    ]));
    let (dbid, webid) = (
        db["id"].as_str().expect("id").to_owned(),
        web["id"].as_str().expect("id").to_owned(),
    );
    let edge = json_of(&run(&[
        "topology",
        "add-edge",
        &webid,
        &dbid,
        "--protocol",
        "tcp",
        "--port",
        "5432",
        "-o",
        "json",
    ]));
    assert_eq!(edge["port"], 5432);
    let table = ok(&run(&["topology", "nodes"]));
    assert!(
        table.contains("db #1") && table.contains("tier:web"),
        "{table}"
    );
    let export = ok(&run(&["topology", "export"]));
    assert!(export.starts_with("flowchart LR\n"), "{export}");
    assert!(
        export.contains("subgraph z1[\"prod #quot;eu#quot;\"]")
            && export.contains("[(\"db #35;1\")]"),
        "{export}"
    );
    assert!(export.contains("-->|\"tcp/5432\"|"), "{export}");
    let snap = json_of(&run(&["topology", "snapshot", "-o", "json"]));
    assert_eq!(
        (snap["node_count"].clone(), snap["edge_count"].clone()),
        (json!(2), json!(1))
    );
    assert_eq!(snap["sha256"].as_str().map(str::len), Some(64));
    let shown: Value = serde_json::from_str(&ok(&run(&[
        "topology",
        "show-snapshot",
        snap["id"].as_str().expect("id"),
    ])))
    .expect("json");
    assert_eq!(shown["sha256"], snap["sha256"]);
    // What fails with db: web.
    let br = json_of(&run(&["blast-radius", &dbid, "-o", "json"]));
    assert_eq!(br["impacted"][0]["name"], "web");
    let text = run(&["blast-radius", &dbid]);
    assert!(
        ok(&text).contains("web") && err(&text).contains("if db #1 fails, 1 node(s) are affected"),
        "{}",
        err(&text)
    );
    // Diagrams.
    let d = json_of(&run(&[
        "diagrams", "generate", "--name", "Prod", "-o", "json",
    ]));
    let did = d["id"].as_str().expect("id").to_owned();
    assert_eq!(ok(&run(&["diagrams", "show", &did])), export);
    // `ls` as every other group says it, `list` still understood (CONTRACT 33).
    let listed = json_of(&run(&["diagrams", "ls", "-o", "json"]));
    assert!(
        listed
            .as_array()
            .is_some_and(|a| a.iter().any(|x| x["id"] == did.as_str())),
        "{listed}"
    );
    assert_eq!(json_of(&run(&["diagrams", "list", "-o", "json"])), listed);
    let tpl = json_of(&run(&["diagrams", "templates", "-o", "json"]));
    let t = json_of(&run(&[
        "diagrams",
        "from-template",
        tpl[0]["id"].as_str().expect("id"),
        "-o",
        "json",
    ]));
    assert_eq!(t["name"], tpl[0]["name"]);
    let file = dir.0.join("d.mmd");
    std::fs::write(&file, "flowchart LR\n  a --> b\n").expect("write");
    let edited = json_of(&run(&[
        "diagrams",
        "edit",
        &did,
        "--file",
        file.to_str().expect("path"),
        "-o",
        "json",
    ]));
    assert_eq!(
        (edited["name"].clone(), edited["source"].clone()),
        (json!("Prod"), json!("flowchart LR\n  a --> b\n"))
    );
    let shared = json_of(&run(&["diagrams", "share", &did, "-o", "json"]));
    let link = shared["url"].as_str().expect("url").to_owned();
    assert!(link.contains("/api/v1/diagrams/share/thd_"), "{link}");
    let public = std::process::Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", &link])
        .output()
        .expect("curl");
    assert_eq!(String::from_utf8_lossy(&public.stdout), "200");
    ok(&run(&["diagrams", "unshare", &did]));
    let public = std::process::Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", &link])
        .output()
        .expect("curl");
    assert_eq!(String::from_utf8_lossy(&public.stdout), "404");
    // Refusals: a self-loop is 1, an unknown node is 3.
    let o = run(&["topology", "add-edge", &webid, &webid]);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(err(&o).contains("target_id"), "{}", err(&o));
    let o = run(&["topology", "rm-node", &uuid::Uuid::new_v4().to_string()]);
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    ok(&run(&["topology", "rm-node", &dbid]));
    assert_eq!(
        json_of(&run(&["topology", "edges", "-o", "json"])),
        json!([])
    );
    ok(&run(&["diagrams", "rm", &did]));
    drop(hub);
}

/// `trusthub up` in `dir` on `listen`, with `extra` flags: the process and the hub's
/// address once it listens.
fn start_up(dir: &Path, listen: &str, extra: &[&str]) -> (std::process::Child, String) {
    use std::io::BufRead as _;
    let mut child = Command::new(BIN)
        .current_dir(dir)
        .args(["up", "--listen", listen, "--data-dir", "data"])
        .args(extra)
        .env_remove("TRUSTHUB_ADMIN_PASSWORD")
        .env_remove("TRUSTHUB_DATABASE_URL")
        .env_remove("TRUSTHUB_AGENT_ALLOW_CONSOLE")
        .env_remove("TRUSTHUB_OUTBOUND_ALLOW_CIDRS")
        .env("TRUSTHUB_CA_KEY_BITS", "2048")
        .env("TRUSTHUB_AGENT_INTERVAL_SECS", "5")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn trusthub up");
    let out = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut seen = String::new();
    loop {
        let Ok(line) = rx.recv_timeout(std::time::Duration::from_secs(120)) else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("trusthub up did not start: {seen}");
        };
        seen.push_str(&line);
        seen.push('\n');
        if let Some(addr) = line.strip_prefix("Trusthub hub listening on ") {
            let addr = addr.trim().to_owned();
            // The first start says how to log in with the CLI (CONTRACT 33).
            let login = rx
                .recv_timeout(std::time::Duration::from_secs(10))
                .into_iter()
                .chain(std::iter::from_fn(|| {
                    rx.recv_timeout(std::time::Duration::from_secs(2)).ok()
                }))
                .take(4)
                .find(|l| l.contains("Log in:"))
                .unwrap_or_default();
            assert!(login.contains(&format!("trusthub login {addr}")), "{login}");
            std::thread::spawn(move || while rx.recv().is_ok() {});
            return (child, addr);
        }
    }
}

/// The local agent of `up`, once connected: its id.
fn up_agent(config: &Path) -> String {
    let mut agents = Value::Null;
    for _ in 0..150 {
        agents = json_of(&cli(config, &["agents", "ls", "-o", "json"], "", &[]));
        if agents[0]["connected"] == true {
            return agents[0]["id"].as_str().expect("id").to_owned();
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    panic!("the local agent did not connect: {agents}");
}

/// CONTRACT 33: `trusthub up` lets its agent open consoles only with `--allow-console`;
/// without it `trusthub console` exits 1 saying why and how to allow it, with it the shell
/// runs in the terminal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn up_opens_consoles_only_when_allowed_and_a_failed_console_says_why() {
    let dir = TempDir::new();
    let config = dir.0.join("config");
    // One address for both starts, so the CLI's saved login stays good.
    let listen = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .to_string();
    let (mut up, base) = start_up(&dir.0, &listen, &[]);
    let password = initial_password(&dir.0.join("data"));
    ok(&cli(
        &config,
        &["login", &base],
        &format!("admin@trusthub.local\n{password}\n"),
        &[],
    ));
    // `up` lets checks, channels and webhooks reach the private ranges (CONTRACT 33).
    let t = json_of(&cli(&config, &["tenant", "get", "-o", "json"], "", &[]));
    assert_eq!(
        t["operator_networks"],
        serde_json::json!([
            "10.0.0.0/8",
            "172.16.0.0/12",
            "192.168.0.0/16",
            "100.64.0.0/10",
            "fc00::/7"
        ]),
        "{t}"
    );
    assert_eq!(t["allowed_networks"], serde_json::Value::Null, "{t}");
    // TOTP from the terminal (CONTRACT 33): set up, then turned on with the app's first code.
    let setup = json_of(&cli(&config, &["totp", "setup", "-o", "json"], "", &[]));
    let secret =
        trusthub_core::totp::secret_from_base32(setup["secret_base32"].as_str().expect("secret"))
            .expect("base32");
    assert!(
        setup["otpauth_uri"]
            .as_str()
            .is_some_and(|u| u.starts_with("otpauth://totp/")),
        "{setup}"
    );
    while unix_now() % 30 > 20 {
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    let on = cli(
        &config,
        &[
            "totp",
            "verify",
            &trusthub_core::totp::code_at(&secret, unix_now()),
        ],
        "",
        &[],
    );
    assert!(
        text(&on).contains("TOTP is on"),
        "{}{}",
        text(&on),
        err(&on)
    );
    assert_eq!(
        text(&on)
            .lines()
            .filter(|l| l.len() >= 8 && !l.starts_with("TOTP"))
            .count(),
        10,
        "{}",
        text(&on)
    );
    let agent = up_agent(&config);
    let step = unix_now() / 30;
    while unix_now() / 30 < step + 1 {
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    let code = trusthub_core::totp::code_at(&secret, unix_now());
    let o = cli(
        &config,
        &[
            "console",
            &agent,
            "--reason",
            "not allowed",
            "--totp",
            &code,
        ],
        "",
        &[],
    );
    assert_eq!(o.status.code(), Some(1), "{}{}", text(&o), err(&o));
    assert!(
        err(&o).contains("does not allow consoles")
            && err(&o).contains("trusthub up --allow-console"),
        "{}",
        err(&o)
    );
    let _ = up.kill();
    let _ = up.wait();

    // The same hub and agent, started again with the console allowed.
    let (mut up, again) = start_up(&dir.0, &listen, &["--allow-console"]);
    assert_eq!(again, base);
    let agent = up_agent(&config);
    let step = unix_now() / 30;
    while unix_now() / 30 < step + 1 {
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    let (status, screen) = on_a_terminal(
        &config,
        &format!(
            "console {agent} --reason 'allowed now' --totp {}",
            trusthub_core::totp::code_at(&secret, unix_now())
        ),
        &["echo up-$((6*7))", "exit 3"],
    );
    assert!(status.success(), "{screen}");
    assert!(screen.contains("up-42"), "{screen}");
    assert!(
        screen.contains("the session ended (exit code 3)"),
        "{screen}"
    );
    let _ = up.kill();
    let _ = up.wait();
}
