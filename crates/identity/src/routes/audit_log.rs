//! The audit log (CONTRACT 10; SPEC 6.4): append-only, newest first, admin and up.

use crate::auth::Admin;
use crate::error::{ApiResult, Problem};
use crate::extract::Query;
use crate::openapi::api_routes;
use crate::service::audit_log::{self as service, *};
use crate::state::AppState;
use axum::extract::State;
use utoipa_axum::router::OpenApiRouter;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(api_routes!(list))
}

/// The tenant's audit log, newest first (admin).
#[utoipa::path(get, path = "/audit-log", tag = "audit", params(AuditQuery),
    responses((status = 200, body = Vec<AuditEntry>), (status = 400, body = Problem)))]
pub(crate) async fn list(
    State(state): State<AppState>,
    by: Admin,
    Query(q): Query<AuditQuery>,
) -> ApiResult<axum::Json<Vec<AuditEntry>>> {
    service::list(&state, &by, q).await.map(axum::Json)
}
