//! The check types people switch for (CONTRACT 32): push monitors on a controlled clock,
//! dns checks against a real DNS server (dnsmasq), ping by ICMP to loopback, and http
//! checks' JSON assertions against a real JSON body; each counted like every check.

use crate::harness::*;
use serde_json::{Value, json};
use time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use trusthub_monitors::jobs::probes::{ProbeReport, probe_tick};

crate::dual!(
    a_push_monitor_is_up_while_pinged_and_down_when_late_or_told,
    pings_counted_together_agree_with_pings_counted_one_at_a_time,
    dns_checks_ask_a_real_server_and_tell_nxdomain_from_silence,
    ping_and_json_query_checks_judge_real_answers,
    the_new_types_are_validated_field_by_field,
);

async fn monitor(app: &TestApp, b: Value) -> Value {
    let r = app.post("/apps", &app.owner, b.clone()).await;
    let status = r.status();
    let v = body(r).await;
    assert_eq!(status, 201, "{b}: {v}");
    v
}

async fn tick_at(app: &TestApp, at: time::OffsetDateTime) -> ProbeReport {
    probe_tick(&app.state, at).await.expect("probe tick")
}

async fn open_alerts(app: &TestApp) -> Vec<Value> {
    body(app.get("/alerts?is_resolved=false", &app.owner).await)
        .await
        .as_array()
        .expect("alerts")
        .clone()
}

