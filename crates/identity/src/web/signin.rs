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
    /// At the code step: the sealed proof that the password was right, so the code step
    /// asks only for the code.
    pending: String,
    /// The form's target, keeping where to go after signing in.
    action: String,
    notice: Option<&'static str>,
    /// Where the first start's generated password is, while that file is there (the hub
    /// removes it once someone has signed in); empty otherwise.
    password_file: String,
}

/// The first start's password file, while it is there and nobody has signed in yet (the
/// hub removes it at the next start after that); empty otherwise.
async fn password_file(state: &AppState) -> String {
    let file = state.settings.db.data_dir.join("initial-admin.txt");
    if !file.is_file() {
        return String::new();
    }
    let nobody_yet = match state.db.conn().await {
        Ok(mut c) => matches!(
            trusthub_store::meta::anyone_logged_in(&mut c).await,
            Ok(false)
        ),
        Err(_) => false,
    };
    if nobody_yet {
        file.display().to_string()
    } else {
        String::new()
    }
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
pub async fn login_form(State(state): State<AppState>, Query(q): Query<Next>) -> Response {
    let page = LoginPage {
        assets: &ASSETS,
        user: None,
        error: None,
        email: String::new(),
        totp: false,
        pending: String::new(),
        action: login_action(q.next.as_deref()),
        notice: (q.changed.as_deref() == Some("password")).then_some(
            "Your password was changed and every session ended; sign in with the new one.",
        ),
        password_file: password_file(&state).await,
    };
    html(page.render(), StatusCode::OK)
}

/// The sign-in form (either step), read strictly ([`parse_form`]).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoginForm {
    email: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    totp_code: Option<String>,
    /// The code step's sealed proof of the password step.
    #[serde(default)]
    pending: Option<String>,
}

const PENDING_CONTEXT: &str = "trusthub login pending v1";
/// How long the code step waits for its code.
const PENDING_SECS: i64 = 300;

/// What the code step carries between the two requests: who passed the password step,
/// until when, and a digest of the password hash then (a password changed meanwhile voids
/// it). Sealed with the hub key: the browser can neither read nor forge it.
#[derive(Debug, serde::Serialize, Deserialize)]
struct Pending {
    tenant: uuid::Uuid,
    user: uuid::Uuid,
    until: i64,
    password: String,
}

fn password_digest(user: &crate::store::users::User) -> String {
    use sha2::Digest as _;
    data_encoding::HEXLOWER.encode(&sha2::Sha256::digest(user.password_hash.as_bytes())[..16])
}

fn seal_pending(state: &AppState, user: &crate::store::users::User) -> String {
    let pending = Pending {
        tenant: user.tenant_id.0,
        user: user.id,
        until: crate::state::now().unix_timestamp() + PENDING_SECS,
        password: password_digest(user),
    };
    serde_json::to_vec(&pending)
        .ok()
        .and_then(|plain| state.key.seal(PENDING_CONTEXT, &plain).ok())
        .map(|sealed| data_encoding::HEXLOWER.encode(&sealed))
        .unwrap_or_default()
}

/// The user a code step's `pending` names, while it is valid.
async fn open_pending(
    state: &AppState,
    pending: &str,
) -> ApiResult<Option<crate::store::users::User>> {
    let Some(p) = data_encoding::HEXLOWER
        .decode(pending.as_bytes())
        .ok()
        .and_then(|sealed| state.key.open(PENDING_CONTEXT, &sealed).ok())
        .and_then(|plain| serde_json::from_slice::<Pending>(&plain).ok())
        .filter(|p| p.until >= crate::state::now().unix_timestamp())
    else {
        return Ok(None);
    };
    let mut c = state.db.conn().await?;
    let user = crate::store::users::get(&mut c, trusthub_store::TenantId(p.tenant), p.user).await?;
    Ok(user.filter(|u| password_digest(u) == p.password))
}

