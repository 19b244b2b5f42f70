//! Emergency actions run for real on this machine (CONTRACT 19), through the agent's
//! `emergency` command — the code a hub's emergency action runs:
//! - `block_ip` in a network namespace of its own (`unshare --net`, so the host's firewall is
//!   never touched): a TCP connection from the address goes through before and is dropped
//!   after, and the rule is nftables' own listing;
//! - `lock_user` on a throwaway login made for the test (password locked, account expired),
//!   removed after; root is refused;
//! - `stop_unit` on a machine without systemd as init: the agent reports systemctl's failure;
//! - the host's `emergency_actions` vetoes an action before anything runs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const AGENT: &str = env!("CARGO_BIN_EXE_trusthub-agent");

struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch() -> Scratch {
    let dir = std::env::temp_dir().join(format!("th-emergency-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).expect("dir");
    Scratch(dir)
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn emergency(state: &Path, action: &str, target: &str) -> Output {
    Command::new(AGENT)
        .args([
            "emergency",
            "--action",
            action,
            "--target",
            target,
            "--state-dir",
        ])
        .arg(state)
        .output()
        .expect("agent")
}

/// Connects from `source` to a listener on 127.0.0.1 (one second at most): `connected` or
/// `blocked`.
const PROBE: &str = "import socket, sys\nsrv = socket.socket(); srv.bind(('127.0.0.1', 0)); srv.listen(1)\nc = socket.socket(); c.settimeout(1); c.bind((sys.argv[1], 0))\ntry:\n    c.connect(('127.0.0.1', srv.getsockname()[1])); print('connected')\nexcept OSError:\n    print('blocked')\n";

#[test]
fn block_ip_drops_the_address_in_a_network_namespace() {
    let s = scratch();
    let probe = s.0.join("probe.py");
    std::fs::write(&probe, PROBE).expect("probe");
    let script = "set -e\nip link set lo up\nip addr add 192.0.2.7/32 dev lo\necho \"before: $(python3 \"$2\" 192.0.2.7)\"\n\"$0\" emergency --action block_ip --target 192.0.2.7 --state-dir \"$1\"\n\"$0\" emergency --action block_ip --target 2001:db8::7 --state-dir \"$1\"\necho \"after: $(python3 \"$2\" 192.0.2.7)\"\nnft list ruleset\n";
    let out = Command::new("unshare")
        .args(["--net", "sh", "-c", script, AGENT])
        .arg(&s.0)
        .arg(&probe)
        .output()
        .expect("unshare");
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains("before: connected"), "{all}");
    assert!(all.contains("after: blocked"), "{all}");
    assert!(all.contains("table inet trusthub"), "{all}");
    assert!(all.contains("ip saddr 192.0.2.7 drop"), "{all}");
    assert!(all.contains("ip6 saddr 2001:db8::7 drop"), "{all}");
    // The host's own ruleset never saw it.
    let host = Command::new("nft")
        .args(["list", "tables"])
        .output()
        .expect("nft");
    assert!(!String::from_utf8_lossy(&host.stdout).contains("trusthub"));
}

/// A login made for a test, removed when dropped.
struct Login(String);

impl Drop for Login {
    fn drop(&mut self) {
        let _ = Command::new("userdel").arg(&self.0).output();
    }
}

#[test]
fn lock_user_locks_and_expires_a_login_and_refuses_root() {
    let s = scratch();
    let user = format!(
        "th-lock-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let made = Command::new("useradd")
        .args(["-M", "-s", "/usr/sbin/nologin", &user])
        .output()
        .expect("useradd");
    assert!(made.status.success(), "{}", text(&made));
    let _gone = Login(user.clone());
    // A password, so the login is usable (`P`) until the action locks it.
    let mut chpasswd = Command::new("chpasswd")
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("chpasswd");
    std::io::Write::write_all(
        chpasswd.stdin.as_mut().expect("stdin"),
        format!("{user}:a-throwaway-password-1\n").as_bytes(),
    )
    .expect("write");
    assert!(chpasswd.wait().expect("chpasswd").success());
    let status = || {
        let o = Command::new("passwd")
            .args(["-S", &user])
            .output()
            .expect("passwd");
        String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_owned()
    };
    let before = status();
    let out = emergency(&s.0, "lock_user", &user);
    let after = status();
    let expiry = Command::new("chage")
        .args(["-l", &user])
        .output()
        .expect("chage");
    assert_eq!(before, "P");
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(after, "L", "the password is locked");
    assert!(
        String::from_utf8_lossy(&expiry.stdout).contains("Jan 02, 1970"),
        "the account is expired: {}",
        String::from_utf8_lossy(&expiry.stdout)
    );
    let root = emergency(&s.0, "lock_user", "root");
    assert_eq!(root.status.code(), Some(1));
    assert!(text(&root).contains("not root"), "{}", text(&root));
}

#[test]
fn stop_unit_reports_systemctls_failure_and_the_allowlist_vetoes() {
    let s = scratch();
    // This machine's init is not systemd: systemctl fails and the agent says so.
    let booted = std::path::Path::new("/run/systemd/system").exists();
    let out = emergency(&s.0, "stop_unit", "trusthub-test-absent.service");
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
    if !booted {
        assert!(text(&out).contains("systemd"), "{}", text(&out));
    }
    // The host allows only kill_process: lock_user is refused before anything runs.
    std::fs::write(
        s.0.join("actions.toml"),
        "allow = [\"emergency\"]\nemergency_actions = [\"kill_process\"]\n",
    )
    .expect("actions.toml");
    let out = emergency(&s.0, "lock_user", "nobody");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).contains("is not on this host's emergency_actions"),
        "{}",
        text(&out)
    );
}