async fn a_push_monitor_is_up_while_pinged_and_down_when_late_or_told(b: Backend) {
    let app = TestApp::spawn(b).await;
    let m = monitor(
        &app,
        json!({"name": "nightly backup", "type": "push", "interval_seconds": 60, "grace_seconds": 30}),
    )
    .await;
    let id = m["id"].as_str().expect("id").to_owned();
    let url = m["push_url"].as_str().expect("push url").to_owned();
    assert!(
        url.starts_with(&format!("{}/api/v1/push/thp_", app.base)),
        "{url}"
    );
    assert_eq!(
        (m["retries"].as_i64(), m["grace_seconds"].as_i64()),
        (Some(0), Some(30))
    );
    let token = url.rsplit('/').next().expect("token").to_owned();
    // Kept hashed: the token is nowhere in the table, and shown masked afterwards.
    assert_eq!(
        app.count(&format!("SELECT COUNT(*) FROM apps WHERE push_token_hash = '{token}' OR push_token_prefix = '{token}'"))
            .await,
        0
    );
    let shown = body(app.get(&format!("/apps/{id}"), &app.owner).await).await;
    let masked = shown["push_url"].as_str().expect("masked");
    assert!(
        masked.ends_with('…') && !masked.contains(&token),
        "{masked}"
    );

    // A ping keeps it up (GET and POST alike).
    let r = app.client.get(&url).send().await.expect("ping");
    assert_eq!(r.status(), 200);
    let answer: Value = r.json().await.expect("json");
    assert_eq!(answer["recorded"], "up");
    let r = app
        .client
        .post(&url)
        .body("done")
        .send()
        .await
        .expect("ping");
    assert_eq!(r.status(), 200);
    let v = body(app.get(&format!("/apps/{id}"), &app.owner).await).await;
    assert_eq!(v["observed_state"], "running");

    // The job says it failed: down at once, its words in the alert.
    let r = app
        .client
        .get(format!(
            "{url}?status=down&msg=disk%20full%20on%20%2Fbackup"
        ))
        .send()
        .await
        .expect("ping");
    assert_eq!(body(r).await["recorded"], "down");
    let alerts = open_alerts(&app).await;
    let v = body(app.get(&format!("/apps/{id}"), &app.owner).await).await;
    assert_eq!(alerts.len(), 1, "{v}");
    let detail = alerts[0]["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("the job reported down: disk full on /backup"),
        "{detail}"
    );

    // `/start` times the run: the ping carries its duration.
    let r = app
        .client
        .post(format!("{url}/start"))
        .send()
        .await
        .expect("start");
    assert_eq!(body(r).await["recorded"], "started");
    // Timestamps are kept to the second: a run of over a second shows.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    app.client.get(&url).send().await.expect("ping");
    let v = body(app.get(&format!("/apps/{id}"), &app.owner).await).await;
    assert!(
        v["last_check"]["latency_ms"]
            .as_i64()
            .is_some_and(|l| l >= 1000),
        "{v}"
    );
    assert!(open_alerts(&app).await.is_empty(), "up again");
    let v = body(app.get(&format!("/apps/{id}"), &app.owner).await).await;
    assert_eq!(v["observed_state"], "running");
    // `ping=<ms>` gives one directly.
    app.client
        .get(format!("{url}?ping=1234"))
        .send()
        .await
        .expect("ping");
    let v = body(app.get(&format!("/apps/{id}"), &app.owner).await).await;
    assert_eq!(v["last_check"]["latency_ms"], 1234);

    // Bad pings change nothing and say why.
    let before = app.count("SELECT COUNT(*) FROM app_checks").await;
    let r = app
        .client
        .get(format!("{url}?status=maybe"))
        .send()
        .await
        .expect("ping");
    assert_problem(r, 422, "validation_failed").await;
    let r = app
        .client
        .get(format!("{url}?stauts=down"))
        .send()
        .await
        .expect("ping");
    assert!(matches!(r.status().as_u16(), 400 | 422), "{}", r.status());
    let r = app
        .client
        .get(format!("{}/api/v1/push/thp_not-a-token", app.base))
        .send()
        .await
        .expect("ping");
    assert_problem(r, 404, "not_found").await;
    assert_eq!(app.count("SELECT COUNT(*) FROM app_checks").await, before);

    // A new URL: the old one stops answering, another tenant cannot ask for one.
    let other = app.other_tenant().await;
    let r = app
        .post(&format!("/apps/{id}/push-url"), &other, json!({}))
        .await;
    assert_eq!(r.status(), 404);
    let r = app
        .post(&format!("/apps/{id}/push-url"), &app.owner, json!({}))
        .await;
    assert_eq!(r.status(), 200);
    let fresh = body(r).await["push_url"].as_str().expect("url").to_owned();
    assert_ne!(fresh, url);
    assert_eq!(
        app.client.get(&url).send().await.expect("old").status(),
        404
    );
    assert_eq!(
        app.client.get(&fresh).send().await.expect("new").status(),
        200
    );

    // On a controlled clock (past every real ping above): no ping within interval + grace
    // is down, alerting, the reason in the alert; the next ping resolves it.
    let token = fresh.rsplit('/').next().expect("token").to_owned();
    let t0 = hub_now() + Duration::minutes(10);
    let ping_at = |at| {
        trusthub_monitors::service::push::ping(&app.state, &token, Default::default(), false, at)
    };
    assert_eq!(ping_at(t0).await.expect("ping").recorded, "up");
    assert_eq!(
        tick_at(&app, t0 + Duration::seconds(80)).await.probed,
        0,
        "not late yet"
    );
    let r = tick_at(&app, t0 + Duration::seconds(95)).await;
    assert_eq!((r.probed, r.failed, r.raised), (1, 1, 1));
    let alerts = open_alerts(&app).await;
    assert_eq!(alerts.len(), 1, "{alerts:?}");
    assert_eq!(alerts[0]["title"], "nightly backup is down");
    let detail = alerts[0]["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("no ping within 60 s + 30 s grace"),
        "{detail}"
    );
    // Still late a whole interval later: another failure, the same alert.
    let r = tick_at(&app, t0 + Duration::seconds(160)).await;
    assert_eq!((r.probed, r.raised), (1, 0));
    assert_eq!(
        ping_at(t0 + Duration::seconds(170))
            .await
            .expect("ping")
            .recorded,
        "up"
    );
    assert!(open_alerts(&app).await.is_empty());
}

