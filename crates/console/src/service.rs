//! The services behind the routes and pages: start (TOTP, 5 per hour per user), the agent's
//! frames and the `console_open` answer, the end of a session (exit, idle, max, admin,
//! recording failure), the list and the recording.

use crate::bus::{self, Msg};
use crate::live::{Live, RecordingFailed, cast_path};
use crate::store::{self, Session};
use serde::Serialize;
use serde_json::{Value, json};
use sha2::Digest;
use time::OffsetDateTime;
use trusthub_fleet::actions::{ActionRequest, dispatch};
use trusthub_fleet::agent_ws::ActionResult;
use trusthub_identity::auth::Principal;
use trusthub_platform::AppState;
use trusthub_platform::error::{ApiError, ApiResult, RateInfo};
use trusthub_platform::extract::Meta;
use trusthub_platform::state::{now, rfc3339};
use trusthub_store::{StoreResult, TenantId, audit};
use utoipa::ToSchema;
use uuid::Uuid;

/// Sessions a user may open per hour.
pub const PER_HOUR: i64 = 5;

/// A started session.
#[derive(Debug, Serialize, ToSchema)]
pub struct Started {
    /// The session.
    pub session_id: Uuid,
    /// The browser's (or the CLI's) WebSocket: the same user's session cookie or token.
    pub ws_url: String,
    /// When the session ends at the latest (`TRUSTHUB_CONSOLE_MAX_SECS` after its start).
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: String,
}

/// A session as listed (CONTRACT 22).
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionView {
    /// Id.
    pub id: Uuid,
    /// The host.
    pub agent_id: Uuid,
    /// Who opened it.
    pub user_id: Uuid,
    /// Why.
    pub reason: String,
    /// `starting`, `active`, `ended`, `terminated` or `failed`.
    pub status: String,
    /// `exit`, `idle`, `max`, `admin`, `console_disabled`, `recording_failed` or `agent_lost`.
    pub end_reason: Option<String>,
    /// When.
    #[schema(value_type = String, format = DateTime)]
    pub started_at: String,
    /// When it ended.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub ended_at: Option<String>,
    /// The shell's exit code.
    pub exit_code: Option<i64>,
    /// The recording's size in bytes.
    pub recording_bytes: i64,
    /// The recording's SHA-256 (once the session ended).
    pub recording_sha256: Option<String>,
}

impl From<Session> for SessionView {
    fn from(s: Session) -> SessionView {
        SessionView {
            id: s.id,
            agent_id: s.agent_id,
            user_id: s.user_id,
            reason: s.reason,
            status: s.status,
            end_reason: s.end_reason,
            started_at: rfc3339(s.started_at),
            ended_at: s.ended_at.map(rfc3339),
            exit_code: s.exit_code,
            recording_bytes: s.recording_bytes,
            recording_sha256: s.recording_sha256,
        }
    }
}

/// The recordings' folder.
pub fn recording_dir(state: &AppState) -> std::path::PathBuf {
    crate::settings::of(&state.settings)
        .console_recording_dir
        .clone()
        .unwrap_or_else(|| state.settings.db.data_dir.join("console"))
}

