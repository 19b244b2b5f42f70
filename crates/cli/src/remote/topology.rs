//! `trusthub topology …`, `trusthub diagrams …` and `trusthub blast-radius` (CONTRACT 24,
//! 28): nodes, edges and zones, what agents detected and its promotion, snapshots, the
//! Mermaid export; diagrams with their share links; what fails with a node or a host.

use super::{DIAGRAM, Global, NODE, client, delete, id, list, named, print};
use crate::remote::client::Failure;
use reqwest::Method;
use serde_json::{Value, json};

/// `trusthub topology …`.
#[derive(Debug, clap::Subcommand)]
pub enum TopologyCmd {
    /// The nodes.
    Nodes,
    /// Add a node (operator).
    AddNode {
        /// Its name.
        name: String,
        /// `host`, `service`, `database`, `queue`, `network`, `external` or `cloud_resource`.
        #[arg(long, default_value = "host", value_parser = ["host", "service", "database", "queue", "network", "external", "cloud_resource"])]
        kind: String,
        /// The agent it is.
        #[arg(long)]
        agent: Option<String>,
        /// Its zone.
        #[arg(long)]
        zone: Option<String>,
        /// A tag (repeatable).
        #[arg(long = "tag")]
        tags: Vec<String>,
    },
    /// Delete a node and its edges (operator).
    RmNode {
        /// Node id or name.
        node: String,
    },
    /// The edges (`source` depends on `target`).
    Edges,
    /// Add an edge: SOURCE depends on TARGET (operator).
    AddEdge {
        /// The dependent node's id.
        source: String,
        /// The id of the node it depends on.
        target: String,
        /// Protocol (`tcp`, `https`, …).
        #[arg(long)]
        protocol: Option<String>,
        /// Port.
        #[arg(long)]
        port: Option<u32>,
        /// Label.
        #[arg(long)]
        label: Option<String>,
    },
    /// Delete an edge (operator).
    RmEdge {
        /// Edge id.
        edge: String,
    },
    /// The zones.
    Zones,
    /// Add a zone (operator).
    AddZone {
        /// Its name.
        name: String,
        /// `network`, `trust`, `region` or `site`.
        #[arg(long, default_value = "network", value_parser = ["network", "trust", "region", "site"])]
        kind: String,
        /// The zone it is inside.
        #[arg(long)]
        parent: Option<String>,
    },
    /// Delete a zone (operator): its nodes leave it, its zones move up.
    RmZone {
        /// Zone id.
        zone: String,
    },
    /// What agents and cloud discovery show.
    Detected {
        /// Only what the topology does not hold yet.
        #[arg(long)]
        unmatched: bool,
    },
    /// Make a detected node or edge part of the topology (operator).
    Promote {
        /// Detected item id.
        item: String,
    },
    /// Freeze the topology now (operator) and print the snapshot's hash.
    Snapshot,
    /// The snapshots, newest first.
    Snapshots,
    /// One snapshot's frozen graph (JSON).
    ShowSnapshot {
        /// Snapshot id.
        snapshot: String,
    },
    /// The topology as Mermaid text.
    Export,
}

/// `trusthub diagrams …`.
#[derive(Debug, clap::Subcommand)]
pub enum DiagramsCmd {
    /// The diagrams (`list` works too).
    #[command(alias = "list")]
    Ls,
    /// Generate a diagram from the topology (operator).
    Generate {
        /// `tenant`, `zone` or `agent`.
        #[arg(long, default_value = "tenant", value_parser = ["tenant", "zone", "agent"])]
        scope: String,
        /// The zone or the agent.
        #[arg(long)]
        id: Option<String>,
        /// Its name.
        #[arg(long)]
        name: Option<String>,
    },
    /// The built-in templates.
    Templates,
    /// A diagram from a template (operator).
    FromTemplate {
        /// Template id.
        template: String,
        /// Its name.
        #[arg(long)]
        name: Option<String>,
    },
    /// A diagram's Mermaid text.
    Show {
        /// Diagram id or name.
        diagram: String,
    },
    /// Replace a diagram's text with a file's (`-`: standard input) (operator).
    Edit {
        /// Diagram id or name.
        diagram: String,
        /// The Mermaid file.
        #[arg(long)]
        file: std::path::PathBuf,
        /// A new name.
        #[arg(long)]
        name: Option<String>,
    },
    /// Delete a diagram and its share link (operator).
    Rm {
        /// Diagram id or name.
        diagram: String,
    },
    /// Share a diagram by a public link and print it (operator).
    Share {
        /// Diagram id or name.
        diagram: String,
    },
    /// End a diagram's public link (operator).
    Unshare {
        /// Diagram id or name.
        diagram: String,
    },
}

