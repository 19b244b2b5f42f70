//! Signed actions (CONTRACT 5), the services other capabilities and the handlers call: the
//! hub's EAT key, preparing an action for a host, recording it in the transparency log and
//! dispatching it over the host's WebSocket.

use crate::auth::Viewer;
use crate::error::{ApiError, ApiResult};
use crate::extract::Meta;
use crate::state::{AppState, now};
use crate::store::actions::{self, Action};
use serde::{Deserialize, Serialize};
use serde_json::json;
use time::OffsetDateTime;
use trusthub_core::canonical::LogEntry;
use trusthub_core::eat::{self, Claims};
use trusthub_store::TenantId;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

/// The hub's Ed25519 key for emergency action tokens (CONTRACT 5); agents pin its public
/// half at registration (a part of the state).
#[derive(Debug)]
pub struct EatKey(pub ed25519_dalek::SigningKey);

/// A dispatched action.
#[derive(Debug, Serialize, ToSchema)]
pub struct Dispatched {
    /// The token's nonce; `GET /actions/{jti}` follows it.
    pub jti: String,
    /// `dispatched`.
    pub status: String,
}

/// An action for an agent, signed as an EAT and pushed over its WebSocket.
#[derive(Debug)]
pub struct ActionRequest<'a> {
    /// The agent.
    pub agent_id: Uuid,
    /// The app it is about, if any.
    pub app_id: Option<Uuid>,
    /// `restart_app`, ...
    pub act: &'static str,
    /// The token's `args`.
    pub args: serde_json::Value,
    /// Why (checked by the caller).
    pub reason: &'a str,
    /// The audit entry's subject (`app:<id>`).
    pub subject: String,
    /// The token's nonce, when the caller chose it; else a new one.
    pub jti: Option<String>,
}

/// Who asks for an action.
#[derive(Debug, Clone, Copy)]
pub enum Requester<'a> {
    /// A user, through a request.
    User(&'a Meta, &'a crate::auth::Principal),
    /// The hub itself for a tenant (auto-patch): `actor` as the audit log names it
    /// (`system:auto_patch`).
    Hub(TenantId, &'a str),
}

impl Requester<'_> {
    pub(crate) fn tenant(&self) -> TenantId {
        match self {
            Requester::User(_, p) => p.tenant(),
            Requester::Hub(t, _) => *t,
        }
    }

    pub(crate) fn by(&self) -> String {
        match self {
            Requester::User(_, p) => format!("user:{}", p.user.id),
            Requester::Hub(_, actor) => (*actor).to_owned(),
        }
    }
}

/// Dispatches `req` as `p` (CONTRACT 5): 409 when the agent is not connected to any hub
/// process (nothing is queued); else the action is recorded and audited, the EAT (level 2,
/// 5 minutes) signed and sent.
pub async fn dispatch(
    state: &AppState,
    meta: &Meta,
    p: &crate::auth::Principal,
    req: ActionRequest<'_>,
    now: OffsetDateTime,
) -> ApiResult<Dispatched> {
    dispatch_as(state, Requester::User(meta, p), req, now).await
}

/// Whether `agent` holds a WebSocket with some hub process (an action can reach it).
pub async fn reachable(state: &AppState, agent: Uuid) -> ApiResult<bool> {
    if state.part::<crate::agent_ws::Connections>().is_local(agent) {
        return Ok(true);
    }
    let mut c = state.db.conn().await?;
    Ok(actions::connected_instance(&mut c, agent).await?.is_some())
}

/// [`dispatch`] for any [`Requester`]; `req.jti` names the token when the caller recorded
/// its own side first (so a fast answer finds it).
pub async fn dispatch_as(
    state: &AppState,
    who: Requester<'_>,
    req: ActionRequest<'_>,
    now: OffsetDateTime,
) -> ApiResult<Dispatched> {
    if !reachable(state, req.agent_id).await? {
        return Err(ApiError::Conflict(
            "the agent is not connected; nothing was sent".into(),
        ));
    }
    let mut tx = state.db.begin().await?;
    let prepared = prepare(state, who, req, now)?;
    prepared.record(&mut tx, who, now).await?;
    tx.commit().await?;
    prepared.send(state).await
}

/// A signed action, recorded in a caller's transaction and sent once it commits: a
/// capability that records its own side with it (auto-patch's attempts) does both in one
/// transaction.
#[derive(Debug)]
pub struct Prepared {
    agent_id: Uuid,
    app_id: Option<Uuid>,
    jti: String,
    act: &'static str,
    reason: String,
    subject: String,
    exp: OffsetDateTime,
    frame: String,
}

impl Prepared {
    /// The token's nonce.
    pub fn jti(&self) -> &str {
        &self.jti
    }

    /// Records the action and its `action_requested` audit row in `tx`.
    pub async fn record(
        &self,
        tx: &mut trusthub_store::Tx,
        who: Requester<'_>,
        now: OffsetDateTime,
    ) -> ApiResult<()> {
        Prepared::record_all(std::slice::from_ref(self), tx, who, now).await
    }

