//! Backups that move a hub between engines (CONTRACT 31), with the real binary: a SQLite hub
//! is backed up while an agent pushes batches, the archive verifies (and a damaged copy does
//! not), it restores into a new PostgreSQL database and into a new SQLite data dir, and each
//! restored hub serves the same objects with the same key — the owner signs in with the same
//! password and TOTP (a sealed secret), the API token still works, the webhook is there — and
//! a second restore into the now non-empty target is refused.

mod common;

use common::*;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

/// The TOTP step last used.
static USED_STEP: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

fn unix_now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// Signs in with the password and the TOTP code of a step no sign-in used yet (a code works
/// once; the restored database remembers the last one); the answer.
async fn sign_in(
    http: &reqwest::Client,
    base: &str,
    password: &str,
    secret: &[u8],
) -> reqwest::Response {
    let used = USED_STEP.load(std::sync::atomic::Ordering::SeqCst);
    while unix_now() / 30 <= used {
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    USED_STEP.store(unix_now() / 30, std::sync::atomic::Ordering::SeqCst);
    http.post(format!("{base}/auth/login"))
        .json(
            &json!({"email": "admin@trusthub.local", "password": password,
                      "totp_code": trusthub_core::totp::code_at(secret, unix_now())}),
        )
        .send()
        .await
        .expect("login")
}

/// What a restored hub must serve as the original did.
async fn serves_the_same(hub: &Hub, password: &str, secret: &[u8], token: &str, webhook: &str) {
    let http = reqwest::Client::new();
    // The password hash, and the TOTP secret sealed with the hub key.
    let r = sign_in(&http, &hub.base, password, secret).await;
    assert_eq!(r.status(), 200);
    let session = cookie(&r);
    let wrong = http
        .post(format!("{}/auth/login", hub.base))
        .json(
            &json!({"email": "admin@trusthub.local", "password": password, "totp_code": "000000"}),
        )
        .send()
        .await
        .expect("login");
    assert_ne!(
        wrong.status().as_u16(),
        200,
        "a wrong code is still refused"
    );
    // The API token (stored hashed).
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
    // The webhook, and the agent with its batches.
    let hooks: Value = http
        .get(format!("{}/webhooks", hub.base))
        .header("cookie", &session)
        .send()
        .await
        .expect("webhooks")
        .json()
        .await
        .expect("json");
    assert!(hooks.to_string().contains(webhook), "{hooks}");
    let agents: Value = http
        .get(format!("{}/agents", hub.base))
        .header("cookie", &session)
        .send()
        .await
        .expect("agents")
        .json()
        .await
        .expect("json");
    assert_eq!(agents[0]["hostname"], "backup-host", "{agents}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_hub_moves_to_postgres_and_back_by_backup_and_restore() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = TempDir::new();
    let data = dir.0.join("data");
    let password = "a long enough password";
    let mut hub = Hub::start(
        &data,
        &[
            ("TRUSTHUB_ADMIN_PASSWORD", password),
            ("TRUSTHUB_CA_KEY_BITS", "2048"),
        ],
    );
    let http = reqwest::Client::new();
    let session = admin_session(&http, &hub.base, password).await;
    // TOTP on (its secret is sealed with the hub key), a token, a webhook, an agent.
    let setup = post_json(
        &http,
        format!("{}/auth/totp/setup", hub.base),
        &session,
        json!({}),
    )
    .await;
    let secret =
        trusthub_core::totp::secret_from_base32(setup["secret_base32"].as_str().expect("secret"))
            .expect("base32");
    post_json(
        &http,
        format!("{}/auth/totp/verify", hub.base),
        &session,
        json!({"code": trusthub_core::totp::code_at(&secret, unix_now())}),
    )
    .await;
    USED_STEP.store(unix_now() / 30, std::sync::atomic::Ordering::SeqCst);
    let token = post_json(
        &http,
        format!("{}/api-tokens", hub.base),
        &session,
        json!({"name": "backup-test", "scope": "read"}),
    )
    .await["token"]
        .as_str()
        .expect("token")
        .to_owned();
    let webhook = "https://hooks.example.com/backup-test";
    post_json(
        &http,
        format!("{}/webhooks", hub.base),
        &session,
        json!({"url": webhook}),
    )
    .await;
    let agent = register_agent(&http, &hub.base, &session, "backup-host").await;

    // The backup runs while the agent keeps pushing.
    let pushing = {
        let (http, base) = (http.clone(), hub.base.clone());
        tokio::spawn(async move {
            let mut sent = 0;
            for i in 0..400 {
                let m = json!({"name": "cpu.percent", "value": f64::from(i % 100), "ts": time::OffsetDateTime::now_utc().format(&time::format_description::well_known::Rfc3339).expect("fmt"), "labels": {}});
                if send_batch(&http, &base, &agent, uuid::Uuid::new_v4(), &[m])
                    .await
                    .is_some()
                {
                    sent += 1;
                }
            }
            sent
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let archive = dir.0.join("hub.tar.gz");
    let data_arg = data.to_str().expect("path");
    let archive_arg = archive.to_str().expect("path");
    let o = trusthub_clean(
        &[
            "backup",
            "--data-dir",
            data_arg,
            "--out",
            archive_arg,
            "--include-key",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", printed(&o));
    assert!(
        printed(&o).contains("(the hub key included)"),
        "{}",
        printed(&o)
    );
    let sent = pushing.await.expect("pushes");
    assert!(sent > 0, "the agent pushed during the backup");
    hub.terminate();
    assert_eq!(
        std::fs::metadata(&archive)
            .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o777)
            .ok(),
        Some(0o600)
    );

    // Verified; a damaged copy is refused.
    let o = trusthub_clean(&["backup", "verify", archive_arg], &[]);
    assert!(o.status.success(), "{}", printed(&o));
    assert!(printed(&o).contains("intact"), "{}", printed(&o));
    let damaged = dir.0.join("damaged.tar.gz");
    damage(&archive, &damaged);
    let o = trusthub_clean(&["backup", "verify", damaged.to_str().expect("path")], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", printed(&o));
    assert!(printed(&o).contains("damaged"), "{}", printed(&o));

    let key = std::fs::read_to_string(data.join("encryption.key")).expect("key");
    // Into PostgreSQL: the same password, TOTP, token, webhook and agent, with the same key.
    if let Some((name, url)) = pg_database().await {
        let o = trusthub_clean(
            &["restore", "--from", archive_arg, "--database-url", &url],
            &[],
        );
        assert!(o.status.success(), "{}", printed(&o));
        assert!(printed(&o).contains("from sqlite"), "{}", printed(&o));
        let pg = Hub::start(
            &dir.0.join("pg-data"),
            &[
                ("TRUSTHUB_DATABASE_URL", url.as_str()),
                ("CLOUD_ENCRYPTION_KEY", key.trim()),
            ],
        );
        serves_the_same(&pg, password, &secret, &token, webhook).await;
        drop(pg);
        // A second restore into it is refused: it is not empty.
        let o = trusthub_clean(
            &["restore", "--from", archive_arg, "--database-url", &url],
            &[],
        );
        assert_eq!(o.status.code(), Some(1), "{}", printed(&o));
        assert!(printed(&o).contains("not empty"), "{}", printed(&o));

        // And back: PostgreSQL's backup into a new SQLite data dir, the key written there.
        let again = dir.0.join("from-pg.tar.gz");
        let o = trusthub_clean(
            &[
                "backup",
                "--database-url",
                &url,
                "--out",
                again.to_str().expect("path"),
                "--include-key",
            ],
            &[("CLOUD_ENCRYPTION_KEY", key.trim())],
        );
        assert!(o.status.success(), "{}", printed(&o));
        let back = dir.0.join("back");
        let o = trusthub_clean(
            &[
                "restore",
                "--from",
                again.to_str().expect("path"),
                "--data-dir",
                back.to_str().expect("path"),
            ],
            &[],
        );
        assert!(o.status.success(), "{}", printed(&o));
        assert!(printed(&o).contains("from postgres"), "{}", printed(&o));
        assert_eq!(
            std::fs::read_to_string(back.join("encryption.key"))
                .map(|k| k.trim().to_owned())
                .ok(),
            Some(key.trim().to_owned())
        );
        let sqlite = Hub::start(&back, &[]);
        serves_the_same(&sqlite, password, &secret, &token, webhook).await;
        drop(sqlite);
        drop_pg_database(&name).await;
    }
}

/// A copy of `archive` with one byte of one table's rows changed (the archive still opens).
fn damage(archive: &Path, out: &Path) {
    let work = out.with_extension("dir");
    std::fs::create_dir_all(&work).expect("dir");
    let ok = Command::new("tar")
        .args([
            "-xzf",
            archive.to_str().expect("path"),
            "-C",
            work.to_str().expect("path"),
        ])
        .status()
        .expect("tar");
    assert!(ok.success());
    let users = work.join("tables/users.jsonl");
    let text = std::fs::read_to_string(&users).expect("users");
    std::fs::write(&users, text.replacen("admin@", "admon@", 1)).expect("write");
    let mut members = vec!["manifest.json".to_owned()];
    for e in std::fs::read_dir(work.join("tables")).expect("tables") {
        let name = e.expect("entry").file_name().to_string_lossy().into_owned();
        members.push(format!("tables/{name}"));
    }
    let ok = Command::new("tar")
        .arg("-czf")
        .arg(out)
        .arg("-C")
        .arg(&work)
        .args(&members)
        .status()
        .expect("tar");
    assert!(ok.success());
}