const NODES: &[super::Column] = &[
    ("id", "/id"),
    ("name", "/name"),
    ("kind", "/kind"),
    ("agent", "/agent_id"),
    ("zone", "/zone_id"),
    ("tags", "/tags"),
];
const EDGES: &[super::Column] = &[
    ("id", "/id"),
    ("source", "/source_id"),
    ("target", "/target_id"),
    ("protocol", "/protocol"),
    ("port", "/port"),
    ("label", "/label"),
];
const ZONES: &[super::Column] = &[
    ("id", "/id"),
    ("name", "/name"),
    ("kind", "/kind"),
    ("parent", "/parent_id"),
];
const DETECTED: &[super::Column] = &[
    ("id", "/id"),
    ("kind", "/kind"),
    ("source", "/source"),
    ("name", "/name"),
    ("label", "/label"),
    ("matched", "/matched_id"),
];
const SNAPSHOTS: &[super::Column] = &[
    ("id", "/id"),
    ("created", "/created_at"),
    ("nodes", "/node_count"),
    ("edges", "/edge_count"),
    ("sha256", "/sha256"),
];
const DIAGRAMS: &[super::Column] = &[
    ("id", "/id"),
    ("name", "/name"),
    ("updated", "/updated_at"),
    ("share token", "/share_token"),
];
const TEMPLATES: &[super::Column] = &[
    ("id", "/id"),
    ("name", "/name"),
    ("description", "/description"),
];
const IMPACTED: &[super::Column] = &[
    ("id", "/id"),
    ("name", "/name"),
    ("kind", "/kind"),
    ("depth", "/depth"),
    ("via", "/via"),
];

fn opt_id(s: Option<String>) -> Result<Option<String>, Failure> {
    s.map(|s| id(&s)).transpose()
}

/// Prints text as it is (a Mermaid export, a diagram's source).
fn raw(text: &str) {
    print!("{text}");
    if !text.ends_with('\n') {
        println!();
    }
}

/// `trusthub topology …`.
pub async fn topology(cmd: TopologyCmd, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    match cmd {
        TopologyCmd::Nodes => super::list_paged(&c, "/topology/nodes", NODES, g).await,
        TopologyCmd::AddNode {
            name,
            kind,
            agent,
            zone,
            tags,
        } => {
            let body = json!({"name": name, "kind": kind, "agent_id": opt_id(agent)?, "zone_id": opt_id(zone)?, "tags": tags});
            print(
                &c.json(Method::POST, "/topology/nodes", &body).await?,
                NODES,
                g.output,
            )
        }
        TopologyCmd::RmNode { node } => {
            delete(
                &c,
                &format!("/topology/nodes/{}", named(&c, &node, NODE).await?),
                format!("deleted node {node} and its edges"),
            )
            .await
        }
        TopologyCmd::Edges => super::list_paged(&c, "/topology/edges", EDGES, g).await,
        TopologyCmd::AddEdge {
            source,
            target,
            protocol,
            port,
            label,
        } => {
            let body = json!({"source_id": named(&c, &source, NODE).await?, "target_id": named(&c, &target, NODE).await?, "protocol": protocol, "port": port, "label": label});
            print(
                &c.json(Method::POST, "/topology/edges", &body).await?,
                EDGES,
                g.output,
            )
        }
        TopologyCmd::RmEdge { edge } => {
            delete(
                &c,
                &format!("/topology/edges/{}", id(&edge)?),
                format!("deleted edge {edge}"),
            )
            .await
        }
        TopologyCmd::Zones => list(&c, "/topology/zones", ZONES, g, false).await,
        TopologyCmd::AddZone { name, kind, parent } => {
            let body = json!({"name": name, "kind": kind, "parent_id": opt_id(parent)?});
            print(
                &c.json(Method::POST, "/topology/zones", &body).await?,
                ZONES,
                g.output,
            )
        }
        TopologyCmd::RmZone { zone } => {
            delete(
                &c,
                &format!("/topology/zones/{}", id(&zone)?),
                format!("deleted zone {zone}"),
            )
            .await
        }
        TopologyCmd::Detected { unmatched } => {
            let path = if unmatched {
                "/topology/detected?unmatched=1"
            } else {
                "/topology/detected"
            };
            list(&c, path, DETECTED, g, false).await
        }
        TopologyCmd::Promote { item } => {
            let v = c
                .send(c.request(
                    Method::POST,
                    &format!("/topology/detected/{}/promote", id(&item)?),
                ))
                .await?;
            for n in v["created_nodes"].as_array().into_iter().flatten() {
                eprintln!(
                    "node {} made for {}",
                    n["id"].as_str().unwrap_or_default(),
                    n["name"].as_str().unwrap_or_default()
                );
            }
            match (&v["node"], &v["edge"]) {
                (n, _) if n.is_object() => print(n, NODES, g.output),
                (_, e) => print(e, EDGES, g.output),
            }
        }
        TopologyCmd::Snapshot => {
            let v = c
                .json(Method::POST, "/topology/snapshots", &json!({}))
                .await?;
            let summary = json!({"id": v["id"], "created_at": v["created_at"],
                "node_count": v["nodes"].as_array().map_or(0, Vec::len), "edge_count": v["edges"].as_array().map_or(0, Vec::len),
                "sha256": v["sha256"]});
            print(&summary, SNAPSHOTS, g.output)
        }
        TopologyCmd::Snapshots => list(&c, "/topology/snapshots", SNAPSHOTS, g, false).await,
        TopologyCmd::ShowSnapshot { snapshot } => {
            let v = c
                .get(&format!("/topology/snapshots/{}", id(&snapshot)?))
                .await?;
            raw(&serde_json::to_string_pretty(&v).unwrap_or_default());
            Ok(())
        }
        TopologyCmd::Export => {
            let bytes = c.bytes("/topology/export/mermaid").await?;
            raw(&String::from_utf8_lossy(&bytes));
            Ok(())
        }
    }
}

