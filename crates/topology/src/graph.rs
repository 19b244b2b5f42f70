//! The graph's pure rules: blast radius (breadth-first over the edges reversed) and the
//! Mermaid text of a graph, valid whatever the names contain (CONTRACT 24).

use std::collections::{HashMap, VecDeque};
use uuid::Uuid;

/// A node as the rules see it.
#[derive(Debug, Clone)]
pub struct Node {
    /// Id.
    pub id: Uuid,
    /// Its name, shown exactly.
    pub name: String,
    /// Its kind (the shape it is drawn with).
    pub kind: String,
    /// Its zone.
    pub zone_id: Option<Uuid>,
}

/// An edge `source -> target`: the source depends on the target.
#[derive(Debug, Clone)]
pub struct Edge {
    /// Id.
    pub id: Uuid,
    /// The dependent.
    pub source: Uuid,
    /// What it depends on.
    pub target: Uuid,
    /// Its label as drawn (`None`: no label).
    pub label: Option<String>,
}

/// A zone: a `subgraph`, inside its parent's.
#[derive(Debug, Clone)]
pub struct Zone {
    /// Id.
    pub id: Uuid,
    /// Its name, shown exactly.
    pub name: String,
    /// The zone it is part of.
    pub parent: Option<Uuid>,
}

/// A node the root's failure reaches: once, with the node it was reached from (CONTRACT
/// 30: a size linear in the nodes; following `via` back gives one shortest path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Impact {
    /// The node.
    pub id: Uuid,
    /// Edges between it and the root (1: it depends on the root directly).
    pub depth: u32,
    /// The node it was reached from (one step nearer the root; the root at depth 1).
    pub via: Uuid,
    /// The edge from it to `via`.
    pub edge: Uuid,
}

/// Everything that depends on `root` through `edges` (`(id, source, target)`, source
/// depends on target) up to `max_depth`, nearest first (ties in the order they were
/// reached, which follows the edges' order): a breadth-first search over the edges
/// reversed, each node reached once by one shortest path.
pub fn blast_radius(root: Uuid, edges: &[(Uuid, Uuid, Uuid)], max_depth: u32) -> Vec<Impact> {
    Reverse::new(edges).walk(root, max_depth)
}

/// A graph's edges reversed, ready to walk from any root: dense indices and one flat
/// adjacency array (CSR), so a 50,000-edge graph is walked without a map lookup per step.
#[derive(Debug, Clone, Default)]
pub struct Reverse {
    index: HashMap<Uuid, u32>,
    ids: Vec<Uuid>,
    /// Each edge's id and its (source, target) indices.
    edges: Vec<(Uuid, u32, u32)>,
    /// Where each target's dependents start in `adj`.
    start: Vec<u32>,
    /// (dependent, edge index), grouped by target.
    adj: Vec<(u32, u32)>,
}

impl Reverse {
    /// Builds it from `(id, source, target)` edges.
    pub fn new(edges: &[(Uuid, Uuid, Uuid)]) -> Reverse {
        let mut index: HashMap<Uuid, u32> = HashMap::with_capacity(edges.len());
        let mut ids: Vec<Uuid> = Vec::new();
        let mut idx = |u: Uuid| {
            *index.entry(u).or_insert_with(|| {
                ids.push(u);
                (ids.len() - 1) as u32
            })
        };
        let edges: Vec<(Uuid, u32, u32)> =
            edges.iter().map(|e| (e.0, idx(e.1), idx(e.2))).collect();
        let n = ids.len();
        let mut start = vec![0u32; n + 1];
        for &(_, _, t) in &edges {
            start[t as usize + 1] += 1;
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut adj = vec![(0u32, 0u32); edges.len()];
        for (e, &(_, s, t)) in edges.iter().enumerate() {
            adj[fill[t as usize] as usize] = (s, e as u32);
            fill[t as usize] += 1;
        }
        Reverse {
            index,
            ids,
            edges,
            start,
            adj,
        }
    }

    /// Everything that depends on `root` up to `max_depth` (see [`blast_radius`]).
    pub fn walk(&self, root: Uuid, max_depth: u32) -> Vec<Impact> {
        let Some(&r) = self.index.get(&root) else {
            return Vec::new();
        };
        const NONE: u32 = u32::MAX;
        let n = self.ids.len();
        let mut via = vec![NONE; n]; // the edge a node was reached by
        let mut dist = vec![NONE; n];
        dist[r as usize] = 0;
        let mut order = Vec::new();
        let mut queue = VecDeque::from([r]);
        while let Some(t) = queue.pop_front() {
            if dist[t as usize] >= max_depth {
                continue;
            }
            let (a, b) = (
                self.start[t as usize] as usize,
                self.start[t as usize + 1] as usize,
            );
            for &(s, e) in &self.adj[a..b] {
                if dist[s as usize] == NONE {
                    dist[s as usize] = dist[t as usize] + 1;
                    via[s as usize] = e;
                    order.push(s);
                    queue.push_back(s);
                }
            }
        }
        order
            .into_iter()
            .map(|s| {
                let (edge, _, t) = self.edges[via[s as usize] as usize];
                Impact {
                    id: self.ids[s as usize],
                    depth: dist[s as usize],
                    via: self.ids[t as usize],
                    edge,
                }
            })
            .collect()
    }
}

/// Text as a Mermaid quoted string shows it exactly: `"`, `#`, `<`, `>`, `&` and the
/// backtick as Mermaid entity codes (a backtick would start a Markdown string), control
/// characters and line separators as numeric codes.
pub fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '"' => out.push_str("#quot;"),
            '#' => out.push_str("#35;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '&' => out.push_str("#amp;"),
            '`' => out.push_str("#96;"),
            c if c.is_control() || c == '\u{2028}' || c == '\u{2029}' => {
                out.push_str(&format!("#{};", c as u32));
            }
            c => out.push(c),
        }
    }
    out
}

