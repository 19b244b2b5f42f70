//! The services behind [`crate::routes::auth`]: what its handlers, the dashboard's
//! pages and other capabilities call.

use crate::auth::{SESSION_COOKIE, check_code};
use crate::error::{ApiError, ApiResult};
use crate::extract::Meta;
use crate::state::{AppState, now};
use crate::store::users::User;
use crate::store::{invitations, password_resets, sessions, users};
use crate::views::{UserEnvelope, UserView};
use crate::{passwords, ratelimit};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::json;
use trusthub_core::secret::{ONE_TIME_PREFIX, SESSION_PREFIX, new_token, token_hash};
use trusthub_core::{audit as ev, validate};
use trusthub_store::audit;
use utoipa::ToSchema;

/// Lifetime of a password-reset token.
pub(crate) const RESET_TTL: time::Duration = time::Duration::hours(1);

/// Login credentials.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LoginRequest {
    /// Email.
    pub email: String,
    /// Password.
    pub password: String,
    /// Current TOTP code (or an unused recovery code), required when the user has TOTP
    /// enabled.
    #[serde(default)]
    pub totp_code: Option<String>,
}

/// Starts a session for `user` and builds the response with its cookie.
pub async fn start_session(
    state: &AppState,
    user: &User,
    meta: &Meta,
    status: StatusCode,
) -> ApiResult<Response> {
    let token = new_token(SESSION_PREFIX).map_err(|e| ApiError::Internal(e.to_string()))?;
    let now = now();
    let ttl = crate::settings::of(&state.settings)
        .session_ttl_secs
        .max(60);
    let mut tx = state.db.begin().await?;
    sessions::insert(
        &mut tx,
        user.tenant_id,
        user.id,
        &token_hash(&token),
        now,
        now + time::Duration::seconds(ttl),
        Some(&meta.ip.to_string()),
        meta.user_agent.as_deref(),
    )
    .await?;
    audit::append(
        &mut tx,
        user.tenant_id,
        &meta.audit(
            ev::LOGIN_SUCCEEDED,
            audit::user_actor(user.id),
            audit::user_actor(user.id),
            json!({}),
        ),
        now,
    )
    .await?;
    tx.commit().await?;
    let secure = if state.settings.tls_enabled() {
        "; Secure"
    } else {
        ""
    };
    let cookie =
        format!("{SESSION_COOKIE}={token}; Path=/; HttpOnly; SameSite=Lax; Max-Age={ttl}{secure}");
    let mut resp = (
        status,
        axum::Json(UserEnvelope {
            user: UserView::from(user),
        }),
    )
        .into_response();
    resp.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_str(&cookie).map_err(|e| ApiError::Internal(e.to_string()))?,
    );
    Ok(resp)
}

/// Checks email, password and (when the user has TOTP on) a TOTP or recovery code, with the
/// login rate limit and the audit rows of refusals; the user on success. Shared by the API
/// login and the dashboard's sign-in form.
pub async fn authenticate(
    state: &AppState,
    meta: &Meta,
    email: &str,
    password: String,
    totp_code: Option<&str>,
) -> ApiResult<User> {
    let user = check_password(state, meta, email, password).await?;
    second_factor(state, meta, &user, totp_code).await?;
    Ok(user)
}

/// The first step of a login: the rate limit, then the email and password (a refused
/// password of a known user is audited).
pub async fn check_password(
    state: &AppState,
    meta: &Meta,
    email: &str,
    password: String,
) -> ApiResult<User> {
    login_rate_limit(state, meta).await?;
    let email = email.trim().to_lowercase();
    let user = {
        let mut c = state.db.conn().await?;
        users::find_by_email_any_tenant(&mut c, &email).await?
    };
    let ok = passwords::verify(password, user.as_ref().map(|u| u.password_hash.clone())).await?;
    match user {
        Some(u) if ok => Ok(u),
        Some(u) => {
            login_failed(state, &u, meta, "password").await?;
            Err(ApiError::Unauthenticated("wrong email or password".into()))
        }
        None => Err(ApiError::Unauthenticated("wrong email or password".into())),
    }
}

/// The login rate limit (SPEC 8), per client address.
pub async fn login_rate_limit(state: &AppState, meta: &Meta) -> ApiResult<()> {
    state
        .limiter
        .hit(
            ratelimit::LOGIN,
            &meta.ip.to_string(),
            now().unix_timestamp(),
        )
        .await
        .map(drop)
}

