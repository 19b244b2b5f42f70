//! The dashboard (CONTRACT 17): server-rendered pages from the hub itself — askama templates
//! (checked at compile time; the layout in `crates/platform/templates/`), one stylesheet and a
//! vendored htmx (`crates/platform/assets/`) embedded in the binary and served under
//! content-hashed names by the page shell (`trusthub_platform::page`).
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
mod cve;
mod hooks;
mod pages;
mod rule;
mod settings;
mod slo;
mod supply_chain;
mod suppressions;
mod users;
mod vulns;

pub use trusthub_platform::page::*;
use trusthub_platform::{chart, qr};

use crate::auth::{Credential, Principal};
use crate::error::ApiError;
use crate::state::AppState;
use axum::Router;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};

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
