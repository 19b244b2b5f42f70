//! The Debian packages (CONTRACT 31) with the real `dpkg`: `scripts/package.sh` packages the
//! binaries this test run built (no second build), the packages are inspected, installed,
//! upgraded over an older version (data and an edited conffile kept), removed and purged; the
//! units pass `systemd-analyze verify`; the hub is started the way its unit starts it — as the
//! `trusthub` user, with `--config /etc/trusthub/trusthub.toml` — and answers `/ready`. It
//! changes this machine's packages, so it needs root (CI runs as root).

mod common;

use common::{BIN, wait_ready};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn run(cmd: &mut Command) -> Output {
    let o = cmd.output().expect("run");
    assert!(
        o.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn mode_owner(p: &str) -> String {
    stdout(&run(Command::new("stat").args(["-c", "%a %U:%G", p])))
        .trim()
        .to_owned()
}

/// Builds both packages at `version` into `out`; their paths.
fn package(version: &str, out: &Path) -> (PathBuf, PathBuf) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let bin_dir = Path::new(BIN).parent().expect("bin dir");
    assert!(
        bin_dir.join("trusthub-agent").exists(),
        "the agent binary is built with the workspace (cargo build -p trusthub-agent)"
    );
    let o = run(Command::new("bash")
        .arg(root.join("scripts/package.sh"))
        .env("BIN_DIR", bin_dir)
        .env("NO_BUILD", "1")
        .env("COMPRESS", "none")
        .env("VERSION", version)
        .env("OUT", out));
    let paths: Vec<PathBuf> = stdout(&o).lines().map(PathBuf::from).collect();
    assert_eq!(paths.len(), 2, "{paths:?}");
    (paths[0].clone(), paths[1].clone())
}

fn purge() {
    let _ = Command::new("dpkg")
        .args(["--purge", "trusthub", "trusthub-agent"])
        .output();
}

/// The hub as its unit starts it, on `port`; what `/ready` answered.
fn serve_as_the_unit_would(port: u16) -> String {
    let mut hub = Command::new("setpriv")
        .args([
            "--reuid=trusthub",
            "--regid=trusthub",
            "--init-groups",
            "--",
            "/usr/bin/trusthub",
            "serve",
            "--config",
            "/etc/trusthub/trusthub.toml",
        ])
        .current_dir("/")
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("TRUSTHUB_LISTEN", format!("127.0.0.1:{port}"))
        .env("TRUSTHUB_CA_KEY_BITS", "2048")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the hub");
    let ready = wait_ready(port);
    let _ = hub.kill();
    let _ = hub.wait();
    ready
}

#[test]
fn packages_install_upgrade_keep_data_and_settings_and_purge() {
    let uid = stdout(&run(Command::new("id").arg("-u")));
    assert_eq!(
        uid.trim(),
        "0",
        "dpkg needs root: run this test as root (CI does)"
    );
    let out = std::env::temp_dir().join(format!("th-deb-{}", std::process::id()));
    std::fs::create_dir_all(&out).expect("out");
    purge();
    let (hub1, agent1) = package("0.0.1~test1", &out.join("1"));
    let (hub2, agent2) = package("0.0.1~test2", &out.join("2"));

    // What the packages hold.
    let info = stdout(&run(Command::new("dpkg-deb").arg("--info").arg(&hub1)));
    assert!(
        info.contains("Package: trusthub\n") && info.contains("conffiles"),
        "{info}"
    );
    let contents = stdout(&run(Command::new("dpkg-deb").arg("--contents").arg(&hub1)));
    for path in [
        "./usr/bin/trusthub",
        "./lib/systemd/system/trusthub.service",
        "./etc/trusthub/trusthub.toml",
    ] {
        assert!(contents.contains(path), "{path}: {contents}");
    }
    let contents = stdout(&run(Command::new("dpkg-deb")
        .arg("--contents")
        .arg(&agent1)));
    assert!(contents.contains("./usr/bin/trusthub-agent"), "{contents}");
    assert!(
        contents.contains("./etc/trusthub-agent/agent.env"),
        "{contents}"
    );

    // Installed: the user, the folders and modes, the units verified.
    run(Command::new("dpkg").arg("-i").arg(&hub1).arg(&agent1));
    run(Command::new("getent").args(["passwd", "trusthub"]));
    assert_eq!(mode_owner("/var/lib/trusthub"), "750 trusthub:trusthub");
    assert_eq!(
        mode_owner("/etc/trusthub/trusthub.toml"),
        "640 root:trusthub"
    );
    assert_eq!(mode_owner("/var/lib/trusthub-agent"), "700 root:root");
    assert_eq!(mode_owner("/etc/trusthub-agent/agent.env"), "600 root:root");
    let unit = std::fs::read_to_string("/lib/systemd/system/trusthub.service").expect("unit");
    for line in [
        "User=trusthub",
        "ExecStart=/usr/bin/trusthub serve --config /etc/trusthub/trusthub.toml",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "ReadWritePaths=/var/lib/trusthub",
    ] {
        assert!(unit.lines().any(|l| l == line), "{line}: {unit}");
    }
    run(Command::new("systemd-analyze").args([
        "verify",
        "/lib/systemd/system/trusthub.service",
        "/lib/systemd/system/trusthub-agent.service",
    ]));
    // The installed settings file is the binary's own template: valid as it stands.
    run(Command::new("/usr/bin/trusthub").args(["config", "check", "/etc/trusthub/trusthub.toml"]));

    // Started as the unit starts it: ready, its data where the package put it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let ready = serve_as_the_unit_would(port);
    assert!(ready.contains("\"status\":\"ready\""), "{ready}");
    assert_eq!(
        mode_owner("/var/lib/trusthub/trusthub.db")
            .split(' ')
            .nth(1),
        Some("trusthub:trusthub")
    );

    // An upgrade keeps the data and the operator's edit of the settings.
    let mut conf = std::fs::read_to_string("/etc/trusthub/trusthub.toml").expect("conf");
    conf.push_str("public_url = \"https://edited.example.com\"\n");
    std::fs::write("/etc/trusthub/trusthub.toml", &conf).expect("edit");
    run(Command::new("dpkg")
        .args(["--force-confold", "-i"])
        .arg(&hub2)
        .arg(&agent2));
    let version = stdout(&run(Command::new("dpkg-query").args([
        "-W",
        "-f",
        "${Version}",
        "trusthub",
    ])));
    assert_eq!(version, "0.0.1~test2");
    let kept = std::fs::read_to_string("/etc/trusthub/trusthub.toml").expect("conf");
    assert!(
        kept.contains("https://edited.example.com"),
        "the edit is kept"
    );
    assert!(
        Path::new("/var/lib/trusthub/trusthub.db").exists(),
        "the data is kept"
    );
    assert!(serve_as_the_unit_would(port).contains("\"status\":\"ready\""));

    // Removed: the programs go, data and settings stay; purged: everything goes.
    run(Command::new("dpkg").args(["--remove", "trusthub", "trusthub-agent"]));
    assert!(!Path::new("/usr/bin/trusthub").exists());
    assert!(!Path::new("/usr/bin/trusthub-agent").exists());
    assert!(Path::new("/var/lib/trusthub/trusthub.db").exists());
    assert!(Path::new("/etc/trusthub/trusthub.toml").exists());
    run(Command::new("dpkg").args(["--purge", "trusthub", "trusthub-agent"]));
    for gone in [
        "/var/lib/trusthub",
        "/etc/trusthub",
        "/var/lib/trusthub-agent",
        "/etc/trusthub-agent",
    ] {
        assert!(!Path::new(gone).exists(), "{gone} after purge");
    }
    let user = Command::new("getent")
        .args(["passwd", "trusthub"])
        .output()
        .expect("getent");
    assert!(!user.status.success(), "the user goes with the purge");
    let _ = std::fs::remove_dir_all(&out);
}
