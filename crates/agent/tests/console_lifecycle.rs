//! CONTRACT 30: a console's shell never outlives its session, on a real PTY with the real
//! login shell. At the `expires_at` of its `console_open` token the agent ends the session
//! itself: every process of it, a background job that ignores SIGHUP included (SIGKILL
//! 5 s after the SIGHUP). `end_all` (a lost hub connection, a reconnect) ends them the
//! same way.

use std::time::{Duration, Instant};
use trusthub_agent::actions::console::{Consoles, session_pids};

fn root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
}

/// The session id of the console's shell: the leader `setsid` made.
fn session_of(c: &Consoles, name: &str) -> i32 {
    for _ in 0..100 {
        if let Some(sid) = c.sid(name) {
            return sid;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("no session {name}");
}

fn wait_until_gone(sid: i32, within: Duration) -> Duration {
    let start = Instant::now();
    while !session_pids(sid).is_empty() {
        assert!(
            start.elapsed() < within,
            "processes of session {sid} still alive: {:?}",
            session_pids(sid)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    start.elapsed()
}

fn start(
    c: &Consoles,
    name: &str,
    expires_in: Option<i64>,
) -> (i32, tokio::sync::mpsc::Receiver<String>) {
    let (tx, rx) = tokio::sync::mpsc::channel::<String>(10_000);
    let expires = expires_in.map(|s| time::OffsetDateTime::now_utc().unix_timestamp() + s);
    let mut rx = rx;
    c.open(name, 80, 24, "root", tx, expires)
        .expect("the shell starts");
    let sid = session_of(c, name);
    // The login shell has read its profile before anything is ended: a shell killed in the
    // middle of it can leave the profile's tools half done (pyenv's rehash lock makes every
    // later login shell wait forever).
    c.input(name, "echo RDY$((40+2))\n");
    let start = Instant::now();
    let mut seen = String::new();
    while !seen.contains("RDY42") {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the shell answers: {seen}"
        );
        match rx.try_recv() {
            Ok(frame) => seen.push_str(&frame),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    // A background job that ignores SIGHUP, and one that does not.
    c.input(
        name,
        "trap '' HUP; (trap '' HUP; exec sleep 1000) & sleep 999 &\n",
    );
    let start = Instant::now();
    while session_pids(sid).len() < 3 {
        assert!(start.elapsed() < Duration::from_secs(20), "the jobs start");
        std::thread::sleep(Duration::from_millis(50));
    }
    (sid, rx)
}

#[test]
fn a_console_ends_at_its_expiry_with_every_process_of_it() {
    if !root() {
        assert!(std::env::var_os("CI").is_none(), "CI runs as root");
        eprintln!("skipped: a console's login shell needs root");
        return;
    }
    let c = Consoles::default();
    let (sid, _rx) = start(&c, "expiring", Some(2));
    // The expiry comes, the session is ended: SIGHUP, then SIGKILL for what ignored it.
    let took = wait_until_gone(sid, Duration::from_secs(30));
    assert!(!c.is_open("expiring") || session_pids(sid).is_empty());
    eprintln!("gone {took:?} after the wait began");
}

#[test]
fn ending_all_consoles_leaves_no_process_behind() {
    if !root() {
        assert!(std::env::var_os("CI").is_none(), "CI runs as root");
        eprintln!("skipped: a console's login shell needs root");
        return;
    }
    let c = Consoles::default();
    let (a, _ra) = start(&c, "first", None);
    let (b, _rb) = start(&c, "second", None);
    let mut ended = c.end_all();
    ended.sort();
    assert_eq!(ended, vec!["first".to_owned(), "second".to_owned()]);
    wait_until_gone(a, Duration::from_secs(30));
    wait_until_gone(b, Duration::from_secs(30));
}
