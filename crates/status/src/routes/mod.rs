//! The status API under `/api/v1` (CONTRACT 32).

pub mod status_pages;

/// Every status route.
pub fn router() -> utoipa_axum::router::OpenApiRouter<trusthub_platform::AppState> {
    status_pages::router()
}
