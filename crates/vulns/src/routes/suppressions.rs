//! CVE suppressions (SPEC 2.5, CONTRACT 15): a package of an ecosystem in a version range
//! (optionally one vulnerability) accepted for a reason until a date, and their OpenVEX
//! export.

use crate::auth::{Operator, Viewer};
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{Json, Meta, Path};
use crate::openapi::api_routes;
use crate::service::suppressions::{self as service, *};
use crate::state::{AppState, now};
use axum::extract::State;
use axum::http::StatusCode;
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(api_routes!(create, list))
        .routes(api_routes!(export_openvex))
        .routes(api_routes!(get_one, delete))
}

/// Suppress findings (operator): every unfixed finding of the package in the range (of one
/// vulnerability when `vuln_id` is given) shows `suppressed` with the reason until
/// `expires_at`, raises no alert and is never auto-patched; then it is `open` again by
/// itself. Findings of later scans are matched too. When several suppressions match a
/// finding, the one expiring last applies. Audit `cve_suppression_created`.
///
/// Beyond the schema: `version_range` must parse in the syntax of `ecosystem`, and `expires_at` must be in the future and at most a year ahead of the hub's clock.
#[utoipa::path(post, path = "/cve-suppressions", tag = "cve", request_body = NewSuppression,
    responses((status = 201, body = SuppressionView), (status = 422, body = Problem)))]
pub(crate) async fn create(
    State(state): State<AppState>,
    meta: Meta,
    Operator(p): Operator,
    Json(req): Json<NewSuppression>,
) -> ApiResult<(StatusCode, axum::Json<SuppressionView>)> {
    let v = service::create(&state, &meta, &p, &req).await?;
    Ok((StatusCode::CREATED, axum::Json(v)))
}

/// The tenant's suppressions (viewer), newest first, expired ones included (`active:
/// false`), each with the number of unfixed findings it suppresses now.
#[utoipa::path(get, path = "/cve-suppressions", tag = "cve",
    responses((status = 200, body = Vec<SuppressionView>)))]
pub(crate) async fn list(
    State(state): State<AppState>,
    by: Viewer,
) -> ApiResult<axum::Json<Vec<SuppressionView>>> {
    service::list(&state, &by).await.map(axum::Json)
}

/// One suppression (viewer).
#[utoipa::path(get, path = "/cve-suppressions/{id}", tag = "cve",
    params(("id" = Uuid, Path, description = "Suppression id")),
    responses((status = 200, body = SuppressionView), (status = 404, body = Problem)))]
pub(crate) async fn get_one(
    State(state): State<AppState>,
    Viewer(p): Viewer,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<SuppressionView>> {
    let now = now();
    let mut c = state.db.conn().await?;
    let rows = crate::store::cve::suppressions(&mut c, p.tenant(), now).await?;
    rows.into_iter()
        .find(|(s, _)| s.id == id)
        .map(|(s, n)| axum::Json(view(s, n, now)))
        .ok_or(ApiError::NotFound("suppression"))
}

/// Delete a suppression (operator): the findings it suppressed are `open` again (or
/// suppressed by another that matches). Audit `cve_suppression_deleted`.
#[utoipa::path(delete, path = "/cve-suppressions/{id}", tag = "cve",
    params(("id" = Uuid, Path, description = "Suppression id")),
    responses((status = 204, description = "Deleted"), (status = 404, body = Problem)))]
pub(crate) async fn delete(
    State(state): State<AppState>,
    meta: Meta,
    Operator(p): Operator,
    Path(id): Path<Uuid>,
) -> ApiResult<StatusCode> {
    service::delete(&state, &meta, &p, id).await
}

/// OpenVEX 0.2.0 (viewer): each suppression in force as `not_affected` statements, one per
/// vulnerability it suppresses, its products the purls of the installed versions it matches
/// and its reason the `impact_statement`. A suppression of every vulnerability of a package
/// that matches nothing installed has no statement (OpenVEX names a vulnerability); one of a
/// single vulnerability then names the package without a version.
#[utoipa::path(get, path = "/cve-suppressions/export.openvex.json", tag = "cve",
    responses((status = 200, description = "An OpenVEX 0.2.0 document", content_type = "application/json", body = Object)))]
pub(crate) async fn export_openvex(
    State(state): State<AppState>,
    Viewer(p): Viewer,
) -> ApiResult<axum::Json<serde_json::Value>> {
    Ok(axum::Json(openvex(&state, p.tenant()).await?))
}
