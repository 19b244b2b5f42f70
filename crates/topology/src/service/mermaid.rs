//! The Mermaid export of a scope.

use super::*;

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

pub(super) fn edge_label(e: &Edge) -> Option<String> {
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
