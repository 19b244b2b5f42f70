//! The dashboard (CONTRACT 17): server-rendered pages from the hub itself — askama templates
//! (`crates/hub/templates/`, checked at compile time), one stylesheet and a vendored htmx
//! (`crates/hub/assets/`) embedded in the binary and served under content-hashed names.
//! Pages use the same sessions, store functions and roles as the API; never the JSON API
//! over HTTP.
//!
//! Every HTML answer carries the CONTRACT 17 headers ([`security_headers`]); state-changing
//! forms carry a CSRF token derived from the session ([`csrf_token`]) on top of the
//! same-origin check every cookie-authenticated change gets.

mod actions;
mod agent;
mod ai;
mod anomalies;
mod chart;
mod cve;
mod hooks;
mod pages;
mod qr;
mod rule;
mod settings;
mod slo;
mod supply_chain;
mod suppressions;
mod users;
mod vulns;

use crate::auth::{Credential, Principal};
use crate::error::ApiError;
use crate::state::AppState;
use axum::Router;
use axum::extract::{FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use sha2::{Digest, Sha256};
use std::sync::LazyLock;

const CSS: &str = include_str!("../../assets/app.css");
const HTMX: &[u8] = include_bytes!("../../assets/htmx-2.0.11.min.js");
const ICON: &str = include_str!("../../assets/icon.svg");
const JS: &str = include_str!("../../assets/app.js");

/// The embedded assets' URLs, each with a content hash in its name.
#[derive(Debug)]
pub struct Assets {
    /// The stylesheet.
    pub css: String,
    /// htmx 2.0.11 (0BSD).
    pub htmx: String,
    /// The icon.
    pub icon: String,
    /// The dashboard's own script (copy buttons), no inline code.
    pub js: String,
}

fn short_hash(bytes: &[u8]) -> String {
    trusthub_core::secret::hex(&Sha256::digest(bytes)[..6])
}

/// The asset URLs, computed once.
pub static ASSETS: LazyLock<Assets> = LazyLock::new(|| Assets {
    css: format!("/assets/app-{}.css", short_hash(CSS.as_bytes())),
    htmx: format!("/assets/htmx-{}.js", short_hash(HTMX)),
    icon: format!("/assets/icon-{}.svg", short_hash(ICON.as_bytes())),
    js: format!("/assets/app-{}.js", short_hash(JS.as_bytes())),
});

/// The dashboard's routes (merged at the root of the hub's router).
pub fn router(state: AppState) -> Router<AppState> {
    Router::new()
        .route("/", get(pages::overview))
        .route("/login", get(pages::login_form).post(pages::login))
        .route("/logout", post(pages::logout))
        .route("/ui/overview/live", get(pages::overview_live))
        .route("/ui/agents", get(pages::agents))
        .route("/ui/agents/{id}", get(pages::agent))
        .route("/ui/agents/{id}/inventory/{slice}", get(agent::inventory))
        .route("/ui/agents/{id}/processes", get(agent::processes))
        .route("/ui/agents/{id}/settings", get(agent::settings))
        .route("/ui/agents/{id}/governance", post(agent::governance))
        .route("/ui/agents/{id}/rotate-token", post(agent::rotate_token))
        .route(
            "/ui/agents/{id}/rotate-signing-key",
            post(agent::rotate_signing_key),
        )
        .route("/ui/agents/{id}/delete", post(agent::delete))
        .route(
            "/ui/agents/{id}/client-certs/{serial}/revoke",
            post(agent::revoke_cert),
        )
        .route("/ui/apps", get(pages::apps).post(pages::track_app))
        .route("/ui/apps/{id}/expected", post(pages::expect_app))
        .route("/ui/apps/{id}/untrack", post(pages::untrack_app))
        .route(
            "/ui/evidence",
            get(pages::evidence).post(pages::create_pack),
        )
        .route(
            "/ui/enroll",
            get(pages::enroll).post(pages::create_enrollment),
        )
        .route("/ui/audit", get(pages::audit_log))
        .route("/ui/rules", get(pages::rules).post(pages::create_rule))
        .route("/ui/rules/{id}", get(rule::show).post(rule::update))
        .route("/ui/rules/{id}/delete", post(pages::delete_rule))
        .route("/ui/alerts", get(pages::alerts))
        .route(
            "/ui/webhooks",
            get(pages::webhooks).post(pages::create_webhook),
        )
        .route("/ui/alerts/{id}/resolve", post(pages::resolve_alert))
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
        .route("/ui/webhooks/{id}", get(hooks::show).post(hooks::update))
        .route("/ui/webhooks/{id}/delete", post(hooks::delete))
        .route("/ui/webhooks/{id}/test", post(hooks::test))
        .route(
            "/ui/webhooks/{id}/deliveries/{delivery}/redeliver",
            post(hooks::redeliver),
        )
        .route(
            "/ui/apps/{id}/restart",
            get(actions::restart_form).post(actions::restart),
        )
        .route("/ui/actions/{jti}", get(actions::action))
        .route("/ui/actions/{jti}/live", get(actions::action_live))
        .route("/ui/transparency", get(actions::transparency))
        .route("/ui/anomalies", get(anomalies::list))
        .route("/ui/cve-sources", get(cve::sources))
        .route("/ui/vulnerabilities", get(vulns::list))
        .route(
            "/ui/vulnerabilities/{id}/acknowledge",
            post(vulns::acknowledge),
        )
        .route(
            "/ui/vulnerabilities/{id}/unacknowledge",
            post(vulns::unacknowledge),
        )
        .route("/ui/cves/{id}", get(vulns::advisory))
        .route(
            "/ui/cve-suppressions",
            get(suppressions::list).post(suppressions::create),
        )
        .route(
            "/ui/cve-suppressions/{id}/delete",
            post(suppressions::delete),
        )
        .route("/ui/agents/{id}/vulnerabilities", get(vulns::host))
        .route("/ui/supply-chain", get(supply_chain::changes))
        .route("/ui/apps/{id}/slo", get(slo::show).post(slo::save))
        .route("/ui/apps/{id}/slo/delete", post(slo::remove))
        .route("/ui/apps/{id}/maintenance-windows", post(slo::plan))
        .route("/ui/maintenance-windows/{id}/delete", post(slo::unplan))
        .route("/ui/anomalies/{id}/resolve", post(anomalies::resolve))
        .route("/ui/ai", get(ai::teams))
        .route("/ui/ai/teams/{team}", get(ai::team))
        .route("/ui/ai/prices", get(ai::prices).post(ai::set_price))
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
        .route("/assets/{name}", get(asset))
        .route(
            "/favicon.ico",
            get(|| async { Redirect::permanent(&ASSETS.icon) }),
        )
        .layer(axum::middleware::from_fn(html_errors))
        .layer(axum::middleware::from_fn(security_headers))
        .with_state(state)
}

async fn asset(axum::extract::Path(name): axum::extract::Path<String>) -> Response {
    let path = format!("/assets/{name}");
    let (body, kind): (&'static [u8], &str) = if path == ASSETS.css {
        (CSS.as_bytes(), "text/css; charset=utf-8")
    } else if path == ASSETS.htmx {
        (HTMX, "text/javascript; charset=utf-8")
    } else if path == ASSETS.js {
        (JS.as_bytes(), "text/javascript; charset=utf-8")
    } else if path == ASSETS.icon {
        (ICON.as_bytes(), "image/svg+xml")
    } else {
        return ApiError::NotFound("asset").into_response();
    };
    (
        [
            (header::CONTENT_TYPE, kind),
            // The name changes with the content.
            (header::CACHE_CONTROL, "public, max-age=31536000, immutable"),
        ],
        body,
    )
        .into_response()
}

#[derive(askama::Template)]
#[template(path = "error.html")]
struct ErrorPage<'a> {
    assets: &'a Assets,
    user: Option<pages::UserBar>,
    status: u16,
    title: String,
    detail: String,
}

