//! The topology's services, shared by the API and the pages: nodes, edges and zones with
//! their rules, what is detected and its promotion, snapshots, the Mermaid export, diagrams
//! with their share links, and blast radius.

use crate::detect::{self, CloudMachine, DEdge, DNode, Host, Source};
use crate::graph;
use crate::store::{self, Diagram, Edge, Node, Zone};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use trusthub_identity::auth::Principal;
use trusthub_platform::AppState;
use trusthub_platform::error::{ApiError, ApiResult};
use trusthub_platform::extract::Meta;
use trusthub_platform::state::{now, rfc3339};
use trusthub_store::TenantId;
use utoipa::ToSchema;
use uuid::Uuid;

/// Node kinds.
pub const NODE_KINDS: [&str; 7] = [
    "host",
    "service",
    "database",
    "queue",
    "network",
    "external",
    "cloud_resource",
];
/// Zone kinds.
pub const ZONE_KINDS: [&str; 4] = ["network", "trust", "region", "site"];
/// A diagram's text, at most (bytes).
pub const MAX_SOURCE: usize = 512 * 1024;
/// The context share tokens are sealed under.
const SHARE_SEAL: &str = "trusthub-diagram-share";

// ------------------------------------------------------------------------------ views

/// A node.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct NodeView {
    /// Id.
    pub id: Uuid,
    /// Name (shown exactly, whatever it contains).
    pub name: String,
    /// `host`, `service`, `database`, `queue`, `network`, `external` or `cloud_resource`.
    pub kind: String,
    /// The host (agent) it is.
    pub agent_id: Option<Uuid>,
    /// The cloud resource it is.
    pub cloud_resource_id: Option<Uuid>,
    /// Its zone.
    pub zone_id: Option<Uuid>,
    /// Tags.
    pub tags: Vec<String>,
    /// Free attributes (an object).
    #[schema(value_type = Object)]
    pub attributes: Value,
    /// When (RFC 3339).
    pub created_at: String,
    /// Last change (RFC 3339).
    pub updated_at: String,
}

fn node_view(n: &Node) -> NodeView {
    NodeView {
        id: n.id,
        name: n.name.clone(),
        kind: n.kind.clone(),
        agent_id: n.agent_id,
        cloud_resource_id: n.cloud_resource_id,
        zone_id: n.zone_id,
        tags: n.tags.0.clone(),
        attributes: n.attributes.0.clone(),
        created_at: rfc3339(n.created_at),
        updated_at: rfc3339(n.updated_at),
    }
}

/// An edge: the source depends on the target.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct EdgeView {
    /// Id.
    pub id: Uuid,
    /// The dependent node.
    pub source_id: Uuid,
    /// The node it depends on.
    pub target_id: Uuid,
    /// Protocol (`tcp`, `https`, …).
    pub protocol: Option<String>,
    /// Port.
    pub port: Option<u16>,
    /// Label.
    pub label: Option<String>,
    /// When (RFC 3339).
    pub created_at: String,
}

fn edge_view(e: &Edge) -> EdgeView {
    EdgeView {
        id: e.id,
        source_id: e.source_id,
        target_id: e.target_id,
        protocol: e.protocol.clone(),
        port: e.port.and_then(|p| u16::try_from(p).ok()),
        label: e.label.clone(),
        created_at: rfc3339(e.created_at),
    }
}

/// A zone.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ZoneView {
    /// Id.
    pub id: Uuid,
    /// Name.
    pub name: String,
    /// `network`, `trust`, `region` or `site`.
    pub kind: String,
    /// The zone it is part of.
    pub parent_id: Option<Uuid>,
    /// When (RFC 3339).
    pub created_at: String,
}

fn zone_view(z: &Zone) -> ZoneView {
    ZoneView {
        id: z.id,
        name: z.name.clone(),
        kind: z.kind.clone(),
        parent_id: z.parent_id,
        created_at: rfc3339(z.created_at),
    }
}

// ------------------------------------------------------------------------ validation

/// A name: 1 to 200 characters, not only spaces, no control characters (any other
/// character is allowed and shown exactly).
fn name(field: &str, s: &str) -> ApiResult<String> {
    if s.trim().is_empty() || s.chars().count() > 200 {
        return Err(ApiError::invalid(field, "must be 1 to 200 characters"));
    }
    if s.chars().any(char::is_control) {
        return Err(ApiError::invalid(
            field,
            "must not contain control characters",
        ));
    }
    Ok(s.to_owned())
}

fn one_of(field: &str, s: &str, allowed: &[&str]) -> ApiResult<String> {
    if allowed.contains(&s) {
        Ok(s.to_owned())
    } else {
        Err(ApiError::invalid(
            field,
            format!("must be one of {}", allowed.join(", ")),
        ))
    }
}

fn tags(t: &[String]) -> ApiResult<Vec<String>> {
    if t.len() > 50 {
        return Err(ApiError::invalid("tags", "at most 50 tags"));
    }
    for x in t {
        if x.trim().is_empty() || x.chars().count() > 100 || x.chars().any(char::is_control) {
            return Err(ApiError::invalid(
                "tags",
                "each tag is 1 to 100 characters without control characters",
            ));
        }
    }
    Ok(t.to_vec())
}

fn attributes(v: &Value) -> ApiResult<Value> {
    if !v.is_object() {
        return Err(ApiError::invalid("attributes", "must be an object"));
    }
    if v.to_string().len() > 16 * 1024 {
        return Err(ApiError::invalid("attributes", "at most 16 KiB of JSON"));
    }
    Ok(v.clone())
}

