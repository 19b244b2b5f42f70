//! A session across hub processes (CONTRACT 11): the process that started a session owns it
//! (it writes the recording and keeps the clocks). The host's socket and the browser's may be
//! held by other processes on the same PostgreSQL database; their frames come to the owner,
//! and the owner's frames for the browser go back, as `NOTIFY` messages naming the process
//! they are for. A frame too large for one message is cut into several (a chunk of output
//! becomes several `"o"` events; a paste several inputs).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use tokio::sync::mpsc;
use trusthub_platform::AppState;
use trusthub_platform::notify;
use trusthub_store::StoreResult;
use uuid::Uuid;

/// The `NOTIFY` channel.
pub const CHANNEL: &str = "trusthub_console";

/// Room left in a message for its envelope.
const DATA_BUDGET: usize = notify::MAX_PAYLOAD - 400;

#[derive(Debug, Serialize, Deserialize)]
struct Envelope {
    to: String,
    session: Uuid,
    msg: Msg,
}

/// What one process tells another about a session.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Msg {
    /// A frame of the session's host (to the owner).
    Agent {
        /// The host.
        agent: Uuid,
        /// Its tenant.
        tenant: Uuid,
        /// The frame.
        frame: Value,
    },
    /// The host opened the shell (to the owner, which writes the recording's header).
    Opened {
        /// The asciicast header.
        header: Value,
    },
    /// The host refused the shell (to the owner, which forgets the session).
    Refused {
        /// Why the session failed (`console_disabled`, `agent_lost`).
        #[serde(default)]
        reason: String,
    },
    /// A browser took the session on process `at` (to the owner).
    Attach {
        /// The process holding the browser's socket.
        at: String,
    },
    /// A browser's frame (to the owner).
    Browser {
        /// `{type: "input", data}` or `{type: "resize", cols, rows}`.
        frame: Value,
    },
    /// A frame for the browser (to the process holding its socket).
    ToBrowser {
        /// `{type: "output", data}` or `{type: "exit", code}`.
        frame: Value,
    },
    /// The session was ended by another process (to the owner, which closes the recording).
    Ended {
        /// Its status.
        status: String,
        /// Why.
        why: String,
    },
}

/// The browsers' sockets held here for sessions another process owns (a part of the state).
#[derive(Debug, Default)]
pub struct Browsers {
    sockets: Mutex<HashMap<Uuid, mpsc::Sender<String>>>,
}

impl Browsers {
    /// A browser socket here takes session `id`; its frames arrive on the receiver.
    pub fn add(&self, id: Uuid) -> mpsc::Receiver<String> {
        let (tx, rx) = mpsc::channel(1024);
        if let Ok(mut m) = self.sockets.lock() {
            m.insert(id, tx);
        }
        rx
    }

    /// The socket went away.
    pub fn remove(&self, id: Uuid) {
        if let Ok(mut m) = self.sockets.lock() {
            m.remove(&id);
        }
    }

    pub(crate) fn send(&self, id: Uuid, frame: String, last: bool) {
        let Ok(mut m) = self.sockets.lock() else {
            return;
        };
        if let Some(tx) = m.get(&id) {
            let _ = tx.try_send(frame);
        }
        if last {
            m.remove(&id);
        }
    }
}

/// Cuts `data` into pieces whose JSON string form stays within `budget` bytes, on character
/// boundaries.
pub fn pieces(data: &str, budget: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut size) = (0, 0);
    for (i, ch) in data.char_indices() {
        let n = match ch {
            '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
            c if (c as u32) < 0x20 => 6,
            c => c.len_utf8(),
        };
        if size + n > budget && i > start {
            out.push(&data[start..i]);
            start = i;
            size = 0;
        }
        size += n;
    }
    if start < data.len() || out.is_empty() {
        out.push(&data[start..]);
    }
    out
}

/// Sends `msg` about `session` to process `to`, cut into several messages when its frame's
/// `data` is too large for one.
pub async fn send(state: &AppState, to: &str, session: Uuid, msg: Msg) -> StoreResult<()> {
    let frame = match &msg {
        Msg::Agent { frame, .. } | Msg::Browser { frame } | Msg::ToBrowser { frame } => Some(frame),
        _ => None,
    };
    let data = frame
        .and_then(|f| f["data"].as_str())
        .filter(|d| d.len() * 6 > DATA_BUDGET);
    let Some(data) = data else {
        return publish(state, to, session, msg).await;
    };
    for piece in pieces(data, DATA_BUDGET) {
        let mut part = msg.clone();
        if let Msg::Agent { frame, .. } | Msg::Browser { frame } | Msg::ToBrowser { frame } =
            &mut part
        {
            frame["data"] = Value::String(piece.to_owned());
        }
        publish(state, to, session, part).await?;
    }
    Ok(())
}

async fn publish(state: &AppState, to: &str, session: Uuid, msg: Msg) -> StoreResult<()> {
    let payload = serde_json::to_string(&Envelope {
        to: to.to_owned(),
        session,
        msg,
    })
    .unwrap_or_default();
    notify::publish(&state.db, CHANNEL, &payload).await
}

/// What handles a message for this process (the service's `on_bus`).
pub type Handler =
    for<'a> fn(&'a AppState, Uuid, Msg) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// On PostgreSQL, hands the messages for this process to `handle` until the task is aborted.
pub async fn listen(state: AppState, handle: Handler) {
    notify::listen(state, CHANNEL, |state, payload| {
        Box::pin(async move {
            let Ok(e) = serde_json::from_str::<Envelope>(&payload) else {
                return;
            };
            if e.to == state.instance {
                handle(&state, e.session, e.msg).await;
            }
        })
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_keep_every_character_and_stay_within_the_budget() {
        let data = format!("{}é\u{1b}[0m\"{}", "a".repeat(20), "ü".repeat(30));
        let ps = pieces(&data, 16);
        assert_eq!(ps.concat(), data);
        for p in &ps {
            assert!(
                serde_json::to_string(p).expect("json").len() - 2 <= 16,
                "{p:?}"
            );
        }
        assert_eq!(pieces("", 16), vec![""]);
    }
}
