//! Configuration drift (CONTRACT 20; SPEC 1.7, 4.1, 6.3): what an agent reports about each
//! watched file, the glob language of `config_paths`, and the pure rule that turns a
//! baseline and a report into a drift state, explained by a package update or not.
//!
//! Content never leaves the host: a report carries hashes and attributes only.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// The files watched when governance names none: the security-relevant ones.
pub const DEFAULT_CONFIG_PATHS: [&str; 13] = [
    "/etc/ssh/sshd_config*",
    "/etc/passwd",
    "/etc/group",
    "/etc/shadow",
    "/etc/sudoers",
    "/etc/sudoers.d/*",
    "/etc/crontab",
    "/etc/cron.d/*",
    "/etc/systemd/system/**",
    "/etc/hosts",
    "/etc/resolv.conf",
    "/etc/pam.d/*",
    "/etc/audit/rules.d/*",
];

/// Default seconds between two scans.
pub const DEFAULT_SCAN_INTERVAL_SECS: i64 = 3600;
/// Most patterns in `config_paths`.
pub const MAX_CONFIG_PATHS: usize = 256;
/// Most entries in one report (a glob over a big tree is cut here, said in the log).
pub const MAX_REPORTED_FILES: usize = 10_000;
/// Longest path.
pub const MAX_PATH: usize = 4096;

/// What a path is on the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A regular file.
    File,
    /// A symbolic link (not followed: `link_target` says where it points).
    Symlink,
    /// Nothing there (a literal watched path that does not exist).
    Missing,
    /// A FIFO, socket or device (CONTRACT 30): reported with its attributes, never read.
    Special,
    /// A regular file over the agent's `--config-max-file-bytes` (CONTRACT 30): size and
    /// modification time, no hash.
    TooLarge,
}

impl Kind {
    /// Its wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::File => "file",
            Kind::Symlink => "symlink",
            Kind::Missing => "missing",
            Kind::Special => "special",
            Kind::TooLarge => "too_large",
        }
    }
}

/// One watched path as the agent saw it (CONTRACT 20).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigHash {
    /// Absolute path.
    pub path: String,
    /// SHA-256 of the content (of the link target's name for a symlink), hex; null when
    /// missing.
    #[serde(default)]
    pub sha256: Option<String>,
    /// Bytes.
    #[serde(default)]
    pub size: Option<u64>,
    /// Permission bits, octal (`"0644"`).
    #[serde(default)]
    pub mode: Option<String>,
    /// Owner.
    #[serde(default)]
    pub uid: Option<u32>,
    /// Group.
    #[serde(default)]
    pub gid: Option<u32>,
    /// Last modification.
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub mtime: Option<OffsetDateTime>,
    /// `file`, `symlink`, `missing`, `special` (a FIFO, socket or device, never read) or
    /// `too_large` (over the agent's size cap: size and mtime, no hash).
    pub kind: Kind,
    /// Where a symlink points.
    #[serde(default)]
    pub link_target: Option<String>,
    /// The package that owns the file (`dpkg -S`, `rpm -qf`).
    #[serde(default)]
    pub package: Option<String>,
    /// That package's installed version.
    #[serde(default)]
    pub package_version: Option<String>,
    /// Whether the package database still vouches for the file (`dpkg --verify`, `rpm -V`).
    #[serde(default)]
    pub package_verified: Option<bool>,
}

impl ConfigHash {
    /// Whether two reports describe the same file: content, type, permissions and owner
    /// (not the modification time, which a `touch` moves without changing anything, except
    /// for a file too large to hash, where it stands in for the content).
    pub fn same_as(&self, other: &ConfigHash) -> bool {
        self.kind == other.kind
            && (self.kind != Kind::TooLarge || self.mtime == other.mtime)
            && self.sha256 == other.sha256
            && self.size == other.size
            && self.mode == other.mode
            && self.uid == other.uid
            && self.gid == other.gid
            && self.link_target == other.link_target
    }