fn label(field: &str, s: Option<&str>) -> ApiResult<Option<String>> {
    match s {
        None => Ok(None),
        Some(s) if s.chars().count() > 200 || s.chars().any(char::is_control) => Err(
            ApiError::invalid(field, "at most 200 characters, without control characters"),
        ),
        Some(s) => Ok(Some(s.to_owned())),
    }
}

fn protocol(s: Option<&str>) -> ApiResult<Option<String>> {
    match s {
        None => Ok(None),
        Some(p)
            if !p.is_empty()
                && p.len() <= 20
                && p.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "+.-".contains(c)) =>
        {
            Ok(Some(p.to_owned()))
        }
        Some(_) => Err(ApiError::invalid(
            "protocol",
            "1 to 20 lowercase letters, digits, '+', '.' or '-' (tcp, udp, https, grpc, …)",
        )),
    }
}

async fn check_agent(state: &AppState, tenant: TenantId, id: Option<Uuid>) -> ApiResult<()> {
    if let Some(id) = id {
        let mut c = state.db.conn().await?;
        if trusthub_fleet::agent(&mut c, tenant, id).await?.is_none() {
            return Err(ApiError::invalid("agent_id", "no such agent"));
        }
    }
    Ok(())
}

async fn check_resource(state: &AppState, tenant: TenantId, id: Option<Uuid>) -> ApiResult<()> {
    if let Some(id) = id {
        match trusthub_cloud::service::resource(state, tenant, id).await {
            Ok(_) => {}
            Err(ApiError::NotFound(_)) => {
                return Err(ApiError::invalid(
                    "cloud_resource_id",
                    "no such cloud resource",
                ));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn check_zone(zones: &[Zone], id: Option<Uuid>, field: &str) -> ApiResult<()> {
    match id {
        Some(z) if !zones.iter().any(|x| x.id == z) => {
            Err(ApiError::invalid(field, "no such zone"))
        }
        _ => Ok(()),
    }
}

/// 409 when another node is already this agent's or this cloud resource's.
fn check_unique(
    nodes: &[Node],
    me: Option<Uuid>,
    agent: Option<Uuid>,
    resource: Option<Uuid>,
) -> ApiResult<()> {
    for n in nodes.iter().filter(|n| Some(n.id) != me) {
        if agent.is_some() && n.agent_id == agent {
            return Err(ApiError::Conflict(format!(
                "node {} is already this agent's",
                n.id
            )));
        }
        if resource.is_some() && n.cloud_resource_id == resource {
            return Err(ApiError::Conflict(format!(
                "node {} is already this cloud resource's",
                n.id
            )));
        }
    }
    Ok(())
}

// ----------------------------------------------------------------------------- nodes

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

fn page_limit(limit: Option<i64>) -> ApiResult<i64> {
    match limit.unwrap_or(PAGE_DEFAULT) {
        l @ 1..=PAGE_MAX => Ok(l),
        _ => Err(ApiError::invalid("limit", "must be 1 to 5000")),
    }
}

fn bad_cursor() -> ApiError {
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
async fn within_caps(
    state: &AppState,
    tx: &mut trusthub_store::Tx,
    tenant: TenantId,
    new_nodes: i64,
    new_edges: i64,
) -> ApiResult<()> {
    let max = i64::from(state.settings.topology_max_nodes);
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
        kind: one_of("kind", &req.kind, &NODE_KINDS)?,
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
    store::insert_node(&mut tx, tenant, &n).await?;
    tx.commit().await?;
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
        n.kind = one_of("kind", v, &NODE_KINDS)?;
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
    store::update_node(&mut tx, tenant, &n).await?;
    tx.commit().await?;
    Ok(node_view(&n))
}

/// Deletes a node and its edges (operator).
pub async fn delete_node(state: &AppState, p: &Principal, id: Uuid) -> ApiResult<()> {
    let mut tx = state.db.begin().await?;
    if !store::delete_node(&mut tx, p.tenant(), id).await? {
        return Err(ApiError::NotFound("node"));
    }
    tx.commit().await?;
    Ok(())
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
    insert_edge(&mut tx, tenant, &e).await?;
    tx.commit().await?;
    Ok(edge_view(&e))
}

async fn insert_edge(tx: &mut trusthub_store::Tx, tenant: TenantId, e: &Edge) -> ApiResult<()> {
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
    store::insert_edge(&mut *tx, tenant, e).await?;
    Ok(())
}

/// Deletes an edge (operator).
pub async fn delete_edge(state: &AppState, p: &Principal, id: Uuid) -> ApiResult<()> {
    let mut tx = state.db.begin().await?;
    if !store::delete_edge(&mut tx, p.tenant(), id).await? {
        return Err(ApiError::NotFound("edge"));
    }
    tx.commit().await?;
    Ok(())
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
        kind: one_of("kind", &req.kind, &ZONE_KINDS)?,
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

// -------------------------------------------------------------------------- detected

/// Something agents or cloud discovery show that the topology may hold.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DetectedView {
    /// Stable id (the same item keeps it between reads), for promotion.
    pub id: Uuid,
    /// `node` or `edge`.
    pub kind: String,
    /// `agent` or `cloud`.
    pub source: String,
    /// A node's name (host name or resource name).
    pub name: Option<String>,
    /// A node's agent.
    pub agent_id: Option<Uuid>,
    /// A node's cloud resource.
    pub cloud_resource_id: Option<Uuid>,
    /// An edge's dependent: the id of a detected node.
    pub source_ref: Option<Uuid>,
    /// What an edge's source depends on: the id of a detected node.
    pub target_ref: Option<Uuid>,
    /// An edge's protocol (`tcp`).
    pub protocol: Option<String>,
    /// An edge's port (the service's).
    pub port: Option<u16>,
    /// An edge's label: the processes on both sides.
    pub label: Option<String>,
    /// Connections an edge stands for, at the latest inventories.
    pub count: Option<u64>,
    /// The node or edge of the topology that already is this (none: waiting for
    /// promotion).
    pub matched_id: Option<Uuid>,
}

/// What detection reads: the hosts with their sockets, and cloud machines without an agent.
async fn inputs(state: &AppState, tenant: TenantId) -> ApiResult<(Vec<Host>, Vec<CloudMachine>)> {
    let resources = trusthub_cloud::service::resources(
        state,
        tenant,
        &trusthub_cloud::service::ResourceFilter::default(),
    )
    .await?;
    let mut c = state.db.conn().await?;
    let keys = trusthub_fleet::host_keys(&mut c, tenant).await?;
    let sockets = trusthub_fleet::sockets(&mut c, tenant).await?;
    drop(c);
    let by_agent: HashMap<Uuid, Uuid> = resources
        .iter()
        .filter_map(|r| r.agent_id.map(|a| (a, r.id)))
        .collect();
    let mut hosts: Vec<Host> = keys
        .into_iter()
        .map(|k| {
            let (listening, connections) = sockets.get(&k.agent_id).cloned().unwrap_or_default();
            Host {
                agent_id: k.agent_id,
                hostname: k.hostname,
                addrs: k.addrs,
                listening,
                connections,
                cloud_resource_id: by_agent.get(&k.agent_id).copied(),
            }
        })
        .collect();
    hosts.sort_by(|a, b| {
        a.hostname
            .cmp(&b.hostname)
            .then(a.agent_id.cmp(&b.agent_id))
    });
    let machines = resources
        .into_iter()
        .filter(|r| !r.has_agent && r.removed_at.is_none())
        .map(|r| CloudMachine {
            id: r.id,
            name: r.name,
            addrs: r.private_ips.into_iter().chain(r.public_ips).collect(),
        })
        .collect();
    Ok((hosts, machines))
}

/// The detected graph and its match against the topology's nodes and edges.
struct Detected {
    nodes: Vec<(DNode, Option<Uuid>)>,
    edges: Vec<(DEdge, Option<Uuid>)>,
}

async fn detected_graph(state: &AppState, tenant: TenantId) -> ApiResult<Detected> {
    let (hosts, machines) = inputs(state, tenant).await?;
    let (dnodes, dedges) = detect::detect(tenant.0, &hosts, &machines);
    let mut c = state.db.conn().await?;
    let nodes = store::nodes(&mut c, tenant).await?;
    let edges = store::edges(&mut c, tenant).await?;
    drop(c);
    let matched = |d: &DNode| {
        nodes
            .iter()
            .find(|n| {
                (d.agent_id.is_some() && n.agent_id == d.agent_id)
                    || (d.source == Source::Cloud && n.cloud_resource_id == d.cloud_resource_id)
            })
            .map(|n| n.id)
    };
    let nodes_m: Vec<(DNode, Option<Uuid>)> = dnodes
        .into_iter()
        .map(|d| {
            let m = matched(&d);
            (d, m)
        })
        .collect();
    let node_of: HashMap<Uuid, Option<Uuid>> = nodes_m.iter().map(|(d, m)| (d.id, *m)).collect();
    let edges_m = dedges
        .into_iter()
        .map(|d| {
            let (s, t) = (
                node_of.get(&d.source).copied().flatten(),
                node_of.get(&d.target).copied().flatten(),
            );
            let m = s.zip(t).and_then(|(s, t)| {
                edges
                    .iter()
                    .find(|e| {
                        e.source_id == s && e.target_id == t && e.port == Some(i32::from(d.port))
                    })
                    .map(|e| e.id)
            });
            (d, m)
        })
        .collect();
    Ok(Detected {
        nodes: nodes_m,
        edges: edges_m,
    })
}

fn dnode_view(d: &DNode, m: Option<Uuid>) -> DetectedView {
    DetectedView {
        id: d.id,
        kind: "node".into(),
        source: match d.source {
            Source::Agent => "agent",
            Source::Cloud => "cloud",
        }
        .into(),
        name: Some(d.name.clone()),
        agent_id: d.agent_id,
        cloud_resource_id: d.cloud_resource_id,
        source_ref: None,
        target_ref: None,
        protocol: None,
        port: None,
        label: None,
        count: None,
        matched_id: m,
    }
}

fn dedge_view(d: &DEdge, m: Option<Uuid>) -> DetectedView {
    DetectedView {
        id: d.id,
        kind: "edge".into(),
        source: "agent".into(),
        name: None,
        agent_id: None,
        cloud_resource_id: None,
        source_ref: Some(d.source),
        target_ref: Some(d.target),
        protocol: Some(d.protocol.clone()),
        port: Some(d.port),
        label: Some(d.label.clone()),
        count: Some(d.count),
        matched_id: m,
    }
}

/// What is detected (nodes first), optionally only what the topology does not hold yet.
pub async fn detected(
    state: &AppState,
    tenant: TenantId,
    unmatched: bool,
) -> ApiResult<Vec<DetectedView>> {
    let d = detected_graph(state, tenant).await?;
    Ok(d.nodes
        .iter()
        .map(|(n, m)| dnode_view(n, *m))
        .chain(d.edges.iter().map(|(e, m)| dedge_view(e, *m)))
        .filter(|v| !unmatched || v.matched_id.is_none())
        .collect())
}

/// What a promotion made.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Promoted {
    /// `node` or `edge`.
    pub kind: String,
    /// The node made (a promoted node).
    pub node: Option<NodeView>,
    /// The edge made (a promoted edge).
    pub edge: Option<EdgeView>,
    /// Nodes made on the way: an edge's ends that were not nodes yet.
    pub created_nodes: Vec<NodeView>,
}

fn new_node_of(d: &DNode) -> Node {
    Node {
        id: Uuid::now_v7(),
        name: d
            .name
            .chars()
            .filter(|c| !c.is_control())
            .take(200)
            .collect(),
        kind: match d.source {
            Source::Agent => "host",
            Source::Cloud => "cloud_resource",
        }
        .into(),
        agent_id: d.agent_id,
        cloud_resource_id: d.cloud_resource_id,
        zone_id: None,
        tags: sqlx::types::Json(Vec::new()),
        attributes: sqlx::types::Json(
            json!({"detected_from": match d.source { Source::Agent => "agent", Source::Cloud => "cloud" }}),
        ),
        created_at: now(),
        updated_at: now(),
    }
}

/// Makes a detected item part of the topology (operator): a node becomes a `host` (or
/// `cloud_resource`) node linked to its agent (or resource); an edge becomes an edge, its
/// ends promoted first when they are not nodes yet. An item already in the topology is
/// 409; an id that is not detected (any more) is 404.
pub async fn promote(
    state: &AppState,
    meta: &Meta,
    p: &Principal,
    id: Uuid,
) -> ApiResult<Promoted> {
    let tenant = p.tenant();
    let d = detected_graph(state, tenant).await?;
    let mut tx = state.db.begin().await?;
    let mut created = Vec::new();
    let out = if let Some((n, m)) = d.nodes.iter().find(|(n, _)| n.id == id) {
        if let Some(m) = m {
            return Err(ApiError::Conflict(format!(
                "already in the topology as node {m}"
            )));
        }
        let node = new_node_of(n);
        within_caps(state, &mut tx, tenant, 1, 0).await?;
        store::insert_node(&mut tx, tenant, &node).await?;
        Promoted {
            kind: "node".into(),
            node: Some(node_view(&node)),
            edge: None,
            created_nodes: Vec::new(),
        }
    } else if let Some((e, m)) = d.edges.iter().find(|(e, _)| e.id == id) {
        if let Some(m) = m {
            return Err(ApiError::Conflict(format!(
                "already in the topology as edge {m}"
            )));
        }
        let mut end = |detected: Uuid| -> ApiResult<Uuid> {
            let (n, m) = d
                .nodes
                .iter()
                .find(|(n, _)| n.id == detected)
                .ok_or(ApiError::NotFound("detected item"))?;
            Ok(match m {
                Some(m) => *m,
                None => {
                    let node = new_node_of(n);
                    let id = node.id;
                    created.push(node);
                    id
                }
            })
        };
        let (s, t) = (end(e.source)?, end(e.target)?);
        within_caps(state, &mut tx, tenant, created.len() as i64, 1).await?;
        for n in &created {
            store::insert_node(&mut tx, tenant, n).await?;
        }
        let edge = Edge {
            id: Uuid::now_v7(),
            source_id: s,
            target_id: t,
            protocol: Some(e.protocol.clone()),
            port: Some(i32::from(e.port)),
            label: Some(e.label.chars().take(200).collect()),
            created_at: now(),
        };
        insert_edge(&mut tx, tenant, &edge).await?;
        Promoted {
            kind: "edge".into(),
            node: None,
            edge: Some(edge_view(&edge)),
            created_nodes: created.iter().map(node_view).collect(),
        }
    } else {
        return Err(ApiError::NotFound("detected item"));
    };
    meta.record(
        &mut tx,
        p,
        trusthub_core::audit::TOPOLOGY_PROMOTED,
        format!("topology:{id}"),
        json!({"kind": out.kind, "node_id": out.node.as_ref().map(|n| n.id), "edge_id": out.edge.as_ref().map(|e| e.id),
               "created_nodes": out.created_nodes.iter().map(|n| n.id).collect::<Vec<_>>()}),
    )
    .await?;
    tx.commit().await?;
    Ok(out)
}

// ------------------------------------------------------------------------- snapshots

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

fn snapshot_view(s: store::Snapshot) -> SnapshotView {
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

// --------------------------------------------------------------------------- mermaid

/// Which part of the topology a diagram shows.
#[derive(Debug, Clone, Copy)]
pub enum Scope {
    /// Everything.
    Tenant,
    /// A zone, the zones inside it, and the nodes their nodes are joined to.
    Zone(Uuid),
    /// A host's node and its neighbours.
    Agent(Uuid),
}

fn edge_label(e: &Edge) -> Option<String> {
    e.label
        .clone()
        .filter(|l| !l.is_empty())
        .or_else(|| match (&e.protocol, e.port) {
            (Some(p), Some(port)) => Some(format!("{p}/{port}")),
            (Some(p), None) => Some(p.clone()),
            (None, Some(port)) => Some(port.to_string()),
            (None, None) => None,
        })
}

/// The Mermaid text of a part of the topology.
pub async fn mermaid(state: &AppState, tenant: TenantId, scope: Scope) -> ApiResult<String> {
    let mut c = state.db.conn().await?;
    let nodes = store::nodes(&mut c, tenant).await?;
    let edges = store::edges(&mut c, tenant).await?;
    let mut zones = store::zones(&mut c, tenant).await?;
    drop(c);
    let keep: Option<HashSet<Uuid>> = match scope {
        Scope::Tenant => None,
        Scope::Zone(z) => {
            if !zones.iter().any(|x| x.id == z) {
                return Err(ApiError::NotFound("zone"));
            }
            // The zone and every zone inside it.
            let mut inside: HashSet<Uuid> = HashSet::from([z]);
            loop {
                let before = inside.len();
                for x in &zones {
                    if x.parent_id.is_some_and(|p| inside.contains(&p)) {
                        inside.insert(x.id);
                    }
                }
                if inside.len() == before {
                    break;
                }
            }
            zones.retain(|x| inside.contains(&x.id));
            Some(
                nodes
                    .iter()
                    .filter(|n| n.zone_id.is_some_and(|z| inside.contains(&z)))
                    .map(|n| n.id)
                    .collect(),
            )
        }
        Scope::Agent(a) => {
            let root = nodes
                .iter()
                .find(|n| n.agent_id == Some(a))
                .ok_or_else(|| {
                    ApiError::invalid(
                        "id",
                        "this agent has no topology node yet (promote it from the detected items)",
                    )
                })?;
            Some(HashSet::from([root.id]))
        }
    };
    let (nodes, edges): (Vec<&Node>, Vec<&Edge>) = match keep {
        None => (nodes.iter().collect(), edges.iter().collect()),
        Some(core) => {
            // The core's edges, and the nodes at their other ends.
            let edges: Vec<&Edge> = edges
                .iter()
                .filter(|e| core.contains(&e.source_id) || core.contains(&e.target_id))
                .collect();
            let shown: HashSet<Uuid> = core
                .iter()
                .copied()
                .chain(edges.iter().flat_map(|e| [e.source_id, e.target_id]))
                .collect();
            (
                nodes.iter().filter(|n| shown.contains(&n.id)).collect(),
                edges,
            )
        }
    };
    if matches!(scope, Scope::Agent(_)) {
        zones.retain(|z| nodes.iter().any(|n| n.zone_id == Some(z.id)));
    }
    let gn: Vec<graph::Node> = nodes
        .iter()
        .map(|n| graph::Node {
            id: n.id,
            name: n.name.clone(),
            kind: n.kind.clone(),
            zone_id: n.zone_id,
        })
        .collect();
    let ge: Vec<graph::Edge> = edges
        .iter()
        .map(|e| graph::Edge {
            id: e.id,
            source: e.source_id,
            target: e.target_id,
            label: edge_label(e),
        })
        .collect();
    let gz: Vec<graph::Zone> = zones
        .iter()
        .map(|z| graph::Zone {
            id: z.id,
            name: z.name.clone(),
            parent: z.parent_id,
        })
        .collect();
    Ok(graph::mermaid(&gn, &ge, &gz))
}

// -------------------------------------------------------------------------- diagrams

/// A diagram.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DiagramView {
    /// Id.
    pub id: Uuid,
    /// Name.
    pub name: String,
    /// `mermaid`.
    pub kind: String,
    /// Its Mermaid text.
    pub source: String,
    /// When (RFC 3339).
    pub created_at: String,
    /// Last change (RFC 3339).
    pub updated_at: String,
    /// The public link's token while it is shared.
    pub share_token: Option<String>,
}

fn diagram_view(state: &AppState, d: &Diagram) -> ApiResult<DiagramView> {
    let share_token = match &d.share_sealed {
        None => None,
        Some(s) => Some(
            String::from_utf8(
                state
                    .key
                    .open(SHARE_SEAL, s)
                    .map_err(|e| ApiError::Internal(e.to_string()))?,
            )
            .map_err(|e| ApiError::Internal(e.to_string()))?,
        ),
    };
    Ok(DiagramView {
        id: d.id,
        name: d.name.clone(),
        kind: d.kind.clone(),
        source: d.source.clone(),
        created_at: rfc3339(d.created_at),
        updated_at: rfc3339(d.updated_at),
        share_token,
    })
}

fn source(s: &str) -> ApiResult<String> {
    if s.trim().is_empty() || s.len() > MAX_SOURCE {
        return Err(ApiError::invalid(
            "source",
            "must be 1 byte to 512 KiB of Mermaid text",
        ));
    }
    if s.contains('\0') {
        return Err(ApiError::invalid("source", "must not contain NUL"));
    }
    Ok(s.to_owned())
}

async fn insert_diagram(
    state: &AppState,
    p: &Principal,
    name_: &str,
    text: String,
) -> ApiResult<DiagramView> {
    let d = Diagram {
        id: Uuid::now_v7(),
        name: name("name", name_)?,
        kind: "mermaid".into(),
        source: source(&text)?,
        created_at: now(),
        updated_at: now(),
        share_sealed: None,
    };
    let mut tx = state.db.begin().await?;
    store::insert_diagram(&mut tx, p.tenant(), &d).await?;
    tx.commit().await?;
    diagram_view(state, &d)
}

/// The tenant's diagrams, by name.
pub async fn diagrams(state: &AppState, tenant: TenantId) -> ApiResult<Vec<DiagramView>> {
    let mut c = state.db.conn().await?;
    store::diagrams(&mut c, tenant)
        .await?
        .iter()
        .map(|d| diagram_view(state, d))
        .collect()
}

/// One diagram.
pub async fn diagram(state: &AppState, tenant: TenantId, id: Uuid) -> ApiResult<DiagramView> {
    let mut c = state.db.conn().await?;
    let d = store::diagram(&mut c, tenant, id)
        .await?
        .ok_or(ApiError::NotFound("diagram"))?;
    diagram_view(state, &d)
}

/// A diagram made from the topology (operator): of the whole tenant, of a zone, or of a
/// host and its neighbours.
pub async fn generate(
    state: &AppState,
    p: &Principal,
    scope: Scope,
    name_: Option<&str>,
) -> ApiResult<DiagramView> {
    let text = mermaid(state, p.tenant(), scope).await?;
    let default = match scope {
        Scope::Tenant => "Topology".to_owned(),
        Scope::Zone(z) => {
            let mut c = state.db.conn().await?;
            let zs = store::zones(&mut c, p.tenant()).await?;
            format!(
                "Zone {}",
                zs.iter()
                    .find(|x| x.id == z)
                    .map(|x| x.name.as_str())
                    .unwrap_or_default()
            )
        }
        Scope::Agent(a) => {
            let mut c = state.db.conn().await?;
            let h = trusthub_fleet::agent(&mut c, p.tenant(), a)
                .await?
                .map(|a| a.hostname)
                .unwrap_or_default();
            format!("Host {h}")
        }
    };
    let title: String = name_
        .map(str::to_owned)
        .unwrap_or(default)
        .chars()
        .take(200)
        .collect();
    insert_diagram(state, p, &title, text).await
}

/// A built-in starting point.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TemplateView {
    /// Id.
    pub id: String,
    /// Name.
    pub name: String,
    /// What it shows.
    pub description: String,
}

/// The built-in templates: `(id, name, description, source)`.
pub const TEMPLATES: [(&str, &str, &str, &str); 4] = [
    (
        "three-tier",
        "Three-tier web application",
        "A load balancer, application servers and a primary database with its replica.",
        "flowchart LR\n  users([\"Users\"]) --> lb{{\"Load balancer\"}}\n  lb --> app1[\"app-1\"]\n  lb --> app2[\"app-2\"]\n  app1 --> db[(\"PostgreSQL primary\")]\n  app2 --> db\n  db -->|\"streaming replication\"| replica[(\"PostgreSQL replica\")]\n",
    ),
    (
        "trust-zones",
        "Trust zones",
        "Internet, DMZ and internal network as nested zones, with what may cross them.",
        "flowchart LR\n  internet([\"Internet\"])\n  subgraph dmz[\"DMZ\"]\n    proxy[\"Reverse proxy\"]\n  end\n  subgraph internal[\"Internal network\"]\n    app[\"Application\"]\n    db[(\"Database\")]\n  end\n  internet -->|\"https/443\"| proxy\n  proxy -->|\"http/8080\"| app\n  app -->|\"tcp/5432\"| db\n",
    ),
    (
        "backup-flow",
        "Backup flow",
        "Hosts backing up to a repository, copied off-site.",
        "flowchart LR\n  h1[\"web-1\"] -->|\"restic\"| repo[(\"Backup repository\")]\n  h2[\"db-1\"] -->|\"pg_dump + restic\"| repo\n  repo -->|\"nightly copy\"| offsite[/\"Off-site storage\"/]\n",
    ),
    (
        "monitoring",
        "Monitoring with Trusthub",
        "Agents reporting to the hub, alerts leaving it.",
        "flowchart LR\n  subgraph hosts[\"Hosts\"]\n    a1[\"agent on web-1\"]\n    a2[\"agent on db-1\"]\n  end\n  a1 -->|\"signed ingest\"| hub[\"Trusthub hub\"]\n  a2 -->|\"signed ingest\"| hub\n  hub -->|\"signed webhooks\"| chat([\"Chat / on-call\"])\n",
    ),
];

/// The built-in templates.
pub fn templates() -> Vec<TemplateView> {
    TEMPLATES
        .iter()
        .map(|(id, name, description, _)| TemplateView {
            id: (*id).into(),
            name: (*name).into(),
            description: (*description).into(),
        })
        .collect()
}

/// A diagram from a template (operator).
pub async fn from_template(
    state: &AppState,
    p: &Principal,
    id: &str,
    name_: Option<&str>,
) -> ApiResult<DiagramView> {
    let (_, tname, _, text) = TEMPLATES
        .iter()
        .find(|t| t.0 == id)
        .ok_or(ApiError::NotFound("template"))?;
    insert_diagram(state, p, name_.unwrap_or(tname), (*text).to_owned()).await
}

/// A diagram's new name and text.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DiagramPut {
    /// Name, 1 to 200 characters, not only spaces.
    #[schema(value_type = trusthub_platform::openapi::Name200)]
    pub name: String,
    /// `mermaid` (the only kind).
    #[schema(pattern = "^mermaid$")]
    pub kind: Option<String>,
    /// Mermaid text, at most 512 KiB, not only spaces, no NUL.
    #[schema(min_length = 1, max_length = 524288, pattern = r"^[^\x00]*\S[^\x00]*$")]
    pub source: String,
}

/// Replaces a diagram's name and text (operator); a share link stays valid.
pub async fn update_diagram(
    state: &AppState,
    p: &Principal,
    id: Uuid,
    req: DiagramPut,
) -> ApiResult<DiagramView> {
    if let Some(k) = &req.kind {
        one_of("kind", k, &["mermaid"])?;
    }
    let name_ = name("name", &req.name)?;
    let text = source(&req.source)?;
    let mut tx = state.db.begin().await?;
    let mut d = store::diagram(&mut tx, p.tenant(), id)
        .await?
        .ok_or(ApiError::NotFound("diagram"))?;
    d.name = name_;
    d.source = text;
    d.updated_at = now();
    store::update_diagram(&mut tx, p.tenant(), &d).await?;
    tx.commit().await?;
    diagram_view(state, &d)
}

/// Deletes a diagram and its share link (operator).
pub async fn delete_diagram(state: &AppState, p: &Principal, id: Uuid) -> ApiResult<()> {
    let mut tx = state.db.begin().await?;
    if !store::delete_diagram(&mut tx, p.tenant(), id).await? {
        return Err(ApiError::NotFound("diagram"));
    }
    tx.commit().await?;
    Ok(())
}

/// A diagram's public link.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Shared {
    /// The token (256 random bits): whoever has it reads the diagram, until unshared.
    pub share_token: String,
    /// The public page.
    pub url: String,
}

/// The public address of a share token.
pub fn share_url(state: &AppState, token: &str) -> String {
    format!(
        "{}/api/v1/diagrams/share/{token}",
        state.public_url.trim_end_matches('/')
    )
}

/// Shares a diagram by a public link (operator, audited). Sharing a shared diagram gives
/// its current link.
pub async fn share(state: &AppState, meta: &Meta, p: &Principal, id: Uuid) -> ApiResult<Shared> {
    let mut tx = state.db.begin().await?;
    let d = store::diagram(&mut tx, p.tenant(), id)
        .await?
        .ok_or(ApiError::NotFound("diagram"))?;
    if let Some(token) = diagram_view(state, &d)?.share_token {
        return Ok(Shared {
            url: share_url(state, &token),
            share_token: token,
        });
    }
    let token =
        trusthub_core::secret::new_token("thd_").map_err(|e| ApiError::Internal(e.to_string()))?;
    let sealed = state
        .key
        .seal(SHARE_SEAL, token.as_bytes())
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    store::set_share(
        &mut tx,
        p.tenant(),
        id,
        Some((trusthub_core::secret::token_hash(&token), sealed)),
    )
    .await?;
    meta.record(
        &mut tx,
        p,
        trusthub_core::audit::DIAGRAM_SHARED,
        format!("diagram:{id}"),
        json!({"name": d.name}),
    )
    .await?;
    tx.commit().await?;
    Ok(Shared {
        url: share_url(state, &token),
        share_token: token,
    })
}

/// Ends a diagram's public link (operator, audited): the token answers 404 from now on.
pub async fn unshare(state: &AppState, meta: &Meta, p: &Principal, id: Uuid) -> ApiResult<()> {
    let mut tx = state.db.begin().await?;
    let d = store::diagram(&mut tx, p.tenant(), id)
        .await?
        .ok_or(ApiError::NotFound("diagram"))?;
    if d.share_sealed.is_some() {
        store::set_share(&mut tx, p.tenant(), id, None).await?;
        meta.record(
            &mut tx,
            p,
            trusthub_core::audit::DIAGRAM_UNSHARED,
            format!("diagram:{id}"),
            json!({"name": d.name}),
        )
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// What a share link shows.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PublicDiagram {
    /// Name.
    pub name: String,
    /// `mermaid`.
    pub kind: String,
    /// Its Mermaid text.
    pub source: String,
}

/// The diagram a share token opens (404 for any other token, an unshared one included).
pub async fn shared(state: &AppState, token: &str) -> ApiResult<PublicDiagram> {
    if token.len() > 100 {
        return Err(ApiError::NotFound("diagram"));
    }
    let mut c = state.db.conn().await?;
    let d = store::shared(&mut c, &trusthub_core::secret::token_hash(token))
        .await?
        .ok_or(ApiError::NotFound("diagram"))?;
    Ok(PublicDiagram {
        name: d.name,
        kind: d.kind,
        source: d.source,
    })
}

// ----------------------------------------------------------------------- blast radius

/// A node in a blast radius.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RootView {
    /// Id.
    pub id: Uuid,
    /// Name.
    pub name: String,
    /// Kind.
    pub kind: String,
}

/// A node the root's failure reaches.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ImpactView {
    /// Id.
    pub id: Uuid,
    /// Name.
    pub name: String,
    /// Kind.
    pub kind: String,
    /// Edges between it and the root (1: it depends on the root directly).
    pub depth: u32,
    /// The node it was reached from, one step nearer the root (following `via` gives one
    /// shortest path; each node is listed once, so the answer grows with the nodes only).
    pub via: Uuid,
    /// The edge from it to `via`.
    pub edge: Uuid,
}