/// A page that ends in an error answers with an HTML page saying what went wrong (same status,
/// the problem's title and detail), not the API's problem+json.
async fn html_errors(req: Request, next: Next) -> Response {
    let resp = next.run(req).await;
    let status = resp.status();
    let is_problem = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/problem+json"));
    if !(status.is_client_error() || status.is_server_error()) || !is_problem {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    let bytes = axum::body::to_bytes(body, 64 * 1024)
        .await
        .unwrap_or_default();
    let problem: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
    let text = |k: &str| problem[k].as_str().unwrap_or_default().to_owned();
    let page = ErrorPage {
        assets: &ASSETS,
        user: None,
        status: status.as_u16(),
        title: match text("title") {
            t if t.is_empty() => status.canonical_reason().unwrap_or("Error").to_owned(),
            t => t,
        },
        detail: text("detail"),
    };
    let mut out = html(askama::Template::render(&page), status);
    for name in [header::RETRY_AFTER, header::WWW_AUTHENTICATE] {
        if let Some(v) = parts.headers.get(&name) {
            out.headers_mut().insert(name, v.clone());
        }
    }
    out
}

/// CONTRACT 17: no script, style or frame from anywhere but the hub, no framing, no sniffing.
pub async fn security_headers(req: Request, next: Next) -> Response {
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
             object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
        ),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    resp
}

