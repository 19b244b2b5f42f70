//! The soak rig's short version (issue 63), a test of correctness only (no timing asserted):
//! the real hub binary on SQLite, 100 agents with their WebSockets open pushing 100 series
//! every 10 s with inventories, an alert rule firing for a tenth of them, 20 hub checks, and a
//! signed-in client reading the overview, the agents page and two API lists every 2 s, for 5
//! minutes. Every push is accepted, every read answers, the rule fires, and the hub logs no
//! warning or error.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

#[test]
fn a_small_fleet_soaks_five_minutes_without_a_failure_or_a_logged_error() {
    let soak = PathBuf::from(env!("CARGO_BIN_EXE_soak"));
    let hub = soak.with_file_name("trusthub");
    assert!(
        hub.exists(),
        "the hub binary is built with the workspace (cargo build -p trusthub)"
    );
    let dir = std::env::temp_dir().join(format!("trusthub-soak-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let log = std::fs::File::create(dir.with_extension("log")).expect("log file");
    let mut server = Command::new(&hub)
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--data-dir",
        ])
        .arg(&dir)
        .env("TRUSTHUB_ADMIN_PASSWORD", "soak password")
        .env("TRUSTHUB_RATE_LIMITS", "off")
        .env("TRUSTHUB_OUTBOUND_ALLOW_CIDRS", "127.0.0.0/8")
        .env("TRUSTHUB_CA_KEY_BITS", "2048")
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start the hub");
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the hub did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = Command::new(&soak)
        .args(["--hub", &base, "--password", "soak password"])
        .args([
            "--agents",
            "100",
            "--checks",
            "20",
            "--duration-secs",
            "300",
        ])
        .args(["--check-url", &format!("{base}/api/v1/health"), "--strict"])
        .arg("--hub-pid")
        .arg(server.id().to_string())
        .output()
        .expect("run the rig");
    let _ = server.kill();
    let _ = server.wait();
    let mut hub_log = String::new();
    let _ = std::fs::File::open(dir.with_extension("log"))
        .and_then(|mut f| f.read_to_string(&mut hub_log));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(dir.with_extension("log"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("0 failed pushes or reads")
            && stdout.contains("100 sockets open at the end"),
        "{stdout}\n{stderr}"
    );
    assert_eq!(stdout.matches("window ").count(), 5, "{stdout}");
    // The rule fires for the tenth of the agents pushing cpu.percent 95 (> 90 over 5 min).
    assert!(stdout.contains("rule alerts open: 10 of 10"), "{stdout}");
    let bad: Vec<&str> = hub_log
        .lines()
        .filter(|l| l.contains(" WARN ") || l.contains(" ERROR "))
        .collect();
    assert!(bad.is_empty(), "the hub logged: {bad:#?}");
}
