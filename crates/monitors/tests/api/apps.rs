//! Tracked apps (SPEC 2.1, 3.1, 4.1): validation, roles, isolation, discovery, and the
//! liveness check driven tick by tick over what a (simulated, signing) agent reports.

use crate::agents::{Host, batch, register, send, ts};
use crate::harness::*;
use reqwest::Method;
use serde_json::{Value, json};
use time::OffsetDateTime;
use trusthub_hub::workers::{LivenessReport, liveness_tick};

crate::dual!(
    a_host_without_systemd_offers_its_services_and_refuses_systemd_apps,
    apps_are_validated_created_changed_and_untracked,
    liveness_raises_one_warning_on_the_third_mismatch_and_resolves_itself,
    unknowns_count_only_after_four_and_stale_reports_observe_nothing,
    http_apps_are_checked_by_their_agent,
    dns_and_ping_checks_are_run_by_their_agent_too,
    the_apps_page_lists_apps_off_first_by_host_and_name_200_a_page,
    discovery_lists_what_the_agent_runs,
    apps_and_alerts_of_another_tenant_are_404,
    periodic_work_is_leased_to_one_process,
    the_timeline_purge_deletes_every_apps_old_spans_and_keeps_the_rest,
);

/// Sends a batch carrying the live state of the host.
pub(crate) async fn report(
    app: &TestApp,
    host: &Host,
    systemd: Value,
    containers: Value,
    processes: Value,
) -> Value {
    let mut b = batch(json!([]));
    b["live"] = json!({"systemd": systemd, "containers": containers});
    b["processes"] = processes;
    let r = send(app, host, b.to_string().as_bytes(), None, true).await;
    assert_eq!(r.status(), 202);
    body(r).await
}

pub(crate) async fn nginx(app: &TestApp, host: &Host, active: &str) {
    report(
        app,
        host,
        json!([{"unit": "nginx.service", "active_state": active, "sub_state": "x"}]),
        json!([]),
        json!([]),
    )
    .await;
}

pub(crate) async fn tick(app: &TestApp) -> LivenessReport {
    liveness_tick(&app.state, hub_now()).await.expect("tick")
}

pub(crate) async fn create_app(app: &TestApp, auth: &Auth, body_: Value) -> Value {
    let r = app.post("/apps", auth, body_).await;
    assert_eq!(r.status(), 201);
    body(r).await
}

