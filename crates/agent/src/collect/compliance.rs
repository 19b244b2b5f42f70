//! Host compliance checks (CONTRACT 25): the twenty-one checks of SSH, accounts, file modes,
//! auditing, kernel settings and mounts that CIS Debian, ISO 27001, SOC 2 and NIS2 controls
//! map to, each read from the host under a root directory (`/` on a host; a fixture tree in
//! tests) and answering `pass`, `fail`, `not_applicable` or `error` with the evidence it saw
//! and what to do about it.
//!
//! sshd's settings are its effective ones: `sshd -T` on the host itself, else the
//! configuration files read as sshd reads them (the first value of a keyword wins, `Include`
//! files in place, nothing after the first `Match`), over OpenSSH's defaults. The file-system
//! walks (world-writable files, sticky bits, unowned files) are bounded in depth and count.

use std::collections::{BTreeMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// A check's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// The setting is as the control wants it.
    Pass,
    /// It is not.
    Fail,
    /// The host does not have what the check looks at (no sshd).
    NotApplicable,
    /// The check could not read what it needs.
    Error,
}

impl Status {
    /// As the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::NotApplicable => "not_applicable",
            Status::Error => "error",
        }
    }
}

/// One check's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The check (CONTRACT 25's id).
    pub check_id: &'static str,
    /// Its verdict.
    pub status: Status,
    /// What was seen.
    pub evidence: String,
    /// What to do about a failure.
    pub remediation: &'static str,
}

/// The host as the checks read it.
pub struct Host {
    root: PathBuf,
    sshd: Option<BTreeMap<String, String>>,
    sshd_source: String,
}

/// At most this many entries are looked at by a file-system walk, this deep.
const WALK_LIMIT: usize = 200_000;
const WALK_DEPTH: usize = 12;

impl Host {
    /// The host under `root` (`/` for this host: sshd's settings from `sshd -T`).
    pub fn new(root: &Path) -> Host {
        let mut h = Host {
            root: root.to_owned(),
            sshd: None,
            sshd_source: String::new(),
        };
        if root == Path::new("/")
            && let Some(t) = sshd_t()
        {
            h.sshd = Some(t);
            h.sshd_source = "sshd -T".into();
        } else if h.path("etc/ssh/sshd_config").is_file() {
            let mut seen = BTreeMap::new();
            read_sshd_config(&h.root, &h.path("etc/ssh/sshd_config"), &mut seen, 0);
            h.sshd = Some(seen);
            h.sshd_source = "/etc/ssh/sshd_config".into();
        }
        h
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel.trim_start_matches('/'))
    }

    fn read(&self, rel: &str) -> Option<String> {
        crate::collect::honeypot::read_own(self.path(rel)).ok()
    }

    /// An effective sshd setting (lower-case keyword), with OpenSSH's default.
    fn sshd(&self, key: &str) -> Option<String> {
        let s = self.sshd.as_ref()?;
        let default = match key {
            "permitrootlogin" => "prohibit-password",
            "passwordauthentication" => "yes",
            "maxauthtries" => "6",
            "x11forwarding" => "no",
            _ => "",
        };
        Some(s.get(key).cloned().unwrap_or_else(|| default.to_owned()))
    }
}

/// `sshd -T`'s effective settings, when sshd is installed and can tell.
fn sshd_t() -> Option<BTreeMap<String, String>> {
    let out = std::process::Command::new("sshd")
        .arg("-T")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut map = BTreeMap::new();
    for l in text.lines() {
        if let Some((k, v)) = l.split_once(' ') {
            map.entry(k.to_ascii_lowercase())
                .or_insert_with(|| v.trim().to_owned());
        }
    }
    (!map.is_empty()).then_some(map)
}

