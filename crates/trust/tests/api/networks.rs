//! Private networks (CONTRACT 33), both engines: the owner narrows what the tenant's hub
//! checks, webhooks and channels reach within the operator's ranges (`GET`/`PATCH /tenant`);
//! a range outside the operator's is refused naming them; saved targets are refused with how
//! to allow them, and a check saved before the change is refused at its next probe; other
//! tenants keep the operator's ranges; the dashboard page and its form.

use crate::harness::*;
use serde_json::{Value, json};

crate::dual!(
    the_owner_narrows_private_networks_within_the_operators,
    the_private_networks_page_shows_and_changes_them,
);

async fn the_owner_narrows_private_networks_within_the_operators(b: Backend) {
    let app = TestApp::spawn(b).await;
    let receiver = Receiver::start(&[]).await;
    // Not chosen yet: every range the operator allows (the harness allows loopback).
    let t = body(app.get("/tenant", &app.owner).await).await;
    assert_eq!(t["allowed_networks"], Value::Null, "{t}");
    assert_eq!(
        t["operator_networks"],
        json!(["127.0.0.0/8", "::1/128"]),
        "{t}"
    );
    assert_eq!(t["badge_public"], true);
    let check = app
        .post(
            "/apps",
            &app.owner,
            json!({"name": "intranet", "type": "http", "endpoint": receiver.url, "retries": 0, "interval_seconds": 10}),
        )
        .await;
    assert_eq!(check.status(), 201);
    let check = body(check).await;
    let t0 = hub_now() + time::Duration::seconds(1);
    let r = trusthub_monitors::jobs::probes::probe_tick(&app.state, t0)
        .await
        .expect("tick");
    assert_eq!((r.probed, r.failed), (1, 0));

    // Outside the operator's ranges: refused, naming them and how to widen them.
    let r = app
        .patch(
            "/tenant",
            &app.owner,
            json!({"allowed_networks": ["10.0.0.0/8", "nonsense"]}),
        )
        .await;
    assert_eq!(r.status(), 422);
    let p = body(r).await;
    let errors = p["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 2, "{p}");
    assert_eq!(errors[0]["field"], "allowed_networks[0]");
    let m = errors[0]["message"].as_str().unwrap_or_default();
    assert!(
        m.contains("127.0.0.0/8, ::1/128") && m.contains("TRUSTHUB_OUTBOUND_ALLOW_CIDRS"),
        "{m}"
    );
    assert_eq!(errors[1]["field"], "allowed_networks[1]");
    assert_eq!(
        body(app.get("/tenant", &app.owner).await).await["allowed_networks"],
        Value::Null,
        "a refused change changes nothing"
    );
    // Only the owner; misspelt fields are refused.
    let (admin, _) = app.user_with_role("admin").await;
    assert_eq!(
        app.patch("/tenant", &admin, json!({"allowed_networks": []}))
            .await
            .status(),
        403
    );
    assert_problem(
        app.patch("/tenant", &app.owner, json!({"allowed_network": []}))
            .await,
        422,
        "validation_failed",
    )
    .await;

    // A narrower range inside the operator's is kept, normalised.
    let r = app
        .patch(
            "/tenant",
            &app.owner,
            json!({"allowed_networks": [" 127.0.0.2/32 "]}),
        )
        .await;
    assert_eq!(r.status(), 200);
    let t = body(r).await;
    assert_eq!(t["allowed_networks"], json!(["127.0.0.2/32"]), "{t}");
    assert_eq!(t["badge_public"], true, "what was not sent stays");

    // Now 127.0.0.1 is outside the tenant's networks: new targets are refused, saying how
    // to allow them; the check saved before is refused at its next probe.
    let r = app
        .post(
            "/webhooks",
            &app.owner,
            json!({"url": receiver.url, "events": ["alert.created"]}),
        )
        .await;
    assert_eq!(r.status(), 422);
    let p = body(r).await;
    assert_eq!(p["errors"][0]["field"], "url", "{p}");
    let m = p["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(
        m.contains("outside this tenant's private networks") && m.contains("allowed_networks"),
        "{m}"
    );
    let r = app
        .post(
            "/apps",
            &app.owner,
            json!({"name": "intranet 2", "type": "http", "endpoint": receiver.url}),
        )
        .await;
    assert_eq!(r.status(), 422);
    let p = body(r).await;
    assert_eq!(p["errors"][0]["field"], "endpoint", "{p}");
    assert!(
        p["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("run the check from a host")),
        "{p}"
    );
    let before = receiver.received().len();
    let r =
        trusthub_monitors::jobs::probes::probe_tick(&app.state, t0 + time::Duration::seconds(11))
            .await
            .expect("tick");
    assert_eq!((r.probed, r.failed), (1, 1));
    assert_eq!(
        receiver.received().len(),
        before,
        "the refused target was never called"
    );
    let a = body(
        app.get(
            &format!("/apps/{}", check["id"].as_str().expect("id")),
            &app.owner,
        )
        .await,
    )
    .await;
    assert!(
        a["last_check"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("outside this tenant's private networks")),
        "{a}"
    );

    // Another tenant still has the operator's ranges.
    let other = app.other_tenant().await;
    let r = app
        .post(
            "/webhooks",
            &other,
            json!({"url": receiver.url, "events": ["alert.created"]}),
        )
        .await;
    assert_eq!(r.status(), 201);

    // `[]`: public addresses only; `null`: the operator's again. Each change audited.
    let t = body(
        app.patch("/tenant", &app.owner, json!({"allowed_networks": []}))
            .await,
    )
    .await;
    assert_eq!(t["allowed_networks"], json!([]));
    let t = body(
        app.patch("/tenant", &app.owner, json!({"allowed_networks": null}))
            .await,
    )
    .await;
    assert_eq!(t["allowed_networks"], Value::Null);
    let r = app
        .post(
            "/webhooks",
            &app.owner,
            json!({"url": receiver.url, "events": ["alert.created"]}),
        )
        .await;
    assert_eq!(r.status(), 201);
    // An empty merge patch changes nothing and records nothing.
    let t = body(app.patch("/tenant", &app.owner, json!({})).await).await;
    assert_eq!(t["allowed_networks"], Value::Null);
    let audit = body(
        app.get("/audit-log?event_type=tenant_settings_changed", &app.owner)
            .await,
    )
    .await;
    assert_eq!(audit.as_array().map(Vec::len), Some(3), "{audit}");
}

async fn the_private_networks_page_shows_and_changes_them(b: Backend) {
    let app = TestApp::spawn(b).await;
    let Some(browser) = crate::webdriver::Browser::start(&format!("networks-{b:?}")).await else {
        return;
    };
    browser
        .sign_in(&app.base, OWNER_EMAIL, OWNER_PASSWORD)
        .await;
    browser.goto(&format!("{}/", app.base)).await;
    browser.click("a[href='/ui/networks']").await;
    let page = browser.wait_text("Private networks").await;
    assert!(page.contains("127.0.0.0/8, ::1/128"), "{page}");
    assert!(page.contains("everything the operator allows"), "{page}");
    // Outside the operator's: refused in the page, the draft kept.
    browser.click("form#networks-form input[value=list]").await;
    browser
        .set_value(
            "form#networks-form textarea[name=networks]",
            "192.168.1.0/24",
        )
        .await;
    browser
        .click("form#networks-form button[type=submit]")
        .await;
    let page = browser.wait_text("is not within what the hub").await;
    assert!(page.contains("192.168.1.0/24"), "{page}");
    browser.screenshot("networks-refused").await;
    browser
        .set_value(
            "form#networks-form textarea[name=networks]",
            "127.0.0.1/32\n::1",
        )
        .await;
    browser
        .click("form#networks-form button[type=submit]")
        .await;
    let page = browser.wait_text("Saved").await;
    assert!(page.contains("127.0.0.1/32, ::1/128"), "{page}");
    browser.screenshot("networks").await;
    let t = body(app.get("/tenant", &app.owner).await).await;
    assert_eq!(t["allowed_networks"], json!(["127.0.0.1/32", "::1/128"]));
    // The check form offers where a check runs from.
    browser.goto(&format!("{}/ui/apps", app.base)).await;
    let page = browser.wait_text("Add a check").await;
    assert!(page.contains("Run from"), "{page}");
    browser.assert_no_js_errors().await;
}
