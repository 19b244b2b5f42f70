//! Login, logout, sessions, lockout, password reset (CONTRACT 2; SPEC 8).

use crate::harness::*;
use reqwest::Method;
use serde_json::json;

crate::dual!(
    login_sets_an_httponly_session_cookie_and_me_answers,
    wrong_password_and_unknown_email_are_both_401_without_a_session,
    logout_revokes_the_session_at_once,
    login_is_locked_after_ten_attempts_a_minute_with_rate_limit_headers,
    rate_limits_can_be_switched_off,
    password_reset_by_mail_changes_the_password_and_ends_every_session,
    forgot_password_answers_202_for_unknown_emails_and_sends_nothing,
    reset_token_works_once_and_bad_passwords_change_nothing,
    changing_ones_password_needs_the_current_one_and_ends_sessions,
    data_survives_a_restart_of_the_hub,
);

async fn login_sets_an_httponly_session_cookie_and_me_answers(b: Backend) {
    let app = TestApp::spawn(b).await;
    let resp = app
        .post(
            "/auth/login",
            &Auth::None,
            json!({"email": "Owner@Example.com ", "password": OWNER_PASSWORD}),
        )
        .await;
    assert_eq!(resp.status(), 200);
    let cookie = resp
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"),
        "{cookie}"
    );
    let session = session_of(&resp);
    let user = body(resp).await;
    assert_eq!(user["user"]["email"], OWNER_EMAIL);
    assert_eq!(user["user"]["role"], "owner");
    assert_eq!(user["user"]["totp_enabled"], false);
    let me = body(app.get("/me", &session).await).await;
    assert_eq!(me["user"]["id"], user["user"]["id"]);
    assert_eq!(me["tenant"]["name"], "default");
    assert_eq!(me["auth"], "session");
    // The session token is stored hashed, never as sent.
    let Auth::Cookie(raw) = &session else {
        panic!()
    };
    let stored = app.count("SELECT COUNT(*) FROM sessions").await;
    assert!(stored >= 2);
    let leaked: i64 = match &app.db {
        trusthub_store::Db::Sqlite { read, .. } => {
            sqlx::query_scalar("SELECT COUNT(*) FROM sessions WHERE token_hash = $1")
                .bind(raw)
                .fetch_one(read)
                .await
                .expect("q")
        }
        trusthub_store::Db::Postgres(p) => {
            sqlx::query_scalar("SELECT COUNT(*) FROM sessions WHERE token_hash = $1")
                .bind(raw)
                .fetch_one(p)
                .await
                .expect("q")
        }
    };
    assert_eq!(leaked, 0);
}

async fn wrong_password_and_unknown_email_are_both_401_without_a_session(b: Backend) {
    let app = TestApp::spawn(b).await;
    let before = app.count("SELECT COUNT(*) FROM sessions").await;
    for body in [
        json!({"email": OWNER_EMAIL, "password": "not the password"}),
        json!({"email": "nobody@example.com", "password": OWNER_PASSWORD}),
    ] {
        let resp = app.post("/auth/login", &Auth::None, body).await;
        assert!(resp.headers().get("set-cookie").is_none());
        assert_problem(resp, 401, "unauthenticated").await;
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM sessions").await, before);
    assert_problem(app.get("/me", &Auth::None).await, 401, "unauthenticated").await;
    assert_problem(
        app.get("/me", &Auth::Cookie("ths_forged".into())).await,
        401,
        "unauthenticated",
    )
    .await;
    assert_problem(
        app.get("/me", &Auth::Bearer("tht_forged".into())).await,
        401,
        "unauthenticated",
    )
    .await;
}

async fn logout_revokes_the_session_at_once(b: Backend) {
    let app = TestApp::spawn(b).await;
    let s = app.login(OWNER_EMAIL, OWNER_PASSWORD).await;
    assert_eq!(app.get("/me", &s).await.status(), 200);
    let resp = app
        .req(Method::POST, "/auth/logout", &s)
        .send()
        .await
        .expect("logout");
    assert_eq!(resp.status(), 204);
    assert!(
        resp.headers()
            .get("set-cookie")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| c.contains("Max-Age=0"))
    );
    assert_problem(app.get("/me", &s).await, 401, "unauthenticated").await;
    // The other session of the same user is untouched.
    assert_eq!(app.get("/me", &app.owner).await.status(), 200);
    assert_problem(
        app.req(Method::POST, "/auth/logout", &Auth::None)
            .send()
            .await
            .expect("r"),
        401,
        "unauthenticated",
    )
    .await;
}

