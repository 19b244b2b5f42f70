//! Configuration scans (CONTRACT 20): the watched paths and globs expanded on this host,
//! each file's SHA-256 and attributes, its owning package and whether the package database
//! still vouches for it (`dpkg -S`/`dpkg --verify`, `rpm -qf`/`rpm -V`). Content never
//! leaves the host. [`Watcher`] wakes a scan when inotify sees a change in a watched
//! directory.

use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use time::OffsetDateTime;
use trusthub_core::drift::{self, ConfigHash, Kind, MAX_REPORTED_FILES};

/// Where the package database is (a test root or a chroot's; `None`: the host's).
#[derive(Debug, Clone, Default)]
pub struct PackageDb {
    /// `dpkg --admindir`.
    pub dpkg_admindir: Option<PathBuf>,
    /// `rpm --dbpath` (set: rpm is asked even where dpkg exists).
    pub rpm_dbpath: Option<PathBuf>,
}

/// Largest file a scan hashes by default (`--config-max-file-bytes`, CONTRACT 30).
pub const DEFAULT_MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Scans the watched patterns: every literal path (as `missing` when absent) and every
/// file or symlink a glob matches, sorted by path, at most [`MAX_REPORTED_FILES`]. Regular
/// files up to `max_file_bytes` are hashed; larger ones are `too_large`, FIFOs, sockets
/// and devices `special`, and neither is read.
pub fn scan(patterns: &[String], db: &PackageDb, max_file_bytes: u64) -> Vec<ConfigHash> {
    scan_watching(patterns, db, None, max_file_bytes)
}

/// [`scan`], with `watcher` set to the scanned directories before the files are read (a
/// change right after the scan is not missed).
pub fn scan_watching(
    patterns: &[String],
    db: &PackageDb,
    watcher: Option<&Watcher>,
    max_file_bytes: u64,
) -> Vec<ConfigHash> {
    let paths = expand(patterns);
    if let Some(w) = watcher {
        w.set(watched_dirs(patterns, &paths));
    }
    let mut out: Vec<ConfigHash> = paths
        .iter()
        .filter_map(|p| stat(p, max_file_bytes))
        .collect();
    attach_packages(&mut out, db);
    out
}

/// The paths the patterns name: literal ones as they are, globs expanded (files and
/// symlinks only; symlinked directories are not followed).
pub fn expand(patterns: &[String]) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for p in patterns {
        // Governance refuses these; an agent skips them even so (CONTRACT 30).
        if drift::forbidden_root(p).is_some() {
            continue;
        }
        if !drift::is_glob(p) {
            out.insert(PathBuf::from(p));
            continue;
        }
        let segments: Vec<&str> = p.split('/').collect();
        let literal = segments
            .iter()
            .take_while(|s| !drift::is_glob(s))
            .copied()
            .collect::<Vec<_>>()
            .join("/");
        let base = if literal.is_empty() {
            "/".to_owned()
        } else {
            literal
        };
        let depth = if p.contains("**") {
            32
        } else {
            segments.len() - base.split('/').count()
        };
        walk(Path::new(&base), depth, p, &mut out);
        if out.len() >= MAX_REPORTED_FILES {
            tracing::warn!(pattern = %p, "the watched patterns match more than {MAX_REPORTED_FILES} files; the rest is not reported");
            break;
        }
    }
    out.into_iter().take(MAX_REPORTED_FILES).collect()
}

fn walk(dir: &Path, depth: usize, pattern: &str, out: &mut BTreeSet<PathBuf>) {
    if depth == 0 || out.len() >= MAX_REPORTED_FILES {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let Some(s) = path.to_str() else { continue };
        if drift::forbidden_root(s).is_some() {
            continue;
        }
        if meta.is_dir() {
            walk(&path, depth - 1, pattern, out);
        } else if drift::matches(pattern, s) {
            out.insert(path);
        }
    }
}

