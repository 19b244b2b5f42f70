//! Agent WebSockets (SPEC 4.2 `/ws/agents/:id`; CONTRACT 5): the hub keeps one per agent,
//! pings it every 15 s and drops it when no pong came for 45 s, pushes emergency action
//! tokens down it and takes the results back up.
//!
//! Messages are JSON text frames. Hub to agent: `{type: "eat", token}`, and `{type: "push"}`
//! (push a batch now: its answer says what the hub wants). Agent to hub:
//! `{type: "result", jti, exit_code, stdout, stderr, finished_at}` or `{type: "refused", jti,
//! reason}`. Each result updates the action record, the audit log and the transparency log in
//! one transaction.

use crate::state::{AppState, now};
use crate::store::actions::{self, Outcome, status};
use axum::extract::ws::{Message, WebSocket};
use serde::Deserialize;
use serde_json::json;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::mpsc;
use trusthub_store::{StoreResult, TenantId, audit};
use uuid::Uuid;

/// Ping period.
const PING_EVERY: Duration = Duration::from_secs(15);
/// A peer silent this long is dead.
const DEAD_AFTER: Duration = Duration::from_secs(45);
/// Longest output kept per stream.
pub const MAX_OUTPUT: usize = 64 * 1024;

/// The agents connected to this process.
#[derive(Debug, Default)]
pub struct Connections {
    inner: Mutex<HashMap<Uuid, (u64, mpsc::Sender<String>)>>,
    next: std::sync::atomic::AtomicU64,
    closing: tokio::sync::Notify,
    closed: std::sync::atomic::AtomicBool,
}

impl Connections {
    fn add(&self, agent: Uuid) -> (u64, mpsc::Receiver<String>) {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (tx, rx) = mpsc::channel(64);
        if let Ok(mut m) = self.inner.lock() {
            m.insert(agent, (id, tx));
        }
        (id, rx)
    }

    fn remove(&self, agent: Uuid, id: u64) -> bool {
        let Ok(mut m) = self.inner.lock() else {
            return false;
        };
        if m.get(&agent).is_some_and(|(cid, _)| *cid == id) {
            m.remove(&agent);
            return true;
        }
        false
    }

    /// Sends a text frame to the agent if it is connected here; false otherwise.
    pub fn send(&self, agent: Uuid, text: String) -> bool {
        let tx = self
            .inner
            .lock()
            .ok()
            .and_then(|m| m.get(&agent).map(|(_, tx)| tx.clone()));
        tx.is_some_and(|tx| tx.try_send(text).is_ok())
    }

    /// Closes every socket (the hub is stopping); agents redial another process or this one
    /// once it is back.
    pub fn close_all(&self) {
        self.closed.store(true, std::sync::atomic::Ordering::SeqCst);
        self.closing.notify_waiters();
    }

    /// Whether the agent is connected to this process.
    pub fn is_local(&self, agent: Uuid) -> bool {
        self.inner
            .lock()
            .map(|m| m.contains_key(&agent))
            .unwrap_or(false)
    }

