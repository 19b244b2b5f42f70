//! Tests of [`super`] (compliance).

use super::*;
use std::os::unix::fs::PermissionsExt;

struct Tree(PathBuf);
impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
impl Tree {
    fn put(&self, rel: &str, text: &str, mode: u32) {
        let p = self.0.join(rel.trim_start_matches('/'));
        std::fs::create_dir_all(p.parent().expect("parent")).expect("dir");
        std::fs::write(&p, text).expect("write");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).expect("mode");
    }
    fn mkdir(&self, rel: &str, mode: u32) {
        let p = self.0.join(rel.trim_start_matches('/'));
        std::fs::create_dir_all(&p).expect("dir");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).expect("mode");
    }
    fn check(&self, id: &str) -> (Status, String) {
        let o = run(&self.0)
            .into_iter()
            .find(|o| o.check_id == id)
            .expect("check");
        (o.status, o.evidence)
    }
}

/// A host that passes every check.
fn good() -> Tree {
    let t =
        Tree(std::env::temp_dir().join(format!("compliance-{}", uuid::Uuid::new_v4().simple())));
    t.put("/etc/ssh/sshd_config", "# hardened\nInclude /etc/ssh/sshd_config.d/*.conf\nPermitRootLogin no\nPasswordAuthentication no\nMaxAuthTries 3\nX11Forwarding no\nMatch User backup\n  PasswordAuthentication yes\n", 0o600);
    t.put("/etc/passwd", "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1::/usr/sbin:/usr/sbin/nologin\nalice:x:1000:1000::/home/alice:/bin/bash\n", 0o644);
    t.put(
        "/etc/group",
        "root:x:0:\ndaemon:x:1:\nshadow:x:42:\nalice:x:1000:\n",
        0o644,
    );
    t.put(
        "/etc/shadow",
        "root:!:19000:1:365:7:::\ndaemon:*:19000:0:99999:7:::\nalice:$y$j9T$abc:19000:1:365:7:::\n",
        0o640,
    );
    t.put(
        "/etc/login.defs",
        "# login.defs\nPASS_MAX_DAYS\t365\nPASS_MIN_DAYS 1\nPASS_WARN_AGE 7\n",
        0o644,
    );
    t.put(
        "/etc/security/pwquality.conf",
        "# minlen = 8\nminlen = 12\n",
        0o644,
    );
    t.put(
        "/etc/security/pwquality.conf.d/50-cis.conf",
        "minlen = 14\n",
        0o644,
    );
    t.put("/etc/pam.d/common-password", "password requisite pam_pwquality.so retry=3\npassword [success=1 default=ignore] pam_unix.so obscure yescrypt\n", 0o644);
    t.put("/usr/sbin/auditd", "", 0o755);
    t.put("/etc/audit/rules.d/50-identity.rules", "-w /etc/passwd -p wa -k identity\n-w /etc/shadow -p wa -k identity\n-a always,exit -F path=/etc/group -F perm=wa -k identity\n", 0o640);
    for (k, v) in [
        ("net/ipv4/ip_forward", "0"),
        ("net/ipv4/conf/all/accept_redirects", "0"),
        ("net/ipv4/conf/all/send_redirects", "0"),
        ("kernel/randomize_va_space", "2"),
    ] {
        t.put(&format!("/proc/sys/{k}"), &format!("{v}\n"), 0o644);
    }
    let mut modprobe = String::new();
    for m in ["cramfs", "freevxfs", "jffs2", "hfs", "hfsplus", "udf"] {
        modprobe.push_str(&format!("install {m} /bin/false\nblacklist {m}\n"));
    }
    t.put("/etc/modprobe.d/cis.conf", &modprobe, 0o644);
    t.put(
        "/proc/modules",
        "ext4 1007616 1 - Live 0x0000000000000000\n",
        0o444,
    );
    t.put(
        "/proc/mounts",
        "/dev/sda1 / ext4 rw,relatime 0 0\ntmpfs /tmp tmpfs rw,nosuid,nodev,noexec,relatime 0 0\n",
        0o444,
    );
    t.mkdir("/tmp", 0o1777);
    t.mkdir("/var/tmp", 0o1777);
    t.put("/usr/bin/tool", "#!/bin/sh\n", 0o755);
    t
}

