//! Invitations (CONTRACT 2): owners invite people into their tenant with a role.

use crate::auth::Owner;
use crate::error::{ApiResult, Problem};
use crate::extract::{Json, Meta, Path};
use crate::openapi::api_routes;
use crate::service::invitations::{self as service, *};
use crate::state::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(api_routes!(create, list))
        .routes(api_routes!(revoke))
}

/// Invite someone (owner). The token is in the answer once, and is mailed when SMTP is set.
/// Rate-limited to 20 per hour per tenant.
#[utoipa::path(post, path = "/invitations", tag = "users", request_body = NewInvitation,
    responses((status = 201, body = CreatedInvitation), (status = 409, description = "Already a user of this tenant (an email another tenant has is answered like an unknown one)", body = Problem),
        (status = 422, body = Problem), (status = 429, body = Problem)))]
pub(crate) async fn create(
    State(state): State<AppState>,
    meta: Meta,
    by: Owner,
    Json(req): Json<NewInvitation>,
) -> ApiResult<(StatusCode, axum::Json<CreatedInvitation>)> {
    service::create(&state, &meta, &by, req)
        .await
        .map(|v| (StatusCode::CREATED, axum::Json(v)))
}

/// Pending invitations of the tenant (owner), newest first.
#[utoipa::path(get, path = "/invitations", tag = "users",
    responses((status = 200, body = Vec<InvitationView>)))]
pub(crate) async fn list(
    State(state): State<AppState>,
    by: Owner,
) -> ApiResult<axum::Json<Vec<InvitationView>>> {
    service::list(&state, &by).await.map(axum::Json)
}

/// Revoke a pending invitation (owner).
#[utoipa::path(delete, path = "/invitations/{id}", tag = "users", params(("id" = Uuid, Path, description = "Invitation id")),
    responses((status = 204, description = "Revoked"), (status = 404, body = Problem)))]
pub(crate) async fn revoke(
    State(state): State<AppState>,
    meta: Meta,
    by: Owner,
    Path(id): Path<Uuid>,
) -> ApiResult<StatusCode> {
    service::revoke(&state, &meta, &by, id)
        .await
        .map(|()| StatusCode::NO_CONTENT)
}
