//! Trust Score (CONTRACT 21, 33; SPEC 1.8): a tenant's score from 0 to 100 as a pure,
//! versioned function of facts every capability provides, each lost point with its reason,
//! reproducible from its inputs (`inputs_sha256`); each version's history; and the public
//! badge in shields.io's flat style, showing the newest version (v13, whose band is capped
//! while a CRITICAL finding is open or an app is down).
//!
//! What it offers: [`score::v12`] and [`score::v13`] (inputs to score), [`badge`] (the SVG and the shields.io
//! endpoint JSON), [`service`] (the score of a tenant now), and [`capability`].
//!
//! Architecture invariant: it reads other capabilities only through their `lib.rs`
//! (fleet, certs, vulns, slo, monitors, auto-patch, drift, identity); v12 answers as it
//! always did.

pub use trusthub_core::badge;
pub mod routes;
pub mod score;
pub mod service;
mod store;
pub mod web;

use trusthub_platform::AppState;
use utoipa_axum::router::OpenApiRouter;

/// The API routes, relative to `/api/v1`.
pub fn api() -> OpenApiRouter<AppState> {
    routes::router()
}

/// The job's lease.
pub const JOB: &str = "trust_score";

/// This capability, as the composition root mounts, schedules and starts it: every tenant's
/// score every 30 minutes.
pub fn capability() -> trusthub_platform::capability::Capability {
    trusthub_platform::capability::Capability::new("trust", api, web::pages).job(
        JOB,
        |_| service::REFRESH.whole_seconds() as u64,
        |state, now| Box::pin(async move { service::tick(&state, now).await }),
    )
}
