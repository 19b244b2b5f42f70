//! Emergency actions, hub side (CONTRACT 5, 5a): who may restart, what is refused before
//! anything is signed, the agent socket's authentication, and isolation. The agent side and
//! the full round trip are in crates/agent/tests/end_to_end.rs.

use crate::agents::register;
use crate::apps::create_app;
use crate::harness::*;
use reqwest::Method;
use serde_json::json;
use trusthub_core::totp;

crate::dual!(
    restarts_need_admin_totp_and_a_connected_agent,
    the_agent_socket_takes_only_its_own_agent_token,
);

/// Turns TOTP on for `auth`; the raw secret.
pub(crate) async fn enrol(app: &TestApp, auth: &Auth) -> Vec<u8> {
    let setup = body(
        app.req(Method::POST, "/auth/totp/setup", auth)
            .send()
            .await
            .expect("setup"),
    )
    .await;
    let secret =
        totp::secret_from_base32(setup["secret_base32"].as_str().expect("b32")).expect("secret");
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let r = app
        .post(
            "/auth/totp/verify",
            auth,
            json!({"code": totp::code_at(&secret, now)}),
        )
        .await;
    assert_eq!(r.status(), 200);
    secret
}

async fn restart(
    app: &TestApp,
    auth: &Auth,
    id: &str,
    code: Option<String>,
    reason: &str,
) -> reqwest::Response {
    let mut r = app
        .req(Method::POST, &format!("/apps/{id}/restart"), auth)
        .json(&json!({"reason": reason}));
    if let Some(c) = code {
        r = r.header("x-totp-code", c);
    }
    r.send().await.expect("restart")
}

async fn restarts_need_admin_totp_and_a_connected_agent(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    let unit = create_app(
        &app,
        &app.owner,
        json!({"agent_id": host.id, "name": "nginx", "app_type": "systemd", "identifier": "nginx"}),
    )
    .await;
    let http = create_app(
        &app,
        &app.owner,
        json!({"agent_id": host.id, "name": "api", "type": "http",
        "endpoint": "http://127.0.0.1:9/", "interval_seconds": 30}),
    )
    .await;
    let id = unit["id"].as_str().expect("id");
    let now = fresh_totp_window().await;
    let secret = enrol(&app, &app.owner).await;
    let (operator, _) = app.user_with_role("operator").await;
    let op_secret = enrol(&app, &operator).await;
    let (viewer, _) = app.user_with_role("viewer").await;

    assert_problem(
        restart(&app, &app.owner, id, None, "x").await,
        403,
        "totp_required",
    )
    .await;
    assert_problem(
        restart(&app, &viewer, id, Some("123456".into()), "x").await,
        403,
        "totp_not_enrolled",
    )
    .await;
    let r = restart(
        &app,
        &operator,
        id,
        Some(totp::code_at(&op_secret, now + 30)),
        "x",
    )
    .await;
    assert_problem(r, 403, "forbidden").await;
    // The agent has no socket open: refused, nothing signed or recorded.
    let r = restart(
        &app,
        &app.owner,
        id,
        Some(totp::code_at(&secret, now + 30)),
        "stuck",
    )
    .await;
    let p = assert_problem(r, 409, "conflict").await;
    assert!(
        p["detail"]
            .as_str()
            .is_some_and(|d| d.contains("not connected"))
    );
    let r = restart(
        &app,
        &app.owner,
        http["id"].as_str().expect("id"),
        Some(totp::code_at(&secret, now - 30)),
        "x",
    )
    .await;
    assert_problem(r, 409, "conflict").await;
    // A process app without a restart command cannot be restarted by its agent: refused
    // before the TOTP code is looked at, so the same code still works for another app.
    let bare = create_app(
        &app,
        &app.owner,
        json!({"agent_id": host.id, "name": "w", "app_type": "process", "identifier": "/opt/w/bin/w"}),
    )
    .await;
    let code = totp::code_at(&secret, now - 30);
    let p = assert_problem(
        restart(
            &app,
            &app.owner,
            bare["id"].as_str().expect("id"),
            Some(code.clone()),
            "x",
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert!(names_field(&p, "restart_command"), "{p}");
    let p = assert_problem(
        restart(&app, &app.owner, id, Some(code), "stuck").await,
        409,
        "conflict",
    )
    .await;
    assert!(
        p["detail"]
            .as_str()
            .is_some_and(|d| d.contains("not connected")),
        "the code was not spent by the refused restart: {p}"
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM actions").await, 0);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM audit_log WHERE event_type = 'action_requested'")
            .await,
        0
    );
    let agent = body(app.get(&format!("/agents/{}", host.id), &app.owner).await).await;
    assert_eq!(agent["connected"], false);

    assert_eq!(body(app.get("/actions", &viewer).await).await, json!([]));
    assert_problem(app.get("/actions/nope", &viewer).await, 404, "not_found").await;
    let head = body(app.get("/transparency-log/head", &viewer).await).await;
    assert_eq!(head["seq"], 0);
    assert_eq!(head["entry_hash"], "0".repeat(64));
    let other = app.other_tenant().await;
    assert_eq!(
        body(app.get("/transparency-log", &other).await).await,
        json!([])
    );
    assert_problem(
        app.get("/transparency-log", &Auth::None).await,
        401,
        "unauthenticated",
    )
    .await;
}

async fn the_agent_socket_takes_only_its_own_agent_token(b: Backend) {
    let app = TestApp::spawn(b).await;
    let one = register(&app).await;
    let two = register(&app).await;
    let upgrade = |auth: Auth, id: String| {
        let app = &app;
        async move {
            app.req(Method::GET, &format!("/ws/agents/{id}"), &auth)
                .header("connection", "upgrade")
                .header("upgrade", "websocket")
                .header("sec-websocket-version", "13")
                .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
                .send()
                .await
                .expect("get")
        }
    };
    assert_problem(
        upgrade(Auth::None, one.id.clone()).await,
        401,
        "unauthenticated",
    )
    .await;
    assert_problem(
        upgrade(app.owner.clone(), one.id.clone()).await,
        401,
        "unauthenticated",
    )
    .await;
    assert_problem(
        upgrade(Auth::Bearer(two.token.clone()), one.id.clone()).await,
        404,
        "not_found",
    )
    .await;
    let ok = upgrade(Auth::Bearer(one.token.clone()), one.id.clone()).await;
    assert_eq!(ok.status(), 101);
}
