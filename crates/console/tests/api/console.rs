//! The console's API on its own (CONTRACT 11's sessions; issue 60): what a start is refused
//! for, each refusal opening nothing, the session list's filters and another tenant's ids.
//! A console with a real agent, shell and browser across hub processes is in
//! crates/cli/tests/processes.rs and crates/agent/tests/console_lifecycle.rs.

use crate::actions::enrol;
use crate::agents::register;
use crate::harness::*;
use reqwest::Method;
use serde_json::{Value, json};
use trusthub_core::totp;

crate::dual!(
    a_start_is_refused_for_each_missing_condition_and_opens_nothing,
    sessions_are_listed_by_filter_and_another_tenants_ids_answer_404,
);

async fn start(
    app: &TestApp,
    auth: &Auth,
    agent: &str,
    body: Value,
    code: Option<String>,
) -> reqwest::Response {
    let mut r = app
        .req(
            Method::POST,
            &format!("/agents/{agent}/console/start"),
            auth,
        )
        .json(&body);
    if let Some(c) = code {
        r = r.header("x-totp-code", c);
    }
    r.send().await.expect("start")
}

async fn a_start_is_refused_for_each_missing_condition_and_opens_nothing(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    let reason = json!({"reason": "disk full on /var"});
    // A viewer or an operator: 403, before any code is asked for.
    for role in ["viewer", "operator"] {
        let (who, _) = app.user_with_role(role).await;
        assert_eq!(
            start(&app, &who, &host.id, reason.clone(), None)
                .await
                .status(),
            403,
            "{role}"
        );
    }
    // The owner without TOTP enrolled, then without a code.
    assert_problem(
        start(&app, &app.owner, &host.id, reason.clone(), None).await,
        403,
        "totp_not_enrolled",
    )
    .await;
    let secret = enrol(&app, &app.owner).await;
    let enrolled = time::OffsetDateTime::now_utc().unix_timestamp() / 30;
    assert_problem(
        start(&app, &app.owner, &host.id, reason.clone(), None).await,
        403,
        "totp_required",
    )
    .await;
    // Each code is spent once (enrolling spent its step's): a fresh one for each refusal.
    let now = fresh_totp_window().await;
    let mut codes = [now - 30, now, now + 30]
        .into_iter()
        .filter(|t| t / 30 != enrolled)
        .map(|t| Some(totp::code_at(&secret, t)));
    let bad = assert_problem(
        start(
            &app,
            &app.owner,
            &host.id,
            json!({"reason": " ", "cols": 5}),
            codes.next().expect("a code"),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert!(names_field(&bad, "reason"), "{bad}");
    // The agent has no WebSocket to this hub: 409, nothing opened.
    assert_problem(
        start(
            &app,
            &app.owner,
            &host.id,
            reason.clone(),
            codes.next().expect("a code"),
        )
        .await,
        409,
        "conflict",
    )
    .await;
    // Another tenant's admin names this tenant's agent: 404, as for no agent at all.
    let other = app.other_tenant().await;
    let other_secret = enrol(&app, &other).await;
    let other_enrolled = time::OffsetDateTime::now_utc().unix_timestamp() / 30;
    let now = fresh_totp_window().await;
    let mut other_codes = [now - 30, now, now + 30]
        .into_iter()
        .filter(|t| t / 30 != other_enrolled)
        .map(|t| Some(totp::code_at(&other_secret, t)));
    for agent in [host.id.as_str(), "00000000-0000-0000-0000-000000000000"] {
        assert_problem(
            start(
                &app,
                &other,
                agent,
                reason.clone(),
                other_codes.next().expect("a code"),
            )
            .await,
            404,
            "not_found",
        )
        .await;
    }
    assert_eq!(
        body(app.get("/console/sessions", &app.owner).await).await,
        json!([])
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM console_sessions").await, 0);
}

async fn sessions_are_listed_by_filter_and_another_tenants_ids_answer_404(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    let (viewer, _) = app.user_with_role("viewer").await;
    for q in [
        "".to_owned(),
        format!("?agent_id={}", host.id),
        "?status=ended".into(),
    ] {
        assert_eq!(
            body(app.get(&format!("/console/sessions{q}"), &viewer).await).await,
            json!([]),
            "{q}"
        );
    }
    for (q, field) in [
        ("?status=closed", "status"),
        ("?agent_id=not-a-uuid", "agent_id"),
        ("?state=ended", "state"),
    ] {
        let r = app.get(&format!("/console/sessions{q}"), &viewer).await;
        assert!(
            [400, 422].contains(&r.status().as_u16()),
            "{q}: {}",
            r.status()
        );
        let p = body(r).await;
        assert!(p.to_string().contains(field), "{q}: {p}");
    }
    // A session id nobody has: 404 for the recording and the end, as for another tenant's.
    let none = "00000000-0000-0000-0000-000000000000";
    assert_problem(
        app.get(&format!("/console/sessions/{none}/recording"), &app.owner)
            .await,
        404,
        "not_found",
    )
    .await;
    assert_problem(
        app.delete(&format!("/console/sessions/{none}"), &app.owner)
            .await,
        404,
        "not_found",
    )
    .await;
    // The recording is for admins: a viewer is refused before anything is looked up.
    assert_eq!(
        app.get(&format!("/console/sessions/{none}/recording"), &viewer)
            .await
            .status(),
        403
    );
    let other = app.other_tenant().await;
    assert_eq!(
        body(
            app.get(&format!("/console/sessions?agent_id={}", host.id), &other)
                .await
        )
        .await,
        json!([])
    );
}
