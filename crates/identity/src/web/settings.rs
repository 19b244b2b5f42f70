//! Settings: my account (password, TOTP with a QR code drawn on the server, recovery codes)
//! and API tokens. Every change goes through the API's own handler, with the same checks and
//! audit records; secrets (TOTP secret, recovery codes, tokens) appear in the one answer
//! that made them.

use super::{ASSETS, Assets, Flash, WebUser, form_error, qr};
use super::{Act, NoFields};
use super::{UserBar, ago};
use crate::auth::{SessionUser, Viewer};
use crate::error::{ApiError, ApiResult};
use crate::extract::Meta;
use crate::service::{api_tokens, me, totp};
use crate::state::{AppState, now};
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect};
use serde::Deserialize;
use trusthub_core::Role;
use trusthub_platform::page::{PageResult, render};

/// One API token (never the token).
#[derive(Debug)]
struct TokenRow {
    id: String,
    name: String,
    scope: String,
    hint: String,
    owner: String,
    expires: String,
    last_used: String,
}

/// A TOTP enrolment in progress: the QR code and the secret for typing in.
#[derive(Debug)]
struct Enrolment {
    qr: String,
    secret: String,
}

#[derive(Template)]
#[template(path = "settings.html")]
struct SettingsPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    csrf: String,
    email: String,
    role: String,
    totp_enabled: bool,
    enrolment: Option<Enrolment>,
    recovery_codes: Vec<String>,
    tokens: Vec<TokenRow>,
    scopes: Vec<&'static str>,
    flash: Flash,
}

async fn page(state: &AppState, user: &WebUser, flash: Flash, status: StatusCode) -> PageResult {
    page_with(state, user, None, Vec::new(), flash, status).await
}

async fn page_with(
    state: &AppState,
    user: &WebUser,
    enrolment: Option<Enrolment>,
    recovery_codes: Vec<String>,
    flash: Flash,
    status: StatusCode,
) -> PageResult {
    let p = &user.principal;
    let mut c = state.db.conn().await?;
    // Read again: a form of this very request may just have turned TOTP on or off.
    let me = crate::store::users::get(&mut c, p.tenant(), p.user.id)
        .await?
        .ok_or(ApiError::NotFound("user"))?;
    drop(c);
    let listed = api_tokens::list(state, &Viewer::of(p)?).await?;
    let emails: std::collections::HashMap<uuid::Uuid, String> = if p.has_role(Role::Admin) {
        let mut c = state.db.conn().await?;
        crate::store::users::list(&mut c, p.tenant())
            .await?
            .into_iter()
            .map(|u| (u.id, u.email))
            .collect()
    } else {
        std::collections::HashMap::new()
    };
    let now = now();
    let page = SettingsPage {
        assets: &ASSETS,
        user: Some(UserBar::from(user)),
        csrf: user.csrf.clone(),
        email: me.email.clone(),
        role: me.role.to_string(),
        totp_enabled: me.totp_enabled,
        enrolment,
        recovery_codes,
        tokens: listed
            .into_iter()
            .map(|t| TokenRow {
                id: t.id.to_string(),
                name: t.name,
                scope: t.scope.as_str().to_owned(),
                hint: t.token_hint,
                owner: emails
                    .get(&t.user_id)
                    .cloned()
                    .unwrap_or_else(|| me.email.clone()),
                expires: t
                    .expires_at
                    .map(|e| e.date().to_string())
                    .unwrap_or_else(|| "never".into()),
                last_used: ago(t.last_used_at, now),
            })
            .collect(),
        scopes: vec!["read", "write", "ai_ingest"],
        flash,
    };
    render(page.render(), status)
}

/// Shows the page again with what went wrong, or answers with the error itself.
async fn refused(state: &AppState, user: &WebUser, e: ApiError) -> PageResult {
    let (status, message) = form_error(e)?;
    page(state, user, Flash::error(message), status).await
}

/// `GET /ui/settings`.
pub async fn settings(State(state): State<AppState>, user: WebUser) -> PageResult {
    page(&state, &user, Flash::default(), StatusCode::OK).await
}

/// The password form.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PasswordForm {
    current_password: String,
    new_password: String,
}

/// `POST /ui/settings/password`: every session ends (this one too), so the answer is the
/// sign-in page.
pub async fn change_password(
    State(state): State<AppState>,
    meta: Meta,
    Act { user, form: f, .. }: Act<Viewer, PasswordForm>,
) -> PageResult {
    let req = me::PasswordChange {
        current_password: f.current_password,
        new_password: f.new_password,
    };
    match me::change_password(&state, &meta, &SessionUser(user.principal.clone()), req).await {
        Ok(_) => Ok(Redirect::to("/login?changed=password").into_response()),
        Err(e) => refused(&state, &user, e).await,
    }
}

