//! The modelled graph: nodes, edges and zones with their rules, lists paged by cursor, and
//! the tenant's caps.

use super::*;

/// A new node.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewNode {
    /// Name, 1 to 200 characters (no control characters).
    #[schema(min_length = 1, max_length = 200)]
    pub name: String,
    /// `host`, `service`, `database`, `queue`, `network`, `external` or `cloud_resource`.
    #[schema(pattern = "^(host|service|database|queue|network|external|cloud_resource)$")]
    pub kind: String,
    /// The host it is (one node per agent).
    pub agent_id: Option<Uuid>,
    /// The cloud resource it is (one node per resource).
    pub cloud_resource_id: Option<Uuid>,
    /// Its zone.
    pub zone_id: Option<Uuid>,
    /// Up to 50 tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Free attributes: an object of at most 16 KiB.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub attributes: Option<Value>,
}

/// A page of the node list.
#[derive(Debug, Serialize, ToSchema)]
pub struct NodesPage {
    /// This page, by name.
    pub items: Vec<NodeView>,
    /// Pass as `cursor` for the next page; null on the last.
    pub next_cursor: Option<String>,
}

/// A page of the edge list.
#[derive(Debug, Serialize, ToSchema)]
pub struct EdgesPage {
    /// This page, oldest first.
    pub items: Vec<EdgeView>,
    /// Pass as `cursor` for the next page; null on the last.
    pub next_cursor: Option<String>,
}

/// Default and largest page of the node and edge lists (CONTRACT 30).
pub const PAGE_DEFAULT: i64 = 500;
/// The largest page.
pub const PAGE_MAX: i64 = 5_000;

pub(super) fn page_limit(limit: Option<i64>) -> ApiResult<i64> {
    ApiError::page_limit(limit, PAGE_DEFAULT, PAGE_MAX)
}

pub(super) fn bad_cursor() -> ApiError {
    ApiError::invalid("cursor", "is not a cursor this list gave")
}

/// A page of the tenant's nodes, by name (`cursor`: the last page's `next_cursor`).
pub async fn nodes_page(
    state: &AppState,
    tenant: TenantId,
    limit: Option<i64>,
    cursor: Option<&str>,
) -> ApiResult<NodesPage> {
    let limit = page_limit(limit)?;
    // `<hex of the name>.<id>`: the position after which the page starts (any such text
    // is a position, so the schema's pattern states the whole rule).
    let after: Option<(String, Uuid)> = match cursor {
        None => None,
        Some(c) => {
            let (name, id) = c.rsplit_once('.').ok_or_else(bad_cursor)?;
            let bytes = data_encoding::HEXLOWER_PERMISSIVE
                .decode(name.as_bytes())
                .map_err(|_| bad_cursor())?;
            let id = Uuid::parse_str(id).map_err(|_| bad_cursor())?;
            Some((String::from_utf8_lossy(&bytes).into_owned(), id))
        }
    };
    let mut c = state.db.conn().await?;
    let rows = store::nodes_page(
        &mut c,
        tenant,
        after.as_ref().map(|(n, i)| (n.as_str(), *i)),
        limit + 1,
    )
    .await?;
    let more = rows.len() as i64 > limit;
    let items: Vec<NodeView> = rows.iter().take(limit as usize).map(node_view).collect();
    let next_cursor = more.then(|| items.last()).flatten().map(|n| {
        format!(
            "{}.{}",
            data_encoding::HEXLOWER.encode(n.name.as_bytes()),
            n.id
        )
    });
    Ok(NodesPage { items, next_cursor })
}

