//! The topology tables: zones, nodes, edges, snapshots and diagrams.

use serde_json::Value;
use sqlx::types::Json;
use time::OffsetDateTime;
use trusthub_store::{Exec, Handle, StoreResult, TenantId, on};
use uuid::Uuid;

/// A zone as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Zone {
    /// Id.
    pub id: Uuid,
    /// Name.
    pub name: String,
    /// `network`, `trust`, `region`, `site`.
    pub kind: String,
    /// The zone it is part of.
    pub parent_id: Option<Uuid>,
    /// When.
    pub created_at: OffsetDateTime,
}

/// A node as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Node {
    /// Id.
    pub id: Uuid,
    /// Name.
    pub name: String,
    /// Kind.
    pub kind: String,
    /// The host it is.
    pub agent_id: Option<Uuid>,
    /// The cloud resource it is.
    pub cloud_resource_id: Option<Uuid>,
    /// Its zone.
    pub zone_id: Option<Uuid>,
    /// Tags.
    pub tags: Json<Vec<String>>,
    /// Free attributes (an object).
    pub attributes: Json<Value>,
    /// When.
    pub created_at: OffsetDateTime,
    /// Last change.
    pub updated_at: OffsetDateTime,
}

/// An edge as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Edge {
    /// Id.
    pub id: Uuid,
    /// The dependent.
    pub source_id: Uuid,
    /// What it depends on.
    pub target_id: Uuid,
    /// Protocol.
    pub protocol: Option<String>,
    /// Port.
    pub port: Option<i32>,
    /// Label.
    pub label: Option<String>,
    /// When.
    pub created_at: OffsetDateTime,
}

/// A diagram as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Diagram {
    /// Id.
    pub id: Uuid,
    /// Name.
    pub name: String,
    /// `mermaid`.
    pub kind: String,
    /// Its text.
    pub source: String,
    /// When.
    pub created_at: OffsetDateTime,
    /// Last change.
    pub updated_at: OffsetDateTime,
    /// The share token, sealed (none: not shared).
    pub share_sealed: Option<Vec<u8>>,
}

/// A write's place in the order of a tenant's graph: the stamp it found and the one it left.
/// Writes to one tenant's graph take their turn on its stamp row, so each one's `was` is the
/// `now` of the write before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Touched {
    /// The stamp before this write (nil before the first).
    pub was: Uuid,
    /// The stamp this write left.
    pub now: Uuid,
}

/// Marks the tenant's graph changed (every write of a node or an edge calls it, inside its
/// transaction): takes the stamp row's lock first, so the stamp read under it is the last
/// committed one.
pub async fn touch(ex: &mut impl Exec, tenant: TenantId) -> StoreResult<Touched> {
    on!(ex, c => sqlx::query("UPDATE topology_stamps SET stamp = stamp WHERE tenant_id = $1")
        .bind(tenant.0).execute(&mut *c).await?.rows_affected());
    let was = stamp(ex, tenant).await?;
    let now = Uuid::now_v7();
    on!(ex, c => sqlx::query(
        "INSERT INTO topology_stamps (tenant_id, stamp) VALUES ($1, $2) ON CONFLICT (tenant_id) DO UPDATE SET stamp = $2")
        .bind(tenant.0).bind(now).execute(&mut *c).await?.rows_affected());
    Ok(Touched { was, now })
}

/// The stamp of the tenant's graph as it is now (nil before the first write).
pub async fn stamp(ex: &mut impl Exec, tenant: TenantId) -> StoreResult<Uuid> {
    let s: Option<Uuid> = on!(ex, c => sqlx::query_scalar::<_, Uuid>("SELECT stamp FROM topology_stamps WHERE tenant_id = $1")
        .bind(tenant.0).fetch_optional(&mut *c).await?);
    Ok(s.unwrap_or_default())
}

