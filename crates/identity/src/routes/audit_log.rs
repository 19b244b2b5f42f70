//! The audit log (CONTRACT 10; SPEC 6.4): append-only, newest first, admin and up.

use crate::auth::Admin;
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::Query;
use crate::openapi::api_routes;
pub use crate::service::audit_log::*;
use crate::state::AppState;
use axum::extract::State;
use time::OffsetDateTime;
use trusthub_platform::names::{self};
use trusthub_store::audit::{self, Filter};
use utoipa_axum::router::OpenApiRouter;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(api_routes!(list))
}

/// The tenant's audit log, newest first (admin).
#[utoipa::path(get, path = "/audit-log", tag = "audit", params(AuditQuery),
    responses((status = 200, body = Vec<AuditEntry>), (status = 400, body = Problem)))]
pub(crate) async fn list(
    State(state): State<AppState>,
    Admin(p): Admin,
    Query(q): Query<AuditQuery>,
) -> ApiResult<axum::Json<Vec<AuditEntry>>> {
    let since = q
        .since
        .as_deref()
        .map(|s| OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339))
        .transpose()
        .map_err(|_| ApiError::BadRequest("since must be an RFC 3339 timestamp".into()))?;
    let limit = q.limit.unwrap_or(100);
    if !(1..=1000).contains(&limit) {
        return Err(ApiError::BadRequest(
            "limit must be between 1 and 1000".into(),
        ));
    }
    let filter = Filter {
        event_type: q.event_type,
        since: since.map(|s| s.to_offset(time::UtcOffset::UTC)),
        before_id: q.before_id,
        limit,
    };
    let rows = {
        let mut c = state.db.conn().await?;
        audit::list(&mut c, p.tenant(), &filter).await?
    };
    let names = names::resolve(
        &state,
        p.tenant(),
        rows.iter()
            .flat_map(|e| [e.actor.as_str(), e.subject.as_str()]),
    )
    .await;
    Ok(axum::Json(
        rows.into_iter()
            .map(|e| AuditEntry::named(e, &names))
            .collect(),
    ))
}
