//! The alerts and webhooks pages.

pub mod alerts;
pub mod hooks;
pub mod notifications;
pub mod webhooks;

pub use trusthub_identity::{WebUser, allowed};
pub use trusthub_platform::page::*;
pub use trusthub_platform::{chart, qr};

use crate::state::AppState;
use axum::Router;
use axum::routing::{get, post};

/// The pages (merged at the root by the composition root, which adds the page layers).
pub fn pages() -> Router<AppState> {
    Router::new()
        .route("/ui/alerts", get(alerts::alerts))
        .route("/ui/alerts/{id}", get(alerts::alert))
        .route(
            "/ui/notifications",
            get(notifications::notifications).post(notifications::create),
        )
        .route("/ui/notifications/{id}/test", post(notifications::test))
        .route("/ui/notifications/{id}/delete", post(notifications::delete))
        .route(
            "/ui/webhooks",
            get(webhooks::webhooks).post(webhooks::create_webhook),
        )
        .route("/ui/alerts/{id}/resolve", post(alerts::resolve_alert))
        .route("/ui/webhooks/{id}", get(hooks::show).post(hooks::update))
        .route("/ui/webhooks/{id}/delete", post(hooks::delete))
        .route("/ui/webhooks/{id}/test", post(hooks::test))
        .route(
            "/ui/webhooks/{id}/deliveries/{delivery}/redeliver",
            post(hooks::redeliver),
        )
}
