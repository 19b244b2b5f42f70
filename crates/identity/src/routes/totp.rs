//! TOTP enrolment and challenges (CONTRACT 3).

use crate::auth::SessionUser;
use crate::error::{ApiResult, Problem};
use crate::extract::{Json, Meta};
use crate::openapi::api_routes;
use crate::service::totp::{self as service, *};
use crate::state::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use utoipa_axum::router::OpenApiRouter;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(api_routes!(setup))
        .routes(api_routes!(verify))
        .routes(api_routes!(disable))
        .routes(api_routes!(challenge))
        .routes(api_routes!(recovery_codes))
}

/// Start TOTP enrolment: a new secret, stored sealed with the hub key, active only after
/// `/auth/totp/verify`. Calling it again before verifying replaces the pending secret.
#[utoipa::path(post, path = "/auth/totp/setup", tag = "totp",
    responses((status = 200, body = TotpSetup), (status = 409, description = "TOTP already on", body = Problem)))]
pub(crate) async fn setup(
    State(state): State<AppState>,
    by: SessionUser,
) -> ApiResult<axum::Json<TotpSetup>> {
    service::setup(&state, &by).await.map(axum::Json)
}

/// Finish enrolment with a code from the app; from now on login asks for a code.
#[utoipa::path(post, path = "/auth/totp/verify", tag = "totp", request_body = CodeRequest,
    responses((status = 200, body = TotpStatus), (status = 403, description = "`totp_invalid`", body = Problem), (status = 429, description = "`totp_locked` (five wrong codes within 15 minutes lock every TOTP-gated action for 15 minutes; `Retry-After`), or `rate_limited`", body = Problem),
        (status = 409, description = "No pending secret, or already on", body = Problem)))]
pub(crate) async fn verify(
    State(state): State<AppState>,
    meta: Meta,
    by: SessionUser,
    Json(req): Json<CodeRequest>,
) -> ApiResult<axum::Json<TotpStatus>> {
    service::verify(&state, &meta, &by, req)
        .await
        .map(axum::Json)
}

/// Turn TOTP off; needs a current code.
#[utoipa::path(post, path = "/auth/totp/disable", tag = "totp", request_body = CodeRequest,
    responses((status = 200, body = TotpStatus), (status = 403, description = "`totp_invalid` or `totp_not_enrolled`", body = Problem), (status = 429, description = "`totp_locked` (five wrong codes within 15 minutes lock every TOTP-gated action for 15 minutes; `Retry-After`), or `rate_limited`", body = Problem)))]
pub(crate) async fn disable(
    State(state): State<AppState>,
    meta: Meta,
    by: SessionUser,
    Json(req): Json<CodeRequest>,
) -> ApiResult<axum::Json<TotpStatus>> {
    service::disable(&state, &meta, &by, req)
        .await
        .map(axum::Json)
}

/// Make new recovery codes (needs a current TOTP code): ten single-use codes shown once;
/// the previous ones stop working. For when the old ones were used up or may be exposed.
#[utoipa::path(post, path = "/auth/totp/recovery-codes", tag = "totp", request_body = CodeRequest,
    responses((status = 200, body = RecoveryCodes), (status = 403, description = "`totp_invalid` or `totp_not_enrolled`", body = Problem), (status = 429, description = "`totp_locked` (five wrong codes within 15 minutes lock every TOTP-gated action for 15 minutes; `Retry-After`), or `rate_limited`", body = Problem)))]
pub(crate) async fn recovery_codes(
    State(state): State<AppState>,
    meta: Meta,
    by: SessionUser,
    Json(req): Json<CodeRequest>,
) -> ApiResult<axum::Json<RecoveryCodes>> {
    service::recovery_codes(&state, &meta, &by, req)
        .await
        .map(axum::Json)
}

/// Trade a TOTP code for a token that proves TOTP once, within 5 minutes, for one purpose
/// (send it as `X-TOTP-Token`). Rate-limited to 10 per minute per client IP.
#[utoipa::path(post, path = "/auth/totp/challenge", tag = "totp", request_body = ChallengeRequest,
    responses((status = 201, body = ChallengeToken),
        (status = 403, description = "`totp_invalid` or `totp_not_enrolled`", body = Problem),
        (status = 429, description = "`totp_locked` (five wrong codes within 15 minutes lock every TOTP-gated action for 15 minutes; `Retry-After`), or `rate_limited`", body = Problem),
        (status = 422, description = "Unknown purpose", body = Problem)))]
pub(crate) async fn challenge(
    State(state): State<AppState>,
    meta: Meta,
    by: SessionUser,
    Json(req): Json<ChallengeRequest>,
) -> ApiResult<(StatusCode, axum::Json<ChallengeToken>)> {
    service::challenge(&state, &meta, &by, req)
        .await
        .map(|(status, v)| (status, axum::Json(v)))
}