/// An app on the root's host or an impacted one.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AppAtRisk {
    /// The app.
    pub id: Uuid,
    /// Its name.
    pub name: String,
    /// Its host.
    pub agent_id: Option<Uuid>,
}

/// An SLO of an app at risk.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SloAtRisk {
    /// The app.
    pub app_id: Uuid,
    /// Minutes of error budget left at its last evaluation (none before the first).
    pub budget_remaining_minutes: Option<f64>,
}

/// What fails with a node.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BlastRadius {
    /// The node.
    pub root: RootView,
    /// The largest depth found (0: nothing depends on it).
    pub depth: u32,
    /// Everything that depends on it, nearest first.
    pub impacted: Vec<ImpactView>,
    /// Apps on the root's host and on impacted hosts.
    pub apps: Vec<AppAtRisk>,
    /// Those apps' SLOs, least budget left first.
    pub slos_at_risk: Vec<SloAtRisk>,
}

/// The graph blast radius walks, as of a stamp of the tenant's graph.
#[derive(Debug)]
struct Walkable {
    stamp: Uuid,
    /// id → (name, kind, agent).
    nodes: HashMap<Uuid, (String, String, Option<Uuid>)>,
    /// agent → its node.
    by_agent: HashMap<Uuid, Uuid>,
    reverse: graph::Reverse,
}