/// Starts a session on `agent` for `p` (an admin whose TOTP code was spent): the
/// `console_open` action is sent; the session is `starting` until the host confirms.
pub async fn start(
    state: &AppState,
    meta: &Meta,
    p: &Principal,
    agent: Uuid,
    reason: &str,
    cols: u16,
    rows: u16,
) -> ApiResult<Started> {
    let tenant = p.tenant();
    let host = {
        let mut c = state.db.conn().await?;
        trusthub_fleet::agent(&mut c, tenant, agent)
            .await?
            .ok_or(ApiError::NotFound("agent"))?
    };
    let now = now();
    if state.limiter.enabled() {
        let mut c = state.db.conn().await?;
        let opened = store::opened_since(&mut c, p.user.id, now - time::Duration::hours(1)).await?;
        if opened >= PER_HOUR {
            return Err(ApiError::RateLimited(RateInfo {
                limit: PER_HOUR as u32,
                remaining: 0,
                reset_secs: 3600,
            }));
        }
    }
    let id = Uuid::now_v7();
    let jti = Uuid::new_v4().simple().to_string();
    let session = Session {
        id,
        tenant_id: tenant.0,
        agent_id: agent,
        user_id: p.user.id,
        reason: reason.to_owned(),
        status: "starting".into(),
        end_reason: None,
        cols: i64::from(cols),
        rows: i64::from(rows),
        jti: jti.clone(),
        attached: 0,
        started_at: now,
        ended_at: None,
        exit_code: None,
        recording_bytes: 0,
        recording_sha256: None,
        instance: state.instance.clone(),
    };
    {
        let mut tx = state.db.begin().await?;
        store::insert(&mut tx, &session).await?;
        meta.record(
            &mut tx,
            p,
            trusthub_core::audit::CONSOLE_SESSION_STARTED,
            format!("agent:{agent}"),
            json!({"session_id": id, "reason": reason, "hostname": host.hostname}),
        )
        .await?;
        tx.commit().await?;
    }
    state.part::<Live>().add(
        id,
        tenant,
        agent,
        cast_path(&recording_dir(state), id),
        crate::settings::of(&state.settings).console_record_input,
    );
    let sent = dispatch(
        state,
        meta,
        p,
        ActionRequest {
            agent_id: agent,
            app_id: None,
            act: "console_open",
            // The host ends the shell at `expires_at` itself (CONTRACT 30).
            args: json!({"session_id": id, "cols": cols, "rows": rows,
                "expires_at": (now + time::Duration::seconds(crate::settings::of(&state.settings).console_max_secs as i64)).unix_timestamp()}),
            reason,
            subject: format!("agent:{agent}"),
            jti: Some(jti),
        },
        now,
    )
    .await;
    if let Err(e) = sent {
        // Not connected: the session never started; it does not count as opened.
        let mut tx = state.db.begin().await?;
        store::delete(&mut tx, id).await?;
        tx.commit().await?;
        state.part::<Live>().finish(id, None, None);
        return Err(e);
    }
    spawn_clock(state.clone(), id);
    let base = state.public_url.trim_end_matches('/');
    let ws = base
        .replacen("https://", "wss://", 1)
        .replacen("http://", "ws://", 1);
    Ok(Started {
        session_id: id,
        ws_url: format!("{ws}/api/v1/ws/console/{id}"),
        expires_at: rfc3339(
            now + time::Duration::seconds(
                crate::settings::of(&state.settings).console_max_secs as i64,
            ),
        ),
    })
}

/// Ends the session at its idle or maximum duration.
fn spawn_clock(state: AppState, id: Uuid) {
    tokio::spawn(async move {
        let idle = crate::settings::of(&state.settings)
            .console_idle_secs
            .max(1);
        let max = crate::settings::of(&state.settings).console_max_secs.max(1);
        let mut tick = tokio::time::interval(std::time::Duration::from_millis(500));
        loop {
            tick.tick().await;
            let Some((since_input, since_start)) = state.part::<Live>().clocks(id) else {
                return;
            };
            let why = if since_start >= max {
                "max"
            } else if since_input >= idle {
                "idle"
            } else {
                continue;
            };
            if let Err(e) = end(&state, id, "ended", why, None, None).await {
                tracing::warn!(error = %e, %id, "cannot end a console session");
            }
            return;
        }
    });
}