async fn apps_are_validated_created_changed_and_untracked(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    let cases = [
        (json!({"agent_id": host.id, "name": "x"}), "app_type"),
        (
            json!({"agent_id": host.id, "name": "x", "app_type": "vm", "identifier": "a"}),
            "app_type",
        ),
        (
            json!({"agent_id": host.id, "name": "x", "app_type": "systemd"}),
            "identifier",
        ),
        (
            json!({"agent_id": host.id, "name": "x", "app_type": "systemd", "identifier": "rm -rf /"}),
            "identifier",
        ),
        (
            json!({"agent_id": host.id, "name": "x", "app_type": "compose", "identifier": "shop-db"}),
            "identifier",
        ),
        (
            json!({"agent_id": host.id, "name": "x", "app_type": "process", "identifier": "bin/app"}),
            "identifier",
        ),
        (
            json!({"agent_id": host.id, "name": "x", "app_type": "process", "identifier": "/bin/app", "restart_command": "restart.sh"}),
            "restart_command",
        ),
        (
            json!({"agent_id": host.id, "name": "x", "app_type": "docker", "identifier": "web", "restart_command": "/bin/true"}),
            "restart_command",
        ),
        (
            json!({"agent_id": host.id, "name": "x", "type": "http", "endpoint": "ftp://x", "interval_seconds": 30}),
            "endpoint",
        ),
        (
            json!({"agent_id": host.id, "name": "x", "type": "http", "endpoint": "http://x"}),
            "interval_seconds",
        ),
        (
            json!({"agent_id": host.id, "name": "x", "type": "http", "endpoint": "http://x", "interval_seconds": 1}),
            "interval_seconds",
        ),
        (
            json!({"agent_id": host.id, "name": "", "app_type": "docker", "identifier": "web"}),
            "name",
        ),
        (
            json!({"agent_id": host.id, "name": "x", "app_type": "docker", "identifier": "web", "expected_state": "paused"}),
            "expected_state",
        ),
        (
            json!({"agent_id": host.id, "name": "x", "app_type": "docker", "identifier": "web", "owner_email": "nope"}),
            "owner_email",
        ),
        (
            json!({"agent_id": host.id, "name": "x", "app_type": "docker", "identifier": "web", "runbook_url": "javascript:alert(1)"}),
            "runbook_url",
        ),
        (
            json!({"agent_id": uuid::Uuid::new_v4(), "name": "x", "app_type": "docker", "identifier": "web"}),
            "agent_id",
        ),
    ];
    for (req, field) in cases {
        let r = app.post("/apps", &app.owner, req.clone()).await;
        let p = assert_problem(r, 422, "validation_failed").await;
        assert!(names_field(&p, field), "{req} should fail on {field}: {p}");
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM apps").await, 0);

    let (viewer, _) = app.user_with_role("viewer").await;
    let r = app
        .post(
            "/apps",
            &viewer,
            json!({"agent_id": host.id, "name": "web", "app_type": "docker", "identifier": "web"}),
        )
        .await;
    assert_problem(r, 403, "forbidden").await;
    let (operator, _) = app.user_with_role("operator").await;
    let a = create_app(
        &app,
        &operator,
        json!({"agent_id": host.id, "name": "nginx", "app_type": "systemd", "identifier": "nginx",
            "owner_email": "ops@example.com", "runbook_url": "https://wiki.example.com/nginx", "notes": "front"}),
    )
    .await;
    assert_eq!(a["identifier"], "nginx.service");
    assert_eq!(a["expected_state"], "running");
    assert_eq!(a["consecutive_mismatch"], 0);
    assert_eq!(a["alerting"], false);
    assert_eq!(a["tags"], json!(["env:test", "role:web"]));
    let r = app
        .post("/apps", &operator, json!({"agent_id": host.id, "name": "again", "app_type": "systemd", "identifier": "nginx.service"}))
        .await;
    assert_problem(r, 409, "conflict").await;
    let p = create_app(
        &app,
        &app.owner,
        json!({"agent_id": host.id, "name": "worker", "app_type": "process", "identifier": "/opt/w/bin/worker",
            "restart_command": "/opt/w/bin/restart --graceful"}),
    )
    .await;
    assert_eq!(p["restart_command"], "/opt/w/bin/restart --graceful");
    let h = create_app(
        &app,
        &app.owner,
        json!({"agent_id": host.id, "name": "api", "type": "http", "endpoint": "https://api.example.com/health", "interval_seconds": 30}),
    )
    .await;
    assert_eq!(h["app_type"], "http");
    assert_eq!(h["interval_seconds"], 30);
    let list = body(app.get("/apps", &viewer).await).await;
    assert_eq!(list.as_array().map(Vec::len), Some(3));

    let id = a["id"].as_str().expect("id");
    let r = app
        .send_json(
            Method::PATCH,
            &format!("/apps/{id}"),
            &viewer,
            json!({"expected_state": "stopped"}),
        )
        .await;
    assert_problem(r, 403, "forbidden").await;
    let r = app
        .send_json(
            Method::PATCH,
            &format!("/apps/{id}"),
            &operator,
            json!({"expected_state": "sleeping"}),
        )
        .await;
    assert_problem(r, 422, "validation_failed").await;
    let r = app
        .send_json(
            Method::PATCH,
            &format!("/apps/{id}"),
            &operator,
            json!({"expected_state": "stopped"}),
        )
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(body(r).await["expected_state"], "stopped");
    let r = app.delete(&format!("/apps/{id}"), &viewer).await;
    assert_problem(r, 403, "forbidden").await;
    assert_eq!(
        app.delete(&format!("/apps/{id}"), &operator).await.status(),
        204
    );
    assert_problem(
        app.get(&format!("/apps/{id}"), &viewer).await,
        404,
        "not_found",
    )
    .await;
    assert_problem(
        app.delete(&format!("/apps/{id}"), &operator).await,
        404,
        "not_found",
    )
    .await;
    for ev in ["app_created", "app_expected_state_changed", "app_deleted"] {
        let n = app
            .count(&format!(
                "SELECT COUNT(*) FROM audit_log WHERE event_type = '{ev}'"
            ))
            .await;
        assert!(n >= 1, "{ev}");
    }
    // Removing the agent untracks its apps.
    assert_eq!(
        app.delete(&format!("/agents/{}", host.id), &app.owner)
            .await
            .status(),
        204
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM apps").await, 0);
}

async fn open_alerts(app: &TestApp) -> Vec<Value> {
    let r = body(app.get("/alerts?is_resolved=false", &app.owner).await).await;
    r.as_array().expect("alerts").clone()
}

async fn liveness_raises_one_warning_on_the_third_mismatch_and_resolves_itself(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    nginx(&app, &host, "active").await;
    let a = create_app(
        &app,
        &app.owner,
        json!({"agent_id": host.id, "name": "nginx", "app_type": "systemd", "identifier": "nginx"}),
    )
    .await;
    let path = format!("/apps/{}", a["id"].as_str().expect("id"));
    let r = tick(&app).await;
    assert_eq!((r.apps, r.mismatches, r.raised), (1, 0, 0));
    let v = body(app.get(&path, &app.owner).await).await;
    assert_eq!(v["observed_state"], "running");
    assert!(v["last_state_change"].is_string());

    nginx(&app, &host, "failed").await;
    for n in 1..=2 {
        let r = tick(&app).await;
        assert_eq!((r.mismatches, r.raised), (1, 0), "check {n}");
        let v = body(app.get(&path, &app.owner).await).await;
        assert_eq!(v["consecutive_mismatch"], n);
        assert_eq!(v["observed_state"], "stopped");
        assert_eq!(v["alerting"], false);
    }
    assert!(open_alerts(&app).await.is_empty());
    let r = tick(&app).await;
    assert_eq!((r.mismatches, r.raised), (1, 1));
    let alerts = open_alerts(&app).await;
    assert_eq!(alerts.len(), 1);
    let alert = &alerts[0];
    assert_eq!(alert["severity"], "warning");
    assert_eq!(alert["source"], "liveness");
    assert_eq!(alert["category"], "liveness");
    assert_eq!(alert["app_id"], a["id"]);
    assert_eq!(alert["agent"]["id"], json!(host.id));
    assert_eq!(alert["agent"]["hostname"], "web-1");
    assert_eq!(alert["agent"]["tags"], json!(["env:test", "role:web"]));
    assert!(
        alert["title"]
            .as_str()
            .is_some_and(|t| t.contains("nginx is stopped, expected running"))
    );
    let v = body(app.get(&path, &app.owner).await).await;
    assert_eq!(v["alerting"], true);
    // The ongoing incident raises nothing more.
    for _ in 0..2 {
        assert_eq!(tick(&app).await.raised, 0);
    }
    assert_eq!(open_alerts(&app).await.len(), 1);

    // Back as expected: the counter resets and the alert resolves itself.
    nginx(&app, &host, "active").await;
    let r = tick(&app).await;
    assert_eq!((r.mismatches, r.resolved), (0, 1));
    let v = body(app.get(&path, &app.owner).await).await;
    assert_eq!(
        (v["consecutive_mismatch"].clone(), v["alerting"].clone()),
        (json!(0), json!(false))
    );
    assert!(open_alerts(&app).await.is_empty());
    let resolved = body(
        app.get(
            &format!("/alerts/{}", alert["id"].as_str().expect("id")),
            &app.owner,
        )
        .await,
    )
    .await;
    assert_eq!(resolved["is_resolved"], true);
    assert_eq!(resolved["resolved_by"], "liveness");
    assert!(
        resolved["resolution"]
            .as_str()
            .is_some_and(|t| t.contains("resolved itself"))
    );

    // Expecting it stopped turns a running unit into the mismatch.
    let r = app
        .send_json(
            Method::PATCH,
            &path,
            &app.owner,
            json!({"expected_state": "stopped"}),
        )
        .await;
    assert_eq!(r.status(), 200);
    for _ in 0..3 {
        tick(&app).await;
    }
    let alerts = open_alerts(&app).await;
    assert_eq!(alerts.len(), 1);
    assert!(
        alerts[0]["title"]
            .as_str()
            .is_some_and(|t| t.contains("running, expected stopped"))
    );
    assert_ne!(alerts[0]["id"], alert["id"]);
    // A user resolves it; the mismatch persists, so the next check raises a new one.
    let aid = alerts[0]["id"].as_str().expect("id");
    let (viewer, _) = app.user_with_role("viewer").await;
    let r = app
        .send_json(
            Method::PATCH,
            &format!("/alerts/{aid}/resolve"),
            &viewer,
            json!({}),
        )
        .await;
    assert_problem(r, 403, "forbidden").await;
    let r = app
        .send_json(
            Method::PATCH,
            &format!("/alerts/{aid}/resolve"),
            &app.owner,
            json!({}),
        )
        .await;
    assert_eq!(r.status(), 200);
    let v = body(r).await;
    assert_eq!(v["is_resolved"], true);
    assert!(
        v["resolved_by"]
            .as_str()
            .is_some_and(|s| s.starts_with("user:"))
    );
    let again = app
        .send_json(
            Method::PATCH,
            &format!("/alerts/{aid}/resolve"),
            &app.owner,
            json!({}),
        )
        .await;
    assert_eq!(body(again).await["resolved_at"], v["resolved_at"]);
    assert_eq!(tick(&app).await.raised, 1);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM audit_log WHERE event_type = 'alert_resolved'")
            .await,
        1
    );
}

async fn unknowns_count_only_after_four_and_stale_reports_observe_nothing(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    report(
        &app,
        &host,
        json!([]),
        json!([{"name": "other", "state": "running"}]),
        json!([]),
    )
    .await;
    let a = create_app(
        &app,
        &app.owner,
        json!({"agent_id": host.id, "name": "db", "app_type": "docker", "identifier": "db"}),
    )
    .await;
    let path = format!("/apps/{}", a["id"].as_str().expect("id"));
    for n in 1..=3 {
        let r = tick(&app).await;
        assert_eq!(r.mismatches, 0, "unknown {n} does not count");
        let v = body(app.get(&path, &app.owner).await).await;
        assert_eq!(v["observed_state"], "unknown");
        assert_eq!(v["consecutive_mismatch"], 0);
    }
    for n in 1..=3 {
        let r = tick(&app).await;
        assert_eq!(r.mismatches, 1);
        assert_eq!(
            r.raised,
            usize::from(n == 3),
            "unknown {} counts as mismatch {n}",
            n + 3
        );
    }
    assert_eq!(open_alerts(&app).await.len(), 1);

    // A process app: absent from a fresh process list means stopped; present means running.
    let p = create_app(
        &app,
        &app.owner,
        json!({"agent_id": host.id, "name": "worker", "app_type": "process", "identifier": "/opt/w/worker"}),
    )
    .await;
    let ppath = format!("/apps/{}", p["id"].as_str().expect("id"));
    report(
        &app,
        &host,
        json!([]),
        json!([]),
        json!([{"pid": 42, "exe": "/opt/w/worker", "cmdline": "/opt/w/worker -q"}]),
    )
    .await;
    tick(&app).await;
    assert_eq!(
        body(app.get(&ppath, &app.owner).await).await["observed_state"],
        "running"
    );
    report(
        &app,
        &host,
        json!([]),
        json!([]),
        json!([{"pid": 1, "exe": "/sbin/init", "cmdline": "init"}]),
    )
    .await;
    tick(&app).await;
    assert_eq!(
        body(app.get(&ppath, &app.owner).await).await["observed_state"],
        "stopped"
    );

    // An agent that stopped reporting (3 intervals) observes nothing: unknown.
    let later = hub_now() + time::Duration::seconds(60 * 3 + 10);
    liveness_tick(&app.state, later).await.expect("tick");
    assert_eq!(
        body(app.get(&ppath, &app.owner).await).await["observed_state"],
        "unknown"
    );
}

/// The apps page (CONTRACT 33): apps off their expected state first, then by host and name,
/// 200 a page; `show=off` lists only those off.
async fn the_apps_page_lists_apps_off_first_by_host_and_name_200_a_page(b: Backend) {
    let app = TestApp::spawn(b).await;
    let mut first = None;
    for k in 0..201 {
        let m = create_app(
            &app,
            &app.owner,
            json!({"name": format!("job {k:03}"), "type": "push", "interval_seconds": 3600}),
        )
        .await;
        if k == 0 {
            first = m["push_url"].as_str().map(str::to_owned);
        }
    }
    // One is up (a ping): it sorts after the 200 not yet seen.
    let url = first.expect("push url");
    assert_eq!(
        app.client.get(&url).send().await.expect("ping").status(),
        200
    );
    let page = |q: &'static str| {
        let app = &app;
        async move {
            let r = app.get(&format!("//ui/apps{q}"), &app.owner).await;
            assert_eq!(r.status(), 200, "{q}");
            r.text().await.expect("html")
        }
    };
    let one = page("").await;
    assert!(one.contains("job 001") && one.contains("job 200"), "page 1");
    assert!(!one.contains("job 000"), "the app that is up is on page 2");
    let two = page("?page=2").await;
    assert!(
        two.contains("job 000") && !two.contains("job 001"),
        "page 2"
    );
    let off = page("?show=off").await;
    assert!(
        off.contains("job 200") && !off.contains("job 000"),
        "only those off"
    );
}