/// Reads an sshd configuration file as sshd does: the first value of a keyword wins,
/// `Include` (relative to `/etc/ssh`, globs allowed) read in place, nothing after `Match`.
/// Returns whether a `Match` ended the global part.
fn read_sshd_config(
    root: &Path,
    file: &Path,
    seen: &mut BTreeMap<String, String>,
    depth: usize,
) -> bool {
    if depth > 8 {
        return false;
    }
    let Ok(text) = crate::collect::honeypot::read_own(file) else {
        return false;
    };
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = match line.split_once(|c: char| c.is_whitespace() || c == '=') {
            Some((k, v)) => (
                k.to_ascii_lowercase(),
                v.trim_start_matches([' ', '\t', '=']).trim().to_owned(),
            ),
            None => (line.to_ascii_lowercase(), String::new()),
        };
        match key.as_str() {
            "match" => return true,
            "include" => {
                for pattern in value.split_whitespace() {
                    let rel = if pattern.starts_with('/') {
                        pattern.to_owned()
                    } else {
                        format!("/etc/ssh/{pattern}")
                    };
                    let mut files = glob(root, &rel);
                    files.sort();
                    for f in files {
                        if read_sshd_config(root, &f, seen, depth + 1) {
                            return true;
                        }
                    }
                }
            }
            _ => {
                seen.entry(key).or_insert(value.to_ascii_lowercase());
            }
        }
    }
    false
}

/// The files under `root` a pattern with `*` in its last part names.
fn glob(root: &Path, pattern: &str) -> Vec<PathBuf> {
    let full = root.join(pattern.trim_start_matches('/'));
    let (Some(dir), Some(name)) = (full.parent(), full.file_name().and_then(|n| n.to_str())) else {
        return Vec::new();
    };
    if !name.contains('*') {
        return if full.is_file() {
            vec![full]
        } else {
            Vec::new()
        };
    }
    let (pre, post) = name.split_once('*').unwrap_or((name, ""));
    crate::collect::honeypot::read_dir_own(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    p.is_file()
                        && p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                            n.starts_with(pre)
                                && n.ends_with(post)
                                && n.len() >= pre.len() + post.len()
                        })
                })
                .collect()
        })
        .unwrap_or_default()
}

type Run = fn(&Host) -> (Status, String);

/// The checks' code, in [`trusthub_core::compliance::CHECKS`]'s order: `(id, run)`.
pub const RUNS: [(&str, Run); 21] = [
    ("ssh_permit_root_login", permit_root_login),
    ("ssh_password_authentication", password_authentication),
    ("ssh_max_auth_tries", max_auth_tries),
    ("ssh_x11_forwarding", x11_forwarding),
    ("sshd_config_mode", sshd_config_mode),
    ("passwd_mode", passwd_mode),
    ("shadow_mode", shadow_mode),
    ("pass_max_days", pass_max_days),
    ("pass_min_days", pass_min_days),
    ("pwquality", pwquality),
    ("empty_passwords", empty_passwords),
    ("uid0_only_root", uid0_only_root),
    ("world_writable_files", world_writable_files),
    ("sticky_bits", sticky_bits),
    ("unowned_files", unowned_files),
    ("auditd", auditd),
    ("audit_rules", audit_rules),
    ("sysctl_network", sysctl_network),
    ("sysctl_aslr", sysctl_aslr),
    ("unused_filesystems", unused_filesystems),
    ("tmp_mount", tmp_mount),
];

/// Runs every check.
pub fn run(root: &Path) -> Vec<Outcome> {
    let host = Host::new(root);
    RUNS.iter()
        .zip(trusthub_core::compliance::CHECKS.iter())
        .map(|((id, f), meta)| {
            let (status, evidence) = f(&host);
            Outcome {
                check_id: id,
                status,
                evidence,
                remediation: meta.remediation,
            }
        })
        .collect()
}

fn ssh_setting(h: &Host, key: &str, ok: impl Fn(&str) -> bool) -> (Status, String) {
    match h.sshd(key) {
        None => (
            Status::NotApplicable,
            "sshd is not installed (no sshd_config)".into(),
        ),
        Some(v) => (
            if ok(&v) { Status::Pass } else { Status::Fail },
            format!(
                "{key} {v} ({}{})",
                h.sshd_source,
                if h.sshd.as_ref().is_some_and(|s| s.contains_key(key)) {
                    ""
                } else {
                    ", OpenSSH's default"
                }
            ),
        ),
    }
}

