//! Signed batches and heartbeats from agents (CONTRACT 4).

use super::*;
use crate::service::agents::ingest::{self as service, *};

/// Push a batch (CONTRACT 4): `Authorization: Bearer <agent token>`, `X-Service-Signature`
/// over the exact body bytes as sent (required once the key is pinned; gzip and zstd bodies
/// are signed compressed). 202 means committed: samples, inventory snapshot and processes of
/// the batch are stored in one transaction. A `sent_at` more than 10 minutes from the hub's
/// clock is refused; a `batch_id` seen in the last 24 h answers `duplicate: true` and stores
/// nothing. 60 per minute per agent.
#[utoipa::path(post, path = "/ingest", tag = "agents", request_body = Object,
    responses((status = 202, body = IngestAccepted), (status = 401, body = Problem), (status = 422, body = Problem),
        (status = 429, body = Problem)))]
pub(crate) async fn ingest(
    State(state): State<AppState>,
    auth: IngestAuth,
    headers: HeaderMap,
    body: SignedBody,
) -> ApiResult<(StatusCode, axum::Json<IngestAccepted>)> {
    service::ingest(&state, auth, &headers, &body)
        .await
        .map(|(status, v)| (status, axum::Json(v)))
}

/// An agent's heartbeat: marks it seen; the optional JSON object is kept as its last
/// heartbeat (`allowed_actions` in it reports the host's own action allowlist). Same
/// authentication and signature rules as `/ingest`; only the agent itself may send it.
#[utoipa::path(post, path = "/agents/{id}/heartbeat", tag = "agents", params(("id" = Uuid, Path, description = "Agent id")),
    request_body = Object, responses((status = 200, body = HeartbeatAck), (status = 401, body = Problem), (status = 404, body = Problem)))]
pub(crate) async fn heartbeat(
    State(state): State<AppState>,
    AgentAuth(agent): AgentAuth,
    Path(id): Path<Uuid>,
    headers: HeaderMap,
    body: SignedBody,
) -> ApiResult<axum::Json<HeartbeatAck>> {
    service::heartbeat(&state, &AgentAuth(agent), id, &headers, &body)
        .await
        .map(axum::Json)
}
