//! Host compliance (CONTRACT 25): the checks agents run, and what agents report about their
//! host's integrity — compliance results, the host's "DNA" and touched honeypots — as the
//! batch carries them, with the limits the hub holds them to.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use uuid::Uuid;

/// A host check: its id, what it asks, what to do when it fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Check {
    /// CONTRACT 25's id.
    pub id: &'static str,
    /// What the check asks, as a statement that holds when it passes.
    pub title: &'static str,
    /// What to do about a failure.
    pub remediation: &'static str,
}

/// Every check, in the order agents run them.
pub const CHECKS: [Check; 21] = [
    Check {
        id: "ssh_permit_root_login",
        title: "SSH root login is disabled or key-only",
        remediation: "Set `PermitRootLogin no` (or `prohibit-password`) in /etc/ssh/sshd_config and reload sshd.",
    },
    Check {
        id: "ssh_password_authentication",
        title: "SSH password authentication is disabled",
        remediation: "Set `PasswordAuthentication no` in /etc/ssh/sshd_config (keys only) and reload sshd.",
    },
    Check {
        id: "ssh_max_auth_tries",
        title: "SSH allows at most 4 authentication attempts",
        remediation: "Set `MaxAuthTries 4` (or fewer) in /etc/ssh/sshd_config and reload sshd.",
    },
    Check {
        id: "ssh_x11_forwarding",
        title: "SSH X11 forwarding is disabled",
        remediation: "Set `X11Forwarding no` in /etc/ssh/sshd_config and reload sshd.",
    },
    Check {
        id: "sshd_config_mode",
        title: "sshd_config is readable by root only",
        remediation: "chown root:root /etc/ssh/sshd_config && chmod 600 /etc/ssh/sshd_config",
    },
    Check {
        id: "passwd_mode",
        title: "/etc/passwd is not writable by group or others",
        remediation: "chown root:root /etc/passwd && chmod 644 /etc/passwd",
    },
    Check {
        id: "shadow_mode",
        title: "/etc/shadow is readable by root and the shadow group only",
        remediation: "chown root:shadow /etc/shadow && chmod 640 /etc/shadow",
    },
    Check {
        id: "pass_max_days",
        title: "Passwords expire within 365 days",
        remediation: "Set `PASS_MAX_DAYS 365` (or less) in /etc/login.defs and `chage --maxdays 365 <user>` for existing users.",
    },
    Check {
        id: "pass_min_days",
        title: "Passwords cannot be changed again within a day",
        remediation: "Set `PASS_MIN_DAYS 1` in /etc/login.defs and `chage --mindays 1 <user>` for existing users.",
    },
    Check {
        id: "pwquality",
        title: "Passwords are at least 14 characters (pam_pwquality)",
        remediation: "Install libpam-pwquality and set `minlen = 14` in /etc/security/pwquality.conf.",
    },
    Check {
        id: "empty_passwords",
        title: "No account has an empty password",
        remediation: "Lock each listed account (`passwd -l <user>`) or give it a password.",
    },
    Check {
        id: "uid0_only_root",
        title: "Only root has UID 0",
        remediation: "Remove the other UID 0 accounts or give them their own UID (`usermod -u <uid> <user>`).",
    },
    Check {
        id: "world_writable_files",
        title: "No world-writable files in system directories",
        remediation: "Remove write permission for others (`chmod o-w <file>`) from each listed file.",
    },
    Check {
        id: "sticky_bits",
        title: "World-writable directories have the sticky bit",
        remediation: "Set the sticky bit on each listed directory (`chmod +t <dir>`).",
    },
    Check {
        id: "unowned_files",
        title: "Every file in system directories has a known owner and group",
        remediation: "Give each listed file an existing owner and group (`chown root:root <file>`), or remove it.",
    },
    Check {
        id: "auditd",
        title: "auditd is installed",
        remediation: "apt-get install auditd audispd-plugins && systemctl enable --now auditd",
    },
    Check {
        id: "audit_rules",
        title: "Audit rules watch the identity files",
        remediation: "Add `-w /etc/passwd -p wa -k identity`, `-w /etc/shadow -p wa -k identity` and `-w /etc/group -p wa -k identity` to /etc/audit/rules.d/50-identity.rules, then `augenrules --load`.",
    },
    Check {
        id: "sysctl_network",
        title: "IP forwarding and ICMP redirects are off",
        remediation: "Set net.ipv4.ip_forward = 0, net.ipv4.conf.all.accept_redirects = 0 and net.ipv4.conf.all.send_redirects = 0 in /etc/sysctl.d/60-net.conf, then `sysctl --system`.",
    },
    Check {
        id: "sysctl_aslr",
        title: "Address space layout randomisation is full",
        remediation: "Set kernel.randomize_va_space = 2 in /etc/sysctl.d/60-aslr.conf, then `sysctl --system`.",
    },
    Check {
        id: "unused_filesystems",
        title: "Unused file-system modules cannot be loaded",
        remediation: "For each listed module add `install <module> /bin/false` and `blacklist <module>` to /etc/modprobe.d/<module>.conf and unload it (`modprobe -r <module>`).",
    },
    Check {
        id: "tmp_mount",
        title: "/tmp is its own mount with nodev, nosuid and noexec",
        remediation: "Mount /tmp separately (systemd's tmp.mount or an fstab line) with `nodev,nosuid,noexec`.",
    },
];