/// One path's hash and attributes (`None` for a directory named literally). A regular file
/// is opened without following a link and without blocking, checked to still be a regular
/// file, and read to at most `max_file_bytes`; anything else is never read (CONTRACT 30).
pub fn stat(path: &Path, max_file_bytes: u64) -> Option<ConfigHash> {
    let p = path.to_str()?.to_owned();
    let unread = |kind: Kind, meta: Option<&std::fs::Metadata>| ConfigHash {
        path: p.clone(),
        sha256: None,
        size: meta.map(|m| m.len()),
        mode: meta.map(|m| format!("{:04o}", m.mode() & 0o7777)),
        uid: meta.map(|m| m.uid()),
        gid: meta.map(|m| m.gid()),
        mtime: meta.and_then(|m| OffsetDateTime::from_unix_timestamp(m.mtime()).ok()),
        kind,
        link_target: None,
        package: None,
        package_version: None,
        package_verified: None,
    };
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Some(unread(Kind::Missing, None));
    };
    let (kind, sha, target, meta) = if meta.file_type().is_symlink() {
        let target = std::fs::read_link(path)
            .ok()?
            .to_string_lossy()
            .into_owned();
        (
            Kind::Symlink,
            trusthub_core::secret::hex(&Sha256::digest(target.as_bytes())),
            Some(target),
            meta,
        )
    } else if meta.is_file() {
        if meta.len() > max_file_bytes {
            return Some(unread(Kind::TooLarge, Some(&meta)));
        }
        match hash_regular(path, max_file_bytes) {
            Hashed::Done(sha, meta) => (Kind::File, sha, None, meta),
            Hashed::TooLarge(meta) => return Some(unread(Kind::TooLarge, Some(&meta))),
            Hashed::Special(meta) => return Some(unread(Kind::Special, Some(&meta))),
            Hashed::Failed => return None,
        }
    } else if meta.is_dir() {
        return None;
    } else {
        return Some(unread(Kind::Special, Some(&meta)));
    };
    Some(ConfigHash {
        path: p,
        sha256: Some(sha),
        size: Some(meta.len()),
        mode: Some(format!("{:04o}", meta.mode() & 0o7777)),
        uid: Some(meta.uid()),
        gid: Some(meta.gid()),
        mtime: OffsetDateTime::from_unix_timestamp(meta.mtime()).ok(),
        kind,
        link_target: target,
        package: None,
        package_version: None,
        package_verified: None,
    })
}

enum Hashed {
    Done(String, std::fs::Metadata),
    TooLarge(std::fs::Metadata),
    Special(std::fs::Metadata),
    Failed,
}

/// The SHA-256 of what is at `path` when it is, once opened, a regular file of at most
/// `max` bytes (a file swapped for a FIFO or a link between the look and the open is never
/// read; one that grows past `max` while read is `too_large`).
fn hash_regular(path: &Path, max: u64) -> Hashed {
    use std::os::unix::fs::OpenOptionsExt;
    let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK;
    let Ok(f) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(path)
    else {
        return Hashed::Failed;
    };
    let Ok(meta) = f.metadata() else {
        return Hashed::Failed;
    };
    if !meta.is_file() {
        return Hashed::Special(meta);
    }
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut read = 0u64;
    let mut f = f.take(max + 1);
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                read += n as u64;
                h.update(&buf[..n]);
            }
            Err(_) => return Hashed::Failed,
        }
    }
    if read > max {
        return Hashed::TooLarge(meta);
    }
    Hashed::Done(trusthub_core::secret::hex(&h.finalize()), meta)
}

fn run(cmd: &mut Command) -> Option<String> {
    let out = cmd.output().ok()?;
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn dpkg(db: &PackageDb, tool: &str) -> Command {
    let mut c = Command::new(tool);
    if let Some(dir) = &db.dpkg_admindir {
        c.arg(format!("--admindir={}", dir.display()));
    }
    c.env("LC_ALL", "C");
    c
}

fn have(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(tool).is_file()))
}

