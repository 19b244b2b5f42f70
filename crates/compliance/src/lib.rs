//! Compliance and the security view (CONTRACT 25; SPEC 4.2, 4.5): the host checks agents run,
//! kept as the latest result per host and check and mapped to CIS Debian, ISO 27001, SOC 2
//! and NIS2 controls; runs asked for by admins; exports for OSCAL tools, Vanta, trustos and
//! CyberDay; touched honeypots, each host's DNA and silent agents.
//!
//! What it offers: [`on_report`] (the fleet's `SecurityReports` event) and
//! [`service::pending_runs`] (the fleet's `ComplianceRuns` lookup, answered from the hosts
//! owing a run as this hub last read them, [`service::OpenRuns`]), both installed by the
//! composition root; [`frameworks`] (the mappings and exports, pure); [`capability`].
//!
//! Architecture invariant: it reads other capabilities only through their `lib.rs` — fleet
//! (hosts, their governance), certs (integrity anomalies), alerts (the notifier), identity
//! (the caller).

pub mod frameworks;
pub mod routes;
pub mod service;
mod store;
pub mod web;

pub use service::on_report;

use trusthub_platform::AppState;
use utoipa_axum::router::OpenApiRouter;

/// The compliance tables below the services (the benchmark fills a large fleet directly; a
/// test writes a run as another hub of a cluster would).
pub mod raw {
    pub use crate::store::{insert_run, put_results};
}

/// The API routes, relative to `/api/v1`.
pub fn api() -> OpenApiRouter<AppState> {
    routes::router()
}

/// This capability, as the composition root mounts it.
pub fn capability() -> trusthub_platform::capability::Capability {
    trusthub_platform::capability::Capability::new("compliance", api, web::pages).install(|cx| {
        let hooks = cx.parts.entry::<trusthub_fleet::ingest::Hooks>();
        hooks.security = trusthub_fleet::ingest::SecurityReports(|tx, report, now| {
            Box::pin(on_report(tx, report, now))
        });
        let open = std::sync::Arc::new(service::OpenRuns::default());
        hooks.compliance_runs = trusthub_fleet::ingest::ComplianceRuns {
            read: |kept, c, hosts| Box::pin(service::pending_runs(kept, c, hosts)),
            kept: open.clone(),
        };
        cx.parts.insert(open);
        Ok(())
    })
}
