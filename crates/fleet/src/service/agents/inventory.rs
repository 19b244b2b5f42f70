//! The inventory snapshot, its slices, and the live process list.

use super::*;

pub(crate) async fn latest_inventory(
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

/// The service behind the `inventory_slice` handler, for the API and the dashboard alike.
pub async fn inventory_slice(
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

/// The service behind the `processes` handler, for the API and the dashboard alike.
pub async fn processes(state: &AppState, by: &Viewer, id: Uuid) -> ApiResult<ProcessesView> {
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
