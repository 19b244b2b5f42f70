//! Integrity anomalies page.

pub mod anomalies;

pub use trusthub_identity::{WebUser, allowed};
pub use trusthub_platform::page::*;
pub use trusthub_platform::{chart, qr};

use crate::state::AppState;
use axum::Router;
use axum::routing::{get, post};

/// The pages (merged at the root by the composition root, which adds the page layers).
pub fn pages() -> Router<AppState> {
    Router::new()
        .route("/ui/anomalies", get(anomalies::list))
        .route("/ui/anomalies/{id}/resolve", post(anomalies::resolve))
}
