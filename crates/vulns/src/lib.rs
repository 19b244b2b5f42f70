//! Vulnerabilities (CONTRACT 15): OSV advisories (uploaded, imported or pulled daily), the
//! scan of every host's packages and lockfiles in each ecosystem's version order, findings,
//! acknowledgements and suppressions, SARIF / CycloneDX / OpenVEX exports, the OSV-compatible
//! API, and npm supply-chain tracking.
//!
//! What it offers:
//! - [`cve::CveIndex`]: the advisory name index, a part of the state;
//! - [`cve`]: importing advisories (the API, the pull and `trusthub cve import` share it);
//! - [`patching`]: a host's unfixed findings, what auto-patch chooses from;
//! - [`rules::version::Scheme`]: each ecosystem's version order;
//! - [`api`], [`osv_api`], [`web::pages`], [`jobs`]: what the composition root mounts and
//!   schedules.
//!
//! Invariant: a finding is a package whose version lies in an advisory's affected range in
//! that ecosystem's own version order; a suppressed or acknowledged finding stays recorded,
//! with who decided and why.

pub mod cve;
pub mod jobs;
pub mod patching;
pub mod routes;
pub mod rules;
pub mod service;
pub mod settings;
mod store;
pub mod web;

use trusthub_alerts::alerting;
use trusthub_identity::auth;
use trusthub_platform::{archive, error, extract, openapi, outbound, state};

use trusthub_platform::AppState;
use utoipa_axum::router::OpenApiRouter;

/// The API routes, relative to `/api/v1`.
pub fn api() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(routes::cve::router())
        .merge(routes::suppressions::router())
        .merge(routes::cve_export::router())
        .merge(routes::supply_chain::router())
}

/// The OSV-compatible API, mounted at the root where OSV clients expect it.
pub fn osv_api() -> OpenApiRouter<AppState> {
    routes::osv_api::router()
}

/// This capability, as the composition root mounts, schedules and starts it.
pub fn capability() -> trusthub_platform::capability::Capability {
    trusthub_platform::capability::Capability::new("vulnerabilities", api, web::pages)
        .settings::<settings::Settings>()
        .install(|cx| {
            cx.parts.insert(cve::CveIndex::default());
            Ok(())
        })
        .job(
            jobs::cve_scan::JOB,
            jobs::cve_scan::interval,
            |state, now| Box::pin(async move { jobs::cve_scan::tick(&state, now).await }),
        )
        .job(
            jobs::osv_pull::JOB,
            jobs::osv_pull::interval,
            |state, now| Box::pin(async move { jobs::osv_pull::tick(&state, now).await }),
        )
        .job(
            jobs::supply_chain::JOB,
            jobs::supply_chain::interval,
            |state, now| Box::pin(async move { jobs::supply_chain::tick(&state, now).await }),
        )
}

/// The advisory and findings tables below the services (the scan benchmark reads them).
pub mod raw {
    pub use crate::store::cve::list as findings;
    pub use crate::store::osv::for_package as advisories_for_package;
}
