//! Integrity anomalies (CONTRACT 14): a pinned agent's badly signed batch and a refused client
//! certificate each become one anomaly with a warning alert that reaches webhooks; operators
//! resolve them (the alert with them); viewers only read; other tenants see nothing.

use crate::agents::{batch, register, send};
use crate::harness::*;
use serde_json::json;

crate::dual!(
    bad_signatures_become_one_anomaly_with_an_alert_that_operators_resolve,
    a_new_agent_version_is_a_checkpoint_and_a_change_an_anomaly,
);

async fn bad_signatures_become_one_anomaly_with_an_alert_that_operators_resolve(b: Backend) {
    let app = TestApp::spawn(b).await;
    let receiver = Receiver::start(&[]).await;
    let r = app
        .post("/webhooks", &app.owner, json!({"url": receiver.url}))
        .await;
    assert_eq!(r.status(), 201);
    let host = register(&app).await;
    // Three batches signed by another key: refused, one anomaly, one alert.
    let stranger = crate::agents::key();
    let body_ = batch(json!([])).to_string();
    for _ in 0..3 {
        let r = app
            .req(
                reqwest::Method::POST,
                "/ingest",
                &Auth::Bearer(host.token.clone()),
            )
            .header("content-type", "application/json")
            .header(
                "x-service-signature",
                trusthub_core::agent::sign_header(&stranger, body_.as_bytes()),
            )
            .body(body_.clone())
            .send()
            .await
            .expect("ingest");
        assert_eq!(r.status(), 401);
    }
    let list = body(app.get("/integrity-anomalies", &app.owner).await).await;
    assert_eq!(list.as_array().map(Vec::len), Some(1), "{list}");
    assert_eq!(list[0]["kind"], "bad_ingest_signature");
    assert_eq!(list[0]["agent_id"], json!(host.id));
    assert!(list[0]["evidence"].is_object());
    let alerts = body(app.get("/alerts?is_resolved=false", &app.owner).await).await;
    assert_eq!(alerts.as_array().map(Vec::len), Some(1), "{alerts}");
    assert_eq!(alerts[0]["source"], "agent");
    assert_eq!(alerts[0]["severity"], "warning");
    let got = receiver.wait_for(1, 20).await;
    assert_eq!(got[0].json()["event"], "alert.created", "{}", got[0].json());
    // A good batch still goes through.
    let ok = send(
        &app,
        &host,
        batch(json!([])).to_string().as_bytes(),
        None,
        true,
    )
    .await;
    assert_eq!(ok.status(), 202);

    // Viewers read, operators resolve; the alert goes with it.
    let id = list[0]["id"].as_str().expect("id").to_owned();
    let (viewer, _) = app.user_with_role("viewer").await;
    assert_eq!(
        body(app.get("/integrity-anomalies", &viewer).await)
            .await
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    let at = format!("/integrity-anomalies/{id}/resolve");
    assert_problem(app.patch(&at, &viewer, json!({})).await, 403, "forbidden").await;
    let other = app.other_tenant().await;
    assert_eq!(
        body(app.get("/integrity-anomalies", &other).await).await,
        json!([])
    );
    assert_problem(app.patch(&at, &other, json!({})).await, 404, "not_found").await;
    let (operator, _) = app.user_with_role("operator").await;
    let r = app.patch(&at, &operator, json!({})).await;
    assert_eq!(r.status(), 200);
    let resolved = body(r).await;
    assert!(resolved["resolved_at"].is_string(), "{resolved}");
    assert!(
        resolved["resolved_by"]
            .as_str()
            .is_some_and(|b| b.starts_with("user:"))
    );
    assert_eq!(
        body(app.get("/integrity-anomalies", &app.owner).await).await,
        json!([])
    );
    let all = body(
        app.get("/integrity-anomalies?include_resolved=1", &app.owner)
            .await,
    )
    .await;
    assert_eq!(all.as_array().map(Vec::len), Some(1));
    assert_eq!(
        body(app.get("/alerts?is_resolved=false", &app.owner).await).await,
        json!([])
    );
    assert_problem(
        app.get("/integrity-anomalies?include_resolved=yes", &app.owner)
            .await,
        422,
        "validation_failed",
    )
    .await;
    // After resolution a new bad signature is a new anomaly.
    let r = app
        .req(
            reqwest::Method::POST,
            "/ingest",
            &Auth::Bearer(host.token.clone()),
        )
        .header("content-type", "application/json")
        .header(
            "x-service-signature",
            trusthub_core::agent::sign_header(&stranger, body_.as_bytes()),
        )
        .body(body_)
        .send()
        .await
        .expect("ingest");
    assert_eq!(r.status(), 401);
    assert_eq!(
        body(app.get("/integrity-anomalies", &app.owner).await)
            .await
            .as_array()
            .map(Vec::len),
        Some(1)
    );
}

async fn a_new_agent_version_is_a_checkpoint_and_a_change_an_anomaly(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    let seen = || async {
        body(
            app.get("/audit-log?event_type=agent_version_seen", &app.owner)
                .await,
        )
        .await
    };
    assert_eq!(seen().await.as_array().map(Vec::len), Some(1));
    let again = |version: &'static str| {
        let enroll_app = &app;
        let key = &host.key;
        let machine = host.machine_id.clone();
        async move {
            let enroll = crate::agents::enrollment_token(enroll_app, &enroll_app.owner).await;
            let body_ = json!({"machine_id": machine, "hostname": "web-1", "os": "Debian 12",
                "arch": "x86_64", "agent_version": version,
                "signing_pubkey": crate::agents::hexkey(key)})
            .to_string();
            enroll_app
                .req(
                    reqwest::Method::POST,
                    "/agents/register",
                    &Auth::Bearer(enroll),
                )
                .header("content-type", "application/json")
                .header(
                    "x-service-signature",
                    trusthub_core::agent::sign_header(key, body_.as_bytes()),
                )
                .body(body_)
                .send()
                .await
                .expect("register")
                .status()
        }
    };
    // The same version again: nothing new.
    assert_eq!(again("0.1.0").await, 200);
    assert_eq!(seen().await.as_array().map(Vec::len), Some(1));
    assert_eq!(
        body(app.get("/integrity-anomalies", &app.owner).await).await,
        json!([])
    );
    // Another version: a checkpoint and an anomaly with both versions.
    assert_eq!(again("0.2.0").await, 200);
    let entries = seen().await;
    assert_eq!(entries.as_array().map(Vec::len), Some(2), "{entries}");
    assert_eq!(entries[0]["details"]["agent_version"], "0.2.0", "{entries}");
    assert_eq!(entries[0]["details"]["previous"], "0.1.0");
    let list = body(app.get("/integrity-anomalies", &app.owner).await).await;
    assert_eq!(list.as_array().map(Vec::len), Some(1), "{list}");
    assert_eq!(list[0]["kind"], "agent_version_changed");
    assert_eq!(list[0]["evidence"]["previous"], "0.1.0");
    assert_eq!(list[0]["evidence"]["current"], "0.2.0");
    let agent = body(app.get(&format!("/agents/{}", host.id), &app.owner).await).await;
    assert_eq!(agent["agent_version"], "0.2.0");
}
