//! Signing in and out of the dashboard.

use super::*;
use crate::error::{ApiError, ApiResult};
use crate::extract::Meta;
use crate::state::AppState;
use askama::Template;
use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

#[derive(Template)]
#[template(path = "login.html")]
struct LoginPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    error: Option<String>,
    email: String,
    totp: bool,
    /// The form's target, keeping where to go after signing in.
    action: String,
    notice: Option<&'static str>,
}

/// Where to go after signing in: a local path only (no open redirect).
#[derive(Debug, Deserialize)]
pub struct Next {
    next: Option<String>,
    /// Why the user is here again (`password`: after changing it).
    changed: Option<String>,
}

/// `/login`, with `next` kept when it is a local path.
fn login_action(next: Option<&str>) -> String {
    match local(next) {
        "/" => "/login".into(),
        n => format!(
            "/login?next={}",
            n.replace('%', "%25")
                .replace('&', "%26")
                .replace('#', "%23")
                .replace('+', "%2B")
        ),
    }
}

/// `next` when it is a local path: `/` followed by anything but `/` or `\`, with no control
/// character and no backslash anywhere (browsers read `/\evil` as `//evil`); else `/`.
fn local(next: Option<&str>) -> &str {
    match next {
        Some(n)
            if n.starts_with('/')
                && !n[1..].starts_with(['/', '\\'])
                && !n.contains('\\')
                && !n.chars().any(char::is_control) =>
        {
            n
        }
        _ => "/",
    }
}

/// `GET /login`.
pub async fn login_form(Query(q): Query<Next>) -> Response {
    let page = LoginPage {
        assets: &ASSETS,
        user: None,
        error: None,
        email: String::new(),
        totp: false,
        action: login_action(q.next.as_deref()),
        notice: (q.changed.as_deref() == Some("password")).then_some(
            "Your password was changed and every session ended; sign in with the new one.",
        ),
    };
    html(page.render(), StatusCode::OK)
}

/// The sign-in form.
#[derive(Debug, Deserialize)]
pub struct LoginForm {
    email: String,
    password: String,
    #[serde(default)]
    totp_code: Option<String>,
}

/// `POST /login`: the API's checks (rate limit, TOTP or a recovery code, audit), then the
/// session cookie and a redirect.
pub async fn login(
    State(state): State<AppState>,
    meta: Meta,
    headers: axum::http::HeaderMap,
    Query(next): Query<Next>,
    axum::Form(form): axum::Form<LoginForm>,
) -> Response {
    // Login CSRF: a sign-in posted from another site is refused, and starts no session.
    if !crate::auth::posted_from_here(&headers) {
        return ApiError::Forbidden(
            "this sign-in did not come from this site's sign-in page; open the sign-in page and try again".into(),
        )
        .into_response();
    }
    let code = form.totp_code.as_deref().filter(|c| !c.trim().is_empty());
    let again = |error: String, totp: bool, status: StatusCode| {
        let page = LoginPage {
            assets: &ASSETS,
            user: None,
            error: Some(error),
            email: form.email.clone(),
            totp,
            action: login_action(next.next.as_deref()),
            notice: None,
        };
        html(page.render(), status)
    };
    match crate::routes::auth::authenticate(&state, &meta, &form.email, form.password.clone(), code)
        .await
    {
        Ok(user) => {
            let started =
                crate::routes::auth::start_session(&state, &user, &meta, StatusCode::OK).await;
            match started {
                Ok(resp) => {
                    let mut redirect = Redirect::to(local(next.next.as_deref())).into_response();
                    if let Some(cookie) = resp.headers().get(header::SET_COOKIE) {
                        redirect
                            .headers_mut()
                            .insert(header::SET_COOKIE, cookie.clone());
                    }
                    redirect
                }
                Err(e) => e.into_response(),
            }
        }
        Err(ApiError::Totp { code, detail, .. }) => again(
            if code == "totp_required" {
                "Enter the code from your authenticator app (or a recovery code).".into()
            } else {
                detail
            },
            true,
            StatusCode::UNAUTHORIZED,
        ),
        Err(e @ ApiError::RateLimited(_)) => {
            again(e.to_string(), code.is_some(), StatusCode::TOO_MANY_REQUESTS)
        }
        Err(ApiError::Unauthenticated(m)) => again(m, code.is_some(), StatusCode::UNAUTHORIZED),
        Err(ApiError::Validation(_)) => again(
            "Enter your email and password.".into(),
            false,
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        Err(e) => e.into_response(),
    }
}

/// `POST /logout` (CSRF token required).
pub async fn logout(
    State(state): State<AppState>,
    meta: Meta,
    user: WebUser,
    axum::Form(form): axum::Form<CsrfForm>,
) -> Response {
    if let Err(refused) = user.check_csrf(&form.csrf) {
        return refused.into_response();
    }
    let p = &user.principal;
    let crate::auth::Credential::Session { session_id } = p.credential else {
        return Redirect::to("/login").into_response();
    };
    let done: ApiResult<()> = async {
        let mut tx = state.db.begin().await?;
        crate::store::sessions::delete(&mut tx, p.tenant(), session_id).await?;
        meta.record(
            &mut tx,
            p,
            trusthub_core::audit::LOGOUT,
            p.actor(),
            serde_json::json!({}),
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }
    .await;
    if let Err(e) = done {
        return e.into_response();
    }
    let mut resp = Redirect::to("/login").into_response();
    resp.headers_mut().insert(
        header::SET_COOKIE,
        header::HeaderValue::from_static(
            "trusthub_session=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0",
        ),
    );
    resp
}
