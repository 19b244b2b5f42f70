//! The services behind [`crate::routes::users`]: what its handlers, the dashboard's
//! pages and other capabilities call.

use crate::auth::Owner;
use crate::error::{ApiError, ApiResult};
use crate::extract::Meta;
use crate::state::AppState;
use crate::store::sessions;
use crate::store::users;
use crate::views::UserView;
use serde::Deserialize;
use serde_json::json;
use trusthub_core::{Role, audit as ev};
use trusthub_store::audit;
use utoipa::ToSchema;
use uuid::Uuid;

/// The service behind the `list` handler, for the API and the dashboard alike.
pub async fn list(state: &AppState, by: &Owner) -> ApiResult<Vec<UserView>> {
    let p = &by.0;
    let mut c = state.db.conn().await?;
    let list = users::list(&mut c, p.tenant()).await?;
    Ok(list.iter().map(UserView::from).collect())
}

/// A new role.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RoleChange {
    /// `viewer`, `operator`, `admin` or `owner`.
    #[schema(pattern = r"^(viewer|operator|admin|owner)$")]
    pub role: String,
}

/// The service behind the `change_role` handler, for the API and the dashboard alike.
pub async fn change_role(
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

/// The service behind the `remove` handler, for the API and the dashboard alike.
pub async fn delete(state: &AppState, meta: &Meta, by: &Owner, id: Uuid) -> ApiResult<()> {
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
