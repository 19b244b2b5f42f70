//! The caller: who they are, and changing their own password.

use crate::auth::{Authenticated, Credential, SessionUser};
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{Json, Meta};
use crate::openapi::api_routes;
use crate::passwords;
use crate::state::{AppState, now};
use crate::store::sessions;
use crate::store::tenants;
use crate::store::users;
use crate::views::UserView;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::json;
use trusthub_core::{audit as ev, validate};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(api_routes!(me))
        .routes(api_routes!(change_password))
}

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

/// The caller: user, tenant, and how they authenticated. A session or a `read`/`write` token
/// (an `ai_ingest` token reaches only the trace intake: 403).
#[utoipa::path(get, path = "/me", tag = "users", responses((status = 200, body = MeView), (status = 401, body = Problem)))]
pub(crate) async fn me(
    State(state): State<AppState>,
    Authenticated(p): Authenticated,
) -> ApiResult<axum::Json<MeView>> {
    let mut c = state.db.conn().await?;
    let tenant = tenants::get(&mut c, p.tenant())
        .await?
        .ok_or(ApiError::NotFound("tenant"))?;
    let (auth, scope) = match &p.credential {
        Credential::Session { .. } => ("session", None),
        Credential::Token { scope, .. } => ("api_token", Some(scope.as_str().to_owned())),
    };
    Ok(axum::Json(MeView {
        user: UserView::from(&p.user),
        tenant: TenantView {
            id: tenant.id,
            name: tenant.name,
        },
        auth: auth.into(),
        scope,
        effective_role: p.role.map(|r| r.as_str().to_owned()),
    }))
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

/// The service behind [`change_password`], for the API and the dashboard alike.
pub async fn change_password_by(
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

/// Change your password. Every session of yours ends, this one too: log in again.
#[utoipa::path(post, path = "/me/password", tag = "users", request_body = PasswordChange,
    responses((status = 204, description = "Changed"), (status = 403, description = "Wrong current password", body = Problem), (status = 422, body = Problem)))]
pub(crate) async fn change_password(
    State(state): State<AppState>,
    meta: Meta,
    by: SessionUser,
    Json(req): Json<PasswordChange>,
) -> ApiResult<StatusCode> {
    change_password_by(&state, &meta, &by, req).await
}