/// How a node of a kind is drawn: `(open, close)` around its quoted label.
fn shape(kind: &str) -> (&'static str, &'static str) {
    match kind {
        "service" => ("(", ")"),
        "database" => ("[(", ")]"),
        "queue" => ("[[", "]]"),
        "network" => ("([", "])"),
        "external" => ("{{", "}}"),
        "cloud_resource" => ("[/", "/]"),
        _ => ("[", "]"),
    }
}

/// A Mermaid `flowchart LR` of the graph: zones as nested `subgraph`s (a zone whose parent
/// is missing, or that would contain itself, is drawn at the top), every node in its zone,
/// every edge `a --> b` with its label. Identifiers are generated (`n1`, `z1`), never taken
/// from names; nodes and zones are drawn in the order given.
pub fn mermaid(nodes: &[Node], edges: &[Edge], zones: &[Zone]) -> String {
    let mut out = String::with_capacity(64 + nodes.len() * 48 + edges.len() * 40);
    out.push_str("flowchart LR\n");
    let zone_ix: HashMap<Uuid, usize> = zones.iter().enumerate().map(|(i, z)| (z.id, i)).collect();
    let node_ix: HashMap<Uuid, usize> = nodes.iter().enumerate().map(|(i, n)| (n.id, i)).collect();
    // The parent each zone is drawn in: none when missing or on a cycle.
    let parent: Vec<Option<usize>> = zones
        .iter()
        .enumerate()
        .map(|(i, z)| {
            let p = z.parent.and_then(|p| zone_ix.get(&p).copied())?;
            let mut at = Some(p);
            let mut steps = 0;
            while let Some(a) = at {
                if a == i || steps > zones.len() {
                    return None;
                }
                steps += 1;
                at = zones[a].parent.and_then(|p| zone_ix.get(&p).copied());
            }
            Some(p)
        })
        .collect();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); zones.len()];
    let mut top_zones = Vec::new();
    for (i, p) in parent.iter().enumerate() {
        match p {
            Some(p) => children[*p].push(i),
            None => top_zones.push(i),
        }
    }
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); zones.len()];
    let mut top_nodes = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        match n.zone_id.and_then(|z| zone_ix.get(&z)) {
            Some(z) => members[*z].push(i),
            None => top_nodes.push(i),
        }
    }
    let node_line = |out: &mut String, i: usize, indent: usize| {
        let n = &nodes[i];
        let (open, close) = shape(&n.kind);
        out.push_str(&" ".repeat(indent));
        out.push_str(&format!("n{}{open}\"{}\"{close}\n", i + 1, text(&n.name)));
    };
    // Depth-first, without recursion (a deep chain of zones cannot overflow the stack).
    let mut stack: Vec<(usize, usize, bool)> =
        top_zones.iter().rev().map(|&z| (z, 1, false)).collect();
    while let Some((z, depth, closing)) = stack.pop() {
        let indent = depth * 2;
        if closing {
            out.push_str(&" ".repeat(indent));
            out.push_str("end\n");
            continue;
        }
        out.push_str(&" ".repeat(indent));
        out.push_str(&format!(
            "subgraph z{}[\"{}\"]\n",
            z + 1,
            text(&zones[z].name)
        ));
        for &m in &members[z] {
            node_line(&mut out, m, indent + 2);
        }
        stack.push((z, depth, true));
        for &c in children[z].iter().rev() {
            stack.push((c, depth + 1, false));
        }
    }
    for &i in &top_nodes {
        node_line(&mut out, i, 2);
    }
    for e in edges {
        let (Some(s), Some(t)) = (node_ix.get(&e.source), node_ix.get(&e.target)) else {
            continue;
        };
        match e.label.as_deref().filter(|l| !l.is_empty()) {
            Some(l) => out.push_str(&format!("  n{} -->|\"{}\"| n{}\n", s + 1, text(l), t + 1)),
            None => out.push_str(&format!("  n{} --> n{}\n", s + 1, t + 1)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(i: u128) -> Uuid {
        Uuid::from_u128(i + 1)
    }

    /// The reference: shortest distances by relaxing every edge until nothing changes
    /// (Bellman–Ford with unit weights), no queue, no adjacency.
    fn reference(root: Uuid, edges: &[(Uuid, Uuid, Uuid)]) -> HashMap<Uuid, u32> {
        let mut d: HashMap<Uuid, u32> = HashMap::from([(root, 0)]);
        loop {
            let mut changed = false;
            for &(_, s, t) in edges {
                if let Some(&dt) = d.get(&t)
                    && d.get(&s).is_none_or(|&ds| ds > dt + 1)
                {
                    d.insert(s, dt + 1);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        d.remove(&root);
        d
    }

    use trusthub_core::rng::Xorshift as Rng;

    #[test]
    fn blast_radius_matches_the_reference_on_generated_graphs() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for round in 0..300 {
            let n = 1 + rng.below(60);
            let m = rng.below(n * 3 + 1);
            let edges: Vec<(Uuid, Uuid, Uuid)> = (0..m)
                .map(|e| {
                    (
                        id(100_000 + u128::from(e)),
                        id(u128::from(rng.below(n))),
                        id(u128::from(rng.below(n))),
                    )
                })
                .collect();
            let root = id(u128::from(rng.below(n)));
            let got = blast_radius(root, &edges, u32::MAX);
            let want = reference(root, &edges);
            assert_eq!(got.len(), want.len(), "round {round}");
            let by_id: HashMap<Uuid, (Uuid, Uuid)> =
                edges.iter().map(|e| (e.0, (e.1, e.2))).collect();
            let mut last = 0;
            let depth_of: HashMap<Uuid, u32> = got.iter().map(|i| (i.id, i.depth)).collect();
            for i in &got {
                assert_eq!(Some(&i.depth), want.get(&i.id), "round {round}");
                assert!(i.depth >= last, "nearest first");
                last = i.depth;
                // `via` is one step nearer along a real edge; following it reaches the root.
                assert_eq!(by_id[&i.edge], (i.id, i.via), "round {round}");
                let via_depth = if i.via == root { 0 } else { depth_of[&i.via] };
                assert_eq!(via_depth + 1, i.depth, "round {round}");
            }
            // A depth limit keeps exactly the nodes within it.
            let near = blast_radius(root, &edges, 2);
            assert_eq!(
                near.len(),
                want.values().filter(|d| **d <= 2).count(),
                "round {round}"
            );
        }
    }

    #[test]
    fn a_root_without_edges_and_cycles_are_handled() {
        assert!(blast_radius(id(1), &[], 32).is_empty());
        // a -> b -> c -> a: from c, b (1) then a (2); c itself is not impacted.
        let e = [
            (id(10), id(0), id(1)),
            (id(11), id(1), id(2)),
            (id(12), id(2), id(0)),
        ];
        let r = blast_radius(id(2), &e, 32);
        assert_eq!(
            r.iter()
                .map(|i| (i.id, i.depth, i.via, i.edge))
                .collect::<Vec<_>>(),
            vec![(id(1), 1, id(2), id(11)), (id(0), 2, id(1), id(10))]
        );
    }

    #[test]
    fn hostile_text_is_encoded() {
        assert_eq!(
            text(r#"a"b#c<d>e&f`g"#),
            "a#quot;b#35;c#lt;d#gt;e#amp;f#96;g"
        );
        assert_eq!(text("x\ny\u{2028}"), "x#10;y#8232;");
        assert_eq!(text("end ] ) | ; %% ünï"), "end ] ) | ; %% ünï");
    }

    #[test]
    fn zones_nest_and_a_cycle_of_zones_is_drawn_flat() {
        let z = [
            Zone {
                id: id(50),
                name: "outer".into(),
                parent: None,
            },
            Zone {
                id: id(51),
                name: "inner".into(),
                parent: Some(id(50)),
            },
            Zone {
                id: id(52),
                name: "loop a".into(),
                parent: Some(id(53)),
            },
            Zone {
                id: id(53),
                name: "loop b".into(),
                parent: Some(id(52)),
            },
        ];
        let n = [
            Node {
                id: id(1),
                name: "web".into(),
                kind: "host".into(),
                zone_id: Some(id(51)),
            },
            Node {
                id: id(2),
                name: "db".into(),
                kind: "database".into(),
                zone_id: None,
            },
        ];
        let e = [Edge {
            id: id(9),
            source: id(1),
            target: id(2),
            label: Some("tcp/5432".into()),
        }];
        let m = mermaid(&n, &e, &z);
        assert_eq!(
            m,
            "flowchart LR\n  subgraph z1[\"outer\"]\n    subgraph z2[\"inner\"]\n      n1[\"web\"]\n    end\n  end\n  \
             subgraph z3[\"loop a\"]\n  end\n  subgraph z4[\"loop b\"]\n  end\n  n2[(\"db\")]\n  n1 -->|\"tcp/5432\"| n2\n"
        );
    }
}
