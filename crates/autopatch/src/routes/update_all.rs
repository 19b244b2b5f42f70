//! `POST /cve/auto-update-all`: every application dependency with a known fix, updated.

use crate::update_all::{self, UpdateAllRequest, UpdateAllView};
use axum::extract::State;
use axum::http::StatusCode;
use trusthub_identity::auth::purpose::AutoUpdateAll;
use trusthub_identity::auth::{Admin, TotpOffer, TotpProof};
use trusthub_platform::AppState;
use trusthub_platform::error::{ApiResult, Problem};
use trusthub_platform::extract::{Json, Meta};
use trusthub_platform::openapi::api_routes;
use utoipa_axum::router::OpenApiRouter;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(api_routes!(auto_update_all))
}

/// Update every open application-dependency finding with a known fix (admin, TOTP purpose
/// `auto_update_all`; CONTRACT 19): one signed `update_packages` action per host per
/// (project, ecosystem) with the combined package list, each package to the lowest version
/// fixing all its open advisories on its installed major line, at most 25 actions per
/// request (`capped` says more are due; the next request takes them). Suppressed and
/// acknowledged findings are skipped and each skip is recorded with its reason as a
/// `remediation.skipped` attestation; findings already in flight are left alone, targets
/// rolled back before are tried again. Each host gets a `remediation.auto_update_all`
/// attestation its proposals link to. `{"dry_run": true}` answers the same plan with 200,
/// needs no TOTP code and changes nothing. 202 otherwise; results arrive at
/// `/agents/{id}/auto-patch/runs` and `/actions/{jti}`.
#[utoipa::path(post, path = "/cve/auto-update-all", tag = "auto-patch",
    params(("X-TOTP-Code" = Option<String>, Header, description = "The current TOTP code (not for a dry run)")),
    request_body = UpdateAllRequest,
    responses((status = 200, description = "The plan of a dry run", body = UpdateAllView),
        (status = 202, description = "The actions sent", body = UpdateAllView),
        (status = 403, body = Problem), (status = 404, body = Problem),
        (status = 422, body = Problem)))]
pub(crate) async fn auto_update_all(
    State(state): State<AppState>,
    meta: Meta,
    by: Admin,
    offer: TotpOffer,
    Json(req): Json<UpdateAllRequest>,
) -> ApiResult<(StatusCode, axum::Json<UpdateAllView>)> {
    by.0.may_change()?;
    if !req.dry_run {
        TotpProof::<AutoUpdateAll>::from_offer(&state, &meta, by.0.clone(), &offer).await?;
    }
    let now = trusthub_platform::state::now();
    let view = update_all::update_all(&state, &meta, &by.0, &req, now).await?;
    let status = if req.dry_run {
        StatusCode::OK
    } else {
        StatusCode::ACCEPTED
    };
    Ok((status, axum::Json(view)))
}