/// Each tenant's walkable graph, kept until its stamp changes (a write of a node or an edge
/// in any hub process makes a new stamp): a blast radius reads one row, not the whole graph.
#[derive(Debug, Default)]
pub struct GraphCache(std::sync::Mutex<HashMap<Uuid, std::sync::Arc<Walkable>>>);

async fn walkable(state: &AppState, tenant: TenantId) -> ApiResult<std::sync::Arc<Walkable>> {
    let cache = state.part::<GraphCache>();
    let mut c = state.db.conn().await?;
    let stamp = store::stamp(&mut c, tenant).await?;
    let cached = cache.0.lock().ok().and_then(|m| m.get(&tenant.0).cloned());
    if let Some(w) = cached.filter(|w| w.stamp == stamp) {
        return Ok(w);
    }
    // Read as of the stamp: a write between the two reads makes a newer stamp, so the next
    // request reads again.
    let nodes = store::nodes(&mut c, tenant).await?;
    let ends = store::edge_ends(&mut c, tenant).await?;
    drop(c);
    let w = std::sync::Arc::new(Walkable {
        stamp,
        by_agent: nodes
            .iter()
            .filter_map(|n| Some((n.agent_id?, n.id)))
            .collect(),
        nodes: nodes
            .into_iter()
            .map(|n| (n.id, (n.name, n.kind, n.agent_id)))
            .collect(),
        reverse: graph::Reverse::new(&ends),
    });
    if let Ok(mut m) = cache.0.lock() {
        m.insert(tenant.0, w.clone());
    }
    Ok(w)
}

