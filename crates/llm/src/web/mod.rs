//! LLM observability's dashboard pages: teams and their traces, prices, evidence packs.

pub mod ai;
pub mod evidence;
pub mod explain;

pub use trusthub_identity::{WebUser, allowed};
pub use trusthub_platform::page::*;
pub use trusthub_platform::{chart, qr};

use crate::state::AppState;
use axum::Router;
use axum::routing::get;

/// The pages (merged at the root by the composition root, which adds the page layers).
pub fn pages() -> Router<AppState> {
    Router::new()
        .route(
            "/ui/evidence",
            get(evidence::evidence).post(evidence::create_pack),
        )
        .route("/ui/ai", get(ai::teams))
        .route("/ui/explain", get(explain::explain))
        .route("/ui/ai/teams/{team}", get(ai::team))
        .route("/ui/ai/prices", get(ai::prices).post(ai::set_price))
}
