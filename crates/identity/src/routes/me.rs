//! The caller: who they are, and changing their own password.

use crate::auth::{Authenticated, Credential, SessionUser};
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{Json, Meta};
use crate::openapi::api_routes;
use crate::service::me::{self as service, *};
use crate::state::AppState;
use crate::store::tenants;
use crate::views::UserView;
use axum::extract::State;
use axum::http::StatusCode;
use utoipa_axum::router::OpenApiRouter;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(api_routes!(me))
        .routes(api_routes!(change_password))
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

/// Change your password. Every session of yours ends, this one too: log in again.
#[utoipa::path(post, path = "/me/password", tag = "users", request_body = PasswordChange,
    responses((status = 204, description = "Changed"), (status = 403, description = "Wrong current password", body = Problem), (status = 422, body = Problem)))]
pub(crate) async fn change_password(
    State(state): State<AppState>,
    meta: Meta,
    by: SessionUser,
    Json(req): Json<PasswordChange>,
) -> ApiResult<StatusCode> {
    service::change_password(&state, &meta, &by, req).await
}
