//! Notification channels (CONTRACT 27) against local servers that check each service's
//! documented request shape: Slack Block Kit (incoming webhooks), Discord webhook embeds,
//! a Teams workflow's Adaptive Card, Telegram Bot API `sendMessage`, ntfy JSON publish,
//! PagerDuty Events API v2 (trigger, then resolve with the same `dedup_key`), SMTP mail.
//! The alert comes from a real hub check going down and back up.

use crate::harness::*;
use axum::extract::State as AxState;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

crate::dual!(
    alerts_reach_every_channel_in_its_services_format_and_resolve_closes_the_incident,
    channels_are_checked_masked_scoped_and_tested,
);

/// What a receiver got: `(path, authorization, body)`.
pub(crate) type Got = Arc<Mutex<Vec<(String, Option<String>, Value)>>>;

/// A local HTTP server that records every POST and answers as the services do.
pub(crate) async fn receiver() -> (String, Got) {
    let got: Got = Arc::default();
    let l = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", l.local_addr().expect("addr"));
    let app = receiver_app(got.clone());
    tokio::spawn(async move { axum::serve(l, app).await });
    (base, got)
}

/// The receivers' routes: every request recorded; Slack's incoming webhooks answer `ok` in
/// plain text, PagerDuty's Events API 202 with its JSON, the others `{"ok": true}`.
pub(crate) fn receiver_app(got: Got) -> axum::Router {
    axum::Router::new()
        .fallback(
            |AxState(got): AxState<Got>, req: axum::extract::Request| async move {
                let path = req.uri().path().to_owned();
                let auth = req
                    .headers()
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let bytes = axum::body::to_bytes(req.into_body(), 1 << 20)
                    .await
                    .unwrap_or_default();
                let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                got.lock()
                    .expect("lock")
                    .push((path.clone(), auth, body.clone()));
                use axum::response::IntoResponse as _;
                if path.ends_with("/v2/enqueue") {
                    let dedup = body["dedup_key"].as_str().unwrap_or("generated").to_owned();
                    (
                        axum::http::StatusCode::ACCEPTED,
                        axum::Json(json!({"status": "success", "message": "Event processed",
                            "dedup_key": dedup})),
                    )
                        .into_response()
                } else if path.starts_with("/services/") {
                    (axum::http::StatusCode::OK, "ok").into_response()
                } else {
                    (axum::http::StatusCode::OK, axum::Json(json!({"ok": true}))).into_response()
                }
            },
        )
        .with_state(got)
}

fn text_len(v: &Value) -> usize {
    v.as_str().map_or(0, |s| s.chars().count())
}

/// Slack Block Kit, as incoming webhooks take it: a fallback `text` and at most 50 blocks
/// of known types within their limits.
pub(crate) fn slack_shape(b: &Value) {
    assert!(text_len(&b["text"]) > 0, "{b}");
    let blocks = b["blocks"].as_array().expect("blocks");
    assert!(!blocks.is_empty() && blocks.len() <= 50);
    for bl in blocks {
        match bl["type"].as_str().expect("block type") {
            "header" => {
                assert_eq!(bl["text"]["type"], "plain_text");
                assert!((1..=150).contains(&text_len(&bl["text"]["text"])), "{bl}");
            }
            "section" => {
                assert!(matches!(
                    bl["text"]["type"].as_str(),
                    Some("mrkdwn" | "plain_text")
                ));
                assert!((1..=3000).contains(&text_len(&bl["text"]["text"])), "{bl}");
                let fields = bl["fields"].as_array().map_or(&[][..], Vec::as_slice);
                assert!(fields.len() <= 10);
                for f in fields {
                    assert!((1..=2000).contains(&text_len(&f["text"])), "{f}");
                }
            }
            "actions" => {
                for e in bl["elements"].as_array().expect("elements") {
                    assert_eq!(e["type"], "button");
                    assert_eq!(e["text"]["type"], "plain_text");
                    assert!((1..=75).contains(&text_len(&e["text"]["text"])));
                    assert!((1..=3000).contains(&text_len(&e["url"])));
                }
            }
            other => panic!("unexpected block {other}"),
        }
    }
}

