//! Integrity anomalies (CONTRACT 14; SPEC 2.9, 7): recorded where the hub refuses something an
//! agent presented (a certificate of another agent, revoked or expired, not issued here; a
//! pinned agent's batch with a bad signature), each raising a warning alert (`source: agent`,
//! so it reaches webhooks); operators list and resolve them.

use crate::auth::{Operator, Viewer};
use crate::error::{ApiResult, Problem};
use crate::extract::{Meta, Path, Query};
use crate::openapi::api_routes;
use crate::service::anomalies::{self as service, AnomalyQuery, AnomalyView};
use crate::state::AppState;
use axum::extract::State;
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(api_routes!(list))
        .routes(api_routes!(resolve))
}

/// The tenant's integrity anomalies, newest first (viewer; at most 1,000).
#[utoipa::path(get, path = "/integrity-anomalies", tag = "agents", params(AnomalyQuery),
    responses((status = 200, body = Vec<AnomalyView>), (status = 422, body = Problem)))]
pub(crate) async fn list(
    State(state): State<AppState>,
    by: Viewer,
    Query(q): Query<AnomalyQuery>,
) -> ApiResult<axum::Json<Vec<AnomalyView>>> {
    service::list(&state, &by, q).await.map(axum::Json)
}

/// Resolve an anomaly (operator): it leaves the open list, its alert is resolved too.
/// Resolving a resolved anomaly answers it unchanged. Audit `integrity_anomaly_resolved`.
#[utoipa::path(patch, path = "/integrity-anomalies/{id}/resolve", tag = "agents",
    params(("id" = Uuid, Path, description = "Anomaly id")),
    responses((status = 200, body = AnomalyView), (status = 404, body = Problem)))]
pub(crate) async fn resolve(
    State(state): State<AppState>,
    meta: Meta,
    by: Operator,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<AnomalyView>> {
    service::resolve(&state, &meta, &by, id)
        .await
        .map(axum::Json)
}
