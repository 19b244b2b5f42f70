//! Alerts (SPEC 2.3, 3.2; CONTRACT 7) and alert rules (SPEC 2.4; CONTRACT 10).

use crate::alerting::AlertView;
use crate::auth::{Operator, Viewer};
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{Meta, Path, Query};
use crate::openapi::api_routes;
pub use crate::service::alerts::*;
use crate::state::AppState;
use crate::store::alerts::{self, Filter};
use axum::extract::State;
use trusthub_core::alerting::Severity;
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
    Viewer(p): Viewer,
    Query(q): Query<AlertQuery>,
) -> ApiResult<axum::Json<Vec<AlertView>>> {
    if let Some(s) = &q.severity
        && Severity::parse(s).is_none()
    {
        return Err(ApiError::invalid(
            "severity",
            "must be info, warning or critical",
        ));
    }
    let limit = q.limit.unwrap_or(100);
    if !(1..=500).contains(&limit) {
        return Err(ApiError::invalid("limit", "must be 1 to 500"));
    }
    let mut c = state.db.conn().await?;
    let list = alerts::list(
        &mut c,
        p.tenant(),
        &Filter {
            severity: q.severity.as_deref(),
            is_resolved: q.is_resolved,
            tag: q.tag.as_deref(),
            before: q.before,
            limit,
        },
    )
    .await?;
    Ok(axum::Json(list.into_iter().map(AlertView::from).collect()))
}

/// One alert.
#[utoipa::path(get, path = "/alerts/{id}", tag = "alerts", params(("id" = Uuid, Path, description = "Alert id")),
    responses((status = 200, body = AlertView), (status = 404, body = Problem)))]
pub(crate) async fn get_alert(
    State(state): State<AppState>,
    by: Viewer,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<AlertView>> {
    get_alert_by(&state, &by, id).await.map(axum::Json)
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
    resolve_by(&state, &meta, &p, id).await.map(axum::Json)
}
