//! CONTRACT 2: API tokens — shown once, stored hashed, scoped, expiring, deletable,
//! tenant-scoped.

use crate::harness::*;
use serde_json::json;

crate::dual!(
    a_token_is_shown_once_stored_hashed_and_works_as_bearer,
    read_tokens_act_as_viewers_and_ai_ingest_tokens_open_no_user_endpoint,
    deleted_and_expired_tokens_stop_working,
    tokens_cannot_mint_tokens,
    members_see_their_own_tokens_and_admins_all,
    another_tenants_token_is_404_and_keeps_working,
);

async fn a_token_is_shown_once_stored_hashed_and_works_as_bearer(b: Backend) {
    let app = TestApp::spawn(b).await;
    let resp = app
        .post(
            "/api-tokens",
            &app.owner,
            json!({"name": "ci", "scope": "write"}),
        )
        .await;
    assert_eq!(resp.status(), 201);
    let created = body(resp).await;
    let token = created["token"].as_str().expect("token").to_owned();
    assert!(token.starts_with("tht_") && token.len() > 40);
    assert_eq!(created["scope"], "write");
    let list = body(app.get("/api-tokens", &app.owner).await).await;
    let listed = &list.as_array().expect("list")[0];
    assert_eq!(listed["id"], created["id"]);
    assert!(listed.get("token").is_none(), "never shown again");
    assert!(token.starts_with(listed["token_hint"].as_str().expect("hint")));
    let me = body(app.get("/me", &Auth::Bearer(token.clone())).await).await;
    assert_eq!(me["auth"], "api_token");
    assert_eq!(me["scope"], "write");
    assert_eq!(me["effective_role"], "owner");
    // At rest only the SHA-256 is kept.
    let hash = trusthub_core::secret::token_hash(&token);
    assert_eq!(
        app.count(&format!(
            "SELECT COUNT(*) FROM api_tokens WHERE token_hash = '{hash}'"
        ))
        .await,
        1
    );
    assert_eq!(
        app.count(&format!(
            "SELECT COUNT(*) FROM api_tokens WHERE token_hash = '{token}' OR token_hint = '{token}'"
        ))
        .await,
        0
    );
    let listed_after = body(app.get("/api-tokens", &app.owner).await).await;
    assert!(
        listed_after[0]["last_used_at"].is_string(),
        "use is recorded"
    );
}

async fn read_tokens_act_as_viewers_and_ai_ingest_tokens_open_no_user_endpoint(b: Backend) {
    let app = TestApp::spawn(b).await;
    let (read, _) = app.token(&app.owner, "read").await;
    let read = Auth::Bearer(read);
    assert_eq!(
        body(app.get("/me", &read).await).await["effective_role"],
        "viewer"
    );
    assert_eq!(app.get("/api-tokens", &read).await.status(), 200);
    assert_problem(app.get("/users", &read).await, 403, "forbidden").await;
    assert_problem(app.get("/audit-log", &read).await, 403, "forbidden").await;
    let inv = app
        .post(
            "/invitations",
            &read,
            json!({"email": "x@example.com", "role": "viewer"}),
        )
        .await;
    assert_problem(inv, 403, "token_read_only").await;
    let (ai, _) = app.token(&app.owner, "ai_ingest").await;
    let ai = Auth::Bearer(ai);
    assert_problem(app.get("/api-tokens", &ai).await, 403, "forbidden").await;
    assert_problem(app.get("/users", &ai).await, 403, "forbidden").await;
    // CONTRACT 18: only the trace intake; `/me` too is 403.
    assert_problem(app.get("/me", &ai).await, 403, "forbidden").await;
}

async fn deleted_and_expired_tokens_stop_working(b: Backend) {
    let app = TestApp::spawn(b).await;
    let (token, id) = app.token(&app.owner, "read").await;
    assert_eq!(
        app.get("/me", &Auth::Bearer(token.clone())).await.status(),
        200
    );
    assert_eq!(
        app.delete(&format!("/api-tokens/{id}"), &app.owner)
            .await
            .status(),
        204
    );
    assert_problem(
        app.get("/me", &Auth::Bearer(token)).await,
        401,
        "unauthenticated",
    )
    .await;
    assert_problem(
        app.delete(&format!("/api-tokens/{id}"), &app.owner).await,
        404,
        "not_found",
    )
    .await;

    let past = app
        .post(
            "/api-tokens",
            &app.owner,
            json!({"name": "old", "scope": "read", "expires_at": "2020-01-01T00:00:00Z"}),
        )
        .await;
    let p = assert_problem(past, 422, "validation_failed").await;
    assert_eq!(p["errors"][0]["field"], "expires_at");
    let soon = (time::OffsetDateTime::now_utc() + time::Duration::seconds(4))
        .format(&time::format_description::well_known::Rfc3339)
        .expect("fmt");
    let resp = app
        .post(
            "/api-tokens",
            &app.owner,
            json!({"name": "short", "scope": "read", "expires_at": soon}),
        )
        .await;
    assert_eq!(resp.status(), 201);
    let token = body(resp).await["token"].as_str().expect("t").to_owned();
    assert_eq!(
        app.get("/me", &Auth::Bearer(token.clone())).await.status(),
        200
    );
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    assert_problem(
        app.get("/me", &Auth::Bearer(token)).await,
        401,
        "unauthenticated",
    )
    .await;
}

async fn tokens_cannot_mint_tokens(b: Backend) {
    let app = TestApp::spawn(b).await;
    let (token, _) = app.token(&app.owner, "write").await;
    let before = app.count("SELECT COUNT(*) FROM api_tokens").await;
    let resp = app
        .post(
            "/api-tokens",
            &Auth::Bearer(token),
            json!({"name": "child", "scope": "write"}),
        )
        .await;
    assert_problem(resp, 403, "forbidden").await;
    assert_eq!(app.count("SELECT COUNT(*) FROM api_tokens").await, before);
}

async fn members_see_their_own_tokens_and_admins_all(b: Backend) {
    let app = TestApp::spawn(b).await;
    let (viewer, _) = app.user_with_role("viewer").await;
    let (_, owner_token_id) = app.token(&app.owner, "read").await;
    let (_, viewer_token_id) = app.token(&viewer, "read").await;
    let mine = body(app.get("/api-tokens", &viewer).await).await;
    let ids: Vec<&str> = mine
        .as_array()
        .expect("a")
        .iter()
        .filter_map(|t| t["id"].as_str())
        .collect();
    assert_eq!(ids, vec![viewer_token_id.as_str()]);
    // A viewer cannot delete a colleague's token: it is not theirs to see (404).
    assert_problem(
        app.delete(&format!("/api-tokens/{owner_token_id}"), &viewer)
            .await,
        404,
        "not_found",
    )
    .await;
    let all = body(app.get("/api-tokens", &app.owner).await).await;
    assert_eq!(all.as_array().map(Vec::len), Some(2));
    assert_eq!(
        app.delete(&format!("/api-tokens/{viewer_token_id}"), &app.owner)
            .await
            .status(),
        204
    );
}

async fn another_tenants_token_is_404_and_keeps_working(b: Backend) {
    let app = TestApp::spawn(b).await;
    let other = app.other_tenant().await;
    let (token, id) = app.token(&app.owner, "read").await;
    assert_problem(
        app.delete(&format!("/api-tokens/{id}"), &other).await,
        404,
        "not_found",
    )
    .await;
    assert_eq!(app.get("/me", &Auth::Bearer(token)).await.status(), 200);
    assert_eq!(
        body(app.get("/api-tokens", &other).await)
            .await
            .as_array()
            .map(Vec::len),
        Some(0)
    );
}