fn permit_root_login(h: &Host) -> (Status, String) {
    ssh_setting(h, "permitrootlogin", |v| {
        matches!(v, "no" | "prohibit-password" | "without-password")
    })
}

fn password_authentication(h: &Host) -> (Status, String) {
    ssh_setting(h, "passwordauthentication", |v| v == "no")
}

fn max_auth_tries(h: &Host) -> (Status, String) {
    ssh_setting(h, "maxauthtries", |v| {
        v.parse::<u32>().is_ok_and(|n| n <= 4)
    })
}

fn x11_forwarding(h: &Host) -> (Status, String) {
    ssh_setting(h, "x11forwarding", |v| v == "no")
}

/// A file's mode is at most `max` (no bit outside it) and it is owned by root.
fn mode_at_most(h: &Host, rel: &str, max: u32, applicable_without: bool) -> (Status, String) {
    match std::fs::metadata(h.path(rel)) {
        Err(_) if applicable_without => (Status::Error, format!("{rel} cannot be read")),
        Err(_) => (Status::NotApplicable, format!("{rel} does not exist")),
        Ok(m) => {
            let mode = m.mode() & 0o7777;
            let ok = mode & !max == 0 && m.uid() == 0;
            (
                if ok { Status::Pass } else { Status::Fail },
                format!(
                    "{rel} mode {mode:04o} owner uid {} gid {} (at most {max:04o}, owned by root)",
                    m.uid(),
                    m.gid()
                ),
            )
        }
    }
}

fn sshd_config_mode(h: &Host) -> (Status, String) {
    mode_at_most(h, "/etc/ssh/sshd_config", 0o600, false)
}

fn passwd_mode(h: &Host) -> (Status, String) {
    mode_at_most(h, "/etc/passwd", 0o644, true)
}

fn shadow_mode(h: &Host) -> (Status, String) {
    mode_at_most(h, "/etc/shadow", 0o640, true)
}

/// A `KEY value` of /etc/login.defs.
fn login_defs(h: &Host, key: &str) -> Option<Option<i64>> {
    let text = h.read("/etc/login.defs")?;
    Some(
        text.lines()
            .map(str::trim)
            .filter(|l| !l.starts_with('#'))
            .find_map(|l| {
                let mut w = l.split_whitespace();
                (w.next() == Some(key))
                    .then(|| w.next().and_then(|v| v.parse().ok()))
                    .flatten()
            }),
    )
}

fn pass_max_days(h: &Host) -> (Status, String) {
    match login_defs(h, "PASS_MAX_DAYS") {
        None => (Status::Error, "/etc/login.defs cannot be read".into()),
        Some(None) => (
            Status::Fail,
            "PASS_MAX_DAYS is not set (passwords never expire)".into(),
        ),
        Some(Some(d)) => (
            if (1..=365).contains(&d) {
                Status::Pass
            } else {
                Status::Fail
            },
            format!("PASS_MAX_DAYS {d} (/etc/login.defs)"),
        ),
    }
}

fn pass_min_days(h: &Host) -> (Status, String) {
    match login_defs(h, "PASS_MIN_DAYS") {
        None => (Status::Error, "/etc/login.defs cannot be read".into()),
        Some(None) => (Status::Fail, "PASS_MIN_DAYS is not set (0)".into()),
        Some(Some(d)) => (
            if d >= 1 { Status::Pass } else { Status::Fail },
            format!("PASS_MIN_DAYS {d} (/etc/login.defs)"),
        ),
    }
}

