//! The agent records: list, one, delete.

use super::*;
use crate::service::agents::records::{self as service, *};

/// The tenant's agents.
#[utoipa::path(get, path = "/agents", tag = "agents", responses((status = 200, body = Vec<AgentView>)))]
pub(crate) async fn list(
    State(state): State<AppState>,
    by: Viewer,
) -> ApiResult<axum::Json<Vec<AgentView>>> {
    service::list(&state, &by).await.map(axum::Json)
}

/// One agent.
#[utoipa::path(get, path = "/agents/{id}", tag = "agents", params(("id" = Uuid, Path, description = "Agent id")),
    responses((status = 200, body = AgentView), (status = 404, body = Problem)))]
pub(crate) async fn get_agent(
    State(state): State<AppState>,
    by: Viewer,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<AgentView>> {
    service::get_agent(&state, &by, id).await.map(axum::Json)
}

/// Remove an agent (admin) with everything it reported; its token stops working at once.
#[utoipa::path(delete, path = "/agents/{id}", tag = "agents", params(("id" = Uuid, Path, description = "Agent id")),
    responses((status = 204, description = "Removed"), (status = 404, body = Problem)))]
pub(crate) async fn delete_agent(
    State(state): State<AppState>,
    meta: Meta,
    by: Admin,
    Path(id): Path<Uuid>,
) -> ApiResult<StatusCode> {
    service::delete_agent(&state, &meta, &by, id)
        .await
        .map(|()| StatusCode::NO_CONTENT)
}
