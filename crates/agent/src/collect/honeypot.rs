//! Honeypots (CONTRACT 25): canary files, users and ports governance sets, which no one has a
//! reason to touch. Files are watched by inotify (opened, read, changed, removed), users in
//! the auth log (a login attempt naming them), ports by listening on them (a connection).
//! What was touched is kept until the next batch takes it.
//!
//! inotify does not say who opened a file: the agent's own reading (its configuration,
//! compliance and DNA scans) is not told apart by the kernel. So the agent drops only the
//! events of the honeypot files it reads itself: a configuration scan names them before it
//! starts ([`Honeypots::quiet_for`]); compliance and DNA runs read through [`read_own`] and
//! [`read_dir_own`], which note each path while the run's [`Honeypots::own_reads`] guard
//! lives. Every other honeypot keeps counting during a scan (CONTRACT 30).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use time::OffsetDateTime;
use trusthub_core::compliance::{Honeypot, HoneypotEvent};

/// Watches the governed honeypots.
#[derive(Clone)]
pub struct Honeypots {
    inner: Arc<Inner>,
}

struct Inner {
    events: Mutex<Vec<HoneypotEvent>>,
    set: Mutex<Vec<Honeypot>>,
    ports: Mutex<BTreeMap<u16, tokio::task::JoinHandle<()>>>,
    files: Mutex<BTreeMap<PathBuf, i32>>,
    inotify: Option<std::os::fd::OwnedFd>,
    auth_log: Option<PathBuf>,
    auth_offset: Mutex<Option<u64>>,
    /// Why a honeypot is not armed, by `(kind, target)` (CONTRACT 30).
    failures: Mutex<BTreeMap<(String, String), String>>,
    /// Files the agent itself is reading now (a configuration scan of a watched file that is
    /// also a honeypot): their events are its own; every other honeypot still counts.
    quiet_paths: Mutex<BTreeMap<PathBuf, usize>>,
}

fn failed(inner: &Inner, kind: &str, target: &str, why: Option<String>) {
    if let Ok(mut f) = inner.failures.lock() {
        let key = (kind.to_owned(), target.to_owned());
        match why {
            Some(w) => {
                f.insert(key, w.chars().take(500).collect());
            }
            None => {
                f.remove(&key);
            }
        }
    }
}

/// Paths the agent's own compliance and DNA runs read while an [`OwnReads`] guard lives.
static OWN_READS: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
/// Live [`OwnReads`] guards: reads are noted only while one lives, and forgotten when the
/// last goes.
static OWN_RUNS: AtomicUsize = AtomicUsize::new(0);

fn note_own(path: &Path) {
    if OWN_RUNS.load(Ordering::SeqCst) > 0
        && let Ok(mut own) = OWN_READS.lock()
    {
        own.insert(path.to_path_buf());
    }
}

fn own_read(path: &Path) -> bool {
    OWN_RUNS.load(Ordering::SeqCst) > 0 && OWN_READS.lock().is_ok_and(|o| o.contains(path))
}

/// Reads a file for one of the agent's own host scans: a honeypot at `path` sees the
/// agent's read, not an intruder's (while the run's [`OwnReads`] lives).
pub fn read_own(path: impl AsRef<Path>) -> std::io::Result<String> {
    let path = path.as_ref();
    note_own(path);
    std::fs::read_to_string(path)
}

/// [`read_own`] for bytes.
pub fn read_own_bytes(path: impl AsRef<Path>) -> std::io::Result<Vec<u8>> {
    let path = path.as_ref();
    note_own(path);
    std::fs::read(path)
}

/// Lists a folder for one of the agent's own host scans (a folder honeypot sees the agent).
pub fn read_dir_own(path: impl AsRef<Path>) -> std::io::Result<std::fs::ReadDir> {
    let path = path.as_ref();
    note_own(path);
    std::fs::read_dir(path)
}

/// While held, events of the files the agent's own compliance or DNA run reads through
/// [`read_own`] are dropped; every other honeypot still counts.
pub struct OwnReads(Arc<Inner>);

impl Drop for OwnReads {
    fn drop(&mut self) {
        // What the kernel queued during the run is read now, while the run's reads are
        // still known.
        drain_files(&self.0, false);
        if OWN_RUNS.fetch_sub(1, Ordering::SeqCst) == 1
            && let Ok(mut own) = OWN_READS.lock()
        {
            own.clear();
        }
    }
}

