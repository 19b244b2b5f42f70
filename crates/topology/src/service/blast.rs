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
#[derive(Debug, Clone)]
pub(super) struct Walkable {
    stamp: Uuid,
    /// id → (name, kind, agent).
    nodes: HashMap<Uuid, (String, String, Option<Uuid>)>,
    /// agent → its node.
    by_agent: HashMap<Uuid, Uuid>,
    /// `(id, source, target)`, oldest first, as the store reads them.
    ends: Vec<(Uuid, Uuid, Uuid)>,
    reverse: graph::Reverse,
}

impl Walkable {
    fn new(
        stamp: Uuid,
        nodes: Vec<(Uuid, String, String, Option<Uuid>)>,
        ends: Vec<(Uuid, Uuid, Uuid)>,
    ) -> Walkable {
        Walkable {
            stamp,
            by_agent: nodes.iter().filter_map(|n| Some((n.3?, n.0))).collect(),
            nodes: nodes
                .into_iter()
                .map(|(id, name, kind, agent)| (id, (name, kind, agent)))
                .collect(),
            reverse: graph::Reverse::new(&ends),
            ends,
        }
    }

    /// Makes the change; a change this graph already holds leaves it as it is (a graph read
    /// after its stamp may hold writes the stamp does not name yet).
    fn apply(&mut self, change: Change) {
        let edges_before = self.ends.len();
        match change {
            Change::Node {
                id,
                name,
                kind,
                agent,
            } => {
                if let Some((_, _, Some(a))) = self.nodes.get(&id) {
                    self.by_agent.remove(a);
                }
                if let Some(a) = agent {
                    self.by_agent.insert(a, id);
                }
                self.nodes.insert(id, (name, kind, agent));
            }
            Change::NodeGone(id) => {
                if let Some((_, _, Some(a))) = self.nodes.remove(&id) {
                    self.by_agent.remove(&a);
                }
                self.ends.retain(|e| e.1 != id && e.2 != id);
            }
            Change::Edge(e) => {
                if !self.ends.iter().any(|k| k.0 == e.0) {
                    self.ends.push(e);
                }
            }
            Change::EdgeGone(id) => self.ends.retain(|e| e.0 != id),
        }
        if self.ends.len() != edges_before {
            self.reverse = graph::Reverse::new(&self.ends);
        }
    }
}

/// A committed write to a tenant's walkable graph, as the kept graph takes it.
#[derive(Debug, Clone)]
pub(super) enum Change {
    /// A node added or changed.
    Node {
        id: Uuid,
        name: String,
        kind: String,
        agent: Option<Uuid>,
    },
    /// A node deleted, with its edges.
    NodeGone(Uuid),
    /// An edge `(id, source, target)` added.
    Edge((Uuid, Uuid, Uuid)),
    /// An edge deleted.
    EdgeGone(Uuid),
}

impl Change {
    pub(super) fn node(n: &Node) -> Change {
        Change::Node {
            id: n.id,
            name: n.name.clone(),
            kind: n.kind.clone(),
            agent: n.agent_id,
        }
    }
}

/// Each tenant's walkable graph, kept until its stamp changes (a write of a node or an edge
/// in any hub process makes a new stamp): a blast radius reads one row, not the whole graph.
/// A write in this process hands its change over after it commits ([`GraphCache::apply`]),
/// so the first blast radius after an everyday change reads no more than the others.
#[derive(Debug, Default)]
pub struct GraphCache(std::sync::Mutex<HashMap<Uuid, std::sync::Arc<Walkable>>>);

impl GraphCache {
    /// Takes a committed write's change into the tenant's kept graph when that graph is the
    /// one the write found (`t.was`), and labels it with the stamp the write left; otherwise
    /// (another write came between, here or in another hub) the next blast radius reads the
    /// graph again. The first write of a tenant is not taken: two first writes both find nil.
    pub(super) fn apply(&self, tenant: TenantId, t: store::Touched, change: Change) {
        let Ok(mut m) = self.0.lock() else { return };
        let Some(kept) = m.get_mut(&tenant.0) else {
            return;
        };
        if t.was.is_nil() || kept.stamp != t.was {
            return;
        }
        let w = std::sync::Arc::make_mut(kept);
        w.apply(change);
        w.stamp = t.now;
    }
}

