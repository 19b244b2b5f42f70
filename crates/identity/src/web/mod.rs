//! Identity's dashboard pages (users and invitations, the signed-in user's settings) and the
//! signed-in dashboard user every page takes ([`WebUser`]).

pub mod audit;
pub mod settings;
pub mod signin;
pub mod users;

pub use trusthub_platform::page::*;
use trusthub_platform::qr;

use crate::auth::{Credential, Principal};
use crate::error::ApiError;
use crate::state::AppState;
use axum::Router;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use trusthub_core::Role;

/// Identity's dashboard pages (merged at the root by the composition root, which adds the
/// page layers).
pub fn pages() -> Router<AppState> {
    Router::new()
        .route("/login", get(signin::login_form).post(signin::login))
        .route("/logout", post(signin::logout))
        .route("/ui/audit", get(audit::audit_log))
        .route("/ui/settings", get(settings::settings))
        .route("/ui/settings/password", post(settings::change_password))
        .route("/ui/settings/totp/setup", post(settings::totp_setup))
        .route("/ui/settings/totp/verify", post(settings::totp_verify))
        .route("/ui/settings/totp/disable", post(settings::totp_disable))
        .route(
            "/ui/settings/totp/recovery-codes",
            post(settings::recovery_codes),
        )
        .route("/ui/settings/tokens", post(settings::create_token))
        .route(
            "/ui/settings/tokens/{id}/delete",
            post(settings::delete_token),
        )
        .route("/ui/users", get(users::list))
        .route("/ui/users/{id}/role", post(users::change_role))
        .route("/ui/users/{id}/remove", post(users::remove))
        .route("/ui/users/invitations", post(users::invite))
        .route(
            "/ui/users/invitations/{id}/revoke",
            post(users::revoke_invite),
        )
        .route(
            "/invite",
            get(users::invite_form).post(users::accept_invite),
        )
        .route(
            "/reset-password",
            get(users::reset_form).post(users::reset_password),
        )
}

/// A signed-in dashboard user; without a session, pages redirect to `/login`.
#[derive(Debug, Clone)]
pub struct WebUser {
    /// Who.
    pub principal: Principal,
    /// The session's CSRF token, for forms.
    pub csrf: String,
}

impl WebUser {
    /// Refuses a form whose CSRF token is not this session's.
    pub fn check_csrf(&self, sent: &str) -> Result<(), ApiError> {
        if sent.len() == self.csrf.len()
            && sent
                .bytes()
                .zip(self.csrf.bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
        {
            Ok(())
        } else {
            Err(ApiError::Forbidden(
                "the form's CSRF token is missing or stale; reload the page".into(),
            ))
        }
    }
}

impl FromRequestParts<AppState> for WebUser {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let to_login = |parts: &Parts| {
            let path = parts.uri.path();
            let next = if path.starts_with('/') && !path.starts_with("//") && path != "/" {
                format!("/login?next={}", path)
            } else {
                "/login".into()
            };
            Redirect::to(&next).into_response()
        };
        match crate::auth::resolve(parts, state).await {
            Ok(p) if matches!(p.credential, Credential::Session { .. }) => {
                let cookie = crate::auth::cookie_value(parts, crate::auth::SESSION_COOKIE)
                    .unwrap_or_default()
                    .to_owned();
                Ok(WebUser {
                    csrf: csrf_token(&cookie),
                    principal: p,
                })
            }
            Ok(_) => Err(to_login(parts)),
            Err(ApiError::Forbidden(m)) => Err(ApiError::Forbidden(m).into_response()),
            Err(ApiError::Unauthenticated(_)) => Err(to_login(parts)),
            Err(e) => Err(e.into_response()),
        }
    }
}

/// A dashboard form, as a page handler takes it: the signed-in user, the form's CSRF token
/// checked against the session, the user in role `R` (403 below it), and the rest of the
/// form read strictly as `F` ([`parse_form`]: a malformed form is 400, a misspelt or missing
/// field 422 naming it). The handler names the role in its signature, as API handlers do:
/// `Act { by, user, form }: Act<Owner, RoleForm>`.
#[derive(Debug)]
pub struct Act<R, F> {
    /// The user in the role the handler requires.
    pub by: R,
    /// The signed-in user (for the page the answer shows).
    pub user: WebUser,
    /// The form, without its `csrf` field.
    pub form: F,
}

/// Largest form a page takes.
const FORM_MAX_BYTES: usize = 1024 * 1024;

impl<R, F> axum::extract::FromRequest<AppState> for Act<R, F>
where
    R: crate::auth::Acting + Send,
    F: serde::de::DeserializeOwned + Send,
{
    type Rejection = Response;

    async fn from_request(req: axum::extract::Request, state: &AppState) -> Result<Self, Response> {
        let (mut parts, body) = req.into_parts();
        let user = WebUser::from_request_parts(&mut parts, state).await?;
        let raw = axum::body::to_bytes(body, FORM_MAX_BYTES)
            .await
            .map_err(|_| {
                ApiError::TooLarge("the form is larger than 1 MiB".into()).into_response()
            })?;
        let pairs: Vec<(String, String)> = serde_urlencoded::from_bytes(&raw)
            .map_err(|_| ApiError::BadRequest("the form cannot be read".into()).into_response())?;
        let csrf = pairs
            .iter()
            .find(|(k, _)| k == "csrf")
            .map(|(_, v)| v.as_str())
            .unwrap_or_default();
        let by = user
            .check_csrf(csrf)
            .and_then(|()| R::of(&user.principal))
            .map_err(IntoResponse::into_response)?;
        let rest: Vec<(String, String)> = pairs.into_iter().filter(|(k, _)| k != "csrf").collect();
        let form = form_of(&rest).map_err(IntoResponse::into_response)?;
        Ok(Act { by, user, form })
    }
}

impl From<&WebUser> for UserBar {
    fn from(u: &WebUser) -> Self {
        UserBar {
            email: u.principal.user.email.clone(),
            role: u.principal.user.role.to_string(),
            csrf: u.csrf.clone(),
            admin: u.principal.has_role(Role::Admin),
            owner: u.principal.has_role(Role::Owner),
        }
    }
}

/// Whether `user` may do what needs `role` (a form's CSRF token is [`Act`]'s to check).
/// The server's refusal behind every hidden control.
pub fn allowed(user: &WebUser, role: Role) -> Result<(), ApiError> {
    crate::auth::check_role(&user.principal, role)
}