/// The second step of a login, for a user whose password was right: nothing when TOTP is
/// off; else a current unused code, or one unused recovery code in its place.
pub async fn second_factor(
    state: &AppState,
    meta: &Meta,
    user: &User,
    totp_code: Option<&str>,
) -> ApiResult<()> {
    if !user.totp_enabled {
        return Ok(());
    }
    let Some(code) = totp_code.filter(|c| !c.trim().is_empty()) else {
        return Err(ApiError::Totp {
            status: StatusCode::UNAUTHORIZED,
            code: "totp_required",
            detail: "this user has TOTP enabled; send totp_code".into(),
        });
    };
    // Six digits are a TOTP code; anything else may be one of the recovery codes.
    if let Some(recovery) = trusthub_core::totp::normalize_recovery_code(code) {
        if !use_recovery_code(state, user, meta, &recovery).await? {
            login_failed(state, user, meta, "recovery_code").await?;
            return Err(ApiError::Totp {
                status: StatusCode::UNAUTHORIZED,
                code: "totp_invalid",
                detail: "the recovery code is wrong or was used already".into(),
            });
        }
    } else if let Err(e) = check_code(state, meta, user, code, StatusCode::UNAUTHORIZED).await {
        login_failed(state, user, meta, "totp").await?;
        return Err(e);
    }
    Ok(())
}

/// Spends one of `user`'s recovery codes; audited with the number left.
pub(crate) async fn use_recovery_code(
    state: &AppState,
    user: &User,
    meta: &Meta,
    code: &str,
) -> ApiResult<bool> {
    let now = now();
    let mut tx = state.db.begin().await?;
    let hash = trusthub_core::secret::token_hash(code);
    if !crate::store::totp::use_recovery_code(&mut tx, user.id, &hash, now).await? {
        return Ok(false);
    }
    let left = crate::store::totp::recovery_codes_left(&mut tx, user.id).await?;
    audit::append(
        &mut tx,
        user.tenant_id,
        &meta.audit(
            ev::TOTP_RECOVERY_CODE_USED,
            audit::user_actor(user.id),
            audit::user_actor(user.id),
            json!({"left": left}),
        ),
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(true)
}

/// Records a refused login of a known user in their tenant's audit log.
pub(crate) async fn login_failed(
    state: &AppState,
    user: &User,
    meta: &Meta,
    reason: &str,
) -> ApiResult<()> {
    let mut tx = state.db.begin().await?;
    audit::append(
        &mut tx,
        user.tenant_id,
        &meta.audit(
            ev::LOGIN_FAILED,
            "anonymous".into(),
            audit::user_actor(user.id),
            json!({"reason": reason}),
        ),
        now(),
    )
    .await?;
    tx.commit().await.map_err(ApiError::from)
}

/// A password-reset request.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ForgotPasswordRequest {
    /// The account's email.
    #[schema(
        pattern = r"^[^\s@<>\x00-\x1f\x7f-\x9f]+@[^\s@<>.\x00-\x1f\x7f-\x9f]+(\.[^\s@<>.\x00-\x1f\x7f-\x9f]+)+$",
        max_length = 254
    )]
    pub email: String,
}

/// The answer to a password-reset request, whether or not the email is known.
#[derive(Debug, Serialize, ToSchema)]
pub struct Accepted {
    /// Always true.
    pub accepted: bool,
}

/// A one-time token and the new password.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenPassword {
    /// The token from the mail (or the invitation).
    pub token: String,
    /// The new password, at least 8 characters.
    #[schema(min_length = 8, max_length = 256)]
    pub password: String,
}