/// The CSRF token of a session: derived from the session cookie, which pages cannot read
/// (HttpOnly) and another site cannot know.
pub fn csrf_token(session_cookie: &str) -> String {
    trusthub_core::secret::hex(&Sha256::digest(
        format!("trusthub-csrf:{session_cookie}").as_bytes(),
    ))
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

/// What a page says about the form just sent: a notice, an error, or a secret shown this
/// once (with a copy button).
#[derive(Debug, Default)]
pub struct Flash {
    /// It worked.
    pub notice: Option<String>,
    /// It did not, and why.
    pub error: Option<String>,
    /// What the secret is.
    pub secret_label: String,
    /// The once-shown secret.
    pub secret: Option<String>,
}

impl Flash {
    /// A notice.
    pub fn notice(m: impl Into<String>) -> Self {
        Flash {
            notice: Some(m.into()),
            ..Flash::default()
        }
    }

    /// An error.
    pub fn error(m: impl Into<String>) -> Self {
        Flash {
            error: Some(m.into()),
            ..Flash::default()
        }
    }

    /// A secret shown once.
    pub fn secret(label: impl Into<String>, secret: String) -> Self {
        Flash {
            secret_label: label.into(),
            secret: Some(secret),
            ..Flash::default()
        }
    }
}

/// An error a form shows in the page it came from, with the status to answer with
/// (refused values, TOTP, conflicts, rate limits, rules of the hub); anything else is answered
/// as the problem it is.
pub fn form_error(e: ApiError) -> Result<(StatusCode, String), ApiError> {
    match e {
        ApiError::Validation(errors) => {
            Ok((StatusCode::UNPROCESSABLE_ENTITY, pages::refusal(&errors)))
        }
        ApiError::Totp { status, detail, .. } => Ok((status, detail)),
        ApiError::Conflict(m) => Ok((StatusCode::CONFLICT, m)),
        ApiError::Forbidden(m) => Ok((StatusCode::FORBIDDEN, m)),
        e @ ApiError::RateLimited(_) => Ok((StatusCode::TOO_MANY_REQUESTS, e.to_string())),
        e => Err(e),
    }
}

/// What the page after a form shows: `notice` with `status` when the API's handler took the
/// change, its refusal in words (with the refusal's status) when it did not; any other
/// error is answered as the problem it is.
pub fn outcome<T>(
    result: Result<T, ApiError>,
    notice: &str,
    status: StatusCode,
) -> Result<(Flash, StatusCode), ApiError> {
    match result {
        Ok(_) => Ok((Flash::notice(notice), status)),
        Err(e) => form_error(e).map(|(status, m)| (Flash::error(m), status)),
    }
}

/// A form read as name/value pairs, for forms that repeat a name (a group of checkboxes),
/// which `axum::Form` cannot collect.
#[derive(Debug)]
pub struct FormPairs(Vec<(String, String)>);

impl FormPairs {
    /// Reads an `application/x-www-form-urlencoded` body.
    pub fn parse(raw: &[u8]) -> Result<FormPairs, ApiError> {
        serde_urlencoded::from_bytes(raw)
            .map(FormPairs)
            .map_err(|_| ApiError::BadRequest("the form cannot be read".into()))
    }

    /// The first value of `name`, trimmed (empty when absent).
    pub fn get(&self, name: &str) -> String {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.trim().to_owned())
            .unwrap_or_default()
    }

    /// Every value of `name`, in order.
    pub fn all(&self, name: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .collect()
    }
}

/// An HTML page, or the problem it could not be rendered for.
pub fn html(result: Result<String, askama::Error>, status: StatusCode) -> Response {
    match result {
        Ok(body) => (
            status,
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            body,
        )
            .into_response(),
        Err(e) => ApiError::Internal(format!("template: {e}")).into_response(),
    }
}