/// Discord's webhook: at most 10 embeds within Discord's limits (6000 characters in all).
fn discord_shape(b: &Value) {
    let embeds = b["embeds"].as_array().expect("embeds");
    assert!(!embeds.is_empty() && embeds.len() <= 10);
    for e in embeds {
        assert!((1..=256).contains(&text_len(&e["title"])));
        assert!(text_len(&e["description"]) <= 4096);
        let colour = e["color"].as_u64().expect("color");
        assert!(colour <= 0xFF_FFFF);
        assert!(
            time::OffsetDateTime::parse(
                e["timestamp"].as_str().expect("timestamp"),
                &time::format_description::well_known::Rfc3339
            )
            .is_ok()
        );
        let fields = e["fields"].as_array().expect("fields");
        assert!(fields.len() <= 25);
        let mut total = text_len(&e["title"]) + text_len(&e["description"]);
        for f in fields {
            assert!((1..=256).contains(&text_len(&f["name"])));
            assert!((1..=1024).contains(&text_len(&f["value"])));
            total += text_len(&f["name"]) + text_len(&f["value"]);
        }
        assert!(total <= 6000);
        assert!(e["url"].as_str().is_some_and(|u| u.contains("/ui/alerts")));
    }
}

/// A Teams workflow's "Post to a chat when a webhook request is received": a message with
/// one Adaptive Card attachment.
fn teams_shape(b: &Value) {
    assert_eq!(b["type"], "message");
    let a = &b["attachments"][0];
    assert_eq!(a["contentType"], "application/vnd.microsoft.card.adaptive");
    let card = &a["content"];
    assert_eq!(card["type"], "AdaptiveCard");
    assert!(matches!(card["version"].as_str(), Some("1.4" | "1.5")));
    for el in card["body"].as_array().expect("body") {
        match el["type"].as_str().expect("type") {
            "TextBlock" => assert!(text_len(&el["text"]) > 0),
            "FactSet" => {
                for f in el["facts"].as_array().expect("facts") {
                    assert!(f["title"].is_string() && f["value"].is_string());
                }
            }
            other => panic!("unexpected card element {other}"),
        }
    }
    let act = &card["actions"][0];
    assert_eq!(act["type"], "Action.OpenUrl");
    assert!(
        act["url"]
            .as_str()
            .is_some_and(|u| u.contains("/ui/alerts"))
    );
}

/// Telegram's `sendMessage`: `chat_id`, `text` of at most 4096 characters, HTML parse mode
/// with only the tags Telegram knows.
fn telegram_shape(path: &str, b: &Value, token: &str) {
    assert_eq!(path, format!("/bot{token}/sendMessage"));
    assert!(b["chat_id"].is_string() || b["chat_id"].is_i64());
    let t = b["text"].as_str().expect("text");
    assert!(!t.is_empty() && t.chars().count() <= 4096);
    assert_eq!(b["parse_mode"], "HTML");
    let mut rest = t;
    while let Some(i) = rest.find('<') {
        let tag = rest[i + 1..]
            .split(['>', ' '])
            .next()
            .unwrap_or_default()
            .trim_start_matches('/');
        assert!(
            ["b", "i", "u", "s", "a", "code", "pre"].contains(&tag),
            "tag <{tag}> in {t}"
        );
        rest = &rest[i + 1..];
    }
}

/// ntfy's JSON publish: to the server's root, with the topic in the body.
fn ntfy_shape(path: &str, auth: Option<&str>, b: &Value) {
    assert_eq!(path, "/");
    assert_eq!(b["topic"], "ops-alerts");
    assert!(text_len(&b["title"]) > 0 && text_len(&b["message"]) > 0);
    assert!((1..=5).contains(&b["priority"].as_i64().expect("priority")));
    assert!(
        b["tags"]
            .as_array()
            .is_some_and(|t| t.iter().all(Value::is_string))
    );
    assert!(
        b["click"]
            .as_str()
            .is_some_and(|u| u.contains("/ui/alerts"))
    );
    assert_eq!(auth, Some("Bearer tk_ntfy_secret"));
}