/// Fills `package`, `package_version` and `package_verified` from dpkg (or rpm).
pub fn attach_packages(files: &mut [ConfigHash], db: &PackageDb) {
    let present: Vec<&str> = files
        .iter()
        .filter(|f| matches!(f.kind, Kind::File | Kind::Symlink | Kind::TooLarge))
        .map(|f| f.path.as_str())
        .collect();
    if present.is_empty() {
        return;
    }
    let (owners, versions, failing) = if db.rpm_dbpath.is_none() && have("dpkg-query") {
        dpkg_facts(&present, db)
    } else if have("rpm") {
        rpm_facts(&present, db)
    } else {
        return;
    };
    for f in files.iter_mut() {
        if let Some(pkg) = owners.get(&f.path) {
            f.package_version = versions.get(pkg).cloned();
            f.package_verified = Some(!failing.contains(&f.path));
            f.package = Some(pkg.clone());
        }
    }
}

type Facts = (
    HashMap<String, String>,
    HashMap<String, String>,
    HashSet<String>,
);

/// Most bytes of paths given to one `dpkg-query -S` or `rpm -qf` (well under the kernel's
/// argument limit): each call reads the whole package database, so the fewer the better (a
/// scan of 10,000 files took 5 s in 50 calls of 200 paths).
const ARGS_BYTES: usize = 96 * 1024;

/// `paths` in runs whose lengths add up to at most [`ARGS_BYTES`].
fn arg_chunks<'a>(paths: &'a [&'a str]) -> Vec<&'a [&'a str]> {
    let mut out = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, p) in paths.iter().enumerate() {
        if i > start && bytes + p.len() + 1 > ARGS_BYTES {
            out.push(&paths[start..i]);
            (start, bytes) = (i, 0);
        }
        bytes += p.len() + 1;
    }
    if start < paths.len() {
        out.push(&paths[start..]);
    }
    out
}

/// Owners from `dpkg-query -S`, versions from `dpkg-query -W`, files that fail
/// `dpkg --verify`.
fn dpkg_facts(paths: &[&str], db: &PackageDb) -> Facts {
    let mut owners = HashMap::new();
    for chunk in arg_chunks(paths) {
        let Some(out) = run(dpkg(db, "dpkg-query").arg("-S").args(chunk)) else {
            continue;
        };
        for (pkg, path) in parse_owners(&out) {
            owners.insert(path, pkg);
        }
    }
    let packages: BTreeSet<&String> = owners.values().collect();
    let mut versions = HashMap::new();
    let mut failing = HashSet::new();
    if packages.is_empty() {
        return (owners, versions, failing);
    }
    let list: Vec<&String> = packages.into_iter().collect();
    if let Some(out) = run(dpkg(db, "dpkg-query")
        .args(["-W", "-f", "${Package}\t${Version}\n"])
        .args(&list))
    {
        for l in out.lines() {
            if let Some((p, v)) = l.split_once('\t') {
                versions.insert(p.to_owned(), v.to_owned());
            }
        }
    }
    if let Some(out) = run(dpkg(db, "dpkg").arg("--verify").args(&list)) {
        failing = parse_verify(&out);
    }
    (owners, versions, failing)
}

fn rpm(db: &PackageDb) -> Command {
    let mut c = Command::new("rpm");
    if let Some(dir) = &db.rpm_dbpath {
        c.arg("--dbpath").arg(dir);
    }
    c.env("LC_ALL", "C");
    c
}

