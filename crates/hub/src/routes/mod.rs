//! The HTTP API under `/api/v1`, one module per resource; each exposes `router()`.

pub mod health;

pub use trusthub_alerts::routes::{alerts, webhooks};
pub use trusthub_certs::routes::anomalies;
pub use trusthub_fleet::routes::{actions, agents};
pub use trusthub_identity::routes::{api_tokens, audit_log, auth, invitations, me, totp, users};
pub use trusthub_llm::routes::{ai, evidence};
pub use trusthub_monitors::routes::{apps, restart, rules};
pub use trusthub_slo::routes::slo;
pub use trusthub_vulns::routes::{cve, cve_export, osv_api, supply_chain, suppressions};

use crate::state::AppState;
use utoipa_axum::router::OpenApiRouter;

/// Every capability's routes, relative to `/api/v1`.
pub fn api() -> OpenApiRouter<AppState> {
    crate::capabilities()
        .iter()
        .fold(OpenApiRouter::new(), |api, c| api.merge((c.api)()))
        .merge(health::router())
}
