//! Emergency actions (CONTRACT 5): the agent WebSocket, TOTP-gated app restarts pushed as
//! signed EATs, action records, and the transparency log (CONTRACT 5a).

use crate::agent_auth::AgentAuth;
use crate::auth::Viewer;
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{Path, Query};
use crate::openapi::api_routes;
use crate::service::actions::{
    self as service, ActionQuery, ActionView, LogEntryView, LogHead, LogQuery,
};
use crate::state::AppState;
use axum::extract::State;
use axum::extract::ws::WebSocketUpgrade;
use axum::response::Response;
use trusthub_store::TenantId;
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(api_routes!(agent_socket))
        .routes(api_routes!(get_action))
        .routes(api_routes!(list_actions))
        .routes(api_routes!(transparency_log))
        .routes(api_routes!(transparency_head))
}

/// The agent's WebSocket (SPEC 4.2): `Authorization: Bearer <agent token>`, only for its own
/// id. JSON text frames: the hub sends `{type: "eat", token}`; the agent answers `{type:
/// "result", jti, exit_code, stdout, stderr, finished_at}` or `{type: "refused", jti,
/// reason}`. The hub pings every 15 s and drops a peer silent for 45 s; while the socket is
/// open the agent shows `connected: true`.
#[utoipa::path(get, path = "/ws/agents/{id}", tag = "actions", params(("id" = Uuid, Path, description = "Agent id")),
    responses((status = 101, description = "Switching to the WebSocket protocol"), (status = 401, body = Problem),
        (status = 404, body = Problem)))]
pub(crate) async fn agent_socket(
    State(state): State<AppState>,
    AgentAuth(agent): AgentAuth,
    Path(id): Path<Uuid>,
    ws: WebSocketUpgrade,
) -> ApiResult<Response> {
    if agent.id != id {
        return Err(ApiError::NotFound("agent"));
    }
    let tenant = TenantId(agent.tenant_id);
    // Small buffers: tungstenite's default 128 KiB read buffer per socket made 10k idle
    // agents cost 1.6 GiB (bench/RESULTS.md); frames here are a few KiB.
    Ok(ws
        .read_buffer_size(4096)
        .write_buffer_size(4096)
        .max_message_size(1024 * 1024)
        .on_upgrade(move |socket| crate::agent_ws::serve(state, id, tenant, socket)))
}

/// One action.
#[utoipa::path(get, path = "/actions/{jti}", tag = "actions", params(("jti" = String, Path, description = "The token's jti")),
    responses((status = 200, body = ActionView), (status = 404, body = Problem)))]
pub(crate) async fn get_action(
    State(state): State<AppState>,
    by: Viewer,
    Path(jti): Path<String>,
) -> ApiResult<axum::Json<ActionView>> {
    service::get_action(&state, &by, jti).await.map(axum::Json)
}

/// The tenant's actions, newest first.
#[utoipa::path(get, path = "/actions", tag = "actions", params(ActionQuery),
    responses((status = 200, body = Vec<ActionView>)))]
pub(crate) async fn list_actions(
    State(state): State<AppState>,
    by: Viewer,
    Query(q): Query<ActionQuery>,
) -> ApiResult<axum::Json<Vec<ActionView>>> {
    service::list_actions(&state, &by, q).await.map(axum::Json)
}

/// The tenant's transparency log, oldest first (append-only in the schema).
#[utoipa::path(get, path = "/transparency-log", tag = "actions", params(LogQuery),
    responses((status = 200, body = Vec<LogEntryView>)))]
pub(crate) async fn transparency_log(
    State(state): State<AppState>,
    by: Viewer,
    Query(q): Query<LogQuery>,
) -> ApiResult<axum::Json<Vec<LogEntryView>>> {
    service::transparency_log(&state, &by, q)
        .await
        .map(axum::Json)
}

/// The signed tree head (CONTRACT 5a), signed with the hub's Ed25519 key.
#[utoipa::path(get, path = "/transparency-log/head", tag = "actions", responses((status = 200, body = LogHead)))]
pub(crate) async fn transparency_head(
    State(state): State<AppState>,
    by: Viewer,
) -> ApiResult<axum::Json<LogHead>> {
    service::transparency_head(&state, &by)
        .await
        .map(axum::Json)
}
