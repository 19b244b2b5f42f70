//! Compliance, the security view and log explanations over the API and the dashboard
//! (CONTRACT 25), both engines: results with their framework mappings, runs (asked for,
//! answered through the ingest answer, rate-limited), validation that stores nothing, the
//! exports checked by their tools (compliance-trestle for OSCAL), honeypot touches raising
//! one critical alert, the `dna_changed` anomaly, silent agents, `/ai/explain` through a local
//! OpenAI-compatible server that records what it got (held true by OpenAI's official Python
//! client) and through the built-in rules, tenants apart, and the pages in a real browser.

use crate::agents::{Host, register, send, ts};
use crate::harness::*;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use time::OffsetDateTime;
use uuid::Uuid;

crate::dual!(
    results_are_listed_per_framework_and_runs_are_answered,
    bad_reports_are_refused_and_store_nothing,
    honeypots_dna_and_silent_agents_make_the_security_view,
    exports_carry_every_control,
    runs_are_rate_limited_counting_accepted_ones,
    a_run_another_hub_asked_for_reaches_the_host_within_seconds,
);

async fn runs_are_rate_limited_counting_accepted_ones(b: Backend) {
    let app = TestApp::spawn_with(b, |s| s.rate_limits = "on".into()).await;
    let host = register(&app).await;
    // Refused runs do not count.
    for _ in 0..3 {
        assert_eq!(
            app.post(
                "/compliance/run",
                &app.owner,
                json!({"agent_id": Uuid::new_v4()})
            )
            .await
            .status(),
            404
        );
    }
    for _ in 0..10 {
        assert_eq!(
            app.post("/compliance/run", &app.owner, json!({"agent_id": host.id}))
                .await
                .status(),
            202
        );
    }
    let r = app.post("/compliance/run", &app.owner, json!({})).await;
    assert!(r.headers().get("retry-after").is_some());
    assert_problem(r, 429, "rate_limited").await;
    assert_eq!(app.count("SELECT COUNT(*) FROM compliance_runs").await, 10);
    // Another user has their own budget.
    let (admin, _) = app.user_with_role("admin").await;
    assert_eq!(
        app.post("/compliance/run", &admin, json!({}))
            .await
            .status(),
        202
    );
}

/// The 21 checks with a status each: the first `failing` fail, two do not apply, the rest
/// pass.
pub(crate) fn report(run: Option<&str>, at: OffsetDateTime, failing: usize) -> Value {
    let results: Vec<Value> = trusthub_core::compliance::CHECKS
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let status = if i < failing {
                "fail"
            } else if c.id == "ssh_x11_forwarding" || c.id == "sshd_config_mode" {
                "not_applicable"
            } else {
                "pass"
            };
            json!({"check_id": c.id, "status": status, "evidence": format!("=evidence of {}", c.id), "remediation": c.remediation})
        })
        .collect();
    json!({"run_id": run, "checked_at": ts(at), "results": results})
}

/// Sends one batch carrying `extra` (compliance, dna, honeypot_events); the hub's answer.
pub(crate) async fn push(app: &TestApp, host: &Host, extra: Value) -> reqwest::Response {
    let mut b = json!({"batch_id": Uuid::new_v4(), "sent_at": ts(OffsetDateTime::now_utc())});
    for (k, v) in extra.as_object().expect("object") {
        b[k] = v.clone();
    }
    send(app, host, b.to_string().as_bytes(), None, true).await
}

async fn accepted(app: &TestApp, host: &Host, extra: Value) -> Value {
    let r = push(app, host, extra).await;
    assert_eq!(r.status(), 202, "{}", r.text().await.unwrap_or_default());
    body(r).await
}

fn dna(machine: &str, boot: &str) -> Value {
    let parts = trusthub_core::compliance::DnaParts {
        machine_id: machine.into(),
        boot_id: boot.into(),
        kernel: "6.1.0-28-amd64".into(),
        os: "Debian GNU/Linux 12 (bookworm)".into(),
        ssh_host_keys: vec!["SHA256:ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0".into()],
        agent_sha256: "ab".repeat(32),
    };
    json!({"fingerprint_sha256": parts.fingerprint(), "parts": parts})
}

