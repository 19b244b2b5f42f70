//! CONTRACT 3: TOTP enrolment, login with a code, replay refusal, challenge tokens, and the
//! per-purpose proof extractor — which no API token can satisfy.

use crate::harness::*;
use reqwest::Method;
use serde_json::{Value, json};
use trusthub_core::totp;
use trusthub_hub::AppState;
use trusthub_hub::auth::{Admin, TotpProof, purpose};
use utoipa_axum::router::OpenApiRouter;

crate::dual!(
    totp_enrolment_then_login_needs_a_fresh_code_and_refuses_replays,
    totp_secret_is_sealed_at_rest,
    sensitive_route_accepts_a_code_or_a_purpose_token_exactly_once,
    api_tokens_never_satisfy_totp,
    totp_disable_needs_a_valid_code,
    recovery_codes_log_in_once_each_and_can_be_made_anew,
    five_wrong_codes_lock_every_totp_gated_action_and_are_audited,
);

/// A sensitive route as later issues will write it: admin role plus TOTP for `app_restart`.
#[utoipa::path(post, path = "/test/sensitive", responses((status = 200)))]
async fn sensitive(Admin(_): Admin, proof: TotpProof<purpose::AppRestart>) -> axum::Json<Value> {
    axum::Json(json!({"ok": true, "user": proof.principal.user.email}))
}

async fn app_with_sensitive_route(b: Backend) -> TestApp {
    let extra: OpenApiRouter<AppState> =
        OpenApiRouter::new().routes(utoipa_axum::routes!(sensitive));
    TestApp::spawn_full(b, |_| {}, extra).await
}

/// Enrols the owner; returns the raw secret.
async fn enrol(app: &TestApp, auth: &Auth, now: i64) -> Vec<u8> {
    let setup = body(
        app.req(Method::POST, "/auth/totp/setup", auth)
            .send()
            .await
            .expect("setup"),
    )
    .await;
    let b32 = setup["secret_base32"].as_str().expect("secret");
    assert!(
        setup["otpauth_uri"]
            .as_str()
            .is_some_and(|u| u.starts_with("otpauth://totp/Trusthub:") && u.contains(b32))
    );
    let secret = totp::secret_from_base32(b32).expect("base32");
    let resp = app
        .post(
            "/auth/totp/verify",
            auth,
            json!({"code": totp::code_at(&secret, now)}),
        )
        .await;
    assert_eq!(resp.status(), 200);
    assert_eq!(body(resp).await["totp_enabled"], true);
    secret
}

fn login_body(code: Option<String>) -> Value {
    match code {
        Some(c) => json!({"email": OWNER_EMAIL, "password": OWNER_PASSWORD, "totp_code": c}),
        None => json!({"email": OWNER_EMAIL, "password": OWNER_PASSWORD}),
    }
}

async fn totp_enrolment_then_login_needs_a_fresh_code_and_refuses_replays(b: Backend) {
    let app = TestApp::spawn(b).await;
    let now = fresh_totp_window().await;
    let secret = enrol(&app, &app.owner, now).await;
    assert_problem(
        app.post("/auth/login", &Auth::None, login_body(None)).await,
        401,
        "totp_required",
    )
    .await;
    assert_problem(
        app.post(
            "/auth/login",
            &Auth::None,
            login_body(Some("000000".into())),
        )
        .await,
        401,
        "totp_invalid",
    )
    .await;
    // The current step's code was spent by verify: refused as a replay.
    let replay = app
        .post(
            "/auth/login",
            &Auth::None,
            login_body(Some(totp::code_at(&secret, now))),
        )
        .await;
    assert_problem(replay, 401, "totp_invalid").await;
    // The next step's code (within the ±1 step window) works once.
    let next = totp::code_at(&secret, now + 30);
    let ok = app
        .post("/auth/login", &Auth::None, login_body(Some(next.clone())))
        .await;
    assert_eq!(ok.status(), 200);
    assert_eq!(body(ok).await["user"]["totp_enabled"], true);
    assert_problem(
        app.post("/auth/login", &Auth::None, login_body(Some(next)))
            .await,
        401,
        "totp_invalid",
    )
    .await;
    // A second setup while enabled is a conflict.
    assert_problem(
        app.req(Method::POST, "/auth/totp/setup", &app.owner)
            .send()
            .await
            .expect("r"),
        409,
        "conflict",
    )
    .await;
}