    /// Records actions of one requester and their audit rows in `tx`: two multi-row
    /// statements (a cycle of auto-patch records hundreds at once).
    pub async fn record_all(
        all: &[Prepared],
        tx: &mut trusthub_store::Tx,
        who: Requester<'_>,
        now: OffsetDateTime,
    ) -> ApiResult<()> {
        let rows: Vec<actions::NewAction<'_>> = all
            .iter()
            .map(|p| actions::NewAction {
                jti: &p.jti,
                agent_id: p.agent_id,
                app_id: p.app_id,
                act: p.act,
                reason: &p.reason,
                expires_at: p.exp,
            })
            .collect();
        actions::insert_many(&mut *tx, who.tenant(), &rows, &who.by(), now).await?;
        let entries: Vec<trusthub_store::audit::NewEntry<'_>> = all
            .iter()
            .map(|p| {
                let details =
                    json!({"jti": p.jti, "act": p.act, "agent_id": p.agent_id, "reason": p.reason});
                match who {
                    Requester::User(meta, principal) => meta.audit(
                        trusthub_core::audit::ACTION_REQUESTED,
                        trusthub_platform::extract::Actor::actor(principal),
                        p.subject.clone(),
                        details,
                    ),
                    Requester::Hub(_, actor) => trusthub_store::audit::NewEntry {
                        event_type: trusthub_core::audit::ACTION_REQUESTED,
                        actor: actor.to_owned(),
                        subject: p.subject.clone(),
                        details,
                        ip: None,
                        request_id: None,
                    },
                }
            })
            .collect();
        trusthub_store::audit::append_many(&mut *tx, who.tenant(), &entries, now).await?;
        Ok(())
    }

    /// Sends the token (after the transaction that recorded it committed); 409 when the
    /// agent is gone, and the action is marked failed.
    pub async fn send(self, state: &AppState) -> ApiResult<Dispatched> {
        if !crate::routing::deliver(state, self.agent_id, self.frame).await? {
            let mut tx = state.db.begin().await?;
            actions::finish(
                &mut tx,
                self.agent_id,
                &self.jti,
                &actions::Outcome {
                    status: actions::status::FAILED,
                    exit_code: None,
                    stdout: None,
                    stderr: None,
                    refused_reason: Some("the agent disconnected before the token could be sent"),
                },
                now(),
            )
            .await?;
            tx.commit().await?;
            return Err(ApiError::Conflict(
                "the agent is not connected; nothing was sent".into(),
            ));
        }
        Ok(Dispatched {
            jti: self.jti,
            status: actions::status::DISPATCHED.into(),
        })
    }
}

/// Signs `req` as an EAT (level 2, 5 minutes) for `who`; record it with
/// [`Prepared::record`] in a transaction, then [`Prepared::send`] it.
pub fn prepare(
    state: &AppState,
    who: Requester<'_>,
    req: ActionRequest<'_>,
    now: OffsetDateTime,
) -> ApiResult<Prepared> {
    let jti = req
        .jti
        .clone()
        .unwrap_or_else(|| Uuid::new_v4().simple().to_string());
    let exp = now + time::Duration::seconds(eat::MAX_LIFETIME_SECS);
    let claims = Claims {
        iss: eat::ISSUER.into(),
        sub: req.agent_id,
        tid: who.tenant().0,
        jti: jti.clone(),
        iat: now.unix_timestamp(),
        exp: exp.unix_timestamp(),
        lvl: 2,
        act: req.act.into(),
        args: req.args,
    };
    let token = eat::sign(&state.part::<EatKey>().0, &claims)
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok(Prepared {
        agent_id: req.agent_id,
        app_id: req.app_id,
        jti,
        act: req.act,
        reason: req.reason.to_owned(),
        subject: req.subject,
        exp,
        frame: json!({"type": "eat", "token": token}).to_string(),
    })
}

/// A transparency-log entry (CONTRACT 5a).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LogEntryView {
    /// Position, from 1.
    pub seq: i64,
    /// E.g. `restart_app_result`.
    pub kind: String,
    /// E.g. `app:<id>`.
    pub subject_ref: String,
    /// The facts (for restarts: jti, act, agent, app, status, exit code, SHA-256 of the output).
    pub payload: serde_json::Value,
    /// The previous entry's hash (64 zeros for the first).
    pub prev_hash: String,
    /// SHA-256 (hex) of the RFC 8785 canonical JSON of `{seq, kind, subject_ref, payload,
    /// prev_hash, created_at}`.
    pub entry_hash: String,
    /// RFC 3339, exactly as hashed.
    pub created_at: String,
}

impl From<LogEntry> for LogEntryView {
    fn from(e: LogEntry) -> Self {
        LogEntryView {
            seq: e.seq,
            kind: e.kind,
            subject_ref: e.subject_ref,
            payload: e.payload,
            prev_hash: e.prev_hash,
            entry_hash: e.entry_hash,
            created_at: e.created_at,
        }
    }
}

