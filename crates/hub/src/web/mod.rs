//! The dashboard (CONTRACT 17): server-rendered pages from the hub itself — askama templates
//! (checked at compile time; the layout in `crates/platform/templates/`), one stylesheet and a
//! vendored htmx (`crates/platform/assets/`) embedded in the binary and served under
//! content-hashed names by the page shell (`trusthub_platform::page`).
//! Pages use the same sessions, store functions and roles as the API; never the JSON API
//! over HTTP.
//!
//! Every HTML answer carries the CONTRACT 17 headers ([`security_headers`]); state-changing
//! forms carry a CSRF token derived from the session ([`csrf_token`]) on top of the
//! same-origin check every cookie-authenticated change gets.

mod pages;

pub use trusthub_platform::page::*;

use crate::state::AppState;
use axum::Router;
use axum::response::Redirect;
use axum::routing::get;

/// The dashboard's routes (merged at the root of the hub's router): the overview, the
/// assets, and every capability's pages.
pub fn router(state: AppState) -> Router<AppState> {
    let pages = crate::capabilities()
        .iter()
        .fold(Router::new(), |r, c| r.merge((c.pages)()));
    Router::new()
        .route("/", get(pages::overview))
        .route("/ui/overview/live", get(pages::overview_live))
        // Every page lives under /ui/ but the overview, which is the root: /ui is it too.
        .route("/ui", get(|| async { Redirect::permanent("/") }))
        .route("/ui/", get(|| async { Redirect::permanent("/") }))
        .route("/assets/{name}", get(asset))
        .route(
            "/favicon.ico",
            get(|| async { Redirect::permanent(&ASSETS.icon) }),
        )
        .merge(pages)
        .layer(axum::middleware::from_fn(html_errors))
        .layer(axum::middleware::from_fn(security_headers))
        .with_state(state)
}

pub use trusthub_identity::WebUser;
