//! Emergency console sessions (CONTRACT 22): a PTY running the login shell of the console
//! user (as `su - <user>` starts it), opened on a `console_open` action only when the agent
//! runs with `--allow-console`. Output goes to the hub as `console_output` frames; input,
//! resizes and kills come back as `console_input`, `console_resize` and `console_kill`.
//! A kill ends every process of the console's terminal session, background jobs included.
//!
//! CONTRACT 30: a shell never outlives its session. Whenever a session ends — the hub's
//! kill (terminate, idle, maximum duration), the `expires_at` of the `console_open` token
//! (enforced here, whatever the hub does), the hub connection lost for more than 30 s, a
//! reconnect (the hub ended its sessions with the connection) — every process of it gets
//! SIGHUP, then SIGKILL 5 s later.

use serde_json::json;
use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// The open sessions of this agent.
#[derive(Debug, Clone, Default)]
pub struct Consoles {
    open: Arc<Mutex<HashMap<String, Handle>>>,
}

#[derive(Debug)]
struct Handle {
    master: File,
    sid: i32,
}

/// How long a session's processes have between SIGHUP and SIGKILL.
pub const HANGUP_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

fn winsize(cols: u16, rows: u16) -> rustix::termios::Winsize {
    rustix::termios::Winsize {
        ws_row: rows.max(1),
        ws_col: cols.max(1),
        ws_xpixel: 0,
        ws_ypixel: 0,
    }
}

/// A frame for the hub.
fn frame(kind: &str, session: &str, extra: serde_json::Value) -> String {
    let mut v = json!({"type": kind, "session_id": session});
    if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
        o.extend(e.clone());
    }
    v.to_string()
}

