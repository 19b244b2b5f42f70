//! Webhooks (SPEC 2.6, 3.3, 6.1; CONTRACT 6) against a real local HTTP receiver: signatures
//! checked with a plain HMAC, Standard Webhooks, retries with one delivery id, the cooldown,
//! filters, validation, roles and isolation.

use crate::agents::register;
use crate::apps::{create_app, nginx, tick};
use crate::harness::*;
use hmac::{KeyInit, Mac};
use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;

crate::dual!(
    an_endpoint_is_changed_in_place_and_signs_with_its_new_secret,
    deliveries_are_signed_and_carry_the_alert,
    retries_keep_one_delivery_id_then_fail_and_cool_down,
    severity_tag_and_event_filters_choose_endpoints,
    webhooks_are_validated_admin_only_and_scoped,
);

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut m = HmacSha256::new_from_slice(key).expect("key");
    m.update(data);
    m.finalize().into_bytes().to_vec()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

async fn create_hook(app: &TestApp, req: Value) -> Value {
    let r = app.post("/webhooks", &app.owner, req).await;
    assert_eq!(r.status(), 201);
    body(r).await
}

/// Raises one liveness alert (warning) on a fresh agent tagged env:test and role:web;
/// answers the app path so the caller can let it resolve.
async fn raise_liveness_alert(app: &TestApp) -> crate::agents::Host {
    let host = register(app).await;
    nginx(app, &host, "failed").await;
    create_app(
        app,
        &app.owner,
        json!({"agent_id": host.id, "name": "nginx", "app_type": "systemd", "identifier": "nginx"}),
    )
    .await;
    for _ in 0..3 {
        tick(app).await;
    }
    host
}

