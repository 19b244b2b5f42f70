//! Users of the tenant (owner): list, change role, remove.

use crate::auth::Owner;
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{Json, Meta, Path};
use crate::openapi::api_routes;
use crate::state::AppState;
use crate::store::sessions;
use crate::store::users;
use crate::views::UserView;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::json;
use trusthub_core::{Role, audit as ev};
use trusthub_store::audit;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(api_routes!(list))
        .routes(api_routes!(change_role, remove))
}

/// The service behind [`list`], for the API and the dashboard alike.
pub async fn list_by(state: &AppState, by: &Owner) -> ApiResult<Vec<UserView>> {
    let p = &by.0;
    let mut c = state.db.conn().await?;
    let list = users::list(&mut c, p.tenant()).await?;
    Ok(list.iter().map(UserView::from).collect())
}

/// The users of the tenant, oldest first (owner).
#[utoipa::path(get, path = "/users", tag = "users", responses((status = 200, body = Vec<UserView>)))]
pub(crate) async fn list(
    State(state): State<AppState>,
    by: Owner,
) -> ApiResult<axum::Json<Vec<UserView>>> {
    list_by(&state, &by).await.map(axum::Json)
}

/// A new role.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RoleChange {
    /// `viewer`, `operator`, `admin` or `owner`.
    #[schema(pattern = r"^(viewer|operator|admin|owner)$")]
    pub role: String,
}

/// The service behind [`change_role`], for the API and the dashboard alike.
pub async fn change_role_by(
    state: &AppState,
    meta: &Meta,
    by: &Owner,
    id: Uuid,
    req: RoleChange,
) -> ApiResult<UserView> {
    let p = &by.0;
    let role: Role = req
        .role
        .parse()
        .map_err(|_| ApiError::invalid("role", "must be viewer, operator, admin or owner"))?;
    let mut tx = state.db.begin().await?;
    let Some(mut user) = users::get(&mut tx, p.tenant(), id).await? else {
        return Err(ApiError::NotFound("user"));
    };
    if user.role == Role::Owner
        && role != Role::Owner
        && users::count_owners(&mut tx, p.tenant()).await? <= 1
    {
        return Err(ApiError::Conflict(
            "the tenant must keep at least one owner".into(),
        ));
    }
    let from = user.role;
    users::set_role(&mut tx, p.tenant(), id, role).await?;
    meta.record(
        &mut tx,
        p,
        ev::USER_ROLE_CHANGED,
        audit::user_actor(id),
        json!({"from": from, "to": role}),
    )
    .await?;
    tx.commit().await?;
    user.role = role;
    Ok(UserView::from(&user))
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
    change_role_by(&state, &meta, &by, id, req)
        .await
        .map(axum::Json)
}

/// The service behind [`remove`], for the API and the dashboard alike.
pub async fn remove_by(state: &AppState, meta: &Meta, by: &Owner, id: Uuid) -> ApiResult<()> {
    let p = &by.0;
    let mut tx = state.db.begin().await?;
    let Some(user) = users::get(&mut tx, p.tenant(), id).await? else {
        return Err(ApiError::NotFound("user"));
    };
    if user.role == Role::Owner && users::count_owners(&mut tx, p.tenant()).await? <= 1 {
        return Err(ApiError::Conflict(
            "the tenant must keep at least one owner".into(),
        ));
    }
    sessions::delete_for_user(&mut tx, p.tenant(), id).await?;
    users::delete(&mut tx, p.tenant(), id).await?;
    meta.record(
        &mut tx,
        p,
        ev::USER_REMOVED,
        audit::user_actor(id),
        json!({"email": user.email, "role": user.role}),
    )
    .await?;
    tx.commit().await?;
    Ok(())
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
    remove_by(&state, &meta, &by, id)
        .await
        .map(|()| StatusCode::NO_CONTENT)
}
