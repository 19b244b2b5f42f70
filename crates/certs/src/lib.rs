//! Certificates (SPEC 5.5–5.7): the hub's CA, agents' client certificates and the CRL, the
//! cross-check of a presented certificate, and integrity anomalies with their alerts.
//!
//! What it offers other capabilities:
//! - [`ca::HubCa`]: issuing and revoking (a part of the state the composition root loads);
//! - [`check::cross_check`]: the verdict on a verified client certificate for an agent;
//! - [`anomalies::record`]: records an integrity anomaly about an agent and raises its
//!   alert (the fleet calls it on a bad signature or a changed agent version);
//! - [`store::client_certs`]: the certificates of an agent, for the fleet's agent pages;
//! - [`api`], [`web::pages`]: routes and pages the composition root mounts.
//!
//! Invariant: the CA key is sealed at rest; a certificate is issued only to an agent of the
//! tenant for a request made on its host, and a revoked one is in the next CRL and refused at
//! the front.

pub mod ca;
pub mod check;
pub mod routes;
pub mod service;
mod store;
pub mod web;

pub use service::anomalies::AgentRef;

/// Integrity anomalies (SPEC 4.4) as other capabilities record them.
pub mod anomalies {
    pub use crate::service::anomalies::{record, record_in};
}

use trusthub_alerts::alerting;
use trusthub_identity::auth;
use trusthub_platform::{error, extract, openapi, state};

use trusthub_platform::AppState;
use utoipa_axum::router::OpenApiRouter;

/// Host names of a tenant's agents, the lookup the fleet gives this crate (a part of the
/// state the composition root installs).
#[derive(Debug)]
pub struct HostNames(pub HostNamesFn);

/// The signature of [`HostNames`]: the host name of each agent of a tenant.
pub type HostNamesFn = for<'a> fn(
    &'a AppState,
    trusthub_store::TenantId,
) -> trusthub_platform::BoxFuture<'a, NamesResult>;

/// Host name by agent id.
pub type NamesResult = trusthub_store::StoreResult<std::collections::HashMap<uuid::Uuid, String>>;

/// The API routes, relative to `/api/v1`.
pub fn api() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().merge(routes::anomalies::router())
}

/// This capability, as the composition root mounts, schedules and starts it.
pub fn capability() -> trusthub_platform::capability::Capability {
    trusthub_platform::capability::Capability::new("certificates", api, web::pages).install(|cx| {
        cx.parts.insert(check::CertSeen::default());
        Ok(())
    })
}

/// Client-certificate rows: issued, rotated, revoked, listed (the fleet's agent certificate
/// routes and the CRL use them).
pub use store::client_certs;

/// Open integrity anomalies of a tenant (the overview).
pub use store::anomalies::open_count as open_anomalies;
/// The tenant's anomalies, newest first (the Trust Score reads the open ones).
pub use store::anomalies::{Anomaly, list as anomalies};
