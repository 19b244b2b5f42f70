//! `/agents/{id}/auto-patch`: a host's settings, its attempts, and a run now.

use crate::service::{self, AttemptView, SettingsPatch, SettingsView};
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use trusthub_identity::auth::purpose::AgentAutoPatch;
use trusthub_identity::auth::{Admin, TotpOffer, TotpProof, Viewer};
use trusthub_platform::AppState;
use trusthub_platform::error::{ApiError, ApiResult, Problem};
use trusthub_platform::extract::{Json, Meta, Path, Query};
use trusthub_platform::openapi::api_routes;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(api_routes!(get_settings, patch_settings))
        .routes(api_routes!(list_runs))
        .routes(api_routes!(run))
}

/// A host's auto-patch settings (SPEC 2.8; defaults when never set).
#[utoipa::path(get, path = "/agents/{id}/auto-patch", tag = "auto-patch",
    params(("id" = Uuid, Path, description = "Agent id")),
    responses((status = 200, body = SettingsView), (status = 404, body = Problem)))]
pub(crate) async fn get_settings(
    State(state): State<AppState>,
    by: Viewer,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<SettingsView>> {
    service::get_settings(&state, &by, id).await.map(axum::Json)
}

/// Change a host's auto-patch settings (admin). Turning `os_packages` or `app_deps` on, or
/// widening `min_severity` from CRITICAL to HIGH while a flag is on, needs TOTP purpose
/// `agent_auto_patch` (`X-TOTP-Code`, or `X-TOTP-Token`), which only a login session can
/// give; turning a flag off does not. Each change is a `remediation.auto_flag_set`
/// attestation in the transparency log and an audit row; `enabled_by`/`enabled_at` change
/// only when a flag is turned on.
#[utoipa::path(patch, path = "/agents/{id}/auto-patch", tag = "auto-patch",
    params(("id" = Uuid, Path, description = "Agent id"),
        ("X-TOTP-Code" = Option<String>, Header, description = "The current TOTP code, when turning a flag on")),
    request_body = SettingsPatch,
    responses((status = 200, body = SettingsView), (status = 403, body = Problem),
        (status = 404, body = Problem), (status = 422, body = Problem)))]
pub(crate) async fn patch_settings(
    State(state): State<AppState>,
    meta: Meta,
    by: Admin,
    offer: TotpOffer,
    Path(id): Path<Uuid>,
    Json(req): Json<SettingsPatch>,
) -> ApiResult<axum::Json<SettingsView>> {
    service::patch_settings(&state, &meta, &by, &offer, id, req)
        .await
        .map(axum::Json)
}

/// The attempts list's filters.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct RunsQuery {
    /// Page size, 1 to 500 (default 100).
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<i64>,
}

/// A host's auto-patch attempts, newest first: one per signed action, with the packages it
/// installs (`from`, `to`, the advisories fixed) and what the host answered.
#[utoipa::path(get, path = "/agents/{id}/auto-patch/runs", tag = "auto-patch",
    params(("id" = Uuid, Path, description = "Agent id"), RunsQuery),
    responses((status = 200, body = Vec<AttemptView>), (status = 404, body = Problem), (status = 422, body = Problem)))]
pub(crate) async fn list_runs(
    State(state): State<AppState>,
    by: Viewer,
    Path(id): Path<Uuid>,
    Query(q): Query<RunsQuery>,
) -> ApiResult<axum::Json<Vec<AttemptView>>> {
    let limit = ApiError::page_limit(q.limit, 100, 500)?;
    service::runs(&state, &by, id, limit).await.map(axum::Json)
}

/// Run one auto-patch cycle for this host now (admin, TOTP `agent_auto_patch`): the same
/// plan as the worker's, and targets rolled back before are tried again. 202 with the
/// attempts dispatched (none when nothing is due or the host is not connected); results
/// arrive at `/agents/{id}/auto-patch/runs`.
#[utoipa::path(post, path = "/agents/{id}/auto-patch/run", tag = "auto-patch",
    params(("id" = Uuid, Path, description = "Agent id")),
    responses((status = 202, body = Vec<AttemptView>), (status = 403, body = Problem),
        (status = 404, body = Problem),
        (status = 409, description = "Auto-patch is off for this host", body = Problem)))]
pub(crate) async fn run(
    State(state): State<AppState>,
    meta: Meta,
    proof: TotpProof<AgentAutoPatch>,
    Path(id): Path<Uuid>,
) -> ApiResult<(StatusCode, axum::Json<Vec<AttemptView>>)> {
    let sent = service::run_now(&state, &meta, &proof, id).await?;
    Ok((StatusCode::ACCEPTED, axum::Json(sent)))
}
