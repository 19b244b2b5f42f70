//! Emergency actions (CONTRACT 5): the agent WebSocket, TOTP-gated app restarts pushed as
//! signed EATs, action records, and the transparency log (CONTRACT 5a).

use crate::agent_auth::AgentAuth;
use crate::auth::Viewer;
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{Path, Query};
use crate::openapi::api_routes;
use crate::service::actions::LogEntryView;
use crate::state::{AppState, now};
use crate::store::actions::{self, Action};
use axum::extract::State;
use axum::extract::ws::WebSocketUpgrade;
use axum::response::Response;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use trusthub_store::TenantId;
use utoipa::{IntoParams, ToSchema};
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

/// The service behind [`get_action`], for the API and the dashboard alike.
pub async fn get_action_by(state: &AppState, by: &Viewer, jti: String) -> ApiResult<ActionView> {
    let p = &by.0;
    let mut c = state.db.conn().await?;
    let a = actions::get(&mut c, p.tenant(), &jti)
        .await?
        .ok_or(ApiError::NotFound("action"))?;
    Ok(a.into())
}

/// One action.
#[utoipa::path(get, path = "/actions/{jti}", tag = "actions", params(("jti" = String, Path, description = "The token's jti")),
    responses((status = 200, body = ActionView), (status = 404, body = Problem)))]
pub(crate) async fn get_action(
    State(state): State<AppState>,
    by: Viewer,
    Path(jti): Path<String>,
) -> ApiResult<axum::Json<ActionView>> {
    get_action_by(&state, &by, jti).await.map(axum::Json)
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

/// The tenant's actions, newest first.
#[utoipa::path(get, path = "/actions", tag = "actions", params(ActionQuery),
    responses((status = 200, body = Vec<ActionView>)))]
pub(crate) async fn list_actions(
    State(state): State<AppState>,
    Viewer(p): Viewer,
    Query(q): Query<ActionQuery>,
) -> ApiResult<axum::Json<Vec<ActionView>>> {
    let limit = q.limit.unwrap_or(100);
    if !(1..=500).contains(&limit) {
        return Err(ApiError::invalid("limit", "must be 1 to 500"));
    }
    let mut c = state.db.conn().await?;
    Ok(axum::Json(
        actions::list(&mut c, p.tenant(), q.agent_id, limit)
            .await?
            .into_iter()
            .map(ActionView::from)
            .collect(),
    ))
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

/// The service behind [`transparency_log`], for the API and the dashboard alike.
pub async fn transparency_log_by(
    state: &AppState,
    by: &Viewer,
    q: LogQuery,
) -> ApiResult<Vec<LogEntryView>> {
    let p = &by.0;
    let limit = q.limit.unwrap_or(1000);
    if !(1..=1000).contains(&limit) {
        return Err(ApiError::invalid("limit", "must be 1 to 1000"));
    }
    let mut c = state.db.conn().await?;
    Ok(
        actions::log_since(&mut c, p.tenant(), q.since_seq.unwrap_or(0).max(0), limit)
            .await?
            .into_iter()
            .map(LogEntryView::from)
            .collect(),
    )
}

/// The tenant's transparency log, oldest first (append-only in the schema).
#[utoipa::path(get, path = "/transparency-log", tag = "actions", params(LogQuery),
    responses((status = 200, body = Vec<LogEntryView>)))]
pub(crate) async fn transparency_log(
    State(state): State<AppState>,
    by: Viewer,
    Query(q): Query<LogQuery>,
) -> ApiResult<axum::Json<Vec<LogEntryView>>> {
    transparency_log_by(&state, &by, q).await.map(axum::Json)
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

/// The service behind [`transparency_head`], for the API and the dashboard alike.
pub async fn transparency_head_by(state: &AppState, by: &Viewer) -> ApiResult<LogHead> {
    let p = &by.0;
    use ed25519_dalek::Signer;
    let mut c = state.db.conn().await?;
    let (seq, hash) = match actions::log_head(&mut c, p.tenant()).await? {
        Some(e) => (e.seq, e.entry_hash),
        None => (0, trusthub_core::canonical::GENESIS_HASH.to_owned()),
    };
    let signature = data_encoding::BASE64.encode(
        &state
            .part::<crate::service::actions::EatKey>()
            .0
            .sign(hash.as_bytes())
            .to_bytes(),
    );
    Ok(LogHead {
        seq,
        entry_hash: hash,
        signature,
        public_key_hex: trusthub_core::secret::hex(
            state
                .part::<crate::service::actions::EatKey>()
                .0
                .verifying_key()
                .as_bytes(),
        ),
    })
}

/// The signed tree head (CONTRACT 5a), signed with the hub's Ed25519 key.
#[utoipa::path(get, path = "/transparency-log/head", tag = "actions", responses((status = 200, body = LogHead)))]
pub(crate) async fn transparency_head(
    State(state): State<AppState>,
    by: Viewer,
) -> ApiResult<axum::Json<LogHead>> {
    transparency_head_by(&state, &by).await.map(axum::Json)
}
