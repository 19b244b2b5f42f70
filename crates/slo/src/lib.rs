//! Service-level objectives (CONTRACT 16): an objective per app over its availability
//! timeline, error budgets and multi-window burn-rate alerts, maintenance windows, and the
//! summaries the overview and apps page read.
//!
//! What it offers:
//! - [`app_lines`]: the SLO lines the apps page shows (its `SloLines` lookup);
//! - [`store::slo::summary_counts`]: the overview's SLO figures;
//! - [`api`], [`web::pages`], [`jobs`]: what the composition root mounts and schedules.
//!
//! Invariant: every figure of an objective is computed from the app's availability timeline
//! alone, maintenance windows left out, so the page, the API and the export agree.

pub mod jobs;
pub mod objective;
pub mod routes;
pub mod service;
pub mod settings;
mod store;
pub mod web;

use trusthub_alerts::alerting;
use trusthub_identity::auth;
use trusthub_platform::{error, extract, openapi, state};

use trusthub_platform::AppState;
use utoipa_axum::router::OpenApiRouter;

/// The API routes, relative to `/api/v1`.
pub fn api() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().merge(routes::slo::router())
}

/// This capability, as the composition root mounts, schedules and starts it.
pub fn capability() -> trusthub_platform::capability::Capability {
    trusthub_platform::capability::Capability::new("slo", api, web::pages)
        .settings::<settings::Settings>()
        .install(|cx| {
            cx.parts
                .insert(trusthub_monitors::SloLines(|state, tenant| {
                    Box::pin(app_lines(state, tenant))
                }));
            Ok(())
        })
        .job(jobs::slo::JOB, jobs::slo::interval, |state, now| {
            Box::pin(async move { jobs::slo::tick(&state, now).await })
        })
}

/// The tenant's SLOs, and how many were burning or exhausted at their last evaluation (the
/// overview).
pub use store::slo::summary_counts;

/// Every SLO's status now, and one SLO's daily history as CSV (what the benchmark drives).
pub use service::slo::{history_csv, statuses};
/// The SLO lines of each app (the apps page's lookup, installed as monitors' `SloLines`).
pub use web::slo::app_lines;

/// Each app's availability over the last days, as an SLO counts it (the Trust Score reads it
/// for apps without an SLO).
pub use service::slo::availability;

/// Each SLO of the tenant (by app) with its last state (the Trust Score reads it).
pub use store::slo::states as slo_states;

/// Each SLO of the tenant with its last status and budget, least budget left first (the
/// topology's blast radius reads it).
pub use store::slo::{Summary as SloSummary, summaries as slo_summaries};

/// The SLO table below the services (the SLO benchmark drives it directly).
pub mod raw {
    pub use crate::store::slo::{Slo, put};
}