/// An agent runs dns and ping checks too (CONTRACT 32), from its own networks: the hub
/// sends them with their expected values; the hub-only types and a metadata address are
/// refused when made, and an agent's results for them count.
async fn dns_and_ping_checks_are_run_by_their_agent_too(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    let dns = create_app(
        &app,
        &app.owner,
        json!({"agent_id": host.id, "name": "inner dns", "type": "dns", "interval_seconds": 30,
               "endpoint": "dns://db.internal?type=A&server=10.0.0.2", "expected": ["10.0.0.7"]}),
    )
    .await;
    let ping = create_app(
        &app,
        &app.owner,
        json!({"agent_id": host.id, "name": "router", "type": "ping", "interval_seconds": 30,
               "endpoint": "icmp://192.168.1.1"}),
    )
    .await;
    let ack = report(&app, &host, json!([]), json!([]), json!([])).await;
    let mut sent = ack["http_checks"].as_array().cloned().unwrap_or_default();
    sent.sort_by_key(|c| c["endpoint"].as_str().map(str::to_owned));
    assert_eq!(
        json!(sent),
        json!([
            {"app_id": dns["id"], "endpoint": "dns://db.internal?type=A&server=10.0.0.2:53",
             "interval_seconds": 30, "timeout_seconds": 10, "expected": ["10.0.0.7"]},
            {"app_id": ping["id"], "endpoint": "icmp://192.168.1.1", "interval_seconds": 30,
             "timeout_seconds": 10},
        ])
    );
    for (req, field) in [
        (
            json!({"agent_id": host.id, "name": "t", "type": "tcp", "endpoint": "tcp://10.0.0.2:5432", "interval_seconds": 30}),
            "agent_id",
        ),
        (
            json!({"agent_id": host.id, "name": "d", "type": "dns", "interval_seconds": 30,
                   "endpoint": "dns://a.internal?server=169.254.169.254"}),
            "endpoint",
        ),
        (
            json!({"agent_id": host.id, "name": "p", "type": "ping", "interval_seconds": 30,
                   "endpoint": "icmp://169.254.169.254"}),
            "endpoint",
        ),
    ] {
        let r = app.post("/apps", &app.owner, req.clone()).await;
        let p = assert_problem(r, 422, "validation_failed").await;
        assert!(names_field(&p, field), "{req}: {p}");
    }
    let mut bt = batch(json!([]));
    bt["app_checks"] = json!([{"app_id": ping["id"], "checked_at": ts(OffsetDateTime::now_utc()),
        "ok": true, "latency_ms": 2}]);
    let r = send(&app, &host, bt.to_string().as_bytes(), None, true).await;
    assert_eq!(r.status(), 202);
    let v = body(
        app.get(
            &format!("/apps/{}", ping["id"].as_str().unwrap_or_default()),
            &app.owner,
        )
        .await,
    )
    .await;
    assert_eq!(
        (
            v["observed_state"].as_str(),
            v["last_check"]["latency_ms"].as_i64()
        ),
        (Some("running"), Some(2)),
        "{v}"
    );
}