/// 1 to 64 of a-z, 0-9 and `_`.
fn is_check_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_')
}

/// The check of `id`.
pub fn check(id: &str) -> Option<&'static Check> {
    CHECKS.iter().find(|c| c.id == id)
}

/// The verdicts a check can give.
pub const STATUSES: [&str; 4] = ["pass", "fail", "not_applicable", "error"];

/// Seconds between an agent's own compliance runs unless governance says otherwise.
pub const DEFAULT_INTERVAL_SECS: i64 = 43_200;

/// Most results in one report, characters of evidence and of remediation text.
pub const MAX_RESULTS: usize = 200;
const MAX_EVIDENCE: usize = 4_000;
const MAX_REMEDIATION: usize = 1_000;

/// One run of the checks on a host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    /// The hub's run this answers (`POST /compliance/run`); absent for the agent's own
    /// scheduled runs.
    #[serde(default)]
    pub run_id: Option<Uuid>,
    /// When the checks ran.
    #[serde(with = "time::serde::rfc3339")]
    pub checked_at: OffsetDateTime,
    /// One per check.
    pub results: Vec<CheckResult>,
}

/// One check's result on a host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckResult {
    /// The check.
    pub check_id: String,
    /// `pass`, `fail`, `not_applicable` or `error`.
    pub status: String,
    /// What was seen.
    pub evidence: String,
    /// What to do about a failure.
    pub remediation: String,
}

impl Report {
    /// Refuses what the hub does not keep: `(field, message)` of each problem.
    pub fn problems(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        if self.results.len() > MAX_RESULTS {
            out.push(("results".into(), format!("at most {MAX_RESULTS} results")));
            return out;
        }
        let mut seen = std::collections::HashSet::new();
        for (i, r) in self.results.iter().enumerate() {
            let at = |f: &str| format!("results[{i}].{f}");
            if !is_check_id(&r.check_id) {
                out.push((at("check_id"), "must be 1 to 64 of a-z, 0-9 and _".into()));
            } else if !seen.insert(r.check_id.as_str()) {
                out.push((at("check_id"), format!("{} is reported twice", r.check_id)));
            }
            if !STATUSES.contains(&r.status.as_str()) {
                out.push((
                    at("status"),
                    "must be pass, fail, not_applicable or error".into(),
                ));
            }
            if r.evidence.chars().count() > MAX_EVIDENCE {
                out.push((at("evidence"), format!("at most {MAX_EVIDENCE} characters")));
            }
            if r.remediation.chars().count() > MAX_REMEDIATION {
                out.push((
                    at("remediation"),
                    format!("at most {MAX_REMEDIATION} characters"),
                ));
            }
        }
        out
    }
}

