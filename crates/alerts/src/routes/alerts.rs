//! Alerts (SPEC 2.3, 3.2; CONTRACT 7) and alert rules (SPEC 2.4; CONTRACT 10).

use crate::alerting::AlertView;
use crate::auth::{Operator, Viewer};
use crate::error::{ApiResult, Problem};
use crate::extract::{Meta, Path, Query};
use crate::openapi::api_routes;
use crate::service::alerts::{self as service, *};
use crate::state::AppState;
use axum::extract::State;
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(api_routes!(list))
        .routes(api_routes!(get_alert))
        .routes(api_routes!(resolve))
}

/// The tenant's alerts, newest first. Page with `limit` and `before` (the last id seen).
#[utoipa::path(get, path = "/alerts", tag = "alerts", params(AlertQuery),
    responses((status = 200, body = Vec<AlertView>), (status = 422, body = Problem)))]
pub(crate) async fn list(
    State(state): State<AppState>,
    by: Viewer,
    Query(q): Query<AlertQuery>,
) -> ApiResult<axum::Json<Vec<AlertView>>> {
    service::list(&state, &by, q).await.map(axum::Json)
}

/// One alert.
#[utoipa::path(get, path = "/alerts/{id}", tag = "alerts", params(("id" = Uuid, Path, description = "Alert id")),
    responses((status = 200, body = AlertView), (status = 404, body = Problem)))]
pub(crate) async fn get_alert(
    State(state): State<AppState>,
    by: Viewer,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<AlertView>> {
    service::get_alert(&state, &by, id).await.map(axum::Json)
}

/// Resolve an alert (operator); `alert.resolved` goes to matching webhooks. Resolving a
/// resolved alert answers it unchanged and sends nothing. If the condition persists, the
/// liveness check or rule raises a new alert.
#[utoipa::path(patch, path = "/alerts/{id}/resolve", tag = "alerts", params(("id" = Uuid, Path, description = "Alert id")),
    responses((status = 200, body = AlertView), (status = 404, body = Problem)))]
pub(crate) async fn resolve(
    State(state): State<AppState>,
    meta: Meta,
    Operator(p): Operator,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<AlertView>> {
    service::resolve(&state, &meta, &p, id)
        .await
        .map(axum::Json)
}
