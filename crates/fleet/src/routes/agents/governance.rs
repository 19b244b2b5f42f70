//! The settings the hub governs for an agent.

use super::*;
use crate::service::agents::governance::{self as service, *};

/// An agent's governed settings.
#[utoipa::path(get, path = "/agents/{id}/governance", tag = "agents", params(("id" = Uuid, Path, description = "Agent id")),
    responses((status = 200, body = GovernanceView), (status = 404, body = Problem)))]
pub(crate) async fn get_governance(
    State(state): State<AppState>,
    by: Viewer,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<GovernanceView>> {
    service::get_governance(&state, &by, id)
        .await
        .map(axum::Json)
}

/// Replace an agent's governed settings (operator): intervals, tags, the action kinds the
/// hub may push (the host's own allowlist still vetoes) and the watched configuration files.
#[utoipa::path(put, path = "/agents/{id}/governance", tag = "agents", params(("id" = Uuid, Path, description = "Agent id")),
    request_body = GovernanceIn, responses((status = 200, body = GovernanceView), (status = 404, body = Problem), (status = 422, body = Problem)))]
pub(crate) async fn put_governance(
    State(state): State<AppState>,
    meta: Meta,
    by: Operator,
    Path(id): Path<Uuid>,
    Json(req): Json<GovernanceIn>,
) -> ApiResult<axum::Json<GovernanceView>> {
    service::put_governance(&state, &meta, &by, id, req)
        .await
        .map(axum::Json)
}

/// Change some of an agent's governed settings (operator): a JSON merge patch (RFC 7396) —
/// the fields sent replace theirs, the others stay; `null` restores a default. Checked as
/// `PUT` is.
#[utoipa::path(patch, path = "/agents/{id}/governance", tag = "agents", params(("id" = Uuid, Path, description = "Agent id")),
    request_body = GovernancePatch, responses((status = 200, body = GovernanceView), (status = 404, body = Problem), (status = 422, body = Problem)))]
pub(crate) async fn patch_governance(
    State(state): State<AppState>,
    meta: Meta,
    by: Operator,
    Path(id): Path<Uuid>,
    Json(patch): Json<GovernancePatch>,
) -> ApiResult<axum::Json<GovernanceView>> {
    service::patch_governance(&state, &meta, &by, id, patch)
        .await
        .map(axum::Json)
}
