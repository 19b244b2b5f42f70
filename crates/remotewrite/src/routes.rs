//! `GET /remote-write`: forwarding to remote-write receivers (CONTRACT 26).

use crate::service::{self, Status};
use axum::extract::State;
use trusthub_identity::auth::Admin;
use trusthub_platform::AppState;
use trusthub_platform::error::ApiResult;
use trusthub_platform::openapi::api_routes;
use utoipa_axum::router::OpenApiRouter;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(api_routes!(get_status))
}

/// Where the hub forwards metrics: each receiver of `TRUSTHUB_REMOTE_WRITE_URL` (without
/// userinfo) with its lag, whether this process is the one sending, and this process's
/// counts of samples sent, retried and dropped (the figures `//metrics` shows as
/// `trusthub_remote_write_samples_total` and `trusthub_remote_write_lag_seconds`). The
/// receivers are the hub's, not a tenant's: the figures are hub-wide, as on `//metrics`.
/// `enabled` is false and `receivers` empty when forwarding is off.
#[utoipa::path(get, path = "/remote-write", tag = "metrics",
    responses((status = 200, body = Status)))]
pub(crate) async fn get_status(
    State(state): State<AppState>,
    _by: Admin,
) -> ApiResult<axum::Json<Status>> {
    Ok(axum::Json(service::status(&state).await?))
}
