//! Service-level objectives (CONTRACT 16): an objective per app over its availability
//! timeline, error budgets and multi-window burn-rate alerts, maintenance windows, and the
//! summaries the overview and apps page read.
//!
//! What it offers:
//! - [`web::slo::app_lines`]: the SLO lines the apps page shows (its `SloLines` lookup);
//! - [`store::slo::summary_counts`]: the overview's SLO figures;
//! - [`api`], [`web::pages`], [`jobs`]: what the composition root mounts and schedules.

pub mod jobs;
pub mod objective;
pub mod routes;
pub mod store;
pub mod web;

use trusthub_alerts::alerting;
use trusthub_identity::auth;
use trusthub_platform::{error, extract, openapi, settings, state};

use trusthub_platform::AppState;
use utoipa_axum::router::OpenApiRouter;

/// The API routes, relative to `/api/v1`.
pub fn api() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().merge(routes::slo::router())
}