/// `trusthub diagrams …`.
pub async fn diagrams(cmd: DiagramsCmd, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    match cmd {
        DiagramsCmd::Ls => list(&c, "/diagrams", DIAGRAMS, g, false).await,
        DiagramsCmd::Generate {
            scope,
            id: of,
            name,
        } => {
            let body = json!({"scope": scope, "id": opt_id(of)?, "name": name});
            print(
                &c.json(Method::POST, "/diagrams/generate", &body).await?,
                DIAGRAMS,
                g.output,
            )
        }
        DiagramsCmd::Templates => list(&c, "/diagrams/templates", TEMPLATES, g, false).await,
        DiagramsCmd::FromTemplate { template, name } => {
            let body = match name {
                Some(n) => json!({"name": n}),
                None => json!({}),
            };
            let path = format!("/diagrams/from-template/{}", super::encode(&template));
            print(
                &c.json(Method::POST, &path, &body).await?,
                DIAGRAMS,
                g.output,
            )
        }
        DiagramsCmd::Show { diagram } => {
            let v = c
                .get(&format!(
                    "/diagrams/{}",
                    named(&c, &diagram, DIAGRAM).await?
                ))
                .await?;
            raw(v["source"].as_str().unwrap_or_default());
            Ok(())
        }
        DiagramsCmd::Edit {
            diagram,
            file,
            name,
        } => {
            let path = format!("/diagrams/{}", named(&c, &diagram, DIAGRAM).await?);
            let source = if file.as_os_str() == "-" {
                std::io::read_to_string(std::io::stdin())
                    .map_err(|e| Failure::error(format!("stdin: {e}")))?
            } else {
                std::fs::read_to_string(&file)
                    .map_err(|e| Failure::error(format!("{}: {e}", file.display())))?
            };
            let name = match name {
                Some(n) => n,
                None => c.get(&path).await?["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            };
            let v = c
                .json(Method::PUT, &path, &json!({"name": name, "source": source}))
                .await?;
            print(&v, DIAGRAMS, g.output)
        }
        DiagramsCmd::Rm { diagram } => {
            delete(
                &c,
                &format!("/diagrams/{}", named(&c, &diagram, DIAGRAM).await?),
                format!("deleted diagram {diagram}"),
            )
            .await
        }
        DiagramsCmd::Share { diagram } => {
            let v = c
                .json(
                    Method::POST,
                    &format!("/diagrams/{}/share", named(&c, &diagram, DIAGRAM).await?),
                    &json!({}),
                )
                .await?;
            eprintln!(
                "anyone with this link can see the diagram until `trusthub diagrams unshare {diagram}`:"
            );
            print(&v, &[("url", "/url")], g.output)
        }
        DiagramsCmd::Unshare { diagram } => {
            c.json(
                Method::POST,
                &format!("/diagrams/{}/unshare", named(&c, &diagram, DIAGRAM).await?),
                &json!({}),
            )
            .await?;
            eprintln!("the public link of {diagram} no longer works");
            Ok(())
        }
    }
}

/// `trusthub blast-radius ID`: what fails with a node or a host.
pub async fn blast_radius(of: &str, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    let v: Value = c.get(&format!("/blast-radius/{}", id(of)?)).await?;
    if g.output != super::output::Format::Table {
        return print(&v, IMPACTED, g.output);
    }
    eprintln!(
        "if {} fails, {} node(s) are affected (depth {})",
        v["root"]["name"].as_str().unwrap_or_default(),
        v["impacted"].as_array().map_or(0, Vec::len),
        v["depth"]
    );
    print(&v["impacted"], IMPACTED, g.output)?;
    for a in v["apps"].as_array().into_iter().flatten() {
        eprintln!(
            "app at risk: {} ({})",
            a["name"].as_str().unwrap_or_default(),
            a["id"].as_str().unwrap_or_default()
        );
    }
    for s in v["slos_at_risk"].as_array().into_iter().flatten() {
        eprintln!(
            "SLO at risk: app {} with {} min of budget left",
            s["app_id"].as_str().unwrap_or_default(),
            s["budget_remaining_minutes"]
        );
    }
    Ok(())
}
