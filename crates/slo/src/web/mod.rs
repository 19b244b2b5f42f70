//! The SLO page of an app: objective, status, maintenance windows.

pub mod slo;

pub use trusthub_identity::{WebUser, allowed};
pub use trusthub_platform::page::*;
pub use trusthub_platform::{chart, qr};

use crate::state::AppState;
use axum::Router;
use axum::routing::{get, post};

/// The pages (merged at the root by the composition root, which adds the page layers).
pub fn pages() -> Router<AppState> {
    Router::new()
        .route("/ui/apps/{id}/slo", get(slo::show).post(slo::save))
        .route("/ui/apps/{id}/slo/delete", post(slo::remove))
        .route("/ui/apps/{id}/maintenance-windows", post(slo::plan))
        .route("/ui/maintenance-windows/{id}/delete", post(slo::unplan))
}