async fn login_is_locked_after_ten_attempts_a_minute_with_rate_limit_headers(b: Backend) {
    fresh_minute().await;
    let app = TestApp::spawn_with(b, |s| s.rate_limits = "on".into()).await;
    // The harness's own owner login was attempt 1 of 10 in this minute (unless the window
    // turned over since); spend the rest on wrong passwords.
    let mut refused = None;
    for _ in 0..11 {
        let resp = app
            .post(
                "/auth/login",
                &Auth::None,
                json!({"email": OWNER_EMAIL, "password": "wrong password"}),
            )
            .await;
        if resp.status() == 429 {
            refused = Some(resp);
            break;
        }
        assert_eq!(resp.status(), 401);
    }
    let resp = refused.expect("the 11th attempt within a minute is refused");
    let retry: u64 = resp.headers()["retry-after"]
        .to_str()
        .expect("h")
        .parse()
        .expect("n");
    assert!((1..=60).contains(&retry));
    assert_eq!(resp.headers()["ratelimit-limit"], "10");
    assert_eq!(resp.headers()["ratelimit-remaining"], "0");
    assert!(resp.headers().contains_key("ratelimit-reset"));
    assert_problem(resp, 429, "rate_limited").await;
    // Even the right password is refused while locked.
    let right = app
        .post(
            "/auth/login",
            &Auth::None,
            json!({"email": OWNER_EMAIL, "password": OWNER_PASSWORD}),
        )
        .await;
    assert_problem(right, 429, "rate_limited").await;
    // Other endpoints carry the general limit's headers.
    let me = app.get("/me", &app.owner).await;
    assert_eq!(me.headers()["ratelimit-limit"], "1000");
}

async fn rate_limits_can_be_switched_off(b: Backend) {
    let app = TestApp::spawn(b).await; // the harness sets TRUSTHUB_RATE_LIMITS=off
    for _ in 0..15 {
        let resp = app
            .post(
                "/auth/login",
                &Auth::None,
                json!({"email": OWNER_EMAIL, "password": "wrong password"}),
            )
            .await;
        assert_eq!(resp.status(), 401);
    }
    assert!(
        app.get("/me", &app.owner)
            .await
            .headers()
            .get("ratelimit-limit")
            .is_none()
    );
}

async fn password_reset_by_mail_changes_the_password_and_ends_every_session(b: Backend) {
    let sink = SmtpSink::start().await;
    let url = sink.url();
    let app = TestApp::spawn_with(b, |s| s.smtp_url = Some(url)).await;
    let other_session = app.login(OWNER_EMAIL, OWNER_PASSWORD).await;
    let resp = app
        .post(
            "/auth/forgot-password",
            &Auth::None,
            json!({"email": OWNER_EMAIL}),
        )
        .await;
    assert_eq!(resp.status(), 202);
    let mail = sink.wait_for(OWNER_EMAIL).await;
    assert!(mail.data.contains("Reset your Trusthub password"));
    let token = mail.token();
    assert!(token.starts_with("tho_"));
    let resp = app
        .post(
            "/auth/reset-password",
            &Auth::None,
            json!({"token": token, "password": "a brand new password"}),
        )
        .await;
    assert_eq!(resp.status(), 204);
    assert_problem(app.get("/me", &app.owner).await, 401, "unauthenticated").await;
    assert_problem(app.get("/me", &other_session).await, 401, "unauthenticated").await;
    let old = app
        .post(
            "/auth/login",
            &Auth::None,
            json!({"email": OWNER_EMAIL, "password": OWNER_PASSWORD}),
        )
        .await;
    assert_problem(old, 401, "unauthenticated").await;
    let s = app.login(OWNER_EMAIL, "a brand new password").await;
    let log = body(app.get("/audit-log?event_type=password_reset", &s).await).await;
    assert_eq!(log.as_array().map(Vec::len), Some(1));
    assert_eq!(log[0]["details"]["via"], "token");
}

async fn forgot_password_answers_202_for_unknown_emails_and_sends_nothing(b: Backend) {
    let sink = SmtpSink::start().await;
    let url = sink.url();
    let app = TestApp::spawn_with(b, |s| s.smtp_url = Some(url)).await;
    let resp = app
        .post(
            "/auth/forgot-password",
            &Auth::None,
            json!({"email": "ghost@example.com"}),
        )
        .await;
    assert_eq!(resp.status(), 202);
    assert_eq!(body(resp).await["accepted"], true);
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(sink.count_to("ghost@example.com"), 0);
    assert_eq!(app.count("SELECT COUNT(*) FROM password_resets").await, 0);
}

