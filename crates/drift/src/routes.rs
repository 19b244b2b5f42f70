//! `/agents/{id}/config-hashes` (a host's watched files and their rebase) and `/drift` (the
//! tenant's drift list).

use crate::service::{self, DriftView, RebaseView};
use axum::extract::State;
use serde::Deserialize;
use trusthub_core::drift::Status;
use trusthub_identity::auth::{Operator, Viewer};
use trusthub_platform::AppState;
use trusthub_platform::error::{ApiError, ApiResult, Problem};
use trusthub_platform::extract::{Json, Meta, Path, Query};
use trusthub_platform::openapi::api_routes;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(api_routes!(config_hashes))
        .routes(api_routes!(rebase))
        .routes(api_routes!(drift))
}

/// A host's watched configuration files and their drift state (CONTRACT 20). The baseline
/// of a path is its first report, until a rebase; a file that appears under a glob after
/// the glob's first report is `new`; a drift the package database explains by a package
/// update carries `explained_by` and raises no alert. Only hashes and attributes: content
/// never leaves the host.
#[utoipa::path(get, path = "/agents/{id}/config-hashes", tag = "drift",
    params(("id" = Uuid, Path, description = "Agent id")),
    responses((status = 200, body = Vec<DriftView>), (status = 404, body = Problem)))]
pub(crate) async fn config_hashes(
    State(state): State<AppState>,
    by: Viewer,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<Vec<DriftView>>> {
    service::of_agent(&state, by.0.tenant(), id)
        .await
        .map(axum::Json)
}

/// Paths to adopt.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RebaseRequest {
    /// Watched and reported paths of this host, 1 to 1000.
    #[schema(min_items = 1, max_items = 1000)]
    pub paths: Vec<String>,
    /// Why (1 to 500 characters): kept with the rebase and in the transparency log.
    #[schema(min_length = 1, max_length = 500)]
    pub reason: String,
}

/// Adopt the current state of watched files as their new baseline (operator). Every path
/// must be watched and reported on this host (else 422 naming it). The transparency log
/// records a `drift.rebased` entry; the paths' drift alerts resolve. A drift within 7 days
/// after a rebase made by anyone but an infrastructure service account (an API token
/// created with `"service": "infrastructure"`) raises a `drift.ticket` webhook event.
#[utoipa::path(post, path = "/agents/{id}/config-hashes/rebase", tag = "drift",
    params(("id" = Uuid, Path, description = "Agent id")),
    request_body = RebaseRequest,
    responses((status = 200, body = RebaseView), (status = 404, body = Problem), (status = 422, body = Problem)))]
pub(crate) async fn rebase(
    State(state): State<AppState>,
    meta: Meta,
    by: Operator,
    Path(id): Path<Uuid>,
    Json(req): Json<RebaseRequest>,
) -> ApiResult<axum::Json<RebaseView>> {
    service::rebase(&state, &meta, &by.0, id, &req.paths, &req.reason)
        .await
        .map(axum::Json)
}

/// The drift list's filters.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct DriftQuery {
    /// Only this host.
    pub agent_id: Option<Uuid>,
    /// Only this state: `ok`, `drifted`, `missing` or `new`.
    #[param(pattern = "^(ok|drifted|missing|new)$")]
    pub status: Option<String>,
}

/// The tenant's watched files across hosts (CONTRACT 20), by host and path.
#[utoipa::path(get, path = "/drift", tag = "drift", params(DriftQuery),
    responses((status = 200, body = Vec<DriftView>), (status = 422, body = Problem)))]
pub(crate) async fn drift(
    State(state): State<AppState>,
    by: Viewer,
    Query(q): Query<DriftQuery>,
) -> ApiResult<axum::Json<Vec<DriftView>>> {
    let status =
        match q.status.as_deref() {
            None => None,
            Some(s) => Some(Status::parse(s).ok_or_else(|| {
                ApiError::invalid("status", "must be ok, drifted, missing or new")
            })?),
        };
    service::list(&state, by.0.tenant(), q.agent_id, status)
        .await
        .map(axum::Json)
}
