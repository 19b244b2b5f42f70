//! The services behind [`crate::routes::me`]: what its handlers, the dashboard's
//! pages and other capabilities call.

use crate::auth::SessionUser;
use crate::error::{ApiError, ApiResult};
use crate::extract::Meta;
use crate::passwords;
use crate::state::{AppState, now};
use crate::store::sessions;
use crate::store::users;
use crate::views::UserView;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::json;
use trusthub_core::{audit as ev, validate};
use utoipa::ToSchema;
use uuid::Uuid;

/// The caller's tenant.
#[derive(Debug, Serialize, ToSchema)]
pub struct TenantView {
    /// Id.
    pub id: Uuid,
    /// Name.
    pub name: String,
}

/// Who is calling, and how.
#[derive(Debug, Serialize, ToSchema)]
pub struct MeView {
    /// The user.
    pub user: UserView,
    /// Their tenant.
    pub tenant: TenantView,
    /// `session` or `api_token`.
    pub auth: String,
    /// The token's scope when `auth` is `api_token`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The role this request acts with (a `read` token acts as viewer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effective_role: Option<String>,
}

/// A password change.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PasswordChange {
    /// The current password.
    pub current_password: String,
    /// The new one, at least 8 characters.
    #[schema(min_length = 8, max_length = 256)]
    pub new_password: String,
}

/// The service behind the `change_password` handler, for the API and the dashboard alike.
pub async fn change_password(
    state: &AppState,
    meta: &Meta,
    by: &SessionUser,
    req: PasswordChange,
) -> ApiResult<StatusCode> {
    let p = by.0.clone();
    validate::password(&req.new_password).map_err(|m| ApiError::invalid("new_password", m))?;
    if !passwords::verify(req.current_password, Some(p.user.password_hash.clone())).await? {
        return Err(ApiError::Forbidden("the current password is wrong".into()));
    }
    let hash = passwords::hash(req.new_password).await?;
    let now = now();
    let mut tx = state.db.begin().await?;
    users::set_password(&mut tx, p.tenant(), p.user.id, &hash, now).await?;
    let ended = sessions::delete_for_user(&mut tx, p.tenant(), p.user.id).await?;
    meta.record(
        &mut tx,
        &p,
        ev::PASSWORD_CHANGED,
        p.actor(),
        json!({"sessions_ended": ended}),
    )
    .await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}