/// What a monitor's pings left: its results, its timeline, its row, its alerts.
async fn trail(app: &TestApp, id: &str) -> Value {
    let checks = body(app.get(&format!("/apps/{id}/checks"), &app.owner).await).await;
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(o) = v.as_object_mut() {
            o.remove("app_id");
        }
        v
    };
    let checks: Vec<Value> = checks
        .as_array()
        .expect("checks")
        .iter()
        .map(strip)
        .collect();
    let uuid: uuid::Uuid = id.parse().expect("uuid");
    let mut c = app.state.db.conn().await.expect("conn");
    let spans =
        trusthub_monitors::timeline::spans_of_apps(&mut c, &[uuid], hub_now() - Duration::days(1))
            .await
            .expect("spans")
            .remove(&uuid)
            .unwrap_or_default();
    let v = body(app.get(&format!("/apps/{id}"), &app.owner).await).await;
    let alerts: Vec<(Value, String)> = body(app.get("/alerts", &app.owner).await)
        .await
        .as_array()
        .expect("alerts")
        .iter()
        .filter(|a| a["app_id"].as_str() == Some(id))
        .map(|a| {
            let detail = a["detail"].as_str().unwrap_or_default();
            let ident = v["identifier"].as_str().unwrap_or("-");
            (a["is_resolved"].clone(), detail.replace(ident, "<push>"))
        })
        .collect();
    json!({
        "checks": checks,
        "spans": spans,
        "state": [v["observed_state"], v["alerting"], v["last_check"], v["next_check_at"],
                  v["consecutive_failures"], v["consecutive_successes"]],
        "alerts": alerts,
    })
}

/// The pings of a batch are counted in memory and written together: the same script of
/// pings, one monitor's sent one at a time (a batch each) and another's all at once (one
/// batch), leaves the same results, timeline, verdict and alerts.
async fn pings_counted_together_agree_with_pings_counted_one_at_a_time(b: Backend) {
    use trusthub_monitors::service::push::{PushQuery, ping};
    let app = TestApp::spawn(b).await;
    let mut tokens = Vec::new();
    let mut ids = Vec::new();
    for name in ["alone", "together"] {
        let m = monitor(
            &app,
            json!({"name": name, "type": "push", "interval_seconds": 60, "grace_seconds": 30}),
        )
        .await;
        ids.push(m["id"].as_str().expect("id").to_owned());
        let url = m["push_url"].as_str().expect("url");
        tokens.push(url.rsplit('/').next().expect("token").to_owned());
    }
    let t0 = hub_now() + Duration::minutes(5);
    let q = |status: Option<&str>, msg: Option<&str>, ms: Option<i64>| PushQuery {
        status: status.map(str::to_owned),
        msg: msg.map(str::to_owned),
        ping: ms,
    };
    // (seconds after t0, start?, query): repeats in one second, a failure that alerts, a
    // recovery that resolves it, a timed run, a gap longer than the timeline tolerates.
    let script = || {
        vec![
            (0, false, q(None, None, None)),
            (0, false, q(None, None, None)),
            (0, false, q(Some("up"), Some("done"), None)),
            (2, false, q(Some("down"), Some("disk full"), None)),
            (3, false, q(Some("down"), None, None)),
            (3, false, q(Some("down"), None, None)),
            (4, false, q(None, None, Some(1500))),
            (5, true, q(None, None, None)),
            (9, false, q(None, None, None)),
            (400, false, q(None, None, None)),
            (401, false, q(Some("down"), None, None)),
        ]
    };
    let mut alone = Vec::new();
    for (s, start, q) in script() {
        let r = ping(&app.state, &tokens[0], q, start, t0 + Duration::seconds(s)).await;
        alone.push(
            r.map(|a| (a.recorded, a.next_deadline))
                .map_err(|e| e.to_string()),
        );
    }
    let together: Vec<_> =
        futures_util::future::join_all(script().into_iter().map(|(s, start, q)| {
            ping(&app.state, &tokens[1], q, start, t0 + Duration::seconds(s))
        }))
        .await
        .into_iter()
        .map(|r| {
            r.map(|a| (a.recorded, a.next_deadline))
                .map_err(|e| e.to_string())
        })
        .collect();
    assert_eq!(alone, together, "the answers");
    let (a, t) = (trail(&app, &ids[0]).await, trail(&app, &ids[1]).await);
    assert_eq!(a, t, "what the pings left");
    // And what they left is what the script says.
    assert_eq!(a["checks"].as_array().map(Vec::len), Some(8), "{a}");
    assert_eq!(
        a["spans"],
        json!([
            [t0.unix_timestamp(), t0.unix_timestamp() + 1, false],
            [t0.unix_timestamp() + 1, t0.unix_timestamp() + 3, true],
            [t0.unix_timestamp() + 3, t0.unix_timestamp() + 9, false],
            [t0.unix_timestamp() + 400, t0.unix_timestamp() + 400, false],
            [t0.unix_timestamp() + 400, t0.unix_timestamp() + 401, true]
        ]),
        "{a}"
    );
    assert_eq!(a["alerts"].as_array().map(Vec::len), Some(2), "{a}");
    assert_eq!(a["state"][0], "stopped", "{a}");
    // An unknown token among known ones answers 404 alone.
    let r = futures_util::future::join_all([
        ping(
            &app.state,
            "thp_unknown",
            Default::default(),
            false,
            t0 + Duration::seconds(500),
        ),
        ping(
            &app.state,
            &tokens[0],
            Default::default(),
            false,
            t0 + Duration::seconds(500),
        ),
    ])
    .await;
    assert!(
        matches!(r[0], Err(trusthub_platform::error::ApiError::NotFound(_))),
        "{:?}",
        r[0]
    );
    assert_eq!(r[1].as_ref().map(|a| a.recorded.as_str()).ok(), Some("up"));
}