/// While held, events of these files only are the agent's own reading and are dropped.
pub struct QuietPaths(Arc<Inner>, Vec<PathBuf>);

impl Drop for QuietPaths {
    fn drop(&mut self) {
        // What the kernel queued meanwhile is read now: these files' events dropped, the
        // others' kept.
        drain_files(&self.0, false);
        if let Ok(mut q) = self.0.quiet_paths.lock() {
            for p in &self.1 {
                if let Some(n) = q.get_mut(p) {
                    *n -= 1;
                    if *n == 0 {
                        q.remove(p);
                    }
                }
            }
        }
    }
}

/// Most events kept between two batches (the oldest go first).
const MAX_KEPT: usize = 100;

impl Honeypots {
    /// Starts watching nothing; `auth_log` is the log user honeypots are read from.
    pub fn new(auth_log: Option<PathBuf>) -> Honeypots {
        use rustix::fs::inotify;
        let fd = inotify::init(inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK)
            .map_err(
                |e| tracing::info!(error = %e, "no inotify here; file honeypots are not watched"),
            )
            .ok();
        Honeypots {
            inner: Arc::new(Inner {
                events: Mutex::new(Vec::new()),
                set: Mutex::new(Vec::new()),
                ports: Mutex::new(BTreeMap::new()),
                files: Mutex::new(BTreeMap::new()),
                inotify: fd,
                auth_log,
                auth_offset: Mutex::new(None),
                failures: Mutex::new(BTreeMap::new()),
                quiet_paths: Mutex::new(BTreeMap::new()),
            }),
        }
    }

    /// The honeypots to watch from now on.
    pub fn set(&self, wanted: &[Honeypot]) {
        let Ok(mut set) = self.inner.set.lock() else {
            return;
        };
        if set.as_slice() == wanted {
            return;
        }
        *set = wanted.to_vec();
        drop(set);
        let ports: HashSet<u16> = wanted
            .iter()
            .filter(|h| h.kind == "port")
            .filter_map(|h| h.target.parse().ok())
            .collect();
        if let Ok(mut open) = self.inner.ports.lock() {
            open.retain(|p, task| {
                let keep = ports.contains(p);
                if !keep {
                    task.abort();
                }
                keep
            });
            for p in ports {
                open.entry(p)
                    .or_insert_with(|| tokio::spawn(listen(self.inner.clone(), p)));
            }
        }
        self.watch_files();
    }

    /// Adds inotify watches for file honeypots that exist now (a missing one is retried at
    /// each [`poll`](Self::poll)).
    fn watch_files(&self) {
        use rustix::fs::inotify;
        let Some(fd) = &self.inner.inotify else {
            return;
        };
        let wanted: Vec<PathBuf> = self
            .inner
            .set
            .lock()
            .map(|s| {
                s.iter()
                    .filter(|h| h.kind == "file")
                    .map(|h| PathBuf::from(&h.target))
                    .collect()
            })
            .unwrap_or_default();
        let Ok(mut files) = self.inner.files.lock() else {
            return;
        };
        files.retain(|p, wd| {
            let keep = wanted.contains(p);
            if !keep {
                let _ = inotify::remove_watch(fd, *wd);
            }
            keep
        });
        for p in wanted {
            if files.contains_key(&p) {
                continue;
            }
            let flags = inotify::WatchFlags::OPEN
                | inotify::WatchFlags::ACCESS
                | inotify::WatchFlags::MODIFY
                | inotify::WatchFlags::ATTRIB
                | inotify::WatchFlags::DELETE_SELF
                | inotify::WatchFlags::MOVE_SELF;
            let target = p.display().to_string();
            match inotify::add_watch(fd, &p, flags) {
                Ok(wd) => {
                    failed(&self.inner, "file", &target, None);
                    files.insert(p, wd);
                }
                Err(e) => failed(
                    &self.inner,
                    "file",
                    &target,
                    Some(format!("cannot watch {target}: {e}")),
                ),
            }
        }
    }

