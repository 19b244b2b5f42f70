//! Status pages and incidents (CONTRACT 32): made by admins, public as HTML without
//! scripts, JSON and an Atom feed that a real feed reader (Python's feedparser) reads
//! without complaint; they show names, states, uptime and incidents and nothing internal;
//! incidents notify the webhooks and channels subscribed to them.

use crate::harness::*;
use serde_json::{Value, json};
use time::Duration;

crate::dual!(
    a_status_page_tells_the_public_states_uptime_incidents_and_maintenance_and_nothing_internal,
    status_pages_and_incidents_are_checked_scoped_and_notify_subscribers,
    an_app_badge_is_public_by_its_token_until_revoked,
    packed_spans_are_the_typed_spans,
);

async fn made(app: &TestApp, path: &str, auth: &Auth, b: Value) -> Value {
    let r = app.post(path, auth, b.clone()).await;
    let status = r.status();
    let v = body(r).await;
    assert_eq!(status, 201, "{b}: {v}");
    v
}

/// A port nothing listens on.
fn dead_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

async fn a_status_page_tells_the_public_states_uptime_incidents_and_maintenance_and_nothing_internal(
    b: Backend,
) {
    let app = TestApp::spawn(b).await;
    let live = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let live_port = live.local_addr().expect("addr").port();
    let dead = dead_port();
    let api = made(
        &app,
        "/apps",
        &app.owner,
        json!({"name": "API", "type": "tcp",
        "endpoint": format!("tcp://127.0.0.1:{live_port}"), "retries": 0}),
    )
    .await;
    let db = made(
        &app,
        "/apps",
        &app.owner,
        json!({"name": "Database", "type": "tcp",
        "endpoint": format!("tcp://127.0.0.1:{dead}"), "retries": 0}),
    )
    .await;
    let cron = made(
        &app,
        "/apps",
        &app.owner,
        json!({"name": "Nightly export", "type": "push"}),
    )
    .await;
    let id = |v: &Value| v["id"].as_str().expect("id").to_owned();
    // The hub probes: API up, Database down (with a probe error the public never sees).
    trusthub_monitors::jobs::probes::probe_tick(&app.state, hub_now() + Duration::seconds(1))
        .await
        .expect("tick");
    let page = made(
        &app,
        "/status-pages",
        &app.owner,
        json!({
            "slug": "acme", "title": "Acme", "description": "Our services",
            "groups": [{"name": "Core", "app_ids": [id(&api), id(&db)]},
                       {"name": "Jobs", "app_ids": [id(&cron)]}],
        }),
    )
    .await;
    assert_eq!(page["show_uptime_days"], 90);
    assert_eq!(page["url"], format!("{}/status/acme", app.base));
    // Maintenance ahead for the API.
    let starts = hub_now() + Duration::hours(2);
    let window = json!({"starts_at": rfc(starts), "ends_at": rfc(starts + Duration::hours(1)),
        "reason": "kernel upgrade on 10.0.0.7"});
    made(
        &app,
        &format!("/apps/{}/maintenance-windows", id(&api)),
        &app.owner,
        window,
    )
    .await;
    let inc = made(
        &app,
        &format!("/status-pages/{}/incidents", id(&page)),
        &app.owner,
        json!({
        "title": "Database unreachable", "status": "investigating", "impact": "major",
        "message": "We are looking into it."}),
    )
    .await;
    assert_eq!(inc["updates"].as_array().map(Vec::len), Some(1));
    let upd = made(
        &app,
        &format!("/incidents/{}/updates", id(&inc)),
        &app.owner,
        json!({"status": "identified", "message": "A failed disk; replacing it."}),
    )
    .await;
    assert_eq!(upd["status"], "identified");
    assert_eq!(upd["updates"][0]["message"], "A failed disk; replacing it.");

    // The public JSON, without signing in.
    let r = app
        .client
        .get(format!("{}/status/acme.json", app.base))
        .send()
        .await
        .expect("json");
    assert_eq!(r.status(), 200);
    assert!(
        r.headers()
            .get("cache-control")
            .is_some_and(|v| v.to_str().unwrap_or("").contains("max-age"))
    );
    let text = r.text().await.expect("text");
    let v: Value = serde_json::from_str(&text).expect("json");
    let keys = |o: &Value| {
        let mut k: Vec<String> = o.as_object().expect("object").keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(
        keys(&v),
        [
            "description",
            "groups",
            "incidents",
            "maintenance",
            "status",
            "title"
        ]
    );
    assert_eq!(
        v["status"], "partial_outage",
        "one app down of three, a major incident: {v}"
    );
    assert_eq!(v["groups"][0]["name"], "Core");
    let core = &v["groups"][0]["apps"];
    assert_eq!(
        keys(&core[0]),
        ["daily", "name", "status", "uptime_percent"]
    );
    assert_eq!(
        (core[0]["name"].as_str(), core[0]["status"].as_str()),
        (Some("API"), Some("up"))
    );
    assert_eq!(core[1]["status"], "down");
    assert_eq!(
        v["groups"][1]["apps"][0]["status"], "unknown",
        "no ping yet"
    );
    assert_eq!(core[0]["daily"].as_array().map(Vec::len), Some(90));
    let today = &core[0]["daily"][89];
    assert_eq!(today["date"], hub_now().date().to_string());
    assert_eq!(
        keys(&v["incidents"][0]),
        ["id", "impact", "status", "title", "updates"]
    );
    assert_eq!(
        v["incidents"][0]["updates"][0]["status"], "identified",
        "newest first"
    );
    assert_eq!(
        keys(&v["incidents"][0]["updates"][0]),
        ["at", "message", "status"]
    );
    assert_eq!(v["maintenance"][0]["title"], "Maintenance: API");
    assert_eq!(
        keys(&v["maintenance"][0]),
        ["ends_at", "starts_at", "title"]
    );

    // The HTML: no script, readable on a phone, the same facts.
    let r = app
        .client
        .get(format!("{}/status/acme", app.base))
        .send()
        .await
        .expect("html");
    assert_eq!(r.status(), 200);
    let html = r.text().await.expect("html");
    assert!(
        !html.to_ascii_lowercase().contains("<script"),
        "no script at all"
    );
    assert!(html.contains("name=\"viewport\""));
    assert!(html.contains("Partial outage") && html.contains("Database unreachable"));
    assert_eq!(html.matches("<i class=").count(), 3 * 90);

    // Atom, read by a real feed reader.
    let r = app
        .client
        .get(format!("{}/status/acme/feed.atom", app.base))
        .send()
        .await
        .expect("atom");
    assert_eq!(r.status(), 200);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap_or("")
            .starts_with("application/atom+xml")
    );
    let atom = r.text().await.expect("atom");
    let parsed = feedparser(&atom);
    assert_eq!(parsed["bozo"], 0, "{parsed}");
    assert_eq!(parsed["version"], "atom10");
    assert_eq!(parsed["entries"][0]["title"], "Database unreachable");
    assert!(
        parsed["entries"][0]["content"]
            .as_str()
            .is_some_and(|c| c.contains("A failed disk")),
        "{parsed}"
    );

    // Nothing internal anywhere public: hosts, ports, probe errors, app or tenant ids, the
    // maintenance window's reason.
    let tenant = body(app.get("/me", &app.owner).await).await["tenant"]["id"]
        .as_str()
        .expect("tenant")
        .to_owned();
    let secrets = [
        "127.0.0.1".to_owned(),
        live_port.to_string(),
        dead.to_string(),
        "cannot connect".into(),
        "refused".into(),
        id(&api),
        id(&db),
        id(&cron),
        id(&page),
        tenant,
        "10.0.0.7".into(),
        "kernel upgrade".into(),
        "push:".into(),
        "tcp://".into(),
    ];
    // The feed links to the page at the hub's public address, which is not a secret.
    let atom_rest = atom.replace(&app.base, "");
    for (what, text) in [("json", &text), ("html", &html), ("atom", &atom_rest)] {
        for s in &secrets {
            assert!(!text.contains(s.as_str()), "{what} shows `{s}`");
        }
    }
    // Resolved: the page is back to what its apps say; an unknown slug is 404.
    made(
        &app,
        &format!("/incidents/{}/updates", id(&inc)),
        &app.owner,
        json!({"status": "resolved", "message": "Replaced; all good."}),
    )
    .await;
    let v: Value = app
        .client
        .get(format!("{}/status/acme.json", app.base))
        .send()
        .await
        .expect("json")
        .json()
        .await
        .expect("json");
    assert_eq!(v["status"], "partial_outage", "the database is still down");
    assert_eq!(v["incidents"][0]["status"], "resolved");
    let r = app
        .client
        .get(format!("{}/status/nope.json", app.base))
        .send()
        .await
        .expect("404");
    assert_eq!(r.status(), 404);
    drop(live);
}