async fn http_apps_are_checked_by_their_agent(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    let other = register(&app).await;
    let a = create_app(
        &app,
        &app.owner,
        json!({"agent_id": host.id, "name": "api", "type": "http", "endpoint": "http://127.0.0.1:9/health", "interval_seconds": 15,
               "keyword": "ok", "expected_status": "200-299", "timeout_seconds": 5}),
    )
    .await;
    let id = a["id"].as_str().expect("id").to_owned();
    // The hub tells the agent what to check, with every option a hub check has (CONTRACT
    // 33), and only that agent.
    let ack = report(&app, &host, json!([]), json!([]), json!([])).await;
    assert_eq!(
        ack["http_checks"],
        json!([{"app_id": id, "endpoint": "http://127.0.0.1:9/health", "interval_seconds": 15,
                "timeout_seconds": 5, "expected_status": "200-299", "keyword": "ok"}])
    );
    let ack = report(&app, &other, json!([]), json!([]), json!([])).await;
    assert_eq!(ack["http_checks"], json!([]));
    tick(&app).await;
    assert_eq!(
        body(app.get(&format!("/apps/{id}"), &app.owner).await).await["observed_state"],
        "unknown"
    );

    let check = |ok: bool, code: u16, ago: i64| {
        json!({"app_id": id, "checked_at": ts(OffsetDateTime::now_utc() - time::Duration::seconds(ago)),
            "ok": ok, "status_code": code, "latency_ms": 12})
    };
    let mut bt = batch(json!([]));
    bt["app_checks"] = json!([check(true, 200, 20), check(true, 204, 5)]);
    assert_eq!(
        send(&app, &host, bt.to_string().as_bytes(), None, true)
            .await
            .status(),
        202
    );
    // Another agent cannot report for this app.
    let mut forged = batch(json!([]));
    forged["app_checks"] = json!([check(false, 500, 1)]);
    assert_eq!(
        send(&app, &other, forged.to_string().as_bytes(), None, true)
            .await
            .status(),
        202
    );
    tick(&app).await;
    let v = body(app.get(&format!("/apps/{id}"), &app.owner).await).await;
    assert_eq!(v["observed_state"], "running");
    assert_eq!(v["last_check"]["status_code"], 204);
    assert_eq!(v["last_check"]["latency_ms"], 12);
    let checks = body(app.get(&format!("/apps/{id}/checks"), &app.owner).await).await;
    assert_eq!(checks.as_array().map(Vec::len), Some(2));

    // Failures count as they arrive, at the check's own interval (CONTRACT 27): with the
    // default two retries the first two keep it up, the third takes it down and alerts
    // with the probe's error — no liveness tick needed.
    let failed = |ago: i64| {
        json!({"app_id": id, "checked_at": ts(OffsetDateTime::now_utc() - time::Duration::seconds(ago)),
            "ok": false, "error": "cannot connect", "latency_ms": 3})
    };
    let mut bt = batch(json!([]));
    bt["app_checks"] = json!([failed(3), failed(2)]);
    assert_eq!(
        send(&app, &host, bt.to_string().as_bytes(), None, true)
            .await
            .status(),
        202
    );
    let v = body(app.get(&format!("/apps/{id}"), &app.owner).await).await;
    assert_eq!(v["observed_state"], "running");
    assert_eq!(v["consecutive_failures"], 2);
    assert!(open_alerts(&app).await.is_empty());
    let mut bt = batch(json!([]));
    bt["app_checks"] = json!([failed(1)]);
    assert_eq!(
        send(&app, &host, bt.to_string().as_bytes(), None, true)
            .await
            .status(),
        202
    );
    let v = body(app.get(&format!("/apps/{id}"), &app.owner).await).await;
    assert_eq!(v["observed_state"], "stopped");
    assert!(v["alerting"].as_bool().unwrap_or(false), "{v}");
    assert_eq!(v["last_check"]["error"], "cannot connect");
    let alerts = open_alerts(&app).await;
    assert_eq!(alerts.len(), 1, "{alerts:?}");
    assert_eq!(alerts[0]["title"], "api is down");
    assert!(
        alerts[0]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("cannot connect") && d.contains("3 failed checks")),
        "{alerts:?}"
    );
    // A stale check (the agent stopped reporting) turns unknown at a liveness tick; it does
    // not count as a failure.
    liveness_tick(&app.state, hub_now() + time::Duration::minutes(10))
        .await
        .expect("tick");
    let v = body(app.get(&format!("/apps/{id}"), &app.owner).await).await;
    assert_eq!(v["observed_state"], "unknown");
    // Malformed check results are refused and store nothing.
    let mut bad = batch(json!([]));
    bad["app_checks"] = json!([{"app_id": "nope", "ok": true}]);
    let r = send(&app, &host, bad.to_string().as_bytes(), None, true).await;
    assert_eq!(r.status(), 422);
    assert_eq!(app.count("SELECT COUNT(*) FROM app_checks").await, 5);
}

