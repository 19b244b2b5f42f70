//! Checks the hub runs itself (CONTRACT 27): http, tcp and tls monitors without an agent,
//! counted at their own interval, alerting on the `retries + 1`-th failure with the probe's
//! error and resolving on recovery; driven tick by tick on a controlled clock against real
//! sockets on loopback.

use crate::harness::*;
use serde_json::{Value, json};
use time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use trusthub_monitors::jobs::probes::{ProbeReport, probe_tick};

crate::dual!(
    a_dead_url_alerts_at_its_own_interval_with_the_probe_error_and_resolves_when_it_answers,
    checks_are_validated_and_the_hub_calls_only_allowed_addresses,
);

/// A port nothing listens on (bound, then released).
async fn dead_port() -> u16 {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    l.local_addr().expect("addr").port()
}

/// Serves `body` with status 200 to every HTTP request on `port` (a plain TCP server, so a
/// TLS client gets no handshake).
async fn serve(port: u16, body: &'static str) {
    let l = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .expect("bind the port again");
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 2048];
                let _ = s.read(&mut buf).await;
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(answer.as_bytes()).await;
            });
        }
    });
}

async fn monitor(app: &TestApp, body_: Value) -> Value {
    let r = app.post("/apps", &app.owner, body_).await;
    assert_eq!(r.status(), 201);
    body(r).await
}

async fn open_alerts(app: &TestApp) -> Vec<Value> {
    body(app.get("/alerts?is_resolved=false", &app.owner).await)
        .await
        .as_array()
        .expect("alerts")
        .clone()
}

async fn tick_at(app: &TestApp, at: time::OffsetDateTime) -> ProbeReport {
    probe_tick(&app.state, at).await.expect("probe tick")
}

async fn a_dead_url_alerts_at_its_own_interval_with_the_probe_error_and_resolves_when_it_answers(
    b: Backend,
) {
    let app = TestApp::spawn(b).await;
    let port = dead_port().await;
    let m = monitor(
        &app,
        json!({"name": "shop", "type": "http", "endpoint": format!("http://127.0.0.1:{port}/health"),
               "interval_seconds": 10}),
    )
    .await;
    assert_eq!(m["agent_id"], Value::Null);
    assert_eq!(
        (m["retries"].as_i64(), m["recoveries"].as_i64()),
        (Some(2), Some(1))
    );
    assert_eq!(m["timeout_seconds"], 10);
    let id = m["id"].as_str().expect("id").to_owned();
    // The clock moves a second per tick; the first probe is due at creation.
    let t0 = hub_now() + Duration::seconds(1);
    let mut alerted_at = None;
    let mut probes = 0;
    for s in 0..40 {
        let r = tick_at(&app, t0 + Duration::seconds(s)).await;
        probes += r.probed;
        if r.raised > 0 {
            alerted_at = Some(s);
            break;
        }
    }
    // Down on the third failure: probes at +0, +10 and +20 s (interval × failures + 5 s is
    // the bound the issue sets: 35 s).
    assert_eq!(alerted_at, Some(20), "probes run: {probes}");
    assert_eq!(probes, 3);
    let v = body(app.get(&format!("/apps/{id}"), &app.owner).await).await;
    assert_eq!(v["observed_state"], "stopped");
    assert_eq!(v["consecutive_failures"], 3);
    assert!(
        v["last_check"]["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("cannot connect")),
        "{v}"
    );
    let alerts = open_alerts(&app).await;
    assert_eq!(alerts.len(), 1, "{alerts:?}");
    assert_eq!(alerts[0]["title"], "shop is down");
    assert_eq!(alerts[0]["agent"], Value::Null);
    assert!(
        alerts[0]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("cannot connect")
                && d.contains("3 failed checks in a row by the hub, every 10 s")),
        "{alerts:?}"
    );
    // Nothing is probed before it is due again.
    assert_eq!(tick_at(&app, t0 + Duration::seconds(25)).await.probed, 0);
    // The service comes back: the next probe resolves the alert.
    serve(port, "ok").await;
    let r = tick_at(&app, t0 + Duration::seconds(30)).await;
    assert_eq!((r.probed, r.failed, r.resolved), (1, 0, 1));
    let v = body(app.get(&format!("/apps/{id}"), &app.owner).await).await;
    assert_eq!(v["observed_state"], "running");
    assert_eq!(v["last_check"]["status_code"], 200);
    assert!(open_alerts(&app).await.is_empty());
    // Every verdict is on the SLO timeline: down from the third failure, up again after.
    let checks = body(app.get(&format!("/apps/{id}/checks"), &app.owner).await).await;
    assert_eq!(checks.as_array().map(Vec::len), Some(4));

    // A keyword the body lacks fails the check (no retries: down at once); tcp connects;
    // tls to a plain TCP server fails its handshake.
    let kw = monitor(
        &app,
        json!({"name": "kw", "type": "http", "endpoint": format!("http://127.0.0.1:{port}/"),
               "keyword": "healthy", "retries": 0}),
    )
    .await;
    let tcp = monitor(
        &app,
        json!({"name": "db", "type": "tcp", "endpoint": format!("tcp://127.0.0.1:{port}"),
               "interval_seconds": 30}),
    )
    .await;
    let tls = monitor(
        &app,
        json!({"name": "mail", "type": "tls", "endpoint": format!("tls://127.0.0.1:{port}"),
               "retries": 0, "timeout_seconds": 3}),
    )
    .await;
    assert_eq!(tls["tls_min_days"], 14);
    let r = tick_at(&app, hub_now() + Duration::seconds(60)).await;
    assert_eq!(r.probed, 4, "{r:?}");
    let get = async |m: &Value| {
        body(
            app.get(
                &format!("/apps/{}", m["id"].as_str().expect("id")),
                &app.owner,
            )
            .await,
        )
        .await
    };
    let v = get(&kw).await;
    assert_eq!(v["observed_state"], "stopped");
    assert_eq!(
        v["last_check"]["error"],
        "keyword `healthy` not found in the body"
    );
    let v = get(&tcp).await;
    assert_eq!(v["observed_state"], "running", "{v}");
    let v = get(&tls).await;
    assert_eq!(v["observed_state"], "stopped");
    assert!(
        v["last_check"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("TLS")),
        "{v}"
    );
}