/// How deep a blast radius walks unless asked otherwise.
pub const DEFAULT_MAX_DEPTH: u32 = 32;

/// The blast radius of a node, or of the host node of an agent, up to `max_depth` edges.
pub async fn blast_radius(
    state: &AppState,
    tenant: TenantId,
    id: Uuid,
    max_depth: u32,
) -> ApiResult<BlastRadius> {
    let g = walkable(state, tenant).await?;
    let root_id = match (g.nodes.contains_key(&id), g.by_agent.get(&id)) {
        (true, _) => id,
        (false, Some(n)) => *n,
        (false, None) => {
            let mut c = state.db.conn().await?;
            return Err(
                if trusthub_fleet::agent(&mut c, tenant, id).await?.is_some() {
                    ApiError::NotFound(
                        "topology node of this agent (promote it from /topology/detected)",
                    )
                } else {
                    ApiError::NotFound("node or agent")
                },
            );
        }
    };
    let (root_name, root_kind, root_agent) = g.nodes.get(&root_id).cloned().unwrap_or_default();
    let impacts = g.reverse.walk(root_id, max_depth);
    let by_id = &g.nodes;
    let impacted: Vec<ImpactView> = impacts
        .into_iter()
        .filter_map(|i| {
            let n = by_id.get(&i.id)?;
            Some(ImpactView {
                id: i.id,
                name: n.0.clone(),
                kind: n.1.clone(),
                depth: i.depth,
                via: i.via,
                edge: i.edge,
            })
        })
        .collect();
    let hosts: HashSet<Uuid> = std::iter::once(root_agent)
        .chain(impacted.iter().map(|i| by_id.get(&i.id).and_then(|n| n.2)))
        .flatten()
        .collect();
    let mut c = state.db.conn().await?;
    let apps: Vec<AppAtRisk> = if hosts.is_empty() {
        Vec::new()
    } else {
        trusthub_monitors::apps(&mut c, tenant, None)
            .await?
            .into_iter()
            .filter(|a| a.agent_id.is_some_and(|h| hosts.contains(&h)))
            .map(|a| AppAtRisk {
                id: a.id,
                name: a.name,
                agent_id: a.agent_id,
            })
            .collect()
    };
    let app_ids: HashSet<Uuid> = apps.iter().map(|a| a.id).collect();
    let slos_at_risk = if app_ids.is_empty() {
        Vec::new()
    } else {
        trusthub_slo::slo_summaries(&mut c, tenant, &HashMap::new())
            .await?
            .into_iter()
            .filter(|s| app_ids.contains(&s.app_id))
            .map(|s| SloAtRisk {
                app_id: s.app_id,
                budget_remaining_minutes: s.last_budget_remaining,
            })
            .collect()
    };
    Ok(BlastRadius {
        root: RootView {
            id: root_id,
            name: root_name,
            kind: root_kind,
        },
        depth: impacted.iter().map(|i| i.depth).max().unwrap_or(0),
        impacted,
        apps,
        slos_at_risk,
    })
}
