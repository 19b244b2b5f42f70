//! The HTTP API under `/api/v1`, one module per resource; each exposes `router()`.

pub mod actions;
pub mod agents;
pub mod ai;
pub mod alerts;
pub mod anomalies;
pub mod api_tokens;
pub mod apps;
pub mod audit_log;
pub mod auth;
pub mod cve;
pub mod cve_export;
pub mod evidence;
pub mod health;
pub mod invitations;
pub mod me;
pub mod osv_api;
pub mod slo;
pub mod supply_chain;
pub mod suppressions;
pub mod totp;
pub mod users;
pub mod webhooks;

use crate::state::AppState;
use utoipa_axum::router::OpenApiRouter;

/// Every resource's routes, relative to `/api/v1`.
pub fn api() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(auth::router())
        .merge(agents::router())
        .merge(apps::router())
        .merge(ai::router())
        .merge(evidence::router())
        .merge(actions::router())
        .merge(alerts::router())
        .merge(anomalies::router())
        .merge(cve::router())
        .merge(suppressions::router())
        .merge(cve_export::router())
        .merge(supply_chain::router())
        .merge(slo::router())
        .merge(webhooks::router())
        .merge(totp::router())
        .merge(invitations::router())
        .merge(api_tokens::router())
        .merge(users::router())
        .merge(me::router())
        .merge(audit_log::router())
        .merge(health::router())
}
