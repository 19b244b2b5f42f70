//! Notification channels (CONTRACT 27): the config sealed, shown masked.

use sqlx::types::Json;
use time::OffsetDateTime;
use trusthub_store::{Exec, StoreResult, TenantId, on};
use uuid::Uuid;

/// A channel as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Channel {
    /// Id.
    pub id: Uuid,
    /// Tenant.
    pub tenant_id: Uuid,
    /// Label.
    pub name: String,
    /// `slack`, `discord`, `teams`, `telegram`, `ntfy`, `email`, `pagerduty`, `webhook`.
    pub kind: String,
    /// The config as answers show it (secrets masked).
    pub config_shown: Json<serde_json::Value>,
    /// The whole config, sealed with the hub key.
    pub config_sealed: Vec<u8>,
    /// Subscribed events.
    pub events: Json<Vec<String>>,
    /// Lowest severity delivered.
    pub min_severity: String,
    /// Its rank.
    pub min_severity_rank: i64,
    /// Only alerts of agents with this tag.
    pub agent_filter_tag: Option<String>,
    /// Created.
    pub created_at: OffsetDateTime,
    /// Last changed.
    pub updated_at: OffsetDateTime,
}

const COLUMNS: &str = "id, tenant_id, name, kind, config_shown, config_sealed, events, min_severity, \
    min_severity_rank, agent_filter_tag, created_at, updated_at";

/// Stores a new channel.
pub async fn insert(ex: &mut impl Exec, c: &Channel) -> StoreResult<()> {
    let sql = format!(
        "INSERT INTO notification_channels ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
    );
    on!(ex, x => sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(c.id).bind(c.tenant_id).bind(&c.name).bind(&c.kind).bind(&c.config_shown)
        .bind(&c.config_sealed).bind(&c.events).bind(&c.min_severity).bind(c.min_severity_rank)
        .bind(&c.agent_filter_tag).bind(c.created_at).bind(c.updated_at)
        .execute(&mut *x).await?.rows_affected());
    Ok(())
}

/// Replaces a channel's settings.
pub async fn update(ex: &mut impl Exec, c: &Channel) -> StoreResult<bool> {
    Ok(on!(ex, x => sqlx::query(
        "UPDATE notification_channels SET name = $3, config_shown = $4, config_sealed = $5, events = $6, \
         min_severity = $7, min_severity_rank = $8, agent_filter_tag = $9, updated_at = $10 \
         WHERE tenant_id = $1 AND id = $2")
        .bind(c.tenant_id).bind(c.id).bind(&c.name).bind(&c.config_shown).bind(&c.config_sealed)
        .bind(&c.events).bind(&c.min_severity).bind(c.min_severity_rank).bind(&c.agent_filter_tag)
        .bind(c.updated_at).execute(&mut *x).await?.rows_affected())
        == 1)
}

/// The tenant's channels, oldest first.
pub async fn list(ex: &mut impl Exec, tenant: TenantId) -> StoreResult<Vec<Channel>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM notification_channels WHERE tenant_id = $1 ORDER BY created_at, id"
    );
    Ok(
        on!(ex, x => sqlx::query_as::<_, Channel>(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).fetch_all(&mut *x).await?),
    )
}

/// One channel of the tenant.
pub async fn get(ex: &mut impl Exec, tenant: TenantId, id: Uuid) -> StoreResult<Option<Channel>> {
    let sql =
        format!("SELECT {COLUMNS} FROM notification_channels WHERE tenant_id = $1 AND id = $2");
    Ok(
        on!(ex, x => sqlx::query_as::<_, Channel>(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).bind(id).fetch_optional(&mut *x).await?),
    )
}

/// One channel by id (the deliverer's read; any tenant).
pub async fn by_id(ex: &mut impl Exec, id: Uuid) -> StoreResult<Option<Channel>> {
    let sql = format!("SELECT {COLUMNS} FROM notification_channels WHERE id = $1");
    Ok(
        on!(ex, x => sqlx::query_as::<_, Channel>(sqlx::AssertSqlSafe(sql))
        .bind(id).fetch_optional(&mut *x).await?),
    )
}

/// Deletes a channel (its deliveries go with it).
pub async fn delete(ex: &mut impl Exec, tenant: TenantId, id: Uuid) -> StoreResult<bool> {
    Ok(
        on!(ex, x => sqlx::query("DELETE FROM notification_channels WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.0).bind(id).execute(&mut *x).await?.rows_affected())
            == 1,
    )
}