/// Ends a live session: the row, the audit entry, the host's processes killed (unless the
/// shell exited), the recording closed and hashed.
pub async fn end(
    state: &AppState,
    id: Uuid,
    status: &str,
    why: &str,
    exit_code: Option<i64>,
    by: Option<&Principal>,
) -> StoreResult<bool> {
    let now = now();
    let Some((tenant, agent)) = state.part::<Live>().of(id) else {
        return Ok(false);
    };
    if why != "exit" {
        let frame = json!({"type": "console_kill", "session_id": id}).to_string();
        if let Err(e) = trusthub_fleet::routing::deliver(state, agent, frame).await {
            tracing::warn!(error = %e, %id, "cannot send the console kill");
        }
    }
    let path = state
        .part::<Live>()
        .finish(id, exit_code, Some((status, why)));
    let mut tx = state.db.begin().await?;
    let ended = end_row(&mut tx, tenant, agent, id, status, why, exit_code, by, now).await?;
    if let Some(path) = path
        && let Ok(bytes) = std::fs::read(&path)
    {
        let sha = trusthub_core::secret::hex(&sha2::Sha256::digest(&bytes));
        store::set_recording(&mut tx, id, bytes.len() as i64, &sha, exit_code).await?;
    }
    tx.commit().await?;
    Ok(ended)
}

/// Ends the session's row, with its audit entry; false when it had ended.
#[allow(clippy::too_many_arguments)]
async fn end_row(
    tx: &mut trusthub_store::Tx,
    tenant: TenantId,
    agent: Uuid,
    id: Uuid,
    status: &str,
    why: &str,
    exit_code: Option<i64>,
    by: Option<&Principal>,
    now: OffsetDateTime,
) -> StoreResult<bool> {
    let ended = store::end(&mut *tx, id, status, why, exit_code, now).await?;
    if ended {
        let (event, actor) = match by {
            Some(p) => (
                trusthub_core::audit::CONSOLE_SESSION_TERMINATED_BY_ADMIN,
                p.actor(),
            ),
            None => (
                trusthub_core::audit::CONSOLE_SESSION_ENDED,
                format!("agent:{agent}"),
            ),
        };
        audit::append(
            &mut *tx,
            tenant,
            &audit::NewEntry {
                event_type: event,
                actor,
                subject: format!("agent:{agent}"),
                details: json!({"session_id": id, "status": status, "end_reason": why, "exit_code": exit_code}),
                ip: None,
                request_id: None,
            },
            now,
        )
        .await?;
    }
    Ok(ended)
}

async fn failed_recording(state: &AppState, id: Uuid, e: RecordingFailed) {
    tracing::error!(%id, error = %e.0, "the console recording cannot be written; ending the session");
    if let Err(e) = end(state, id, "failed", "recording_failed", None, None).await {
        tracing::warn!(error = %e, %id, "cannot end a console session");
    }
}

/// A console frame from an agent (the fleet's `ConsoleFrames` event). A session another
/// hub process owns gets the frame through that process.
pub async fn on_agent_frame(state: &AppState, agent: Uuid, tenant: TenantId, v: &Value) {
    if v["type"] == "console_agent_lost" {
        // The agent's socket closed: its live sessions cannot go on.
        for id in state.part::<Live>().of_agent(agent) {
            if let Err(e) = end(state, id, "failed", "agent_lost", None, None).await {
                tracing::warn!(error = %e, %id, "cannot end a console session");
            }
        }
        let elsewhere = match state.db.conn().await {
            Ok(mut c) => store::open_elsewhere(&mut c, agent, &state.instance).await,
            Err(e) => Err(e),
        };
        for s in elsewhere.unwrap_or_default() {
            let msg = Msg::Agent {
                agent,
                tenant: tenant.0,
                frame: v.clone(),
            };
            if let Err(e) = bus::send(state, &s.instance, s.id, msg).await {
                tracing::warn!(error = %e, id = %s.id, "cannot tell a console's hub its agent left");
            }
        }
        return;
    }
    let Some(id) = v["session_id"]
        .as_str()
        .and_then(|s| Uuid::parse_str(s).ok())
    else {
        return;
    };
    if v["type"] == "console_ended" {
        tracing::info!(session = %id, %agent, reason = v["reason"].as_str().unwrap_or_default(),
            "the host ended a console left from an earlier connection");
    }
    let here = state.part::<Live>().of(id);
    if here.is_none() && v["type"] == "console_ended" {
        // The owner may be gone (a restarted hub): the row ends here, as a terminate from
        // another process does, and a living owner closes its recording.
        if let Err(e) = ended_on_host(state, agent, tenant, id).await {
            tracing::warn!(error = %e, %id, "cannot end a console session the host ended");
        }
        return;
    }
    if here.is_none() {
        route_to_owner(state, agent, tenant, id, v).await;
        return;
    }
    // Only the session's own host speaks for it.
    if here != Some((tenant, agent)) {
        return;
    }
    match v["type"].as_str() {
        Some("console_output") => {
            let data = v["data"].as_str().unwrap_or_default();
            if let Err(e) = state.part::<Live>().output(id, data) {
                failed_recording(state, id, e).await;
            }
        }
        Some("console_ended") => {
            // The host ended a shell it held when it reconnected (CONTRACT 30).
            if let Err(e) = end(state, id, "failed", "agent_lost", None, None).await {
                tracing::warn!(error = %e, %id, "cannot end a console session");
            }
        }
        Some("console_exit") => {
            let code = v["code"].as_i64();
            if let Err(e) = end(state, id, "ended", "exit", code, None).await {
                tracing::warn!(error = %e, %id, "cannot end a console session");
            }
        }
        _ => {}
    }
}

