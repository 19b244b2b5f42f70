//! CONTRACT 2 invitations, with mail through a real SMTP exchange.

use crate::harness::*;
use serde_json::json;

crate::dual!(
    an_invitation_is_mailed_and_accepting_it_creates_the_user_once,
    invitations_refuse_bad_values_and_existing_users,
    pending_invitations_are_listed_and_revocable,
    another_tenants_invitation_is_404,
    invitations_are_limited_to_twenty_an_hour_per_tenant,
);

async fn an_invitation_is_mailed_and_accepting_it_creates_the_user_once(b: Backend) {
    let sink = SmtpSink::start().await;
    let url = sink.url();
    let app = TestApp::spawn_with(b, |s| s.smtp_url = Some(url)).await;
    let resp = app
        .post(
            "/invitations",
            &app.owner,
            json!({"email": "New.Person@Example.com", "role": "operator"}),
        )
        .await;
    assert_eq!(resp.status(), 201);
    let inv = body(resp).await;
    assert_eq!(inv["email"], "new.person@example.com");
    assert_eq!(inv["role"], "operator");
    let mail = sink.wait_for("new.person@example.com").await;
    assert!(mail.data.contains("invited you to Trusthub as operator"));
    assert_eq!(mail.token(), inv["token"].as_str().expect("token"));
    let accepted = app
        .post(
            "/auth/accept-invite",
            &Auth::None,
            json!({"token": mail.token(), "password": "my new password"}),
        )
        .await;
    assert_eq!(accepted.status(), 201);
    let session = session_of(&accepted);
    let me = body(app.get("/me", &session).await).await;
    assert_eq!(me["user"]["role"], "operator");
    assert_eq!(me["tenant"]["name"], "default");
    app.login("new.person@example.com", "my new password").await;
    let again = app
        .post(
            "/auth/accept-invite",
            &Auth::None,
            json!({"token": mail.token(), "password": "my new password"}),
        )
        .await;
    assert_problem(again, 422, "validation_failed").await;
    assert_eq!(
        body(app.get("/invitations", &app.owner).await)
            .await
            .as_array()
            .map(Vec::len),
        Some(0)
    );
    let log = body(
        app.get("/audit-log?event_type=invitation_accepted", &app.owner)
            .await,
    )
    .await;
    assert_eq!(log.as_array().map(Vec::len), Some(1));
}

async fn invitations_refuse_bad_values_and_existing_users(b: Backend) {
    let app = TestApp::spawn(b).await;
    let p = assert_problem(
        app.post(
            "/invitations",
            &app.owner,
            json!({"email": "nope", "role": "king"}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(p["errors"].as_array().map(Vec::len), Some(2));
    assert_problem(
        app.post(
            "/invitations",
            &app.owner,
            json!({"email": OWNER_EMAIL, "role": "viewer"}),
        )
        .await,
        409,
        "conflict",
    )
    .await;
    let inv = body(
        app.post(
            "/invitations",
            &app.owner,
            json!({"email": "short@example.com", "role": "viewer"}),
        )
        .await,
    )
    .await;
    let short = app
        .post(
            "/auth/accept-invite",
            &Auth::None,
            json!({"token": inv["token"], "password": "1234"}),
        )
        .await;
    assert_problem(short, 422, "validation_failed").await;
    assert_eq!(
        app.count("SELECT COUNT(*) FROM users").await,
        1,
        "nothing created"
    );
    assert_eq!(
        body(app.get("/invitations", &app.owner).await)
            .await
            .as_array()
            .map(Vec::len),
        Some(1),
        "still pending"
    );
}

async fn pending_invitations_are_listed_and_revocable(b: Backend) {
    let app = TestApp::spawn(b).await;
    let inv = body(
        app.post(
            "/invitations",
            &app.owner,
            json!({"email": "p@example.com", "role": "admin"}),
        )
        .await,
    )
    .await;
    let list = body(app.get("/invitations", &app.owner).await).await;
    assert_eq!(list[0]["id"], inv["id"]);
    assert!(list[0].get("token").is_none());
    let id = inv["id"].as_str().expect("id");
    assert_eq!(
        app.delete(&format!("/invitations/{id}"), &app.owner)
            .await
            .status(),
        204
    );
    let accept = app
        .post(
            "/auth/accept-invite",
            &Auth::None,
            json!({"token": inv["token"], "password": "my new password"}),
        )
        .await;
    assert_problem(accept, 422, "validation_failed").await;
    assert_problem(
        app.delete(&format!("/invitations/{id}"), &app.owner).await,
        404,
        "not_found",
    )
    .await;
}

async fn another_tenants_invitation_is_404(b: Backend) {
    let app = TestApp::spawn(b).await;
    let other = app.other_tenant().await;
    let inv = body(
        app.post(
            "/invitations",
            &app.owner,
            json!({"email": "q@example.com", "role": "viewer"}),
        )
        .await,
    )
    .await;
    let id = inv["id"].as_str().expect("id");
    assert_problem(
        app.delete(&format!("/invitations/{id}"), &other).await,
        404,
        "not_found",
    )
    .await;
    assert_eq!(
        body(app.get("/invitations", &other).await)
            .await
            .as_array()
            .map(Vec::len),
        Some(0)
    );
    assert_eq!(
        body(app.get("/invitations", &app.owner).await)
            .await
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    // Accepting puts the user in the inviting tenant, whoever sends the request.
    let acc = app
        .post(
            "/auth/accept-invite",
            &Auth::None,
            json!({"token": inv["token"], "password": "my new password"}),
        )
        .await;
    let tenant = body(acc).await["user"]["tenant_id"].clone();
    let owner_tenant = body(app.get("/me", &app.owner).await).await["tenant"]["id"].clone();
    assert_eq!(tenant, owner_tenant);
}

async fn invitations_are_limited_to_twenty_an_hour_per_tenant(b: Backend) {
    let app = TestApp::spawn_with(b, |s| s.rate_limits = "on".into()).await;
    for i in 0..20 {
        let r = app
            .post(
                "/invitations",
                &app.owner,
                json!({"email": format!("u{i}@example.com"), "role": "viewer"}),
            )
            .await;
        assert_eq!(r.status(), 201, "invitation {i}");
    }
    let r = app
        .post(
            "/invitations",
            &app.owner,
            json!({"email": "u20@example.com", "role": "viewer"}),
        )
        .await;
    assert!(r.headers().contains_key("retry-after"));
    assert_problem(r, 429, "rate_limited").await;
    // Another tenant has its own budget.
    let other = app.other_tenant().await;
    let r = app
        .post(
            "/invitations",
            &other,
            json!({"email": "x@example.org", "role": "viewer"}),
        )
        .await;
    assert_eq!(r.status(), 201);
}
