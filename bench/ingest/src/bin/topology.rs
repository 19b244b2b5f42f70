//! Topology benchmark (issue 35): the Mermaid export of `--export-nodes` nodes (in 20
//! zones, three edges each) and the blast radius of a graph of `--nodes` nodes and
//! `--edges` edges, each through the hub's API on a port (`GET /topology/export/mermaid`,
//! `GET /blast-radius/{id}`), `--runs` requests each, p50 and p99. The graph is a layered
//! service map — each node depends on random nodes of the next layers, as real maps are
//! (most things depend on a few shared databases and queues) — written straight into the
//! tables. Ceiling in the same run: the same rules in process, without the hub
//! (`graph::mermaid`, `graph::blast_radius` on the edges already in memory).
//!
//! `cargo run --release -p trusthub-bench-ingest --bin topology`
//! (add `--database-url postgres://...` for PostgreSQL; the database must be empty).

use clap::Parser;
use serde_json::json;
use std::time::{Duration, Instant};
use trusthub_bench_ingest::{owner_cookie, owner_tenant, pct, quiet_settings, timed_get};
use trusthub_hub::Server;
use trusthub_topology::graph;
use trusthub_topology::raw::{Edge, Json, Node, Zone, insert_edge, insert_node, insert_zone};
use uuid::Uuid;

#[derive(Debug, Parser)]
struct Args {
    /// Nodes of the blast-radius graph.
    #[arg(long, default_value_t = 10_000)]
    nodes: usize,
    /// Its edges.
    #[arg(long, default_value_t = 50_000)]
    edges: usize,
    /// Nodes of the exported graph (made first, part of the same tenant's graph).
    #[arg(long, default_value_t = 1_000)]
    export_nodes: usize,
    /// Requests per measure.
    #[arg(long, default_value_t = 50)]
    runs: usize,
    /// Nodes of the dependency chain whose whole blast radius is asked for (each depends on
    /// the next; the root is the last): the answer's size and time (CONTRACT 30).
    #[arg(long, default_value_t = 10_000)]
    chain: usize,
    /// Database (default: SQLite in a temporary data dir).
    #[arg(long)]
    database_url: Option<String>,
}

use trusthub_core::rng::Xorshift as Rng;

/// A layered map of `n` nodes and `m` edges: node i depends on nodes after it.
fn edges_of(ids: &[Uuid], m: usize, rng: &mut Rng) -> Vec<(Uuid, Uuid, Uuid)> {
    let n = ids.len() as u64;
    let mut out = Vec::with_capacity(m);
    let mut seen = std::collections::HashSet::new();
    while out.len() < m {
        let s = rng.below(n - 1);
        // Mostly near (the next tier), sometimes far (a shared database).
        let span = if rng.next_u64().is_multiple_of(4) {
            n - s - 1
        } else {
            (n / 20).min(n - s - 1).max(1)
        };
        let t = s + 1 + rng.below(span);
        if seen.insert((s, t)) {
            out.push((Uuid::now_v7(), ids[s as usize], ids[t as usize]));
        }
    }
    out
}

async fn fill(
    db: &trusthub_store::Db,
    tenant: trusthub_store::TenantId,
    n: usize,
    m: usize,
    zones: usize,
    rng: &mut Rng,
) -> Result<
    (
        Vec<Uuid>,
        Vec<(Uuid, Uuid, Uuid)>,
        Vec<graph::Node>,
        Vec<graph::Zone>,
    ),
    Box<dyn std::error::Error>,