/// A session the host ended at its reconnect, owned by no process here: its row ends
/// `failed / agent_lost` unless it ended already.
async fn ended_on_host(state: &AppState, agent: Uuid, tenant: TenantId, id: Uuid) -> ApiResult<()> {
    let open = {
        let mut c = state.db.conn().await?;
        store::open(&mut c, id).await?
    };
    let Some(s) = open else {
        return Ok(());
    };
    if s.tenant_id != tenant.0 || s.agent_id != agent {
        return Ok(());
    }
    let mut tx = state.db.begin().await?;
    end_row(
        &mut tx,
        tenant,
        agent,
        id,
        "failed",
        "agent_lost",
        None,
        None,
        now(),
    )
    .await?;
    tx.commit().await?;
    if s.instance != state.instance {
        let ended = Msg::Ended {
            status: "failed".into(),
            why: "agent_lost".into(),
        };
        if let Err(e) = bus::send(state, &s.instance, id, ended).await {
            tracing::info!(error = %e, %id, "the console's hub process is gone");
        }
    }
    Ok(())
}

/// Sends a host's frame for a session owned by another hub process to it.
async fn route_to_owner(state: &AppState, agent: Uuid, tenant: TenantId, id: Uuid, v: &Value) {
    let owner = match state.db.conn().await {
        Ok(mut c) => store::open(&mut c, id).await,
        Err(e) => Err(e),
    };
    let Ok(Some(s)) = owner else {
        return;
    };
    if s.tenant_id != tenant.0 || s.agent_id != agent || s.instance == state.instance {
        return;
    }
    let msg = Msg::Agent {
        agent,
        tenant: tenant.0,
        frame: v.clone(),
    };
    if let Err(e) = bus::send(state, &s.instance, id, msg).await {
        tracing::warn!(error = %e, %id, "cannot route a console frame to its hub");
    }
}

/// The recording's header, once the host opened the shell; strict: a header that cannot be
/// written ends the session.
pub async fn header(state: &AppState, id: Uuid, header: &Value) {
    if let Err(e) = state.part::<Live>().header(id, header) {
        tracing::error!(%id, error = %e.0, "cannot create the console recording");
        failed_recording(state, id, e).await;
    }
}

/// A frame of the browser's socket: input (restarts the idle clock; recorded when asked
/// for) or a resize (recorded), then on to the host. Input is cut into pieces small enough
/// to cross between hub processes.
pub async fn browser_frame(state: &AppState, id: Uuid, v: &Value) {
    let Some((_, agent)) = state.part::<Live>().of(id) else {
        return;
    };
    let frames = match v["type"].as_str() {
        Some("input") => {
            let data = v["data"].as_str().unwrap_or_default();
            if let Err(e) = state.part::<Live>().input(id, data) {
                failed_recording(state, id, e).await;
                return;
            }
            bus::pieces(data, 3000)
                .into_iter()
                .map(|d| json!({"type": "console_input", "session_id": id, "data": d}))
                .collect()
        }
        Some("resize") => {
            let cols = v["cols"].as_u64().unwrap_or(80).clamp(10, 1000) as u16;
            let rows = v["rows"].as_u64().unwrap_or(24).clamp(5, 1000) as u16;
            if let Err(e) = state.part::<Live>().resize(id, cols, rows) {
                failed_recording(state, id, e).await;
                return;
            }
            vec![json!({"type": "console_resize", "session_id": id, "cols": cols, "rows": rows})]
        }
        _ => return,
    };
    for f in frames {
        if let Err(e) = trusthub_fleet::routing::deliver(state, agent, f.to_string()).await {
            tracing::warn!(%id, error = %e, "cannot forward console input");
        }
    }
}

