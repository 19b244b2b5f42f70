//! The vulnerability pages: findings per tenant and host, advisories, data sources, suppressions, supply-chain changes.

pub mod cve;
pub mod supply_chain;
pub mod suppressions;
pub mod vulns;

pub use trusthub_identity::{WebUser, allowed};
pub use trusthub_platform::page::*;
pub use trusthub_platform::{chart, qr};

use crate::state::AppState;
use axum::Router;
use axum::routing::{get, post};

/// The pages (merged at the root by the composition root, which adds the page layers).
pub fn pages() -> Router<AppState> {
    Router::new()
        .route("/ui/cve-sources", get(cve::sources))
        .route("/ui/vulnerabilities", get(vulns::list))
        .route(
            "/ui/vulnerabilities/{id}/acknowledge",
            post(vulns::acknowledge),
        )
        .route(
            "/ui/vulnerabilities/{id}/unacknowledge",
            post(vulns::unacknowledge),
        )
        .route("/ui/cves/{id}", get(vulns::advisory))
        .route(
            "/ui/cve-suppressions",
            get(suppressions::list).post(suppressions::create),
        )
        .route(
            "/ui/cve-suppressions/{id}/delete",
            post(suppressions::delete),
        )
        .route("/ui/agents/{id}/vulnerabilities", get(vulns::host))
        .route("/ui/supply-chain", get(supply_chain::changes))
}
