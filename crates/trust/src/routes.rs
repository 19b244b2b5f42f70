//! `/trust-score/v12/tenant` and `/trust-score/v13/tenant` (each version's score and history)
//! and `PATCH /tenant` (the badge switch).

use crate::score::{NEWEST, VERSION};
use crate::service::{self, CappedScoreView, HistoryPoint, ScoreView, TenantPatch, TenantSettings};
use axum::extract::State;
use serde::Deserialize;
use trusthub_identity::auth::{Owner, Viewer};
use trusthub_platform::AppState;
use trusthub_platform::error::{ApiError, ApiResult, Problem};
use trusthub_platform::extract::{Json, Meta, Query};
use trusthub_platform::openapi::api_routes;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(api_routes!(get_score))
        .routes(api_routes!(get_history))
        .routes(api_routes!(get_capped_score))
        .routes(api_routes!(get_capped_history))
        .routes(api_routes!(get_tenant, patch_tenant))
}

/// The tenant's Trust Score v12 (SPEC 1.8, CONTRACT 21), computed now from what every
/// capability knows: each component with its effective weight and every lost point with its
/// reason; `inputs_sha256` identifies the inputs (the same inputs always give the same
/// score). A history point is recorded when the inputs changed or the last one is 30
/// minutes old. Drift has no inputs until a host of the tenant reported a configuration scan.
#[utoipa::path(get, path = "/trust-score/v12/tenant", tag = "trust",
    responses((status = 200, body = ScoreView)))]
pub(crate) async fn get_score(
    State(state): State<AppState>,
    by: Viewer,
) -> ApiResult<axum::Json<ScoreView>> {
    service::compute_v12(&state, by.0.tenant(), trusthub_platform::state::now())
        .await
        .map(axum::Json)
}

/// The tenant's Trust Score v13 (CONTRACT 33), the newest: v12's components and shape, apps
/// and checks without an SLO counted in `slo` by their 30-day availability (below 99.9 % −5,
/// below 99 % −10, below 95 % −25), and `caps`: the band is at most `orange` while an open
/// CRITICAL finding exists or a monitored app or check is down, at most `red` while one has
/// been down for over 24 hours. The badge and the Trust page show this version; v12 answers
/// as it always did.
#[utoipa::path(get, path = "/trust-score/v13/tenant", tag = "trust",
    responses((status = 200, body = CappedScoreView)))]
pub(crate) async fn get_capped_score(
    State(state): State<AppState>,
    by: Viewer,
) -> ApiResult<axum::Json<CappedScoreView>> {
    service::compute(&state, by.0.tenant(), trusthub_platform::state::now())
        .await
        .map(axum::Json)
}

/// The history's window.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct HistoryQuery {
    /// Days back, 1 to 365 (default 30).
    #[param(minimum = 1, maximum = 365)]
    pub days: Option<i64>,
}

/// The score's history, oldest first: one point per recomputation (every 30 minutes, and
/// whenever its inputs changed).
#[utoipa::path(get, path = "/trust-score/v12/tenant/history", tag = "trust",
    params(HistoryQuery),
    responses((status = 200, body = Vec<HistoryPoint>), (status = 422, body = Problem)))]
pub(crate) async fn get_history(
    State(state): State<AppState>,
    by: Viewer,
    Query(q): Query<HistoryQuery>,
) -> ApiResult<axum::Json<Vec<HistoryPoint>>> {
    history(&state, &by, VERSION, q).await
}

/// The v13 score's history, oldest first: one point per recomputation (every 30 minutes, and
/// whenever its inputs changed).
#[utoipa::path(get, path = "/trust-score/v13/tenant/history", tag = "trust",
    params(HistoryQuery),
    responses((status = 200, body = Vec<HistoryPoint>), (status = 422, body = Problem)))]
pub(crate) async fn get_capped_history(
    State(state): State<AppState>,
    by: Viewer,
    Query(q): Query<HistoryQuery>,
) -> ApiResult<axum::Json<Vec<HistoryPoint>>> {
    history(&state, &by, NEWEST, q).await
}

async fn history(
    state: &AppState,
    by: &Viewer,
    version: &str,
    q: HistoryQuery,
) -> ApiResult<axum::Json<Vec<HistoryPoint>>> {
    let days = q.days.unwrap_or(30);
    if !(1..=365).contains(&days) {
        return Err(ApiError::invalid("days", "must be 1 to 365"));
    }
    let now = trusthub_platform::state::now();
    Ok(axum::Json(
        service::history(state, by.0.tenant(), version, days, now).await?,
    ))
}

/// The tenant's settings (viewer): whether the Trust Score badge is public, and the private
/// networks its hub checks, channels and webhooks may reach with what the hub's operator
/// allows.
#[utoipa::path(get, path = "/tenant", tag = "trust",
    responses((status = 200, body = TenantSettings)))]
pub(crate) async fn get_tenant(
    State(state): State<AppState>,
    by: Viewer,
) -> ApiResult<axum::Json<TenantSettings>> {
    service::tenant_settings(&state, by.0.tenant())
        .await
        .map(axum::Json)
}

/// Change the tenant's settings (owner), as a merge patch: the public Trust Score badge on or
/// off, and the private networks (CONTRACT 33) its hub checks, notification channels and
/// webhooks may reach, each range within what the hub's operator allows
/// (`TRUSTHUB_OUTBOUND_ALLOW_CIDRS`; `trusthub up` allows RFC 1918, CGNAT and unique-local
/// ranges by default). A range outside the operator's is refused (422) naming them. Agent
/// checks are not bound by these: they reach what their host reaches, metadata addresses
/// excepted. Audited.
///
/// Beyond the schema: each range must lie within what the hub's operator allows (422 naming
/// the operator's ranges otherwise).
#[utoipa::path(patch, path = "/tenant", tag = "trust",
    request_body = TenantPatch,
    responses((status = 200, body = TenantSettings), (status = 422, body = Problem)))]
pub(crate) async fn patch_tenant(
    State(state): State<AppState>,
    meta: Meta,
    by: Owner,
    Json(req): Json<TenantPatch>,
) -> ApiResult<axum::Json<TenantSettings>> {
    service::set_tenant(&state, &meta, &by.0, req)
        .await
        .map(axum::Json)
}
