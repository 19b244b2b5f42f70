//! The fleet's pages: hosts, one host and its inventory, enrolment, actions and the transparency log.

pub mod actions;
pub mod agent;
pub mod agents;
pub mod enroll;
pub mod host;
pub mod install;

pub use trusthub_identity::{WebUser, allowed};
pub use trusthub_platform::page::*;
pub use trusthub_platform::{chart, qr};

use crate::state::AppState;
use axum::Router;
use axum::routing::{get, post};

/// The pages (merged at the root by the composition root, which adds the page layers).
pub fn pages() -> Router<AppState> {
    Router::new()
        .route("/ui/agents", get(agents::agents))
        .route("/ui/agents/{id}", get(host::agent))
        .route("/ui/agents/{id}/inventory/{slice}", get(agent::inventory))
        .route("/ui/agents/{id}/processes", get(agent::processes))
        .route("/ui/agents/{id}/settings", get(agent::settings))
        .route("/ui/agents/{id}/governance", post(agent::governance))
        .route("/ui/agents/{id}/rotate-token", post(agent::rotate_token))
        .route(
            "/ui/agents/{id}/rotate-signing-key",
            post(agent::rotate_signing_key),
        )
        .route("/ui/agents/{id}/delete", post(agent::delete))
        .route(
            "/ui/agents/{id}/client-certs/{serial}/revoke",
            post(agent::revoke_cert),
        )
        .route(
            "/ui/enroll",
            get(enroll::enroll).post(enroll::create_enrollment),
        )
        .route("/ui/actions/{jti}", get(actions::action))
        .route("/ui/actions/{jti}/live", get(actions::action_live))
        .route("/ui/transparency", get(actions::transparency))
        .route("/install.sh", get(install::script))
        .route("/downloads/{name}", get(install::download))
}