/// The same from `rpm -qf`, `rpm -q` and `rpm -V`.
fn rpm_facts(paths: &[&str], db: &PackageDb) -> Facts {
    let mut owners = HashMap::new();
    for chunk in arg_chunks(paths) {
        let Some(out) = run(rpm(db)
            .args(["-qf", "--queryformat", "%{NAME}\n"])
            .args(chunk))
        else {
            continue;
        };
        // One line per path, in order ("file ... is not owned by any package" for others); a
        // file gone meanwhile is said on stderr, and then each path is asked alone.
        let lines: Vec<&str> = out.lines().collect();
        let answers: Vec<(String, &str)> = if lines.len() == chunk.len() {
            lines
                .iter()
                .zip(chunk)
                .map(|(l, p)| ((*l).to_owned(), *p))
                .collect()
        } else {
            chunk
                .iter()
                .filter_map(|p| {
                    let one = run(rpm(db).args(["-qf", "--queryformat", "%{NAME}\n"]).arg(p))?;
                    Some((one.lines().next().unwrap_or_default().to_owned(), *p))
                })
                .collect()
        };
        for (line, path) in answers {
            if !line.contains(' ') && !line.is_empty() {
                owners.insert(path.to_owned(), line);
            }
        }
    }
    let list: BTreeSet<&String> = owners.values().collect();
    let mut versions = HashMap::new();
    let mut failing = HashSet::new();
    if !list.is_empty() {
        if let Some(out) = run(rpm(db)
            .args(["-q", "--queryformat", "%{NAME}\t%{VERSION}-%{RELEASE}\n"])
            .args(&list))
        {
            for l in out.lines() {
                if let Some((p, v)) = l.split_once('\t') {
                    versions.insert(p.to_owned(), v.to_owned());
                }
            }
        }
        if let Some(out) = run(rpm(db).arg("-V").args(&list)) {
            failing = parse_verify(&out);
        }
    }
    (owners, versions, failing)
}

/// `dpkg-query -S` lines: `pkg[:arch][, pkg2]: /path` (diversions skipped).
pub fn parse_owners(out: &str) -> Vec<(String, String)> {
    out.lines()
        .filter(|l| !l.starts_with("diversion by"))
        .filter_map(|l| {
            let (pkgs, path) = l.split_once(": /")?;
            let first = pkgs.split(',').next()?.trim();
            let name = first.split(':').next()?.to_owned();
            Some((name, format!("/{path}")))
        })
        .collect()
}

/// The files `dpkg --verify` or `rpm -V` report: `??5?????? c /etc/x`, `S.5....T.  c /etc/x`,
/// `missing   c /etc/x`.
pub fn parse_verify(out: &str) -> HashSet<String> {
    out.lines()
        .filter_map(|l| l.find(" /").map(|i| l[i + 1..].to_owned()))
        .collect()
}

/// The directories whose changes should wake a scan: each literal path's parent and every
/// directory a glob walks.
pub fn watched_dirs(patterns: &[String], paths: &BTreeSet<PathBuf>) -> BTreeSet<PathBuf> {
    let mut dirs = BTreeSet::new();
    for f in paths {
        if let Some(parent) = f.parent().filter(|p| p.is_dir()) {
            dirs.insert(parent.to_path_buf());
        }
    }
    for p in patterns {
        let literal: Vec<&str> = p.split('/').take_while(|s| !drift::is_glob(s)).collect();
        let base = literal.join("/");
        let dir = if drift::is_glob(p) {
            PathBuf::from(if base.is_empty() { "/".into() } else { base })
        } else {
            Path::new(p)
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default()
        };
        if dir.is_dir() {
            dirs.insert(dir);
        }
    }
    dirs
}

/// Wakes a scan when inotify sees a change in a watched directory (where inotify exists;
/// elsewhere the schedule alone drives scans).
#[derive(Debug, Clone)]
pub struct Watcher {
    inner: Option<Arc<Inner>>,
}

#[derive(Debug)]
struct Inner {
    fd: std::os::fd::OwnedFd,
    watching: Mutex<BTreeMap<PathBuf, i32>>,
}

impl Watcher {
    /// Starts the watching thread; `wake` is notified (coalesced) after changes.
    pub fn start(wake: Arc<tokio::sync::Notify>) -> Watcher {
        use rustix::fs::inotify;
        // Blocking: the watching thread sleeps in `read` until something changes.
        let fd = match inotify::init(inotify::CreateFlags::CLOEXEC) {
            Ok(fd) => fd,
            Err(e) => {
                tracing::info!(error = %e, "no inotify here; configuration scans follow the schedule only");
                return Watcher { inner: None };
            }
        };
        let inner = Arc::new(Inner {
            fd,
            watching: Mutex::new(BTreeMap::new()),
        });
        let shared = inner.clone();
        let started = std::thread::Builder::new()
            .name("config-watch".into())
            .spawn(move || watch_loop(&shared, &wake));
        match started {
            Ok(_) => Watcher { inner: Some(inner) },
            Err(e) => {
                tracing::warn!(error = %e, "cannot start the configuration watcher; scans follow the schedule only");
                Watcher { inner: None }
            }
        }
    }

