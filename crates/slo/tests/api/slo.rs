//! SLOs (CONTRACT 16): liveness writes each app's verdict timeline; an SLO's status, the tenant
//! list, the CSV history and maintenance windows are computed from it; burn alerts fire and
//! clear with the multi-window conditions. Timelines of days are written through the store
//! (as liveness would over days) and the workers run with chosen instants.

use crate::apps::{create_app, nginx, report};
use crate::harness::*;
use serde_json::{Value, json};
use time::{Duration, OffsetDateTime};
use trusthub_hub::workers::liveness_tick;
use uuid::Uuid;

crate::dual!(
    liveness_writes_the_timeline_and_an_slo_reports_budget_history_and_maintenance,
    burn_alerts_fire_per_condition_and_clear,
    the_apps_page_shows_the_20_slos_nearest_their_limit_and_counts_the_rest,
);

/// Writes spans (start, end, down) of an app's timeline.
pub(crate) async fn spans(
    app: &TestApp,
    id: &str,
    spans: &[(OffsetDateTime, OffsetDateTime, bool)],
) {
    let id = Uuid::parse_str(id).expect("uuid");
    let mut tx = app.state.db.begin().await.expect("tx");
    for (a, b, down) in spans {
        trusthub_monitors::timeline::append(&mut tx, id, *a, *b, *down)
            .await
            .expect("span");
    }
    tx.commit().await.expect("commit");
}

fn close(v: &Value, want: f64) -> bool {
    v.as_f64().is_some_and(|x| (x - want).abs() < 1e-6)
}

pub(crate) async fn nginx_app(app: &TestApp, name: &str) -> (crate::agents::Host, String) {
    let host = crate::agents::register(app).await;
    let created = create_app(
        app,
        &app.owner,
        json!({"agent_id": host.id, "name": name, "app_type": "systemd", "identifier": "nginx.service"}),
    )
    .await;
    (host, created["id"].as_str().expect("id").to_owned())
}

