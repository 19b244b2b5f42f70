//! Cloud discovery (CONTRACT 23; SPEC 4.6): accounts of the providers (credentials checked
//! live, then sealed with the hub key), discovery runs (periodic under the cluster lease, and
//! on demand), the resources seen with their agent coverage and public exposure, findings
//! that resolve by themselves, and the install command for a machine no agent watches.
//!
//! What it offers: [`capability`] (routes, pages, the `cloud.discover` job),
//! [`providers`] (each provider's API client, for the benchmark and the tests) and
//! [`service::record`] (a listing recorded as a run records it, for the benchmark).
//!
//! Architecture invariant: it reads other capabilities only through their `lib.rs` (fleet
//! for the hosts a resource is matched to and for enrollment tokens; identity for the caller).

pub mod providers;
pub mod routes;
pub mod rules;
pub mod service;
pub mod settings;
mod store;
pub mod web;

use trusthub_platform::AppState;
use utoipa_axum::router::OpenApiRouter;

/// The job's lease.
pub const JOB: &str = "cloud.discover";

/// The API routes, relative to `/api/v1`.
pub fn api() -> OpenApiRouter<AppState> {
    routes::router()
}

/// This capability, as the composition root mounts it: the job looks every minute for the
/// accounts whose last run is older than `TRUSTHUB_CLOUD_DISCOVER_INTERVAL_SECS`.
pub fn capability() -> trusthub_platform::capability::Capability {
    trusthub_platform::capability::Capability::new("cloud", api, web::pages)
        .settings::<settings::Settings>()
        .job(
            JOB,
            |s| settings::of(s).cloud_discover_interval_secs.clamp(1, 60),
            |state, now| Box::pin(async move { service::tick(&state, now).await }),
        )
}
