//! Alerts (SPEC 2.3, 3.2; CONTRACT 7) and alert rules (SPEC 2.4; CONTRACT 10).

use crate::alerting::{self, AlertView};
use crate::auth::{Operator, Viewer};
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{Meta, Path, Query};
use crate::openapi::api_routes;
use crate::state::{AppState, now};
use crate::store::alerts::{self, Filter};
use axum::extract::State;
use serde::Deserialize;
use serde_json::json;
use trusthub_core::alerting::Severity;
use trusthub_core::audit as ev;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(api_routes!(list))
        .routes(api_routes!(get_alert))
        .routes(api_routes!(resolve))
}

/// Alert listing filters and paging.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AlertQuery {
    /// `info`, `warning` or `critical`.
    #[param(pattern = r"^(info|warning|critical)$")]
    pub severity: Option<String>,
    /// `true` or `false`.
    pub is_resolved: Option<bool>,
    /// Only alerts whose agent carries this tag.
    pub tag: Option<String>,
    /// Page size, 1 to 500 (default 100).
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<i64>,
    /// The next page: alerts older than this alert id (the last id of the previous page).
    pub before: Option<Uuid>,
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

/// The service behind [`get_alert`], for the API and the dashboard alike.
pub async fn get_alert_by(state: &AppState, by: &Viewer, id: Uuid) -> ApiResult<AlertView> {
    let mut c = state.db.conn().await?;
    let a = alerts::get(&mut c, by.0.tenant(), id)
        .await?
        .ok_or(ApiError::NotFound("alert"))?;
    Ok(a.into())
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

/// Resolves alert `id` of `p`'s tenant as `p` (the API and the dashboard): audited, the
/// app's red marker cleared, `alert.resolved` queued for matching webhooks. A resolved
/// alert is answered unchanged.
pub(crate) async fn resolve_by(
    state: &AppState,
    meta: &Meta,
    p: &crate::auth::Principal,
    id: Uuid,
) -> ApiResult<AlertView> {
    let now = now();
    let mut tx = state.db.begin().await?;
    let Some(before) = alerts::get(&mut tx, p.tenant(), id).await? else {
        return Err(ApiError::NotFound("alert"));
    };
    if before.is_resolved {
        return Ok(before.into());
    }
    let by = format!("user:{}", p.user.id);
    let view = alerting::Notifier::default()
        .resolve(&mut tx, p.tenant(), id, &by, "resolved by a user", now)
        .await?
        .ok_or(ApiError::NotFound("alert"))?;
    for hook in &state.part::<alerting::ResolveHooks>().0 {
        hook(&mut tx, p.tenant(), &view).await?;
    }
    meta.record(
        &mut tx,
        p,
        ev::ALERT_RESOLVED,
        format!("alert:{id}"),
        json!({"title": view.title, "severity": view.severity}),
    )
    .await?;
    tx.commit().await?;
    Ok(view)
}
