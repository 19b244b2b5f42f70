//! Blast radius: what depends on a node, by depth, over a kept walkable graph.

use super::*;

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
pub(super) struct Walkable {
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

pub(super) async fn walkable(
    state: &AppState,
    tenant: TenantId,
) -> ApiResult<std::sync::Arc<Walkable>> {
    let cache = state.part::<GraphCache>();
    let mut c = state.db.conn().await?;
    let stamp = store::stamp(&mut c, tenant).await?;
    let cached = cache.0.lock().ok().and_then(|m| m.get(&tenant.0).cloned());
    if let Some(w) = cached.filter(|w| w.stamp == stamp) {
        return Ok(w);
    }
    // Read as of the stamp: a write between the two reads makes a newer stamp, so the next
    // request reads again.
    let (nodes, ends) = store::walkable_graph(&mut c, tenant).await?;
    drop(c);
    let w = std::sync::Arc::new(Walkable {
        stamp,
        by_agent: nodes.iter().filter_map(|n| Some((n.3?, n.0))).collect(),
        nodes: nodes
            .into_iter()
            .map(|(id, name, kind, agent)| (id, (name, kind, agent)))
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