/// dnsmasq on a loopback port with the records the test asks for; names under `.test` it
/// does not hold answer NXDOMAIN.
struct Dnsmasq {
    child: std::process::Child,
    port: u16,
}

impl Drop for Dnsmasq {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn dnsmasq() -> Dnsmasq {
    let port = {
        let s = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
        s.local_addr().expect("addr").port()
    };
    let bin = ["/usr/sbin/dnsmasq", "dnsmasq"]
        .into_iter()
        .find(|b| std::path::Path::new(b).exists())
        .unwrap_or("dnsmasq");
    let child = std::process::Command::new(bin)
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
            "--host-record=web.test,192.0.2.20,2001:db8::20",
            "--address=/app.test/192.0.2.10",
            "--cname=www.test,web.test",
            "--mx-host=mail.test,mx1.mail.test,10",
            "--txt-record=txt.test,v=spf1 -all",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("dnsmasq runs (dnsmasq-base, installed by .ci/run)");
    // Ready when it answers over TCP.
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    Dnsmasq { child, port }
}

async fn dns_checks_ask_a_real_server_and_tell_nxdomain_from_silence(b: Backend) {
    let app = TestApp::spawn(b).await;
    let dns = dnsmasq().await;
    let server = format!("127.0.0.1:{}", dns.port);
    // A UDP port that never answers.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
    let silent_at = silent.local_addr().expect("addr");
    let cases = [
        (
            "a",
            format!("dns://app.test?type=A&server={server}"),
            json!(["192.0.2.10"]),
            None,
        ),
        (
            "aaaa",
            format!("dns://web.test?type=AAAA&server={server}"),
            json!(["2001:db8:0::20"]),
            None,
        ),
        (
            "cname",
            format!("dns://www.test?type=CNAME&server={server}"),
            json!(["web.test."]),
            None,
        ),
        (
            "mx",
            format!("dns://mail.test?type=MX&server={server}"),
            json!(["mx1.mail.test"]),
            None,
        ),
        (
            "txt",
            format!("dns://txt.test?type=TXT&server={server}"),
            json!(["v=spf1 -all"]),
            None,
        ),
        (
            "wrong",
            format!("dns://x.app.test?server={server}"),
            json!(["192.0.2.11"]),
            Some("the A answer for `x.app.test` lacks 192.0.2.11: it holds 192.0.2.10".to_owned()),
        ),
        (
            "nx",
            format!("dns://nope.test?server={server}"),
            Value::Null,
            Some(format!(
                "`nope.test` does not exist (NXDOMAIN from {server})"
            )),
        ),
        (
            "silent",
            format!("dns://app.test?server={silent_at}"),
            Value::Null,
            Some(format!("no answer from {silent_at} within 1 s")),
        ),
    ];
    let mut ids = Vec::new();
    for (name, endpoint, expected, _) in &cases {
        let mut req = json!({"name": name, "type": "dns", "endpoint": endpoint, "retries": 0,
            "timeout_seconds": 1});
        if !expected.is_null() {
            req["expected"] = expected.clone();
        }
        let m = monitor(&app, req).await;
        ids.push(m["id"].as_str().expect("id").to_owned());
    }
    let r = tick_at(&app, hub_now() + Duration::seconds(1)).await;
    assert_eq!((r.probed, r.failed), (cases.len(), 3));
    for ((name, _, _, why), id) in cases.iter().zip(&ids) {
        let v = body(app.get(&format!("/apps/{id}"), &app.owner).await).await;
        let check = &v["last_check"];
        assert_eq!(check["ok"], why.is_none(), "{name}: {v}");
        assert_eq!(check["error"].as_str(), why.as_deref(), "{name}");
        assert!(check["latency_ms"].is_i64(), "{name}");
        assert_eq!(
            v["observed_state"],
            if why.is_none() { "running" } else { "stopped" }
        );
    }
    let alerts = open_alerts(&app).await;
    assert_eq!(alerts.len(), 3, "{alerts:?}");
    drop(silent);
}

/// Serves `body` as JSON to every request on a new loopback port.
async fn json_server(body: &'static str) -> String {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/health", l.local_addr().expect("addr"));
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 2048];
                let _ = s.read(&mut buf).await;
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(answer.as_bytes()).await;
            });
        }
    });
    url
}

