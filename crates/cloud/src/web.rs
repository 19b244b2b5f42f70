//! The dashboard's cloud pages.

use axum::Router;
use trusthub_platform::AppState;

/// The pages.
pub fn pages() -> Router<AppState> {
    Router::new()
}