/// The host's answer to `console_open` (an action hook, in the result's transaction): the
/// session becomes `active` with its recording's header written, or `failed`.
pub async fn on_open_result(
    state: &AppState,
    tx: &mut trusthub_store::Tx,
    r: &ActionResult,
    _now: OffsetDateTime,
) -> StoreResult<()> {
    let Some(s) = store::by_jti(&mut *tx, &r.jti).await? else {
        return Ok(());
    };
    let here = s.instance == state.instance;
    if r.refused_reason.is_some() || r.exit_code != Some(0) {
        let why = if r
            .refused_reason
            .as_deref()
            .is_some_and(|w| w.contains("allowlist"))
        {
            "console_disabled"
        } else {
            "agent_lost"
        };
        store::end(&mut *tx, s.id, "failed", why, None, now()).await?;
        if here {
            state
                .part::<Live>()
                .finish(s.id, None, Some(("failed", why)));
        } else {
            let reason = why.to_owned();
            bus::send(state, &s.instance, s.id, Msg::Refused { reason }).await?;
        }
        return Ok(());
    }
    let opened: Value = r
        .stdout
        .as_deref()
        .and_then(|o| serde_json::from_str(o).ok())
        .unwrap_or_default();
    let hostname = {
        trusthub_fleet::agent(&mut *tx, r.tenant, s.agent_id)
            .await?
            .map(|a| a.hostname)
            .unwrap_or_default()
    };
    let header = json!({
        "version": 2,
        "width": s.cols,
        "height": s.rows,
        "timestamp": s.started_at.unix_timestamp(),
        "title": format!("{hostname}: {}", s.reason),
        "env": {"TERM": "xterm-256color", "SHELL": opened["shell"].as_str().unwrap_or("/bin/sh")},
    });
    store::set_status(&mut *tx, s.id, "active").await?;
    if here {
        let (state, id) = (state.clone(), s.id);
        // Strict recording: no recording, no session (ended once this result is stored).
        if let Err(e) = state.part::<Live>().header(id, &header) {
            tracing::error!(%id, error = %e.0, "cannot create the console recording");
            tokio::spawn(async move { failed_recording(&state, id, e).await });
        }
    } else {
        bus::send(state, &s.instance, s.id, Msg::Opened { header }).await?;
    }
    Ok(())
}

/// A tenant's session (404 for another tenant's).
pub async fn get(state: &AppState, tenant: TenantId, id: Uuid) -> ApiResult<Session> {
    let mut c = state.db.conn().await?;
    store::get(&mut c, tenant, id)
        .await?
        .ok_or(ApiError::NotFound("console session"))
}

/// The tenant's sessions.
pub async fn list(
    state: &AppState,
    tenant: TenantId,
    agent: Option<Uuid>,
    status: Option<&str>,
) -> ApiResult<Vec<SessionView>> {
    let mut c = state.db.conn().await?;
    Ok(store::list(&mut c, tenant, agent, status)
        .await?
        .into_iter()
        .map(SessionView::from)
        .collect())
}

