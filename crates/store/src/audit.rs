//! The audit log: append-only (the schema refuses UPDATE and DELETE), one row per
//! security-sensitive action, written in the same transaction as the action.

use crate::{Exec, StoreResult, TenantId, on};
use serde::Serialize;
use sqlx::types::Json;
use time::OffsetDateTime;
use uuid::Uuid;

/// A row to append.
#[derive(Debug, Clone)]
pub struct NewEntry<'a> {
    /// One of `trusthub_core::audit`.
    pub event_type: &'a str,
    /// Who did it: `user:<uuid>`, `token:<uuid>`, `system`, `cli`.
    pub actor: String,
    /// What it was done to: `user:<uuid>`, `api_token:<uuid>`, ...
    pub subject: String,
    /// Event-specific facts; never a secret.
    pub details: serde_json::Value,
    /// Client address, when there was a request.
    pub ip: Option<String>,
    /// Request id, when there was a request.
    pub request_id: Option<String>,
}

/// A stored row.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct Entry {
    /// Increasing id.
    pub id: i64,
    /// Event type.
    pub event_type: String,
    /// Who.
    pub actor: String,
    /// To what.
    pub subject: String,
    /// Facts.
    pub details: Json<serde_json::Value>,
    /// Client address.
    pub ip: Option<String>,
    /// Request id.
    pub request_id: Option<String>,
    /// When.
    pub created_at: OffsetDateTime,
}

/// Appends a row.
pub async fn append(
    ex: &mut impl Exec,
    tenant: TenantId,
    e: &NewEntry<'_>,
    now: OffsetDateTime,
) -> StoreResult<()> {
    on!(ex, c => sqlx::query(
        "INSERT INTO audit_log (tenant_id, event_type, actor, subject, details, ip, request_id, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)")
        .bind(tenant.0).bind(e.event_type).bind(&e.actor).bind(&e.subject).bind(Json(&e.details))
        .bind(e.ip.as_deref()).bind(e.request_id.as_deref()).bind(now).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// [`append`] for many rows at once (one statement per [`crate::ROWS_PER_INSERT`]).
pub async fn append_many(
    ex: &mut impl Exec,
    tenant: TenantId,
    entries: &[NewEntry<'_>],
    now: OffsetDateTime,
) -> StoreResult<()> {
    for chunk in entries.chunks(crate::ROWS_PER_INSERT) {
        let sql = format!(
            "INSERT INTO audit_log (tenant_id, event_type, actor, subject, details, ip, request_id, created_at) VALUES {}",
            crate::values(chunk.len(), 8)
        );
        on!(ex, c => {
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql.clone()));
            for e in chunk {
                q = q.bind(tenant.0).bind(e.event_type).bind(&e.actor).bind(&e.subject).bind(Json(&e.details))
                    .bind(e.ip.as_deref()).bind(e.request_id.as_deref()).bind(now);
            }
            q.execute(&mut *c).await?.rows_affected()
        });
    }
    Ok(())
}

/// Filters for [`list`].
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only this event type.
    pub event_type: Option<String>,
    /// Only rows at or after this instant.
    pub since: Option<OffsetDateTime>,
    /// Only rows with a smaller id (paging backwards).
    pub before_id: Option<i64>,
    /// At most this many rows.
    pub limit: i64,
}

/// The tenant's rows, newest first.
pub async fn list(ex: &mut impl Exec, tenant: TenantId, f: &Filter) -> StoreResult<Vec<Entry>> {
    Ok(on!(ex, c => sqlx::query_as::<_, Entry>(
        "SELECT id, event_type, actor, subject, details, ip, request_id, created_at FROM audit_log \
         WHERE tenant_id = $1 AND ($2 IS NULL OR event_type = $2) AND ($3 IS NULL OR created_at >= $3) \
         AND ($4 IS NULL OR id < $4) ORDER BY id DESC LIMIT $5")
        .bind(tenant.0).bind(f.event_type.as_deref()).bind(f.since).bind(f.before_id).bind(f.limit)
        .fetch_all(&mut *c).await?))
}

/// The actor string for a user.
pub fn user_actor(id: Uuid) -> String {
    format!("user:{id}")
}
