//! The inventory snapshot, its slices, and the live process list.

use super::*;
use crate::service::agents::inventory::{self as service, *};

/// The latest inventory snapshot of an agent, as it sent it (CONTRACT 4).
#[utoipa::path(get, path = "/agents/{id}/inventory", tag = "agents", params(("id" = Uuid, Path, description = "Agent id")),
    responses((status = 200, body = Object), (status = 404, body = Problem)))]
pub(crate) async fn inventory(
    State(state): State<AppState>,
    Viewer(p): Viewer,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<Value>> {
    Ok(axum::Json(latest_inventory(&state, p.tenant(), id).await?))
}

/// One array of the latest inventory: `containers`, `systemd`, `packages`,
/// `app-dependencies`, `users`, `sudo`, `ssh-keys`, `backups` or `listening` (empty when the
/// snapshot has none).
#[utoipa::path(get, path = "/agents/{id}/inventory/{slice}", tag = "agents",
    params(("id" = Uuid, Path, description = "Agent id"), ("slice" = String, Path, description = "containers, systemd, packages, app-dependencies, users, sudo, ssh-keys, backups or listening")),
    responses((status = 200, body = Vec<Object>), (status = 404, body = Problem)))]
pub(crate) async fn inventory_slice(
    State(state): State<AppState>,
    by: Viewer,
    Path((id, slice)): Path<(Uuid, String)>,
) -> ApiResult<axum::Json<Value>> {
    service::inventory_slice(&state, &by, id, slice)
        .await
        .map(axum::Json)
}

/// The processes an agent last reported (empty before the first report).
#[utoipa::path(get, path = "/agents/{id}/processes", tag = "agents", params(("id" = Uuid, Path, description = "Agent id")),
    responses((status = 200, body = ProcessesView), (status = 404, body = Problem)))]
pub(crate) async fn processes(
    State(state): State<AppState>,
    by: Viewer,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<ProcessesView>> {
    service::processes(&state, &by, id).await.map(axum::Json)
}
