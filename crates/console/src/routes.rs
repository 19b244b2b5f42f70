//! `/agents/{id}/console/start`, `/ws/console/{session_id}` (the browser's or CLI's socket),
//! `/console/sessions` (list, recording, terminate).

use crate::bus::{self, Browsers, Msg};
use crate::live::Live;
use crate::service::{self, SessionView, Started};
use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;
use trusthub_core::Role;
use trusthub_identity::auth::purpose::ConsoleStart;
use trusthub_identity::auth::{Admin, TotpProof, Viewer};
use trusthub_platform::AppState;
use trusthub_platform::error::{ApiError, ApiResult, Problem};
use trusthub_platform::extract::{Json, Meta, Path, Query};
use trusthub_platform::openapi::api_routes;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(api_routes!(start))
        .routes(api_routes!(socket))
        .routes(api_routes!(list))
        .routes(api_routes!(recording))
        .routes(api_routes!(terminate))
}

/// A console to open.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StartRequest {
    /// Why (1 to 500 characters): in the audit log and the recording's title.
    #[schema(min_length = 1, max_length = 500)]
    pub reason: String,
    /// Terminal width, 10 to 1000 (default 80).
    #[schema(minimum = 10, maximum = 1000)]
    pub cols: Option<u16>,
    /// Terminal height, 5 to 1000 (default 24).
    #[schema(minimum = 5, maximum = 1000)]
    pub rows: Option<u16>,
}

/// Open an emergency console on a host (admin, `X-TOTP-Code` for `console_start`, 5 per hour
/// per user; only sessions opened count). The agent opens a PTY running the login shell of
/// its `--console-user` only when started with `--allow-console`; otherwise the session
/// becomes `failed` (`console_disabled`). Every output chunk is written to the session's
/// asciicast v2 recording before it is forwarded; a recording that cannot be written ends
/// the session. Connect to `ws_url` with the same user's session cookie or token.
#[utoipa::path(post, path = "/agents/{id}/console/start", tag = "console",
    params(("id" = Uuid, Path, description = "Agent id")),
    request_body = StartRequest,
    responses((status = 201, body = Started), (status = 403, body = Problem), (status = 404, body = Problem),
        (status = 409, description = "The agent is not connected; nothing was opened", body = Problem),
        (status = 422, body = Problem), (status = 429, body = Problem)))]
pub(crate) async fn start(
    State(state): State<AppState>,
    meta: Meta,
    Path(id): Path<Uuid>,
    proof: TotpProof<ConsoleStart>,
    Json(req): Json<StartRequest>,
) -> ApiResult<(StatusCode, axum::Json<Started>)> {
    let p = &proof.principal;
    if !p.has_role(Role::Admin) {
        return Err(ApiError::Forbidden("a console needs the admin role".into()));
    }
    let reason = req.reason.trim();
    if reason.is_empty() || reason.chars().count() > 500 || reason.chars().any(char::is_control) {
        return Err(ApiError::invalid(
            "reason",
            "must be 1 to 500 printable characters",
        ));
    }
    let cols = req.cols.unwrap_or(80);
    let rows = req.rows.unwrap_or(24);
    if !(10..=1000).contains(&cols) {
        return Err(ApiError::invalid("cols", "must be 10 to 1000"));
    }
    if !(5..=1000).contains(&rows) {
        return Err(ApiError::invalid("rows", "must be 5 to 1000"));
    }
    let s = service::start(&state, &meta, p, id, reason, cols, rows).await?;
    Ok((StatusCode::CREATED, axum::Json(s)))
}

/// Whether `Origin` (when the client sent one: browsers always do) is this hub.
fn same_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) else {
        return true;
    };
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    origin == format!("http://{host}") || origin == format!("https://{host}")
}

/// The console's WebSocket, for the user who started the session (their session cookie or
/// token; a browser's `Origin` must be this hub), once: a second connection is refused.
/// JSON text frames: client to hub `{type: "input", data}` and `{type: "resize", cols,
/// rows}`; hub to client `{type: "output", data}` and `{type: "exit", code}`.
#[utoipa::path(get, path = "/ws/console/{session_id}", tag = "console",
    params(("session_id" = Uuid, Path, description = "Session id")),
    responses((status = 101, description = "Switching to the WebSocket protocol"), (status = 403, body = Problem),
        (status = 404, body = Problem), (status = 409, description = "The session was taken or has ended", body = Problem)))]