async fn deliveries_are_signed_and_carry_the_alert(b: Backend) {
    let app = TestApp::spawn(b).await;
    let plain = Receiver::start(&[]).await;
    let standard = Receiver::start(&[]).await;
    let secret = "a-shared-secret-of-some-length";
    let w1 = create_hook(&app, json!({"url": plain.url, "secret": secret})).await;
    assert_eq!(w1["secret"], secret);
    assert_eq!(
        w1["events"],
        json!(["alert.created", "alert.resolved", "drift.ticket"])
    );
    assert_eq!(w1["min_severity"], "warning");
    let w2 = create_hook(&app, json!({"url": standard.url})).await;
    let generated = w2["secret"].as_str().expect("secret").to_owned();
    assert!(generated.starts_with("whsec_"));

    let host = raise_liveness_alert(&app).await;
    let got = plain.wait_for(1, 10).await;
    let r = &got[0];
    assert_eq!(
        r.header("x-service-signature"),
        format!("sha256={}", hex(&hmac(secret.as_bytes(), &r.body)))
    );
    assert_eq!(r.header("x-service-event"), "alert.created");
    let id = r.header("x-service-delivery");
    assert!(uuid::Uuid::parse_str(&id).is_ok());
    assert_eq!(r.header("webhook-id"), id);
    let sent = r.json();
    assert_eq!(sent["event"], "alert.created");
    assert_eq!(sent["tenant_id"].as_str().map(str::len), Some(36));
    assert!(sent["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')));
    let alert = &sent["alert"];
    for k in ["id", "severity", "category", "title"] {
        assert!(alert[k].is_string(), "alert.{k}");
    }
    assert_eq!(alert["agent"]["id"], json!(host.id));
    assert_eq!(alert["agent"]["hostname"], "web-1");
    assert_eq!(alert["agent"]["tags"], json!(["env:test", "role:web"]));
    assert!(!String::from_utf8_lossy(&r.body).contains(secret));

    // Standard Webhooks: v1,<base64 HMAC(base64-decoded key, "id.timestamp.body")>.
    let s = &standard.wait_for(1, 10).await[0];
    let key = data_encoding::BASE64
        .decode(generated.trim_start_matches("whsec_").as_bytes())
        .expect("b64");
    let signed = format!(
        "{}.{}.",
        s.header("webhook-id"),
        s.header("webhook-timestamp")
    );
    let mut data = signed.into_bytes();
    data.extend_from_slice(&s.body);
    assert_eq!(
        s.header("webhook-signature"),
        format!("v1,{}", data_encoding::BASE64.encode(&hmac(&key, &data)))
    );
    assert_eq!(
        s.header("x-service-timestamp"),
        s.header("webhook-timestamp")
    );

    // Resolution is delivered too.
    nginx(&app, &host, "active").await;
    tick(&app).await;
    let got = plain.wait_for(2, 10).await;
    assert_eq!(got[1].header("x-service-event"), "alert.resolved");
    assert_eq!(got[1].json()["alert"]["is_resolved"], true);
    assert_ne!(got[1].header("x-service-delivery"), id);

    let wid = w1["id"].as_str().expect("id");
    let list = eventually(10, "two succeeded deliveries", || async {
        let l = body(
            app.get(&format!("/webhooks/{wid}/deliveries"), &app.owner)
                .await,
        )
        .await;
        let done = l
            .as_array()
            .is_some_and(|a| a.len() == 2 && a.iter().all(|d| d["status"] == "succeeded"));
        done.then_some(l)
    })
    .await;
    assert_eq!(list[0]["attempts"], 1);
    assert_eq!(list[0]["last_status_code"], 200);
    let text = list.to_string()
        + &body(app.get("/webhooks", &app.owner).await)
            .await
            .to_string();
    assert!(!text.contains(secret) && !text.contains(&generated));
    // At rest the secret is sealed.
    let n = app
        .count(&format!(
            "SELECT COUNT(*) FROM webhooks WHERE url = '{}' AND secret_hint = 'a-shared-s'",
            plain.url
        ))
        .await;
    assert_eq!(n, 1);
    let tenant = uuid::Uuid::parse_str(sent["tenant_id"].as_str().expect("t")).expect("uuid");
    let mut c = app.db.conn().await.expect("conn");
    let sealed: Vec<Vec<u8>> =
        trusthub_alerts::raw::webhooks(&mut c, trusthub_store::TenantId(tenant))
            .await
            .expect("list")
            .into_iter()
            .map(|w| w.secret_sealed)
            .collect();
    assert_eq!(sealed.len(), 2);
    for s in sealed {
        assert!(!s.windows(secret.len()).any(|w| w == secret.as_bytes()));
    }
}

async fn retries_keep_one_delivery_id_then_fail_and_cool_down(b: Backend) {
    let app = TestApp::spawn_with(b, |s| {
        s.sections.edit(|v: &mut trusthub_hub::sections::Alerts| {
            v.webhook_retry_schedule =
                trusthub_hub::settings::Schedule(vec![Duration::from_secs(1); 3]);
        });
    })
    .await;
    let down = Receiver::start(&[500, 500, 502, 503]).await;
    let flaky = Receiver::start(&[503]).await;
    let wd = create_hook(&app, json!({"url": down.url})).await;
    let wf = create_hook(&app, json!({"url": flaky.url})).await;
    let (did, fid) = (
        wd["id"].as_str().expect("id"),
        wf["id"].as_str().expect("id"),
    );
    let r = app
        .post(&format!("/webhooks/{did}/test"), &app.owner, json!({}))
        .await;
    assert_eq!(r.status(), 202);
    let ping = body(r).await;
    assert_eq!(ping["status"], "pending");
    assert_eq!(
        app.post(&format!("/webhooks/{fid}/test"), &app.owner, json!({}))
            .await
            .status(),
        202
    );

    // First attempt and three retries, one delivery id.
    let got = down.wait_for(4, 20).await;
    let ids: Vec<String> = got.iter().map(|r| r.header("x-service-delivery")).collect();
    assert!(
        ids.iter()
            .all(|i| *i == ping["id"].as_str().unwrap_or_default()),
        "{ids:?}"
    );
    assert_eq!(got[0].header("x-service-event"), "webhook.test");
    let d = eventually(10, "failed delivery", || async {
        let l = body(
            app.get(&format!("/webhooks/{did}/deliveries"), &app.owner)
                .await,
        )
        .await;
        (l[0]["status"] == "failed").then(|| l[0].clone())
    })
    .await;
    assert_eq!(d["attempts"], 4);
    assert_eq!(d["last_status_code"], 503);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM audit_log WHERE event_type = 'webhook_delivery_failed'")
            .await,
        1
    );
    let w = body(app.get(&format!("/webhooks/{did}"), &app.owner).await).await;
    assert!(w["cooldown_until"].is_string());
    // During the cooldown deliveries are recorded as skipped, not sent, and redelivery waits.
    let r = app
        .post(&format!("/webhooks/{did}/test"), &app.owner, json!({}))
        .await;
    assert_eq!(body(r).await["status"], "skipped");
    let r = app
        .post(
            &format!(
                "/webhooks/{did}/deliveries/{}/redeliver",
                d["id"].as_str().expect("id")
            ),
            &app.owner,
            json!({}),
        )
        .await;
    assert_problem(r, 409, "conflict").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(down.received().len(), 4);

    // One failure, then success on the retry: same id, succeeded after 2 attempts.
    let got = flaky.wait_for(2, 10).await;
    assert_eq!(
        got[0].header("x-service-delivery"),
        got[1].header("x-service-delivery")
    );
    let l = eventually(10, "succeeded delivery", || async {
        let l = body(
            app.get(&format!("/webhooks/{fid}/deliveries"), &app.owner)
                .await,
        )
        .await;
        (l[0]["status"] == "succeeded").then(|| l[0].clone())
    })
    .await;
    assert_eq!(l["attempts"], 2);
    // A finished delivery can be sent again on request (same id), while one in flight cannot.
    let r = app
        .post(
            &format!(
                "/webhooks/{fid}/deliveries/{}/redeliver",
                l["id"].as_str().expect("id")
            ),
            &app.owner,
            json!({}),
        )
        .await;
    assert_eq!(r.status(), 202);
    let got = flaky.wait_for(3, 10).await;
    assert_eq!(
        got[2].header("x-service-delivery"),
        got[0].header("x-service-delivery")
    );
}

async fn severity_tag_and_event_filters_choose_endpoints(b: Backend) {
    let app = TestApp::spawn(b).await;
    let critical_only = Receiver::start(&[]).await;
    let db_hosts = Receiver::start(&[]).await;
    let resolved_only = Receiver::start(&[]).await;
    let web_hosts = Receiver::start(&[]).await;
    create_hook(
        &app,
        json!({"url": critical_only.url, "min_severity": "critical"}),
    )
    .await;
    create_hook(
        &app,
        json!({"url": db_hosts.url, "agent_filter": {"tag": "role:db"}}),
    )
    .await;
    create_hook(
        &app,
        json!({"url": resolved_only.url, "events": ["alert.resolved"]}),
    )
    .await;
    create_hook(
        &app,
        json!({"url": web_hosts.url, "agent_filter": {"tag": "role:web"}, "min_severity": "info"}),
    )
    .await;
    let host = raise_liveness_alert(&app).await;
    let got = web_hosts.wait_for(1, 10).await;
    assert_eq!(got[0].header("x-service-event"), "alert.created");
    nginx(&app, &host, "active").await;
    tick(&app).await;
    web_hosts.wait_for(2, 10).await;
    let got = resolved_only.wait_for(1, 10).await;
    assert_eq!(got[0].header("x-service-event"), "alert.resolved");
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(critical_only.received().len(), 0);
    assert_eq!(db_hosts.received().len(), 0);
    assert_eq!(resolved_only.received().len(), 1);
}

async fn webhooks_are_validated_admin_only_and_scoped(b: Backend) {
    let app = TestApp::spawn(b).await;
    for (req, field) in [
        (json!({"url": "ftp://example.com/x"}), "url"),
        (
            json!({"url": "http://169.254.169.254/latest/meta-data"}),
            "url",
        ),
        (json!({"url": "http://[fe80::1]/x"}), "url"),
        (
            json!({"url": "http://example.com", "events": ["alert.deleted"]}),
            "events[0]",
        ),
        (json!({"url": "http://example.com", "events": []}), "events"),
        (
            json!({"url": "http://example.com", "min_severity": "fatal"}),
            "min_severity",
        ),
        (
            json!({"url": "http://example.com", "secret": "short"}),
            "secret",
        ),
        (
            json!({"url": "http://example.com", "agent_filter": {"tag": ""}}),
            "agent_filter.tag",
        ),
    ] {
        let p = assert_problem(
            app.post("/webhooks", &app.owner, req.clone()).await,
            422,
            "validation_failed",
        )
        .await;
        assert!(names_field(&p, field), "{req}: {p}");
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM webhooks").await, 0);
    let (operator, _) = app.user_with_role("operator").await;
    assert_problem(
        app.post("/webhooks", &operator, json!({"url": "http://example.com"}))
            .await,
        403,
        "forbidden",
    )
    .await;
    assert_problem(app.get("/webhooks", &operator).await, 403, "forbidden").await;

    let w = create_hook(&app, json!({"url": "http://127.0.0.1:9/x"})).await;
    let id = w["id"].as_str().expect("id");
    let r = app
        .post(&format!("/webhooks/{id}/test"), &app.owner, json!({}))
        .await;
    let delivery = body(r).await["id"].as_str().expect("id").to_owned();
    let other = app.other_tenant().await;
    assert_problem(
        app.get(&format!("/webhooks/{id}"), &other).await,
        404,
        "not_found",
    )
    .await;
    assert_problem(
        app.get(&format!("/webhooks/{id}/deliveries"), &other).await,
        404,
        "not_found",
    )
    .await;
    assert_problem(
        app.post(&format!("/webhooks/{id}/test"), &other, json!({}))
            .await,
        404,
        "not_found",
    )
    .await;
    let r = app
        .post(
            &format!("/webhooks/{id}/deliveries/{delivery}/redeliver"),
            &other,
            json!({}),
        )
        .await;
    assert_problem(r, 404, "not_found").await;
    assert_problem(
        app.delete(&format!("/webhooks/{id}"), &other).await,
        404,
        "not_found",
    )
    .await;
    assert_eq!(body(app.get("/webhooks", &other).await).await, json!([]));
    let r = app
        .req(Method::DELETE, &format!("/webhooks/{id}"), &operator)
        .send()
        .await
        .expect("req");
    assert_problem(r, 403, "forbidden").await;
    assert_eq!(
        app.delete(&format!("/webhooks/{id}"), &app.owner)
            .await
            .status(),
        204
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM webhook_deliveries").await,
        0
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM audit_log WHERE event_type IN ('webhook_created', 'webhook_deleted')").await,
        2
    );

    // An operator who allows link-local targets may use them.
    let open = TestApp::spawn_with(b, |s| s.outbound_allow_cidrs = "169.254.0.0/16".into()).await;
    let r = open
        .post(
            "/webhooks",
            &open.owner,
            json!({"url": "http://169.254.169.254/hook"}),
        )
        .await;
    assert_eq!(r.status(), 201);
}

/// PATCH /webhooks/:id: only the fields sent change, checked like at creation; a new secret
/// signs the next delivery; `agent_filter: null` removes the filter; roles and tenants hold.
async fn an_endpoint_is_changed_in_place_and_signs_with_its_new_secret(b: Backend) {
    let app = TestApp::spawn(b).await;
    let first = Receiver::start(&[]).await;
    let second = Receiver::start(&[]).await;
    let w = create_hook(
        &app,
        json!({"url": first.url, "secret": "the-first-secret-value", "agent_filter": {"tag": "env:prod"}}),
    )
    .await;
    let id = w["id"].as_str().expect("id").to_owned();
    let path = format!("/webhooks/{id}");
    // Refused changes change nothing, and name every bad field.
    let p = assert_problem(
        app.patch(
            &path,
            &app.owner,
            json!({"url": "http://169.254.169.254/x", "min_severity": "fatal"}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    for f in ["url", "min_severity"] {
        assert!(names_field(&p, f), "{f}: {p}");
    }
    let p = assert_problem(
        app.patch(&path, &app.owner, json!({"colour": "red"})).await,
        422,
        "validation_failed",
    )
    .await;
    assert!(names_field(&p, "colour"), "{p}");
    let (operator, _) = app.user_with_role("operator").await;
    assert_problem(
        app.patch(&path, &operator, json!({"min_severity": "info"}))
            .await,
        403,
        "forbidden",
    )
    .await;
    let other = app.other_tenant().await;
    assert_problem(
        app.patch(&path, &other, json!({"min_severity": "info"}))
            .await,
        404,
        "not_found",
    )
    .await;
    assert_eq!(
        body(app.get(&path, &app.owner).await).await["url"],
        json!(first.url)
    );

    let secret = "the-second-secret-value";
    let r = app
        .patch(
            &path,
            &app.owner,
            json!({"url": second.url, "secret": secret, "min_severity": "critical", "agent_filter": null}),
        )
        .await;
    assert_eq!(r.status(), 200);
    let changed = body(r).await;
    assert_eq!(changed["url"], json!(second.url));
    assert_eq!(changed["min_severity"], "critical");
    assert_eq!(changed["agent_filter"], Value::Null);
    assert_eq!(changed["events"], w["events"], "fields not sent stay");
    assert_eq!(changed["secret_hint"], "the-second");
    assert!(
        changed.get("secret").is_none(),
        "the secret is never shown again"
    );
    // Only the events change; the rest stays.
    let r = app
        .patch(&path, &app.owner, json!({"events": ["alert.resolved"]}))
        .await;
    let again = body(r).await;
    assert_eq!(again["events"], json!(["alert.resolved"]));
    assert_eq!(again["min_severity"], "critical");
    assert_eq!(again["url"], json!(second.url));

    // The next delivery goes to the new URL, signed with the new secret.
    let r = app
        .post(&format!("{path}/test"), &app.owner, json!({}))
        .await;
    assert_eq!(r.status(), 202);
    let got = second.wait_for(1, 10).await;
    assert_eq!(
        got[0].header("x-service-signature"),
        format!("sha256={}", hex(&hmac(secret.as_bytes(), &got[0].body)))
    );
    assert!(first.received().is_empty(), "nothing went to the old URL");
    assert_eq!(
        app.count("SELECT COUNT(*) FROM audit_log WHERE event_type = 'webhook_updated'")
            .await,
        2
    );
}