/// A page of the tenant's edges, oldest first (`cursor`: the last page's `next_cursor`).
pub async fn edges_page(
    state: &AppState,
    tenant: TenantId,
    limit: Option<i64>,
    cursor: Option<&str>,
) -> ApiResult<EdgesPage> {
    let limit = page_limit(limit)?;
    let after = cursor
        .map(|c| Uuid::parse_str(c).map_err(|_| bad_cursor()))
        .transpose()?;
    let mut c = state.db.conn().await?;
    let rows = store::edges_page(&mut c, tenant, after, limit + 1).await?;
    let more = rows.len() as i64 > limit;
    let items: Vec<EdgeView> = rows.iter().take(limit as usize).map(edge_view).collect();
    let next_cursor = more
        .then(|| items.last())
        .flatten()
        .map(|e| e.id.to_string());
    Ok(EdgesPage { items, next_cursor })
}

/// Refuses what would take a tenant past its caps (CONTRACT 30): `TRUSTHUB_TOPOLOGY_MAX_NODES`
/// nodes and four times as many edges.
pub(super) async fn within_caps(
    state: &AppState,
    tx: &mut trusthub_store::Tx,
    tenant: TenantId,
    new_nodes: i64,
    new_edges: i64,
) -> ApiResult<()> {
    let max = i64::from(crate::settings::of(&state.settings).topology_max_nodes);
    let (nodes, edges) = store::counts(&mut *tx, tenant).await?;
    if new_nodes > 0 && nodes + new_nodes > max {
        return Err(ApiError::invalid(
            "name",
            format!("the tenant holds {nodes} nodes; at most {max} (TRUSTHUB_TOPOLOGY_MAX_NODES)"),
        ));
    }
    if new_edges > 0 && edges + new_edges > 4 * max {
        return Err(ApiError::invalid(
            "source_id",
            format!(
                "the tenant holds {edges} edges; at most {} (four times TRUSTHUB_TOPOLOGY_MAX_NODES)",
                4 * max
            ),
        ));
    }
    Ok(())
}

/// The tenant's nodes, by name.
pub async fn nodes(state: &AppState, tenant: TenantId) -> ApiResult<Vec<NodeView>> {
    let mut c = state.db.conn().await?;
    Ok(store::nodes(&mut c, tenant)
        .await?
        .iter()
        .map(node_view)
        .collect())
}

/// Adds a node (operator).
pub async fn create_node(state: &AppState, p: &Principal, req: NewNode) -> ApiResult<NodeView> {
    let tenant = p.tenant();
    let n = Node {
        id: Uuid::now_v7(),
        name: name("name", &req.name)?,
        kind: NodeKind::parse("kind", &req.kind)?.as_str().to_owned(),
        agent_id: req.agent_id,
        cloud_resource_id: req.cloud_resource_id,
        zone_id: req.zone_id,
        tags: sqlx::types::Json(tags(&req.tags)?),
        attributes: sqlx::types::Json(attributes(req.attributes.as_ref().unwrap_or(&json!({})))?),
        created_at: now(),
        updated_at: now(),
    };
    check_agent(state, tenant, n.agent_id).await?;
    check_resource(state, tenant, n.cloud_resource_id).await?;
    let mut tx = state.db.begin().await?;
    check_zone(&store::zones(&mut tx, tenant).await?, n.zone_id, "zone_id")?;
    check_unique(
        &store::nodes(&mut tx, tenant).await?,
        None,
        n.agent_id,
        n.cloud_resource_id,
    )?;
    within_caps(state, &mut tx, tenant, 1, 0).await?;
    let t = store::insert_node(&mut tx, tenant, &n).await?;
    commit(state, tx, tenant, t, Change::node(&n)).await?;
    Ok(node_view(&n))
}

/// Changes to a node: absent fields stay, `null` clears a link.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NodePatch {
    /// New name.
    #[schema(min_length = 1, max_length = 200)]
    pub name: Option<String>,
    /// New kind.
    #[schema(pattern = "^(host|service|database|queue|network|external|cloud_resource)$")]
    pub kind: Option<String>,
    /// New host, or null.
    #[serde(default, deserialize_with = "trusthub_platform::extract::present")]
    pub agent_id: Option<Option<Uuid>>,
    /// New cloud resource, or null.
    #[serde(default, deserialize_with = "trusthub_platform::extract::present")]
    pub cloud_resource_id: Option<Option<Uuid>>,
    /// New zone, or null.
    #[serde(default, deserialize_with = "trusthub_platform::extract::present")]
    pub zone_id: Option<Option<Uuid>>,
    /// New tags.
    pub tags: Option<Vec<String>>,
    /// New attributes (replacing the old).
    #[schema(value_type = Option<Object>)]
    pub attributes: Option<Value>,
}