pub(crate) async fn socket(
    State(state): State<AppState>,
    by: Admin,
    Path(session_id): Path<Uuid>,
    headers: HeaderMap,
    ws: Result<WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection>,
) -> ApiResult<Response> {
    let p = &by.0;
    let s = service::get(&state, p.tenant(), session_id).await?;
    if s.user_id != p.user.id {
        return Err(ApiError::NotFound("console session"));
    }
    if !same_origin(&headers) {
        return Err(ApiError::Forbidden(
            "a console opens from this hub's own pages".into(),
        ));
    }
    // Checked after the session, so an unknown one answers 404 whatever the request.
    let ws = ws.map_err(|e| ApiError::BadRequest(format!("a WebSocket upgrade is needed: {e}")))?;
    // Live in this process, or owned by another hub process on the same database.
    let here = state.part::<Live>().of(session_id).is_some();
    let elsewhere = !here
        && s.instance != state.instance
        && matches!(state.db, trusthub_store::Db::Postgres(_));
    if s.ended_at.is_some() || !(here || elsewhere) {
        return Err(ApiError::Conflict(format!("the session is {}", s.status)));
    }
    {
        let mut tx = state.db.begin().await?;
        let first = crate::store::attach(&mut tx, session_id).await?;
        tx.commit().await?;
        if !first {
            return Err(ApiError::Conflict(
                "the session was taken by another connection".into(),
            ));
        }
    }
    let owner = (!here).then_some(s.instance);
    Ok(ws
        .max_message_size(256 * 1024)
        .on_upgrade(move |socket| serve(state, session_id, owner, socket)))
}

/// Carries the browser's socket: the session's frames to it, its input and resizes to the
/// session, here or through the owning hub process.
async fn serve(state: AppState, id: Uuid, owner: Option<String>, mut socket: WebSocket) {
    let mut out = match &owner {
        None => match state.part::<Live>().attach(id) {
            Some(out) => out,
            None => {
                close(socket).await;
                return;
            }
        },
        Some(owner) => {
            let out = state.part::<Browsers>().add(id);
            let attach = Msg::Attach {
                at: state.instance.clone(),
            };
            if let Err(e) = bus::send(&state, owner, id, attach).await {
                tracing::warn!(%id, error = %e, "cannot reach the console's hub");
                state.part::<Browsers>().remove(id);
                close(socket).await;
                return;
            }
            out
        }
    };
    loop {
        tokio::select! {
            frame = out.recv() => {
                let Some(frame) = frame else { break };
                let last = frame.contains("\"type\":\"exit\"");
                if socket.send(Message::Text(frame.into())).await.is_err() || last {
                    break;
                }
            }
            msg = socket.recv() => {
                let Some(Ok(msg)) = msg else { break };
                let Message::Text(text) = msg else { continue };
                let v: Value = serde_json::from_str(text.as_str()).unwrap_or_default();
                match &owner {
                    None => service::browser_frame(&state, id, &v).await,
                    Some(owner) => {
                        if let Err(e) = bus::send(&state, owner, id, Msg::Browser { frame: v }).await {
                            tracing::warn!(%id, error = %e, "cannot forward console input");
                        }
                    }
                }
            }
        }
    }
    if owner.is_some() {
        state.part::<Browsers>().remove(id);
    }
    close(socket).await;
}

/// Closes a console socket with the closing handshake (RFC 6455 §7.1.1): after its Close, the
/// hub reads until the client's (at most [`CLOSE_WAIT`]) instead of dropping the connection at
/// once. Dropped with a frame of the client still unread (a last keystroke crossing the
/// session's end), the connection would be reset, and a reset can take the `exit` frame
/// still waiting in the client's buffer with it: the client would not learn the exit code.
async fn close(mut socket: WebSocket) {
    if socket.send(Message::Close(None)).await.is_err() {
        return;
    }
    let _ = tokio::time::timeout(CLOSE_WAIT, async {
        while let Some(Ok(msg)) = socket.recv().await {
            if matches!(msg, Message::Close(_)) {
                break;
            }
        }
    })
    .await;
}

