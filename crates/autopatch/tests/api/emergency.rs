//! Emergency actions, hub side (CONTRACT 19): who may ask, what is checked before any TOTP
//! code is looked at, and a host that is not connected. The agent side and the round trip
//! are in crates/agent/tests/end_to_end.rs, with the real agent.

use crate::agents::register;
use crate::harness::*;
use reqwest::Method;
use serde_json::{Value, json};

crate::dual!(
    emergencies_are_checked_before_the_code_and_refused_for_a_host_not_connected,
    an_admin_opens_the_emergency_menu_and_reads_why_a_host_cannot_be_reached,
);

async fn emergency(app: &TestApp, auth: &Auth, agent: &str, body: Value) -> reqwest::Response {
    app.req(Method::POST, &format!("/agents/{agent}/emergency"), auth)
        .json(&body)
        .send()
        .await
        .expect("emergency")
}

async fn emergencies_are_checked_before_the_code_and_refused_for_a_host_not_connected(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    let (operator, _) = app.user_with_role("operator").await;
    let kill = json!({"action": "kill_process", "target": "4242", "reason": "runaway"});
    assert_problem(
        emergency(&app, &operator, &host.id, kill.clone()).await,
        403,
        "forbidden",
    )
    .await;
    let other = app.other_tenant().await;
    assert_problem(
        emergency(&app, &other, &host.id, kill.clone()).await,
        404,
        "not_found",
    )
    .await;
    for (body, field) in [
        (
            json!({"action": "reboot", "target": "now", "reason": "x"}),
            "action",
        ),
        (
            json!({"action": "kill_process", "target": "1", "reason": "x"}),
            "target",
        ),
        (
            json!({"action": "kill_process", "target": "12 34", "reason": "x"}),
            "target",
        ),
        (
            json!({"action": "block_ip", "target": "203.0.113.0/24", "reason": "x"}),
            "target",
        ),
        (
            json!({"action": "lock_user", "target": "root", "reason": "x"}),
            "target",
        ),
        // CONTRACT 30: targets that would cut the host off or silence the agent, in every
        // spelling.
        (
            json!({"action": "block_ip", "target": "127.0.0.1", "reason": "x"}),
            "target",
        ),
        (
            json!({"action": "block_ip", "target": "::ffff:127.0.0.1", "reason": "x"}),
            "target",
        ),
        (
            json!({"action": "block_ip", "target": "0.0.0.0", "reason": "x"}),
            "target",
        ),
        (
            json!({"action": "block_ip", "target": "::", "reason": "x"}),
            "target",
        ),
        (
            json!({"action": "block_ip", "target": "255.255.255.255", "reason": "x"}),
            "target",
        ),
        (
            json!({"action": "block_ip", "target": "169.254.169.254", "reason": "x"}),
            "target",
        ),
        (
            json!({"action": "stop_unit", "target": "trusthub-agent.service", "reason": "x"}),
            "target",
        ),
        (
            json!({"action": "kill_process", "target": "2", "reason": "x"}),
            "target",
        ),
        (
            json!({"action": "stop_unit", "target": "--now", "reason": "x"}),
            "target",
        ),
        (
            json!({"action": "stop_container", "target": "web", "reason": ""}),
            "reason",
        ),
        (
            json!({"action": "kill_process", "target": 4242, "reason": "x"}),
            "target",
        ),
        (
            json!({"action": "kill_process", "target": "4242", "reason": "x", "force": true}),
            "force",
        ),
    ] {
        let p = assert_problem(
            emergency(&app, &app.owner, &host.id, body.clone()).await,
            422,
            "validation_failed",
        )
        .await;
        assert!(names_field(&p, field), "{body}: {p}");
    }
    // A valid one to a host without its socket: 409, nothing signed or recorded, and no
    // code was needed to learn it.
    let p = assert_problem(
        emergency(&app, &app.owner, &host.id, kill).await,
        409,
        "conflict",
    )
    .await;
    assert!(
        p["detail"]
            .as_str()
            .is_some_and(|d| d.contains("not connected")),
        "{p}"
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM actions").await, 0);
}

async fn an_admin_opens_the_emergency_menu_and_reads_why_a_host_cannot_be_reached(b: Backend) {
    let app = TestApp::spawn(b).await;
    let Some(browser) = crate::webdriver::Browser::start(&format!("emergency-{b:?}")).await else {
        return;
    };
    let host = register(&app).await;
    let (admin, _) = app
        .invite_and_accept(&app.owner, "responder@example.com", "admin")
        .await;
    browser
        .sign_in(&app.base, "responder@example.com", "a fine password")
        .await;
    // Without TOTP the menu says what is missing.
    browser
        .goto(&format!("{}/ui/agents/{}/emergency", app.base, host.id))
        .await;
    browser.wait_text("Emergency actions need TOTP").await;
    crate::actions::enrol(&app, &admin).await;
    // From the host page's tab; a bad target is refused with the field's reason, then a
    // valid one for a host whose agent is not connected.
    browser
        .goto(&format!("{}/ui/agents/{}", app.base, host.id))
        .await;
    browser
        .click(&format!("a[href='/ui/agents/{}/emergency']", host.id))
        .await;
    browser.wait_text("Run it now").await;
    browser
        .eval("document.querySelector('#emergency select[name=action]').value = 'block_ip'")
        .await;
    browser
        .type_into("#emergency input[name=target]", "10.0.0.0/8")
        .await;
    browser
        .type_into("#emergency input[name=reason]", "a scanner")
        .await;
    browser
        .type_into("#emergency input[name=code]", "123456")
        .await;
    browser.click("#emergency button[type=submit]").await;
    let page = browser.wait_text("IPv4 or IPv6 address").await;
    assert!(
        page.contains("a scanner"),
        "the form keeps what was typed: {page}"
    );
    browser
        .set_value("#emergency input[name=target]", "203.0.113.7")
        .await;
    browser
        .type_into("#emergency input[name=code]", "123456")
        .await;
    browser.click("#emergency button[type=submit]").await;
    browser.wait_text("not connected").await;
    assert_eq!(app.count("SELECT COUNT(*) FROM actions").await, 0);
    browser.assert_no_js_errors().await;
}