    /// What is wrong with a report entry, naming the field.
    pub fn check(&self) -> Result<(), String> {
        if !self.path.starts_with('/') || self.path.len() > MAX_PATH || self.path.contains('\0') {
            return Err(format!(
                "path `{}` must be absolute and at most {MAX_PATH} bytes",
                self.path.chars().take(80).collect::<String>()
            ));
        }
        if let Some(h) = &self.sha256
            && (h.len() != 64 || !h.bytes().all(|b| b.is_ascii_hexdigit()))
        {
            return Err(format!("{}: sha256 must be 64 hex digits", self.path));
        }
        if let Some(m) = &self.mode
            && (m.is_empty() || m.len() > 6 || !m.bytes().all(|b| (b'0'..=b'7').contains(&b)))
        {
            return Err(format!(
                "{}: mode must be an octal string like \"0644\"",
                self.path
            ));
        }
        let hashed = matches!(self.kind, Kind::File | Kind::Symlink);
        if !hashed && self.sha256.is_some() {
            return Err(format!(
                "{}: a {} entry has no sha256",
                self.path,
                self.kind.as_str()
            ));
        }
        if hashed && self.sha256.is_none() {
            return Err(format!(
                "{}: sha256 is required for a {}",
                self.path,
                self.kind.as_str()
            ));
        }
        for (name, v) in [
            ("link_target", &self.link_target),
            ("package", &self.package),
            ("package_version", &self.package_version),
        ] {
            if v.as_ref().is_some_and(|s| s.len() > MAX_PATH) {
                return Err(format!(
                    "{}: {name} is longer than {MAX_PATH} bytes",
                    self.path
                ));
            }
        }
        Ok(())
    }
}

/// Trees `config_paths` may not name (CONTRACT 30).
pub const FORBIDDEN_ROOTS: [&str; 4] = ["/proc", "/sys", "/dev", "/run"];

/// Checks governance's `config_paths`: absolute paths or globs, no `..`, nothing under
/// [`FORBIDDEN_ROOTS`], at most 256. The error names the field (`config_paths[i]` for an
/// entry) and says why.
pub fn check_config_paths(paths: &[String]) -> Result<(), (String, String)> {
    if paths.len() > MAX_CONFIG_PATHS {
        return Err((
            "config_paths".into(),
            format!("at most {MAX_CONFIG_PATHS} paths"),
        ));
    }
    for (i, p) in paths.iter().enumerate() {
        check_config_path(p).map_err(|m| (format!("config_paths[{i}]"), m))?;
    }
    Ok(())
}

fn check_config_path(p: &str) -> Result<(), String> {
    if !p.starts_with('/') {
        return Err(format!("`{p}` is not an absolute path"));
    }
    if p.len() > MAX_PATH || p.contains('\0') || p.chars().any(char::is_control) {
        return Err(format!("`{p}` is too long or holds control characters"));
    }
    if p.split('/').any(|s| s == ".." || s == ".") {
        return Err(format!("`{p}` may not contain `.` or `..` segments"));
    }
    // CONTRACT 30: kernel and runtime files are not configuration, and reading them can
    // block (`/proc/kmsg`) or never end.
    if let Some(root) = forbidden_root(p) {
        return Err(format!(
            "`{p}` is under {root}, which holds kernel and runtime files, not configuration"
        ));
    }
    if p.split('/').nth(1).is_some_and(is_glob) {
        return Err(format!(
            "`{p}` globs its first folder, which would reach /proc, /sys, /dev and /run; name that folder"
        ));
    }
    Ok(())
}

/// The tree of [`FORBIDDEN_ROOTS`] `path` is in, if any (the agent skips them too).
pub fn forbidden_root(path: &str) -> Option<&'static str> {
    FORBIDDEN_ROOTS.into_iter().find(|r| {
        path == *r
            || path
                .strip_prefix(*r)
                .is_some_and(|rest| rest.starts_with('/'))
    })
}

/// Whether a pattern holds glob characters (`*`, `?`, `[`): a literal path is reported even
/// when missing, a glob only for what it matches.
pub fn is_glob(pattern: &str) -> bool {
    pattern.contains(['*', '?', '['])
}

/// Whether `path` matches `pattern`: `*` and `?` within one segment, `[abc]`/`[a-z]`/`[!a]`
/// classes (a `[` without its `]` is itself), and `**` as a whole segment for any number of
/// segments (files at any depth; within a segment it is one `*`).
pub fn matches(pattern: &str, path: &str) -> bool {
    let pat: Vec<&str> = pattern.split('/').collect();
    let segs: Vec<&str> = path.split('/').collect();
    match_segments(&pat, &segs)
}

fn match_segments(pat: &[&str], segs: &[&str]) -> bool {
    match pat.split_first() {
        None => segs.is_empty(),
        Some((&"**", rest)) => {
            // One or more segments: `dir/**` names what is inside dir, not dir itself.
            (1..=segs.len()).any(|n| match_segments(rest, &segs[n..]))
        }
        Some((p, rest)) => match segs.split_first() {
            Some((s, more)) => {
                match_segment(p.as_bytes(), s.as_bytes()) && match_segments(rest, more)
            }
            None => false,
        },
    }
}