/// PagerDuty Events API v2.
pub(crate) fn pagerduty_shape(path: &str, b: &Value, key: &str) {
    assert_eq!(path, "/v2/enqueue");
    assert_eq!(b["routing_key"], key);
    assert!((1..=255).contains(&text_len(&b["dedup_key"])));
    match b["event_action"].as_str().expect("action") {
        "trigger" => {
            let p = &b["payload"];
            assert!((1..=1024).contains(&text_len(&p["summary"])));
            assert!(text_len(&p["source"]) > 0);
            assert!(matches!(
                p["severity"].as_str(),
                Some("critical" | "error" | "warning" | "info")
            ));
            assert!(
                b["links"][0]["href"]
                    .as_str()
                    .is_some_and(|u| u.contains("/ui/alerts"))
            );
        }
        "resolve" | "acknowledge" => assert!(b.get("payload").is_none()),
        other => panic!("event_action {other}"),
    }
}

const TELEGRAM_TOKEN: &str = "123456:ABCdefGhIJKlmNoPQRstuVwxyz_1234";
const PD_KEY: &str = "R0123456789abcdef0123456789ABCDE";

async fn channel(app: &TestApp, body_: Value) -> Value {
    let r = app.post("/notification-channels", &app.owner, body_).await;
    assert_eq!(r.status(), 201);
    body(r).await
}