    /// Whether each governed honeypot is armed, and why not (CONTRACT 30): a port this
    /// agent cannot listen on (in use, say), a file it cannot watch, no auth log to read.
    pub fn states(&self) -> Vec<trusthub_core::compliance::HoneypotState> {
        let set = self.inner.set.lock().map(|s| s.clone()).unwrap_or_default();
        let failures = self
            .inner
            .failures
            .lock()
            .map(|f| f.clone())
            .unwrap_or_default();
        let auth_log_readable = self
            .inner
            .auth_log
            .as_ref()
            .is_some_and(|p| std::fs::File::open(p).is_ok());
        set.into_iter()
            .map(|h| {
                let why = match h.kind.as_str() {
                    "user" if !auth_log_readable => Some(match &self.inner.auth_log {
                        Some(p) => format!("the auth log {} cannot be read", p.display()),
                        None => {
                            "no auth log on this host (/var/log/auth.log or /var/log/secure)".into()
                        }
                    }),
                    _ => failures.get(&(h.kind.clone(), h.target.clone())).cloned(),
                };
                trusthub_core::compliance::HoneypotState {
                    kind: h.kind,
                    target: h.target,
                    armed: why.is_none(),
                    why,
                }
            })
            .collect()
    }

    /// The file honeypots among `patterns` (a literal path or a glob matching it): what a
    /// configuration scan with those patterns reads.
    pub fn files_matching(&self, patterns: &[String]) -> Vec<PathBuf> {
        self.inner
            .set
            .lock()
            .map(|s| {
                s.iter()
                    .filter(|h| h.kind == "file")
                    .filter(|h| {
                        patterns
                            .iter()
                            .any(|p| *p == h.target || trusthub_core::drift::matches(p, &h.target))
                    })
                    .map(|h| PathBuf::from(&h.target))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// While the returned guard lives, events of `paths` only are the agent's own reading
    /// (CONTRACT 30: a configuration scan silences no other honeypot).
    pub fn quiet_for(&self, paths: Vec<PathBuf>) -> QuietPaths {
        if let Ok(mut q) = self.inner.quiet_paths.lock() {
            for p in &paths {
                *q.entry(p.clone()).or_default() += 1;
            }
        }
        QuietPaths(self.inner.clone(), paths)
    }

    /// While the returned guard lives, the events of files read through [`read_own`] are
    /// the agent's own reading (a compliance or DNA run).
    pub fn own_reads(&self) -> OwnReads {
        OWN_RUNS.fetch_add(1, Ordering::SeqCst);
        OwnReads(self.inner.clone())
    }

    /// Reads what happened to files and the auth log since the last call.
    pub fn poll(&self) {
        drain_files(&self.inner, false);
        self.watch_files();
        self.read_auth_log();
    }

    /// The events since the last batch (taken).
    pub fn take(&self) -> Vec<HoneypotEvent> {
        self.poll();
        self.inner
            .events
            .lock()
            .map(|mut e| std::mem::take(&mut *e))
            .unwrap_or_default()
    }

    fn read_auth_log(&self) {
        let users: Vec<String> = self
            .inner
            .set
            .lock()
            .map(|s| {
                s.iter()
                    .filter(|h| h.kind == "user")
                    .map(|h| h.target.clone())
                    .collect()
            })
            .unwrap_or_default();
        let Some(path) = &self.inner.auth_log else {
            return;
        };
        let Ok(mut offset) = self.inner.auth_offset.lock() else {
            return;
        };
        let Ok(mut f) = std::fs::File::open(path) else {
            return;
        };
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        // The first read starts at the end: what was logged before the agent watched is not
        // a touch it saw. A shorter file was rotated: read it from the start.
        let start = match *offset {
            None => len,
            Some(o) if o > len => 0,
            Some(o) => o,
        };
        let mut text = String::new();
        if f.seek(SeekFrom::Start(start)).is_ok() {
            let _ = f.take(4 * 1024 * 1024).read_to_string(&mut text);
        }
        // Only whole lines are read; a partly written last line waits.
        let whole = text.rfind('\n').map(|i| i + 1).unwrap_or(0);
        *offset = Some(start + whole as u64);
        if users.is_empty() {
            return;
        }
        for line in text[..whole].lines() {
            for u in &users {
                if names_user(line, u) {
                    push(
                        &self.inner,
                        HoneypotEvent {
                            kind: "user".into(),
                            target: u.clone(),
                            at: OffsetDateTime::now_utc(),
                            detail: line.chars().take(1000).collect(),
                        },
                    );
                }
            }
        }
    }
}

/// Whether an auth log line is a login attempt naming `user` (sshd, login, su, sudo, PAM).
pub fn names_user(line: &str, user: &str) -> bool {
    let words: Vec<&str> = line
        .split(|c: char| c.is_whitespace() || c == ',' || c == ';')
        .filter(|w| !w.is_empty())
        .collect();
    let is = |w: &str| w == user || w.strip_suffix(':') == Some(user);
    words.iter().enumerate().any(|(i, w)| {
        if let Some((k, v)) = w.split_once('=') {
            return ["user", "ruser", "USER", "acct", "logname"].contains(&k) && v == user;
        }
        let prev = |n: usize| i.checked_sub(n).map(|j| words[j]).unwrap_or_default();
        is(w) && matches!(prev(1), "user" | "for" | "FOR" | "(to" | "to")
    })
}

fn push(inner: &Inner, e: HoneypotEvent) {
    if let Ok(mut events) = inner.events.lock() {
        if events.len() >= MAX_KEPT {
            events.remove(0);
        }
        tracing::warn!(kind = %e.kind, target = %e.target, detail = %e.detail, "a honeypot was touched");
        events.push(e);
    }
}

fn drain_files(inner: &Inner, dropping: bool) {
    use rustix::fs::inotify;
    let Some(fd) = &inner.inotify else { return };
    let files: BTreeMap<i32, PathBuf> = inner
        .files
        .lock()
        .map(|f| f.iter().map(|(p, wd)| (*wd, p.clone())).collect())
        .unwrap_or_default();
    let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 4096];
    let mut reader = inotify::Reader::new(fd, &mut buf);
    let mut gone = Vec::new();
    while let Ok(ev) = reader.next() {
        let Some(path) = files.get(&ev.wd()) else {
            continue;
        };
        let m = ev.events();
        if m.contains(inotify::ReadFlags::IGNORED)
            || m.intersects(inotify::ReadFlags::DELETE_SELF | inotify::ReadFlags::MOVE_SELF)
        {
            gone.push(path.clone());
        }
        let own = inner.quiet_paths.lock().is_ok_and(|q| q.contains_key(path)) || own_read(path);
        if dropping || own || m.contains(inotify::ReadFlags::IGNORED) {
            continue;
        }
        let what = if m.contains(inotify::ReadFlags::DELETE_SELF) {
            "removed"
        } else if m.contains(inotify::ReadFlags::MOVE_SELF) {
            "moved away"
        } else if m.contains(inotify::ReadFlags::MODIFY) {
            "written"
        } else if m.contains(inotify::ReadFlags::ATTRIB) {
            "attributes changed"
        } else if m.contains(inotify::ReadFlags::ACCESS) {
            "read"
        } else {
            "opened"
        };
        push(
            inner,
            HoneypotEvent {
                kind: "file".into(),
                target: path.display().to_string(),
                at: OffsetDateTime::now_utc(),
                detail: format!("{} was {what}", path.display()),
            },
        );
    }
    if !gone.is_empty()
        && let Ok(mut f) = inner.files.lock()
    {
        for p in gone {
            f.remove(&p);
        }
    }
}

/// Listens on a port honeypot: every connection is a touch (closed at once).
/// The first wait before a honeypot port that could not be listened on is tried again; it
/// doubles up to [`PORT_RETRY_MAX`] (a port another program held may free up).
const PORT_RETRY_FIRST: std::time::Duration = std::time::Duration::from_secs(2);
/// The longest wait between two tries of a honeypot port.
const PORT_RETRY_MAX: std::time::Duration = std::time::Duration::from_secs(300);

async fn bind(port: u16) -> std::io::Result<tokio::net::TcpListener> {
    match tokio::net::TcpListener::bind(("::", port)).await {
        Ok(l) => Ok(l),
        Err(_) => tokio::net::TcpListener::bind(("0.0.0.0", port)).await,
    }
}

async fn listen(inner: Arc<Inner>, port: u16) {
    let mut wait = PORT_RETRY_FIRST;
    let listener = loop {
        match bind(port).await {
            Ok(l) => break l,
            Err(e) => {
                if wait == PORT_RETRY_FIRST {
                    tracing::warn!(port, error = %e, "cannot listen on a honeypot port; trying again");
                }
                failed(
                    &inner,
                    "port",
                    &port.to_string(),
                    Some(format!(
                        "cannot listen on port {port}: {e} (tried again every {} s at most)",
                        PORT_RETRY_MAX.as_secs()
                    )),
                );
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(PORT_RETRY_MAX);
            }
        }
    };
    failed(&inner, "port", &port.to_string(), None);
    tracing::info!(port, "honeypot port listening");
    loop {
        match listener.accept().await {
            Ok((stream, peer)) => {
                drop(stream);
                let ip = trusthub_core::apps::canonical_ip(peer.ip());
                push(
                    &inner,
                    HoneypotEvent {
                        kind: "port".into(),
                        target: port.to_string(),
                        at: OffsetDateTime::now_utc(),
                        detail: format!("connection to port {port} from {ip}:{}", peer.port()),
                    },
                );
            }
            Err(e) => {
                tracing::debug!(port, error = %e, "honeypot accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
        }
    }
}

/// The auth log of this host: `/var/log/auth.log` (Debian) or `/var/log/secure` (RHEL).
pub fn default_auth_log() -> Option<PathBuf> {
    ["/var/log/auth.log", "/var/log/secure"]
        .into_iter()
        .map(Path::new)
        .find(|p| p.is_file())
        .map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_log_lines_name_users_as_sshd_su_and_pam_write_them() {
        for line in [
            "Nov 27 10:01:02 web sshd[1]: Failed password for invalid user oracle from 203.0.113.9 port 5 ssh2",
            "Nov 27 10:01:02 web sshd[1]: Failed password for oracle from 203.0.113.9 port 5 ssh2",
            "Nov 27 10:01:02 web sshd[1]: Invalid user oracle from 203.0.113.9 port 5",
            "Nov 27 10:01:02 web su[2]: pam_unix(su:auth): authentication failure; logname=bob uid=1000 euid=0 tty=pts/0 ruser=bob rhost=  user=oracle",
            "Nov 27 10:01:02 web sshd[1]: Accepted publickey for oracle from 10.0.0.2 port 5 ssh2",
        ] {
            assert!(names_user(line, "oracle"), "{line}");
        }
        for line in [
            "Nov 27 10:01:02 web sshd[1]: Failed password for oracle2 from 203.0.113.9 port 5 ssh2",
            "Nov 27 10:01:02 web CRON[3]: pam_unix(cron:session): session opened for user root by (uid=0)",
            "oracle database started",
        ] {
            assert!(!names_user(line, "oracle"), "{line}");
        }
    }

    /// CONTRACT 30: a honeypot the host cannot watch is reported not armed, with why — a
    /// port another program holds, a file that is not there, no auth log — and armed once
    /// it can.
    #[tokio::test]
    async fn honeypots_that_cannot_watch_say_why() {
        let dir =
            std::env::temp_dir().join(format!("honeypot-st-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("dir");
        let held = std::net::TcpListener::bind("[::]:0").expect("bind");
        let port = held.local_addr().expect("addr").port();
        let missing = dir.join("no-such-file");
        let h = Honeypots::new(Some(dir.join("no-auth.log")));
        h.set(&[
            Honeypot::new("port", &port.to_string()),
            Honeypot::new("file", &missing.display().to_string()),
            Honeypot::new("user", "oracle"),
        ]);
        let mut states = Vec::new();
        for _ in 0..50 {
            states = h.states();
            if states.iter().all(|s| !s.armed) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        assert_eq!(states.len(), 3);
        for s in &states {
            assert!(!s.armed, "{s:?}");
            assert!(s.problem().is_none(), "{s:?}");
        }
        assert!(
            states[0]
                .why
                .as_deref()
                .is_some_and(|w| w.contains(&format!("port {port}"))),
            "{states:?}"
        );
        assert!(
            states[1]
                .why
                .as_deref()
                .is_some_and(|w| w.contains("cannot watch")),
            "{states:?}"
        );
        assert!(
            states[2]
                .why
                .as_deref()
                .is_some_and(|w| w.contains("auth log")),
            "{states:?}"
        );
        // The file appears and the log too: both armed at the next poll.
        std::fs::write(&missing, "x").expect("write");
        std::fs::write(dir.join("no-auth.log"), "").expect("write");
        h.poll();
        let states = h.states();
        assert!(states[1].armed && states[2].armed, "{states:?}");
        // The program holding the port goes: the honeypot is tried again and listens.
        drop(held);
        let mut armed = false;
        for _ in 0..100 {
            if h.states()[0].armed {
                armed = true;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert!(armed, "the port is tried again: {:?}", h.states());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// CONTRACT 30: while a configuration scan reads a watched file that is also a
    /// honeypot, only that file's events are the agent's own: a touch of another honeypot
    /// at the same time counts.
    #[tokio::test]
    async fn a_scan_silences_only_the_honeypots_it_reads() {
        let dir =
            std::env::temp_dir().join(format!("honeypot-q-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("dir");
        let scanned = dir.join("sshd_config");
        let other = dir.join("backup-keys.txt");
        std::fs::write(&scanned, "x").expect("write");
        std::fs::write(&other, "y").expect("write");
        let h = Honeypots::new(None);
        h.set(&[
            Honeypot::new("file", &scanned.display().to_string()),
            Honeypot::new("file", &other.display().to_string()),
        ]);
        h.poll();
        let patterns = vec![format!("{}/sshd_*", dir.display())];
        assert_eq!(h.files_matching(&patterns), vec![scanned.clone()]);
        {
            let _own = h.quiet_for(h.files_matching(&patterns));
            std::fs::read(&scanned).expect("the scan reads it");
            std::fs::read(&other).expect("someone else reads this one");
        }
        let got = h.take();
        assert!(!got.is_empty(), "the other honeypot's touch counts");
        assert!(
            got.iter().all(|e| e.target == other.display().to_string()),
            "{got:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn files_users_and_ports_are_watched() {
        let dir = std::env::temp_dir().join(format!("honeypot-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("dir");
        let canary = dir.join("backup-keys.txt");
        std::fs::write(&canary, "nothing here").expect("write");
        let log = dir.join("auth.log");
        std::fs::write(&log, "Nov 27 09:00:00 web sshd[1]: Failed password for oracle from 203.0.113.1 port 1 ssh2\n").expect("write");
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            l.local_addr().expect("addr").port()
        };
        let h = Honeypots::new(Some(log.clone()));
        h.set(&[
            Honeypot::new("file", &canary.display().to_string()),
            Honeypot::new("user", "oracle"),
            Honeypot::new("port", &port.to_string()),
        ]);
        h.poll();
        assert!(
            h.take().is_empty(),
            "nothing touched yet (the old log line is not a touch)"
        );
        // The agent's own reading is not a touch; someone else's read meanwhile is.
        let bystander = dir.join("other-canary.txt");
        std::fs::write(&bystander, "nothing either").expect("write");
        h.set(&[
            Honeypot::new("file", &canary.display().to_string()),
            Honeypot::new("file", &bystander.display().to_string()),
            Honeypot::new("user", "oracle"),
            Honeypot::new("port", &port.to_string()),
        ]);
        h.poll();
        {
            let _own = h.own_reads();
            let _ = read_own(&canary).expect("read");
            let _ = std::fs::read(&bystander).expect("someone else reads");
        }
        let during = h.take();
        assert!(
            !during.is_empty()
                && during
                    .iter()
                    .all(|e| e.target == bystander.display().to_string()),
            "the agent's own read is dropped, the other one counts: {during:?}"
        );
        let _ = std::fs::read(&canary).expect("read");
        use std::io::Write;
        std::fs::OpenOptions::new()
            .append(true)
            .open(&log)
            .and_then(|mut f| f.write_all(b"Nov 27 10:00:00 web sshd[1]: Failed password for invalid user oracle from 198.51.100.4 port 2 ssh2\npartial line for oracle"))
            .expect("append");
        let mut stream = None;
        for _ in 0..50 {
            match tokio::net::TcpStream::connect(("127.0.0.1", port)).await {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
            }
        }
        assert!(stream.is_some(), "the honeypot port listens");
        let mut events = Vec::new();
        for _ in 0..50 {
            events.extend(h.take());
            if events.iter().any(|e| e.kind == "port") {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let of = |k: &str| events.iter().filter(|e| e.kind == k).collect::<Vec<_>>();
        assert!(
            of("file")
                .iter()
                .any(|e| e.detail.ends_with("was opened") || e.detail.ends_with("was read")),
            "{events:?}"
        );
        assert_eq!(of("user").len(), 1, "{events:?}");
        assert!(of("user")[0].detail.contains("198.51.100.4"));
        assert!(
            of("port")[0]
                .detail
                .starts_with(&format!("connection to port {port} from 127.0.0.1:")),
            "{events:?}"
        );
        // Removing the canary is seen too.
        std::fs::remove_file(&canary).expect("rm");
        let gone = h.take();
        assert!(
            gone.iter().any(|e| e.detail.ends_with("was removed")),
            "{gone:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
