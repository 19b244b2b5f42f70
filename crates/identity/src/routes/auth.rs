//! Login, logout, password reset and invitation acceptance (CONTRACT 2; SPEC 4.9).

use crate::auth::{Credential, SessionUser};
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{Json, Meta};
use crate::openapi::api_routes;
use crate::service::auth::{self as service, *};
use crate::state::AppState;
use crate::store::sessions;
use crate::views::UserEnvelope;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use trusthub_core::audit as ev;
use utoipa_axum::router::OpenApiRouter;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(api_routes!(login))
        .routes(api_routes!(logout))
        .routes(api_routes!(forgot_password))
        .routes(api_routes!(reset_password))
        .routes(api_routes!(accept_invite))
}

/// Log in with email, password and (when enabled) a TOTP code; sets the session cookie.
///
/// Rate-limited to 10 attempts per minute per client IP, successful or not. A user with
/// TOTP enabled who sends no code gets 401 `totp_required`, a wrong or replayed one
/// 401 `totp_invalid`. `totp_code` also takes one of the user's recovery codes
/// (`abcd-efgh-ijkl-mnop`, dashes optional), each good for one login.
#[utoipa::path(post, path = "/auth/login", tag = "auth", request_body = LoginRequest,
    responses(
        (status = 200, description = "Logged in; `Set-Cookie: trusthub_session=...`", body = UserEnvelope),
        (status = 401, description = "Wrong credentials or TOTP", body = Problem),
        (status = 429, description = "Too many attempts", body = Problem)))]
pub(crate) async fn login(
    State(state): State<AppState>,
    meta: Meta,
    Json(req): Json<LoginRequest>,
) -> ApiResult<Response> {
    let user = authenticate(
        &state,
        &meta,
        &req.email,
        req.password,
        req.totp_code.as_deref(),
    )
    .await?;
    start_session(&state, &user, &meta, StatusCode::OK).await
}

/// End the current session and clear its cookie.
#[utoipa::path(post, path = "/auth/logout", tag = "auth",
    responses((status = 204, description = "Session ended"), (status = 401, body = Problem)))]
pub(crate) async fn logout(
    State(state): State<AppState>,
    meta: Meta,
    SessionUser(p): SessionUser,
) -> ApiResult<Response> {
    let Credential::Session { session_id } = p.credential else {
        return Err(ApiError::unauthenticated());
    };
    let mut tx = state.db.begin().await?;
    sessions::delete(&mut tx, p.tenant(), session_id).await?;
    meta.record(&mut tx, &p, ev::LOGOUT, p.actor(), json!({}))
        .await?;
    tx.commit().await?;
    let mut resp = StatusCode::NO_CONTENT.into_response();
    resp.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static("trusthub_session=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0"),
    );
    Ok(resp)
}

/// Ask for a password-reset mail. Always 202, so it reveals nothing about which emails
/// exist; the mail (valid one hour) goes out only when the email is known and SMTP is set.
/// Rate-limited to 5 per hour per client IP.
#[utoipa::path(post, path = "/auth/forgot-password", tag = "auth", request_body = ForgotPasswordRequest,
    responses((status = 202, body = Accepted), (status = 429, body = Problem)))]
pub(crate) async fn forgot_password(
    State(state): State<AppState>,
    meta: Meta,
    Json(req): Json<ForgotPasswordRequest>,
) -> ApiResult<(StatusCode, axum::Json<Accepted>)> {
    service::forgot_password(&state, &meta, req)
        .await
        .map(|(status, v)| (status, axum::Json(v)))
}

/// Set a new password with a reset token. Ends every session of the user and voids the
/// user's other reset tokens.
///
/// Beyond the schema: the token must be one the hub issued, unexpired and unused.
#[utoipa::path(post, path = "/auth/reset-password", tag = "auth", request_body = TokenPassword,
    responses((status = 204, description = "Password changed"), (status = 422, body = Problem)))]
pub(crate) async fn reset_password(
    State(state): State<AppState>,
    meta: Meta,
    Json(req): Json<TokenPassword>,
) -> ApiResult<StatusCode> {
    service::reset_password(&state, &meta, req).await
}

/// Accept an invitation: creates the user with the invited role and logs them in.
///
/// Beyond the schema: the token must be one the hub issued, unexpired and unused.
#[utoipa::path(post, path = "/auth/accept-invite", tag = "auth", request_body = TokenPassword,
    responses((status = 201, description = "User created and logged in", body = UserEnvelope),
        (status = 409, description = "The email became a user meanwhile", body = Problem),
        (status = 422, body = Problem)))]
pub(crate) async fn accept_invite(
    State(state): State<AppState>,
    meta: Meta,
    Json(req): Json<TokenPassword>,
) -> ApiResult<Response> {
    service::accept_invite(&state, &meta, req).await
}
