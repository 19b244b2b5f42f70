//! `GET /health` (SPEC 4.11) and `GET /ready` (CONTRACT 31).

use crate::error::{ApiError, ApiResult, Problem};
use crate::openapi::api_routes;
use crate::state::AppState;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(api_routes!(health))
        .routes(api_routes!(ready))
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

/// The hub can serve: its database answers and has every migration of this release.
#[derive(Debug, Serialize, ToSchema)]
pub struct Ready {
    /// `ready`.
    pub status: String,
    /// The newest migration applied (the schema's version).
    pub schema_version: i64,
}

/// Readiness, for load balancers and orchestrators (also at `/ready`, outside `/api/v1`):
/// 200 when the database answers and every migration of this release is applied, 503
/// otherwise — while another process migrates, or the database is unreachable. Needs no
/// credentials; the driver's words stay in the log.
#[utoipa::path(get, path = "/ready", tag = "meta",
    responses((status = 200, body = Ready), (status = 503, description = "Not ready: the database is unreachable or its schema is not current", body = Problem)))]
pub(crate) async fn ready(State(state): State<AppState>) -> ApiResult<axum::Json<Ready>> {
    let schema = state.db.schema().await.map_err(|e| {
        tracing::error!(error = %e, "ready: the database does not answer");
        ApiError::Unavailable("the database does not answer".into())
    })?;
    match schema.database {
        Some(v) if schema.current() => Ok(axum::Json(Ready {
            status: "ready".into(),
            schema_version: v,
        })),
        _ => Err(ApiError::Unavailable(
            "the database schema is not current yet".into(),
        )),
    }
}