fn root_owned(t: &Tree) -> bool {
    std::fs::metadata(t.0.join("etc/passwd")).is_ok_and(|m| m.uid() == 0)
}

#[test]
fn a_hardened_host_passes_every_check() {
    let t = good();
    let out = run(&t.0);
    assert_eq!(out.len(), 21);
    for o in &out {
        let mode_check = ["sshd_config_mode", "passwd_mode", "shadow_mode"].contains(&o.check_id);
        if mode_check && !root_owned(&t) {
            continue;
        }
        assert_eq!(o.status, Status::Pass, "{}: {}", o.check_id, o.evidence);
        assert!(!o.evidence.is_empty() && !o.remediation.is_empty());
    }
    assert_eq!(
        t.check("pwquality").1,
        "minlen = 14 (/etc/security/pwquality.conf.d/50-cis.conf)"
    );
    assert_eq!(
        t.check("ssh_permit_root_login").1,
        "permitrootlogin no (/etc/ssh/sshd_config)"
    );
}

/// Each check fails on its own setting made wrong (a fresh good tree each time).
#[test]
fn every_check_fails_when_its_setting_is_wrong() {
    type Break = fn(&Tree);
    let cases: [(&str, Break); 21] = [
        // An included file comes first: its value wins.
        ("ssh_permit_root_login", |t| {
            t.put(
                "/etc/ssh/sshd_config.d/10-root.conf",
                "PermitRootLogin yes\n",
                0o600,
            )
        }),
        // Absent: OpenSSH's default (yes) applies. The Match block's value never counts.
        ("ssh_password_authentication", |t| {
            t.put(
                "/etc/ssh/sshd_config",
                "PermitRootLogin no\nMaxAuthTries 3\n",
                0o600,
            )
        }),
        ("ssh_max_auth_tries", |t| {
            t.put("/etc/ssh/sshd_config.d/20.conf", "MaxAuthTries=6\n", 0o600)
        }),
        ("ssh_x11_forwarding", |t| {
            t.put(
                "/etc/ssh/sshd_config.d/30.conf",
                "X11Forwarding yes\n",
                0o600,
            )
        }),
        ("sshd_config_mode", |t| {
            std::fs::set_permissions(
                t.0.join("etc/ssh/sshd_config"),
                std::fs::Permissions::from_mode(0o644),
            )
            .expect("mode")
        }),
        ("passwd_mode", |t| {
            std::fs::set_permissions(
                t.0.join("etc/passwd"),
                std::fs::Permissions::from_mode(0o664),
            )
            .expect("mode")
        }),
        ("shadow_mode", |t| {
            std::fs::set_permissions(
                t.0.join("etc/shadow"),
                std::fs::Permissions::from_mode(0o644),
            )
            .expect("mode")
        }),
        ("pass_max_days", |t| {
            t.put(
                "/etc/login.defs",
                "PASS_MAX_DAYS 99999\nPASS_MIN_DAYS 1\n",
                0o644,
            )
        }),
        ("pass_min_days", |t| {
            t.put(
                "/etc/login.defs",
                "PASS_MAX_DAYS 365\nPASS_MIN_DAYS 0\n",
                0o644,
            )
        }),
        ("pwquality", |t| {
            t.put(
                "/etc/security/pwquality.conf.d/50-cis.conf",
                "minlen = 10\n",
                0o644,
            )
        }),
        ("empty_passwords", |t| {
            t.put(
                "/etc/shadow",
                "root:!:19000:1:365:7:::\nalice::19000:1:365:7:::\n",
                0o640,
            )
        }),
        ("uid0_only_root", |t| {
            t.put(
                "/etc/passwd",
                "root:x:0:0::/root:/bin/bash\ntoor:x:0:0::/root:/bin/sh\n",
                0o644,
            )
        }),
        ("world_writable_files", |t| {
            t.put("/usr/bin/tool", "#!/bin/sh\n", 0o777)
        }),
        ("sticky_bits", |t| t.mkdir("/var/tmp", 0o777)),
        ("unowned_files", |t| {
            t.put("/opt/app/stray", "x", 0o644);
            std::os::unix::fs::chown(t.0.join("opt/app/stray"), Some(4242), Some(4242)).ok();
        }),
        ("auditd", |t| {
            std::fs::remove_file(t.0.join("usr/sbin/auditd")).expect("rm")
        }),
        ("audit_rules", |t| {
            t.put(
                "/etc/audit/rules.d/50-identity.rules",
                "-w /etc/passwd -p wa -k identity\n# -w /etc/shadow -p wa\n",
                0o640,
            )
        }),
        ("sysctl_network", |t| {
            t.put("/proc/sys/net/ipv4/ip_forward", "1\n", 0o644)
        }),
        ("sysctl_aslr", |t| {
            t.put("/proc/sys/kernel/randomize_va_space", "1\n", 0o644)
        }),
        ("unused_filesystems", |t| {
            t.put("/proc/modules", "udf 139264 0 - Live 0x0\n", 0o444)
        }),
        ("tmp_mount", |t| {
            t.put(
                "/proc/mounts",
                "tmpfs /tmp tmpfs rw,nosuid,nodev 0 0\n",
                0o444,
            )
        }),
    ];
    for (id, broken) in cases {
        let t = good();
        let needs_root = [
            "sshd_config_mode",
            "passwd_mode",
            "shadow_mode",
            "unowned_files",
        ]
        .contains(&id);
        if needs_root && !root_owned(&t) {
            continue;
        }
        assert_eq!(
            t.check(id).0,
            Status::Pass,
            "{id} passes first: {}",
            t.check(id).1
        );
        broken(&t);
        let (status, evidence) = t.check(id);
        assert_eq!(status, Status::Fail, "{id}: {evidence}");
        // The others are not disturbed by this one's setting.
        let others: Vec<Outcome> = run(&t.0)
            .into_iter()
            .filter(|o| o.check_id != id && o.status == Status::Fail)
            .collect();
        assert!(others.is_empty(), "{id} broke {others:?}");
    }
}