/// Changes a node (operator).
pub async fn update_node(
    state: &AppState,
    p: &Principal,
    id: Uuid,
    req: NodePatch,
) -> ApiResult<NodeView> {
    let tenant = p.tenant();
    let mut tx = state.db.begin().await?;
    let all = store::nodes(&mut tx, tenant).await?;
    let mut n = all
        .iter()
        .find(|n| n.id == id)
        .cloned()
        .ok_or(ApiError::NotFound("node"))?;
    if let Some(v) = &req.name {
        n.name = name("name", v)?;
    }
    if let Some(v) = &req.kind {
        n.kind = NodeKind::parse("kind", v)?.as_str().to_owned();
    }
    if let Some(v) = &req.tags {
        n.tags = sqlx::types::Json(tags(v)?);
    }
    if let Some(v) = &req.attributes {
        n.attributes = sqlx::types::Json(attributes(v)?);
    }
    if let Some(v) = req.agent_id {
        check_agent(state, tenant, v).await?;
        n.agent_id = v;
    }
    if let Some(v) = req.cloud_resource_id {
        check_resource(state, tenant, v).await?;
        n.cloud_resource_id = v;
    }
    if let Some(v) = req.zone_id {
        check_zone(&store::zones(&mut tx, tenant).await?, v, "zone_id")?;
        n.zone_id = v;
    }
    check_unique(&all, Some(id), n.agent_id, n.cloud_resource_id)?;
    n.updated_at = now();
    let t = store::update_node(&mut tx, tenant, &n).await?;
    commit(state, tx, tenant, t, Change::node(&n)).await?;
    Ok(node_view(&n))
}

/// Deletes a node and its edges (operator).
pub async fn delete_node(state: &AppState, p: &Principal, id: Uuid) -> ApiResult<()> {
    let mut tx = state.db.begin().await?;
    let Some(t) = store::delete_node(&mut tx, p.tenant(), id).await? else {
        return Err(ApiError::NotFound("node"));
    };
    commit(state, tx, p.tenant(), t, Change::NodeGone(id)).await
}

// ----------------------------------------------------------------------------- edges

/// A new edge: `source` depends on `target`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewEdge {
    /// The dependent node.
    pub source_id: Uuid,
    /// The node it depends on (not the source).
    pub target_id: Uuid,
    /// Protocol: 1 to 20 of `a-z0-9+.-` (`tcp`, `https`, `grpc`).
    #[schema(pattern = "^[a-z0-9+.-]{1,20}$")]
    pub protocol: Option<String>,
    /// Port, 1 to 65535.
    #[schema(minimum = 1, maximum = 65535)]
    pub port: Option<u32>,
    /// Label, at most 200 characters.
    #[schema(max_length = 200)]
    pub label: Option<String>,
}

/// The tenant's edges, oldest first.
pub async fn edges(state: &AppState, tenant: TenantId) -> ApiResult<Vec<EdgeView>> {
    let mut c = state.db.conn().await?;
    Ok(store::edges(&mut c, tenant)
        .await?
        .iter()
        .map(edge_view)
        .collect())
}