/// The host's DNA: a fingerprint over its stable parts, and the parts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dna {
    /// SHA-256 (hex) of the canonical JSON of the parts except `boot_id`.
    pub fingerprint_sha256: String,
    /// The parts.
    pub parts: DnaParts,
}

/// What makes a machine this machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DnaParts {
    /// `/etc/machine-id`.
    pub machine_id: String,
    /// This boot's id (shown, not hashed).
    pub boot_id: String,
    /// Kernel release.
    pub kernel: String,
    /// OS name.
    pub os: String,
    /// SSH host key fingerprints, `SHA256:...`, sorted.
    pub ssh_host_keys: Vec<String>,
    /// SHA-256 (hex) of the agent binary.
    pub agent_sha256: String,
}

impl DnaParts {
    /// The fingerprint of these parts.
    pub fn fingerprint(&self) -> String {
        let stable = serde_json::json!({
            "machine_id": self.machine_id,
            "kernel": self.kernel,
            "os": self.os,
            "ssh_host_keys": self.ssh_host_keys,
            "agent_sha256": self.agent_sha256,
        });
        use sha2::{Digest, Sha256};
        crate::secret::hex(&Sha256::digest(
            crate::canonical::canonical_json(&stable).as_bytes(),
        ))
    }

    /// The names of the stable parts that differ from `other`'s.
    pub fn changed_from(&self, other: &DnaParts) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.machine_id != other.machine_id {
            out.push("machine_id");
        }
        if self.kernel != other.kernel {
            out.push("kernel");
        }
        if self.os != other.os {
            out.push("os");
        }
        if self.ssh_host_keys != other.ssh_host_keys {
            out.push("ssh_host_keys");
        }
        if self.agent_sha256 != other.agent_sha256 {
            out.push("agent_sha256");
        }
        out
    }
}

impl Dna {
    /// Refuses a DNA whose fingerprint is not the hash of its parts, or whose parts are
    /// larger than a host has: `(field, message)`.
    pub fn problems(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let p = &self.parts;
        for (f, v) in [
            ("machine_id", &p.machine_id),
            ("boot_id", &p.boot_id),
            ("kernel", &p.kernel),
            ("os", &p.os),
            ("agent_sha256", &p.agent_sha256),
        ] {
            if v.chars().count() > 256 {
                out.push((format!("dna.parts.{f}"), "at most 256 characters".into()));
            }
        }
        if p.ssh_host_keys.len() > 32 || p.ssh_host_keys.iter().any(|k| k.len() > 128) {
            out.push((
                "dna.parts.ssh_host_keys".into(),
                "at most 32 fingerprints of at most 128 characters".into(),
            ));
        }
        if out.is_empty() && p.fingerprint() != self.fingerprint_sha256 {
            out.push((
                "dna.fingerprint_sha256".into(),
                "is not the SHA-256 of the canonical JSON of the stable parts".into(),
            ));
        }
        out
    }
}

/// A honeypot governance sets: a canary no one should touch.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Honeypot {
    /// `file` (an absolute path: opened, changed or removed), `user` (an account name: a
    /// login attempt in the auth log) or `port` (a TCP port the agent listens on: a
    /// connection).
    pub kind: String,
    /// The path, user name or port.
    pub target: String,
}

impl Honeypot {
    /// A honeypot of `kind` on `target` (checked by [`check_honeypots`]).
    pub fn new(kind: &str, target: &str) -> Honeypot {
        Honeypot {
            kind: kind.to_owned(),
            target: target.to_owned(),
        }
    }
}

/// Most honeypots per agent.
pub const MAX_HONEYPOTS: usize = 32;

/// The lowest port a honeypot may listen on (CONTRACT 30).
pub const HONEYPOT_MIN_PORT: u16 = 1024;

