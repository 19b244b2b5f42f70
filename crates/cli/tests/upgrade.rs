//! Upgrades (CONTRACT 31): databases an earlier release wrote — one per engine, made once by
//! `scripts/make-upgrade-fixture.sh` with that release's binary and kept in
//! `tests/fixtures/upgrade/<schema>/` — are opened by today's hub, which migrates them
//! forward and serves what they held: the owner signs in with the same password, the token
//! still works, the webhook is there.

mod common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/upgrade");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("the upgrade fixtures")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("fixture.json").exists())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no fixture in {}", root.display());
    dirs
}

/// What a hub migrated from a fixture must serve.
async fn serves_the_fixture(hub: &Hub, f: &Value, token: &str) {
    let http = reqwest::Client::new();
    let root = hub.base.trim_end_matches("/api/v1");
    let ready: Value = http
        .get(format!("{root}/ready"))
        .send()
        .await
        .expect("ready")
        .json()
        .await
        .expect("json");
    assert_eq!(ready["status"], "ready", "{ready}");
    assert!(
        ready["schema_version"].as_i64() > f["schema"].as_i64(),
        "migrated forward from {}: {ready}",
        f["schema"]
    );
    let password = f["password"].as_str().expect("password");
    let r = login(&http, &hub.base, "admin@trusthub.local", password).await;
    assert_eq!(r.status(), 200, "the same password signs in");
    let session = cookie(&r);
    let me: Value = http
        .get(format!("{}/me", hub.base))
        .bearer_auth(token)
        .send()
        .await
        .expect("me")
        .json()
        .await
        .expect("json");
    assert_eq!(me["user"]["email"], "admin@trusthub.local", "{me}");
    let hooks: Value = http
        .get(format!("{}/webhooks", hub.base))
        .header("cookie", &session)
        .send()
        .await
        .expect("webhooks")
        .json()
        .await
        .expect("json");
    let url = f["webhook"].as_str().expect("webhook");
    assert!(hooks.to_string().contains(url), "{hooks}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn databases_of_an_earlier_release_migrate_forward_and_serve() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    for fixture in fixtures() {
        let f: Value = serde_json::from_str(
            &std::fs::read_to_string(fixture.join("fixture.json")).expect("fixture.json"),
        )
        .expect("json");
        let key = f["key"].as_str().expect("key").to_owned();

        // SQLite: the data dir as the older hub left it.
        let dir = TempDir::new();
        let data = dir.0.join("data");
        std::fs::create_dir_all(&data).expect("data");
        std::fs::copy(fixture.join("sqlite.db"), data.join("trusthub.db")).expect("copy");
        let hub = Hub::start(&data, &[("CLOUD_ENCRYPTION_KEY", key.as_str())]);
        serves_the_fixture(&hub, &f, f["sqlite_token"].as_str().expect("token")).await;
        drop(hub);

        // PostgreSQL: the older hub's database, loaded from its dump.
        if let Some((name, url)) = pg_database().await {
            let load = std::process::Command::new("psql")
                .args(["-q", "-v", "ON_ERROR_STOP=1", &url, "-f"])
                .arg(fixture.join("postgres.sql"))
                .output()
                .expect("psql");
            assert!(
                load.status.success(),
                "{}",
                String::from_utf8_lossy(&load.stderr)
            );
            let hub = Hub::start(
                &dir.0.join("pg"),
                &[
                    ("TRUSTHUB_DATABASE_URL", url.as_str()),
                    ("CLOUD_ENCRYPTION_KEY", key.as_str()),
                ],
            );
            serves_the_fixture(&hub, &f, f["postgres_token"].as_str().expect("token")).await;
            drop(hub);
            drop_pg_database(&name).await;
        }
    }
}
