//! Users (owner): the role matrix of every endpoint, role changes, removal, and tenant
//! isolation (CONTRACT 2).

use crate::harness::*;
use reqwest::Method;
use serde_json::{Value, json};

crate::dual!(
    every_endpoint_refuses_roles_below_its_own_and_anonymous_callers,
    owner_lists_users_and_changes_roles,
    the_last_owner_cannot_be_demoted_or_removed,
    removing_a_user_ends_their_sessions_and_tokens,
    another_tenants_users_are_404_and_unchanged,
);

/// (method, path, body, lowest role allowed)
fn matrix(
    user_id: &str,
    invitation_id: &str,
    token_id: &str,
) -> Vec<(Method, String, Option<Value>, &'static str)> {
    vec![
        (Method::GET, "/me".into(), None, "viewer"),
        (Method::GET, "/api-tokens".into(), None, "viewer"),
        (
            Method::DELETE,
            format!("/api-tokens/{token_id}"),
            None,
            "viewer",
        ),
        (Method::GET, "/audit-log".into(), None, "admin"),
        (Method::GET, "/users".into(), None, "owner"),
        (
            Method::PATCH,
            format!("/users/{user_id}"),
            Some(json!({"role": "operator"})),
            "owner",
        ),
        (Method::DELETE, format!("/users/{user_id}"), None, "owner"),
        (Method::GET, "/invitations".into(), None, "owner"),
        (
            Method::POST,
            "/invitations".into(),
            Some(json!({"email": "m@example.com", "role": "viewer"})),
            "owner",
        ),
        (
            Method::DELETE,
            format!("/invitations/{invitation_id}"),
            None,
            "owner",
        ),
    ]
}

const ROLES: [&str; 4] = ["viewer", "operator", "admin", "owner"];

async fn every_endpoint_refuses_roles_below_its_own_and_anonymous_callers(b: Backend) {
    let app = TestApp::spawn(b).await;
    let mut sessions = Vec::new();
    for role in &ROLES[..3] {
        sessions.push((*role, app.user_with_role(role).await.0));
    }
    let (_, target) = app.user_with_role("viewer").await;
    let inv = body(
        app.post(
            "/invitations",
            &app.owner,
            json!({"email": "pending@example.com", "role": "viewer"}),
        )
        .await,
    )
    .await;
    let (_, token_id) = app.token(&app.owner, "read").await;
    let audit_before = app.audit_count().await;
    for (method, path, body_json, min) in
        matrix(&target, inv["id"].as_str().expect("id"), &token_id)
    {
        let min_rank = ROLES.iter().position(|r| *r == min).expect("role");
        for (role, session) in &sessions {
            let rank = ROLES.iter().position(|r| r == role).expect("role");
            if rank >= min_rank {
                continue;
            }
            let mut req = app.req(method.clone(), &path, session);
            if let Some(j) = &body_json {
                req = req.json(j);
            }
            let resp = req.send().await.expect("r");
            let p = assert_problem(resp, 403, "forbidden").await;
            assert!(
                p["detail"].as_str().is_some_and(|d| d.contains(min)),
                "{method} {path} as {role}: {p}"
            );
        }
        let mut req = app.req(method.clone(), &path, &Auth::None);
        if let Some(j) = &body_json {
            req = req.json(j);
        }
        assert_problem(req.send().await.expect("r"), 401, "unauthenticated").await;
    }
    assert_eq!(
        app.audit_count().await,
        audit_before,
        "refused calls changed nothing"
    );
}

async fn owner_lists_users_and_changes_roles(b: Backend) {
    let app = TestApp::spawn(b).await;
    let (viewer, id) = app.user_with_role("viewer").await;
    let users = body(app.get("/users", &app.owner).await).await;
    assert_eq!(users.as_array().map(Vec::len), Some(2));
    assert_eq!(users[0]["email"], OWNER_EMAIL);
    assert!(users[1].get("password_hash").is_none());
    let bad = app
        .send_json(
            Method::PATCH,
            &format!("/users/{id}"),
            &app.owner,
            json!({"role": "god"}),
        )
        .await;
    assert_problem(bad, 422, "validation_failed").await;
    let resp = app
        .send_json(
            Method::PATCH,
            &format!("/users/{id}"),
            &app.owner,
            json!({"role": "admin"}),
        )
        .await;
    assert_eq!(resp.status(), 200);
    assert_eq!(body(resp).await["role"], "admin");
    // The new role applies to the user's existing session at once.
    assert_eq!(app.get("/audit-log", &viewer).await.status(), 200);
    let log = body(
        app.get("/audit-log?event_type=user_role_changed", &app.owner)
            .await,
    )
    .await;
    assert_eq!(log[0]["details"]["from"], "viewer");
    assert_eq!(log[0]["details"]["to"], "admin");
}

async fn the_last_owner_cannot_be_demoted_or_removed(b: Backend) {
    let app = TestApp::spawn(b).await;
    let me = body(app.get("/me", &app.owner).await).await;
    let my_id = me["user"]["id"].as_str().expect("id").to_owned();
    let demote = app
        .send_json(
            Method::PATCH,
            &format!("/users/{my_id}"),
            &app.owner,
            json!({"role": "admin"}),
        )
        .await;
    assert_problem(demote, 409, "conflict").await;
    assert_problem(
        app.delete(&format!("/users/{my_id}"), &app.owner).await,
        409,
        "conflict",
    )
    .await;
    // With a second owner, the first may step down.
    let (second, _) = app.user_with_role("owner").await;
    let demote = app
        .send_json(
            Method::PATCH,
            &format!("/users/{my_id}"),
            &second,
            json!({"role": "admin"}),
        )
        .await;
    assert_eq!(demote.status(), 200);
}

async fn removing_a_user_ends_their_sessions_and_tokens(b: Backend) {
    let app = TestApp::spawn(b).await;
    let (op, id) = app.user_with_role("operator").await;
    let (token, _) = app.token(&op, "write").await;
    assert_eq!(
        app.delete(&format!("/users/{id}"), &app.owner)
            .await
            .status(),
        204
    );
    assert_problem(app.get("/me", &op).await, 401, "unauthenticated").await;
    assert_problem(
        app.get("/me", &Auth::Bearer(token)).await,
        401,
        "unauthenticated",
    )
    .await;
    assert_problem(
        app.delete(&format!("/users/{id}"), &app.owner).await,
        404,
        "not_found",
    )
    .await;
    let log = body(
        app.get("/audit-log?event_type=user_removed", &app.owner)
            .await,
    )
    .await;
    assert_eq!(log.as_array().map(Vec::len), Some(1));
}

async fn another_tenants_users_are_404_and_unchanged(b: Backend) {
    let app = TestApp::spawn(b).await;
    let (victim, id) = app.user_with_role("viewer").await;
    let other = app.other_tenant().await;
    let audit = app.audit_count().await;
    assert_problem(
        app.send_json(
            Method::PATCH,
            &format!("/users/{id}"),
            &other,
            json!({"role": "owner"}),
        )
        .await,
        404,
        "not_found",
    )
    .await;
    assert_problem(
        app.delete(&format!("/users/{id}"), &other).await,
        404,
        "not_found",
    )
    .await;
    let theirs = body(app.get("/users", &other).await).await;
    assert_eq!(
        theirs.as_array().map(Vec::len),
        Some(1),
        "sees only its own owner"
    );
    assert_eq!(app.audit_count().await, audit);
    let me = body(app.get("/me", &victim).await).await;
    assert_eq!(me["user"]["role"], "viewer");
}
