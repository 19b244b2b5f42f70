//! The monitors' pages: apps and URL monitors, restarting an app, alert rules.

pub mod apps;
pub mod restart;
pub mod rule;
pub mod rules;

pub use trusthub_identity::{WebUser, allowed};
pub use trusthub_platform::page::*;
pub use trusthub_platform::{chart, qr};

use crate::state::AppState;
use axum::Router;
use axum::routing::{get, post};

/// The pages (merged at the root by the composition root, which adds the page layers).
pub fn pages() -> Router<AppState> {
    Router::new()
        .route("/ui/apps", get(apps::apps).post(apps::track_app))
        .route("/ui/apps/checks", post(apps::add_check))
        .route("/ui/apps/{id}/expected", post(apps::expect_app))
        .route("/ui/apps/{id}/untrack", post(apps::untrack_app))
        .route("/ui/apps/{id}/badge", post(apps::badge_app))
        .route("/ui/apps/{id}/push-url", post(apps::new_push_url))
        .route("/ui/rules", get(rules::rules).post(rules::create_rule))
        .route("/ui/rules/{id}", get(rule::show).post(rule::update))
        .route("/ui/rules/{id}/delete", post(rules::delete_rule))
        .route(
            "/ui/apps/{id}/restart",
            get(restart::restart_form).post(restart::restart),
        )
}
