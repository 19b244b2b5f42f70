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

mod blast;
mod detected;
mod diagrams;
mod mermaid;
mod model;
mod snapshots;

pub use blast::*;
pub use detected::*;
pub use diagrams::*;
pub use mermaid::*;
pub use model::*;
pub use snapshots::*;

/// What a node is: read from a request's `kind` at the edge ([`NodeKind::parse`]), stored
/// and answered by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// A machine.
    Host,
    /// A program serving others.
    Service,
    /// A database.
    Database,
    /// A message queue.
    Queue,
    /// A network.
    Network,
    /// Something outside the tenant's hands.
    External,
    /// A cloud provider's resource.
    CloudResource,
}

/// Node kinds' names, in [`NodeKind`] order.
pub const NODE_KINDS: [&str; 7] = [
    "host",
    "service",
    "database",
    "queue",
    "network",
    "external",
    "cloud_resource",
];

impl NodeKind {
    const ALL: [NodeKind; 7] = [
        NodeKind::Host,
        NodeKind::Service,
        NodeKind::Database,
        NodeKind::Queue,
        NodeKind::Network,
        NodeKind::External,
        NodeKind::CloudResource,
    ];

    /// Its name.
    pub fn as_str(self) -> &'static str {
        NODE_KINDS[self as usize]
    }

    /// The kind of a name; 422 naming `field` and the kinds otherwise.
    pub fn parse(field: &str, s: &str) -> ApiResult<NodeKind> {
        named(field, s, &NODE_KINDS).map(|i| NodeKind::ALL[i])
    }
}

/// What a zone is: read at the edge ([`ZoneKind::parse`]), stored by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZoneKind {
    /// A network segment.
    Network,
    /// A trust boundary.
    Trust,
    /// A provider's region.
    Region,
    /// A physical site.
    Site,
}

/// Zone kinds' names, in [`ZoneKind`] order.
pub const ZONE_KINDS: [&str; 4] = ["network", "trust", "region", "site"];

impl ZoneKind {
    const ALL: [ZoneKind; 4] = [
        ZoneKind::Network,
        ZoneKind::Trust,
        ZoneKind::Region,
        ZoneKind::Site,
    ];

    /// Its name.
    pub fn as_str(self) -> &'static str {
        ZONE_KINDS[self as usize]
    }

    /// The kind of a name; 422 naming `field` and the kinds otherwise.
    pub fn parse(field: &str, s: &str) -> ApiResult<ZoneKind> {
        named(field, s, &ZONE_KINDS).map(|i| ZoneKind::ALL[i])
    }
}

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

/// The position of `s` among `allowed`; 422 naming `field` and what it takes otherwise.
fn named(field: &str, s: &str, allowed: &[&str]) -> ApiResult<usize> {
    allowed
        .iter()
        .position(|a| *a == s)
        .ok_or_else(|| ApiError::invalid(field, format!("must be one of {}", allowed.join(", "))))
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