/// An action record (CONTRACT 5).
#[derive(Debug, Serialize, ToSchema)]
pub struct ActionView {
    /// The token's nonce.
    pub jti: String,
    /// `restart_app`, ...
    pub act: String,
    /// Agent.
    pub agent_id: Uuid,
    /// App, for restarts.
    pub app_id: Option<Uuid>,
    /// `dispatched`, `succeeded`, `failed` (non-zero exit, or refused by the agent) or
    /// `expired` (no result before the token's `exp`).
    pub status: String,
    /// Exit code.
    pub exit_code: Option<i64>,
    /// Output (at most 64 KiB).
    pub stdout: Option<String>,
    /// Errors (at most 64 KiB).
    pub stderr: Option<String>,
    /// Why the agent refused it.
    pub refused_reason: Option<String>,
    /// `user:<id>`.
    pub requested_by: String,
    /// Why.
    pub reason: String,
    /// Requested.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// The token's expiry.
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    /// Result time.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub finished_at: Option<OffsetDateTime>,
}

impl From<Action> for ActionView {
    fn from(a: Action) -> Self {
        let expired = a.status == actions::status::DISPATCHED && a.expires_at <= now();
        ActionView {
            jti: a.jti,
            act: a.act,
            agent_id: a.agent_id,
            app_id: a.app_id,
            status: if expired {
                actions::status::EXPIRED.into()
            } else {
                a.status
            },
            exit_code: a.exit_code,
            stdout: a.stdout,
            stderr: a.stderr,
            refused_reason: a.refused_reason,
            requested_by: a.requested_by,
            reason: a.reason,
            created_at: a.created_at,
            expires_at: a.expires_at,
            finished_at: a.finished_at,
        }
    }
}

/// One action of the tenant (viewer), for `GET /actions/{jti}` and the dashboard.
pub async fn get_action(state: &AppState, by: &Viewer, jti: String) -> ApiResult<ActionView> {
    let p = &by.0;
    let mut c = state.db.conn().await?;
    let a = actions::get(&mut c, p.tenant(), &jti)
        .await?
        .ok_or(ApiError::NotFound("action"))?;
    Ok(a.into())
}

/// Action filters.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ActionQuery {
    /// Only this agent's.
    pub agent_id: Option<Uuid>,
    /// Page size, 1 to 500 (default 100).
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<i64>,
}

/// The tenant's actions (viewer), newest first: `q.limit` 1 to 500 (default 100).
pub async fn list_actions(
    state: &AppState,
    by: &Viewer,
    q: ActionQuery,
) -> ApiResult<Vec<ActionView>> {
    let limit = ApiError::page_limit(q.limit, 100, 500)?;
    let mut c = state.db.conn().await?;
    Ok(actions::list(&mut c, by.0.tenant(), q.agent_id, limit)
        .await?
        .into_iter()
        .map(ActionView::from)
        .collect())
}

/// Paging of the log.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct LogQuery {
    /// Entries after this seq (default 0: from the start).
    pub since_seq: Option<i64>,
    /// Page size, 1 to 1000 (default 1000).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
}

/// The tenant's transparency log from `q.since_seq` (viewer), oldest first.
pub async fn transparency_log(
    state: &AppState,
    by: &Viewer,
    q: LogQuery,
) -> ApiResult<Vec<LogEntryView>> {
    let p = &by.0;
    let limit = ApiError::page_limit(q.limit, 1000, 1000)?;
    let mut c = state.db.conn().await?;
    Ok(
        actions::log_since(&mut c, p.tenant(), q.since_seq.unwrap_or(0).max(0), limit)
            .await?
            .into_iter()
            .map(LogEntryView::from)
            .collect(),
    )
}

/// The signed head of the log.
#[derive(Debug, Serialize, ToSchema)]
pub struct LogHead {
    /// The newest seq (0 when empty).
    pub seq: i64,
    /// Its entry hash (64 zeros when empty).
    pub entry_hash: String,
    /// Base64 Ed25519 signature over the bytes of `entry_hash` as hex text.
    pub signature: String,
    /// The hub's Ed25519 public key (the one agents pin for EATs), hex.
    pub public_key_hex: String,
}

/// The signed head of the tenant's transparency log (viewer).
pub async fn transparency_head(state: &AppState, by: &Viewer) -> ApiResult<LogHead> {
    let p = &by.0;
    use ed25519_dalek::Signer;
    let mut c = state.db.conn().await?;
    let (seq, hash) = match actions::log_head(&mut c, p.tenant()).await? {
        Some(e) => (e.seq, e.entry_hash),
        None => (0, trusthub_core::canonical::GENESIS_HASH.to_owned()),
    };
    let signature =
        data_encoding::BASE64.encode(&state.part::<EatKey>().0.sign(hash.as_bytes()).to_bytes());
    Ok(LogHead {
        seq,
        entry_hash: hash,
        signature,
        public_key_hex: trusthub_core::secret::hex(
            state.part::<EatKey>().0.verifying_key().as_bytes(),
        ),
    })
}