async fn totp_secret_is_sealed_at_rest(b: Backend) {
    let app = TestApp::spawn(b).await;
    let now = fresh_totp_window().await;
    let secret = enrol(&app, &app.owner, now).await;
    let sealed: Vec<u8> = match &app.db {
        trusthub_store::Db::Sqlite { read, .. } => {
            sqlx::query_scalar("SELECT totp_secret_sealed FROM users WHERE totp_enabled = TRUE")
                .fetch_one(read)
                .await
                .expect("q")
        }
        trusthub_store::Db::Postgres(p) => {
            sqlx::query_scalar("SELECT totp_secret_sealed FROM users WHERE totp_enabled = TRUE")
                .fetch_one(p)
                .await
                .expect("q")
        }
    };
    assert!(sealed.len() >= secret.len() + 28);
    assert!(
        !sealed.windows(secret.len()).any(|w| w == secret.as_slice()),
        "raw secret not stored"
    );
    let b32 = totp::secret_base32(&secret);
    assert!(!String::from_utf8_lossy(&sealed).contains(&b32));
}

async fn sensitive_route_accepts_a_code_or_a_purpose_token_exactly_once(b: Backend) {
    let app = app_with_sensitive_route(b).await;
    let call = |auth: Auth, header: Option<(&'static str, String)>| {
        let mut r = app.req(Method::POST, "/test/sensitive", &auth);
        if let Some((k, v)) = header {
            r = r.header(k, v);
        }
        r.send()
    };
    // Without TOTP enrolled: totp_not_enrolled.
    assert_problem(
        call(app.owner.clone(), None).await.expect("r"),
        403,
        "totp_not_enrolled",
    )
    .await;
    let now = fresh_totp_window().await;
    let secret = enrol(&app, &app.owner, now).await;
    assert_problem(
        call(app.owner.clone(), None).await.expect("r"),
        403,
        "totp_required",
    )
    .await;
    assert_problem(
        call(app.owner.clone(), Some(("x-totp-code", "123".into())))
            .await
            .expect("r"),
        403,
        "totp_invalid",
    )
    .await;
    let code = totp::code_at(&secret, now + 30);
    let ok = call(app.owner.clone(), Some(("x-totp-code", code.clone())))
        .await
        .expect("r");
    assert_eq!(ok.status(), 200);
    assert_problem(
        call(app.owner.clone(), Some(("x-totp-code", code)))
            .await
            .expect("r"),
        403,
        "totp_invalid",
    )
    .await;

    // A challenge token for another purpose does not open app_restart.
    let c = app
        .post(
            "/auth/totp/challenge",
            &app.owner,
            json!({"code": totp::code_at(&secret, now - 30), "purpose": "console_start"}),
        )
        .await;
    assert_eq!(c.status(), 201);
    let wrong_purpose = body(c).await["totp_token"].as_str().expect("t").to_owned();
    assert_problem(
        call(app.owner.clone(), Some(("x-totp-token", wrong_purpose)))
            .await
            .expect("r"),
        403,
        "totp_invalid",
    )
    .await;

    // Codes of every step in the window are now spent; wait for the next step.
    tokio::time::sleep(std::time::Duration::from_secs(
        (30 - now.rem_euclid(30) + 1) as u64,
    ))
    .await;
    let later = fresh_totp_window().await;
    let c = app
        .post(
            "/auth/totp/challenge",
            &app.owner,
            json!({"code": totp::code_at(&secret, later + 30), "purpose": "app_restart"}),
        )
        .await;
    let c = body(c).await;
    assert_eq!(c["purpose"], "app_restart");
    let token = c["totp_token"].as_str().expect("t").to_owned();
    let ok = call(app.owner.clone(), Some(("x-totp-token", token.clone())))
        .await
        .expect("r");
    assert_eq!(ok.status(), 200);
    assert_problem(
        call(app.owner.clone(), Some(("x-totp-token", token)))
            .await
            .expect("r"),
        403,
        "totp_invalid",
    )
    .await;

    // Unknown purposes are 422; a viewer is stopped by the role before TOTP is looked at.
    let bad = app
        .post(
            "/auth/totp/challenge",
            &app.owner,
            json!({"code": "000000", "purpose": "anything"}),
        )
        .await;
    assert_problem(bad, 422, "validation_failed").await;
    let (viewer, _) = app.user_with_role("viewer").await;
    assert_problem(call(viewer, None).await.expect("r"), 403, "forbidden").await;
    assert_problem(
        call(Auth::None, None).await.expect("r"),
        401,
        "unauthenticated",
    )
    .await;
}