/// The service behind the `reset_password` handler, for the API and the dashboard alike (the token
/// is the caller's credential).
pub async fn reset_password(
    state: &AppState,
    meta: &Meta,
    req: TokenPassword,
) -> ApiResult<StatusCode> {
    validate::password(&req.password).map_err(|m| ApiError::invalid("password", m))?;
    let hash = passwords::hash(req.password).await?;
    let now = now();
    let mut tx = state.db.begin().await?;
    let Some((tenant, user_id)) =
        password_resets::consume(&mut tx, &token_hash(req.token.trim()), now).await?
    else {
        return Err(ApiError::invalid(
            "token",
            "is unknown, expired or already used",
        ));
    };
    users::set_password(&mut tx, tenant, user_id, &hash, now).await?;
    let ended = sessions::delete_for_user(&mut tx, tenant, user_id).await?;
    password_resets::revoke_for_user(&mut tx, tenant, user_id, now).await?;
    audit::append(
        &mut tx,
        tenant,
        &meta.audit(
            ev::PASSWORD_RESET,
            audit::user_actor(user_id),
            audit::user_actor(user_id),
            json!({"via": "token", "sessions_ended": ended}),
        ),
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The service behind the `accept_invite` handler, for the API and the dashboard alike (the token
/// is the caller's credential): the answer carries the new session's cookie.
pub async fn accept_invite(
    state: &AppState,
    meta: &Meta,
    req: TokenPassword,
) -> ApiResult<Response> {
    validate::password(&req.password).map_err(|m| ApiError::invalid("password", m))?;
    let hash = passwords::hash(req.password).await?;
    let now = now();
    let mut tx = state.db.begin().await?;
    let Some(inv) = invitations::accept(&mut tx, &token_hash(req.token.trim()), now).await? else {
        return Err(ApiError::invalid(
            "token",
            "is unknown, expired or already used",
        ));
    };
    let user = match users::insert(&mut tx, inv.tenant_id, &inv.email, &hash, inv.role, now).await {
        Ok(u) => u,
        Err(trusthub_store::StoreError::Conflict(_)) => {
            return Err(ApiError::Conflict(format!(
                "{} is already a user",
                inv.email
            )));
        }
        Err(e) => return Err(e.into()),
    };
    audit::append(
        &mut tx,
        inv.tenant_id,
        &meta.audit(
            ev::INVITATION_ACCEPTED,
            audit::user_actor(user.id),
            format!("invitation:{}", inv.id),
            json!({"role": inv.role, "email": inv.email}),
        ),
        now,
    )
    .await?;
    tx.commit().await?;
    start_session(state, &user, meta, StatusCode::CREATED).await
}

/// The service behind the `forgot_password` handler, for the API and the dashboard alike.
pub async fn forgot_password(
    state: &AppState,
    meta: &Meta,
    req: ForgotPasswordRequest,
) -> ApiResult<(StatusCode, Accepted)> {
    state
        .limiter
        .hit(
            ratelimit::FORGOT_PASSWORD,
            &meta.ip.to_string(),
            now().unix_timestamp(),
        )
        .await?;
    let email = validate::email(&req.email).map_err(|m| ApiError::invalid("email", m))?;
    let user = {
        let mut c = state.db.conn().await?;
        users::find_by_email_any_tenant(&mut c, &email).await?
    };
    if let Some(user) = user {
        let token = new_token(ONE_TIME_PREFIX).map_err(|e| ApiError::Internal(e.to_string()))?;
        let now = now();
        let mut tx = state.db.begin().await?;
        password_resets::insert(
            &mut tx,
            user.tenant_id,
            user.id,
            &token_hash(&token),
            now,
            now + RESET_TTL,
        )
        .await?;
        audit::append(
            &mut tx,
            user.tenant_id,
            &meta.audit(
                ev::PASSWORD_RESET_REQUESTED,
                "anonymous".into(),
                audit::user_actor(user.id),
                json!({"mailed": state.mailer.is_some()}),
            ),
            now,
        )
        .await?;
        tx.commit().await?;
        match &state.mailer {
            Some(m) => m.send_later(
                &user.email,
                "Reset your Trusthub password",
                format!(
                    "Someone asked to reset the Trusthub password of {email}.\n\n\
                     To choose a new password, open\n{base}/reset-password?token={token}\n\n\
                     or POST {{\"token\": \"{token}\", \"password\": \"...\"}} to\n\
                     {base}/api/v1/auth/reset-password\n\nToken: {token}\n\n\
                     The token works once, for one hour. If you did not ask for this, ignore this mail.\n",
                    base = state.public_url
                ),
            ),
            None => tracing::warn!("password reset requested but TRUSTHUB_SMTP_URL is not set; no mail sent"),
        }
    }
    Ok((StatusCode::ACCEPTED, Accepted { accepted: true }))
}