async fn liveness_writes_the_timeline_and_an_slo_reports_budget_history_and_maintenance(
    b: Backend,
) {
    let app = TestApp::spawn(b).await;
    let (host, id) = nginx_app(&app, "web").await;

    // Liveness: up, up, then down — one span while the verdict holds, a new one when it changes.
    let t0 = hub_now();
    nginx(&app, &host, "active").await;
    liveness_tick(&app.state, t0).await.expect("tick");
    nginx(&app, &host, "active").await;
    liveness_tick(&app.state, t0 + Duration::seconds(60))
        .await
        .expect("tick");
    nginx(&app, &host, "inactive").await;
    liveness_tick(&app.state, t0 + Duration::seconds(120))
        .await
        .expect("tick");
    let rows = app
        .count(&format!(
            "SELECT COUNT(*) FROM app_timeline WHERE down = {} ",
            if b == Backend::Postgres { "false" } else { "0" }
        ))
        .await;
    assert_eq!(rows, 1, "one up span, extended");
    let down = app
        .count(&format!(
            "SELECT COUNT(*) FROM app_timeline WHERE down = {}",
            if b == Backend::Postgres { "true" } else { "1" }
        ))
        .await;
    assert_eq!(down, 1, "one down span");

    // The SLO: defaults, then replaced.
    let path = format!("/apps/{id}/slo");
    let r = app.post(&path, &app.owner, json!({})).await;
    assert_eq!(r.status(), 201);
    let s = body(r).await;
    assert_eq!(s["target"], 0.999);
    assert_eq!(s["window_days"], 30);
    assert_eq!(s["minimum_data"], 0.95);
    assert_eq!(s["state"], "insufficient_data", "{s}");
    let r = app
        .post(
            &path,
            &app.owner,
            json!({"target": 0.999, "window_days": 30, "minimum_data": 0.5}),
        )
        .await;
    assert_eq!(r.status(), 200, "replaced");

    // Refusals, each named; nothing changes.
    for (req, field) in [
        (json!({"target": 1.0}), "target"),
        (json!({"target": 0}), "target"),
        (json!({"window_days": 91}), "window_days"),
        (json!({"minimum_data": 1.5}), "minimum_data"),
    ] {
        let p = assert_problem(
            app.post(&path, &app.owner, req.clone()).await,
            422,
            "validation_failed",
        )
        .await;
        assert!(names_field(&p, field), "{req} -> {p}");
    }
    assert_eq!(
        app.post(&path, &app.owner, json!({"targett": 0.99}))
            .await
            .status(),
        422
    );
    let (viewer, _) = app.user_with_role("viewer").await;
    assert_eq!(app.post(&path, &viewer, json!({})).await.status(), 403);
    assert_eq!(app.get(&path, &viewer).await.status(), 200);
    let stranger = app.other_tenant().await;
    assert_eq!(app.get(&path, &stranger).await.status(), 404);
    assert_eq!(app.post(&path, &stranger, json!({})).await.status(), 404);
    assert_eq!(
        body(app.get(&path, &app.owner).await).await["minimum_data"],
        0.5
    );

    // Thirty days of verdicts with ten minutes down two days ago: 43.2 budget minutes, 33.2 left.
    let now = hub_now();
    let start = now - Duration::days(30);
    // At noon two days ago: the ten minutes fall within one UTC day whenever the test runs.
    let outage =
        (now - Duration::days(2)).replace_time(time::Time::from_hms(12, 0, 0).expect("noon"));
    let (_, other) = nginx_app(&app, "api").await;
    spans(
        &app,
        &other,
        &[
            (start, outage, false),
            (outage, outage + Duration::minutes(10), true),
            (outage + Duration::minutes(10), now, false),
        ],
    )
    .await;
    // The app was tracked before its history (its days count from then on).
    app.execute(&format!(
        "UPDATE apps SET created_at = '{}' WHERE name = 'api'",
        start
            .format(&time::format_description::well_known::Rfc3339)
            .expect("rfc3339")
    ))
    .await;
    let opath = format!("/apps/{other}/slo");
    assert_eq!(app.post(&opath, &app.owner, json!({})).await.status(), 201);
    let s = body(app.get(&opath, &app.owner).await).await;
    assert!(close(&s["budget_total_minutes"], 43.2), "{s}");
    assert!(close(&s["budget_remaining_minutes"], 33.2), "{s}");
    assert!(close(&s["minutes_down"], 10.0), "{s}");
    assert!(
        s["minutes_observed"].as_f64().is_some_and(|m| m > 43_100.0),
        "{s}"
    );
    assert_eq!(s["state"], "burning");
    assert!(
        s["days_to_exhaustion"].as_f64().is_some_and(|d| d > 20.0),
        "{s}"
    );
    assert_eq!(s["burn_series"].as_array().map(Vec::len), Some(168));
    assert!(close(&s["burn_rate_1h"], 0.0));
    assert_eq!(s["app_name"], "api");

    // The tenant's list: least budget left first (api has spent 10 minutes, web 1).
    let list = body(app.get("/slos", &app.owner).await).await;
    let names: Vec<&str> = list
        .as_array()
        .expect("list")
        .iter()
        .map(|s| s["app_name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(names, ["api", "web"], "{list}");
    assert_eq!(body(app.get("/slos", &stranger).await).await, json!([]));

    // The CSV: one row per UTC day, oldest first.
    let r = app
        .get(&format!("{opath}/history?days=3"), &app.owner)
        .await;
    assert_eq!(r.status(), 200);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap_or_default()
            .starts_with("text/csv")
    );
    let csv = r.text().await.expect("csv");
    let lines: Vec<&str> = csv.split("\r\n").filter(|l| !l.is_empty()).collect();
    assert_eq!(
        lines[0],
        "date,minutes_observed,minutes_down,uptime_percent,budget_remaining_minutes,burn_rate"
    );
    assert_eq!(lines.len(), 4, "{csv}");
    let outage_day = outage.date().to_string();
    let row = lines
        .iter()
        .find(|l| l.starts_with(&outage_day))
        .unwrap_or_else(|| panic!("{outage_day} in {csv}"));
    let cols: Vec<&str> = row.split(',').collect();
    assert_eq!(cols[2], "10", "{row}");
    assert_eq!(cols[4], "33.2", "{row}");
    // An app tracked just now: no uptime is invented, no day before it is shown.
    let (_, fresh) = nginx_app(&app, "fresh").await;
    let fpath = format!("/apps/{fresh}/slo");
    assert_eq!(app.post(&fpath, &app.owner, json!({})).await.status(), 201);
    let s = body(app.get(&fpath, &app.owner).await).await;
    assert_eq!(s["uptime_percent"], Value::Null, "{s}");
    assert_eq!(s["minutes_observed"], 0.0, "{s}");
    let csv = app
        .get(&format!("{fpath}/history?days=30"), &app.owner)
        .await
        .text()
        .await
        .expect("csv");
    let rows: Vec<&str> = csv.split("\r\n").filter(|l| !l.is_empty()).collect();
    assert_eq!(rows.len(), 2, "only today: {csv}");
    assert_eq!(rows[1].split(',').nth(3), Some(""), "{csv}");
    for bad in ["days=0", "days=366", "days=x", "dayz=3"] {
        assert_eq!(
            app.get(&format!("{opath}/history?{bad}"), &app.owner)
                .await
                .status(),
            400,
            "{bad}"
        );
    }

    // A maintenance window over the outage: those minutes count for nothing.
    let mpath = format!("/apps/{other}/maintenance-windows");
    let fmt = |t: OffsetDateTime| {
        t.format(&time::format_description::well_known::Rfc3339)
            .expect("fmt")
    };
    let w = app
        .post(
            &mpath,
            &app.owner,
            json!({"starts_at": fmt(outage - Duration::minutes(5)), "ends_at": fmt(outage + Duration::minutes(15)), "reason": "kernel upgrade"}),
        )
        .await;
    assert_eq!(w.status(), 201);
    let w = body(w).await;
    let s = body(app.get(&opath, &app.owner).await).await;
    assert!(close(&s["minutes_down"], 0.0), "{s}");
    assert!(close(&s["budget_remaining_minutes"], 43.2), "{s}");
    assert!(close(&s["minutes_in_window"], 43_180.0), "{s}");
    let listed = body(app.get(&mpath, &app.owner).await).await;
    assert_eq!(listed[0]["reason"], "kernel upgrade");
    let p = assert_problem(
        app.post(
            &mpath,
            &app.owner,
            json!({"starts_at": fmt(now), "ends_at": fmt(now - Duration::hours(1)), "reason": "x"}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert!(names_field(&p, "ends_at"), "{p}");
    let wid = w["id"].as_str().expect("id");
    assert_eq!(
        app.delete(&format!("/maintenance-windows/{wid}"), &stranger)
            .await
            .status(),
        404
    );
    assert_eq!(
        app.delete(&format!("/maintenance-windows/{wid}"), &app.owner)
            .await
            .status(),
        204
    );
    assert!(close(
        &body(app.get(&opath, &app.owner).await).await["minutes_down"],
        10.0
    ));

    // During a window the app raises no liveness alert.
    let live = hub_now();
    app.post(
        &format!("/apps/{id}/maintenance-windows"),
        &app.owner,
        json!({"starts_at": fmt(live - Duration::minutes(1)), "ends_at": fmt(live + Duration::hours(1)), "reason": "migration"}),
    )
    .await;
    for i in 0..4 {
        report(
            &app,
            &host,
            json!([{"unit": "nginx.service", "active_state": "inactive", "sub_state": "dead"}]),
            json!([]),
            json!([]),
        )
        .await;
        liveness_tick(&app.state, live + Duration::seconds(i))
            .await
            .expect("tick");
    }
    let alerts = body(app.get("/alerts", &app.owner).await).await;
    assert!(
        !alerts
            .as_array()
            .expect("alerts")
            .iter()
            .any(|a| a["source"] == "liveness"),
        "{alerts}"
    );

    // Removing the SLO.
    assert_eq!(app.delete(&opath, &app.owner).await.status(), 204);
    assert_eq!(app.get(&opath, &app.owner).await.status(), 404);
    assert_eq!(app.delete(&opath, &app.owner).await.status(), 404);
}

async fn burn_alerts_fire_per_condition_and_clear(b: Backend) {
    let app = TestApp::spawn(b).await;
    let (_, id) = nginx_app(&app, "checkout").await;
    let (_, thin) = nginx_app(&app, "thin").await;
    let now = hub_now();
    // Four good days, then the last ten minutes down.
    spans(
        &app,
        &id,
        &[
            (now - Duration::days(4), now - Duration::minutes(10), false),
            (now - Duration::minutes(10), now, true),
        ],
    )
    .await;
    // Only an hour of data, all down: too little data to alert on.
    spans(&app, &thin, &[(now - Duration::hours(1), now, true)]).await;
    for a in [&id, &thin] {
        let r = app
            .post(
                &format!("/apps/{a}/slo"),
                &app.owner,
                json!({"window_days": 4, "minimum_data": 0.9}),
            )
            .await;
        assert_eq!(r.status(), 201);
    }
    let eval = |at| trusthub_hub::workers::slo::evaluate(&app.state, at);
    let first = eval(now).await.expect("eval");
    assert_eq!((first.slos, first.raised), (2, 3), "{first:?}");
    let open = |alerts: &Value| -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = alerts
            .as_array()
            .expect("alerts")
            .iter()
            .filter(|a| a["source"] == "slo" && a["is_resolved"] == false)
            .map(|a| {
                (
                    a["severity"].as_str().unwrap_or_default().to_owned(),
                    a["title"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let alerts = body(app.get("/alerts", &app.owner).await).await;
    let o = open(&alerts);
    assert_eq!(o.len(), 3, "{alerts}");
    assert_eq!(o.iter().filter(|(s, _)| s == "critical").count(), 2);
    assert!(o.iter().all(|(_, t)| t.starts_with("checkout")), "{o:?}");
    // Evaluated again: nothing new (one open alert per condition).
    assert_eq!(eval(now).await.expect("eval").raised, 0);

    // An hour of recovery: the short windows clear both criticals; the 3-day one holds.
    spans(&app, &id, &[(now, now + Duration::hours(1), false)]).await;
    let later = eval(now + Duration::hours(1)).await.expect("eval");
    assert_eq!((later.raised, later.resolved), (0, 2), "{later:?}");
    let o = open(&body(app.get("/alerts", &app.owner).await).await);
    assert_eq!(o.len(), 1);
    assert_eq!(o[0].0, "warning");

    // Down for half an hour until six minutes ago: the 5-minute window is clean, so only the
    // 6 h / 30 min critical (and the 3-day warning) hold, not the 1 h / 5 min one.
    let (_, half) = nginx_app(&app, "half-hour").await;
    spans(
        &app,
        &half,
        &[
            (now - Duration::days(4), now - Duration::minutes(36), false),
            (
                now - Duration::minutes(36),
                now - Duration::minutes(6),
                true,
            ),
            (now - Duration::minutes(6), now, false),
        ],
    )
    .await;
    let r = app
        .post(
            &format!("/apps/{half}/slo"),
            &app.owner,
            json!({"window_days": 4, "minimum_data": 0.9}),
        )
        .await;
    assert_eq!(r.status(), 201);
    eval(now).await.expect("eval");
    let held: Vec<String> = open(&body(app.get("/alerts", &app.owner).await).await)
        .into_iter()
        .filter(|(_, t)| t.starts_with("half-hour"))
        .map(|(_, t)| t)
        .collect();
    assert_eq!(held.len(), 2, "{held:?}");
    assert!(
        held.iter().any(|t| t.contains("6 h and 30 min")),
        "{held:?}"
    );
    assert!(
        !held.iter().any(|t| t.contains("1 h and 5 min")),
        "{held:?}"
    );

    // A slow, steady burn — two minutes down every six hours for three days — raises the
    // warning alone: 5.6 over 3 days and over 6 h, under 6 over 6 h, nothing in 1 h or 5 min.
    let (_, slow) = nginx_app(&app, "steady").await;
    let mut timeline = Vec::new();
    let mut t = now - Duration::days(3) - Duration::hours(3);
    while t + Duration::hours(6) <= now - Duration::hours(3) {
        timeline.push((t, t + Duration::hours(6) - Duration::minutes(2), false));
        timeline.push((
            t + Duration::hours(6) - Duration::minutes(2),
            t + Duration::hours(6),
            true,
        ));
        t += Duration::hours(6);
    }
    timeline.push((t, now, false));
    spans(&app, &slow, &timeline).await;
    let r = app
        .post(
            &format!("/apps/{slow}/slo"),
            &app.owner,
            json!({"window_days": 3, "minimum_data": 0.9}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let status = body(r).await;
    let b3 = status["burn_rate_7d"].as_f64().expect("rate");
    assert!(b3 > 1.0, "{status}");
    eval(now).await.expect("eval");
    let steady: Vec<(String, String)> = open(&body(app.get("/alerts", &app.owner).await).await)
        .into_iter()
        .filter(|(_, t)| t.starts_with("steady"))
        .collect();
    assert_eq!(steady.len(), 1, "{steady:?}");
    assert_eq!(steady[0].0, "warning");
}

/// The apps page lists the SLOs nearest their limit, not every one (10,000 lines were 2.5 MB
/// of the page): 20 of them, least budget left first, and how many there are.
async fn the_apps_page_shows_the_20_slos_nearest_their_limit_and_counts_the_rest(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = crate::agents::register(&app).await;
    let mut ids = Vec::new();
    for i in 0..22 {
        let created = create_app(
            &app,
            &app.owner,
            json!({"agent_id": host.id, "name": format!("svc-{i:02}"), "app_type": "systemd",
                   "identifier": format!("svc{i}.service")}),
        )
        .await;
        let id = created["id"].as_str().expect("id").to_owned();
        let r = app
            .post(&format!("/apps/{id}/slo"), &app.owner, json!({}))
            .await;
        assert_eq!(r.status(), 201);
        ids.push(id);
    }
    // svc-21 has spent budget: down for an hour of its one-day window, so it comes first.
    let r = app
        .post(
            &format!("/apps/{}/slo", ids[21]),
            &app.owner,
            json!({"window_days": 1, "minimum_data": 0.5}),
        )
        .await;
    assert_eq!(r.status(), 200);
    let now = hub_now();
    spans(
        &app,
        &ids[21],
        &[
            (now - Duration::days(2), now - Duration::hours(3), false),
            (now - Duration::hours(3), now - Duration::hours(2), true),
            (now - Duration::hours(2), now, false),
        ],
    )
    .await;
    trusthub_slo::jobs::slo::tick(&app.state, now)
        .await
        .expect("slo tick");
    let r = app.get("//ui/apps", &app.owner).await;
    assert_eq!(r.status(), 200);
    let page = r.text().await.expect("html");
    // The SLO table's rows link the app's name; the apps table's say "SLO".
    let shown: Vec<&str> = page
        .match_indices("/slo\">svc-")
        .map(|(at, _)| &page[at + 6..at + 12])
        .collect();
    assert_eq!(shown.len(), 20, "{shown:?}");
    assert_eq!(shown[0], "svc-21", "least budget left first: {shown:?}");
    assert_eq!(shown[1], "svc-00", "then by name: {shown:?}");
    assert!(
        page.contains("The 20 nearest their limit of 22 SLOs"),
        "the rest counted"
    );
}
