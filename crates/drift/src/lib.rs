//! Configuration drift (CONTRACT 20; SPEC 1.7, 4.1, 6.3): the baseline of every watched
//! file of every host, the drift a scan shows, explained by a package update when the
//! package database vouches for it, rebases with a reason (in the transparency log), drift
//! alerts, and the `drift.ticket` event when a file drifts within 7 days after a human
//! rebase.
//!
//! What it offers: [`on_config_scan`] (the fleet's `ConfigReports` event, installed by the
//! composition root), [`service::unexplained`] (the tenant's unexplained drift, for the
//! Trust Score),
//! [`rules::evaluate`] (the pure evaluation, for the benchmark), and [`capability`].
//!
//! Architecture invariant: it reads other capabilities only through their `lib.rs` (fleet
//! for hosts and the transparency log, alerts for the notifier, identity for the caller).

pub mod routes;
pub mod rules;
pub mod service;
mod store;
pub mod web;

pub use service::on_config_scan;
pub use store::FileRow;

use trusthub_platform::AppState;
use utoipa_axum::router::OpenApiRouter;

/// The API routes, relative to `/api/v1`.
pub fn api() -> OpenApiRouter<AppState> {
    routes::router()
}

/// This capability, as the composition root mounts it.
pub fn capability() -> trusthub_platform::capability::Capability {
    trusthub_platform::capability::Capability::new("drift", api, web::pages).install(|cx| {
        cx.parts.entry::<trusthub_fleet::ingest::Hooks>().config =
            trusthub_fleet::ingest::ConfigReports(|tx, scan, now| {
                Box::pin(on_config_scan(tx, scan, now))
            });
        Ok(())
    })
}
