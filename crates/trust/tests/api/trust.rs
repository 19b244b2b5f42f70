//! Trust Score v12 over the API and the dashboard (CONTRACT 21), both engines: the score
//! from what the tenant's capabilities know (a host without a certificate and silent, an
//! owner without TOTP), every lost point with its subject, history points only when the
//! inputs change, tenants apart, the public badge (SVG and shields.io JSON, caching, ETag,
//! 404 when off or unknown), the owner's switch, and the page.

use crate::actions::enrol;
use crate::agents::register;
use crate::harness::*;
use reqwest::Method;
use serde_json::{Value, json};

crate::dual!(
    v13_caps_the_band_while_an_app_is_down_and_v12_stays_as_it_was,
    the_score_follows_the_tenants_facts_and_the_badge_shows_it,
    the_owner_reads_the_score_page_and_turns_the_badge_off,
);

const SCORE: &str = "/trust-score/v12/tenant";

const V13: &str = "/trust-score/v13/tenant";

fn component<'a>(s: &'a Value, id: &str) -> &'a Value {
    s["components"]
        .as_array()
        .and_then(|c| c.iter().find(|x| x["id"] == id))
        .expect("component")
}

async fn the_score_follows_the_tenants_facts_and_the_badge_shows_it(b: Backend) {
    let app = TestApp::spawn(b).await;
    // A new tenant: no hosts, no SLOs; its owner has no TOTP.
    let s = body(app.get(SCORE, &app.owner).await).await;
    assert_eq!(s["version"], "v12", "{s}");
    let tenant = s["tenant_id"].as_str().expect("tenant").to_owned();
    let access = component(&s, "access");
    assert_eq!(access["score"], 75.0);
    assert_eq!(access["weight"], 100.0);
    assert_eq!(access["reasons"][0]["code"], "admin_without_totp");
    assert_eq!(access["reasons"][0]["points"], -25.0);
    assert!(
        access["reasons"][0]["subject_ref"]
            .as_str()
            .is_some_and(|r| r.starts_with("user:"))
    );
    assert_eq!(component(&s, "vulnerabilities")["score"], Value::Null);
    assert_eq!(component(&s, "drift")["weight"], 0.0);
    assert_eq!(s["final_score"], 75.0);
    assert_eq!(s["band"], "green");
    assert_eq!(s["inputs_sha256"].as_str().map(str::len), Some(64));

    // The same inputs: the same hash, and no second history point.
    let again = body(app.get(SCORE, &app.owner).await).await;
    assert_eq!(again["inputs_sha256"], s["inputs_sha256"]);
    let history = body(
        app.get(&format!("{SCORE}/history?days=1"), &app.owner)
            .await,
    )
    .await;
    assert_eq!(history.as_array().map(Vec::len), Some(1), "{history}");
    assert_eq!(history[0]["final_score"], 75.0);

    // A host that never reported and has no client certificate (a second later: history
    // points are whole seconds).
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let host = register(&app).await;
    let s = body(app.get(SCORE, &app.owner).await).await;
    let health = component(&s, "agent_health");
    assert_eq!(health["score"], 85.0, "{health}");
    let codes: Vec<&str> = health["reasons"]
        .as_array()
        .expect("reasons")
        .iter()
        .filter_map(|r| r["code"].as_str())
        .collect();
    assert_eq!(codes, ["no_client_certificate", "agent_silent"]);
    assert_eq!(
        health["reasons"][0]["subject_ref"],
        format!("agent:{}", host.id)
    );
    assert_eq!(component(&s, "vulnerabilities")["score"], 100.0);
    assert_eq!(component(&s, "integrity")["score"], 100.0);
    // Weights spread over the components with inputs (no drift, no SLOs): 20 of 80.
    assert_eq!(health["weight"], 25.0);
    let recomputed: f64 = s["components"]
        .as_array()
        .expect("components")
        .iter()
        .filter_map(|c| Some(c["weight"].as_f64()? * c["score"].as_f64()? / 100.0))
        .sum();
    assert_eq!(
        (recomputed * 10.0).round() / 10.0,
        s["final_score"].as_f64().expect("score")
    );
    assert_ne!(s["inputs_sha256"], again["inputs_sha256"]);
    let history = body(app.get(&format!("{SCORE}/history"), &app.owner).await).await;
    assert_eq!(
        history.as_array().map(Vec::len),
        Some(2),
        "a point when the inputs changed"
    );
    assert_problem(
        app.get(&format!("{SCORE}/history?days=0"), &app.owner)
            .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(
        app.get(&format!("{SCORE}/history?dayz=3"), &app.owner)
            .await
            .status(),
        400,
        "a misspelt parameter is refused"
    );

    // The host reports, waiting for a reboot: no longer silent, and patching says so.
    let now = time::OffsetDateTime::now_utc();
    let inv = json!({"batch_id": uuid::Uuid::new_v4(), "sent_at": crate::agents::ts(now), "metrics": [],
        "inventory": {"collected_at": crate::agents::ts(now), "os": {"id": "debian", "version": "12"},
            "packages": [], "patching": {"managers": ["apt"], "reboot_required": true, "reboot_required_packages": []}}});
    let r = crate::agents::send(
        &app,
        &host,
        &serde_json::to_vec(&inv).expect("json"),
        None,
        true,
    )
    .await;
    assert_eq!(r.status(), 202);
    let s = body(app.get(SCORE, &app.owner).await).await;
    let patching = component(&s, "patching");
    assert_eq!(patching["score"], 95.0, "{patching}");
    assert_eq!(patching["reasons"][0]["code"], "reboot_required");
    assert_eq!(
        patching["reasons"][0]["subject_ref"],
        format!("agent:{}", host.id)
    );
    let codes: Vec<&str> = component(&s, "agent_health")["reasons"]
        .as_array()
        .expect("reasons")
        .iter()
        .filter_map(|r| r["code"].as_str())
        .collect();
    assert_eq!(codes, ["no_client_certificate"]);

    // TOTP for the owner: the access component is whole again.
    enrol(&app, &app.owner).await;
    let s = body(app.get(SCORE, &app.owner).await).await;
    assert_eq!(component(&s, "access")["score"], 100.0);

    // Another tenant's score knows nothing of ours.
    let other = app.other_tenant().await;
    let theirs = body(app.get(SCORE, &other).await).await;
    assert_ne!(theirs["tenant_id"], s["tenant_id"]);
    assert_eq!(component(&theirs, "agent_health")["score"], Value::Null);

    // The badge: public, no credentials; the latest point; cached for 30 minutes.
    let r = app
        .client
        .get(format!("{}/badge/{tenant}.svg", app.base))
        .send()
        .await
        .expect("badge");
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "image/svg+xml");
    assert_eq!(r.headers()["cache-control"], "public, max-age=1800");
    let etag = r.headers()["etag"].to_str().expect("etag").to_owned();
    let svg = r.text().await.expect("svg");
    let score = s["final_score"].as_f64().expect("score");
    assert!(
        svg.contains(&format!(
            "<title>trust: {score:.1} (tenant {tenant})</title>"
        )),
        "{svg}"
    );
    assert!(
        svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""),
        "{svg}"
    );
    let r = app
        .client
        .get(format!("{}/badge/{tenant}.svg", app.base))
        .header("if-none-match", &etag)
        .send()
        .await
        .expect("badge");
    assert_eq!(r.status(), 304);
    let j: Value = app
        .client
        .get(format!("{}/badge/{tenant}.json", app.base))
        .send()
        .await
        .expect("json")
        .json()
        .await
        .expect("json");
    assert_eq!(j["schemaVersion"], 1);
    assert_eq!(j["label"], "trust");
    assert_eq!(j["message"], format!("{score:.1}"));
    assert!(
        ["e05d44", "fe7d37", "97ca00", "44cc11"].contains(&j["color"].as_str().unwrap_or_default())
    );
    for path in [
        format!("/badge/{}.svg", uuid::Uuid::new_v4()),
        "/badge/not-a-tenant.svg".to_owned(),
        format!("/badge/{tenant}.png"),
    ] {
        let r = app
            .client
            .get(format!("{}{path}", app.base))
            .send()
            .await
            .expect("badge");
        assert_eq!(r.status(), 404, "{path}");
    }

    // The owner turns it off (admins may not); then it answers 404. Audited.
    let (admin, _) = app.user_with_role("admin").await;
    let r = app
        .patch("/tenant", &admin, json!({"badge_public": false}))
        .await;
    assert_eq!(r.status(), 403);
    assert_problem(
        app.patch("/tenant", &app.owner, json!({"badge_publik": false}))
            .await,
        422,
        "validation_failed",
    )
    .await;
    let r = app
        .patch("/tenant", &app.owner, json!({"badge_public": false}))
        .await;
    assert_eq!(r.status(), 200);
    let t = body(r).await;
    assert_eq!(t["badge_public"], false);
    assert_eq!(t["tenant_id"], tenant.as_str());
    let r = app
        .client
        .get(format!("{}/badge/{tenant}.svg", app.base))
        .send()
        .await
        .expect("badge");
    assert_eq!(r.status(), 404);
    let audit = body(
        app.get("/audit-log?event_type=tenant_settings_changed", &app.owner)
            .await,
    )
    .await;
    assert_eq!(audit.as_array().map(Vec::len), Some(1));
    let r = app
        .req(Method::PATCH, "/tenant", &app.owner)
        .json(&json!({"badge_public": true}))
        .send()
        .await
        .expect("patch");
    assert_eq!(r.status(), 200);
    let r = app
        .client
        .get(format!("{}/badge/{tenant}.json", app.base))
        .send()
        .await
        .expect("badge");
    assert_eq!(r.status(), 200);
}