fn pwquality(h: &Host) -> (Status, String) {
    // pwquality.conf, then its .d files (later files win, as libpwquality reads them).
    let mut files = vec![h.path("/etc/security/pwquality.conf")];
    let mut more = glob(&h.root, "/etc/security/pwquality.conf.d/*.conf");
    more.sort();
    files.extend(more);
    let mut minlen: Option<(i64, String)> = None;
    for f in &files {
        for l in crate::collect::honeypot::read_own(f)
            .unwrap_or_default()
            .lines()
        {
            let l = l.trim();
            if let Some((k, v)) = l.split_once('=')
                && !l.starts_with('#')
                && k.trim() == "minlen"
                && let Ok(n) = v.trim().parse::<i64>()
            {
                let shown = f
                    .strip_prefix(&h.root)
                    .map(|p| format!("/{}", p.display()))
                    .unwrap_or_default();
                minlen = Some((n, shown));
            }
        }
    }
    let pam = [
        "/etc/pam.d/common-password",
        "/etc/pam.d/system-auth",
        "/etc/pam.d/password-auth",
    ]
    .iter()
    .filter_map(|f| h.read(f))
    .any(|t| {
        t.lines()
            .any(|l| !l.trim_start().starts_with('#') && l.contains("pam_pwquality.so"))
    });
    match (minlen, pam) {
        (_, false) => (
            Status::Fail,
            "pam_pwquality is not in the PAM password stack".into(),
        ),
        (None, true) => (
            Status::Fail,
            "pam_pwquality is used with its default minlen 8".into(),
        ),
        (Some((n, f)), true) => (
            if n >= 14 { Status::Pass } else { Status::Fail },
            format!("minlen = {n} ({f})"),
        ),
    }
}

fn empty_passwords(h: &Host) -> (Status, String) {
    let Some(shadow) = h.read("/etc/shadow") else {
        return (Status::Error, "/etc/shadow cannot be read".into());
    };
    let empty: Vec<&str> = shadow
        .lines()
        .filter_map(|l| {
            let mut f = l.split(':');
            let user = f.next()?;
            f.next()?.is_empty().then_some(user)
        })
        .collect();
    if empty.is_empty() {
        (
            Status::Pass,
            format!(
                "{} account(s), none with an empty password",
                shadow.lines().filter(|l| l.contains(':')).count()
            ),
        )
    } else {
        (
            Status::Fail,
            format!("empty password: {}", empty.join(", ")),
        )
    }
}

/// `/etc/passwd` as `(name, uid)`.
fn users(h: &Host) -> Option<Vec<(String, u32)>> {
    Some(
        h.read("/etc/passwd")?
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split(':').collect();
                Some((f.first()?.to_string(), f.get(2)?.parse().ok()?))
            })
            .collect(),
    )
}

fn uid0_only_root(h: &Host) -> (Status, String) {
    let Some(u) = users(h) else {
        return (Status::Error, "/etc/passwd cannot be read".into());
    };
    let zero: Vec<&str> = u
        .iter()
        .filter(|(_, id)| *id == 0)
        .map(|(n, _)| n.as_str())
        .collect();
    (
        if zero == ["root"] {
            Status::Pass
        } else {
            Status::Fail
        },
        format!(
            "UID 0: {}",
            if zero.is_empty() {
                "none".into()
            } else {
                zero.join(", ")
            }
        ),
    )
}

/// The system directories the walks look in.
const SYSTEM_DIRS: [&str; 9] = [
    "/etc", "/usr", "/bin", "/sbin", "/lib", "/opt", "/var", "/srv", "/root",
];

/// Walks the system directories (not into other file systems' pseudo trees, not following
/// links), calling `f` with each entry's path relative to the root and metadata; whether
/// the walk was cut short by its bounds.
fn walk(h: &Host, mut f: impl FnMut(&str, &std::fs::Metadata)) -> bool {
    let mut seen = 0usize;
    let mut stack: Vec<(PathBuf, usize)> = SYSTEM_DIRS.iter().map(|d| (h.path(d), 0)).collect();
    while let Some((dir, depth)) = stack.pop() {
        let Ok(entries) = crate::collect::honeypot::read_dir_own(&dir) else {
            continue;
        };
        for e in entries.filter_map(Result::ok) {
            seen += 1;
            if seen > WALK_LIMIT {
                return true;
            }
            let p = e.path();
            let Ok(m) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            let rel = p
                .strip_prefix(&h.root)
                .map(|r| format!("/{}", r.display()))
                .unwrap_or_default();
            if rel.starts_with("/var/lib/docker") || rel.starts_with("/var/lib/containers") {
                continue;
            }
            f(&rel, &m);
            if m.is_dir() && depth < WALK_DEPTH {
                stack.push((p, depth + 1));
            }
        }
    }
    false
}

