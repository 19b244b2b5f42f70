//! SLOs per app (SPEC 2.2, CONTRACT 16): the objective, its status computed from the app's
//! verdict timeline, the daily history as CSV, and maintenance windows.

use crate::auth::{Operator, Viewer};
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{Json, Meta, Path, Query};
use crate::openapi::api_routes;
use crate::service::slo::{self as service, *};
use crate::state::{AppState, now};
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use trusthub_monitors::timeline::{self as timeline};
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(api_routes!(put_slo, get_slo, delete_slo))
        .routes(api_routes!(list))
        .routes(api_routes!(history))
        .routes(api_routes!(create_maintenance, list_maintenance))
        .routes(api_routes!(delete_maintenance))
}

/// Set the app's SLO (operator): 201 with its status, 200 when it replaced the app's SLO.
/// The status is computed from the verdicts liveness (and the http checks) recorded: a minute
/// is observed when there was a verdict, down when the observed state differed from the
/// expected one; maintenance windows count for neither. Audit `slo_set`.
#[utoipa::path(post, path = "/apps/{id}/slo", tag = "slo", params(("id" = Uuid, Path, description = "App id")),
    request_body = SloRequest,
    responses((status = 201, body = SloStatus), (status = 200, body = SloStatus), (status = 404, body = Problem), (status = 422, body = Problem)))]
pub(crate) async fn put_slo(
    State(state): State<AppState>,
    meta: Meta,
    Operator(p): Operator,
    Path(id): Path<Uuid>,
    Json(req): Json<SloRequest>,
) -> ApiResult<(StatusCode, axum::Json<SloStatus>)> {
    let (replaced, s) = service::put(&state, &meta, &p, id, &req).await?;
    Ok((
        if replaced {
            StatusCode::OK
        } else {
            StatusCode::CREATED
        },
        axum::Json(s),
    ))
}

/// The app's SLO status now (viewer). 404 when the app has no SLO.
#[utoipa::path(get, path = "/apps/{id}/slo", tag = "slo", params(("id" = Uuid, Path, description = "App id")),
    responses((status = 200, body = SloStatus), (status = 404, body = Problem)))]
pub(crate) async fn get_slo(
    State(state): State<AppState>,
    Viewer(p): Viewer,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<SloStatus>> {
    Ok(axum::Json(
        status_of_app(&state, p.tenant(), id, now()).await?,
    ))
}

/// Remove the app's SLO (operator); its timeline is kept. Audit `slo_deleted`.
#[utoipa::path(delete, path = "/apps/{id}/slo", tag = "slo", params(("id" = Uuid, Path, description = "App id")),
    responses((status = 204, description = "Removed"), (status = 404, body = Problem)))]
pub(crate) async fn delete_slo(
    State(state): State<AppState>,
    meta: Meta,
    by: Operator,
    Path(id): Path<Uuid>,
) -> ApiResult<StatusCode> {
    service::delete_slo(&state, &meta, &by, id)
        .await
        .map(|()| StatusCode::NO_CONTENT)
}

/// Every SLO of the tenant with its status (viewer), least budget remaining first.
#[utoipa::path(get, path = "/slos", tag = "slo", responses((status = 200, body = Vec<SloStatus>)))]
pub(crate) async fn list(
    State(state): State<AppState>,
    Viewer(p): Viewer,
) -> ApiResult<axum::Json<Vec<SloStatus>>> {
    Ok(axum::Json(statuses(&state, p.tenant(), now()).await?))
}

/// The app's SLO history as RFC 4180 CSV (viewer): one row per UTC day, oldest first, today
/// up to now, from the day the app was tracked (no rows before it; an empty `uptime_percent`
/// on a day with nothing observed); `date,minutes_observed,minutes_down,uptime_percent,budget_remaining_minutes,
/// burn_rate` (the budget left at the day's end, the day's burn rate).
#[utoipa::path(get, path = "/apps/{id}/slo/history", tag = "slo",
    params(("id" = Uuid, Path, description = "App id"), HistoryQuery),
    responses((status = 200, content_type = "text/csv", body = String), (status = 400, body = Problem), (status = 404, body = Problem)))]
pub(crate) async fn history(
    State(state): State<AppState>,
    Viewer(p): Viewer,
    Path(id): Path<Uuid>,
    Query(q): Query<HistoryQuery>,
) -> ApiResult<impl IntoResponse> {
    let days = q.days.unwrap_or(30);
    if !(1..=365).contains(&days) {
        return Err(ApiError::BadRequest(
            "days must be between 1 and 365".into(),
        ));
    }
    let body = history_csv(&state, p.tenant(), id, days as u32, now()).await?;
    Ok((
        [
            (
                header::CONTENT_TYPE,
                "text/csv; charset=utf-8; header=present".to_owned(),
            ),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"slo-{id}.csv\""),
            ),
        ],
        body,
    ))
}

/// Plan a maintenance window for the app (operator): its minutes are neither observed nor
/// down in the SLO, and the app raises no liveness alert during it. Audit
/// `maintenance_window_created`.
///
/// Beyond the schema: `ends_at` must be after `starts_at` and at most 30 days later.
#[utoipa::path(post, path = "/apps/{id}/maintenance-windows", tag = "slo",
    params(("id" = Uuid, Path, description = "App id")), request_body = NewMaintenance,
    responses((status = 201, body = MaintenanceView), (status = 404, body = Problem), (status = 422, body = Problem)))]
pub(crate) async fn create_maintenance(
    State(state): State<AppState>,
    meta: Meta,
    Operator(p): Operator,
    Path(id): Path<Uuid>,
    Json(req): Json<NewMaintenance>,
) -> ApiResult<(StatusCode, axum::Json<MaintenanceView>)> {
    let m = service::create_maintenance(&state, &meta, &p, id, &req).await?;
    Ok((StatusCode::CREATED, axum::Json(m)))
}

/// The app's maintenance windows of the last 400 days and to come (viewer), by start.
#[utoipa::path(get, path = "/apps/{id}/maintenance-windows", tag = "slo",
    params(("id" = Uuid, Path, description = "App id")),
    responses((status = 200, body = Vec<MaintenanceView>), (status = 404, body = Problem)))]
pub(crate) async fn list_maintenance(
    State(state): State<AppState>,
    Viewer(p): Viewer,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<Vec<MaintenanceView>>> {
    let mut c = state.db.conn().await?;
    if trusthub_monitors::app(&mut c, p.tenant(), id)
        .await?
        .is_none()
    {
        return Err(ApiError::NotFound("app"));
    }
    let since = now() - time::Duration::days(400);
    Ok(axum::Json(
        timeline::maintenance(&mut c, p.tenant(), id, since)
            .await?
            .into_iter()
            .map(Into::into)
            .collect(),
    ))
}

/// Delete a maintenance window (operator). Audit `maintenance_window_deleted`.
#[utoipa::path(delete, path = "/maintenance-windows/{id}", tag = "slo",
    params(("id" = Uuid, Path, description = "Window id")),
    responses((status = 204, description = "Deleted"), (status = 404, body = Problem)))]
pub(crate) async fn delete_maintenance(
    State(state): State<AppState>,
    meta: Meta,
    by: Operator,
    Path(id): Path<Uuid>,
) -> ApiResult<StatusCode> {
    service::delete_maintenance(&state, &meta, &by, id)
        .await
        .map(|()| StatusCode::NO_CONTENT)
}
