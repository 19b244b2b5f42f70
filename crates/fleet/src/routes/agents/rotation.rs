//! Token and signing-key rotation.

use super::*;
use crate::service::agents::rotation::{self as service, *};

/// Rotate an agent's token (admin; 10 per hour per user; audit `agent_token_rotated`). The
/// old token stops working at once; hand the new one to the host (or let the agent
/// re-register with an enrollment token).
#[utoipa::path(post, path = "/agents/{id}/rotate-token", tag = "agents", params(("id" = Uuid, Path, description = "Agent id")),
    responses((status = 200, body = RotatedToken), (status = 404, body = Problem), (status = 429, body = Problem)))]
pub(crate) async fn rotate_token(
    State(state): State<AppState>,
    meta: Meta,
    by: Admin,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<RotatedToken>> {
    service::rotate_token(&state, &meta, &by, id)
        .await
        .map(axum::Json)
}

/// Clear an agent's pinned signing key (admin; 10 per hour per user; audit
/// `agent_signing_key_cleared`) so that it can register with a new key.
#[utoipa::path(post, path = "/agents/{id}/rotate-signing-key", tag = "agents", params(("id" = Uuid, Path, description = "Agent id")),
    responses((status = 200, body = SigningKeyState), (status = 404, body = Problem), (status = 429, body = Problem)))]
pub(crate) async fn rotate_signing_key(
    State(state): State<AppState>,
    meta: Meta,
    by: Admin,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<SigningKeyState>> {
    service::rotate_signing_key(&state, &meta, &by, id)
        .await
        .map(axum::Json)
}
