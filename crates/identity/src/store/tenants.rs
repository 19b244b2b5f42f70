//! Tenants: the isolation unit; every other record belongs to exactly one.

use serde::Serialize;
use time::OffsetDateTime;
use trusthub_store::{Exec, StoreResult, TenantId, on};
use uuid::Uuid;

/// A tenant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, sqlx::FromRow)]
pub struct Tenant {
    /// Its id.
    pub id: Uuid,
    /// Unique name.
    pub name: String,
    /// When it was created.
    pub created_at: OffsetDateTime,
}

impl Tenant {
    /// The id as a [`TenantId`].
    pub fn tenant_id(&self) -> TenantId {
        TenantId(self.id)
    }
}

/// Creates a tenant; a taken name is a [`trusthub_store::StoreError::Conflict`].
pub async fn insert(ex: &mut impl Exec, name: &str, now: OffsetDateTime) -> StoreResult<Tenant> {
    let t = Tenant {
        id: Uuid::now_v7(),
        name: name.to_owned(),
        created_at: now,
    };
    on!(ex, c => sqlx::query("INSERT INTO tenants (id, name, created_at) VALUES ($1, $2, $3)")
        .bind(t.id).bind(&t.name).bind(t.created_at).execute(&mut *c).await?.rows_affected());
    Ok(t)
}

/// One tenant by id.
pub async fn get(ex: &mut impl Exec, id: TenantId) -> StoreResult<Option<Tenant>> {
    Ok(
        on!(ex, c => sqlx::query_as::<_, Tenant>("SELECT id, name, created_at FROM tenants WHERE id = $1")
        .bind(id.0).fetch_optional(&mut *c).await?),
    )
}

/// Every tenant (the jobs that run per tenant).
pub async fn list(ex: &mut impl Exec) -> StoreResult<Vec<Tenant>> {
    Ok(
        on!(ex, c => sqlx::query_as::<_, Tenant>("SELECT id, name, created_at FROM tenants ORDER BY id")
        .fetch_all(&mut *c).await?),
    )
}

/// One tenant by name.
pub async fn find_by_name(ex: &mut impl Exec, name: &str) -> StoreResult<Option<Tenant>> {
    Ok(
        on!(ex, c => sqlx::query_as::<_, Tenant>("SELECT id, name, created_at FROM tenants WHERE name = $1")
        .bind(name).fetch_optional(&mut *c).await?),
    )
}
