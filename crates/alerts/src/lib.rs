//! Alerts and their notifications (SPEC 2.3, 3.2, 3.3, 6.1; CONTRACT 6, 7): raising and
//! resolving alerts with their webhook deliveries in the same transaction, the alert list,
//! webhook endpoints, and the deliverer that signs and retries.
//!
//! What it offers other capabilities:
//! - [`alerting::Notifier`]: raise or resolve an alert in the caller's transaction (every
//!   capability that alerts — liveness, rules, SLOs, vulnerabilities, anomalies — goes
//!   through it);
//! - [`alerting::ResolveHooks`]: a typed event for what another capability does when a user
//!   resolves an alert;
//! - [`api`], [`web::pages`], [`deliver::deliverer`]: routes, pages and the deliverer the
//!   composition root mounts and starts.

pub mod alerting;
pub mod deliver;
pub mod routes;
pub mod service;
pub mod store;
pub mod web;

use trusthub_identity::auth;
use trusthub_platform::{error, extract, openapi, outbound, state};

use trusthub_platform::AppState;
use utoipa_axum::router::OpenApiRouter;

/// The API routes, relative to `/api/v1`.
pub fn api() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(routes::alerts::router())
        .merge(routes::webhooks::router())
}