async fn api_tokens_never_satisfy_totp(b: Backend) {
    let app = app_with_sensitive_route(b).await;
    let now = fresh_totp_window().await;
    let secret = enrol(&app, &app.owner, now).await;
    let (token, _) = app.token(&app.owner, "write").await;
    let resp = app
        .req(
            Method::POST,
            "/test/sensitive",
            &Auth::Bearer(token.clone()),
        )
        .header("x-totp-code", totp::code_at(&secret, now + 30))
        .send()
        .await
        .expect("r");
    assert_problem(resp, 403, "totp_required").await;
    // Nor can a token ask for a challenge or manage TOTP.
    let c = app
        .post(
            "/auth/totp/challenge",
            &Auth::Bearer(token.clone()),
            json!({"code": totp::code_at(&secret, now - 30), "purpose": "app_restart"}),
        )
        .await;
    assert_problem(c, 403, "forbidden").await;
    assert_problem(
        app.req(Method::POST, "/auth/totp/setup", &Auth::Bearer(token))
            .send()
            .await
            .expect("r"),
        403,
        "forbidden",
    )
    .await;
}

async fn totp_disable_needs_a_valid_code(b: Backend) {
    let app = TestApp::spawn(b).await;
    assert_problem(
        app.post("/auth/totp/disable", &app.owner, json!({"code": "123456"}))
            .await,
        403,
        "totp_not_enrolled",
    )
    .await;
    assert_problem(
        app.post("/auth/totp/verify", &app.owner, json!({"code": "123456"}))
            .await,
        409,
        "conflict",
    )
    .await;
    let now = fresh_totp_window().await;
    let secret = enrol(&app, &app.owner, now).await;
    assert_problem(
        app.post("/auth/totp/disable", &app.owner, json!({"code": "000000"}))
            .await,
        403,
        "totp_invalid",
    )
    .await;
    let off = app
        .post(
            "/auth/totp/disable",
            &app.owner,
            json!({"code": totp::code_at(&secret, now + 30)}),
        )
        .await;
    assert_eq!(off.status(), 200);
    assert_eq!(body(off).await["totp_enabled"], false);
    app.login(OWNER_EMAIL, OWNER_PASSWORD).await;
    let log = body(app.get("/audit-log", &app.owner).await).await;
    let kinds: Vec<&str> = log
        .as_array()
        .expect("a")
        .iter()
        .filter_map(|e| e["event_type"].as_str())
        .collect();
    assert!(kinds.contains(&"totp_enabled") && kinds.contains(&"totp_disabled"));
}

/// Ten recovery codes come with enrolment, shown once and stored hashed; each logs in once in
/// place of a TOTP code (however it is typed); new ones void the old; disabling TOTP removes
/// them. Every use is in the audit log.
async fn recovery_codes_log_in_once_each_and_can_be_made_anew(b: Backend) {
    let app = TestApp::spawn(b).await;
    let now = fresh_totp_window().await;
    let setup = body(
        app.req(Method::POST, "/auth/totp/setup", &app.owner)
            .send()
            .await
            .expect("setup"),
    )
    .await;
    let secret =
        totp::secret_from_base32(setup["secret_base32"].as_str().expect("b32")).expect("base32");
    let r = app
        .post(
            "/auth/totp/verify",
            &app.owner,
            json!({"code": totp::code_at(&secret, now)}),
        )
        .await;
    let enabled = body(r).await;
    let codes: Vec<String> = enabled["recovery_codes"]
        .as_array()
        .expect("codes")
        .iter()
        .map(|c| c.as_str().expect("str").to_owned())
        .collect();
    assert_eq!(codes.len(), 10);
    let unique: std::collections::HashSet<&String> = codes.iter().collect();
    assert_eq!(unique.len(), 10);
    // Stored hashed: no code appears in the table.
    for c in &codes {
        let plain = c.replace('-', "");
        assert_eq!(
            app.count(&format!(
                "SELECT COUNT(*) FROM totp_recovery_codes WHERE code_hash IN ('{c}', '{plain}')"
            ))
            .await,
            0
        );
    }
    assert_eq!(
        app.count("SELECT COUNT(*) FROM totp_recovery_codes").await,
        10
    );

    // A code logs in once, typed in capitals without dashes too.
    let typed = codes[0].replace('-', "").to_uppercase();
    let r = app
        .post("/auth/login", &Auth::None, login_body(Some(typed.clone())))
        .await;
    assert_eq!(r.status(), 200);
    assert_problem(
        app.post(
            "/auth/login",
            &Auth::None,
            login_body(Some(codes[0].clone())),
        )
        .await,
        401,
        "totp_invalid",
    )
    .await;
    assert_problem(
        app.post(
            "/auth/login",
            &Auth::None,
            login_body(Some("aaaa-bbbb-cccc-dddd".into())),
        )
        .await,
        401,
        "totp_invalid",
    )
    .await;
    assert_eq!(
        app.count("SELECT COUNT(*) FROM audit_log WHERE event_type = 'totp_recovery_code_used'")
            .await,
        1
    );

    // New codes need a current TOTP code and void the old ones.
    assert_problem(
        app.post(
            "/auth/totp/recovery-codes",
            &app.owner,
            json!({"code": "000000"}),
        )
        .await,
        403,
        "totp_invalid",
    )
    .await;
    let r = app
        .post(
            "/auth/totp/recovery-codes",
            &app.owner,
            json!({"code": totp::code_at(&secret, now + 30)}),
        )
        .await;
    assert_eq!(r.status(), 200);
    let fresh: Vec<String> = body(r).await["recovery_codes"]
        .as_array()
        .expect("codes")
        .iter()
        .map(|c| c.as_str().expect("str").to_owned())
        .collect();
    assert_eq!(fresh.len(), 10);
    assert_problem(
        app.post(
            "/auth/login",
            &Auth::None,
            login_body(Some(codes[1].clone())),
        )
        .await,
        401,
        "totp_invalid",
    )
    .await;
    let r = app
        .post(
            "/auth/login",
            &Auth::None,
            login_body(Some(fresh[9].clone())),
        )
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        app.count(
            "SELECT COUNT(*) FROM audit_log WHERE event_type = 'totp_recovery_codes_created'"
        )
        .await,
        2
    );
    // Disabling TOTP removes them.
    let r = app
        .post(
            "/auth/totp/disable",
            &app.owner,
            json!({"code": totp::code_at(&secret, now - 30)}),
        )
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM totp_recovery_codes").await,
        0
    );
}