async fn wait_for(got: &Got, n: usize) -> Vec<(String, Option<String>, Value)> {
    for _ in 0..250 {
        let g = got.lock().expect("lock").clone();
        if g.len() >= n {
            return g;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    got.lock().expect("lock").clone()
}

async fn alerts_reach_every_channel_in_its_services_format_and_resolve_closes_the_incident(
    b: Backend,
) {
    let sink = SmtpSink::start().await;
    let url = sink.url();
    let app = TestApp::spawn_with(b, |s| s.smtp_url = Some(url)).await;
    let (base, got) = receiver().await;
    for (name, kind, config) in [
        (
            "slack",
            "slack",
            json!({"url": format!("{base}/services/T0/B0/xyz")}),
        ),
        (
            "discord",
            "discord",
            json!({"url": format!("{base}/api/webhooks/1/abc")}),
        ),
        (
            "teams",
            "teams",
            json!({"url": format!("{base}/workflows/teams")}),
        ),
        (
            "telegram",
            "telegram",
            json!({"bot_token": TELEGRAM_TOKEN, "chat_id": -1001234, "api_url": base}),
        ),
        (
            "ntfy",
            "ntfy",
            json!({"url": base, "topic": "ops-alerts", "token": "tk_ntfy_secret"}),
        ),
        (
            "pagerduty",
            "pagerduty",
            json!({"routing_key": PD_KEY, "api_url": base}),
        ),
        ("mail", "email", json!({"to": ["oncall@example.org"]})),
    ] {
        channel(&app, json!({"name": name, "kind": kind, "config": config})).await;
    }
    // A check the hub runs goes down (no retries): one alert, sent everywhere.
    let port = {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        l.local_addr().expect("addr").port()
    };
    let r = app
        .post(
            "/apps",
            &app.owner,
            json!({"name": "shop", "type": "http", "endpoint": format!("http://127.0.0.1:{port}/"), "retries": 0,
                   "interval_seconds": 10}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let t0 = hub_now() + Duration::seconds(1);
    let report = trusthub_monitors::jobs::probes::probe_tick(&app.state, t0)
        .await
        .expect("tick");
    assert_eq!(report.raised, 1);
    let alert_id = body(app.get("/alerts?is_resolved=false", &app.owner).await).await[0]["id"]
        .as_str()
        .expect("alert")
        .to_owned();
    let g = wait_for(&got, 6).await;
    assert_eq!(g.len(), 6, "{g:?}");
    let link = format!("/ui/alerts/{alert_id}");
    for (path, auth, b) in &g {
        assert!(b.to_string().contains(&link), "{path}: {b}");
        match path.as_str() {
            "/services/T0/B0/xyz" => slack_shape(b),
            "/api/webhooks/1/abc" => discord_shape(b),
            "/workflows/teams" => teams_shape(b),
            "/v2/enqueue" => {
                pagerduty_shape(path, b, PD_KEY);
                assert_eq!(b["event_action"], "trigger");
            }
            "/" => ntfy_shape(path, auth.as_deref(), b),
            p if p.starts_with("/bot") => telegram_shape(p, b, TELEGRAM_TOKEN),
            other => panic!("unexpected request to {other}"),
        }
    }
    let trigger_key = g
        .iter()
        .find(|(p, _, _)| p == "/v2/enqueue")
        .map(|(_, _, b)| b["dedup_key"].clone())
        .expect("pagerduty");
    // The mail, through the hub's SMTP relay.
    let mut mails = Vec::new();
    for _ in 0..50 {
        mails = sink.mails.lock().expect("mails").clone();
        if !mails.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(mails.len(), 1);
    assert_eq!(mails[0].to, vec!["oncall@example.org".to_owned()]);
    assert!(mails[0].data.contains("shop is down"), "{}", mails[0].data);
    assert!(mails[0].data.replace("=\r\n", "").contains(&link));
    // It answers again: resolved everywhere; PagerDuty's incident closes by the same key.
    let l = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .expect("rebind");
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf).await;
            let _ = s
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")
                .await;
        }
    });
    // (The clock is the test's: the resolution is queued at t0 + 10 s, and sent then.)
    let report =
        trusthub_monitors::jobs::probes::probe_tick(&app.state, t0 + Duration::seconds(10))
            .await
            .expect("tick");
    assert_eq!(report.resolved, 1);
    let g = wait_for(&got, 12).await;
    assert_eq!(g.len(), 12, "{g:?}");
    let resolve = g[6..]
        .iter()
        .find(|(p, _, _)| p == "/v2/enqueue")
        .map(|(_, _, b)| b.clone())
        .expect("resolve");
    pagerduty_shape("/v2/enqueue", &resolve, PD_KEY);
    assert_eq!(resolve["event_action"], "resolve");
    assert_eq!(resolve["dedup_key"], trigger_key);
    let slack_resolved = g[6..]
        .iter()
        .find(|(p, _, _)| p.starts_with("/services/"))
        .map(|(_, _, b)| b.clone())
        .expect("slack");
    slack_shape(&slack_resolved);
    assert!(
        slack_resolved["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("Resolved: shop is down"))
    );
}

async fn channels_are_checked_masked_scoped_and_tested(b: Backend) {
    let app = TestApp::spawn(b).await;
    let (base, got) = receiver().await;
    let refused = async |body_: Value, field: &str| {
        let p = assert_problem(
            app.post("/notification-channels", &app.owner, body_.clone())
                .await,
            422,
            "validation_failed",
        )
        .await;
        assert!(names_field(&p, field), "{field} in {p} for {body_}");
    };
    refused(json!({"name": "x", "kind": "sms", "config": {}}), "kind").await;
    refused(
        json!({"name": "x", "kind": "slack", "config": {"url": "ftp://x"}}),
        "config.url",
    )
    .await;
    refused(
        json!({"name": "x", "kind": "slack", "config": {"url": "https://10.0.0.1/hook"}}),
        "config.url",
    )
    .await;
    refused(json!({"name": "x", "kind": "slack", "config": {"url": format!("{base}/s"), "channel": "#ops"}}), "config").await;
    refused(
        json!({"name": "x", "kind": "telegram", "config": {"bot_token": "nope", "chat_id": 1}}),
        "config.bot_token",
    )
    .await;
    refused(
        json!({"name": "x", "kind": "pagerduty", "config": {"routing_key": "short"}}),
        "config.routing_key",
    )
    .await;
    refused(
        json!({"name": "x", "kind": "ntfy", "config": {"url": base, "topic": "bad topic"}}),
        "config.topic",
    )
    .await;
    refused(
        json!({"name": "x", "kind": "email", "config": {"to": ["a@example.org"]}}),
        "kind",
    )
    .await;
    refused(json!({"name": "x", "kind": "slack", "config": {"url": format!("{base}/s")}, "min_severity": "loud"}), "min_severity").await;
    assert_eq!(
        app.count("SELECT COUNT(*) FROM notification_channels")
            .await,
        0
    );

    let c = channel(
        &app,
        json!({"name": "ops slack", "kind": "slack", "config": {"url": format!("{base}/services/T9/B9/secretpart")}}),
    )
    .await;
    // The incoming-webhook URL is a credential: shown masked, stored sealed.
    assert_eq!(c["config"]["url"], format!("{base}/***"));
    assert!(!c.to_string().contains("secretpart"));
    let pd = channel(
        &app,
        json!({"name": "pd", "kind": "pagerduty", "config": {"routing_key": PD_KEY, "api_url": base}}),
    )
    .await;
    assert_eq!(pd["config"]["routing_key"], "***BCDE");
    // A signed webhook made without a secret gets one, shown in this answer only
    // (CONTRACT 33), masked everywhere after.
    let hook = channel(
        &app,
        json!({"name": "signed", "kind": "webhook", "config": {"url": format!("{base}/hook")}}),
    )
    .await;
    let secret = hook["secret"]
        .as_str()
        .expect("the generated secret, shown once");
    assert!(secret.starts_with("whsec_"), "{hook}");
    let listed = body(app.get("/notification-channels", &app.owner).await).await;
    assert!(!listed.to_string().contains(secret), "{listed}");
    assert!(
        listed
            .as_array()
            .is_some_and(|l| l.iter().all(|c| c.get("secret").is_none())),
        "{listed}"
    );
    let given = channel(
        &app,
        json!({"name": "given", "kind": "webhook", "config": {"url": format!("{base}/hook"), "secret": "a secret of my own"}}),
    )
    .await;
    assert!(given.get("secret").is_none(), "{given}");
    assert_eq!(
        app.count(
            "SELECT COUNT(*) FROM notification_channels WHERE CAST(config_shown AS TEXT) LIKE '%secretpart%'"
        )
        .await,
        0
    );
    let id = c["id"].as_str().expect("id");
    // A test message goes out in Slack's format.
    let r = app
        .post(
            &format!("/notification-channels/{id}/test"),
            &app.owner,
            json!({}),
        )
        .await;
    assert_eq!(r.status(), 202);
    let g = wait_for(&got, 1).await;
    assert_eq!(g[0].0, "/services/T9/B9/secretpart");
    slack_shape(&g[0].2);
    assert!(
        g[0].2["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("Test from Trusthub"))
    );
    let mut ds = Value::Null;
    for _ in 0..50 {
        ds = body(
            app.get(
                &format!("/notification-channels/{id}/deliveries"),
                &app.owner,
            )
            .await,
        )
        .await;
        if ds[0]["status"] == "succeeded" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(ds[0]["status"], "succeeded", "{ds}");
    assert_eq!(ds[0]["last_status_code"], 200);
    // A change keeps the sealed URL unless a new config is given.
    let r = app
        .patch(
            &format!("/notification-channels/{id}"),
            &app.owner,
            json!({"name": "ops", "min_severity": "critical"}),
        )
        .await;
    assert_eq!(r.status(), 200);
    let v = body(r).await;
    assert_eq!(
        (v["name"].as_str(), v["min_severity"].as_str()),
        (Some("ops"), Some("critical"))
    );
    assert_eq!(v["config"]["url"], format!("{base}/***"));
    // Another tenant sees none of it.
    let other = app.other_tenant().await;
    let r = app
        .get(&format!("/notification-channels/{id}"), &other)
        .await;
    assert_eq!(r.status(), 404);
    assert_eq!(
        body(app.get("/notification-channels", &other).await).await,
        json!([])
    );
    let r = app
        .delete(&format!("/notification-channels/{id}"), &other)
        .await;
    assert_eq!(r.status(), 404);
    let r = app
        .delete(&format!("/notification-channels/{id}"), &app.owner)
        .await;
    assert_eq!(r.status(), 204);
    // The pagerduty channel and the two webhooks stay.
    assert_eq!(
        body(app.get("/notification-channels", &app.owner).await)
            .await
            .as_array()
            .map(Vec::len),
        Some(3)
    );
}