impl Consoles {
    /// Opens a session: a PTY, the login shell of `user` as its session leader with the PTY
    /// as controlling terminal; its output is sent on `out` until it exits. At `expires_at`
    /// (unix seconds) the session is ended here whatever the hub says.
    pub fn open(
        &self,
        session: &str,
        cols: u16,
        rows: u16,
        user: &str,
        out: mpsc::Sender<String>,
        expires_at: Option<i64>,
    ) -> Result<String, String> {
        let shell = login_shell(user).ok_or_else(|| format!("no user `{user}` on this host"))?;
        use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
        let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)
            .map_err(|e| format!("openpt: {e}"))?;
        grantpt(&master).map_err(|e| format!("grantpt: {e}"))?;
        unlockpt(&master).map_err(|e| format!("unlockpt: {e}"))?;
        let name = ptsname(&master, Vec::new()).map_err(|e| format!("ptsname: {e}"))?;
        let name = name.to_str().map_err(|e| e.to_string())?.to_owned();
        rustix::termios::tcsetwinsize(&master, winsize(cols, rows))
            .map_err(|e| format!("window size: {e}"))?;
        use std::os::unix::fs::OpenOptionsExt;
        let slave = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(rustix::fs::OFlags::NOCTTY.bits() as i32)
            .open(&name)
            .map_err(|e| format!("{name}: {e}"))?;
        let io = |f: &File| f.try_clone().map_err(|e| e.to_string());
        // `setsid --ctty`: a new session whose controlling terminal is the PTY; `su -` starts
        // the user's login shell with HOME, USER, LOGNAME and SHELL set.
        let mut child = std::process::Command::new("setsid")
            .args(["--ctty", "su", "-", user])
            .env("TERM", "xterm-256color")
            .stdin(io(&slave)?)
            .stdout(io(&slave)?)
            .stderr(slave)
            .spawn()
            .map_err(|e| format!("cannot start the console shell: {e}"))?;
        let sid = child.id() as i32;
        let master: File = master.into();
        let mut reader = master.try_clone().map_err(|e| e.to_string())?;
        if let Ok(mut m) = self.open.lock() {
            m.insert(session.to_owned(), Handle { master, sid });
        }
        if let Some(at) = expires_at {
            let me = self.clone();
            let session = session.to_owned();
            let wait = at.saturating_sub(time::OffsetDateTime::now_utc().unix_timestamp());
            let wait = std::time::Duration::from_secs(u64::try_from(wait).unwrap_or(0));
            std::thread::Builder::new()
                .name("console-clock".into())
                .spawn(move || {
                    std::thread::sleep(wait);
                    if me.is_open(&session) {
                        tracing::info!(%session, "the console reached its expires_at; ending it");
                        me.end(&session);
                    }
                })
                .map_err(|e| e.to_string())?;
        }
        let session = session.to_owned();
        let open = self.open.clone();
        std::thread::Builder::new()
            .name("console".into())
            .spawn(move || {
                let mut buf = vec![0u8; 16 * 1024];
                let mut pending: Vec<u8> = Vec::new();
                loop {
                    match reader.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            pending.extend_from_slice(&buf[..n]);
                            // Whole UTF-8 characters only; a split one waits for its rest.
                            let cut = match std::str::from_utf8(&pending) {
                                Ok(_) => pending.len(),
                                Err(e) if e.error_len().is_none() => e.valid_up_to(),
                                Err(_) => pending.len(),
                            };
                            let text = String::from_utf8_lossy(&pending[..cut]).into_owned();
                            pending.drain(..cut);
                            if !text.is_empty()
                                && out
                                    .blocking_send(frame(
                                        "console_output",
                                        &session,
                                        json!({"data": text}),
                                    ))
                                    .is_err()
                            {
                                break;
                            }
                        }
                    }
                }
                let code = child.wait().ok().and_then(|s| s.code()).unwrap_or(-1);
                if let Ok(mut m) = open.lock() {
                    m.remove(&session);
                }
                let _ = out.blocking_send(frame("console_exit", &session, json!({"code": code})));
            })
            .map_err(|e| e.to_string())?;
        Ok(shell)
    }

    /// Types into a session.
    pub fn input(&self, session: &str, data: &str) {
        if let Ok(mut m) = self.open.lock()
            && let Some(h) = m.get_mut(session)
        {
            let _ = h.master.write_all(data.as_bytes());
        }
    }

    /// Resizes a session's terminal.
    pub fn resize(&self, session: &str, cols: u16, rows: u16) {
        if let Ok(m) = self.open.lock()
            && let Some(h) = m.get(session)
        {
            let _ = rustix::termios::tcsetwinsize(&h.master, winsize(cols, rows));
        }
    }

    /// The terminal session id of an open session's shell.
    pub fn sid(&self, session: &str) -> Option<i32> {
        self.open
            .lock()
            .ok()
            .and_then(|m| m.get(session).map(|h| h.sid))
    }

    /// Whether `session` is open here.
    pub fn is_open(&self, session: &str) -> bool {
        self.open.lock().is_ok_and(|m| m.contains_key(session))
    }

    /// The sessions open here.
    pub fn sessions(&self) -> Vec<String> {
        self.open
            .lock()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Ends a session: SIGHUP to every process of its terminal session, SIGKILL to what is
    /// left after [`HANGUP_GRACE`] (on a thread of its own; this returns at once).
    pub fn end(&self, session: &str) {
        let sid = self
            .open
            .lock()
            .ok()
            .and_then(|m| m.get(session).map(|h| h.sid));
        if let Some(sid) = sid {
            signal_session(sid, rustix::process::Signal::HUP);
            let _ = std::thread::Builder::new()
                .name("console-end".into())
                .spawn(move || {
                    let deadline = std::time::Instant::now() + HANGUP_GRACE;
                    while std::time::Instant::now() < deadline {
                        if session_pids(sid).is_empty() {
                            return;
                        }
                        std::thread::sleep(std::time::Duration::from_millis(100));
                    }
                    kill_session(sid);
                });
        }
    }

    /// Ends every open session (the hub connection lost for too long, or a reconnect after
    /// which the hub holds none of them): the ids ended.
    pub fn end_all(&self) -> Vec<String> {
        let ended = self.sessions();
        for s in &ended {
            self.end(s);
        }
        ended
    }

    /// Kills every process of the session's terminal session (SIGHUP, then SIGKILL).
    pub fn kill(&self, session: &str) {
        self.end(session);
    }

    /// Handles a frame from the hub about a console; false when it is not one.
    pub fn on_frame(&self, v: &serde_json::Value) -> bool {
        let session = v["session_id"].as_str().unwrap_or_default();
        match v["type"].as_str() {
            Some("console_input") => self.input(session, v["data"].as_str().unwrap_or_default()),
            Some("console_resize") => self.resize(
                session,
                v["cols"].as_u64().unwrap_or(80).min(1000) as u16,
                v["rows"].as_u64().unwrap_or(24).min(1000) as u16,
            ),
            Some("console_kill") => self.kill(session),
            _ => return false,
        }
        true
    }
}

/// The login shell of `user` in `/etc/passwd`.
pub fn login_shell(user: &str) -> Option<String> {
    std::fs::read_to_string("/etc/passwd")
        .ok()?
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f.len() >= 7 && f[0] == user).then(|| f[6].to_owned())
        })
}

/// SIGKILL to every process whose session id is `sid` (read from `/proc/<pid>/stat`).
pub fn kill_session(sid: i32) {
    signal_session(sid, rustix::process::Signal::KILL);
}

/// `signal` to every process of the session `sid`.
pub fn signal_session(sid: i32, signal: rustix::process::Signal) {
    for pid in session_pids(sid) {
        if let Some(p) = rustix::process::Pid::from_raw(pid) {
            let _ = rustix::process::kill_process(p, signal);
        }
    }
}

/// The live processes (zombies aside) of the session `sid`.
pub fn session_pids(sid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // The fields after the command's closing parenthesis: state ppid pgrp session ...
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let zombie = fields.next() == Some("Z");
        let session = fields.nth(2).and_then(|s| s.parse::<i32>().ok());
        if session == Some(sid) && !zombie {
            out.push(pid);
        }
    }
    out
}