#[test]
fn evidence_names_what_is_wrong() {
    let t = good();
    t.put(
        "/etc/shadow",
        "root:!:1::::::\nbob::1::::::\neve::1::::::\n",
        0o640,
    );
    assert_eq!(t.check("empty_passwords").1, "empty password: bob, eve");
    t.put("/proc/mounts", "tmpfs /tmp tmpfs rw,nosuid 0 0\n", 0o444);
    assert_eq!(
        t.check("tmp_mount").1,
        "/tmp: tmpfs rw,nosuid (missing nodev, noexec)"
    );
    t.put("/proc/modules", "", 0o444);
    t.put(
        "/etc/modprobe.d/cis.conf",
        "install cramfs /bin/false\n",
        0o644,
    );
    assert_eq!(
        t.check("unused_filesystems").1,
        "freevxfs (loadable), jffs2 (loadable), hfs (loadable), hfsplus (loadable), udf (loadable)"
    );
}

#[test]
fn without_sshd_the_ssh_checks_do_not_apply() {
    let t = good();
    std::fs::remove_dir_all(t.0.join("etc/ssh")).expect("rm");
    for id in [
        "ssh_permit_root_login",
        "ssh_password_authentication",
        "ssh_max_auth_tries",
        "ssh_x11_forwarding",
        "sshd_config_mode",
    ] {
        assert_eq!(t.check(id).0, Status::NotApplicable, "{id}");
    }
    // Unreadable essentials are errors, not passes.
    std::fs::remove_file(t.0.join("etc/login.defs")).expect("rm");
    assert_eq!(t.check("pass_max_days").0, Status::Error);
}

/// This host, as it is: every check answers, with evidence.
#[test]
fn this_host_is_checked() {
    let out = run(Path::new("/"));
    assert_eq!(out.len(), 21);
    for o in &out {
        assert!(!o.evidence.is_empty(), "{}", o.check_id);
    }
    let aslr = out
        .iter()
        .find(|o| o.check_id == "sysctl_aslr")
        .expect("aslr");
    let real = std::fs::read_to_string("/proc/sys/kernel/randomize_va_space").unwrap_or_default();
    assert_eq!(
        aslr.evidence,
        format!("kernel.randomize_va_space = {}", real.trim())
    );
}