async fn the_owner_reads_the_score_page_and_turns_the_badge_off(b: Backend) {
    let app = TestApp::spawn(b).await;
    let Some(browser) = crate::webdriver::Browser::start(&format!("trust-{b:?}")).await else {
        return;
    };
    let host = register(&app).await;
    // An app down: the page says what caps the band and links to it.
    crate::apps::nginx(&app, &host, "failed").await;
    crate::apps::create_app(
        &app,
        &app.owner,
        json!({"agent_id": host.id, "name": "nginx", "app_type": "systemd", "identifier": "nginx"}),
    )
    .await;
    for _ in 0..3 {
        crate::apps::tick(&app).await;
    }
    browser
        .sign_in(&app.base, OWNER_EMAIL, OWNER_PASSWORD)
        .await;
    browser.goto(&format!("{}/", app.base)).await;
    browser.click("a[href='/ui/trust']").await;
    let page = browser.wait_text("Trust Score").await;
    assert!(
        page.contains("no_client_certificate") || page.contains("has no active client certificate"),
        "{page}"
    );
    assert!(
        page.contains("can administer the tenant without TOTP"),
        "{page}"
    );
    assert!(page.contains("no inputs"), "drift has none: {page}");
    assert!(page.contains("One number for the tenant (v13)"), "{page}");
    assert!(page.contains("The band is capped"), "{page}");
    assert!(page.contains("nginx is down (since "), "{page}");
    assert!(page.contains("href=\"/ui/apps#app-"), "{page}");
    // The embed snippet names the hub's address, so it works pasted anywhere (CONTRACT 33).
    assert!(
        page.contains(&format!("&lt;img src=\"{}/badge/", app.base)),
        "{page}"
    );
    // The reason links to the host it names.
    assert!(page.contains("href=\"/ui/agents/"), "{page}");
    browser.screenshot("trust").await;
    browser
        .click("form#badge-settings input[name=badge_public]")
        .await;
    browser
        .click("form#badge-settings button[type=submit]")
        .await;
    let page = browser.wait_text("The badge is off").await;
    assert!(page.contains("The public badge is off"), "{page}");
    let s = body(app.get(SCORE, &app.owner).await).await;
    let tenant = s["tenant_id"].as_str().expect("tenant");
    let r = app
        .client
        .get(format!("{}/badge/{tenant}.svg", app.base))
        .send()
        .await
        .expect("badge");
    assert_eq!(r.status(), 404);
    browser.assert_no_js_errors().await;
}

