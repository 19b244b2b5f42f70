//! `POST /agents/{id}/emergency` (CONTRACT 19): stop a process, a unit, a container, a login
//! or an address on a host now, through a signed action.

use crate::emergency::{self as service, EmergencyRequest};
use axum::extract::State;
use axum::http::StatusCode;
use trusthub_fleet::actions::Dispatched;
use trusthub_identity::auth::{Admin, TotpOffer};
use trusthub_platform::AppState;
use trusthub_platform::error::{ApiResult, Problem};
use trusthub_platform::extract::{Json, Meta, Path};
use trusthub_platform::openapi::api_routes;
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(api_routes!(emergency))
}

/// An emergency action on a host (admin, a login session and a TOTP code for purpose
/// `agent_emergency`; API tokens never can). The target is checked before the code is looked
/// at, and the host must be connected (409 otherwise; nothing is queued). Limited to 5
/// accepted calls per hour per user, app restarts included (429). The hub signs an EAT
/// (`act: emergency`, args `{action, target, reason}`) and pushes it to the agent, which
/// refuses actions its own allowlist forbids (`emergency_actions` in actions.toml); the
/// result is at `GET /actions/{jti}`, with an `action_requested`/`action_result` audit pair
/// and an `emergency_result` transparency-log entry.
#[utoipa::path(post, path = "/agents/{id}/emergency", tag = "actions",
    params(("id" = Uuid, Path, description = "Agent id"),
        ("X-TOTP-Code" = Option<String>, Header, description = "The current TOTP code (purpose agent_emergency)")),
    request_body = EmergencyRequest,
    responses((status = 202, body = Dispatched), (status = 403, body = Problem), (status = 404, body = Problem),
        (status = 409, description = "The agent is not connected", body = Problem),
        (status = 422, body = Problem), (status = 429, body = Problem)))]
pub(crate) async fn emergency(
    State(state): State<AppState>,
    meta: Meta,
    by: Admin,
    offer: TotpOffer,
    Path(id): Path<Uuid>,
    Json(req): Json<EmergencyRequest>,
) -> ApiResult<(StatusCode, axum::Json<Dispatched>)> {
    let d = service::emergency(&state, &meta, &by, &offer, id, req).await?;
    Ok((StatusCode::ACCEPTED, axum::Json(d)))
}
