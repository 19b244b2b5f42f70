//! CONTRACT 1: every error is problem+json, including the framework's own rejections, and
//! a refused request changes nothing.

use crate::harness::*;
use reqwest::Method;
use serde_json::json;

crate::dual!(
    malformed_json_is_400_problem_json,
    wrong_content_type_is_415_problem_json,
    missing_and_mistyped_fields_are_422_naming_the_field,
    bodies_over_the_limit_are_413_problem_json,
    unknown_routes_and_methods_are_problem_json_with_the_request_id,
    malformed_ids_and_queries_are_400,
    refused_bodies_change_nothing_on_any_endpoint,
    unknown_fields_and_non_objects_are_422_with_every_field_in_one_answer,
);

/// CONTRACT 13: a typo never falls back to a default, every bad field comes in one answer,
/// and a body that is not an object is refused (an array created an enrolment token).
async fn unknown_fields_and_non_objects_are_422_with_every_field_in_one_answer(b: Backend) {
    let app = TestApp::spawn(b).await;
    let rules_before = app.count("SELECT COUNT(*) FROM alert_rules").await;
    let p = assert_problem(
        app.post(
            "/alert-rules",
            &app.owner,
            json!({"name": "busy", "metric": "cpu.percent", "operator": ">", "threshold": 90,
                "window": "5m", "severty": "critical"}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert!(names_field(&p, "severty"), "{p}");
    assert!(
        p["errors"][0]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("unknown field"),
        "{p}"
    );
    // Three missing fields and a wrong type: one answer names all four.
    let p = assert_problem(
        app.post("/alert-rules", &app.owner, json!({"threshold": "high"}))
            .await,
        422,
        "validation_failed",
    )
    .await;
    for f in ["name", "metric", "operator", "threshold"] {
        assert!(names_field(&p, f), "{f}: {p}");
    }
    assert_eq!(
        app.count("SELECT COUNT(*) FROM alert_rules").await,
        rules_before
    );
    let tokens_before = app.count("SELECT COUNT(*) FROM enrollment_tokens").await;
    for body in [json!([]), json!(3), json!("x"), json!(null)] {
        let p = assert_problem(
            app.post("/agents/enrollment-tokens", &app.owner, body.clone())
                .await,
            422,
            "validation_failed",
        )
        .await;
        assert!(names_field(&p, "."), "{body}: {p}");
    }
    assert_eq!(
        app.count("SELECT COUNT(*) FROM enrollment_tokens").await,
        tokens_before
    );
    // Unknown query parameters are refused too, naming the parameter.
    let r = app.get("/alerts?severty=critical", &app.owner).await;
    let p = assert_problem(r, 400, "bad_request").await;
    assert!(
        p["detail"].as_str().unwrap_or_default().contains("severty"),
        "{p}"
    );
}

async fn malformed_json_is_400_problem_json(b: Backend) {
    let app = TestApp::spawn(b).await;
    let resp = app
        .req(Method::POST, "/auth/login", &Auth::None)
        .header("content-type", "application/json")
        .body("{\"email\":")
        .send()
        .await
        .expect("r");
    let p = assert_problem(resp, 400, "bad_request").await;
    assert_eq!(p["type"], "urn:trusthub:problem:bad_request");
    let empty = app
        .req(Method::POST, "/auth/login", &Auth::None)
        .header("content-type", "application/json")
        .send()
        .await
        .expect("r");
    assert_problem(empty, 400, "bad_request").await;
}

async fn wrong_content_type_is_415_problem_json(b: Backend) {
    let app = TestApp::spawn(b).await;
    let resp = app
        .req(Method::POST, "/auth/login", &Auth::None)
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .await
        .expect("r");
    assert_problem(resp, 415, "unsupported_media_type").await;
    let none = app
        .req(Method::POST, "/api-tokens", &app.owner)
        .body("{}")
        .send()
        .await
        .expect("r");
    assert_problem(none, 415, "unsupported_media_type").await;
}

async fn missing_and_mistyped_fields_are_422_naming_the_field(b: Backend) {
    let app = TestApp::spawn(b).await;
    let p = assert_problem(
        app.post("/auth/login", &Auth::None, json!({"email": OWNER_EMAIL}))
            .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(p["errors"][0]["field"], "password");
    let p = assert_problem(
        app.post(
            "/auth/login",
            &Auth::None,
            json!({"email": 5, "password": "x"}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(p["errors"][0]["field"], "email");
    let p = assert_problem(
        app.post(
            "/api-tokens",
            &app.owner,
            json!({"name": "", "scope": "root"}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    let fields: Vec<_> = p["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| e["field"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(fields, vec!["name", "scope"]);
}

async fn bodies_over_the_limit_are_413_problem_json(b: Backend) {
    let app = TestApp::spawn_with(b, |s| s.body_limit_bytes = 1024).await;
    let big = format!("{{\"email\":\"{}\",\"password\":\"x\"}}", "a".repeat(4096));
    let resp = app
        .req(Method::POST, "/auth/login", &Auth::None)
        .header("content-type", "application/json")
        .body(big)
        .send()
        .await
        .expect("r");
    assert_problem(resp, 413, "payload_too_large").await;
}

async fn unknown_routes_and_methods_are_problem_json_with_the_request_id(b: Backend) {
    let app = TestApp::spawn(b).await;
    assert_problem(
        app.get("/no-such-thing", &app.owner).await,
        404,
        "not_found",
    )
    .await;
    assert_problem(app.get("//nowhere", &Auth::None).await, 404, "not_found").await;
    let resp = app
        .req(Method::PUT, "/auth/login", &Auth::None)
        .send()
        .await
        .expect("r");
    assert_problem(resp, 405, "method_not_allowed").await;
    // A request id sent by the caller is kept.
    let resp = app
        .req(Method::GET, "/me", &Auth::None)
        .header("x-request-id", "trace-123")
        .send()
        .await
        .expect("r");
    assert_eq!(resp.headers()["x-request-id"], "trace-123");
    let p = assert_problem(resp, 401, "unauthenticated").await;
    assert_eq!(p["request_id"], "trace-123");
}

async fn malformed_ids_and_queries_are_400(b: Backend) {
    let app = TestApp::spawn(b).await;
    assert_problem(
        app.delete("/users/not-a-uuid", &app.owner).await,
        400,
        "bad_request",
    )
    .await;
    assert_problem(
        app.get("/audit-log?limit=abc", &app.owner).await,
        400,
        "bad_request",
    )
    .await;
    assert_problem(
        app.get("/audit-log?limit=0", &app.owner).await,
        400,
        "bad_request",
    )
    .await;
    assert_problem(
        app.get("/audit-log?since=yesterday", &app.owner).await,
        400,
        "bad_request",
    )
    .await;
}

async fn refused_bodies_change_nothing_on_any_endpoint(b: Backend) {
    let app = TestApp::spawn(b).await;
    let (_, user_id) = app.user_with_role("viewer").await;
    let json_endpoints: Vec<(Method, String)> = vec![
        (Method::POST, "/auth/login".into()),
        (Method::POST, "/auth/forgot-password".into()),
        (Method::POST, "/auth/reset-password".into()),
        (Method::POST, "/auth/accept-invite".into()),
        (Method::POST, "/auth/totp/verify".into()),
        (Method::POST, "/auth/totp/disable".into()),
        (Method::POST, "/auth/totp/challenge".into()),
        (Method::POST, "/invitations".into()),
        (Method::POST, "/api-tokens".into()),
        (Method::PATCH, format!("/users/{user_id}")),
        (Method::POST, "/me/password".into()),
    ];
    let audit = app.audit_count().await;
    let tables = [
        "users",
        "api_tokens",
        "invitations",
        "sessions",
        "password_resets",
        "totp_challenges",
    ];
    let mut before = Vec::new();
    for t in tables {
        before.push(app.count(&format!("SELECT COUNT(*) FROM {t}")).await);
    }
    for (method, path) in &json_endpoints {
        let malformed = app
            .req(method.clone(), path, &app.owner)
            .header("content-type", "application/json")
            .body("{")
            .send()
            .await
            .expect("r");
        assert_problem(malformed, 400, "bad_request").await;
        let wrong_type = app
            .req(method.clone(), path, &app.owner)
            .header("content-type", "text/plain")
            .body("{}")
            .send()
            .await
            .expect("r");
        assert_problem(wrong_type, 415, "unsupported_media_type").await;
        let shape = app
            .send_json(method.clone(), path, &app.owner, json!([1, 2]))
            .await;
        assert_problem(shape, 422, "validation_failed").await;
    }
    assert_eq!(
        app.audit_count().await,
        audit,
        "no audit row: nothing happened"
    );
    for (i, t) in tables.iter().enumerate() {
        let now = app.count(&format!("SELECT COUNT(*) FROM {t}")).await;
        assert_eq!(now, before[i], "{t} unchanged");
    }
}
