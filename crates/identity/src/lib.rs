//! Identity: tenants, users, sessions, TOTP, API tokens, invitations and the audit log's
//! reading side (SPEC 2.1–2.3, CONTRACT 2–4).
//!
//! What it offers other capabilities:
//! - [`auth`]: who is calling — the role extractors ([`auth::Viewer`] … [`auth::Owner`]),
//!   [`auth::TotpProof`] for TOTP-gated actions and the one TOTP gate ([`auth::check_code`]);
//! - [`web::WebUser`] and [`web::allowed`]: the signed-in dashboard user and the one place a
//!   page checks a role;
//! - [`api`] and [`web::pages`]: its API and dashboard pages, mounted by the composition root;
//! - [`admin::bootstrap`]: the first owner on a fresh database.

pub mod admin;
pub mod auth;
pub mod passwords;
pub mod routes;
pub mod store;
pub mod views;
pub mod web;

use trusthub_platform::{error, extract, openapi, ratelimit, state};

use trusthub_platform::AppState;
use utoipa_axum::router::OpenApiRouter;

/// Identity's API routes, relative to `/api/v1`.
pub fn api() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(routes::auth::router())
        .merge(routes::totp::router())
        .merge(routes::invitations::router())
        .merge(routes::api_tokens::router())
        .merge(routes::users::router())
        .merge(routes::me::router())
        .merge(routes::audit_log::router())
}