/// How long a closing console socket waits for the client's Close.
const CLOSE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// The session list's filters.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct SessionQuery {
    /// Only this host.
    pub agent_id: Option<Uuid>,
    /// Only this state: `starting`, `active`, `ended`, `terminated` or `failed`.
    #[param(pattern = "^(starting|active|ended|terminated|failed)$")]
    pub status: Option<String>,
}

/// The tenant's console sessions, newest first (at most 500).
#[utoipa::path(get, path = "/console/sessions", tag = "console", params(SessionQuery),
    responses((status = 200, body = Vec<SessionView>), (status = 422, body = Problem)))]
pub(crate) async fn list(
    State(state): State<AppState>,
    by: Viewer,
    Query(q): Query<SessionQuery>,
) -> ApiResult<axum::Json<Vec<SessionView>>> {
    if let Some(s) = q.status.as_deref()
        && !["starting", "active", "ended", "terminated", "failed"].contains(&s)
    {
        return Err(ApiError::invalid(
            "status",
            "must be starting, active, ended, terminated or failed",
        ));
    }
    service::list(&state, by.0.tenant(), q.agent_id, q.status.as_deref())
        .await
        .map(axum::Json)
}

/// A session's recording, asciicast v2 (`application/x-asciicast`): a header line, then
/// `[t, "o" | "r" | "i", data]` events with `t` in seconds since the start. Its SHA-256 is on
/// the session once it ended. Admins only (a root shell's transcript), and every download
/// is audited (`console_recording_downloaded`).
#[utoipa::path(get, path = "/console/sessions/{id}/recording", tag = "console",
    params(("id" = Uuid, Path, description = "Session id")),
    responses((status = 200, description = "The asciicast v2 file", content_type = "application/x-asciicast", body = String),
        (status = 403, body = Problem), (status = 404, body = Problem)))]
pub(crate) async fn recording(
    State(state): State<AppState>,
    meta: Meta,
    by: Admin,
    Path(id): Path<Uuid>,
) -> ApiResult<Response> {
    service::get(&state, by.0.tenant(), id).await?;
    let path = crate::live::cast_path(&service::recording_dir(&state), id);
    let bytes = tokio::fs::read(&path)
        .await
        .map_err(|_| ApiError::NotFound("recording"))?;
    let mut tx = state.db.begin().await?;
    meta.record(
        &mut tx,
        &by.0,
        trusthub_core::audit::CONSOLE_RECORDING_DOWNLOADED,
        format!("console_session:{id}"),
        serde_json::json!({"bytes": bytes.len()}),
    )
    .await?;
    tx.commit().await?;
    Ok((
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "application/x-asciicast"),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"console.cast\"",
            ),
        ],
        bytes,
    )
        .into_response())
}

/// Terminate a session (admin): the host kills every process of the console's terminal
/// session, background jobs included (SIGHUP, then SIGKILL 5 s later); the session ends
/// `terminated`. On a `failed` session (its host was lost or the hub restarted) the host is
/// asked to end any shell left of it: 202, the session unchanged. Hosts also end such
/// shells themselves, at `expires_at`, 30 s after losing the hub, and when they reconnect.
#[utoipa::path(delete, path = "/console/sessions/{id}", tag = "console",
    params(("id" = Uuid, Path, description = "Session id")),
    responses((status = 200, body = SessionView),
        (status = 202, description = "A failed session: the host is asked to end any shell left", body = SessionView),
        (status = 403, body = Problem), (status = 404, body = Problem),
        (status = 409, description = "The session has ended already", body = Problem)))]
pub(crate) async fn terminate(
    State(state): State<AppState>,
    _meta: Meta,
    by: Admin,
    Path(id): Path<Uuid>,
) -> ApiResult<(StatusCode, axum::Json<SessionView>)> {
    let view = service::terminate(&state, &by.0, id).await?;
    let code = if view.status == "failed" {
        StatusCode::ACCEPTED
    } else {
        StatusCode::OK
    };
    Ok((code, axum::Json(view)))
}