fn match_segment(p: &[u8], s: &[u8]) -> bool {
    match p.split_first() {
        None => s.is_empty(),
        Some((b'*', rest)) => (0..=s.len()).any(|n| match_segment(rest, &s[n..])),
        Some((b'?', rest)) => !s.is_empty() && match_segment(rest, &s[1..]),
        Some((b'[', rest)) => {
            let Some(end) = rest.iter().skip(1).position(|&b| b == b']').map(|i| i + 1) else {
                return s.first() == Some(&b'[') && match_segment(rest, &s[1..]);
            };
            let Some((&c, more)) = s.split_first() else {
                return false;
            };
            let (negate, class) = match rest[..end].split_first() {
                Some((b'!' | b'^', cls)) => (true, cls),
                _ => (false, &rest[..end]),
            };
            let mut hit = false;
            let mut i = 0;
            while i < class.len() {
                if i + 2 < class.len() && class[i + 1] == b'-' {
                    hit |= (class[i]..=class[i + 2]).contains(&c);
                    i += 3;
                } else {
                    hit |= class[i] == c;
                    i += 1;
                }
            }
            hit != negate && match_segment(&rest[end + 1..], more)
        }
        Some((&b, rest)) => s.first() == Some(&b) && match_segment(rest, &s[1..]),
    }
}

/// The drift state of one path (CONTRACT 20).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// As in the baseline.
    Ok,
    /// Different from the baseline.
    Drifted,
    /// The baseline had a file, now there is none.
    Missing,
    /// Appeared under a glob after the glob's first report (no baseline until a rebase).
    New,
}

impl Status {
    /// Its wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Drifted => "drifted",
            Status::Missing => "missing",
            Status::New => "new",
        }
    }

    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Status> {
        [Status::Ok, Status::Drifted, Status::Missing, Status::New]
            .into_iter()
            .find(|v| v.as_str() == s)
    }
}

/// The package update that explains a drift.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explanation {
    /// The package.
    pub package: String,
    /// Its version in the baseline.
    pub from_version: String,
    /// Its version now.
    pub to_version: String,
}

/// The state of a path given its baseline (`None`: none yet, a `new` file) and the current
/// report (`None`: no longer reported — it went away from under a glob).
pub fn status(baseline: Option<&ConfigHash>, current: Option<&ConfigHash>) -> Status {
    match (baseline, current) {
        (None, _) => Status::New,
        (Some(b), None) => {
            if b.kind == Kind::Missing {
                Status::Ok
            } else {
                Status::Missing
            }
        }
        (Some(b), Some(c)) => {
            if b.same_as(c) {
                Status::Ok
            } else if c.kind == Kind::Missing {
                Status::Missing
            } else {
                Status::Drifted
            }
        }
    }
}