async fn ping_and_json_query_checks_judge_real_answers(b: Backend) {
    let app = TestApp::spawn(b).await;
    let up = monitor(
        &app,
        json!({"name": "gateway", "type": "ping", "endpoint": "icmp://127.0.0.1"}),
    )
    .await;
    assert_eq!(up["identifier"], "icmp://127.0.0.1");
    let url = json_server(r#"{"status":"ok","db":{"lag_ms":250},"regions":["eu","us"]}"#).await;
    let ok = monitor(
        &app,
        json!({"name": "api ok", "type": "http", "endpoint": url,
        "json_query": {"path": "$.regions", "op": "contains", "value": "eu"}}),
    )
    .await;
    assert_eq!(
        ok["json_query"],
        json!({"path": "$.regions", "op": "contains", "value": "eu"})
    );
    let url2 = json_server(r#"{"status":"ok","db":{"lag_ms":250}}"#).await;
    let lag = monitor(
        &app,
        json!({"name": "api lag", "type": "http", "endpoint": url2,
        "retries": 0, "json_query": {"path": "$.db.lag_ms", "op": "<", "value": 100}}),
    )
    .await;
    let r = tick_at(&app, hub_now() + Duration::seconds(1)).await;
    assert_eq!((r.probed, r.failed), (3, 1));
    let v = body(
        app.get(
            &format!("/apps/{}", up["id"].as_str().expect("id")),
            &app.owner,
        )
        .await,
    )
    .await;
    assert_eq!(v["last_check"]["ok"], true, "{v}");
    assert!(
        v["last_check"]["latency_ms"].is_i64(),
        "the round trip: {v}"
    );
    let v = body(
        app.get(
            &format!("/apps/{}", ok["id"].as_str().expect("id")),
            &app.owner,
        )
        .await,
    )
    .await;
    assert_eq!(v["last_check"]["ok"], true, "{v}");
    let v = body(
        app.get(
            &format!("/apps/{}", lag["id"].as_str().expect("id")),
            &app.owner,
        )
        .await,
    )
    .await;
    assert_eq!(
        v["last_check"]["error"],
        "`$.db.lag_ms` is 250, expected < 100"
    );
    assert_eq!(v["last_check"]["status_code"], 200);
    let alerts = open_alerts(&app).await;
    assert_eq!(alerts.len(), 1);
    assert!(
        alerts[0]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("`$.db.lag_ms` is 250")),
        "{alerts:?}"
    );
    // The outbound policy holds for ping as for every hub check.
    let r = app
        .post(
            "/apps",
            &app.owner,
            json!({"name": "lan", "type": "ping", "endpoint": "icmp://10.1.2.3"}),
        )
        .await;
    let p = assert_problem(r, 422, "validation_failed").await;
    assert!(names_field(&p, "endpoint"), "{p}");
}

async fn the_new_types_are_validated_field_by_field(b: Backend) {
    let app = TestApp::spawn(b).await;
    let before = app.count("SELECT COUNT(*) FROM apps").await;
    let refused = [
        (
            json!({"name": "p", "type": "push", "endpoint": "http://x.test/"}),
            "endpoint",
        ),
        (
            json!({"name": "p", "type": "push", "timeout_seconds": 5}),
            "timeout_seconds",
        ),
        (
            json!({"name": "p", "type": "push", "interval_seconds": 5}),
            "interval_seconds",
        ),
        (
            json!({"name": "p", "type": "push", "grace_seconds": -1}),
            "grace_seconds",
        ),
        (
            json!({"name": "h", "type": "http", "endpoint": "http://127.0.0.1/", "grace_seconds": 5}),
            "grace_seconds",
        ),
        (
            json!({"name": "d", "type": "dns", "endpoint": "dns://a.test?type=SRV"}),
            "endpoint",
        ),
        (
            json!({"name": "d", "type": "dns", "endpoint": "dns://a.test?server=127.0.0.1", "expected": ["not-an-ip"]}),
            "expected",
        ),
        (
            json!({"name": "d", "type": "dns", "endpoint": "dns://a.test?server=127.0.0.1", "expected": []}),
            "expected",
        ),
        (
            json!({"name": "d", "type": "dns", "endpoint": "dns://a.test?server=10.9.9.9"}),
            "endpoint",
        ),
        (
            json!({"name": "i", "type": "ping", "endpoint": "http://127.0.0.1/"}),
            "endpoint",
        ),
        (
            json!({"name": "i", "type": "ping", "endpoint": "icmp://127.0.0.1", "expected": ["x"]}),
            "expected",
        ),
        (
            json!({"name": "j", "type": "http", "endpoint": "http://127.0.0.1/",
            "json_query": {"path": "status", "op": "==", "value": 1}}),
            "json_query.path",
        ),
        (
            json!({"name": "j", "type": "http", "endpoint": "http://127.0.0.1/",
            "json_query": {"path": "$.a", "op": "~=", "value": 1}}),
            "json_query.op",
        ),
        (
            json!({"name": "j", "type": "http", "endpoint": "http://127.0.0.1/",
            "json_query": {"path": "$.a", "op": ">", "value": "high"}}),
            "json_query.value",
        ),
        (
            json!({"name": "j", "type": "tcp", "endpoint": "tcp://127.0.0.1:1",
            "json_query": {"path": "$.a", "op": "==", "value": 1}}),
            "json_query",
        ),
    ];
    for (req, field) in refused {
        let r = app.post("/apps", &app.owner, req.clone()).await;
        let p = assert_problem(r, 422, "validation_failed").await;
        assert!(names_field(&p, field), "{req}: {p}");
    }
    // An agent runs http checks only; a misspelt field of a query is refused.
    let r = app
        .post(
            "/apps",
            &app.owner,
            json!({"name": "x", "type": "http", "endpoint": "http://127.0.0.1/",
            "json_query": {"path": "$.a", "op": "==", "valeu": 1}}),
        )
        .await;
    assert!(matches!(r.status().as_u16(), 400 | 422), "{}", r.status());
    assert_eq!(app.count("SELECT COUNT(*) FROM apps").await, before);
}
