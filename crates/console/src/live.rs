//! The sessions live in this process: their recording (strict: every event is written to
//! the asciicast v2 file before it is forwarded), the browser's socket, and the clocks of the
//! idle and maximum durations.

use serde_json::json;
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;
use tokio::sync::mpsc;
use tokio::time::Instant;
use trusthub_store::TenantId;
use uuid::Uuid;

/// The live sessions (a part of the state).
#[derive(Debug, Default)]
pub struct Live {
    sessions: Mutex<HashMap<Uuid, Entry>>,
}

#[derive(Debug)]
struct Entry {
    tenant: TenantId,
    agent: Uuid,
    file: Option<std::fs::File>,
    path: PathBuf,
    started: Instant,
    last_input: Instant,
    browser: Option<mpsc::Sender<String>>,
    backlog: Vec<String>,
    /// Events that came before the host's confirmation (between hub processes, the host's
    /// output and the browser's resizes can overtake it): written once the header is, and
    /// output forwarded then.
    early: Vec<(f64, &'static str, String)>,
    record_input: bool,
}

/// Where a session's recording is.
pub fn cast_path(dir: &std::path::Path, id: Uuid) -> PathBuf {
    dir.join(format!("{id}.cast"))
}

/// The recording could not be written: the session must end.
#[derive(Debug)]
pub struct RecordingFailed(pub String);

impl Live {
    /// A session starts (its recording is created when the host confirms the shell).
    pub fn add(&self, id: Uuid, tenant: TenantId, agent: Uuid, path: PathBuf, record_input: bool) {
        let now = Instant::now();
        if let Ok(mut m) = self.sessions.lock() {
            m.insert(
                id,
                Entry {
                    tenant,
                    agent,
                    file: None,
                    path,
                    started: now,
                    last_input: now,
                    browser: None,
                    backlog: Vec::new(),
                    early: Vec::new(),
                    record_input,
                },
            );
        }
    }

    /// The session's tenant and host, while it is live here.
    pub fn of(&self, id: Uuid) -> Option<(TenantId, Uuid)> {
        self.sessions
            .lock()
            .ok()?
            .get(&id)
            .map(|e| (e.tenant, e.agent))
    }

    /// The live sessions of a host.
    pub fn of_agent(&self, agent: Uuid) -> Vec<Uuid> {
        self.sessions
            .lock()
            .map(|m| {
                m.iter()
                    .filter(|(_, e)| e.agent == agent)
                    .map(|(id, _)| *id)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Writes the cast's header line.
    pub fn header(&self, id: Uuid, header: &serde_json::Value) -> Result<(), RecordingFailed> {
        let mut m = self
            .sessions
            .lock()
            .map_err(|_| RecordingFailed("lock".into()))?;
        let Some(e) = m.get_mut(&id) else {
            return Ok(());
        };
        if let Some(dir) = e.path.parent() {
            std::fs::create_dir_all(dir).map_err(|err| RecordingFailed(err.to_string()))?;
        }
        let mut f = std::fs::OpenOptions::new()
            .create_new(true)
            .write(true)
            .open(&e.path)
            .map_err(|err| RecordingFailed(format!("{}: {err}", e.path.display())))?;
        writeln!(f, "{header}").map_err(|err| RecordingFailed(err.to_string()))?;
        e.file = Some(f);
        for (t, code, data) in std::mem::take(&mut e.early) {
            Self::write(e, t, code, &data)?;
            if code == "o" {
                Self::forward(e, &data);
            }
        }
        Ok(())
    }

    fn write(e: &mut Entry, t: f64, code: &str, data: &str) -> Result<(), RecordingFailed> {
        let line = json!([(t * 1_000_000.0).round() / 1_000_000.0, code, data]).to_string();
        let f = e
            .file
            .as_mut()
            .ok_or_else(|| RecordingFailed("the recording is not open".into()))?;
        f.write_all(format!("{line}\n").as_bytes())
            .map_err(|err| RecordingFailed(err.to_string()))
    }

    /// Records an event (kept for the header when it has not been written yet).
    fn record(e: &mut Entry, code: &'static str, data: &str) -> Result<(), RecordingFailed> {
        let t = e.started.elapsed().as_secs_f64();
        if e.file.is_none() {
            e.early.push((t, code, data.to_owned()));
            return Ok(());
        }
        Self::write(e, t, code, data)
    }

    fn forward(e: &mut Entry, data: &str) {
        let frame = json!({"type": "output", "data": data}).to_string();
        match &e.browser {
            Some(b) => {
                let _ = b.try_send(frame);
            }
            None => e.backlog.push(frame),
        }
    }

    /// Output of the host: recorded, then forwarded to the browser (or kept until it comes);
    /// before the recording's header, kept until it is written.
    pub fn output(&self, id: Uuid, data: &str) -> Result<(), RecordingFailed> {
        let mut m = self
            .sessions
            .lock()
            .map_err(|_| RecordingFailed("lock".into()))?;
        let Some(e) = m.get_mut(&id) else {
            return Ok(());
        };
        let early = e.file.is_none();
        Self::record(e, "o", data)?;
        if !early {
            Self::forward(e, data);
        }
        Ok(())
    }

    /// Input of the operator: the idle clock restarts; recorded when asked for.
    pub fn input(&self, id: Uuid, data: &str) -> Result<(), RecordingFailed> {
        let mut m = self
            .sessions
            .lock()
            .map_err(|_| RecordingFailed("lock".into()))?;
        let Some(e) = m.get_mut(&id) else {
            return Ok(());
        };
        e.last_input = Instant::now();
        if e.record_input {
            Self::record(e, "i", data)?;
        }
        Ok(())
    }

    /// A resize: recorded as an `"r"` event.
    pub fn resize(&self, id: Uuid, cols: u16, rows: u16) -> Result<(), RecordingFailed> {
        let mut m = self
            .sessions
            .lock()
            .map_err(|_| RecordingFailed("lock".into()))?;
        let Some(e) = m.get_mut(&id) else {
            return Ok(());
        };
        Self::record(e, "r", &format!("{cols}x{rows}"))
    }

    /// The browser's socket takes the session: what came before it is sent first.
    pub fn attach(&self, id: Uuid) -> Option<mpsc::Receiver<String>> {
        let mut m = self.sessions.lock().ok()?;
        let e = m.get_mut(&id)?;
        let (tx, rx) = mpsc::channel(1024);
        for f in e.backlog.drain(..) {
            let _ = tx.try_send(f);
        }
        e.browser = Some(tx);
        Some(rx)
    }

    /// Seconds since the last input and since the start.
    pub fn clocks(&self, id: Uuid) -> Option<(u64, u64)> {
        let m = self.sessions.lock().ok()?;
        let e = m.get(&id)?;
        Some((
            e.last_input.elapsed().as_secs(),
            e.started.elapsed().as_secs(),
        ))
    }

    /// The session ends here: the browser (or the CLI) is told how — the shell's exit code,
    /// and the session's status and end reason when known — the recording closed; its path.
    pub fn finish(
        &self,
        id: Uuid,
        exit_code: Option<i64>,
        end: Option<(&str, &str)>,
    ) -> Option<PathBuf> {
        let e = self.sessions.lock().ok()?.remove(&id)?;
        if let Some(b) = &e.browser {
            let mut frame = json!({"type": "exit", "code": exit_code});
            if let Some((status, reason)) = end {
                frame["status"] = json!(status);
                frame["reason"] = json!(reason);
            }
            let _ = b.try_send(frame.to_string());
        }
        if let Some(mut f) = e.file {
            let _ = f.flush();
            let _ = f.sync_all();
        }
        Some(e.path)
    }
}