fn listed(what: &str, found: &[String], cut: bool) -> (Status, String) {
    let more = if cut {
        " (the walk stopped at its bound)"
    } else {
        ""
    };
    if found.is_empty() {
        (
            Status::Pass,
            format!("no {what} under {}{more}", SYSTEM_DIRS.join(" ")),
        )
    } else {
        let shown: Vec<&str> = found.iter().take(20).map(String::as_str).collect();
        let rest = found.len().saturating_sub(20);
        (
            Status::Fail,
            format!(
                "{} {what}: {}{}{more}",
                found.len(),
                shown.join(", "),
                if rest > 0 {
                    format!(" and {rest} more")
                } else {
                    String::new()
                }
            ),
        )
    }
}

fn world_writable_files(h: &Host) -> (Status, String) {
    let mut found = Vec::new();
    let cut = walk(h, |rel, m| {
        if m.is_file() && m.mode() & 0o002 != 0 {
            found.push(rel.to_owned());
        }
    });
    listed("world-writable file(s)", &found, cut)
}

fn sticky_bits(h: &Host) -> (Status, String) {
    let mut found = Vec::new();
    let mut dirs = vec![];
    for d in ["/tmp", "/var/tmp", "/dev/shm"] {
        if let Ok(m) = std::fs::symlink_metadata(h.path(d)) {
            dirs.push((d.to_owned(), m));
        }
    }
    let cut = walk(h, |rel, m| {
        if m.is_dir() && m.mode() & 0o002 != 0 && m.mode() & 0o1000 == 0 {
            found.push(rel.to_owned());
        }
    });
    for (d, m) in dirs {
        if m.is_dir() && m.mode() & 0o002 != 0 && m.mode() & 0o1000 == 0 && !found.contains(&d) {
            found.push(d);
        }
    }
    listed(
        "world-writable director(ies) without the sticky bit",
        &found,
        cut,
    )
}

fn unowned_files(h: &Host) -> (Status, String) {
    let (Some(u), Some(groups)) = (users(h), h.read("/etc/group")) else {
        return (
            Status::Error,
            "/etc/passwd or /etc/group cannot be read".into(),
        );
    };
    let uids: HashSet<u32> = u.iter().map(|(_, id)| *id).collect();
    let gids: HashSet<u32> = groups
        .lines()
        .filter_map(|l| l.split(':').nth(2)?.parse().ok())
        .collect();
    let mut found = Vec::new();
    let cut = walk(h, |rel, m| {
        if !uids.contains(&m.uid()) || !gids.contains(&m.gid()) {
            found.push(format!("{rel} ({}:{})", m.uid(), m.gid()));
        }
    });
    listed("file(s) without a known owner or group", &found, cut)
}

fn auditd(h: &Host) -> (Status, String) {
    match ["/sbin/auditd", "/usr/sbin/auditd"]
        .iter()
        .find(|p| h.path(p).is_file())
    {
        Some(p) => (Status::Pass, format!("{p} is installed")),
        None => (Status::Fail, "auditd is not installed".into()),
    }
}

fn audit_rules(h: &Host) -> (Status, String) {
    let mut files = glob(&h.root, "/etc/audit/rules.d/*.rules");
    files.push(h.path("/etc/audit/audit.rules"));
    let text: String = files
        .iter()
        .filter_map(|f| crate::collect::honeypot::read_own(f).ok())
        .collect::<Vec<_>>()
        .join("\n");
    let watched = |file: &str| {
        text.lines()
            .map(str::trim)
            .filter(|l| !l.starts_with('#'))
            .any(|l| {
                (l.starts_with(&format!("-w {file} ")) && l.contains("-p") && l.contains('w'))
                    || (l.contains(&format!("path={file}"))
                        && l.contains("-F perm=")
                        && l.contains('w'))
            })
    };
    let missing: Vec<&str> = ["/etc/passwd", "/etc/shadow", "/etc/group"]
        .into_iter()
        .filter(|f| !watched(f))
        .collect();
    if missing.is_empty() {
        (
            Status::Pass,
            "writes to /etc/passwd, /etc/shadow and /etc/group are audited".into(),
        )
    } else {
        (
            Status::Fail,
            format!("no audit rule watches writes to {}", missing.join(", ")),
        )
    }
}

