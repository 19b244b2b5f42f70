//! The console's pages (none yet: the terminal page with xterm.js and the recordings player
//! come with the vendored assets).

use trusthub_platform::AppState;

/// The pages (merged at the root by the composition root).
pub fn pages() -> axum::Router<AppState> {
    axum::Router::new()
}
