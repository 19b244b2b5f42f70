//! Restarting an app (SPEC 3.1) through the fleet's signed actions. Its operation keeps the
//! `actions_` id it was first documented under.

use crate::auth::TotpProof;
use crate::auth::purpose::AppRestart;
use crate::error::{ApiResult, Problem};
use crate::extract::{Json, Meta};
use crate::service::restart::{self as service, *};
use crate::state::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use trusthub_fleet::actions::Dispatched;
use trusthub_platform::api_routes;
use utoipa_axum::router::OpenApiRouter;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(api_routes!(resource = "actions"; restart))
}

/// Restart an app (SPEC 3.1): admin, a login session and a TOTP code for purpose
/// `app_restart` (`X-TOTP-Code`, or `X-TOTP-Token` from `/auth/totp/challenge`); API tokens
/// never can. The hub signs an EAT (`act: restart_app`, level 2, 5 minutes) and pushes it over
/// the agent's WebSocket; the agent checks it, its allowlist and its replay list, restarts per
/// kind and reports back. 409 when the agent is not connected (nothing is queued). Limited
/// like `/agents/:id/emergency` (SPEC 8): 5 per hour per user.
#[utoipa::path(post, path = "/apps/{id}/restart", tag = "actions", params(("id" = Uuid, Path, description = "App id")),
    request_body = RestartRequest,
    responses((status = 202, body = Dispatched), (status = 403, body = Problem), (status = 404, body = Problem),
        (status = 409, description = "The agent is not connected, or a check has nothing to restart", body = Problem),
        (status = 422, description = "A process app without a restart_command (checked before the TOTP code, which is not spent)", body = Problem),
        (status = 429, body = Problem)))]
pub(crate) async fn restart(
    State(state): State<AppState>,
    meta: Meta,
    RestartTarget(app): RestartTarget,
    proof: TotpProof<AppRestart>,
    Json(req): Json<RestartRequest>,
) -> ApiResult<(StatusCode, axum::Json<Dispatched>)> {
    let d = service::restart(&state, &meta, &proof, app, req).await?;
    Ok((StatusCode::ACCEPTED, axum::Json(d)))
}