const ZONE: &str = "id, name, kind, parent_id, created_at";
const NODE: &str = "id, name, kind, agent_id, cloud_resource_id, zone_id, tags, attributes, created_at, updated_at";
const EDGE: &str = "id, source_id, target_id, protocol, port, label, created_at";
const DIAGRAM: &str = "id, name, kind, source, created_at, updated_at, share_sealed";

/// Stores a zone.
pub async fn insert_zone(ex: &mut impl Exec, tenant: TenantId, z: &Zone) -> StoreResult<()> {
    on!(ex, c => sqlx::query("INSERT INTO topology_zones (id, tenant_id, name, kind, parent_id, created_at) VALUES ($1, $2, $3, $4, $5, $6)")
        .bind(z.id).bind(tenant.0).bind(&z.name).bind(&z.kind).bind(z.parent_id).bind(z.created_at)
        .execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// A tenant's zones, by name.
pub async fn zones(ex: &mut impl Exec, tenant: TenantId) -> StoreResult<Vec<Zone>> {
    let sql = format!("SELECT {ZONE} FROM topology_zones WHERE tenant_id = $1 ORDER BY name, id");
    Ok(
        on!(ex, c => sqlx::query_as::<_, Zone>(sqlx::AssertSqlSafe(sql)).bind(tenant.0).fetch_all(&mut *c).await?),
    )
}

/// Deletes a zone: its nodes leave it, its zones move up to its parent.
pub async fn delete_zone(
    ex: &mut impl Exec,
    tenant: TenantId,
    id: Uuid,
    parent: Option<Uuid>,
) -> StoreResult<bool> {
    touch(ex, tenant).await?;
    on!(ex, c => sqlx::query("UPDATE topology_nodes SET zone_id = NULL WHERE tenant_id = $1 AND zone_id = $2")
        .bind(tenant.0).bind(id).execute(&mut *c).await?.rows_affected());
    on!(ex, c => sqlx::query("UPDATE topology_zones SET parent_id = $3 WHERE tenant_id = $1 AND parent_id = $2")
        .bind(tenant.0).bind(id).bind(parent).execute(&mut *c).await?.rows_affected());
    let n = on!(ex, c => sqlx::query("DELETE FROM topology_zones WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.0).bind(id).execute(&mut *c).await?.rows_affected());
    Ok(n == 1)
}

/// Stores a node.
pub async fn insert_node(ex: &mut impl Exec, tenant: TenantId, n: &Node) -> StoreResult<Touched> {
    let t = touch(ex, tenant).await?;
    on!(ex, c => sqlx::query(
        "INSERT INTO topology_nodes (id, tenant_id, name, kind, agent_id, cloud_resource_id, zone_id, tags, attributes, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)")
        .bind(n.id).bind(tenant.0).bind(&n.name).bind(&n.kind).bind(n.agent_id).bind(n.cloud_resource_id)
        .bind(n.zone_id).bind(&n.tags).bind(&n.attributes).bind(n.created_at).bind(n.updated_at)
        .execute(&mut *c).await?.rows_affected());
    Ok(t)
}

/// Rewrites a node's fields.
pub async fn update_node(ex: &mut impl Exec, tenant: TenantId, n: &Node) -> StoreResult<Touched> {
    let t = touch(ex, tenant).await?;
    on!(ex, c => sqlx::query(
        "UPDATE topology_nodes SET name = $3, kind = $4, agent_id = $5, cloud_resource_id = $6, zone_id = $7, tags = $8, \
         attributes = $9, updated_at = $10 WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.0).bind(n.id).bind(&n.name).bind(&n.kind).bind(n.agent_id).bind(n.cloud_resource_id)
        .bind(n.zone_id).bind(&n.tags).bind(&n.attributes).bind(n.updated_at)
        .execute(&mut *c).await?.rows_affected());
    Ok(t)
}

/// A tenant's nodes, by name.
pub async fn nodes(ex: &mut impl Exec, tenant: TenantId) -> StoreResult<Vec<Node>> {
    let sql = format!("SELECT {NODE} FROM topology_nodes WHERE tenant_id = $1 ORDER BY name, id");
    Ok(
        on!(ex, c => sqlx::query_as::<_, Node>(sqlx::AssertSqlSafe(sql)).bind(tenant.0).fetch_all(&mut *c).await?),
    )
}

/// A page of a tenant's nodes by name, after `(name, id)`.
pub async fn nodes_page(
    ex: &mut impl Exec,
    tenant: TenantId,
    after: Option<(&str, Uuid)>,
    limit: i64,
) -> StoreResult<Vec<Node>> {
    let (name, id) = after.unwrap_or(("", Uuid::nil()));
    let sql = format!(
        "SELECT {NODE} FROM topology_nodes WHERE tenant_id = $1 AND ($2 = 0 OR name > $3 OR (name = $3 AND id > $4)) \
         ORDER BY name, id LIMIT $5"
    );
    Ok(
        on!(ex, c => sqlx::query_as::<_, Node>(sqlx::AssertSqlSafe(sql)).bind(tenant.0).bind(i32::from(after.is_some()))
            .bind(name).bind(id).bind(limit).fetch_all(&mut *c).await?),
    )
}

/// A page of a tenant's edges, oldest first (ids are time-ordered), after `id`.
pub async fn edges_page(
    ex: &mut impl Exec,
    tenant: TenantId,
    after: Option<Uuid>,
    limit: i64,
) -> StoreResult<Vec<Edge>> {
    let sql = format!(
        "SELECT {EDGE} FROM topology_edges WHERE tenant_id = $1 AND id > $2 ORDER BY id LIMIT $3"
    );
    Ok(
        on!(ex, c => sqlx::query_as::<_, Edge>(sqlx::AssertSqlSafe(sql)).bind(tenant.0)
            .bind(after.unwrap_or(Uuid::nil())).bind(limit).fetch_all(&mut *c).await?),
    )
}

/// How many nodes and edges a tenant holds.
pub async fn counts(ex: &mut impl Exec, tenant: TenantId) -> StoreResult<(i64, i64)> {
    let nodes: i64 = on!(ex, c => sqlx::query_scalar("SELECT COUNT(*) FROM topology_nodes WHERE tenant_id = $1")
        .bind(tenant.0).fetch_one(&mut *c).await?);
    let edges: i64 = on!(ex, c => sqlx::query_scalar("SELECT COUNT(*) FROM topology_edges WHERE tenant_id = $1")
        .bind(tenant.0).fetch_one(&mut *c).await?);
    Ok((nodes, edges))
}

/// Deletes a node with its edges (none: no such node).
pub async fn delete_node(
    ex: &mut impl Exec,
    tenant: TenantId,
    id: Uuid,
) -> StoreResult<Option<Touched>> {
    let t = touch(ex, tenant).await?;
    on!(ex, c => sqlx::query("DELETE FROM topology_edges WHERE tenant_id = $1 AND (source_id = $2 OR target_id = $2)")
        .bind(tenant.0).bind(id).execute(&mut *c).await?.rows_affected());
    let n = on!(ex, c => sqlx::query("DELETE FROM topology_nodes WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.0).bind(id).execute(&mut *c).await?.rows_affected());
    Ok((n == 1).then_some(t))
}

/// Stores an edge.
pub async fn insert_edge(ex: &mut impl Exec, tenant: TenantId, e: &Edge) -> StoreResult<Touched> {
    let t = touch(ex, tenant).await?;
    on!(ex, c => sqlx::query(
        "INSERT INTO topology_edges (id, tenant_id, source_id, target_id, protocol, port, label, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)")
        .bind(e.id).bind(tenant.0).bind(e.source_id).bind(e.target_id).bind(&e.protocol).bind(e.port).bind(&e.label)
        .bind(e.created_at).execute(&mut *c).await?.rows_affected());
    Ok(t)
}

/// A tenant's edges, oldest first.
pub async fn edges(ex: &mut impl Exec, tenant: TenantId) -> StoreResult<Vec<Edge>> {
    let sql =
        format!("SELECT {EDGE} FROM topology_edges WHERE tenant_id = $1 ORDER BY created_at, id");
    Ok(
        on!(ex, c => sqlx::query_as::<_, Edge>(sqlx::AssertSqlSafe(sql)).bind(tenant.0).fetch_all(&mut *c).await?),
    )
}

/// A uuid from the 32 hex digits both engines write it as (`hex()`, `uuid_send`).
fn hex_uuid(h: &str) -> StoreResult<Uuid> {
    Uuid::try_parse(h).map_err(|_| trusthub_store::StoreError::Corrupt("topology (packed ids)"))
}

/// What blast radius walks, read packed: each node's `(id, name, kind, agent)` and each
/// edge's `(id, source, target)` in creation order. The database builds one text of each (a
/// JSON array of the nodes, the edges' ids as fixed-width hex), far faster to read than
/// 60,000 typed rows.
#[allow(clippy::type_complexity)]
pub async fn walkable_graph(
    ex: &mut impl Exec,
    tenant: TenantId,
) -> StoreResult<(
    Vec<(Uuid, String, String, Option<Uuid>)>,
    Vec<(Uuid, Uuid, Uuid)>,
)> {
    let (nodes, edges): (Option<String>, Option<String>) = match ex.handle() {
        Handle::Sqlite(c) => {
            let nodes: Option<String> = sqlx::query_scalar(
                "SELECT json_group_array(json_array(hex(id), name, kind, hex(agent_id))) \
                 FROM topology_nodes WHERE tenant_id = $1",
            )
            .bind(tenant.0)
            .fetch_one(&mut *c)
            .await?;
            let edges: Option<String> = sqlx::query_scalar(
                "SELECT group_concat(hex(id) || hex(source_id) || hex(target_id), '') FROM \
                 (SELECT id, source_id, target_id FROM topology_edges WHERE tenant_id = $1 \
                 ORDER BY created_at, id)",
            )
            .bind(tenant.0)
            .fetch_one(&mut *c)
            .await?;
            (nodes, edges)
        }
        Handle::Postgres(c) => {
            let nodes: Option<String> = sqlx::query_scalar(
                "SELECT json_agg(json_build_array(encode(uuid_send(id), 'hex'), name, kind, \
                 encode(uuid_send(agent_id), 'hex')))::text FROM topology_nodes WHERE tenant_id = $1",
            )
            .bind(tenant.0)
            .fetch_one(&mut *c)
            .await?;
            let edges: Option<String> = sqlx::query_scalar(
                "SELECT string_agg(encode(uuid_send(id), 'hex') || encode(uuid_send(source_id), 'hex') \
                 || encode(uuid_send(target_id), 'hex'), '' ORDER BY created_at, id) \
                 FROM topology_edges WHERE tenant_id = $1",
            )
            .bind(tenant.0)
            .fetch_one(&mut *c)
            .await?;
            (nodes, edges)
        }
    };
    let bad = || trusthub_store::StoreError::Corrupt("topology (packed graph)");
    let rows: Vec<(String, String, String, Option<String>)> = match nodes {
        Some(text) => serde_json::from_str(&text).map_err(|_| bad())?,
        None => Vec::new(),
    };
    let mut out_nodes = Vec::with_capacity(rows.len());
    for (id, name, kind, agent) in rows {
        let agent = match agent.as_deref() {
            None | Some("") => None,
            Some(a) => Some(hex_uuid(a)?),
        };
        out_nodes.push((hex_uuid(&id)?, name, kind, agent));
    }
    let edges = edges.unwrap_or_default();
    if edges.len() % 96 != 0 || !edges.is_ascii() {
        return Err(bad());
    }
    let mut out_edges = Vec::with_capacity(edges.len() / 96);
    for e in edges.as_bytes().chunks(96) {
        let part = |i: usize| std::str::from_utf8(&e[i * 32..(i + 1) * 32]).map_err(|_| bad());
        out_edges.push((
            hex_uuid(part(0)?)?,
            hex_uuid(part(1)?)?,
            hex_uuid(part(2)?)?,
        ));
    }
    Ok((out_nodes, out_edges))
}

/// Which of `ids` are the tenant's nodes.
pub async fn nodes_exist(
    ex: &mut impl Exec,
    tenant: TenantId,
    ids: [Uuid; 2],
) -> StoreResult<[bool; 2]> {
    let found: Vec<Uuid> = on!(ex, c => sqlx::query_scalar::<_, Uuid>(
        "SELECT id FROM topology_nodes WHERE tenant_id = $1 AND (id = $2 OR id = $3)")
        .bind(tenant.0).bind(ids[0]).bind(ids[1]).fetch_all(&mut *c).await?);
    Ok([found.contains(&ids[0]), found.contains(&ids[1])])
}

/// The edge that already is this dependency (same ends, protocol and port), if any.
pub async fn same_edge(
    ex: &mut impl Exec,
    tenant: TenantId,
    e: &Edge,
) -> StoreResult<Option<Uuid>> {
    Ok(on!(ex, c => sqlx::query_scalar::<_, Uuid>(
        "SELECT id FROM topology_edges WHERE tenant_id = $1 AND source_id = $2 AND target_id = $3 \
         AND COALESCE(protocol, '') = COALESCE($4, '') AND COALESCE(port, -1) = COALESCE($5, -1)")
        .bind(tenant.0).bind(e.source_id).bind(e.target_id).bind(&e.protocol).bind(e.port)
        .fetch_optional(&mut *c).await?))
}

/// Deletes an edge (none: no such edge).
pub async fn delete_edge(
    ex: &mut impl Exec,
    tenant: TenantId,
    id: Uuid,
) -> StoreResult<Option<Touched>> {
    let t = touch(ex, tenant).await?;
    let n = on!(ex, c => sqlx::query("DELETE FROM topology_edges WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.0).bind(id).execute(&mut *c).await?.rows_affected());
    Ok((n == 1).then_some(t))
}

/// A snapshot as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Snapshot {
    /// Id.
    pub id: Uuid,
    /// When.
    pub created_at: OffsetDateTime,
    /// `{nodes, edges}` as frozen.
    pub graph: Json<Value>,
    /// Nodes in it.
    pub node_count: i64,
    /// Edges in it.
    pub edge_count: i64,
    /// SHA-256 of the canonical JSON of the graph.
    pub sha256: String,
}

/// Stores a snapshot.
pub async fn insert_snapshot(
    ex: &mut impl Exec,
    tenant: TenantId,
    s: &Snapshot,
) -> StoreResult<()> {
    on!(ex, c => sqlx::query(
        "INSERT INTO topology_snapshots (id, tenant_id, created_at, graph, node_count, edge_count, sha256) VALUES ($1, $2, $3, $4, $5, $6, $7)")
        .bind(s.id).bind(tenant.0).bind(s.created_at).bind(&s.graph).bind(s.node_count).bind(s.edge_count).bind(&s.sha256)
        .execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// A tenant's snapshots without their graphs, newest first: `(id, created_at, nodes, edges, sha256)`.
pub async fn snapshots(
    ex: &mut impl Exec,
    tenant: TenantId,
) -> StoreResult<Vec<(Uuid, OffsetDateTime, i64, i64, String)>> {
    Ok(
        on!(ex, c => sqlx::query_as::<_, (Uuid, OffsetDateTime, i64, i64, String)>(
        "SELECT id, created_at, node_count, edge_count, sha256 FROM topology_snapshots WHERE tenant_id = $1 ORDER BY created_at DESC, id DESC")
        .bind(tenant.0).fetch_all(&mut *c).await?),
    )
}

/// A tenant's snapshot.
pub async fn snapshot(
    ex: &mut impl Exec,
    tenant: TenantId,
    id: Uuid,
) -> StoreResult<Option<Snapshot>> {
    Ok(on!(ex, c => sqlx::query_as::<_, Snapshot>(
        "SELECT id, created_at, graph, node_count, edge_count, sha256 FROM topology_snapshots WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.0).bind(id).fetch_optional(&mut *c).await?))
}

/// Stores a diagram.
pub async fn insert_diagram(ex: &mut impl Exec, tenant: TenantId, d: &Diagram) -> StoreResult<()> {
    on!(ex, c => sqlx::query(
        "INSERT INTO diagrams (id, tenant_id, name, kind, source, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7)")
        .bind(d.id).bind(tenant.0).bind(&d.name).bind(&d.kind).bind(&d.source).bind(d.created_at).bind(d.updated_at)
        .execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// A tenant's diagrams, by name.
pub async fn diagrams(ex: &mut impl Exec, tenant: TenantId) -> StoreResult<Vec<Diagram>> {
    let sql = format!("SELECT {DIAGRAM} FROM diagrams WHERE tenant_id = $1 ORDER BY name, id");
    Ok(
        on!(ex, c => sqlx::query_as::<_, Diagram>(sqlx::AssertSqlSafe(sql)).bind(tenant.0).fetch_all(&mut *c).await?),
    )
}

/// A tenant's diagram.
pub async fn diagram(
    ex: &mut impl Exec,
    tenant: TenantId,
    id: Uuid,
) -> StoreResult<Option<Diagram>> {
    let sql = format!("SELECT {DIAGRAM} FROM diagrams WHERE tenant_id = $1 AND id = $2");
    Ok(
        on!(ex, c => sqlx::query_as::<_, Diagram>(sqlx::AssertSqlSafe(sql)).bind(tenant.0).bind(id).fetch_optional(&mut *c).await?),
    )
}

/// The diagram a share token's hash opens (any tenant's: the token is the key).
pub async fn shared(ex: &mut impl Exec, hash: &str) -> StoreResult<Option<Diagram>> {
    let sql = format!("SELECT {DIAGRAM} FROM diagrams WHERE share_hash = $1");
    Ok(
        on!(ex, c => sqlx::query_as::<_, Diagram>(sqlx::AssertSqlSafe(sql)).bind(hash).fetch_optional(&mut *c).await?),
    )
}

/// Rewrites a diagram's name and text.
pub async fn update_diagram(ex: &mut impl Exec, tenant: TenantId, d: &Diagram) -> StoreResult<()> {
    on!(ex, c => sqlx::query("UPDATE diagrams SET name = $3, source = $4, updated_at = $5 WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.0).bind(d.id).bind(&d.name).bind(&d.source).bind(d.updated_at).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// Sets or clears (`None`) a diagram's share token: its hash and its sealed form.
pub async fn set_share(
    ex: &mut impl Exec,
    tenant: TenantId,
    id: Uuid,
    share: Option<(String, Vec<u8>)>,
) -> StoreResult<()> {
    let (hash, sealed) = share.unzip();
    on!(ex, c => sqlx::query("UPDATE diagrams SET share_hash = $3, share_sealed = $4 WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.0).bind(id).bind(hash).bind(sealed).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// Deletes a diagram (its share link with it).
pub async fn delete_diagram(ex: &mut impl Exec, tenant: TenantId, id: Uuid) -> StoreResult<bool> {
    let n = on!(ex, c => sqlx::query("DELETE FROM diagrams WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.0).bind(id).execute(&mut *c).await?.rows_affected());
    Ok(n == 1)
}
