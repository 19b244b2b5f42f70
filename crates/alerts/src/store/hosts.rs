//! What alerts show and route by about a host: its name and tags, as the fleet reports them
//! (through [`crate::host_changed`] and [`crate::host_removed`]).

use sqlx::types::Json;
use trusthub_store::{Exec, StoreResult, TenantId, on};
use uuid::Uuid;

/// Records a host's current name and tags.
pub async fn upsert(
    ex: &mut impl Exec,
    tenant: TenantId,
    agent: Uuid,
    hostname: &str,
    tags: &[String],
) -> StoreResult<()> {
    on!(ex, c => sqlx::query(
        "INSERT INTO alert_hosts (agent_id, tenant_id, hostname, tags) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (agent_id) DO UPDATE SET tenant_id = excluded.tenant_id, hostname = excluded.hostname, tags = excluded.tags")
        .bind(agent).bind(tenant.0).bind(hostname).bind(Json(tags)).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// Forgets a deleted host (its alerts keep the name they were raised with).
pub async fn remove(ex: &mut impl Exec, tenant: TenantId, agent: Uuid) -> StoreResult<()> {
    on!(ex, c => sqlx::query("DELETE FROM alert_hosts WHERE tenant_id = $1 AND agent_id = $2")
        .bind(tenant.0).bind(agent).execute(&mut *c).await?.rows_affected());
    Ok(())
}