/// `POST /login`: the API's checks (rate limit, TOTP or a recovery code, audit), then the
/// session cookie and a redirect.
pub async fn login(
    State(state): State<AppState>,
    meta: Meta,
    headers: axum::http::HeaderMap,
    Query(next): Query<Next>,
    body: axum::body::Bytes,
) -> Response {
    // Login CSRF: a sign-in posted from another site is refused, and starts no session.
    if !crate::auth::posted_from_here(&headers) {
        return ApiError::Forbidden(
            "this sign-in did not come from this site's sign-in page; open the sign-in page and try again".into(),
        )
        .into_response();
    }
    let form: LoginForm = match parse_form(&body) {
        Ok(form) => form,
        Err(e) => return e.into_response(),
    };
    let code = form.totp_code.as_deref().filter(|c| !c.trim().is_empty());
    let file_hint = password_file(&state).await;
    let page = |error: String, email: String, pending: String, status: StatusCode| {
        let page = LoginPage {
            assets: &ASSETS,
            user: None,
            error: Some(error),
            email,
            totp: !pending.is_empty(),
            pending,
            action: login_action(next.next.as_deref()),
            notice: None,
            password_file: file_hint.clone(),
        };
        html(page.render(), status)
    };
    // The first step (email and password), or the code step's sealed proof of it.
    let checked = match form.pending.as_deref().filter(|p| !p.is_empty()) {
        Some(pending) => match crate::service::auth::login_rate_limit(&state, &meta).await {
            Err(e) => Err(e),
            Ok(()) => match open_pending(&state, pending).await {
                Ok(Some(user)) => Ok(user),
                Ok(None) => {
                    return page(
                        "The sign-in took too long or is no longer valid; enter your password again."
                            .into(),
                        form.email.clone(),
                        String::new(),
                        StatusCode::UNAUTHORIZED,
                    );
                }
                Err(e) => Err(e),
            },
        },
        None if form.email.trim().is_empty() || form.password.is_empty() => {
            return page(
                "Enter your email and password.".into(),
                form.email.clone(),
                String::new(),
                StatusCode::UNPROCESSABLE_ENTITY,
            );
        }
        None => {
            crate::service::auth::check_password(&state, &meta, &form.email, form.password.clone())
                .await
        }
    };
    let user = match checked {
        Ok(user) => user,
        Err(e @ ApiError::RateLimited(_)) => {
            return page(
                e.to_string(),
                form.email.clone(),
                form.pending.clone().unwrap_or_default(),
                StatusCode::TOO_MANY_REQUESTS,
            );
        }
        Err(ApiError::Unauthenticated(m)) => {
            return page(
                m,
                form.email.clone(),
                String::new(),
                StatusCode::UNAUTHORIZED,
            );
        }
        Err(e) => return e.into_response(),
    };
    match crate::service::auth::second_factor(&state, &meta, &user, code).await {
        Ok(()) => {}
        // The password was right: the code step asks for the code only, the password kept
        // sealed in the page instead of typed again.
        Err(ApiError::Totp { code, detail, .. }) => {
            return page(
                if code == "totp_required" {
                    "Enter the code from your authenticator app (or a recovery code).".into()
                } else {
                    detail
                },
                user.email.clone(),
                seal_pending(&state, &user),
                StatusCode::UNAUTHORIZED,
            );
        }
        Err(e @ ApiError::RateLimited(_)) => {
            return page(
                e.to_string(),
                user.email.clone(),
                seal_pending(&state, &user),
                StatusCode::TOO_MANY_REQUESTS,
            );
        }
        Err(e) => return e.into_response(),
    }
    match crate::service::auth::start_session(&state, &user, &meta, StatusCode::OK).await {
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

/// `POST /logout` (CSRF token required).
pub async fn logout(
    State(state): State<AppState>,
    meta: Meta,
    Act { user, .. }: Act<crate::auth::Viewer, NoFields>,
) -> Response {
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