fn sysctl(h: &Host, name: &str) -> Option<String> {
    h.read(&format!("/proc/sys/{}", name.replace('.', "/")))
        .map(|v| v.trim().to_owned())
}

fn sysctl_network(h: &Host) -> (Status, String) {
    let mut seen = Vec::new();
    let mut ok = true;
    for k in [
        "net.ipv4.ip_forward",
        "net.ipv4.conf.all.accept_redirects",
        "net.ipv4.conf.all.send_redirects",
    ] {
        match sysctl(h, k) {
            Some(v) => {
                ok &= v == "0";
                seen.push(format!("{k} = {v}"));
            }
            None => return (Status::Error, format!("{k} cannot be read")),
        }
    }
    (
        if ok { Status::Pass } else { Status::Fail },
        seen.join(", "),
    )
}

fn sysctl_aslr(h: &Host) -> (Status, String) {
    match sysctl(h, "kernel.randomize_va_space") {
        Some(v) => (
            if v == "2" { Status::Pass } else { Status::Fail },
            format!("kernel.randomize_va_space = {v}"),
        ),
        None => (
            Status::Error,
            "kernel.randomize_va_space cannot be read".into(),
        ),
    }
}

fn unused_filesystems(h: &Host) -> (Status, String) {
    const MODULES: [&str; 6] = ["cramfs", "freevxfs", "jffs2", "hfs", "hfsplus", "udf"];
    let mut conf = String::new();
    for pattern in [
        "/etc/modprobe.d/*.conf",
        "/lib/modprobe.d/*.conf",
        "/usr/lib/modprobe.d/*.conf",
    ] {
        for f in glob(&h.root, pattern) {
            conf.push_str(&crate::collect::honeypot::read_own(f).unwrap_or_default());
            conf.push('\n');
        }
    }
    let loaded: HashSet<String> = h
        .read("/proc/modules")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect();
    let disabled = |m: &str| {
        conf.lines().map(str::trim).any(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w.len() >= 3
                && w[0] == "install"
                && w[1] == m
                && (w[2].ends_with("/false") || w[2].ends_with("/true"))
        })
    };
    let bad: Vec<String> = MODULES
        .iter()
        .filter_map(|m| match (disabled(m), loaded.contains(*m)) {
            (_, true) => Some(format!("{m} (loaded)")),
            (false, false) => Some(format!("{m} (loadable)")),
            (true, false) => None,
        })
        .collect();
    if bad.is_empty() {
        (
            Status::Pass,
            format!("{} cannot be loaded", MODULES.join(", ")),
        )
    } else {
        (Status::Fail, bad.join(", "))
    }
}

fn tmp_mount(h: &Host) -> (Status, String) {
    let Some(mounts) = h
        .read("/proc/mounts")
        .or_else(|| h.read("/proc/self/mounts"))
    else {
        return (Status::Error, "/proc/mounts cannot be read".into());
    };
    // The last mount on /tmp is the one in effect.
    let Some(line) = mounts
        .lines()
        .rfind(|l| l.split_whitespace().nth(1) == Some("/tmp"))
    else {
        return (Status::Fail, "/tmp is not a separate mount".into());
    };
    let f: Vec<&str> = line.split_whitespace().collect();
    let opts: HashSet<&str> = f.get(3).map(|o| o.split(',').collect()).unwrap_or_default();
    let missing: Vec<&str> = ["nodev", "nosuid", "noexec"]
        .into_iter()
        .filter(|o| !opts.contains(o))
        .collect();
    let seen = format!(
        "/tmp: {} {}",
        f.get(2).unwrap_or(&"?"),
        f.get(3).unwrap_or(&"?")
    );
    if missing.is_empty() {
        (Status::Pass, seen)
    } else {
        (
            Status::Fail,
            format!("{seen} (missing {})", missing.join(", ")),
        )
    }
}

#[cfg(test)]
mod tests;