/// A `file` honeypot's target as a JSON Schema pattern ([`check_honeypots`]): absolute, no
/// `.` or `..` segment, no control character, not `/` itself.
pub const HONEYPOT_FILE_PATTERN: &str = concat!(
    r"^/(",
    r"([^/.\x00-\x1f\x7f-\x9f][^/\x00-\x1f\x7f-\x9f]*|\.[^/.\x00-\x1f\x7f-\x9f][^/\x00-\x1f\x7f-\x9f]*|\.\.[^/\x00-\x1f\x7f-\x9f]+)",
    r"(/([^/.\x00-\x1f\x7f-\x9f][^/\x00-\x1f\x7f-\x9f]*|\.[^/.\x00-\x1f\x7f-\x9f][^/\x00-\x1f\x7f-\x9f]*|\.\.[^/\x00-\x1f\x7f-\x9f]+)?)*",
    r"|(/([^/.\x00-\x1f\x7f-\x9f][^/\x00-\x1f\x7f-\x9f]*|\.[^/.\x00-\x1f\x7f-\x9f][^/\x00-\x1f\x7f-\x9f]*|\.\.[^/\x00-\x1f\x7f-\x9f]+)?)+",
    r")$"
);

/// A `user` honeypot's target as a JSON Schema pattern: a POSIX-style user name.
pub const HONEYPOT_USER_PATTERN: &str = r"^[a-z_][a-z0-9_.-]{0,31}$";

/// A `port` honeypot's target as a JSON Schema pattern: 1024 to 65535 in decimal.
pub const HONEYPOT_PORT_PATTERN: &str = r"^(102[4-9]|10[3-9][0-9]|1[1-9][0-9]{2}|[2-9][0-9]{3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])$";

/// Checks governance's honeypots: the message for the first bad one.
pub fn check_honeypots(list: &[Honeypot]) -> Result<(), String> {
    if list.len() > MAX_HONEYPOTS {
        return Err(format!("at most {MAX_HONEYPOTS} honeypots"));
    }
    let mut seen = std::collections::HashSet::new();
    for (i, h) in list.iter().enumerate() {
        let ok = match h.kind.as_str() {
            "file" => {
                h.target.starts_with('/')
                    && h.target.len() <= 1024
                    && !h.target.split('/').any(|s| s == ".." || s == ".")
                    && !h.target.chars().any(char::is_control)
                    && h.target != "/"
            }
            "user" => {
                let b = h.target.as_bytes();
                !b.is_empty()
                    && b.len() <= 32
                    && (b[0].is_ascii_lowercase() || b[0] == b'_')
                    && b.iter().all(|c| {
                        c.is_ascii_lowercase()
                            || c.is_ascii_digit()
                            || matches!(c, b'_' | b'-' | b'.')
                    })
            }
            // CONTRACT 30: unprivileged ports only; a privileged one would be a real
            // service's (and the agent would bind it as root).
            "port" => {
                h.target.bytes().all(|b| b.is_ascii_digit())
                    && h.target
                        .parse::<u16>()
                        .is_ok_and(|p| p >= HONEYPOT_MIN_PORT)
                    && !h.target.starts_with('0')
            }
            other => {
                return Err(format!(
                    "honeypots[{i}].kind `{other}` is not file, user or port"
                ));
            }
        };
        if !ok {
            return Err(format!(
                "honeypots[{i}].target `{}` is not {}",
                h.target.chars().take(80).collect::<String>(),
                match h.kind.as_str() {
                    "file" => "an absolute path without . or .. segments",
                    "user" => "a user name (a-z, 0-9, _, -, . ; at most 32)",
                    _ => "a TCP port 1024 to 65535",
                }
            ));
        }
        if !seen.insert(h) {
            return Err(format!("honeypots[{i}] is listed twice"));
        }
    }
    Ok(())
}

/// A honeypot touched, as the agent saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HoneypotEvent {
    /// `file`, `user` or `port`.
    pub kind: String,
    /// Which one.
    pub target: String,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// What happened (the event, the log line, the remote address).
    pub detail: String,
}

/// Most honeypot events in one batch.
pub const MAX_EVENTS: usize = 100;

