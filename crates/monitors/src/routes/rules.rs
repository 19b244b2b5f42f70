//! Alert rules (CONTRACT 10): thresholds on agents' metrics. Their operations keep the
//! `alerts_` ids of the alerts resource they were first documented under.

use crate::auth::{Operator, Viewer};
use crate::error::{ApiResult, Problem};
use crate::extract::{Json, Meta, Path};
use crate::openapi::api_routes;
use crate::service::rules::{self as service, *};
use crate::state::AppState;
use crate::store::rules::{self};
use axum::extract::State;
use axum::http::StatusCode;
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(api_routes!(resource = "alerts"; create_rule, list_rules))
        .routes(api_routes!(resource = "alerts"; get_rule, update_rule, delete_rule))
}

/// Create an alert rule (operator). Every `TRUSTHUB_RULE_EVAL_INTERVAL_SECS` (30 s) the
/// average of `metric` over `window` is computed per `group_by` group; a group for which
/// `average operator threshold` holds raises one alert (severity of the rule, category =
/// the metric) and resolves it when it no longer holds or has no data in the window. With
/// `webhook_url`, each new alert is also POSTed there (unsigned minimal body, retried,
/// logged as `webhook_delivery` in the audit log). A metric no agent sends is accepted and
/// shown with `metric_seen: false`.
///
/// Beyond the schema: `webhook_url` must resolve to an address the outbound policy allows (SSRF protection).
#[utoipa::path(post, path = "/alert-rules", tag = "alerts", request_body = NewRule,
    responses((status = 201, body = RuleView), (status = 422, body = Problem)))]
pub(crate) async fn create_rule(
    State(state): State<AppState>,
    meta: Meta,
    Operator(p): Operator,
    Json(req): Json<NewRule>,
) -> ApiResult<(StatusCode, axum::Json<RuleView>)> {
    let view = service::create_rule(&state, &meta, &p, &req).await?;
    Ok((StatusCode::CREATED, axum::Json(view)))
}

/// The tenant's alert rules.
#[utoipa::path(get, path = "/alert-rules", tag = "alerts", responses((status = 200, body = Vec<RuleView>)))]
pub(crate) async fn list_rules(
    State(state): State<AppState>,
    Viewer(p): Viewer,
) -> ApiResult<axum::Json<Vec<RuleView>>> {
    let mut c = state.db.conn().await?;
    let mut out = Vec::new();
    for r in rules::list(&mut c, p.tenant()).await? {
        let seen = trusthub_fleet::metric_known(&mut c, p.tenant(), &r.metric).await?;
        out.push(RuleView::new(r, seen));
    }
    Ok(axum::Json(out))
}

/// One alert rule.
#[utoipa::path(get, path = "/alert-rules/{id}", tag = "alerts", params(("id" = Uuid, Path, description = "Rule id")),
    responses((status = 200, body = RuleView), (status = 404, body = Problem)))]
pub(crate) async fn get_rule(
    State(state): State<AppState>,
    by: Viewer,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<RuleView>> {
    service::get_rule(&state, &by, id).await.map(axum::Json)
}

/// Change an alert rule (operator): only the fields sent change, checked like at creation.
/// The next evaluation uses the new settings; an open alert whose group no longer matches
/// is resolved by it.
///
/// Beyond the schema: `webhook_url` must resolve to an address the outbound policy allows (SSRF protection).
#[utoipa::path(patch, path = "/alert-rules/{id}", tag = "alerts", params(("id" = Uuid, Path, description = "Rule id")),
    request_body = RulePatch,
    responses((status = 200, body = RuleView), (status = 404, body = Problem), (status = 422, body = Problem)))]
pub(crate) async fn update_rule(
    State(state): State<AppState>,
    meta: Meta,
    by: Operator,
    Path(id): Path<Uuid>,
    Json(patch): Json<RulePatch>,
) -> ApiResult<axum::Json<RuleView>> {
    service::update_rule(&state, &meta, &by, id, patch)
        .await
        .map(axum::Json)
}

/// Remove an alert rule (operator). Its open alerts stay until resolved.
#[utoipa::path(delete, path = "/alert-rules/{id}", tag = "alerts", params(("id" = Uuid, Path, description = "Rule id")),
    responses((status = 204, description = "Removed"), (status = 404, body = Problem)))]
pub(crate) async fn delete_rule(
    State(state): State<AppState>,
    meta: Meta,
    Operator(p): Operator,
    Path(id): Path<Uuid>,
) -> ApiResult<StatusCode> {
    service::delete_rule(&state, &meta, &p, id).await
}
