//! Snapshots: the whole graph at a moment, hashed.

use super::*;

/// A frozen graph.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SnapshotView {
    /// Id.
    pub id: Uuid,
    /// When (RFC 3339).
    pub created_at: String,
    /// The nodes then, by id.
    #[schema(value_type = Vec<NodeView>)]
    pub nodes: Value,
    /// The edges then, by id.
    #[schema(value_type = Vec<EdgeView>)]
    pub edges: Value,
    /// SHA-256 (hex) of the canonical JSON (RFC 8785) of `{nodes, edges}`.
    pub sha256: String,
}

/// A snapshot as listed.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SnapshotSummary {
    /// Id.
    pub id: Uuid,
    /// When (RFC 3339).
    pub created_at: String,
    /// Nodes in it.
    pub node_count: i64,
    /// Edges in it.
    pub edge_count: i64,
    /// Its hash.
    pub sha256: String,
}

/// The hash of a frozen graph: SHA-256 of the canonical JSON of `{nodes, edges}`.
pub fn graph_hash(graph: &Value) -> String {
    trusthub_core::secret::hex(&Sha256::digest(
        trusthub_core::canonical::canonical_json(graph).as_bytes(),
    ))
}

/// Freezes the topology as it is (operator).
pub async fn create_snapshot(state: &AppState, p: &Principal) -> ApiResult<SnapshotView> {
    let tenant = p.tenant();
    let mut tx = state.db.begin().await?;
    let mut nodes: Vec<NodeView> = store::nodes(&mut tx, tenant)
        .await?
        .iter()
        .map(node_view)
        .collect();
    let mut edges: Vec<EdgeView> = store::edges(&mut tx, tenant)
        .await?
        .iter()
        .map(edge_view)
        .collect();
    nodes.sort_by_key(|n| n.id);
    edges.sort_by_key(|e| e.id);
    let graph = json!({"nodes": nodes, "edges": edges});
    let s = store::Snapshot {
        id: Uuid::now_v7(),
        created_at: now(),
        sha256: graph_hash(&graph),
        node_count: nodes.len() as i64,
        edge_count: edges.len() as i64,
        graph: sqlx::types::Json(graph),
    };
    store::insert_snapshot(&mut tx, tenant, &s).await?;
    tx.commit().await?;
    Ok(snapshot_view(s))
}

pub(super) fn snapshot_view(s: store::Snapshot) -> SnapshotView {
    let mut g = s.graph.0;
    SnapshotView {
        id: s.id,
        created_at: rfc3339(s.created_at),
        nodes: g["nodes"].take(),
        edges: g["edges"].take(),
        sha256: s.sha256,
    }
}

/// The tenant's snapshots, newest first.
pub async fn snapshots(state: &AppState, tenant: TenantId) -> ApiResult<Vec<SnapshotSummary>> {
    let mut c = state.db.conn().await?;
    Ok(store::snapshots(&mut c, tenant)
        .await?
        .into_iter()
        .map(|(id, at, n, e, sha256)| SnapshotSummary {
            id,
            created_at: rfc3339(at),
            node_count: n,
            edge_count: e,
            sha256,
        })
        .collect())
}

/// One snapshot with its graph.
pub async fn snapshot(state: &AppState, tenant: TenantId, id: Uuid) -> ApiResult<SnapshotView> {
    let mut c = state.db.conn().await?;
    store::snapshot(&mut c, tenant, id)
        .await?
        .map(snapshot_view)
        .ok_or(ApiError::NotFound("snapshot"))
}
