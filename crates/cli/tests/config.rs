//! The hub's configuration file (CONTRACT 31) with the real binary: `trusthub config check`
//! names each bad key with its line and exits 1; `trusthub config show` says where each
//! setting came from (file, environment, default) with secrets masked; `trusthub serve
//! --config` serves from the file, the environment and flags overriding it, and answers
//! `/ready`.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_trusthub");

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch() -> TempDir {
    let d = std::env::temp_dir().join(format!("th-config-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&d).expect("dir");
    TempDir(d)
}

fn trusthub(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args);
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("TRUSTHUB_")) {
        cmd.env_remove(k);
    }
    cmd.envs(env.iter().copied());
    cmd.output().expect("run trusthub")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn a_file_is_checked_shown_with_origins_and_served() {
    let dir = scratch();
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
    let o = trusthub(&["config", "check", good.to_str().expect("path")], &[]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("7 settings, all valid"), "{}", text(&o));

    // Every error, each with its key and line; exit 1.
    let bad = dir.0.join("bad.toml");
    std::fs::write(
        &bad,
        "listen = \"nope\"\n\nlistn = \"127.0.0.1:1\"\nca_key_bits = \"many\"\n[tls]\ncert = \"x\"\n",
    )
    .expect("write");
    let o = trusthub(&["config", "check", bad.to_str().expect("path")], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let t = text(&o);
    for expected in [
        "bad.toml:1: `listen`: invalid value 'nope'",
        "bad.toml:3: `listn` is not a setting",
        "bad.toml:4: `ca_key_bits`",
        "bad.toml:5: `tls` is a table",
    ] {
        assert!(t.contains(expected), "{expected}: {t}");
    }

    // Where each value comes from; the environment over the file; secrets masked.
    let o = trusthub(
        &["config", "show", "--config", good.to_str().expect("path")],
        &[("TRUSTHUB_PUBLIC_URL", "https://env.example.com")],
    );
    assert!(o.status.success(), "{}", text(&o));
    let t = text(&o);
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
    let o = trusthub(&["serve", "--config", bad.to_str().expect("path")], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("`listn` is not a setting"),
        "{}",
        text(&o)
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
    let get_ready = || -> Option<String> {
        use std::io::{Read as _, Write as _};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
        s.write_all(b"GET /ready HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .ok()?;
        let mut answer = String::new();
        s.read_to_string(&mut answer).ok()?;
        answer.starts_with("HTTP/1.1 200").then_some(answer)
    };
    let mut ready = String::new();
    for _ in 0..300 {
        if let Some(answer) = get_ready() {
            ready = answer;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
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
    let o = trusthub(&["admin", "migrate", "--dry-run", "--data-dir", data], &[]);
    assert!(text(&o).contains("the schema is current"), "{}", text(&o));
    let old = dir.0.join("old");
    std::fs::create_dir_all(&old).expect("dir");
    std::fs::write(old.join("trusthub.db"), b"").expect("empty database");
    let old = old.to_str().expect("path");
    for _ in 0..2 {
        let o = trusthub(&["admin", "migrate", "--dry-run", "--data-dir", old], &[]);
        assert!(o.status.success(), "{}", text(&o));
        let t = text(&o);
        assert!(
            t.contains("0001 foundation") && t.contains("would run (version 0 to"),
            "{t}"
        );
    }
    let o = trusthub(&["admin", "migrate", "--data-dir", old], &[]);
    assert!(
        text(&o).contains("migrations ran: version 0 to"),
        "{}",
        text(&o)
    );
    let o = trusthub(&["admin", "migrate", "--dry-run", "--data-dir", old], &[]);
    assert!(text(&o).contains("the schema is current"), "{}", text(&o));
}