/// Whether a drift is explained by a package update: the file belongs to the same package
/// in the baseline and now, the package changed version in between, and the package
/// database vouches for the file as it is now.
pub fn explain(baseline: &ConfigHash, current: &ConfigHash) -> Option<Explanation> {
    let package = current.package.as_ref()?;
    let (from, to) = (
        baseline.package_version.as_ref()?,
        current.package_version.as_ref()?,
    );
    (baseline.package.as_ref() == Some(package)
        && from != to
        && current.package_verified == Some(true)
        && current.kind != Kind::Missing)
        .then(|| Explanation {
            package: package.clone(),
            from_version: from.clone(),
            to_version: to.clone(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_like_the_shell_and_double_star_at_any_depth() {
        assert!(matches("/etc/ssh/sshd_config*", "/etc/ssh/sshd_config"));
        assert!(matches("/etc/ssh/sshd_config*", "/etc/ssh/sshd_config.d"));
        assert!(!matches(
            "/etc/ssh/sshd_config*",
            "/etc/ssh/sshd_config.d/x.conf"
        ));
        assert!(matches("/etc/cron.d/*", "/etc/cron.d/e2scrub_all"));
        assert!(!matches("/etc/cron.d/*", "/etc/cron.d"));
        assert!(matches(
            "/etc/systemd/system/**",
            "/etc/systemd/system/a.service"
        ));
        assert!(matches(
            "/etc/systemd/system/**",
            "/etc/systemd/system/multi-user.target.wants/x.service"
        ));
        assert!(!matches("/etc/systemd/system/**", "/etc/systemd/system"));
        assert!(matches("/srv/**/app.conf", "/srv/a/b/app.conf"));
        assert!(matches(
            "/etc/pam.d/common-[a-p]*",
            "/etc/pam.d/common-auth"
        ));
        assert!(!matches(
            "/etc/pam.d/common-[!a]*",
            "/etc/pam.d/common-auth"
        ));
        assert!(matches("/etc/host?", "/etc/hosts"));
        assert!(matches("/etc/hosts", "/etc/hosts"));
        assert!(matches("/etc/a**", "/etc/abc"));
        assert!(matches("/etc/[ab", "/etc/[ab"));
        assert!(!matches("/etc/hosts", "/etc/hosts.allow"));
    }

    #[test]
    fn config_paths_are_checked_naming_the_bad_one() {
        assert!(check_config_paths(&DEFAULT_CONFIG_PATHS.map(String::from)).is_ok());
        for bad in [
            "etc/passwd",
            "/etc/../root",
            "/etc/./x",
            "/etc/\u{7}",
            "/proc/kmsg",
            "/sys",
            "/dev/zero",
            "/run/**",
            "/*/kmsg",
        ] {
            let (field, e) =
                check_config_paths(&["/etc/hosts".into(), bad.to_owned()]).expect_err("refused");
            assert_eq!(field, "config_paths[1]");
            assert!(e.contains(bad), "{e}");
        }
        for fine in [
            "/etc/runit/x",
            "/devops/app.conf",
            "/etc/*/x.conf",
            "/procfile",
        ] {
            assert!(check_config_paths(&[fine.to_owned()]).is_ok(), "{fine}");
        }
    }

    fn file(sha: char, package: Option<(&str, &str, bool)>) -> ConfigHash {
        ConfigHash {
            path: "/etc/app.conf".into(),
            sha256: Some(sha.to_string().repeat(64)),
            size: Some(4),
            mode: Some("0644".into()),
            uid: Some(0),
            gid: Some(0),
            mtime: None,
            kind: Kind::File,
            link_target: None,
            package: package.map(|p| p.0.to_owned()),
            package_version: package.map(|p| p.1.to_owned()),
            package_verified: package.map(|p| p.2),
        }
    }

    #[test]
    fn a_package_update_the_database_vouches_for_explains_the_drift() {
        let base = file('a', Some(("app", "1.0", true)));
        let upgraded = file('b', Some(("app", "2.0", true)));
        assert_eq!(status(Some(&base), Some(&upgraded)), Status::Drifted);
        assert_eq!(
            explain(&base, &upgraded).map(|e| (e.from_version, e.to_version)),
            Some(("1.0".into(), "2.0".into()))
        );
        // Changed by hand after the update: the database no longer vouches for it.
        assert_eq!(
            explain(&base, &file('c', Some(("app", "2.0", false)))),
            None
        );
        // Same version: nothing explains a change.
        assert_eq!(explain(&base, &file('c', Some(("app", "1.0", true)))), None);
        // Unknown version: no explanation yet (and the hub raises nothing before it is known).
        let mut unknown = upgraded.clone();
        unknown.package_version = None;
        assert_eq!(explain(&base, &unknown), None);
    }

    #[test]
    fn states_follow_the_baseline() {
        let base = file('a', None);
        let mut touched = base.clone();
        touched.mtime = Some(OffsetDateTime::UNIX_EPOCH);
        assert_eq!(status(Some(&base), Some(&touched)), Status::Ok);
        let mut chmod = base.clone();
        chmod.mode = Some("0666".into());
        assert_eq!(status(Some(&base), Some(&chmod)), Status::Drifted);
        assert_eq!(status(Some(&base), None), Status::Missing);
        assert_eq!(status(None, Some(&base)), Status::New);
        let gone = ConfigHash {
            kind: Kind::Missing,
            sha256: None,
            size: None,
            mode: None,
            uid: None,
            gid: None,
            ..base.clone()
        };
        assert_eq!(status(Some(&base), Some(&gone)), Status::Missing);
        assert_eq!(status(Some(&gone), Some(&gone)), Status::Ok);
        assert_eq!(status(Some(&gone), Some(&base)), Status::Drifted);
        assert!(gone.check().is_ok() && base.check().is_ok());
        assert!(chmod.check().is_ok());
        let mut bad = base;
        bad.mode = Some("rw-r--r--".into());
        assert!(bad.check().expect_err("refused").contains("mode"));
    }
}
