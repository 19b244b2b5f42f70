//! Topology, diagrams and blast radius (CONTRACT 24; SPEC 4.7): nodes, edges and zones kept
//! by people, fed by what agents see (their hosts' connections) and cloud discovery finds,
//! confirmed by promotion; frozen, hashed snapshots; the Mermaid export; diagrams generated
//! or from templates, shared by unguessable links; what fails with a node.
//!
//! What it offers: [`capability`] (routes and pages), [`graph`] (blast radius and the
//! Mermaid text, pure, for the benchmark) and [`detect`] (the detected graph's rules).
//!
//! Architecture invariant: it reads other capabilities only through their `lib.rs` — fleet
//! (hosts, their addresses and sockets), cloud (resources and their agents), monitors (apps
//! on a host), slo (their budgets), identity (the caller).

pub mod detect;
pub mod graph;
pub mod routes;
pub mod service;
pub mod settings;
mod store;
pub mod web;

use trusthub_platform::AppState;
use utoipa_axum::router::OpenApiRouter;

/// The topology tables below the services (the benchmark fills a large graph directly).
pub mod raw {
    pub use crate::store::{
        Edge, Node, Zone, insert_edge, insert_node, insert_zone, walkable_graph,
    };
    pub use sqlx::types::Json;
}

/// The API routes, relative to `/api/v1`.
pub fn api() -> OpenApiRouter<AppState> {
    routes::router()
}

/// This capability, as the composition root mounts it.
pub fn capability() -> trusthub_platform::capability::Capability {
    trusthub_platform::capability::Capability::new("topology", api, web::pages)
        .settings::<settings::Settings>()
        .install(|cx| {
            cx.parts.insert(service::GraphCache::default());
            Ok(())
        })
}