async fn reset_token_works_once_and_bad_passwords_change_nothing(b: Backend) {
    let sink = SmtpSink::start().await;
    let url = sink.url();
    let app = TestApp::spawn_with(b, |s| s.smtp_url = Some(url)).await;
    app.post(
        "/auth/forgot-password",
        &Auth::None,
        json!({"email": OWNER_EMAIL}),
    )
    .await;
    let token = sink.wait_for(OWNER_EMAIL).await.token();
    let short = app
        .post(
            "/auth/reset-password",
            &Auth::None,
            json!({"token": token, "password": "short"}),
        )
        .await;
    let p = assert_problem(short, 422, "validation_failed").await;
    assert_eq!(p["errors"][0]["field"], "password");
    // The token survived the refused attempt, and the old password still works.
    assert_eq!(app.get("/me", &app.owner).await.status(), 200);
    let ok = app
        .post(
            "/auth/reset-password",
            &Auth::None,
            json!({"token": token, "password": "long enough now"}),
        )
        .await;
    assert_eq!(ok.status(), 204);
    let again = app
        .post(
            "/auth/reset-password",
            &Auth::None,
            json!({"token": token, "password": "another password"}),
        )
        .await;
    assert_problem(again, 422, "validation_failed").await;
    app.login(OWNER_EMAIL, "long enough now").await;
    let forged = app
        .post(
            "/auth/reset-password",
            &Auth::None,
            json!({"token": "tho_forged", "password": "long enough now"}),
        )
        .await;
    assert_problem(forged, 422, "validation_failed").await;
}

async fn changing_ones_password_needs_the_current_one_and_ends_sessions(b: Backend) {
    let app = TestApp::spawn(b).await;
    let wrong = app
        .post(
            "/me/password",
            &app.owner,
            json!({"current_password": "nope nope", "new_password": "new password 1"}),
        )
        .await;
    assert_problem(wrong, 403, "forbidden").await;
    assert_eq!(app.get("/me", &app.owner).await.status(), 200);
    let ok = app
        .post(
            "/me/password",
            &app.owner,
            json!({"current_password": OWNER_PASSWORD, "new_password": "new password 1"}),
        )
        .await;
    assert_eq!(ok.status(), 204);
    assert_problem(app.get("/me", &app.owner).await, 401, "unauthenticated").await;
    app.login(OWNER_EMAIL, "new password 1").await;
}

async fn data_survives_a_restart_of_the_hub(b: Backend) {
    let dir = TempDir::new();
    let (settings, pg_db) = TestApp::settings(b, &dir).await;
    let start = |s: trusthub_hub::Settings| async move {
        let server = trusthub_hub::Server::build(s).await.expect("start");
        let addr = server.local_addr();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let handle = tokio::spawn(server.run(async move {
            let _ = rx.await;
        }));
        (format!("http://{addr}/api/v1"), tx, handle)
    };
    let client = http_client();
    let (base, stop, handle) = start(settings.clone()).await;
    let login = client
        .post(format!("{base}/auth/login"))
        .json(&json!({"email": OWNER_EMAIL, "password": OWNER_PASSWORD}))
        .send()
        .await
        .expect("login");
    let Auth::Cookie(cookie) = session_of(&login) else {
        panic!()
    };
    let tok = client
        .post(format!("{base}/api-tokens"))
        .header("cookie", format!("trusthub_session={cookie}"))
        .json(&json!({"name": "persist", "scope": "read"}))
        .send()
        .await
        .expect("token");
    let token = body(tok).await["token"].as_str().expect("t").to_owned();
    let _ = stop.send(());
    handle.await.expect("join").expect("clean stop");
    // Same data dir / database, new process state: session, token and users are all there.
    let (base, stop, handle) = start(settings).await;
    let me = client
        .get(format!("{base}/me"))
        .bearer_auth(&token)
        .send()
        .await
        .expect("me");
    assert_eq!(me.status(), 200);
    let me = client
        .get(format!("{base}/me"))
        .header("cookie", format!("trusthub_session={cookie}"))
        .send()
        .await
        .expect("me");
    assert_eq!(me.status(), 200);
    let resp = client
        .get(format!("{base}/users"))
        .header("cookie", format!("trusthub_session={cookie}"))
        .send()
        .await
        .expect("users");
    let users = body(resp).await;
    assert_eq!(
        users.as_array().map(Vec::len),
        Some(1),
        "the restart created no second owner"
    );
    let _ = stop.send(());
    handle.await.expect("join").expect("clean stop");
    if let Some(name) = pg_db {
        drop_pg_database(name);
    }
}
