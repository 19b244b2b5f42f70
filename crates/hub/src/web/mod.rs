//! The dashboard (CONTRACT 17): server-rendered pages from the hub itself — askama templates
//! (`crates/hub/templates/`, checked at compile time), one stylesheet and a vendored htmx
//! (`crates/hub/assets/`) embedded in the binary and served under content-hashed names.
//! Pages use the same sessions, store functions and roles as the API; never the JSON API
//! over HTTP.
//!
//! Every HTML answer carries the CONTRACT 17 headers ([`security_headers`]); state-changing
//! forms carry a CSRF token derived from the session ([`csrf_token`]) on top of the
//! same-origin check every cookie-authenticated change gets.

mod chart;
mod pages;

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

/// The embedded assets' URLs, each with a content hash in its name.
#[derive(Debug)]
pub struct Assets {
    /// The stylesheet.
    pub css: String,
    /// htmx 2.0.11 (0BSD).
    pub htmx: String,
    /// The icon.
    pub icon: String,
}

fn short_hash(bytes: &[u8]) -> String {
    trusthub_core::secret::hex(&Sha256::digest(bytes)[..6])
}

/// The asset URLs, computed once.
pub static ASSETS: LazyLock<Assets> = LazyLock::new(|| Assets {
    css: format!("/assets/app-{}.css", short_hash(CSS.as_bytes())),
    htmx: format!("/assets/htmx-{}.js", short_hash(HTMX)),
    icon: format!("/assets/icon-{}.svg", short_hash(ICON.as_bytes())),
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
        .route("/ui/rules/{id}/delete", post(pages::delete_rule))
        .route("/ui/alerts", get(pages::alerts))
        .route(
            "/ui/webhooks",
            get(pages::webhooks).post(pages::create_webhook),
        )
        .route("/ui/alerts/{id}/resolve", post(pages::resolve_alert))
        .route("/assets/{name}", get(asset))
        .layer(axum::middleware::from_fn(security_headers))
        .with_state(state)
}

async fn asset(axum::extract::Path(name): axum::extract::Path<String>) -> Response {
    let path = format!("/assets/{name}");
    let (body, kind): (&'static [u8], &str) = if path == ASSETS.css {
        (CSS.as_bytes(), "text/css; charset=utf-8")
    } else if path == ASSETS.htmx {
        (HTMX, "text/javascript; charset=utf-8")
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
