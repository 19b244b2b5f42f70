//! LLM traces (CONTRACT 9; SPEC 2.11): intake, and the per-team views and monthly CSV.

use crate::auth::{TraceSender, Viewer};
use crate::error::{ApiResult, Problem};
use crate::extract::{Json, Query};
use crate::openapi::api_routes;
use crate::state::AppState;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;

use utoipa_axum::router::OpenApiRouter;

pub mod otlp;
pub mod prices;
pub mod teams;
pub mod traces;

use otlp::*;
use prices::*;
use teams::*;
use traces::*;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(api_routes!(ingest))
        .routes(api_routes!(otlp_traces))
        .routes(api_routes!(teams))
        .routes(api_routes!(export_csv))
        .routes(api_routes!(team))
        .routes(api_routes!(list_prices, put_prices))
}