async fn v13_caps_the_band_while_an_app_is_down_and_v12_stays_as_it_was(b: Backend) {
    use crate::apps::{create_app, nginx, tick};
    let app = TestApp::spawn(b).await;
    enrol(&app, &app.owner).await;
    let host = register(&app).await;
    nginx(&app, &host, "active").await;
    let a = create_app(
        &app,
        &app.owner,
        json!({"agent_id": host.id, "name": "nginx", "app_type": "systemd", "identifier": "nginx"}),
    )
    .await;
    let id = a["id"].as_str().expect("id").to_owned();
    tick(&app).await;
    // Up: nothing caps the band; the app, without an SLO, counts in `slo` by its availability.
    let s = body(app.get(V13, &app.owner).await).await;
    assert_eq!(s["version"], "v13", "{s}");
    assert_eq!(s["caps"], json!([]), "{s}");
    assert_eq!(component(&s, "slo")["reasons"], json!([]), "{s}");
    let v12 = body(app.get(SCORE, &app.owner).await).await;
    assert!(v12.get("caps").is_none(), "v12 keeps its shape: {v12}");
    assert_eq!(component(&v12, "slo")["score"], Value::Null, "{v12}");

    // Down (three mismatches raise the liveness alert): at most orange, naming the app.
    nginx(&app, &host, "failed").await;
    for _ in 0..3 {
        tick(&app).await;
    }
    let s = body(app.get(V13, &app.owner).await).await;
    let caps = s["caps"].as_array().expect("caps");
    assert_eq!(caps.len(), 1, "{s}");
    assert_eq!(caps[0]["code"], "down");
    assert_eq!(caps[0]["band"], "orange");
    assert_eq!(caps[0]["subject_ref"], format!("app:{id}"));
    assert!(
        caps[0]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("nginx is down (since ")),
        "{s}"
    );
    let score = s["final_score"].as_f64().expect("score");
    assert!(score > 70.0, "the points alone say green or better: {s}");
    assert_eq!(s["band"], "orange", "{s}");
    // v12 of the same facts: no cap, its band from the points.
    let v12 = body(app.get(SCORE, &app.owner).await).await;
    assert_ne!(v12["band"], "orange", "{v12}");
    // Each version keeps its own history.
    for path in [SCORE, V13] {
        let h = body(app.get(&format!("{path}/history"), &app.owner).await).await;
        assert!(h.as_array().is_some_and(|h| !h.is_empty()), "{path}: {h}");
    }
    assert_problem(
        app.get(&format!("{V13}/history?days=400"), &app.owner)
            .await,
        422,
        "validation_failed",
    )
    .await;
    // The badge shows v13: its colour is the capped band's.
    let tenant = s["tenant_id"].as_str().expect("tenant");
    let j: Value = app
        .client
        .get(format!("{}/badge/{tenant}.json", app.base))
        .send()
        .await
        .expect("json")
        .json()
        .await
        .expect("json");
    assert_eq!(j["color"], "fe7d37", "{j}");

    // Back up: the cap goes.
    nginx(&app, &host, "active").await;
    tick(&app).await;
    let s = body(app.get(V13, &app.owner).await).await;
    assert_eq!(s["caps"], json!([]), "{s}");
}