async fn checks_are_validated_and_the_hub_calls_only_allowed_addresses(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = crate::agents::register(&app).await;
    let refused = |body_: Value, field: &'static str| {
        let app = &app;
        async move {
            let p = assert_problem(
                app.post("/apps", &app.owner, body_.clone()).await,
                422,
                "validation_failed",
            )
            .await;
            assert!(names_field(&p, field), "{field} in {p} for {body_}");
        }
    };
    refused(
        json!({"name": "x", "type": "tcp", "endpoint": "tcp://127.0.0.1:5432", "agent_id": host.id}),
        "agent_id",
    )
    .await;
    refused(
        json!({"name": "x", "type": "tcp", "endpoint": "tcp://127.0.0.1"}),
        "endpoint",
    )
    .await;
    refused(
        json!({"name": "x", "type": "http", "endpoint": "http://127.0.0.1:1/", "interval_seconds": 5}),
        "interval_seconds",
    )
    .await;
    refused(
        json!({"name": "x", "type": "http", "endpoint": "http://127.0.0.1:1/", "expected_status": "700"}),
        "expected_status",
    )
    .await;
    refused(
        json!({"name": "x", "type": "tcp", "endpoint": "tcp://127.0.0.1:1", "keyword": "ok"}),
        "keyword",
    )
    .await;
    refused(
        json!({"name": "x", "type": "http", "endpoint": "http://127.0.0.1:1/", "retries": 11}),
        "retries",
    )
    .await;
    refused(
        json!({"name": "x", "app_type": "systemd", "identifier": "nginx"}),
        "agent_id",
    )
    .await;
    // The outbound policy: loopback is allowed in this test hub, a private range is not.
    refused(
        json!({"name": "x", "type": "tcp", "endpoint": "tcp://10.1.2.3:22"}),
        "endpoint",
    )
    .await;
    refused(
        json!({"name": "x", "type": "http", "endpoint": "http://169.254.169.254/latest/"}),
        "endpoint",
    )
    .await;
    assert_eq!(app.count("SELECT COUNT(*) FROM apps").await, 0);
    let ok = json!({"name": "x", "type": "http", "endpoint": "http://127.0.0.1:1/",
                    "expected_status": "200-299, 418"});
    let m = monitor(&app, ok.clone()).await;
    assert_eq!(m["expected_status"], "200-299,418");
    assert_eq!(m["interval_seconds"], 60);
    assert_problem(app.post("/apps", &app.owner, ok).await, 409, "conflict").await;
}