    /// The directories to watch from now on (watches are in place when this returns).
    pub fn set(&self, dirs: BTreeSet<PathBuf>) {
        use rustix::fs::inotify;
        let Some(inner) = &self.inner else { return };
        let Ok(mut watching) = inner.watching.lock() else {
            return;
        };
        for (dir, wd) in watching.clone() {
            if !dirs.contains(&dir) {
                let _ = inotify::remove_watch(&inner.fd, wd);
                watching.remove(&dir);
            }
        }
        for dir in dirs {
            if watching.contains_key(&dir) {
                continue;
            }
            let flags = inotify::WatchFlags::CLOSE_WRITE
                | inotify::WatchFlags::MOVED_TO
                | inotify::WatchFlags::MOVED_FROM
                | inotify::WatchFlags::CREATE
                | inotify::WatchFlags::DELETE
                | inotify::WatchFlags::ATTRIB
                | inotify::WatchFlags::ONLYDIR;
            match inotify::add_watch(&inner.fd, &dir, flags) {
                Ok(wd) => {
                    watching.insert(dir, wd);
                }
                Err(e) => tracing::debug!(dir = %dir.display(), error = %e, "cannot watch"),
            }
        }
    }
}

/// Waits in `read` for the next change (no wake-up while nothing changes: it polled 4 times
/// a second before, most of the agent's idle CPU — issue 63), tells `wake`, and lets a burst
/// of writes gather for 250 ms; the events read are only a signal (the scan reads the files).
fn watch_loop(inner: &Inner, wake: &tokio::sync::Notify) {
    use rustix::fs::inotify;
    let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 8192];
    loop {
        if inotify::Reader::new(&inner.fd, &mut buf).next().is_ok() {
            wake.notify_one();
        }
        // After an event, the next ones of its burst; after an error (none expected), no
        // busy loop.
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_lookups_take_paths_in_few_bounded_calls() {
        let owned: Vec<String> = (0..10_000)
            .map(|i| format!("/etc/app/d{i:05}/file.conf"))
            .collect();
        let paths: Vec<&str> = owned.iter().map(String::as_str).collect();
        let chunks = arg_chunks(&paths);
        assert!(chunks.len() <= 4, "{} calls", chunks.len());
        assert_eq!(chunks.iter().map(|c| c.len()).sum::<usize>(), paths.len());
        assert!(
            chunks
                .iter()
                .all(|c| c.iter().map(|p| p.len() + 1).sum::<usize>() <= ARGS_BYTES)
        );
        let long = "/x".repeat(60_000);
        assert_eq!(
            arg_chunks(&[long.as_str(), "/a"]).len(),
            2,
            "a long path goes alone"
        );
        assert!(arg_chunks(&[]).is_empty());
    }

    #[test]
    fn dpkg_and_rpm_outputs_are_read() {
        let owners = parse_owners(
            "diversion by dash from: /bin/sh\nopenssh-server: /etc/ssh/sshd_config\nlibc6:amd64, libc6:i386: /etc/ld.so.conf.d/x.conf\n",
        );
        assert_eq!(
            owners,
            [
                (
                    "openssh-server".to_owned(),
                    "/etc/ssh/sshd_config".to_owned()
                ),
                ("libc6".to_owned(), "/etc/ld.so.conf.d/x.conf".to_owned())
            ]
        );
        let failing = parse_verify(
            "??5?????? c /etc/app/app.conf\n??5??????   /usr/share/x\nS.5....T.  c /etc/rpm.conf\nmissing     /etc/gone\n",
        );
        for p in [
            "/etc/app/app.conf",
            "/usr/share/x",
            "/etc/rpm.conf",
            "/etc/gone",
        ] {
            assert!(failing.contains(p), "{p}");
        }
    }
}