/// CONTRACT 18: five wrong codes (header, form or challenge) within 15 minutes lock every
/// TOTP-gated action of that user for 15 minutes, rate limits off or not; each wrong code and
/// the lock are audited. Before, codes could be tried without end.
async fn five_wrong_codes_lock_every_totp_gated_action_and_are_audited(b: Backend) {
    let app = app_with_sensitive_route(b).await;
    let now = fresh_totp_window().await;
    let secret = enrol(&app, &app.owner, now).await;
    let wrong = (1..)
        .map(|h| totp::code_at(&secret, now + 3600 * h))
        .find(|c| (-2..=2).all(|k| *c != totp::code_at(&secret, now + 30 * k)))
        .expect("a wrong code");
    let sensitive = |code: String| {
        app.req(Method::POST, "/test/sensitive", &app.owner)
            .header("x-totp-code", code)
            .send()
    };
    for _ in 0..3 {
        assert_problem(
            sensitive(wrong.clone()).await.expect("r"),
            403,
            "totp_invalid",
        )
        .await;
    }
    // A wrong challenge token counts too.
    assert_problem(
        app.req(Method::POST, "/test/sensitive", &app.owner)
            .header("x-totp-token", "tho_not_a_token")
            .send()
            .await
            .expect("r"),
        403,
        "totp_invalid",
    )
    .await;
    // The fifth, on another gated action, answers totp_invalid itself and sets the lock.
    assert_problem(
        app.post("/auth/totp/disable", &app.owner, json!({"code": wrong}))
            .await,
        403,
        "totp_invalid",
    )
    .await;
    // Now even the right code is refused everywhere, with Retry-After.
    // (the code of the next step: enrolment spent the current one)
    let right = totp::code_at(&secret, now + 30);
    let r = sensitive(right.clone()).await.expect("r");
    let retry: i64 = r
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .expect("retry-after");
    assert!((880..=900).contains(&retry), "{retry}");
    assert_problem(r, 429, "totp_locked").await;
    for (path, code) in [
        ("/auth/totp/recovery-codes", right.clone()),
        ("/auth/totp/disable", right.clone()),
    ] {
        assert_problem(
            app.post(path, &app.owner, json!({"code": code})).await,
            429,
            "totp_locked",
        )
        .await;
    }
    assert_problem(
        app.post(
            "/auth/totp/challenge",
            &app.owner,
            json!({"code": right, "purpose": "app_restart"}),
        )
        .await,
        429,
        "totp_locked",
    )
    .await;
    let failed = body(
        app.get("/audit-log?event_type=totp_failed", &app.owner)
            .await,
    )
    .await;
    assert_eq!(failed.as_array().map(Vec::len), Some(5), "{failed}");
    let locked = body(
        app.get("/audit-log?event_type=totp_locked", &app.owner)
            .await,
    )
    .await;
    assert_eq!(locked.as_array().map(Vec::len), Some(1), "{locked}");
    // Once the lock has passed, the right code works again.
    app.execute("UPDATE totp_failures SET locked_until = '2000-01-01T00:00:00Z'")
        .await;
    let ok = sensitive(right).await.expect("r");
    assert_eq!(ok.status(), 200);
}
