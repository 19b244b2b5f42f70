//! The hub's configuration file (CONTRACT 31) with the real binary: `trusthub config check`
//! names each bad key with its line and exits 1; `trusthub config show` says where each
//! setting came from (file, environment, default) with secrets masked; `trusthub serve
//! --config` serves from the file, the environment and flags overriding it, and answers
//! `/ready`.

mod common;

use common::{BIN, TempDir, printed, trusthub_clean, wait_ready};
use std::process::{Command, Stdio};

#[test]
fn a_file_is_checked_shown_with_origins_and_served() {
    let dir = TempDir::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let good = dir.0.join("trusthub.toml");
    std::fs::write(
        &good,
        format!(
            "# the hub\nlisten = \"127.0.0.1:{port}\"\ndata_dir = \"{}\"\npublic_url = \"https://hub.example.com\"\n\
             outbound_allow_cidrs = [\"10.0.0.0/8\", \"192.168.0.0/16\"]\nsmtp_url = \"smtp://mailer:hunter2@mail.example.com:587\"\n\
             admin_password = \"a long enough password\"\nca_key_bits = 2048\n",
            dir.0.join("data").display()
        ),
    )
    .expect("write");
    let o = trusthub_clean(&["config", "check", good.to_str().expect("path")], &[]);
    assert!(o.status.success(), "{}", printed(&o));
    assert!(
        printed(&o).contains("7 settings, all valid"),
        "{}",
        printed(&o)
    );

    // Every error, each with its key and line; exit 1.
    let bad = dir.0.join("bad.toml");
    std::fs::write(
        &bad,
        "listen = \"nope\"\n\nlistn = \"127.0.0.1:1\"\nca_key_bits = \"many\"\n[tls]\ncert = \"x\"\n",
    )
    .expect("write");
    let o = trusthub_clean(&["config", "check", bad.to_str().expect("path")], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", printed(&o));
    let t = printed(&o);
    for expected in [
        "bad.toml:1: `listen`: invalid value 'nope'",
        "bad.toml:3: `listn` is not a setting",
        "bad.toml:4: `ca_key_bits`",
        "bad.toml:5: `tls` is a table",
    ] {
        assert!(t.contains(expected), "{expected}: {t}");
    }

    // Where each value comes from; the environment over the file; secrets masked.
    let o = trusthub_clean(
        &["config", "show", "--config", good.to_str().expect("path")],
        &[("TRUSTHUB_PUBLIC_URL", "https://env.example.com")],
    );
    assert!(o.status.success(), "{}", printed(&o));
    let t = printed(&o);
    let row = |key: &str| {
        t.lines()
            .find(|l| l.split_whitespace().next() == Some(key))
            .unwrap_or_default()
            .split_whitespace()
            .collect::<Vec<_>>()
    };
    assert_eq!(
        row("public_url")[1..],
        ["env", "https://env.example.com"],
        "{t}"
    );
    assert_eq!(
        row("listen")[1..],
        ["file", &format!("127.0.0.1:{port}")],
        "{t}"
    );
    assert_eq!(
        row("outbound_allow_cidrs")[1..],
        ["file", "10.0.0.0/8,192.168.0.0/16"],
        "{t}"
    );
    assert_eq!(row("admin_password")[1..], ["file", "********"], "{t}");
    assert_eq!(row("smtp_url")[1..], ["file", "********"], "{t}");
    assert_eq!(row("max_connections")[1..], ["default", "10000"], "{t}");
    assert!(
        !t.contains("hunter2") && !t.contains("a long enough"),
        "{t}"
    );

    // A file with errors stops `serve` before it starts, with the same words.
    let o = trusthub_clean(&["serve", "--config", bad.to_str().expect("path")], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", printed(&o));
    assert!(
        printed(&o).contains("`listn` is not a setting"),
        "{}",
        printed(&o)
    );

    // `serve --config` (here through TRUSTHUB_CONFIG) serves from the file and is ready.
    let mut hub = Command::new(BIN)
        .arg("serve")
        .env("TRUSTHUB_CONFIG", &good)
        .env_remove("TRUSTHUB_LISTEN")
        .env_remove("TRUSTHUB_DATABASE_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve");
    let ready = wait_ready(port);
    let _ = hub.kill();
    let _ = hub.wait();
    assert!(ready.contains("\"status\":\"ready\""), "{ready}");
    assert!(
        dir.0.join("data/trusthub.db").exists(),
        "the file's data_dir is used"
    );

    // `admin migrate --dry-run` lists what would run and changes nothing (CONTRACT 31).
    let data = dir.0.join("data");
    let data = data.to_str().expect("path");
    let o = trusthub_clean(&["admin", "migrate", "--dry-run", "--data-dir", data], &[]);
    assert!(
        printed(&o).contains("the schema is current"),
        "{}",
        printed(&o)
    );
    let old = dir.0.join("old");
    std::fs::create_dir_all(&old).expect("dir");
    std::fs::write(old.join("trusthub.db"), b"").expect("empty database");
    let old = old.to_str().expect("path");
    for _ in 0..2 {
        let o = trusthub_clean(&["admin", "migrate", "--dry-run", "--data-dir", old], &[]);
        assert!(o.status.success(), "{}", printed(&o));
        let t = printed(&o);
        assert!(
            t.contains("0001 foundation") && t.contains("would run (version 0 to"),
            "{t}"
        );
    }
    let o = trusthub_clean(&["admin", "migrate", "--data-dir", old], &[]);
    assert!(
        printed(&o).contains("migrations ran: version 0 to"),
        "{}",
        printed(&o)
    );
    let o = trusthub_clean(&["admin", "migrate", "--dry-run", "--data-dir", old], &[]);
    assert!(
        printed(&o).contains("the schema is current"),
        "{}",
        printed(&o)
    );
}

/// README's settings table is the binary's own (`trusthub config show --markdown`): one
/// source of truth for names, flags, variables and defaults (CONTRACT 31).
#[test]
fn the_readmes_settings_table_is_generated_from_the_definitions() {
    let o = trusthub_clean(&["config", "show", "--markdown"], &[]);
    assert!(o.status.success(), "{}", printed(&o));
    let table = String::from_utf8_lossy(&o.stdout).into_owned();
    let readme = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"),
    )
    .expect("README.md");
    let begin = readme
        .find("<!-- settings-table: generated")
        .and_then(|i| readme[i..].find('\n').map(|n| i + n + 1))
        .expect("the table's opening marker");
    let end = readme
        .find("<!-- settings-table: end -->")
        .expect("its end marker");
    assert!(
        readme[begin..end] == table,
        "README's settings table differs from `trusthub config show --markdown`; paste its output \
         between the markers"
    );
    for key in [
        "`listen`",
        "`TRUSTHUB_OUTBOUND_ALLOW_CIDRS`",
        "`CLOUD_ENCRYPTION_KEY`",
    ] {
        assert!(table.contains(key), "{key}");
    }
}