    /// How many agents are connected here.
    pub fn len(&self) -> usize {
        self.inner.lock().map(|m| m.len()).unwrap_or(0)
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum FromAgent {
    Result {
        jti: String,
        exit_code: i64,
        #[serde(default)]
        stdout: String,
        #[serde(default)]
        stderr: String,
        /// What the agent says of the outcome (`rolled back: <reason>`).
        #[serde(default)]
        note: Option<String>,
    },
    Refused {
        jti: String,
        reason: String,
    },
}

fn bounded(s: &str) -> &str {
    if s.len() <= MAX_OUTPUT {
        return s;
    }
    let mut end = MAX_OUTPUT;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Serves one agent's socket until it closes or goes silent.
pub async fn serve(state: AppState, agent_id: Uuid, tenant: TenantId, mut socket: WebSocket) {
    let (conn, mut outbox) = state.part::<crate::agent_ws::Connections>().add(agent_id);
    if let Err(e) = mark(&state, agent_id, true).await {
        tracing::warn!(error = %e, %agent_id, "cannot record the agent connection");
    }
    tracing::info!(%agent_id, "agent connected");
    let mut ping = tokio::time::interval(PING_EVERY);
    let mut last_heard = tokio::time::Instant::now();
    let closing = state
        .part::<crate::agent_ws::Connections>()
        .closing
        .notified();
    tokio::pin!(closing);
    loop {
        if state
            .part::<Connections>()
            .closed
            .load(std::sync::atomic::Ordering::SeqCst)
        {
            let _ = socket.send(Message::Close(None)).await;
            break;
        }
        tokio::select! {
            _ = &mut closing => {
                let _ = socket.send(Message::Close(None)).await;
                break;
            }
            msg = socket.recv() => {
                let Some(Ok(msg)) = msg else { break };
                last_heard = tokio::time::Instant::now();
                match msg {
                    Message::Text(text) => {
                        if let Err(e) = on_message(&state, agent_id, tenant, text.as_str()).await {
                            tracing::warn!(error = %e, %agent_id, "cannot record an agent message");
                        }
                    }
                    Message::Close(_) => break,
                    _ => {}
                }
            }
            out = outbox.recv() => {
                let Some(text) = out else { break };
                if socket.send(Message::Text(text.into())).await.is_err() {
                    break;
                }
            }
            _ = ping.tick() => {
                if last_heard.elapsed() > DEAD_AFTER {
                    tracing::info!(%agent_id, "agent silent for 45 s; dropping its socket");
                    break;
                }
                if socket.send(Message::Ping(Vec::new().into())).await.is_err() {
                    break;
                }
            }
        }
    }
    if state
        .part::<crate::agent_ws::Connections>()
        .remove(agent_id, conn)
    {
        if let Err(e) = mark(&state, agent_id, false).await {
            tracing::warn!(error = %e, %agent_id, "cannot clear the agent connection");
        }
        // The consoles this socket carried are gone with it.
        if let Some(hook) = state.parts.get::<ConsoleFrames>() {
            (hook.0)(
                &state,
                agent_id,
                tenant,
                &serde_json::json!({"type": "console_agent_lost"}),
            )
            .await;
        }
    }
    tracing::info!(%agent_id, "agent disconnected");
}

async fn mark(state: &AppState, agent_id: Uuid, connected: bool) -> StoreResult<()> {
    let mut tx = state.db.begin().await?;
    if connected {
        actions::set_connected(&mut tx, agent_id, &state.instance, now()).await?;
    } else {
        actions::clear_connected(&mut tx, agent_id, &state.instance).await?;
    }
    tx.commit().await
}

async fn on_message(
    state: &AppState,
    agent_id: Uuid,
    tenant: TenantId,
    text: &str,
) -> StoreResult<()> {
    if text.contains("\"type\":\"console_") {
        // A console's frames (CONTRACT 22) belong to the console capability.
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(text)
            && v["type"]
                .as_str()
                .is_some_and(|t| t.starts_with("console_"))
        {
            if let Some(hook) = state.parts.get::<ConsoleFrames>() {
                (hook.0)(state, agent_id, tenant, &v).await;
            }
            return Ok(());
        }
    }
    let Ok(msg) = serde_json::from_str::<FromAgent>(text) else {
        tracing::warn!(%agent_id, "unreadable message from an agent ignored");
        return Ok(());
    };
    let now = now();
    let note = match &msg {
        FromAgent::Result { note, .. } => note.as_deref().map(bounded),
        FromAgent::Refused { .. } => None,
    };
    let (jti, outcome) = match &msg {
        FromAgent::Result {
            jti,
            exit_code,
            stdout,
            stderr,
            ..
        } => (
            jti,
            Outcome {
                status: if *exit_code == 0 {
                    status::SUCCEEDED
                } else {
                    status::FAILED
                },
                exit_code: Some(*exit_code),
                stdout: Some(bounded(stdout)),
                stderr: Some(bounded(stderr)),
                refused_reason: None,
            },
        ),
        FromAgent::Refused { jti, reason } => (
            jti,
            Outcome {
                status: status::FAILED,
                exit_code: None,
                stdout: None,
                stderr: None,
                refused_reason: Some(bounded(reason)),
            },
        ),
    };
    let mut tx = state.db.begin().await?;
    let Some(action) = actions::finish(&mut tx, agent_id, jti, &outcome, now).await? else {
        tracing::warn!(%agent_id, jti, "result for no dispatched action of this agent ignored");
        return Ok(());
    };
    let digest = |s: Option<&str>| {
        s.map(|s| {
            use sha2::Digest;
            trusthub_core::secret::hex(&sha2::Sha256::digest(s.as_bytes()))
        })
    };
    let payload = json!({
        "jti": action.jti, "act": action.act, "agent_id": agent_id, "app_id": action.app_id,
        "status": outcome.status, "exit_code": outcome.exit_code, "refused_reason": outcome.refused_reason,
        "stdout_sha256": digest(outcome.stdout), "stderr_sha256": digest(outcome.stderr),
        "requested_by": action.requested_by,
    });
    let subject = match action.app_id {
        Some(app) => format!("app:{app}"),
        None => format!("agent:{agent_id}"),
    };
    audit::append(
        &mut tx,
        tenant,
        &audit::NewEntry {
            event_type: trusthub_core::audit::ACTION_RESULT,
            actor: format!("agent:{agent_id}"),
            subject: subject.clone(),
            details: payload.clone(),
            ip: None,
            request_id: None,
        },
        now,
    )
    .await?;
    actions::append_log(
        &mut tx,
        tenant,
        &format!("{}_result", action.act),
        &subject,
        &payload,
        now,
    )
    .await?;
    let result = ActionResult {
        tenant,
        jti: action.jti.clone(),
        act: action.act.clone(),
        agent_id,
        status: outcome.status.to_owned(),
        exit_code: outcome.exit_code,
        stdout: outcome.stdout.map(str::to_owned),
        stderr: outcome.stderr.map(str::to_owned),
        refused_reason: outcome.refused_reason.map(str::to_owned),
        note: note.map(str::to_owned),
    };
    for (act, hook) in &state.part::<ActionHooks>().0 {
        if *act == result.act {
            hook(state, &mut tx, &result, now).await?;
        }
    }
    tx.commit().await
}

/// What the console capability does with a console frame from an agent (`console_output`,
/// `console_exit`): a part the composition root installs.
#[derive(Debug)]
pub struct ConsoleFrames(pub ConsoleFramesFn);

/// The signature of [`ConsoleFrames`].
pub type ConsoleFramesFn = for<'a> fn(
    &'a AppState,
    Uuid,
    TenantId,
    &'a serde_json::Value,
) -> trusthub_platform::BoxFuture<'a, ()>;

/// An action's result as the capability that asked for it sees it.
#[derive(Debug, Clone)]
pub struct ActionResult {
    /// The tenant.
    pub tenant: TenantId,
    /// The token's nonce.
    pub jti: String,
    /// Its kind (`install_package`, ...).
    pub act: String,
    /// The agent.
    pub agent_id: Uuid,
    /// `succeeded` or `failed`.
    pub status: String,
    /// The exit code (none when refused).
    pub exit_code: Option<i64>,
    /// Output.
    pub stdout: Option<String>,
    /// Errors.
    pub stderr: Option<String>,
    /// Why the agent refused it.
    pub refused_reason: Option<String>,
    /// The agent's note of the outcome (`rolled back: <reason>`).
    pub note: Option<String>,
}

/// What runs, in the result's transaction, when an agent answers an action of a kind: the
/// capabilities that send actions (auto-patch) follow their own this way. A part of the
/// state the composition root installs.
#[derive(Default)]
pub struct ActionHooks(pub Vec<(&'static str, ActionHook)>);

impl std::fmt::Debug for ActionHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(act, _)| act))
            .finish()
    }
}

/// The signature of an [`ActionHooks`] entry.
pub type ActionHook = for<'a> fn(
    &'a AppState,
    &'a mut trusthub_store::Tx,
    &'a ActionResult,
    time::OffsetDateTime,
) -> trusthub_platform::BoxFuture<'a, StoreResult<()>>;