/// Terminates a session (admin): the host kills its processes; `terminated`.
pub async fn terminate(state: &AppState, p: &Principal, id: Uuid) -> ApiResult<SessionView> {
    let s = get(state, p.tenant(), id).await?;
    if s.status == "failed" {
        // CONTRACT 30: a failed session (its host lost, the hub restarted) may have left a
        // shell on the host; the host is asked to end it (the caller answers 202).
        let frame = json!({"type": "console_kill", "session_id": id}).to_string();
        if let Err(e) = trusthub_fleet::routing::deliver(state, s.agent_id, frame).await {
            tracing::info!(session = %id, error = %e, "no host to ask about a failed console");
        }
        let mut tx = state.db.begin().await?;
        audit::append(
            &mut tx,
            p.tenant(),
            &audit::NewEntry {
                event_type: trusthub_core::audit::CONSOLE_SESSION_TERMINATED_BY_ADMIN,
                actor: p.actor(),
                subject: format!("agent:{}", s.agent_id),
                details: json!({"session_id": id, "status": s.status, "host_cleanup": true}),
                ip: None,
                request_id: None,
            },
            now(),
        )
        .await?;
        tx.commit().await?;
        return Ok(SessionView::from(s));
    }
    if s.ended_at.is_some() {
        return Err(ApiError::Conflict(format!(
            "the session already {}",
            s.status
        )));
    }
    if state.part::<Live>().of(id).is_none() {
        // Owned by another hub process (or by one that restarted): the row ends here, the
        // host kills the session's processes, and the owner closes the recording. The row
        // ends first: the kill makes the shell exit, and the owner would otherwise record
        // that exit as the end before this terminate lands (a full run caught it).
        let mut tx = state.db.begin().await?;
        let tenant = p.tenant();
        end_row(
            &mut tx,
            tenant,
            s.agent_id,
            id,
            "terminated",
            "admin",
            None,
            Some(p),
            now(),
        )
        .await?;
        tx.commit().await?;
        let frame = json!({"type": "console_kill", "session_id": id}).to_string();
        if let Err(e) = trusthub_fleet::routing::deliver(state, s.agent_id, frame).await {
            // Ended here all the same; a host that is not connected has no shell to kill.
            tracing::warn!(session = %id, error = %e, "console kill not delivered");
        }
        let ended = Msg::Ended {
            status: "terminated".into(),
            why: "admin".into(),
        };
        if s.instance != state.instance {
            bus::send(state, &s.instance, id, ended).await?;
        }
    } else {
        end(state, id, "terminated", "admin", None, Some(p)).await?;
    }
    Ok(SessionView::from(get(state, p.tenant(), id).await?))
}
/// Handles a message another hub process sent this one about a session it owns or serves
/// (given to [`bus::listen`]).
pub fn on_bus(
    state: &AppState,
    id: Uuid,
    msg: Msg,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
    Box::pin(handle(state, id, msg))
}

async fn handle(state: &AppState, id: Uuid, msg: Msg) {
    match msg {
        Msg::Agent {
            agent,
            tenant,
            frame,
        } => on_agent_frame(state, agent, TenantId(tenant), &frame).await,
        Msg::Opened { header: h } => header(state, id, &h).await,
        Msg::Refused { reason } => {
            state
                .part::<Live>()
                .finish(id, None, Some(("failed", &reason)));
        }
        Msg::Attach { at } => {
            let Some(mut frames) = state.part::<Live>().attach(id) else {
                return;
            };
            let state = state.clone();
            // One task per browser, so its frames leave in order.
            tokio::spawn(async move {
                while let Some(f) = frames.recv().await {
                    let frame: Value = serde_json::from_str(&f).unwrap_or_default();
                    if let Err(e) = bus::send(&state, &at, id, Msg::ToBrowser { frame }).await {
                        tracing::warn!(%id, error = %e, "cannot forward console output");
                    }
                }
            });
        }
        Msg::Browser { frame } => browser_frame(state, id, &frame).await,
        Msg::ToBrowser { frame } => {
            let last = frame["type"] == "exit";
            state
                .part::<bus::Browsers>()
                .send(id, frame.to_string(), last);
        }
        Msg::Ended { status, why } => {
            if let Err(e) = end(state, id, &status, &why, None, None).await {
                tracing::warn!(%id, error = %e, "cannot close a console session");
            }
        }
    }
}