/// Whether a governed honeypot is armed on its host (CONTRACT 30): a port in use, a file
/// that cannot be watched or an auth log that cannot be read is not, and says why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HoneypotState {
    /// `file`, `user` or `port`.
    pub kind: String,
    /// Which one.
    pub target: String,
    /// Whether it watches.
    pub armed: bool,
    /// Why not (at most 500 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

impl HoneypotState {
    /// What is wrong with a reported state, if anything.
    pub fn problem(&self) -> Option<String> {
        if !["file", "user", "port"].contains(&self.kind.as_str()) {
            return Some("kind must be file, user or port".into());
        }
        if self.target.is_empty() || self.target.chars().count() > 1024 {
            return Some("target must be 1 to 1024 characters".into());
        }
        if self.why.as_ref().is_some_and(|w| w.chars().count() > 500) {
            return Some("why is at most 500 characters".into());
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn honeypots_are_checked_naming_the_bad_one() {
        assert!(
            check_honeypots(&[
                Honeypot::new("file", "/etc/backup-keys.txt"),
                Honeypot::new("user", "oracle"),
                Honeypot::new("port", "2323")
            ])
            .is_ok()
        );
        for (bad, says) in [
            (Honeypot::new("dir", "/x"), "kind `dir`"),
            (Honeypot::new("file", "etc/x"), "absolute path"),
            (Honeypot::new("file", "/etc/../x"), "absolute path"),
            (Honeypot::new("user", "Root"), "user name"),
            (Honeypot::new("user", ""), "user name"),
            (Honeypot::new("port", "0"), "TCP port"),
            (Honeypot::new("port", "65536"), "TCP port"),
            (Honeypot::new("port", "022"), "TCP port"),
        ] {
            let e = check_honeypots(&[bad]).expect_err(says);
            assert!(e.contains(says), "{e}");
        }
        assert!(
            check_honeypots(&[Honeypot::new("port", "2323"), Honeypot::new("port", "2323")])
                .expect_err("twice")
                .contains("twice")
        );
    }

    #[test]
    fn dna_fingerprints_cover_the_stable_parts_only() {
        let parts = DnaParts {
            machine_id: "m".into(),
            boot_id: "b1".into(),
            kernel: "6.1".into(),
            os: "Debian".into(),
            ssh_host_keys: vec!["SHA256:abc".into()],
            agent_sha256: "00".into(),
        };
        let mut rebooted = parts.clone();
        rebooted.boot_id = "b2".into();
        assert_eq!(parts.fingerprint(), rebooted.fingerprint());
        assert!(rebooted.changed_from(&parts).is_empty());
        let mut other = parts.clone();
        other.machine_id = "n".into();
        assert_ne!(parts.fingerprint(), other.fingerprint());
        assert_eq!(other.changed_from(&parts), ["machine_id"]);
        let dna = Dna {
            fingerprint_sha256: parts.fingerprint(),
            parts: parts.clone(),
        };
        assert!(dna.problems().is_empty());
        let forged = Dna {
            fingerprint_sha256: parts.fingerprint(),
            parts: other,
        };
        assert_eq!(forged.problems()[0].0, "dna.fingerprint_sha256");
    }

    #[test]
    fn reports_refuse_unknown_statuses_and_repeats() {
        let r = |id: &str, status: &str| CheckResult {
            check_id: id.into(),
            status: status.into(),
            evidence: "e".into(),
            remediation: "r".into(),
        };
        let report = Report {
            run_id: None,
            checked_at: OffsetDateTime::UNIX_EPOCH,
            results: vec![r("auditd", "pass"), r("auditd", "fail"), r("Bad", "passed")],
        };
        let p = report.problems();
        let fields: Vec<&str> = p.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            fields,
            [
                "results[1].check_id",
                "results[2].check_id",
                "results[2].status"
            ]
        );
        assert_eq!(CHECKS.len(), 21);
        assert!(check("tmp_mount").is_some() && check("nope").is_none());
    }
}
