//! Alert rules over stored metrics (CONTRACT 10), the alerts they raise and resolve, the
//! SPEC 6.2 rule webhook, and alert listing filters and paging (CONTRACT 7).

use crate::agents::{Host, batch, register, send, ts};
use crate::harness::*;
use reqwest::Method;
use serde_json::{Value, json};
use time::OffsetDateTime;
use trusthub_hub::workers::evaluate_rules;

crate::dual!(
    rules_fire_per_group_and_resolve_when_the_condition_clears,
    rules_group_by_labels_and_resolve_without_data,
    rules_are_validated_and_scoped,
    alerts_filter_and_page,
    a_rule_is_changed_in_place_and_its_next_evaluation_follows,
);

async fn metrics(app: &TestApp, host: &Host, samples: Value) {
    let r = send(app, host, batch(samples).to_string().as_bytes(), None, true).await;
    assert_eq!(r.status(), 202);
}

fn sample(name: &str, secs_ago: i64, value: f64, labels: Value) -> Value {
    json!({"name": name, "ts": ts(OffsetDateTime::now_utc() - time::Duration::seconds(secs_ago)), "value": value, "labels": labels})
}

async fn rules_fire_per_group_and_resolve_when_the_condition_clears(b: Backend) {
    let app = TestApp::spawn(b).await;
    let hook = Receiver::start(&[]).await;
    let hot = register(&app).await;
    let cold = register(&app).await;
    metrics(
        &app,
        &hot,
        json!([
            sample("cpu.percent", 30, 90.0, json!({})),
            sample("cpu.percent", 20, 95.0, json!({}))
        ]),
    )
    .await;
    metrics(
        &app,
        &cold,
        json!([
            sample("cpu.percent", 30, 10.0, json!({})),
            sample("cpu.percent", 20, 20.0, json!({}))
        ]),
    )
    .await;
    let (operator, _) = app.user_with_role("operator").await;
    let r = app
        .post(
            "/alert-rules",
            &operator,
            json!({"name": "hot cpu", "metric": "cpu.percent", "operator": ">", "threshold": 80, "window": "5m",
                "severity": "critical", "group_by": ["agent_id"], "webhook_url": hook.url}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let rule = body(r).await;
    assert_eq!(rule["metric_seen"], true);
    assert_eq!(rule["window"], "5m");

    let rep = evaluate_rules(&app.state, hub_now()).await.expect("eval");
    assert_eq!((rep.firing, rep.raised), (1, 1));
    let alerts = body(app.get("/alerts", &app.owner).await).await;
    let alerts = alerts.as_array().expect("list");
    assert_eq!(alerts.len(), 1);
    let a = &alerts[0];
    assert_eq!(a["severity"], "critical");
    assert_eq!(a["category"], "cpu.percent");
    assert_eq!(a["source"], "rule");
    assert_eq!(a["rule_id"], rule["id"]);
    assert_eq!(a["agent"]["id"], json!(hot.id));
    assert!(
        a["title"]
            .as_str()
            .is_some_and(|t| t.contains("hot cpu") && t.contains("92.5"))
    );

    // SPEC 6.2: the minimal body, nothing else.
    let got = hook.wait_for(1, 10).await;
    let sent = got[0].json();
    let mut keys: Vec<&str> = sent
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(keys, ["agent", "link", "severity", "title"]);
    assert_eq!(sent["title"], a["title"]);
    assert_eq!(sent["severity"], "critical");
    assert_eq!(sent["agent"]["id"], json!(hot.id));
    assert!(sent["link"].as_str().is_some_and(|l| l.ends_with(&format!(
        "/ui/alerts/{}",
        a["id"].as_str().unwrap_or_default()
    ))));
    eventually(10, "webhook_delivery audit row", || async {
        (app.count("SELECT COUNT(*) FROM audit_log WHERE event_type = 'webhook_delivery'")
            .await
            == 1)
            .then_some(())
    })
    .await;

    // Still firing: nothing new.
    let rep = evaluate_rules(&app.state, hub_now()).await.expect("eval");
    assert_eq!((rep.firing, rep.raised, rep.resolved), (1, 0, 0));
    let listed = body(app.get("/alert-rules", &app.owner).await).await;
    assert_eq!(listed[0]["last_groups"], 2);
    assert_eq!(listed[0]["last_firing"], 1);

    // The hot host cools down: the average falls under the threshold and the alert resolves.
    let zeros: Vec<Value> = (0..10)
        .map(|i| sample("cpu.percent", 10 - i, 0.0, json!({})))
        .collect();
    metrics(&app, &hot, json!(zeros)).await;
    let rep = evaluate_rules(&app.state, hub_now()).await.expect("eval");
    assert_eq!((rep.firing, rep.resolved), (0, 1));
    let a = body(
        app.get(
            &format!("/alerts/{}", a["id"].as_str().expect("id")),
            &app.owner,
        )
        .await,
    )
    .await;
    assert_eq!(a["is_resolved"], true);
    assert_eq!(a["resolved_by"], "rule");
    assert!(
        a["resolution"]
            .as_str()
            .is_some_and(|r| r.contains("no longer"))
    );
    // Only firing sends the rule webhook.
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    assert_eq!(hook.received().len(), 1);
}

async fn rules_group_by_labels_and_resolve_without_data(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    metrics(
        &app,
        &host,
        json!([
            sample(
                "container_restart_count",
                60,
                5.0,
                json!({"container_name": "db"})
            ),
            sample(
                "container_restart_count",
                60,
                0.0,
                json!({"container_name": "web"})
            ),
        ]),
    )
    .await;
    let r = app
        .post(
            "/alert-rules",
            &app.owner,
            json!({"name": "restarts", "metric": "container_restart_count", "operator": ">=", "threshold": 3,
                "window": "1h", "group_by": ["container_name"]}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let rule = body(r).await;
    assert_eq!(rule["severity"], "warning");
    let rep = evaluate_rules(&app.state, hub_now()).await.expect("eval");
    assert_eq!((rep.firing, rep.raised), (1, 1));
    let a = body(app.get("/alerts", &app.owner).await).await[0].clone();
    assert_eq!(a["detail"], "group container_name=db");
    assert_eq!(a["agent"]["id"], json!(host.id));
    // Two hours later the window holds no data: the alert resolves itself.
    let rep = evaluate_rules(&app.state, hub_now() + time::Duration::hours(2))
        .await
        .expect("eval");
    assert_eq!((rep.firing, rep.resolved), (0, 1));
    let a = body(
        app.get(
            &format!("/alerts/{}", a["id"].as_str().expect("id")),
            &app.owner,
        )
        .await,
    )
    .await;
    assert!(
        a["resolution"]
            .as_str()
            .is_some_and(|r| r.contains("no container_restart_count data"))
    );

    // A metric nobody sends is accepted and shown as such.
    let r = app
        .post("/alert-rules", &app.owner, json!({"name": "gpu", "metric": "gpu.temp", "operator": ">", "threshold": 90, "window": "5m"}))
        .await;
    assert_eq!(r.status(), 201);
    assert_eq!(body(r).await["metric_seen"], false);
}

async fn rules_are_validated_and_scoped(b: Backend) {
    let app = TestApp::spawn(b).await;
    let good = json!({"name": "r", "metric": "cpu.percent", "operator": ">", "threshold": 1, "window": "5m"});
    let with = |k: &str, v: Value| {
        let mut r = good.clone();
        r[k] = v;
        r
    };
    for (req, field) in [
        (with("operator", json!("=>")), "operator"),
        (with("window", json!("30s")), "window"),
        (with("window", json!("1w")), "window"),
        (with("severity", json!("fatal")), "severity"),
        (with("metric", json!("cpu percent")), "metric"),
        (with("group_by", json!(["bad key!"])), "group_by[0]"),
        (
            with("webhook_url", json!("http://169.254.169.254/latest")),
            "webhook_url",
        ),
        (
            with("webhook_url", json!("file:///etc/passwd")),
            "webhook_url",
        ),
        (with("name", json!("")), "name"),
    ] {
        let p = assert_problem(
            app.post("/alert-rules", &app.owner, req.clone()).await,
            422,
            "validation_failed",
        )
        .await;
        assert!(names_field(&p, field), "{req}: {p}");
    }
    let r = app
        .post("/alert-rules", &app.owner, with("threshold", json!("high")))
        .await;
    assert_problem(r, 422, "validation_failed").await;
    assert_eq!(app.count("SELECT COUNT(*) FROM alert_rules").await, 0);

    let (viewer, _) = app.user_with_role("viewer").await;
    assert_problem(
        app.post("/alert-rules", &viewer, good.clone()).await,
        403,
        "forbidden",
    )
    .await;
    let r = app.post("/alert-rules", &app.owner, good.clone()).await;
    assert_eq!(r.status(), 201);
    let id = body(r).await["id"].as_str().expect("id").to_owned();
    assert_eq!(
        body(app.get("/alert-rules", &viewer).await)
            .await
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    let other = app.other_tenant().await;
    assert_problem(
        app.get(&format!("/alert-rules/{id}"), &other).await,
        404,
        "not_found",
    )
    .await;
    assert_problem(
        app.delete(&format!("/alert-rules/{id}"), &other).await,
        404,
        "not_found",
    )
    .await;
    assert_eq!(body(app.get("/alert-rules", &other).await).await, json!([]));
    assert_problem(
        app.delete(&format!("/alert-rules/{id}"), &viewer).await,
        403,
        "forbidden",
    )
    .await;
    assert_eq!(
        app.delete(&format!("/alert-rules/{id}"), &app.owner)
            .await
            .status(),
        204
    );
    assert_problem(
        app.get(&format!("/alert-rules/{id}"), &app.owner).await,
        404,
        "not_found",
    )
    .await;
    assert_eq!(
        app.count("SELECT COUNT(*) FROM audit_log WHERE event_type IN ('alert_rule_created', 'alert_rule_deleted')").await,
        2
    );
}

async fn alerts_filter_and_page(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    let samples: Vec<Value> = ["a", "b", "c"]
        .iter()
        .map(|c| sample("restarts", 30, 9.0, json!({"container_name": c})))
        .collect();
    metrics(&app, &host, json!(samples)).await;
    for (name, sev) in [("w", "warning"), ("c", "critical")] {
        let r = app
            .post(
                "/alert-rules",
                &app.owner,
                json!({"name": name, "metric": "restarts", "operator": ">", "threshold": 1,
                "window": "5m", "severity": sev, "group_by": ["container_name"]}),
            )
            .await;
        assert_eq!(r.status(), 201);
    }
    let rep = evaluate_rules(&app.state, hub_now()).await.expect("eval");
    assert_eq!(rep.raised, 6);
    let count = |v: Value| v.as_array().map_or(0, Vec::len);
    assert_eq!(count(body(app.get("/alerts", &app.owner).await).await), 6);
    assert_eq!(
        count(body(app.get("/alerts?severity=critical", &app.owner).await).await),
        3
    );
    assert_eq!(
        count(body(app.get("/alerts?tag=role:web", &app.owner).await).await),
        6
    );
    assert_eq!(
        count(body(app.get("/alerts?tag=role:db", &app.owner).await).await),
        0
    );
    assert_problem(
        app.get("/alerts?severity=fatal", &app.owner).await,
        422,
        "validation_failed",
    )
    .await;
    assert_problem(
        app.get("/alerts?limit=0", &app.owner).await,
        422,
        "validation_failed",
    )
    .await;
    assert_problem(
        app.get("/alerts?is_resolved=maybe", &app.owner).await,
        400,
        "bad_request",
    )
    .await;
    // Pages of 4 then 2, newest first, no overlap.
    let first = body(app.get("/alerts?limit=4", &app.owner).await).await;
    assert_eq!(count(first.clone()), 4);
    let last = first[3]["id"].as_str().expect("id");
    let second = body(
        app.get(&format!("/alerts?limit=4&before={last}"), &app.owner)
            .await,
    )
    .await;
    assert_eq!(count(second.clone()), 2);
    let mut ids: Vec<Value> = first
        .as_array()
        .expect("a")
        .iter()
        .chain(second.as_array().expect("b"))
        .map(|a| a["id"].clone())
        .collect();
    ids.dedup();
    assert_eq!(ids.len(), 6);
    // Resolve one by hand; the filters see it.
    let id = first[0]["id"].as_str().expect("id");
    let r = app
        .send_json(
            Method::PATCH,
            &format!("/alerts/{id}/resolve"),
            &app.owner,
            json!({}),
        )
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        count(body(app.get("/alerts?is_resolved=true", &app.owner).await).await),
        1
    );
    assert_eq!(first[0]["severity"], "critical");
    assert_eq!(
        count(
            body(
                app.get("/alerts?is_resolved=false&severity=critical", &app.owner)
                    .await
            )
            .await
        ),
        2
    );
}

/// PATCH /alert-rules/:id: only the fields sent change (checked like at creation), and the
/// next evaluation uses them: raising the threshold above the average resolves the alert.
async fn a_rule_is_changed_in_place_and_its_next_evaluation_follows(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    metrics(
        &app,
        &host,
        json!([
            sample("cpu.percent", 30, 90.0, json!({})),
            sample("cpu.percent", 20, 95.0, json!({}))
        ]),
    )
    .await;
    let (operator, _) = app.user_with_role("operator").await;
    let rule = body(
        app.post(
            "/alert-rules",
            &operator,
            json!({"name": "hot cpu", "metric": "cpu.percent", "operator": ">", "threshold": 80,
                "window": "5m", "webhook_url": "http://127.0.0.1:9/x"}),
        )
        .await,
    )
    .await;
    let path = format!("/alert-rules/{}", rule["id"].as_str().expect("id"));
    let rep = evaluate_rules(&app.state, hub_now()).await.expect("eval");
    assert_eq!(rep.raised, 1);

    let p = assert_problem(
        app.patch(&path, &operator, json!({"window": "1w", "operator": "=>"}))
            .await,
        422,
        "validation_failed",
    )
    .await;
    for f in ["window", "operator"] {
        assert!(names_field(&p, f), "{f}: {p}");
    }
    let p = assert_problem(
        app.patch(&path, &operator, json!({"severty": "critical"}))
            .await,
        422,
        "validation_failed",
    )
    .await;
    assert!(names_field(&p, "severty"), "{p}");
    let (viewer, _) = app.user_with_role("viewer").await;
    assert_problem(
        app.patch(&path, &viewer, json!({"threshold": 99})).await,
        403,
        "forbidden",
    )
    .await;
    let other = app.other_tenant().await;
    assert_problem(
        app.patch(&path, &other, json!({"threshold": 99})).await,
        404,
        "not_found",
    )
    .await;
    assert_eq!(
        body(app.get(&path, &operator).await).await["threshold"],
        80.0
    );

    let r = app
        .patch(
            &path,
            &operator,
            json!({"threshold": 99, "severity": "critical", "webhook_url": null}),
        )
        .await;
    assert_eq!(r.status(), 200);
    let changed = body(r).await;
    assert_eq!(changed["threshold"], 99.0);
    assert_eq!(changed["severity"], "critical");
    assert_eq!(changed["webhook_url"], Value::Null);
    assert_eq!(changed["name"], "hot cpu", "fields not sent stay");
    assert_eq!(changed["window"], "5m");
    let rep = evaluate_rules(&app.state, hub_now()).await.expect("eval");
    assert_eq!(
        (rep.firing, rep.resolved),
        (0, 1),
        "the new threshold resolves the alert"
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM audit_log WHERE event_type = 'alert_rule_updated'")
            .await,
        1
    );
}
