//! The inventory snapshot, its slices, and the live process list.

use super::*;

pub(super) async fn latest_inventory(
    state: &AppState,
    tenant: TenantId,
    id: Uuid,
) -> ApiResult<Value> {
    load(state, tenant, id).await?;
    let mut c = state.db.conn().await?;
    telemetry::latest_inventory(&mut c, tenant, id)
        .await?
        .map(|s| s.snapshot.0)
        .ok_or(ApiError::NotFound("inventory (none received yet)"))
}

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

/// The service behind [`inventory_slice`], for the API and the dashboard alike.
pub async fn inventory_slice_by(
    state: &AppState,
    by: &Viewer,
    id: Uuid,
    slice: String,
) -> ApiResult<Value> {
    let p = &by.0;
    let key = SLICES
        .iter()
        .find(|(path, _)| *path == slice)
        .map(|(_, k)| *k)
        .ok_or(ApiError::NotFound("inventory slice"))?;
    let inv = latest_inventory(state, p.tenant(), id).await?;
    Ok(inv
        .get(key)
        .filter(|v| v.is_array())
        .cloned()
        .unwrap_or_else(|| json!([])))
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
    inventory_slice_by(&state, &by, id, slice)
        .await
        .map(axum::Json)
}

/// The process list an agent last sent.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProcessesView {
    /// When the hub received it.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub received_at: Option<OffsetDateTime>,
    /// Processes as the agent described them.
    #[schema(value_type = Vec<Object>)]
    pub processes: Vec<Value>,
}

/// The service behind [`processes`], for the API and the dashboard alike.
pub async fn processes_by(state: &AppState, by: &Viewer, id: Uuid) -> ApiResult<ProcessesView> {
    let p = &by.0;
    load(state, p.tenant(), id).await?;
    let mut c = state.db.conn().await?;
    let view = match telemetry::processes(&mut c, p.tenant(), id).await? {
        Some((at, list)) => ProcessesView {
            received_at: Some(at),
            processes: list.0,
        },
        None => ProcessesView {
            received_at: None,
            processes: Vec::new(),
        },
    };
    Ok(view)
}

/// The processes an agent last reported (empty before the first report).
#[utoipa::path(get, path = "/agents/{id}/processes", tag = "agents", params(("id" = Uuid, Path, description = "Agent id")),
    responses((status = 200, body = ProcessesView), (status = 404, body = Problem)))]
pub(crate) async fn processes(
    State(state): State<AppState>,
    by: Viewer,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<ProcessesView>> {
    processes_by(&state, &by, id).await.map(axum::Json)
}
