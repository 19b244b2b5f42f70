//! The HTTP API under `/api/v1`: every capability's own routes (each mounts them through
//! its `Capability`), and the hub's health.

pub mod health;

use crate::state::AppState;
use utoipa_axum::router::OpenApiRouter;

/// Every capability's routes, relative to `/api/v1`.
pub fn api() -> OpenApiRouter<AppState> {
    crate::capabilities()
        .iter()
        .fold(OpenApiRouter::new(), |api, c| api.merge((c.api)()))
        .merge(health::router())
}