/// `POST /ui/settings/totp/setup`: a new secret, shown as a QR code and as text.
pub async fn totp_setup(
    State(state): State<AppState>,
    Act { user, .. }: Act<Viewer, NoFields>,
) -> PageResult {
    match totp::setup(&state, &SessionUser(user.principal.clone())).await {
        Ok(s) => {
            let enrolment =
                qr::svg(&s.otpauth_uri, "QR code of the TOTP secret").map(|qr| Enrolment {
                    qr,
                    secret: s.secret_base32,
                });
            page_with(
                &state,
                &user,
                enrolment,
                Vec::new(),
                Flash::default(),
                StatusCode::OK,
            )
            .await
        }
        Err(e) => refused(&state, &user, e).await,
    }
}

/// A form carrying a TOTP code (its CSRF token checked by [`Act`]).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodeForm {
    code: String,
}

/// The TOTP forms: hands the code to `call` (the identity service, which checks it), then
/// shows the page with the recovery codes `call` made (if any) and `notice`, or the refusal.
async fn with_code<Fut>(
    state: &AppState,
    user: &WebUser,
    f: CodeForm,
    notice: &str,
    call: impl FnOnce(totp::CodeRequest) -> Fut,
) -> PageResult
where
    Fut: std::future::Future<Output = ApiResult<Vec<String>>>,
{
    let req = totp::CodeRequest {
        code: f.code.trim().to_owned(),
    };
    match call(req).await {
        Ok(codes) => {
            page_with(
                state,
                user,
                None,
                codes,
                Flash::notice(notice),
                StatusCode::OK,
            )
            .await
        }
        Err(e) => refused(state, user, e).await,
    }
}

/// `POST /ui/settings/totp/verify`: TOTP on; the recovery codes are shown this once.
pub async fn totp_verify(
    State(state): State<AppState>,
    meta: Meta,
    Act { user, form: f, .. }: Act<Viewer, CodeForm>,
) -> PageResult {
    let p = SessionUser(user.principal.clone());
    let call = |req| async {
        totp::verify(&state, &meta, &p, req)
            .await
            .map(|s| s.recovery_codes.unwrap_or_default())
    };
    let notice = "TOTP is on. Sign-ins and sensitive actions ask for a code.";
    with_code(&state, &user, f, notice, call).await
}

/// `POST /ui/settings/totp/disable` (a current code).
pub async fn totp_disable(
    State(state): State<AppState>,
    meta: Meta,
    Act { user, form: f, .. }: Act<Viewer, CodeForm>,
) -> PageResult {
    let p = SessionUser(user.principal.clone());
    let call = |req| async {
        totp::disable(&state, &meta, &p, req)
            .await
            .map(|_| Vec::new())
    };
    with_code(&state, &user, f, "TOTP is off.", call).await
}

/// `POST /ui/settings/totp/recovery-codes` (a current code): ten new codes, the old ones void.
pub async fn recovery_codes(
    State(state): State<AppState>,
    meta: Meta,
    Act { user, form: f, .. }: Act<Viewer, CodeForm>,
) -> PageResult {
    let p = SessionUser(user.principal.clone());
    let call = |req| async {
        totp::recovery_codes(&state, &meta, &p, req)
            .await
            .map(|r| r.recovery_codes)
    };
    let notice = "New recovery codes; the old ones no longer work.";
    with_code(&state, &user, f, notice, call).await
}

/// The new-token form.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenForm {
    name: String,
    scope: String,
    /// A date (`YYYY-MM-DD`, end of that day UTC) or empty for no expiry.
    #[serde(default)]
    expires: String,
}

/// `POST /ui/settings/tokens`: the token is shown in this answer only.
pub async fn create_token(
    State(state): State<AppState>,
    meta: Meta,
    Act { user, form: f, .. }: Act<Viewer, TokenForm>,
) -> PageResult {
    let expires_at = match f.expires.trim() {
        "" => None,
        d => {
            match time::Date::parse(d, time::macros::format_description!("[year]-[month]-[day]")) {
                Ok(d) => Some(d.with_hms(23, 59, 59).expect("valid time").assume_utc()),
                Err(_) => {
                    return refused(
                        &state,
                        &user,
                        ApiError::invalid("expires", "must be a date, YYYY-MM-DD"),
                    )
                    .await;
                }
            }
        }
    };
    let req = api_tokens::NewApiToken {
        name: f.name,
        scope: f.scope,
        expires_at,
        service: None,
    };
    match api_tokens::create(&state, &meta, &SessionUser(user.principal.clone()), req).await {
        Ok(t) => {
            page(
                &state,
                &user,
                Flash::secret(
                    format!("Token “{}” created ({} scope)", t.name, t.scope.as_str()),
                    t.token,
                ),
                StatusCode::CREATED,
            )
            .await
        }
        Err(e) => refused(&state, &user, e).await,
    }
}

/// `POST /ui/settings/tokens/{id}/delete`.
pub async fn delete_token(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path(id): axum::extract::Path<uuid::Uuid>,
    Act { by, user, .. }: Act<Viewer, NoFields>,
) -> PageResult {
    match api_tokens::delete(&state, &meta, &by, id).await {
        Ok(_) => Ok(Redirect::to("/ui/settings").into_response()),
        Err(e) => refused(&state, &user, e).await,
    }
}