fn rfc(t: time::OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .expect("rfc3339")
}

/// What Python's feedparser makes of a feed: `{bozo, version, entries: [{title, content}]}`.
fn feedparser(feed: &str) -> Value {
    let dir = TempDir::new();
    let path = dir.0.join("feed.atom");
    std::fs::write(&path, feed).expect("write");
    let script = "import feedparser, json, sys\n\
        d = feedparser.parse(sys.argv[1])\n\
        print(json.dumps({'bozo': int(d.bozo), 'version': d.version, 'title': d.feed.get('title'),\n\
          'entries': [{'title': e.title, 'content': e.content[0].value if 'content' in e else None} for e in d.entries]}))";
    let out = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(&path)
        .output()
        .expect("python3 with feedparser (installed by .ci/run)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("feedparser's answer")
}

async fn status_pages_and_incidents_are_checked_scoped_and_notify_subscribers(b: Backend) {
    let app = TestApp::spawn(b).await;
    let port = dead_port();
    let a = made(
        &app,
        "/apps",
        &app.owner,
        json!({"name": "web", "type": "tcp",
        "endpoint": format!("tcp://127.0.0.1:{port}")}),
    )
    .await;
    let app_id = a["id"].as_str().expect("id").to_owned();
    let other = app.other_tenant().await;
    let theirs = made(
        &app,
        "/apps",
        &other,
        json!({"name": "theirs", "type": "tcp",
        "endpoint": format!("tcp://127.0.0.1:{port}")}),
    )
    .await;
    let before = app.count("SELECT COUNT(*) FROM status_pages").await;
    for (req, field) in [
        (
            json!({"slug": "A b", "title": "x", "groups": [{"name": "g", "app_ids": [app_id]}]}),
            "slug",
        ),
        (
            json!({"slug": "acme", "title": "", "groups": [{"name": "g", "app_ids": [app_id]}]}),
            "title",
        ),
        (
            json!({"slug": "acme", "title": "x", "groups": []}),
            "groups",
        ),
        (
            json!({"slug": "acme", "title": "x", "groups": [{"name": "g", "app_ids": [theirs["id"]]}]}),
            "groups[0].app_ids[0]",
        ),
        (
            json!({"slug": "acme", "title": "x", "show_uptime_days": 91, "groups": [{"name": "g", "app_ids": [app_id]}]}),
            "show_uptime_days",
        ),
    ] {
        let r = app.post("/status-pages", &app.owner, req.clone()).await;
        let p = assert_problem(r, 422, "validation_failed").await;
        assert!(names_field(&p, field), "{req}: {p}");
    }
    let r = app
        .post(
            "/status-pages",
            &app.owner,
            json!({"slug": "acme", "title": "x",
        "groups": [{"name": "g", "app_ids": [app_id]}], "colour": "red"}),
        )
        .await;
    assert!(matches!(r.status().as_u16(), 400 | 422));
    assert_eq!(app.count("SELECT COUNT(*) FROM status_pages").await, before);
    // Operators may not make pages; viewers read.
    let (operator, _) = app.user_with_role("operator").await;
    let r = app
        .post(
            "/status-pages",
            &operator,
            json!({"slug": "acme", "title": "Acme",
        "groups": [{"name": "g", "app_ids": [app_id]}]}),
        )
        .await;
    assert_eq!(r.status(), 403);
    let page = made(
        &app,
        "/status-pages",
        &app.owner,
        json!({"slug": "acme", "title": "Acme",
        "groups": [{"name": "g", "app_ids": [app_id]}]}),
    )
    .await;
    let page_id = page["id"].as_str().expect("id").to_owned();
    // The slug is the hub's: another tenant cannot take it; nor read or change the page.
    let theirs_page =
        json!({"slug": "acme", "title": "T", "groups": [{"name": "g", "app_ids": [theirs["id"]]}]});
    assert_eq!(
        app.post("/status-pages", &other, theirs_page)
            .await
            .status(),
        409
    );
    assert_eq!(
        app.get(&format!("/status-pages/{page_id}"), &other)
            .await
            .status(),
        404
    );
    assert_eq!(
        app.patch(
            &format!("/status-pages/{page_id}"),
            &other,
            json!({"title": "x"})
        )
        .await
        .status(),
        404
    );
    let r = app
        .post(
            &format!("/status-pages/{page_id}/incidents"),
            &other,
            json!({"title": "t", "status": "investigating", "impact": "minor", "message": "m"}),
        )
        .await;
    assert_eq!(r.status(), 404);
    // A patch changes only what it sends; a new slug moves the address.
    let changed = body(
        app.patch(
            &format!("/status-pages/{page_id}"),
            &app.owner,
            json!({"slug": "acme-status", "description": "All of it"}),
        )
        .await,
    )
    .await;
    assert_eq!(
        (changed["title"].as_str(), changed["slug"].as_str()),
        (Some("Acme"), Some("acme-status"))
    );
    assert_eq!(
        app.client
            .get(format!("{}/status/acme", app.base))
            .send()
            .await
            .expect("old")
            .status(),
        404
    );
    assert_eq!(
        app.client
            .get(format!("{}/status/acme-status", app.base))
            .send()
            .await
            .expect("new")
            .status(),
        200
    );

    // Subscribers: a webhook and a Slack-style channel asked for incident events.
    let hook = Receiver::start(&[]).await;
    let r = app
        .post(
            "/webhooks",
            &app.owner,
            json!({"url": hook.url, "events": ["incident.created", "incident.updated"],
        "min_severity": "info"}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let slack = Receiver::start(&[]).await;
    let r = app
        .post(
            "/notification-channels",
            &app.owner,
            json!({"name": "ops", "kind": "slack",
        "config": {"url": slack.url}, "events": ["incident.created"]}),
        )
        .await;
    assert_eq!(r.status(), 201, "{}", body(r).await);
    for (req, field) in [
        (
            json!({"title": "t", "status": "sleeping", "impact": "minor", "message": "m"}),
            "status",
        ),
        (
            json!({"title": "t", "status": "investigating", "impact": "huge", "message": "m"}),
            "impact",
        ),
        (
            json!({"title": "t", "status": "investigating", "impact": "minor", "message": " "}),
            "message",
        ),
    ] {
        let r = app
            .post(
                &format!("/status-pages/{page_id}/incidents"),
                &operator,
                req.clone(),
            )
            .await;
        let p = assert_problem(r, 422, "validation_failed").await;
        assert!(names_field(&p, field), "{req}: {p}");
    }
    let inc = made(&app, &format!("/status-pages/{page_id}/incidents"), &operator,
        json!({"title": "Slow checkout", "status": "investigating", "impact": "minor", "message": "Looking."})).await;
    let inc_id = inc["id"].as_str().expect("id").to_owned();
    assert_eq!(
        inc["updates"][0]["created_by"]
            .as_str()
            .map(|e| e.contains('@')),
        Some(true)
    );
    made(
        &app,
        &format!("/incidents/{inc_id}/updates"),
        &operator,
        json!({"status": "resolved", "message": "Fixed.", "impact": "none"}),
    )
    .await;
    let got = hook.wait_for(2, 15).await;
    let mut events: Vec<String> = got
        .iter()
        .map(|r| r.json()["event"].as_str().unwrap_or("").to_owned())
        .collect();
    events.sort();
    assert_eq!(events, ["incident.created", "incident.updated"]);
    let created = got
        .iter()
        .find(|r| r.json()["event"] == "incident.created")
        .expect("created");
    let first = created.json();
    assert_eq!(first["incident"]["title"], "Slow checkout");
    assert_eq!(
        first["incident"]["page"]["url"],
        format!("{}/status/acme-status", app.base)
    );
    assert!(
        !created.header("webhook-signature").is_empty(),
        "signed like every delivery"
    );
    let said = slack.wait_for(1, 15).await;
    let text = String::from_utf8_lossy(&said[0].body).to_string();
    assert!(
        text.contains("Slow checkout") && text.contains("/status/acme-status"),
        "{text}"
    );
    assert_eq!(
        app.get(&format!("/incidents/{inc_id}"), &other)
            .await
            .status(),
        404
    );
    let listed = body(
        app.get(&format!("/status-pages/{page_id}/incidents"), &app.owner)
            .await,
    )
    .await;
    assert!(listed[0]["resolved_at"].is_string(), "{listed}");
    // Deleted: the address answers 404, the incidents go with it.
    assert_eq!(
        app.delete(&format!("/status-pages/{page_id}"), &app.owner)
            .await
            .status(),
        204
    );
    assert_eq!(
        app.client
            .get(format!("{}/status/acme-status.json", app.base))
            .send()
            .await
            .expect("gone")
            .status(),
        404
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM status_incidents").await, 0);
}

async fn an_app_badge_is_public_by_its_token_until_revoked(b: Backend) {
    let app = TestApp::spawn(b).await;
    let live = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = live.local_addr().expect("addr").port();
    let a = made(
        &app,
        "/apps",
        &app.owner,
        json!({"name": "checkout", "type": "tcp",
        "endpoint": format!("tcp://127.0.0.1:{port}")}),
    )
    .await;
    let id = a["id"].as_str().expect("id").to_owned();
    assert_eq!(a["badge_url"], Value::Null, "off until asked for");
    trusthub_monitors::jobs::probes::probe_tick(&app.state, hub_now() + Duration::seconds(1))
        .await
        .expect("tick");
    let other = app.other_tenant().await;
    assert_eq!(
        app.patch(&format!("/apps/{id}"), &other, json!({"badge": true}))
            .await
            .status(),
        404
    );
    let r = app
        .patch(&format!("/apps/{id}"), &app.owner, json!({}))
        .await;
    assert_problem(r, 422, "validation_failed").await;
    let on = body(
        app.patch(&format!("/apps/{id}"), &app.owner, json!({"badge": true}))
            .await,
    )
    .await;
    let url = on["badge_url"].as_str().expect("badge url").to_owned();
    assert!(
        url.starts_with(&format!("{}/badge/app/thb_", app.base)) && url.ends_with(".svg"),
        "{url}"
    );
    assert_eq!(on["expected_state"], "running", "unchanged");
    // On again keeps the token.
    let again = body(
        app.patch(&format!("/apps/{id}"), &app.owner, json!({"badge": true}))
            .await,
    )
    .await;
    assert_eq!(again["badge_url"], on["badge_url"]);
    let get = |q: &'static str| {
        let url = format!("{url}{q}");
        let client = app.client.clone();
        async move { client.get(url).send().await.expect("badge") }
    };
    let r = get("").await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "image/svg+xml");
    assert_eq!(r.headers()["cache-control"], "max-age=60");
    let svg = r.text().await.expect("svg");
    assert!(
        svg.contains("<title>checkout: up</title>") && svg.contains("#44cc11"),
        "{svg}"
    );
    let svg = get("?type=uptime&days=7").await.text().await.expect("svg");
    assert!(svg.contains("<title>checkout 7d: "), "{svg}");
    let svg = get("?type=latency").await.text().await.expect("svg");
    assert!(
        svg.contains("<title>checkout 30d: ") && svg.contains(" ms</title>"),
        "{svg}"
    );
    assert!(
        !svg.contains("127.0.0.1") && !svg.contains(&id),
        "nothing internal"
    );
    assert_eq!(get("?type=cpu").await.status(), 422);
    assert_eq!(get("?days=91").await.status(), 422);
    assert!(
        get("?typ=status").await.status().is_client_error(),
        "a misspelt parameter is refused"
    );
    let r = app
        .client
        .get(format!("{}/badge/app/thb_unknown.svg", app.base))
        .send()
        .await
        .expect("404");
    assert_eq!(r.status(), 404);
    // Off: the URL stops answering; on again is a new one.
    let off = body(
        app.patch(&format!("/apps/{id}"), &app.owner, json!({"badge": false}))
            .await,
    )
    .await;
    assert_eq!(off["badge_url"], Value::Null);
    assert_eq!(get("").await.status(), 404);
    let fresh = body(
        app.patch(&format!("/apps/{id}"), &app.owner, json!({"badge": true}))
            .await,
    )
    .await;
    assert_ne!(fresh["badge_url"], on["badge_url"]);
    drop(live);
}

/// The status page reads its apps' spans packed (one JSON array per app): the same spans,
/// in the same order, as the typed read, on both engines.
async fn packed_spans_are_the_typed_spans(b: Backend) {
    let app = TestApp::spawn(b).await;
    let mut ids = Vec::new();
    for n in 0..3 {
        let a = made(
            &app,
            "/apps",
            &app.owner,
            json!({"name": format!("a{n}"), "type": "push"}),
        )
        .await;
        ids.push(uuid::Uuid::parse_str(a["id"].as_str().expect("id")).expect("uuid"));
    }
    let t0 = hub_now() - Duration::days(3);
    let mut tx = app.db.begin().await.expect("tx");
    for (k, id) in ids.iter().enumerate().take(2) {
        for d in 0..3 {
            let start = t0 + Duration::days(d) + Duration::minutes(k as i64);
            let mid = start + Duration::hours(20);
            trusthub_monitors::timeline::append(&mut tx, *id, start, mid, false)
                .await
                .expect("span");
            trusthub_monitors::timeline::append(
                &mut tx,
                *id,
                mid,
                start + Duration::days(1),
                d == 1,
            )
            .await
            .expect("span");
        }
    }
    tx.commit().await.expect("commit");
    let mut c = app.db.conn().await.expect("conn");
    let since = t0 + Duration::hours(30);
    let packed = trusthub_monitors::timeline::spans_of_apps(&mut c, &ids, since)
        .await
        .expect("packed");
    assert_eq!(packed.len(), 2, "the app without spans is absent");
    for id in &ids[..2] {
        let typed: Vec<(i64, i64, bool)> = trusthub_monitors::timeline::spans(&mut c, *id, since)
            .await
            .expect("typed")
            .into_iter()
            .map(|s| {
                (
                    s.start_at.unix_timestamp(),
                    s.end_at.unix_timestamp(),
                    s.down,
                )
            })
            .collect();
        assert_eq!(packed[id], typed);
        assert!(
            typed.iter().any(|s| s.2) && typed.iter().any(|s| !s.2),
            "{typed:?}"
        );
    }
}