/// Adds an edge (operator): both ends must be the tenant's nodes; the same dependency
/// (ends, protocol, port) twice is 409.
pub async fn create_edge(state: &AppState, p: &Principal, req: NewEdge) -> ApiResult<EdgeView> {
    let tenant = p.tenant();
    let port = match req.port {
        None => None,
        Some(p) if (1..=65535).contains(&p) => Some(p as i32),
        Some(_) => return Err(ApiError::invalid("port", "must be 1 to 65535")),
    };
    if req.source_id == req.target_id {
        return Err(ApiError::invalid(
            "target_id",
            "an edge joins two different nodes",
        ));
    }
    let e = Edge {
        id: Uuid::now_v7(),
        source_id: req.source_id,
        target_id: req.target_id,
        protocol: protocol(req.protocol.as_deref())?,
        port,
        label: label("label", req.label.as_deref())?,
        created_at: now(),
    };
    let mut tx = state.db.begin().await?;
    within_caps(state, &mut tx, tenant, 0, 1).await?;
    let t = insert_edge(&mut tx, tenant, &e).await?;
    let ends = (e.id, e.source_id, e.target_id);
    commit(state, tx, tenant, t, Change::Edge(ends)).await?;
    Ok(edge_view(&e))
}

pub(super) async fn insert_edge(
    tx: &mut trusthub_store::Tx,
    tenant: TenantId,
    e: &Edge,
) -> ApiResult<store::Touched> {
    let exist = store::nodes_exist(&mut *tx, tenant, [e.source_id, e.target_id]).await?;
    for (field, ok) in [("source_id", exist[0]), ("target_id", exist[1])] {
        if !ok {
            return Err(ApiError::invalid(field, "no such node"));
        }
    }
    if let Some(d) = store::same_edge(&mut *tx, tenant, e).await? {
        return Err(ApiError::Conflict(format!(
            "edge {d} is already this dependency"
        )));
    }
    Ok(store::insert_edge(&mut *tx, tenant, e).await?)
}

/// Deletes an edge (operator).
pub async fn delete_edge(state: &AppState, p: &Principal, id: Uuid) -> ApiResult<()> {
    let mut tx = state.db.begin().await?;
    let Some(t) = store::delete_edge(&mut tx, p.tenant(), id).await? else {
        return Err(ApiError::NotFound("edge"));
    };
    commit(state, tx, p.tenant(), t, Change::EdgeGone(id)).await
}

// ----------------------------------------------------------------------------- zones

/// A new zone.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewZone {
    /// Name, 1 to 200 characters.
    #[schema(min_length = 1, max_length = 200)]
    pub name: String,
    /// `network`, `trust`, `region` or `site`.
    #[schema(pattern = "^(network|trust|region|site)$")]
    pub kind: String,
    /// The zone it is part of.
    pub parent_id: Option<Uuid>,
}

/// The tenant's zones, by name.
pub async fn zones(state: &AppState, tenant: TenantId) -> ApiResult<Vec<ZoneView>> {
    let mut c = state.db.conn().await?;
    Ok(store::zones(&mut c, tenant)
        .await?
        .iter()
        .map(zone_view)
        .collect())
}

/// Adds a zone (operator).
pub async fn create_zone(state: &AppState, p: &Principal, req: NewZone) -> ApiResult<ZoneView> {
    let tenant = p.tenant();
    let z = Zone {
        id: Uuid::now_v7(),
        name: name("name", &req.name)?,
        kind: ZoneKind::parse("kind", &req.kind)?.as_str().to_owned(),
        parent_id: req.parent_id,
        created_at: now(),
    };
    let mut tx = state.db.begin().await?;
    check_zone(
        &store::zones(&mut tx, tenant).await?,
        z.parent_id,
        "parent_id",
    )?;
    store::insert_zone(&mut tx, tenant, &z).await?;
    tx.commit().await?;
    Ok(zone_view(&z))
}

/// Deletes a zone (operator): its nodes leave it, its zones move up to its parent.
pub async fn delete_zone(state: &AppState, p: &Principal, id: Uuid) -> ApiResult<()> {
    let tenant = p.tenant();
    let mut tx = state.db.begin().await?;
    let z = store::zones(&mut tx, tenant)
        .await?
        .into_iter()
        .find(|z| z.id == id)
        .ok_or(ApiError::NotFound("zone"))?;
    store::delete_zone(&mut tx, tenant, id, z.parent_id).await?;
    tx.commit().await?;
    Ok(())
}