> {
    let now = trusthub_hub::state::now();
    let mut tx = db.begin().await?;
    let mut zs = Vec::new();
    for z in 0..zones {
        let zone = Zone {
            id: Uuid::now_v7(),
            name: format!("zone \"{z}\" <dc>"),
            kind: "network".into(),
            parent_id: None,
            created_at: now,
        };
        insert_zone(&mut tx, tenant, &zone).await?;
        zs.push(graph::Zone {
            id: zone.id,
            name: zone.name,
            parent: None,
        });
    }
    let mut ids = Vec::with_capacity(n);
    let mut gn = Vec::with_capacity(n);
    for i in 0..n {
        let node = Node {
            id: Uuid::now_v7(),
            name: format!("svc-{i} #{}", i % 7),
            kind: ["host", "service", "database", "queue"][i % 4].into(),
            agent_id: None,
            cloud_resource_id: None,
            zone_id: (!zs.is_empty()).then(|| zs[i % zs.len()].id),
            tags: Json(vec![format!("tier:{}", i % 5)]),
            attributes: Json(json!({"owner": "team-a"})),
            created_at: now,
            updated_at: now,
        };
        insert_node(&mut tx, tenant, &node).await?;
        ids.push(node.id);
        gn.push(graph::Node {
            id: node.id,
            name: node.name,
            kind: node.kind,
            zone_id: node.zone_id,
        });
    }
    let edges = edges_of(&ids, m, rng);
    for (id, s, t) in &edges {
        let e = Edge {
            id: *id,
            source_id: *s,
            target_id: *t,
            protocol: Some("tcp".into()),
            port: Some(5432),
            label: None,
            created_at: now,
        };
        insert_edge(&mut tx, tenant, &e).await?;
    }
    tx.commit().await?;
    Ok((ids, edges, gn, zs))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = std::env::temp_dir().join(format!("th-topology-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir)?;
    let server = Server::build(quiet_settings(dir.clone(), args.database_url.clone())).await?;
    let db = server.state().db.clone();
    let tenant = owner_tenant(&db).await?;
    let api = format!("http://{}/api/v1", server.local_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.run(async move {
        let _ = stopped.await;
    }));
    let http = reqwest::Client::new();
    let cookie = owner_cookie(&http, &api, "bench password").await?;
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);

    // The export of a 1,000-node map in 20 zones.
    let (_, e1, gn, gz) = fill(
        &db,
        tenant,
        args.export_nodes,
        args.export_nodes * 3,
        20,
        &mut rng,
    )
    .await?;
    let ge: Vec<graph::Edge> = e1
        .iter()
        .map(|(id, s, t)| graph::Edge {
            id: *id,
            source: *s,
            target: *t,
            label: Some("tcp/5432".into()),
        })
        .collect();
    let mut raw = Vec::new();
    for _ in 0..args.runs {
        let t = Instant::now();
        std::hint::black_box(graph::mermaid(&gn, &ge, &gz));
        raw.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let (export, bytes) = timed_get(
        &http,
        &format!("{api}/topology/export/mermaid"),
        &cookie,
        args.runs,
    )
    .await?;
    println!(
        "mermaid export of {} nodes, {} edges, 20 zones ({bytes} bytes): API p50 {:.1} ms p99 {:.1} ms; in process p50 {:.2} ms",
        args.export_nodes,
        e1.len(),
        pct(export.clone(), 0.5),
        pct(export, 0.99),
        pct(raw, 0.5)
    );

    // The blast radius of a 10,000-node, 50,000-edge map (the 1,000 above are part of it:
    // the rest is added, then the edges).
    let rest = args.nodes.saturating_sub(args.export_nodes);
    let (ids, e2, _, _) = fill(
        &db,
        tenant,
        rest,
        args.edges.saturating_sub(e1.len()),
        0,
        &mut rng,
    )
    .await?;
    let all: Vec<(Uuid, Uuid, Uuid)> = e1.iter().chain(&e2).copied().collect();
    // Roots far down the layers: the most dependents.
    let roots: Vec<Uuid> = (0..args.runs)
        .map(|i| ids[ids.len() - 1 - (i * 37) % (ids.len() / 10)])
        .collect();
    let mut raw = Vec::new();
    let mut impacted = Vec::new();
    for r in &roots {
        let t = Instant::now();
        let got = graph::blast_radius(*r, &all, 32);
        raw.push(t.elapsed().as_secs_f64() * 1000.0);
        impacted.push(got.len() as f64);
    }
    let mut api_t = Vec::new();
    for r in &roots {
        let (t, _) = timed_get(&http, &format!("{api}/blast-radius/{r}"), &cookie, 1).await?;
        api_t.extend(t);
    }
    // The first request after a change reads the graph; the others walk the kept one.
    let cold = api_t[0];
    let warm = api_t[1..].to_vec();
    println!(
        "blast radius on {} nodes, {} edges (impacted per root p50 {:.0}, max {:.0}): API first after a change {:.1} ms, then p50 {:.1} ms p99 {:.1} ms; in process p50 {:.2} ms p99 {:.2} ms",
        args.export_nodes + rest,
        all.len(),
        pct(impacted.clone(), 0.5),
        pct(impacted, 1.0),
        cold,
        pct(warm.clone(), 0.5),
        pct(warm, 0.99),
        pct(raw.clone(), 0.5),
        pct(raw, 0.99)
    );
    // A real change: one new node and its edge to a root through the API (as an operator
    // or a promotion makes them), then the next blast radius reads the graph again. The
    // first request above follows the bulk fill (60,000 rows just written), which a hub
    // rarely sees; this is what follows an everyday change.
    let mut after_edge = Vec::new();
    for i in 0..5 {
        let node: serde_json::Value = http
            .post(format!("{api}/topology/nodes"))
            .header("cookie", &cookie)
            .json(&json!({"name": format!("probe-{i}"), "kind": "service"}))
            .send()
            .await?
            .json()
            .await?;
        let id = node["id"].as_str().ok_or("no node id")?;
        let r = http
            .post(format!("{api}/topology/edges"))
            .header("cookie", &cookie)
            .json(&json!({"source_id": id, "target_id": roots[0]}))
            .send()
            .await?;
        if !r.status().is_success() {
            return Err(format!("edge: {}", r.status()).into());
        }
        let (t, _) = timed_get(
            &http,
            &format!("{api}/blast-radius/{}", roots[0]),
            &cookie,
            1,
        )
        .await?;
        after_edge.push(t[0]);
    }
    println!(
        "blast radius, first after one new edge through the API: p50 {:.1} ms, max {:.1} ms ({} changes)",
        pct(after_edge.clone(), 0.5),
        pct(after_edge, 1.0),
        5
    );
    // Where the first request's time goes, in process: the packed read (the database
    // building the two texts, and their parsing) and the reverse adjacency built from it.
    let (mut read_t, mut build_t) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        let t = Instant::now();
        let mut c = db.conn().await?;
        let (nodes, ends) = trusthub_topology::raw::walkable_graph(&mut c, tenant).await?;
        drop(c);
        read_t.push(t.elapsed().as_secs_f64() * 1000.0);
        let t = Instant::now();
        let by_id: std::collections::HashMap<Uuid, _> =
            nodes.into_iter().map(|n| (n.0, (n.1, n.2, n.3))).collect();
        let reverse = graph::Reverse::new(&ends);
        build_t.push(t.elapsed().as_secs_f64() * 1000.0);
        drop((by_id, reverse));
    }
    println!(
        "  of which, in process: the packed read p50 {:.1} ms, the maps and reverse adjacency p50 {:.1} ms",
        pct(read_t, 0.5),
        pct(build_t, 0.5)
    );
    // A chain: node i depends on node i + 1; everything fails with the last. Its whole
    // blast radius lists every node once with `depth` and `via` (linear, not a path each).
    if args.chain > 1 {
        let now = trusthub_hub::state::now();
        let mut tx = db.begin().await?;
        let mut chain = Vec::with_capacity(args.chain);
        for i in 0..args.chain {
            let node = Node {
                id: Uuid::now_v7(),
                name: format!("chain-{i}"),
                kind: "service".into(),
                agent_id: None,
                cloud_resource_id: None,
                zone_id: None,
                tags: Json(Vec::new()),
                attributes: Json(json!({})),
                created_at: now,
                updated_at: now,
            };
            insert_node(&mut tx, tenant, &node).await?;
            chain.push(node.id);
        }
        let mut links = Vec::with_capacity(args.chain);
        for w in chain.windows(2) {
            let e = Edge {
                id: Uuid::now_v7(),
                source_id: w[0],
                target_id: w[1],
                protocol: Some("tcp".into()),
                port: Some(80),
                label: None,
                created_at: now,
            };
            insert_edge(&mut tx, tenant, &e).await?;
            links.push((e.id, w[0], w[1]));
        }
        tx.commit().await?;
        let root = chain[chain.len() - 1];
        let mut raw = Vec::new();
        for _ in 0..args.runs {
            let t = Instant::now();
            std::hint::black_box(graph::blast_radius(root, &links, u32::MAX));
            raw.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        let (times, bytes) = timed_get(
            &http,
            &format!("{api}/blast-radius/{root}?max_depth=1000000"),
            &cookie,
            args.runs + 1,
        )
        .await?;
        let warm = times[1..].to_vec();
        println!(
            "blast radius of a {}-node chain, whole depth ({bytes} bytes): API first {:.1} ms, then p50 {:.1} ms p99 {:.1} ms; in process p50 {:.2} ms",
            args.chain,
            times[0],
            pct(warm.clone(), 0.5),
            pct(warm, 0.99),
            pct(raw, 0.5)
        );
    }
    let _ = stop.send(());
    let _ = tokio::time::timeout(Duration::from_secs(5), serving).await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
