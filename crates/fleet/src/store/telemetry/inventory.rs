//! Inventory snapshots (latest plus history) and process lists.

use super::*;

/// Appends an inventory snapshot.
pub async fn insert_inventory(
    ex: &mut impl Exec,
    agent_id: Uuid,
    collected_at: OffsetDateTime,
    snapshot: &serde_json::Value,
    now: OffsetDateTime,
) -> StoreResult<()> {
    on!(ex, c => sqlx::query("INSERT INTO inventory_snapshots (agent_id, collected_at, received_at, snapshot) VALUES ($1, $2, $3, $4)")
        .bind(agent_id).bind(collected_at).bind(now).bind(Json(snapshot)).execute(&mut *c).await?.rows_affected());
    // What cloud discovery matches a host by (CONTRACT 23), kept beside the host.
    let addrs: Vec<&str> = snapshot["network"]["interfaces"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|i| i["addrs"].as_array().into_iter().flatten())
        .filter_map(|a| a.as_str())
        .collect();
    let instance = snapshot["cloud"]["instance_id"].as_str();
    on!(ex, c => sqlx::query("UPDATE agents SET net_addrs = $1, cloud_instance_id = $2 WHERE id = $3")
        .bind(Json(&addrs)).bind(instance).bind(agent_id).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// A tenant's hosts with what cloud discovery matches them by: id, host name, addresses,
/// cloud instance id.
pub async fn host_keys(
    ex: &mut impl Exec,
    tenant: TenantId,
) -> StoreResult<Vec<(Uuid, String, Json<Vec<String>>, Option<String>)>> {
    Ok(
        on!(ex, c => sqlx::query_as::<_, (Uuid, String, Json<Vec<String>>, Option<String>)>(
        "SELECT id, hostname, net_addrs, cloud_instance_id FROM agents WHERE tenant_id = $1")
        .bind(tenant.0).fetch_all(&mut *c).await?),
    )
}

/// Replaces the agent's process list.
pub async fn set_processes(
    ex: &mut impl Exec,
    agent_id: Uuid,
    processes: &[serde_json::Value],
    now: OffsetDateTime,
) -> StoreResult<()> {
    on!(ex, c => sqlx::query(
        "INSERT INTO agent_processes (agent_id, received_at, processes) VALUES ($1, $2, $3) \
         ON CONFLICT (agent_id) DO UPDATE SET received_at = excluded.received_at, processes = excluded.processes")
        .bind(agent_id).bind(now).bind(Json(processes)).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// A stored inventory snapshot.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Snapshot {
    /// When the agent collected it.
    pub collected_at: OffsetDateTime,
    /// When the hub stored it.
    pub received_at: OffsetDateTime,
    /// The snapshot.
    pub snapshot: Json<serde_json::Value>,
}

/// The latest snapshot of a tenant's agent.
pub async fn latest_inventory(
    ex: &mut impl Exec,
    tenant: TenantId,
    agent_id: Uuid,
) -> StoreResult<Option<Snapshot>> {
    Ok(on!(ex, c => sqlx::query_as::<_, Snapshot>(
        "SELECT s.collected_at, s.received_at, s.snapshot FROM inventory_snapshots s JOIN agents a ON a.id = s.agent_id \
         WHERE a.tenant_id = $1 AND s.agent_id = $2 ORDER BY s.id DESC LIMIT 1")
        .bind(tenant.0).bind(agent_id).fetch_optional(&mut *c).await?))
}

/// Each of a tenant's agents' latest inventory snapshot, as `s` (`$1`: the tenant).
const LATEST: &str = "FROM inventory_snapshots s JOIN agents a ON a.id = s.agent_id \
     WHERE a.tenant_id = $1 AND s.id = (SELECT MAX(i.id) FROM inventory_snapshots i WHERE i.agent_id = s.agent_id)";

/// The latest snapshot of each of a tenant's agents, in one query: `(agent, snapshot)`.
pub async fn latest_snapshots(
    ex: &mut impl Exec,
    tenant: TenantId,
) -> StoreResult<Vec<(Uuid, Json<serde_json::Value>)>> {
    Ok(on!(ex, c => sqlx::query_as(
        sqlx::AssertSqlSafe(format!("SELECT s.agent_id, s.snapshot {LATEST}")))
        .bind(tenant.0).fetch_all(&mut *c).await?))
}

/// The `patching` part of each of a tenant's agents' latest inventory, as JSON text (`None`
/// where it has none): the database picks it out, so the snapshots are not decoded whole.
pub async fn latest_patching(
    ex: &mut impl Exec,
    tenant: TenantId,
) -> StoreResult<Vec<(Uuid, Option<String>)>> {
    Ok(match ex.handle() {
        Handle::Sqlite(c) => {
            let sql = format!("SELECT s.agent_id, json_extract(s.snapshot, '$.patching') {LATEST}");
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(tenant.0)
                .fetch_all(&mut *c)
                .await?
        }
        Handle::Postgres(c) => {
            let sql = format!("SELECT s.agent_id, (s.snapshot->'patching')::text {LATEST}");
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(tenant.0)
                .fetch_all(&mut *c)
                .await?
        }
    })
}

/// The process list of a tenant's agent.
pub async fn processes(
    ex: &mut impl Exec,
    tenant: TenantId,
    agent_id: Uuid,
) -> StoreResult<Option<(OffsetDateTime, Json<Vec<serde_json::Value>>)>> {
    Ok(on!(ex, c => sqlx::query_as(
        "SELECT p.received_at, p.processes FROM agent_processes p JOIN agents a ON a.id = p.agent_id \
         WHERE a.tenant_id = $1 AND p.agent_id = $2")
        .bind(tenant.0).bind(agent_id).fetch_optional(&mut *c).await?))
}

/// Every agent with an inventory: `(tenant, agent, host name, latest snapshot id)`.
pub async fn agents_with_inventory(
    ex: &mut impl Exec,
) -> StoreResult<Vec<(Uuid, Uuid, String, i64)>> {
    Ok(on!(ex, c => sqlx::query_as(
        "SELECT a.tenant_id, a.id, a.hostname, MAX(s.id) FROM agents a \
         JOIN inventory_snapshots s ON s.agent_id = a.id GROUP BY a.tenant_id, a.id, a.hostname")
        .fetch_all(&mut *c).await?))
}

/// One inventory snapshot by its id, as the agent sent it.
pub async fn snapshot(ex: &mut impl Exec, id: i64) -> StoreResult<Option<serde_json::Value>> {
    let row: Option<(Json<serde_json::Value>,)> = on!(ex, c => sqlx::query_as(
        "SELECT snapshot FROM inventory_snapshots WHERE id = $1")
        .bind(id).fetch_optional(&mut *c).await?);
    Ok(row.map(|r| r.0.0))
}
