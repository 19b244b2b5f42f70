//! CONTRACT 10 audit log: admin-only, newest first, filterable, append-only.

use crate::harness::*;
use serde_json::json;

crate::dual!(
    security_events_are_logged_newest_first_and_filterable,
    the_database_refuses_to_change_or_delete_audit_rows,
    audit_log_is_per_tenant,
);

async fn security_events_are_logged_newest_first_and_filterable(b: Backend) {
    let app = TestApp::spawn(b).await;
    let (token, id) = app.token(&app.owner, "read").await;
    app.delete(&format!("/api-tokens/{id}"), &app.owner).await;
    let _ = token;
    let log = body(app.get("/audit-log", &app.owner).await).await;
    let rows = log.as_array().expect("array");
    let kinds: Vec<&str> = rows
        .iter()
        .filter_map(|r| r["event_type"].as_str())
        .collect();
    assert_eq!(
        &kinds[..3],
        &["api_token_deleted", "api_token_created", "login_succeeded"]
    );
    assert!(kinds.contains(&"tenant_created"));
    let ids: Vec<i64> = rows.iter().filter_map(|r| r["id"].as_i64()).collect();
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "newest first");
    assert!(
        rows[0]["actor"]
            .as_str()
            .is_some_and(|a| a.starts_with("user:"))
    );
    assert_eq!(rows[0]["subject"], format!("api_token:{id}"));
    // Names for people (CONTRACT 27): the actor by email; a deleted subject has none.
    assert_eq!(rows[0]["actor_name"], OWNER_EMAIL);
    assert!(rows[0]["subject_name"].is_null(), "{}", rows[0]);
    assert!(
        rows[0]["actor"]
            .as_str()
            .is_some_and(|a| a.starts_with("user:"))
    );
    assert!(rows[0]["request_id"].is_string() && rows[0]["created_at"].is_string());
    let only = body(
        app.get("/audit-log?event_type=api_token_created", &app.owner)
            .await,
    )
    .await;
    assert_eq!(only.as_array().map(Vec::len), Some(1));
    let page = body(app.get("/audit-log?limit=2", &app.owner).await).await;
    assert_eq!(page.as_array().map(Vec::len), Some(2));
    let next = body(
        app.get(
            &format!("/audit-log?limit=2&before_id={}", page[1]["id"]),
            &app.owner,
        )
        .await,
    )
    .await;
    assert_eq!(next[0]["id"].as_i64(), Some(ids[2]));
    // A subject that exists is named: the token kept, by its name.
    let (_kept, kept_id) = app.token(&app.owner, "read").await;
    let tokens = body(app.get("/api-tokens", &app.owner).await).await;
    let kept_name = tokens
        .as_array()
        .and_then(|t| t.iter().find(|t| t["id"] == json!(kept_id)))
        .map(|t| t["name"].clone())
        .expect("kept token listed");
    let newest = body(app.get("/audit-log?limit=1", &app.owner).await).await;
    assert_eq!(newest[0]["subject"], format!("api_token:{kept_id}"));
    assert_eq!(newest[0]["subject_name"], kept_name);
    let future = body(
        app.get("/audit-log?since=2999-01-01T00:00:00Z", &app.owner)
            .await,
    )
    .await;
    assert_eq!(future.as_array().map(Vec::len), Some(0));
    // Never a secret in the details.
    let text = log.to_string();
    assert!(!text.contains("tht_") && !text.contains(OWNER_PASSWORD));
}

async fn the_database_refuses_to_change_or_delete_audit_rows(b: Backend) {
    let app = TestApp::spawn(b).await;
    let before = app.audit_count().await;
    assert!(before > 0);
    let (upd, del) = match &app.db {
        trusthub_store::Db::Sqlite { write, .. } => (
            sqlx::query("UPDATE audit_log SET actor = 'forged'")
                .execute(write)
                .await
                .is_err(),
            sqlx::query("DELETE FROM audit_log")
                .execute(write)
                .await
                .is_err(),
        ),
        trusthub_store::Db::Postgres(p) => (
            sqlx::query("UPDATE audit_log SET actor = 'forged'")
                .execute(p)
                .await
                .is_err(),
            sqlx::query("DELETE FROM audit_log")
                .execute(p)
                .await
                .is_err(),
        ),
    };
    assert!(upd && del, "append-only");
    assert_eq!(app.audit_count().await, before);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM audit_log WHERE actor = 'forged'")
            .await,
        0
    );
}

async fn audit_log_is_per_tenant(b: Backend) {
    let app = TestApp::spawn(b).await;
    let other = app.other_tenant().await;
    app.post(
        "/api-tokens",
        &app.owner,
        json!({"name": "mine", "scope": "read"}),
    )
    .await;
    let theirs = body(app.get("/audit-log", &other).await).await;
    assert!(
        theirs
            .as_array()
            .expect("a")
            .iter()
            .all(|r| r["event_type"] != "api_token_created")
    );
}
