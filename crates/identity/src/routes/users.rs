//! Users of the tenant (owner): list, change role, remove.

use crate::auth::Owner;
use crate::error::{ApiResult, Problem};
use crate::extract::{Json, Meta, Path};
use crate::openapi::api_routes;
use crate::service::users::{self as service, *};
use crate::state::AppState;
use crate::views::UserView;
use axum::extract::State;
use axum::http::StatusCode;
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(api_routes!(list))
        .routes(api_routes!(change_role, remove))
}

/// The users of the tenant, oldest first (owner).
#[utoipa::path(get, path = "/users", tag = "users", responses((status = 200, body = Vec<UserView>)))]
pub(crate) async fn list(
    State(state): State<AppState>,
    by: Owner,
) -> ApiResult<axum::Json<Vec<UserView>>> {
    service::list(&state, &by).await.map(axum::Json)
}

/// Change a user's role (owner). The tenant always keeps at least one owner (409).
#[utoipa::path(patch, path = "/users/{id}", tag = "users", request_body = RoleChange, params(("id" = Uuid, Path, description = "User id")),
    responses((status = 200, body = UserView), (status = 404, body = Problem),
        (status = 409, description = "Would leave the tenant without an owner", body = Problem), (status = 422, body = Problem)))]
pub(crate) async fn change_role(
    State(state): State<AppState>,
    meta: Meta,
    by: Owner,
    Path(id): Path<Uuid>,
    Json(req): Json<RoleChange>,
) -> ApiResult<axum::Json<UserView>> {
    service::change_role(&state, &meta, &by, id, req)
        .await
        .map(axum::Json)
}

/// Remove a user (owner): their sessions and API tokens stop working at once. The tenant
/// always keeps at least one owner (409).
#[utoipa::path(delete, path = "/users/{id}", tag = "users", params(("id" = Uuid, Path, description = "User id")),
    responses((status = 204, description = "Removed"), (status = 404, body = Problem),
        (status = 409, description = "Would leave the tenant without an owner", body = Problem)))]
pub(crate) async fn remove(
    State(state): State<AppState>,
    meta: Meta,
    by: Owner,
    Path(id): Path<Uuid>,
) -> ApiResult<StatusCode> {
    service::delete(&state, &meta, &by, id)
        .await
        .map(|()| StatusCode::NO_CONTENT)
}
