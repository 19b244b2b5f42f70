//! `GET /health` (SPEC 4.11).

use crate::error::{ApiError, ApiResult, Problem};
use crate::openapi::api_routes;
use crate::state::AppState;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(api_routes!(health))
}

/// The hub is up and its database answers.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// `ok`.
    pub status: String,
    /// `sqlite` or `postgres`.
    pub database: String,
    /// Hub version.
    pub version: String,
}

/// Liveness and readiness: 200 `{status: "ok"}` when the database answers, 503 otherwise.
/// Needs no credentials.
#[utoipa::path(get, path = "/health", tag = "meta",
    responses((status = 200, body = Health), (status = 503, description = "Database unreachable", body = Problem)))]
pub(crate) async fn health(State(state): State<AppState>) -> ApiResult<axum::Json<Health>> {
    state.db.ping().await.map_err(|e| {
        // The driver's words go to the log, never to the (unauthenticated) caller.
        tracing::error!(error = %e, "health: the database does not answer");
        ApiError::Unavailable("the database does not answer".into())
    })?;
    Ok(axum::Json(Health {
        status: "ok".into(),
        database: match state.db.backend() {
            trusthub_store::Backend::Sqlite => "sqlite".into(),
            trusthub_store::Backend::Postgres => "postgres".into(),
        },
        version: env!("CARGO_PKG_VERSION").into(),
    }))
}
