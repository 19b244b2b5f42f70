//! What is detected from hosts and cloud machines, and its promotion into the model.

use super::*;

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
pub(super) async fn inputs(
    state: &AppState,
    tenant: TenantId,
) -> ApiResult<(Vec<Host>, Vec<CloudMachine>)> {
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
pub(super) struct Detected {
    nodes: Vec<(DNode, Option<Uuid>)>,
    edges: Vec<(DEdge, Option<Uuid>)>,
}

pub(super) async fn detected_graph(state: &AppState, tenant: TenantId) -> ApiResult<Detected> {
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

pub(super) fn dnode_view(d: &DNode, m: Option<Uuid>) -> DetectedView {
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

pub(super) fn dedge_view(d: &DEdge, m: Option<Uuid>) -> DetectedView {
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

pub(super) fn new_node_of(d: &DNode) -> Node {
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