async fn results_are_listed_per_framework_and_runs_are_answered(b: Backend) {
    let app = TestApp::spawn(b).await;
    let (web, db) = (register(&app).await, register(&app).await);
    let t0 = OffsetDateTime::now_utc() - time::Duration::hours(2);
    accepted(&app, &web, json!({"compliance": report(None, t0, 3)})).await;
    accepted(&app, &db, json!({"compliance": report(None, t0, 0)})).await;

    let cis = body(
        app.get("/compliance?framework=cis-debian", &app.owner)
            .await,
    )
    .await;
    let cis = cis.as_array().expect("list");
    assert_eq!(cis.len(), 42, "21 checks on 2 hosts");
    let row = cis
        .iter()
        .find(|r| r["agent_id"] == web.id.as_str() && r["check_id"] == "ssh_permit_root_login")
        .expect("row");
    assert_eq!(row["framework"], "cis-debian");
    assert_eq!(row["control_ids"], json!(["5.1.20"]));
    assert_eq!(row["status"], "fail");
    assert_eq!(row["title"], "SSH root login is disabled or key-only");
    assert_eq!(row["hostname"], "web-1");
    assert_eq!(row["evidence"], "=evidence of ssh_permit_root_login");
    assert!(
        row["remediation"]
            .as_str()
            .unwrap_or_default()
            .contains("PermitRootLogin")
    );
    assert!(row["run_id"].is_null());
    let pw = cis
        .iter()
        .find(|r| r["check_id"] == "ssh_password_authentication")
        .expect("pw");
    assert_eq!(
        pw["control_ids"],
        json!([]),
        "CIS Debian 12 has no such control"
    );
    let all = body(app.get("/compliance", &app.owner).await).await;
    assert_eq!(
        all.as_array().map(Vec::len),
        Some(42 * 4),
        "once per framework"
    );
    for (f, check, control) in [
        ("iso27001", "auditd", "A.8.15"),
        ("soc2", "uid0_only_root", "CC6.3"),
        ("nis2", "sysctl_network", "Art.21(2)(e)"),
    ] {
        let list = body(
            app.get(
                &format!("/compliance?framework={f}&agent_id={}", web.id),
                &app.owner,
            )
            .await,
        )
        .await;
        let r = list
            .as_array()
            .expect("list")
            .iter()
            .find(|r| r["check_id"] == check)
            .cloned()
            .expect("row");
        assert!(
            r["control_ids"]
                .as_array()
                .expect("ids")
                .contains(&json!(control)),
            "{f} {check}: {r}"
        );
        assert_eq!(list.as_array().map(Vec::len), Some(21));
    }
    let failing = body(
        app.get("/compliance?framework=soc2&status=fail", &app.owner)
            .await,
    )
    .await;
    assert_eq!(failing.as_array().map(Vec::len), Some(3));
    // Filters are checked: unknown values 422, unknown parameters 400, another tenant's host 404.
    assert_problem(
        app.get("/compliance?framework=pci", &app.owner).await,
        422,
        "validation_failed",
    )
    .await;
    assert_problem(
        app.get("/compliance?status=failed", &app.owner).await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(
        app.get("/compliance?frameworks=soc2", &app.owner)
            .await
            .status(),
        400
    );
    let other = app.other_tenant().await;
    assert_eq!(
        app.get(&format!("/compliance?agent_id={}", web.id), &other)
            .await
            .status(),
        404
    );
    assert_eq!(body(app.get("/compliance", &other).await).await, json!([]));

    // A later run replaces the latest results; an older report does not.
    accepted(
        &app,
        &web,
        json!({"compliance": report(None, t0 + time::Duration::hours(1), 1)}),
    )
    .await;
    accepted(
        &app,
        &web,
        json!({"compliance": report(None, t0 - time::Duration::hours(1), 10)}),
    )
    .await;
    let now_failing = body(
        app.get(
            &format!("/compliance?framework=soc2&status=fail&agent_id={}", web.id),
            &app.owner,
        )
        .await,
    )
    .await;
    assert_eq!(now_failing.as_array().map(Vec::len), Some(1));
    let history = body(
        app.get(
            &format!("/compliance/history?agent_id={}", web.id),
            &app.owner,
        )
        .await,
    )
    .await;
    let failed: Vec<i64> = history
        .as_array()
        .expect("h")
        .iter()
        .map(|h| h["failed"].as_i64().unwrap_or(-1))
        .collect();
    assert_eq!(failed, [10, 3, 1], "oldest first");

    // Runs: admin only; the host is told in the answer to its next batch and answers with the id.
    let (viewer, _) = app.user_with_role("viewer").await;
    assert_eq!(
        app.post("/compliance/run", &viewer, json!({}))
            .await
            .status(),
        403
    );
    assert_problem(
        app.post("/compliance/run", &app.owner, json!({"agent": web.id}))
            .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(
        app.post("/compliance/run", &other, json!({"agent_id": web.id}))
            .await
            .status(),
        404
    );
    let r = app
        .post("/compliance/run", &app.owner, json!({"agent_id": web.id}))
        .await;
    assert_eq!(r.status(), 202);
    let run = body(r).await;
    let run_id = run["run_id"].as_str().expect("id").to_owned();
    assert_eq!(run["agents"], json!([web.id]));
    let ack = accepted(&app, &web, json!({})).await;
    assert_eq!(ack["compliance_run_id"], run_id.as_str());
    assert_eq!(ack["compliance_interval_secs"], 43_200);
    assert!(
        accepted(&app, &db, json!({})).await["compliance_run_id"].is_null(),
        "only the host asked"
    );
    let ack = accepted(
        &app,
        &web,
        json!({"compliance": report(Some(&run_id), OffsetDateTime::now_utc(), 2)}),
    )
    .await;
    assert!(ack["compliance_run_id"].is_null(), "answered: {ack}");
    let runs = body(app.get("/compliance/runs", &app.owner).await).await;
    assert_eq!(runs[0]["id"], run_id.as_str());
    assert_eq!(
        (runs[0]["done"].as_i64(), runs[0]["hosts"].as_i64()),
        (Some(1), Some(1))
    );
    let latest = body(
        app.get(
            &format!("/compliance?framework=cis-debian&agent_id={}", web.id),
            &app.owner,
        )
        .await,
    )
    .await;
    assert!(
        latest
            .as_array()
            .expect("l")
            .iter()
            .all(|r| r["run_id"] == run_id.as_str())
    );
    // Every host at once.
    let all_run = body(app.post("/compliance/run", &app.owner, json!({})).await).await;
    assert_eq!(all_run["agents"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        accepted(&app, &db, json!({})).await["compliance_run_id"],
        all_run["run_id"]
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM audit_log WHERE event_type = 'compliance_run_requested'")
            .await,
        2
    );
    assert_eq!(
        body(app.get("/compliance/runs", &other).await).await,
        json!([])
    );
}

async fn bad_reports_are_refused_and_store_nothing(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    let now = OffsetDateTime::now_utc();
    let mut bad_status = report(None, now, 0);
    bad_status["results"][0]["status"] = json!("passed");
    let mut twice = report(None, now, 0);
    twice["results"][1]["check_id"] = twice["results"][0]["check_id"].clone();
    let mut extra = report(None, now, 0);
    extra["results"][0]["severity"] = json!("high");
    let mut forged = dna("m-1", "b-1");
    forged["parts"]["machine_id"] = json!("someone-else");
    let long_events: Vec<Value> = (0..101)
        .map(|_| json!({"kind": "port", "target": "2323", "at": ts(now), "detail": "x"}))
        .collect();
    for (extra, field) in [
        (
            json!({"compliance": bad_status}),
            "compliance.results[0].status",
        ),
        (
            json!({"compliance": twice}),
            "compliance.results[1].check_id",
        ),
        (
            json!({"compliance": extra}),
            "compliance.results[0].severity",
        ),
        (json!({"dna": forged}), "dna.fingerprint_sha256"),
        (
            json!({"honeypot_events": [{"kind": "door", "target": "x", "at": ts(now), "detail": ""}]}),
            "honeypot_events[0].kind",
        ),
        (json!({"honeypot_events": long_events}), "honeypot_events"),
        (
            json!({"metrics": [], "compliance": {"checked_at": ts(now)}}),
            "compliance.results",
        ),
    ] {
        let p = assert_problem(push(&app, &host, extra).await, 422, "validation_failed").await;
        assert!(names_field(&p, field), "{field}: {p}");
    }
    for table in [
        "compliance_results",
        "compliance_history",
        "host_dna",
        "honeypot_events",
        "inventory_snapshots",
    ] {
        assert_eq!(
            app.count(&format!("SELECT COUNT(*) FROM {table}")).await,
            0,
            "{table}"
        );
    }
    // Governance refuses bad honeypots and intervals, naming them.
    let gov = |extra: Value| {
        let mut g = json!({"ingest_interval_secs": 60, "inventory_interval_secs": 3600, "tags": [], "allowed_actions": []});
        for (k, v) in extra.as_object().expect("o") {
            g[k] = v.clone();
        }
        g
    };
    for (bad, field) in [
        (
            json!({"honeypots": [{"kind": "file", "target": "relative/path"}]}),
            "honeypots",
        ),
        (
            json!({"honeypots": [{"kind": "port", "target": "70000"}]}),
            "honeypots",
        ),
        // CONTRACT 30: privileged ports are a real service's.
        (
            json!({"honeypots": [{"kind": "port", "target": "80"}]}),
            "honeypots",
        ),
        (
            json!({"honeypots": [{"kind": "user", "target": "x", "colour": "red"}]}),
            "honeypots[0].colour",
        ),
        (
            json!({"compliance_interval_secs": 10}),
            "compliance_interval_secs",
        ),
    ] {
        let r = app
            .send_json(
                reqwest::Method::PUT,
                &format!("/agents/{}/governance", host.id),
                &app.owner,
                gov(bad),
            )
            .await;
        let p = assert_problem(r, 422, "validation_failed").await;
        assert!(names_field(&p, field), "{field}: {p}");
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM agents WHERE honeypots <> '[]' OR compliance_interval_secs <> 43200").await, 0);
    // Only admins set honeypots: an operator's change is 403, and an operator's PUT
    // without `honeypots` keeps the admin's.
    let url = format!("/agents/{}/governance", host.id);
    let pots = json!([{"kind": "port", "target": "2323"}]);
    let (operator, _) = app.user_with_role("operator").await;
    let r = app
        .send_json(
            reqwest::Method::PUT,
            &url,
            &operator,
            gov(json!({"honeypots": pots})),
        )
        .await;
    assert_eq!(r.status(), 403);
    let r = app
        .send_json(
            reqwest::Method::PUT,
            &url,
            &app.owner,
            gov(json!({"honeypots": pots})),
        )
        .await;
    assert_eq!(r.status(), 200);
    let r = app
        .send_json(
            reqwest::Method::PUT,
            &url,
            &operator,
            gov(json!({"tags": ["web"]})),
        )
        .await;
    assert_eq!(r.status(), 200);
    let g = body(app.get(&url, &operator).await).await;
    assert_eq!(
        (g["honeypots"].clone(), g["tags"].clone()),
        (pots.clone(), json!(["web"])),
        "{g}"
    );
    let r = app
        .send_json(
            reqwest::Method::PUT,
            &url,
            &operator,
            gov(json!({"honeypots": []})),
        )
        .await;
    assert_eq!(r.status(), 403, "an operator cannot disarm them either");
    // CONTRACT 30: the host says whether each is armed; the security view shows it.
    let sec = body(app.get("/security", &app.owner).await).await;
    assert_eq!(sec["honeypots"][0]["state"], "unknown", "{sec}");
    accepted(
        &app,
        &host,
        json!({"honeypot_states": [{"kind": "port", "target": "2323", "armed": false,
            "why": "cannot listen on port 2323: Address in use (os error 98)"}]}),
    )
    .await;
    let sec = body(app.get("/security", &app.owner).await).await;
    assert_eq!(sec["honeypots"][0]["state"], "not_armed", "{sec}");
    assert!(
        sec["honeypots"][0]["why"]
            .as_str()
            .is_some_and(|w| w.contains("in use")),
        "{sec}"
    );
    accepted(
        &app,
        &host,
        json!({"honeypot_states": [{"kind": "port", "target": "2323", "armed": true}]}),
    )
    .await;
    let sec = body(app.get("/security", &app.owner).await).await;
    assert_eq!(sec["honeypots"][0]["state"], "armed", "{sec}");
    // A bad state is refused, naming it.
    let b = json!({"batch_id": Uuid::new_v4(), "sent_at": ts(OffsetDateTime::now_utc()),
        "honeypot_states": [{"kind": "door", "target": "x", "armed": true}]});
    let r = send(&app, &host, b.to_string().as_bytes(), None, true).await;
    let p = assert_problem(r, 422, "validation_failed").await;
    assert!(names_field(&p, "honeypot_states[0]"), "{p}");
}

async fn honeypots_dna_and_silent_agents_make_the_security_view(b: Backend) {
    let app = TestApp::spawn(b).await;
    let (web, quiet) = (register(&app).await, register(&app).await);
    let pots = json!([{"kind": "file", "target": "/etc/backup-keys.txt"}, {"kind": "user", "target": "oracle"}, {"kind": "port", "target": "2323"}]);
    let r = app
        .send_json(reqwest::Method::PUT, &format!("/agents/{}/governance", web.id), &app.owner, json!({"ingest_interval_secs": 60, "inventory_interval_secs": 3600, "tags": [], "allowed_actions": [], "honeypots": pots, "compliance_interval_secs": 3600}))
        .await;
    assert_eq!(r.status(), 200);
    let g = body(r).await;
    assert_eq!(g["honeypots"], pots);
    assert_eq!(g["compliance_interval_secs"], 3600);
    let ack = accepted(&app, &web, json!({})).await;
    assert_eq!(ack["honeypots"], pots, "the agent is told what to watch");
    assert_eq!(ack["compliance_interval_secs"], 3600);

    let sec = body(app.get("/security", &app.owner).await).await;
    assert_eq!(sec["honeypots"].as_array().map(Vec::len), Some(3));
    assert!(
        sec["honeypots"]
            .as_array()
            .expect("h")
            .iter()
            .all(|h| h.get("triggered_at").is_none())
    );

    // Two touches of the port: two events, one open critical alert.
    let now = OffsetDateTime::now_utc();
    for s in [2, 1] {
        let at = now - time::Duration::seconds(s);
        accepted(&app, &web, json!({"honeypot_events": [{"kind": "port", "target": "2323", "at": ts(at), "detail": format!("connection to port 2323 from 203.0.113.{s}:40000")}]})).await;
    }
    let sec = body(app.get("/security", &app.owner).await).await;
    let port = &sec["honeypots"][0];
    assert_eq!(
        (port["kind"].as_str(), port["target"].as_str()),
        (Some("port"), Some("2323"))
    );
    assert_eq!(
        port["detail"], "connection to port 2323 from 203.0.113.1:40000",
        "the latest touch"
    );
    assert_eq!(port["agent_id"], web.id.as_str());
    assert_eq!(app.count("SELECT COUNT(*) FROM honeypot_events").await, 2);
    let alerts = body(app.get("/alerts", &app.owner).await).await;
    let pot_alerts: Vec<&Value> = alerts
        .as_array()
        .expect("a")
        .iter()
        .filter(|a| a["source"] == "honeypot")
        .collect();
    assert_eq!(pot_alerts.len(), 1, "{alerts}");
    assert_eq!(pot_alerts[0]["severity"], "critical");
    assert!(
        pot_alerts[0]["title"]
            .as_str()
            .unwrap_or_default()
            .contains("port 2323")
    );

    // DNA: the first is held; a reboot (boot id) changes nothing; another machine is an anomaly.
    accepted(&app, &web, json!({"dna": dna("m-1", "boot-1")})).await;
    accepted(&app, &web, json!({"dna": dna("m-1", "boot-2")})).await;
    assert_eq!(
        app.count("SELECT COUNT(*) FROM integrity_anomalies").await,
        0
    );
    let first = body(app.get("/security", &app.owner).await).await["dna"][0].clone();
    assert!(first.get("changed_at").is_none());
    assert_eq!(first["parts"]["boot_id"], "boot-2");
    accepted(&app, &web, json!({"dna": dna("m-2", "boot-3")})).await;
    let anomalies = body(app.get("/integrity-anomalies", &app.owner).await).await;
    let a = anomalies
        .as_array()
        .expect("a")
        .iter()
        .find(|a| a["kind"] == "dna_changed")
        .cloned()
        .expect("dna_changed");
    assert_eq!(a["agent_id"], web.id.as_str());
    assert_eq!(a["evidence"]["changed"], json!(["machine_id"]));
    assert_eq!(a["evidence"]["previous"], first["fingerprint_sha256"]);
    let now_dna = body(app.get("/security", &app.owner).await).await["dna"][0].clone();
    assert_eq!(now_dna["previous"], first["fingerprint_sha256"]);
    assert!(now_dna["changed_at"].is_string());
    assert_eq!(now_dna["parts"]["machine_id"], "m-2");

    // Silent: `quiet` was last seen long ago (3 × its 60 s interval).
    let old = if matches!(b, Backend::Postgres) {
        "NOW() - INTERVAL '10 minutes'".to_owned()
    } else {
        format!("'{}'", ts(now - time::Duration::minutes(10)))
    };
    assert_eq!(
        app.execute(&format!(
            "UPDATE agents SET last_seen_at = {old} WHERE machine_id = '{}'",
            quiet.machine_id
        ))
        .await,
        1
    );
    let sec = body(app.get("/security", &app.owner).await).await;
    let silent = sec["silent_agents"].as_array().expect("s");
    assert_eq!(silent.len(), 1, "{sec}");
    assert_eq!(silent[0]["agent_id"], quiet.id.as_str());
    assert_eq!(silent[0]["expected_every_secs"], 60);

    // Another tenant sees nothing of it.
    let other = app.other_tenant().await;
    assert_eq!(
        body(app.get("/security", &other).await).await,
        json!({"honeypots": [], "dna": [], "silent_agents": []})
    );
    let (viewer, _) = app.user_with_role("viewer").await;
    assert_eq!(app.get("/security", &viewer).await.status(), 200);
}

/// Runs compliance-trestle's validation on an OSCAL document (mandatory in CI).
fn trestle_validates(doc: &Value) -> Option<Result<(), String>> {
    let venv = PathBuf::from(
        std::env::var("TRUSTHUB_COMPLIANCE_PY")
            .unwrap_or_else(|_| "/usr/local/share/trusthub-validators/compliance-py".into()),
    );
    let trestle = venv.join("bin/trestle");
    if !trestle.is_file() {
        assert!(
            std::env::var_os("CI").is_none(),
            "compliance-trestle is required in CI ({trestle:?})"
        );
        eprintln!("NOTICE: compliance-trestle is not installed; skipping");
        return None;
    }
    let dir = TempDir::new();
    let run = |args: &[&str]| {
        std::process::Command::new(&trestle)
            .args(args)
            .current_dir(&dir.0)
            .output()
            .expect("trestle")
    };
    let init = run(&["init"]);
    assert!(
        init.status.success(),
        "trestle init: {}",
        String::from_utf8_lossy(&init.stderr)
    );
    let folder = dir.0.join("assessment-results/trusthub");
    std::fs::create_dir_all(&folder).expect("dir");
    let file = folder.join("assessment-results.json");
    std::fs::write(&file, doc.to_string()).expect("write");
    let out = run(&["validate", "-f", file.to_str().expect("path")]);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(
        if out.status.success() && said.contains("VALID") && !said.contains("INVALID") {
            Ok(())
        } else {
            Err(said)
        },
    )
}

async fn exports_carry_every_control(b: Backend) {
    let app = TestApp::spawn(b).await;
    let (web, db) = (register(&app).await, register(&app).await);
    let now = OffsetDateTime::now_utc();
    accepted(&app, &web, json!({"compliance": report(None, now, 4)})).await;
    accepted(&app, &db, json!({"compliance": report(None, now, 0)})).await;
    let get = |path: String| {
        let app = &app;
        async move {
            let r = app.get(&path, &app.owner).await;
            assert_eq!(r.status(), 200, "{path}");
            let disposition = r
                .headers()
                .get("content-disposition")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            assert!(
                disposition.starts_with("attachment; filename=\"trusthub-"),
                "{disposition}"
            );
            let ct = r
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            (ct, r.text().await.expect("text"))
        }
    };
    // CSV: one row per control id; cells guarded against formulas.
    let controls = |f: &str| -> usize {
        trusthub_core::compliance::CHECKS
            .iter()
            .map(|c| trusthub_compliance::frameworks::controls(c.id, f).len())
            .sum()
    };
    for tool in ["trustos", "cyberday"] {
        let (ct, csv) = get(format!("/compliance/export/{tool}?framework=cis-debian")).await;
        assert!(ct.starts_with("text/csv"));
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines[0],
            "framework,control_id,check_id,title,hostname,status,evidence,checked_at"
        );
        assert_eq!(lines.len() - 1, 2 * controls("cis-debian"), "{tool}");
        assert!(lines.iter().any(|l| l.starts_with("cis-debian,5.1.20,ssh_permit_root_login,SSH root login is disabled or key-only,web-1,fail,'=evidence of ssh_permit_root_login,")), "{csv}");
        let (_, every) = get(format!("/compliance/export/{tool}")).await;
        assert_eq!(
            every.lines().count() - 1,
            2 * ["cis-debian", "iso27001", "soc2", "nis2"]
                .iter()
                .map(|f| controls(f))
                .sum::<usize>()
        );
    }
    // Vanta: a custom-resource sync body, one resource per host and check.
    let (ct, vanta) = get("/compliance/export/vanta?resource_id=my-resource".into()).await;
    assert!(ct.starts_with("application/json"));
    let v: Value = serde_json::from_str(&vanta).expect("json");
    assert_eq!(v["resourceId"], "my-resource");
    let res = v["resources"].as_array().expect("resources");
    assert_eq!(res.len(), 42);
    let r = res
        .iter()
        .find(|r| r["uniqueId"] == format!("{}:auditd", web.id))
        .expect("auditd");
    assert_eq!(r["displayName"], "web-1: auditd is installed");
    assert!(
        r["externalUrl"]
            .as_str()
            .unwrap_or_default()
            .ends_with(&format!("/ui/compliance?agent_id={}", web.id))
    );
    assert_eq!(r["customProperties"]["iso27001"], "A.8.15");
    assert_eq!(
        r["customProperties"]["passing"],
        json!(r["customProperties"]["status"] == "pass")
    );
    for (k, v) in r["customProperties"].as_object().expect("props") {
        assert!(
            v.is_string() || v.is_boolean(),
            "{k}: Vanta's custom properties are strings, booleans or int32"
        );
    }
    assert_problem(
        app.get("/compliance/export/generic?resource_id=x", &app.owner)
            .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(
        app.get("/compliance/export/excel", &app.owner)
            .await
            .status(),
        404
    );
    // OSCAL: findings per control, checked by compliance-trestle.
    let (ct, oscal) = get("/compliance/export/generic".into()).await;
    assert!(ct.starts_with("application/json"));
    let doc: Value = serde_json::from_str(&oscal).expect("json");
    let result = &doc["assessment-results"]["results"][0];
    assert_eq!(
        result["local-definitions"]["inventory-items"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
    assert_eq!(result["observations"].as_array().map(Vec::len), Some(42));
    let findings = result["findings"].as_array().expect("findings");
    let not_satisfied = findings
        .iter()
        .filter(|f| f["target"]["status"]["state"] == "not-satisfied")
        .count();
    let failing_controls: usize = trusthub_core::compliance::CHECKS[..4]
        .iter()
        .map(|c| {
            ["cis-debian", "iso27001", "soc2", "nis2"]
                .iter()
                .map(|f| trusthub_compliance::frameworks::controls(c.id, f).len())
                .sum::<usize>()
        })
        .sum();
    assert_eq!(not_satisfied, failing_controls);
    assert!(
        findings
            .iter()
            .any(|f| f["target"]["target-id"] == "cis-debian_5.1.20")
    );
    if let Some(verdict) = trestle_validates(&doc) {
        verdict.expect("compliance-trestle validates the export");
        // The oracle can say no: a document without its required metadata is refused.
        let mut broken = doc.clone();
        broken["assessment-results"]
            .as_object_mut()
            .expect("o")
            .remove("metadata");
        assert!(trestle_validates(&broken).expect("ran").is_err());
    }
    // Another tenant's exports are empty.
    let other = app.other_tenant().await;
    let r = app.get("/compliance/export/trustos", &other).await;
    assert_eq!(r.text().await.expect("t").lines().count(), 1);
}

/// A local OpenAI-compatible chat-completions server that records what it got.
struct Model {
    url: String,
    got: Arc<Mutex<Vec<(String, Value)>>>,
}

async fn model(answer: &'static str) -> Model {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let got: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
    let rec = got.clone();
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
            let rec = rec.clone();
            async move {
                let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let auth = headers.get("authorization").and_then(|h| h.to_str().ok()).unwrap_or_default().to_owned();
                let model = v["model"].clone();
                rec.lock().expect("lock").push((auth, v));
                axum::Json(json!({
                    "id": "chatcmpl-1", "object": "chat.completion", "created": 1_764_000_000, "model": model,
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                }))
            }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    Model { url, got }
}

#[tokio::test]
async fn the_local_model_server_speaks_openais_protocol() {
    let venv = PathBuf::from(
        std::env::var("TRUSTHUB_COMPLIANCE_PY")
            .unwrap_or_else(|_| "/usr/local/share/trusthub-validators/compliance-py".into()),
    );
    let python = venv.join("bin/python");
    if !python.is_file() {
        assert!(
            std::env::var_os("CI").is_none(),
            "the openai client is required in CI"
        );
        return;
    }
    let m = model("It is fine.").await;
    let url = m.url.clone();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(python)
            .arg("-c")
            .arg("import sys, openai\nc = openai.OpenAI(base_url=sys.argv[1], api_key='k-1')\nr = c.chat.completions.create(model='llama3.2', messages=[{'role': 'user', 'content': 'hi'}])\nprint(r.choices[0].message.content)")
            .arg(url)
            .output()
            .expect("python")
    })
    .await
    .expect("join");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "It is fine.");
    let got = m.got.lock().expect("lock").clone();
    assert_eq!(got[0].0, "Bearer k-1");
    assert_eq!(got[0].1["messages"][0]["content"], "hi");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explanations_come_from_the_model_with_nothing_personal_or_from_the_rules() {
    let m = model("Jemand rät Passwörter.").await;
    let url = m.url.clone();
    let app = TestApp::spawn_with(Backend::Sqlite, |s| {
        s.sections
            .edit(|v: &mut trusthub_hub::sections::Llm| v.llm_url = Some(url));
        s.sections
            .edit(|v: &mut trusthub_hub::sections::Llm| v.llm_model = "qwen2.5:3b".into());
        s.sections
            .edit(|v: &mut trusthub_hub::sections::Llm| v.llm_api_key = Some("sk-local".into()));
    })
    .await;
    let host = register(&app).await;
    crate::topology::named(&app, &host, "payroll-db-7").await;
    let line = "Nov 27 10:01:02 payroll-db-7 sshd[812]: Failed password for invalid user alice.smith from 203.0.113.9 port 50514 ssh2; mail bob@example.com, from 2001:db8::17";
    let q = serde_urlencoded::to_string([
        ("log", line),
        ("agent_id", host.id.as_str()),
        ("lang", "de"),
    ])
    .expect("q");
    let r = body(app.get(&format!("/ai/explain?{q}"), &app.owner).await).await;
    assert_eq!(
        r,
        json!({"explanation": "Jemand rät Passwörter.", "lang": "de", "source": "llm", "model": "qwen2.5:3b"})
    );
    let got = m.got.lock().expect("lock").clone();
    assert_eq!(got.len(), 1);
    let (auth, sent) = &got[0];
    assert_eq!(auth, "Bearer sk-local");
    assert_eq!(sent["model"], "qwen2.5:3b");
    let text = sent.to_string();
    for personal in [
        "alice.smith",
        "203.0.113.9",
        "bob@example.com",
        "2001:db8::17",
        "payroll-db-7",
    ] {
        assert!(
            !text.contains(personal),
            "{personal} reached the model: {text}"
        );
    }
    let user = sent["messages"][1]["content"]
        .as_str()
        .expect("user message");
    assert!(
        user.contains("Debian 12") && user.contains("x86_64"),
        "the host's context: {user}"
    );
    assert!(
        user.contains("[USER]") && user.contains("sshd[812]: Failed password"),
        "{user}"
    );
    assert!(
        sent["messages"][0]["content"]
            .as_str()
            .unwrap_or_default()
            .contains("`de`")
    );

    // Another tenant's host is 404 and nothing is sent.
    let other = app.other_tenant().await;
    assert_eq!(
        app.get(&format!("/ai/explain?{q}"), &other).await.status(),
        404
    );
    assert_eq!(m.got.lock().expect("lock").len(), 1);

    // Without a model: the rules, in English and German; other languages need a model.
    let plain = TestApp::spawn(Backend::Sqlite).await;
    let ask = |lang: &str| {
        serde_urlencoded::to_string([
            (
                "log",
                "kernel: Out of memory: Killed process 4242 (java) total-vm:8388608kB",
            ),
            ("lang", lang),
        ])
        .expect("q")
    };
    let en = body(
        plain
            .get(&format!("/ai/explain?{}", ask("en")), &plain.owner)
            .await,
    )
    .await;
    assert_eq!(
        (
            en["source"].as_str(),
            en["rule"].as_str(),
            en["lang"].as_str()
        ),
        (Some("rules"), Some("oom_kill"), Some("en"))
    );
    assert!(
        en["explanation"]
            .as_str()
            .unwrap_or_default()
            .contains("killed java")
    );
    let de = body(
        plain
            .get(&format!("/ai/explain?{}", ask("de")), &plain.owner)
            .await,
    )
    .await;
    assert!(
        de["explanation"]
            .as_str()
            .unwrap_or_default()
            .contains("hat java beendet")
    );
    assert_problem(
        plain
            .get(&format!("/ai/explain?{}", ask("fr")), &plain.owner)
            .await,
        422,
        "validation_failed",
    )
    .await;
    assert_problem(
        plain
            .get("/ai/explain?log=x&lang=english", &plain.owner)
            .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(
        plain
            .get("/ai/explain?lang=en", &plain.owner)
            .await
            .status(),
        400,
        "log is required"
    );
    assert_eq!(
        plain
            .get("/ai/explain?log=x&language=en", &plain.owner)
            .await
            .status(),
        400
    );
    let unknown = body(plain.get("/ai/explain?log=all%20good", &plain.owner).await).await;
    assert!(unknown.get("rule").is_none() && unknown["source"] == "rules");

    // A model that fails: the rules answer, with a note.
    let down = TestApp::spawn_with(Backend::Sqlite, |s| {
        s.sections.edit(|v: &mut trusthub_hub::sections::Llm| {
            v.llm_url = Some("http://127.0.0.1:9/v1".into())
        })
    })
    .await;
    let r = body(
        down.get(&format!("/ai/explain?{}", ask("en")), &down.owner)
            .await,
    )
    .await;
    assert_eq!(r["source"], "rules");
    assert!(
        r["note"]
            .as_str()
            .unwrap_or_default()
            .contains("did not answer"),
        "{r}"
    );
}

#[tokio::test]
async fn the_compliance_security_and_explain_pages_work_in_a_browser() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let Some(browser) = crate::webdriver::Browser::start("compliance").await else {
        return;
    };
    let host = register(&app).await;
    accepted(
        &app,
        &host,
        json!({"compliance": report(None, OffsetDateTime::now_utc(), 2)}),
    )
    .await;
    let pots = json!([{"kind": "port", "target": "2323"}]);
    let r = app
        .send_json(reqwest::Method::PUT, &format!("/agents/{}/governance", host.id), &app.owner, json!({"ingest_interval_secs": 60, "inventory_interval_secs": 3600, "tags": [], "allowed_actions": [], "honeypots": pots}))
        .await;
    assert_eq!(r.status(), 200);
    accepted(&app, &host, json!({"honeypot_events": [{"kind": "port", "target": "2323", "at": ts(OffsetDateTime::now_utc()), "detail": "sshd[9]: Failed password for invalid user oracle from 203.0.113.5 port 2323 ssh2"}], "dna": dna("m-1", "b-1")})).await;
    browser
        .sign_in(&app.base, OWNER_EMAIL, OWNER_PASSWORD)
        .await;

    browser.goto(&format!("{}/ui/compliance", app.base)).await;
    assert!(browser.text("#hosts").await.contains("web-1"));
    let first = browser.text("#results tbody tr").await;
    assert!(first.contains("fail"), "failures first: {first}");
    let root = browser
        .text("#results tr[data-check=ssh_permit_root_login]")
        .await;
    assert!(
        root.contains("5.1.20") && root.contains("PermitRootLogin"),
        "{root}"
    );
    browser
        .click("nav[aria-label=Framework] a[href*='framework=soc2']")
        .await;
    browser.find("#results").await;
    assert!(browser.text("#results").await.contains("CC6.1"));
    let href = browser
        .eval("return document.querySelector('#exports a[href*=generic]').getAttribute('href')")
        .await;
    assert!(
        href.as_str()
            .unwrap_or_default()
            .starts_with("/ui/compliance/export/generic?framework=soc2")
    );
    // The export buttons download what the API exports.
    let r = app
        .get("//ui/compliance/export/trustos?framework=soc2", &app.owner)
        .await;
    assert_eq!(r.status(), 200);
    assert!(
        r.text()
            .await
            .expect("csv")
            .starts_with("framework,control_id,")
    );
    browser.click("#run-form button").await;
    assert!(browser.text("p.notice").await.contains("Asked 1 host(s)"));
    assert!(browser.text("#runs").await.contains("0 of 1"));
    assert!(browser.text("#history").await.contains("web-1"));

    browser.goto(&format!("{}/ui/security", app.base)).await;
    assert!(browser.text("#honeypots").await.contains("2323"));
    assert!(browser.text("#dna").await.contains("Debian GNU/Linux 12"));
    // Explain a honeypot touch from its button (the built-in rules here).
    browser.click("#honeypots a[href^='/ui/explain']").await;
    browser.find("#explanation").await;
    assert!(
        browser.text("#explanation").await.contains("oracle"),
        "{}",
        browser.text("#explanation").await
    );
    // And from an alert.
    browser.goto(&format!("{}/ui/alerts", app.base)).await;
    browser.click("a.explain").await;
    browser.find("#explanation").await;
    browser.set_value("select[name=lang]", "de").await;
    browser.click("#explain-form button").await;
    browser.find("#explanation[lang=de]").await;
    browser.assert_no_js_errors().await;
}

/// CONTRACT 30: secrets in a line never reach the model (each kind the hostile review
/// planted), and each user or token has its own budget of explanations a minute (429 with
/// `Retry-After` past it; nothing more is sent).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explanations_send_no_secret_and_are_rate_limited_per_caller() {
    let m = model("A configuration line.").await;
    let url = m.url.clone();
    let app = TestApp::spawn_with(Backend::Sqlite, |s| {
        s.sections
            .edit(|v: &mut trusthub_hub::sections::Llm| v.llm_url = Some(url));
        s.rate_limits = "on".into();
        s.sections
            .edit(|v: &mut trusthub_hub::sections::Llm| v.explain_rate = 3);
    })
    .await;
    let planted = [
        ("password=Hunter2hunter2", "Hunter2hunter2"),
        ("db_pass: Tr0ub4dor&3", "Tr0ub4dor&3"),
        ("api_key=k9PqZx7Lm2Nw", "k9PqZx7Lm2Nw"),
        (
            "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        ),
        ("Authorization: Basic Ym9iOnMzY3IzdA==", "Ym9iOnMzY3IzdA=="),
        (
            "dsn postgres://bob:PgPa55word@db.internal:5432/app",
            "PgPa55word",
        ),
    ];
    let line = planted
        .iter()
        .map(|(p, _)| *p)
        .collect::<Vec<_>>()
        .join(" ; ");
    let q = serde_urlencoded::to_string([("log", line.as_str())]).expect("q");
    for _ in 0..3 {
        let r = app.get(&format!("/ai/explain?{q}"), &app.owner).await;
        assert_eq!(r.status(), 200);
    }
    let got = m.got.lock().expect("lock").clone();
    assert_eq!(got.len(), 3);
    let text = got[0].1.to_string();
    for (_, secret) in planted {
        assert!(!text.contains(secret), "{secret} reached the model: {text}");
    }
    assert!(!text.contains("bob"), "the URL's user too: {text}");
    assert!(text.contains("[SECRET]"), "{text}");
    // The fourth call in the minute is refused, and nothing goes out.
    let r = app.get(&format!("/ai/explain?{q}"), &app.owner).await;
    assert_eq!(r.status(), 429);
    assert!(r.headers().get("retry-after").is_some());
    assert_eq!(m.got.lock().expect("lock").len(), 3);
    // Another caller has a budget of its own.
    let (viewer, _) = app.user_with_role("viewer").await;
    assert_eq!(
        app.get(&format!("/ai/explain?{q}"), &viewer).await.status(),
        200
    );
}

/// Ingest answers from the hosts owing a run as this hub last read them (issue 63), re-read
/// every few seconds: a run another hub of the cluster asked for (written to the tables as
/// that hub would, so this one is not told) reaches its host within `OPEN_RUNS_KEPT`, and a
/// report answering it ends it at once.
async fn a_run_another_hub_asked_for_reaches_the_host_within_seconds(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    assert!(accepted(&app, &host, json!({})).await["compliance_run_id"].is_null());
    let me = body(app.get("/me", &app.owner).await).await;
    let tenant: uuid::Uuid = me["tenant_id"]
        .as_str()
        .or_else(|| me["user"]["tenant_id"].as_str())
        .expect("tenant")
        .parse()
        .expect("uuid");
    let host_id: uuid::Uuid = host.id.parse().expect("uuid");
    let run = uuid::Uuid::now_v7();
    let mut tx = app.db.begin().await.expect("tx");
    trusthub_compliance::raw::insert_run(
        &mut tx,
        trusthub_store::TenantId(tenant),
        run,
        Some(host_id),
        "user:elsewhere",
        &[host_id],
        OffsetDateTime::now_utc(),
    )
    .await
    .expect("run");
    tx.commit().await.expect("commit");
    let asked = std::time::Instant::now();
    let limit = trusthub_compliance::service::OPEN_RUNS_KEPT + std::time::Duration::from_secs(3);
    loop {
        let ack = accepted(&app, &host, json!({})).await;
        if ack["compliance_run_id"] == run.to_string().as_str() {
            break;
        }
        assert!(asked.elapsed() < limit, "not asked within {limit:?}: {ack}");
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    let ack = accepted(
        &app,
        &host,
        json!({"compliance": report(Some(&run.to_string()), OffsetDateTime::now_utc(), 1)}),
    )
    .await;
    assert!(ack["compliance_run_id"].is_null(), "answered: {ack}");
    assert!(
        accepted(&app, &host, json!({})).await["compliance_run_id"].is_null(),
        "and not asked again"
    );
}