async fn discovery_lists_what_the_agent_runs(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    let now = OffsetDateTime::now_utc();
    let mut bt = batch(json!([]));
    bt["inventory"] = json!({
        "collected_at": ts(now),
        "systemd": [
            {"unit": "nginx.service", "active_state": "active"},
            {"unit": "old.service", "active_state": "inactive"}
        ],
        "containers": [
            {"name": "shop-db-1", "state": "running", "compose_project": "shop", "compose_service": "db"},
            {"name": "gone", "state": "exited"}
        ]
    });
    assert_eq!(
        send(&app, &host, bt.to_string().as_bytes(), None, true)
            .await
            .status(),
        202
    );
    create_app(
        &app,
        &app.owner,
        json!({"agent_id": host.id, "name": "nginx", "app_type": "systemd", "identifier": "nginx"}),
    )
    .await;
    let (viewer, _) = app.user_with_role("viewer").await;
    let list = body(
        app.get(&format!("/agents/{}/app-candidates", host.id), &viewer)
            .await,
    )
    .await;
    let got: Vec<(String, String, bool)> = list
        .as_array()
        .expect("list")
        .iter()
        .map(|c| {
            (
                c["app_type"].as_str().unwrap_or_default().to_owned(),
                c["identifier"].as_str().unwrap_or_default().to_owned(),
                c["tracked"].as_bool().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("systemd".into(), "nginx.service".into(), true),
            ("docker".into(), "shop-db-1".into(), false),
            ("compose".into(), "shop::db".into(), false),
        ]
    );
    // The inventory alone is a report too: the tracked unit is observed running.
    tick(&app).await;
    let apps = body(app.get("/apps", &viewer).await).await;
    assert_eq!(apps[0]["observed_state"], "running");
}

async fn apps_and_alerts_of_another_tenant_are_404(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    nginx(&app, &host, "failed").await;
    let a = create_app(
        &app,
        &app.owner,
        json!({"agent_id": host.id, "name": "nginx", "app_type": "systemd", "identifier": "nginx"}),
    )
    .await;
    for _ in 0..3 {
        tick(&app).await;
    }
    let alert = open_alerts(&app).await.remove(0);
    let other = app.other_tenant().await;
    let id = a["id"].as_str().expect("id");
    let aid = alert["id"].as_str().expect("id");
    assert_problem(
        app.get(&format!("/apps/{id}"), &other).await,
        404,
        "not_found",
    )
    .await;
    assert_problem(
        app.get(&format!("/apps/{id}/checks"), &other).await,
        404,
        "not_found",
    )
    .await;
    let r = app
        .send_json(
            Method::PATCH,
            &format!("/apps/{id}"),
            &other,
            json!({"expected_state": "stopped"}),
        )
        .await;
    assert_problem(r, 404, "not_found").await;
    assert_problem(
        app.delete(&format!("/apps/{id}"), &other).await,
        404,
        "not_found",
    )
    .await;
    assert_problem(
        app.get(&format!("/alerts/{aid}"), &other).await,
        404,
        "not_found",
    )
    .await;
    let r = app
        .send_json(
            Method::PATCH,
            &format!("/alerts/{aid}/resolve"),
            &other,
            json!({}),
        )
        .await;
    assert_problem(r, 404, "not_found").await;
    assert_problem(
        app.get(&format!("/agents/{}/app-candidates", host.id), &other)
            .await,
        404,
        "not_found",
    )
    .await;
    let r = app
        .post(
            "/apps",
            &other,
            json!({"agent_id": host.id, "name": "x", "app_type": "docker", "identifier": "web"}),
        )
        .await;
    assert_problem(r, 422, "validation_failed").await;
    assert_eq!(body(app.get("/apps", &other).await).await, json!([]));
    assert_eq!(body(app.get("/alerts", &other).await).await, json!([]));
    // Unchanged.
    let v = body(app.get(&format!("/apps/{id}"), &app.owner).await).await;
    assert_eq!(v["expected_state"], "running");
    assert_eq!(open_alerts(&app).await.len(), 1);
}

async fn periodic_work_is_leased_to_one_process(b: Backend) {
    use trusthub_store::leases::acquire;
    let app = TestApp::spawn(b).await;
    let now = hub_now();
    let until = now + time::Duration::seconds(30);
    let mut tx = app.db.begin().await.expect("tx");
    assert!(
        acquire(&mut tx, "test", "hub-a", now, until)
            .await
            .expect("a")
    );
    assert!(
        !acquire(&mut tx, "test", "hub-b", now, until)
            .await
            .expect("b")
    );
    // The holder renews; the other takes over only once the lease has expired.
    assert!(
        acquire(&mut tx, "test", "hub-a", now, until)
            .await
            .expect("a again")
    );
    let later = until + time::Duration::seconds(1);
    assert!(
        acquire(
            &mut tx,
            "test",
            "hub-b",
            later,
            later + time::Duration::seconds(30)
        )
        .await
        .expect("b later")
    );
    assert!(
        !acquire(
            &mut tx,
            "test",
            "hub-a",
            later,
            later + time::Duration::seconds(30)
        )
        .await
        .expect("a later")
    );
    tx.commit().await.expect("commit");
}

/// A host running postgres, redis, mariadb, nats and mosquitto without systemd: discovery
/// offers them as processes (what they listen on included), a systemd app is refused with a
/// clear 422, and a process app named by the symlink redis was started through is running.
async fn a_host_without_systemd_offers_its_services_and_refuses_systemd_apps(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    let now = OffsetDateTime::now_utc();
    let processes = json!([
        {"pid": 1, "ppid": 0, "exe": "/usr/bin/tini", "cmdline": "tini -- sh"},
        {"pid": 10, "ppid": 1, "exe": "/usr/lib/postgresql/16/bin/postgres", "cmdline": "postgres -D /var/lib/pg"},
        {"pid": 20, "ppid": 1, "exe": "/usr/bin/redis-check-rdb", "cmdline": "redis-server 127.0.0.1:6379", "paths": ["/usr/bin/redis-server"]},
        {"pid": 30, "ppid": 1, "exe": "/usr/sbin/mariadbd", "cmdline": "/usr/sbin/mariadbd"},
        {"pid": 40, "ppid": 1, "exe": "/usr/bin/nats-server", "cmdline": "nats-server"},
        {"pid": 50, "ppid": 1, "exe": "/usr/sbin/mosquitto", "cmdline": "/usr/sbin/mosquitto -c /etc/mosquitto/mosquitto.conf"}
    ]);
    let mut bt = batch(json!([]));
    bt["inventory"] = json!({
        "collected_at": ts(now),
        "systemd": [],
        "containers": [],
        "processes": processes,
        "listening": [
            {"proto": "tcp", "addr": "0.0.0.0", "port": 5432, "pid": 10},
            {"proto": "tcp", "addr": "127.0.0.1", "port": 6379, "pid": 20},
            {"proto": "tcp", "addr": "0.0.0.0", "port": 3306, "pid": 30},
            {"proto": "tcp", "addr": "0.0.0.0", "port": 4222, "pid": 40},
            {"proto": "tcp", "addr": "0.0.0.0", "port": 1883, "pid": 50}
        ]
    });
    bt["processes"] = processes.clone();
    assert_eq!(
        send(&app, &host, bt.to_string().as_bytes(), None, true)
            .await
            .status(),
        202
    );
    let list = body(
        app.get(&format!("/agents/{}/app-candidates", host.id), &app.owner)
            .await,
    )
    .await;
    let got: Vec<(String, String)> = list
        .as_array()
        .expect("list")
        .iter()
        .map(|c| {
            (
                c["app_type"].as_str().unwrap_or_default().to_owned(),
                c["identifier"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    for exe in [
        "/usr/lib/postgresql/16/bin/postgres",
        "/usr/bin/redis-server",
        "/usr/sbin/mariadbd",
        "/usr/bin/nats-server",
        "/usr/sbin/mosquitto",
    ] {
        assert!(
            got.contains(&("process".into(), exe.into())),
            "{exe}: {list}"
        );
    }
    assert_eq!(got.len(), 5, "{list}");
    let redis = list
        .as_array()
        .expect("list")
        .iter()
        .find(|c| c["name"] == "redis-server")
        .expect("redis");
    assert_eq!(redis["listening"], json!(["tcp 127.0.0.1:6379"]));

    let p = assert_problem(
        app.post(
            "/apps",
            &app.owner,
            json!({"agent_id": host.id, "name": "redis", "app_type": "systemd", "identifier": "redis-server"}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert!(names_field(&p, "app_type"), "{p}");
    assert!(p.to_string().contains("no systemd"), "{p}");
    assert_eq!(app.count("SELECT COUNT(*) FROM apps").await, 0);

    create_app(
        &app,
        &app.owner,
        json!({"agent_id": host.id, "name": "redis", "app_type": "process", "identifier": "/usr/bin/redis-server"}),
    )
    .await;
    tick(&app).await;
    let apps = body(app.get("/apps", &app.owner).await).await;
    assert_eq!(apps[0]["observed_state"], "running", "{apps}");
}

/// The timeline's retention purge deletes every app's spans that ended before its time
/// (found through each app's key, never by reading the whole table) and keeps the rest.
async fn the_timeline_purge_deletes_every_apps_old_spans_and_keeps_the_rest(b: Backend) {
    let app = TestApp::spawn(b).await;
    for (name, port) in [("one", 9), ("two", 19)] {
        let req =
            json!({"name": name, "type": "tcp", "endpoint": format!("tcp://127.0.0.1:{port}")});
        assert_eq!(app.post("/apps", &app.owner, req).await.status(), 201);
        for (start, end) in [(100, 200), (200, 1_000)] {
            app.execute(&format!(
                "INSERT INTO app_timeline (app_id, start_s, end_s, down) \
                 SELECT id, {start}, {end}, 1 = 0 FROM apps WHERE name = '{name}'"
            ))
            .await;
        }
    }
    let spans = "SELECT COUNT(*) FROM app_timeline WHERE end_s <= 1000";
    assert_eq!(app.count(spans).await, 4);
    let mut tx = app.db.begin().await.expect("tx");
    let before = OffsetDateTime::from_unix_timestamp(500).expect("t");
    let gone = trusthub_monitors::timeline::purge(&mut tx, before)
        .await
        .expect("purge");
    tx.commit().await.expect("commit");
    assert_eq!(gone, 2);
    assert_eq!(app.count(spans).await, 2);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM app_timeline WHERE end_s = 1000")
            .await,
        2
    );
}