/// Commits a write of the tenant's graph, then hands its change to the kept graph (after the
/// commit: a change is never seen before it is stored).
pub(super) async fn commit(
    state: &AppState,
    tx: trusthub_store::Tx,
    tenant: TenantId,
    t: store::Touched,
    change: Change,
) -> ApiResult<()> {
    tx.commit().await?;
    state.part::<GraphCache>().apply(tenant, t, change);
    Ok(())
}

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
    let w = std::sync::Arc::new(Walkable::new(stamp, nodes, ends));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    fn node(n: u128, agent: Option<u128>) -> (Uuid, String, String, Option<Uuid>) {
        (id(n), format!("n{n}"), "service".into(), agent.map(id))
    }

    /// Everything a blast radius reads from the graph, for every node and agent.
    fn seen(w: &Walkable) -> Vec<String> {
        let mut nodes: Vec<_> = w.nodes.iter().collect();
        nodes.sort();
        let mut agents: Vec<_> = w.by_agent.iter().collect();
        agents.sort();
        let mut out = vec![format!("{nodes:?}"), format!("{agents:?}")];
        for (n, _) in nodes {
            out.push(format!("{:?}", w.reverse.walk(*n, DEFAULT_MAX_DEPTH)));
        }
        out
    }

    #[test]
    fn changes_taken_into_a_kept_graph_give_what_reading_it_again_gives() {
        // A chain 1 <- 2 <- 3 and 4 beside it; host 1 on agent 100.
        let nodes = vec![
            node(1, Some(100)),
            node(2, None),
            node(3, None),
            node(4, None),
        ];
        let ends = vec![(id(10), id(2), id(1)), (id(11), id(3), id(2))];
        let mut kept = Walkable::new(id(0), nodes, ends);
        let changes = [
            Change::Edge((id(12), id(4), id(1))),
            Change::Node {
                id: id(5),
                name: "n5".into(),
                kind: "database".into(),
                agent: Some(id(101)),
            },
            Change::Edge((id(13), id(5), id(3))),
            Change::Node {
                id: id(2),
                name: "renamed".into(),
                kind: "queue".into(),
                agent: Some(id(102)),
            },
            Change::EdgeGone(id(10)),
            Change::Edge((id(14), id(2), id(4))),
            Change::NodeGone(id(4)),
            Change::Node {
                id: id(1),
                name: "n1".into(),
                kind: "host".into(),
                agent: None,
            },
        ];
        for c in changes.iter().cloned() {
            kept.apply(c);
        }
        let read = Walkable::new(
            id(0),
            vec![
                (id(1), "n1".into(), "host".into(), None),
                (id(2), "renamed".into(), "queue".into(), Some(id(102))),
                node(3, None),
                (id(5), "n5".into(), "database".into(), Some(id(101))),
            ],
            vec![(id(11), id(3), id(2)), (id(13), id(5), id(3))],
        );
        assert_eq!(kept.ends, read.ends);
        assert_eq!(seen(&kept), seen(&read));
        assert_eq!(kept.reverse.walk(id(2), 32).len(), 2, "3 and 5 depend on 2");

        // A graph read after some of these writes takes them again unchanged.
        let before = seen(&kept);
        for c in changes {
            kept.apply(c);
        }
        assert_eq!(seen(&kept), before);
    }

    #[test]
    fn a_kept_graph_takes_a_change_only_from_the_write_that_found_it() {
        let tenant = TenantId(id(7));
        let cache = GraphCache::default();
        let kept = Walkable::new(id(20), vec![node(1, None), node(2, None)], vec![]);
        cache
            .0
            .lock()
            .expect("unpoisoned")
            .insert(tenant.0, std::sync::Arc::new(kept));
        let edge = || Change::Edge((id(10), id(2), id(1)));
        let now = |t: &GraphCache| {
            let m = t.0.lock().expect("unpoisoned");
            (m[&tenant.0].stamp, m[&tenant.0].ends.len())
        };
        let take = |tenant: TenantId, was: Uuid, now: Uuid| {
            cache.apply(tenant, store::Touched { was, now }, edge())
        };
        // Another write came between: the kept graph stays as it was (read again next time).
        take(tenant, id(19), id(21));
        assert_eq!(now(&cache), (id(20), 0));
        // The first write of a tenant is never taken.
        take(tenant, Uuid::nil(), id(21));
        assert_eq!(now(&cache), (id(20), 0));
        take(tenant, id(20), id(21));
        assert_eq!(now(&cache), (id(21), 1));
        // Another tenant's write does not touch it.
        take(TenantId(id(8)), id(21), id(22));
        assert_eq!(now(&cache), (id(21), 1));
    }
}
