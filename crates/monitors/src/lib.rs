//! Monitors (SPEC 3.1, 2.4; CONTRACT 7, 10, 16): tracked apps and URL checks with their
//! liveness, app restarts through the fleet's signed actions, alert rules on agents' metrics,
//! and each app's availability timeline and maintenance windows.
//!
//! What it offers other capabilities:
//! - [`routes::apps::on_agent_reports`], [`routes::apps::http_checks_of`],
//!   [`routes::apps::on_alert_resolved`]: its side of the fleet's and alerts' typed events;
//! - [`routes::apps::SloLines`]: the lookup the SLO capability gives the apps page;
//! - [`store::apps`], [`store::timeline`]: apps, their timeline and maintenance windows, for
//!   SLOs and evidence packs;
//! - [`api`], [`web::pages`], [`jobs`]: what the composition root mounts and schedules.

pub mod jobs;
pub mod routes;
pub mod store;
pub mod web;

use trusthub_alerts::alerting;
use trusthub_identity::auth;
use trusthub_platform::{error, extract, openapi, outbound, ratelimit, settings, state};

use trusthub_platform::AppState;
use utoipa_axum::router::OpenApiRouter;

/// The API routes, relative to `/api/v1`.
pub fn api() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(routes::apps::router())
        .merge(routes::restart::router())
        .merge(routes::rules::router())
}
