//! Status pages, incidents and their updates as stored.

use sqlx::types::Json;
use time::OffsetDateTime;
use trusthub_store::{Exec, StoreResult, TenantId, on};
use uuid::Uuid;

/// A group of apps on a page.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Group {
    /// Its heading.
    pub name: String,
    /// The apps, in order.
    pub app_ids: Vec<Uuid>,
}

/// A status page.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Page {
    /// Id.
    pub id: Uuid,
    /// Tenant.
    pub tenant_id: Uuid,
    /// Public address part.
    pub slug: String,
    /// Title.
    pub title: String,
    /// Description.
    pub description: Option<String>,
    /// Groups (JSON).
    pub groups: Json<Vec<Group>>,
    /// Days of uptime shown.
    pub show_uptime_days: i64,
    /// Created.
    pub created_at: OffsetDateTime,
    /// Changed.
    pub updated_at: OffsetDateTime,
}

const PAGE: &str =
    "id, tenant_id, slug, title, description, groups, show_uptime_days, created_at, updated_at";

/// Stores a new page; `false` when its slug is taken.
pub async fn insert_page(ex: &mut impl Exec, p: &Page) -> StoreResult<bool> {
    let sql = format!(
        "INSERT INTO status_pages ({PAGE}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING"
    );
    Ok(on!(ex, c => sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(p.id).bind(p.tenant_id).bind(&p.slug).bind(&p.title).bind(&p.description)
        .bind(&p.groups).bind(p.show_uptime_days).bind(p.created_at).bind(p.updated_at)
        .execute(&mut *c).await?.rows_affected())
        == 1)
}

/// Replaces a page's fields; `false` when the slug is another page's.
pub async fn update_page(ex: &mut impl Exec, p: &Page) -> StoreResult<bool> {
    let taken: Option<(Uuid,)> = on!(ex, c => sqlx::query_as(
        "SELECT id FROM status_pages WHERE slug = $1 AND id <> $2")
        .bind(&p.slug).bind(p.id).fetch_optional(&mut *c).await?);
    if taken.is_some() {
        return Ok(false);
    }
    on!(ex, c => sqlx::query(
        "UPDATE status_pages SET slug = $3, title = $4, description = $5, groups = $6, \
         show_uptime_days = $7, updated_at = $8 WHERE tenant_id = $1 AND id = $2")
        .bind(p.tenant_id).bind(p.id).bind(&p.slug).bind(&p.title).bind(&p.description)
        .bind(&p.groups).bind(p.show_uptime_days).bind(p.updated_at)
        .execute(&mut *c).await?.rows_affected());
    Ok(true)
}

/// The tenant's pages, by slug.
pub async fn pages(ex: &mut impl Exec, tenant: TenantId) -> StoreResult<Vec<Page>> {
    let sql = format!("SELECT {PAGE} FROM status_pages WHERE tenant_id = $1 ORDER BY slug");
    Ok(on!(ex, c => sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).fetch_all(&mut *c).await?))
}

/// One page of the tenant.
pub async fn page(ex: &mut impl Exec, tenant: TenantId, id: Uuid) -> StoreResult<Option<Page>> {
    let sql = format!("SELECT {PAGE} FROM status_pages WHERE tenant_id = $1 AND id = $2");
    Ok(on!(ex, c => sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).bind(id).fetch_optional(&mut *c).await?))
}

/// The page at `slug` (any tenant: the public address).
pub async fn page_by_slug(ex: &mut impl Exec, slug: &str) -> StoreResult<Option<Page>> {
    let sql = format!("SELECT {PAGE} FROM status_pages WHERE slug = $1");
    Ok(on!(ex, c => sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(slug).fetch_optional(&mut *c).await?))
}

/// Deletes a page (its incidents go with it).
pub async fn delete_page(ex: &mut impl Exec, tenant: TenantId, id: Uuid) -> StoreResult<bool> {
    on!(ex, c => sqlx::query(
        "DELETE FROM status_incident_updates WHERE incident_id IN \
         (SELECT id FROM status_incidents WHERE tenant_id = $1 AND page_id = $2)")
        .bind(tenant.0).bind(id).execute(&mut *c).await?.rows_affected());
    on!(ex, c => sqlx::query("DELETE FROM status_incidents WHERE tenant_id = $1 AND page_id = $2")
        .bind(tenant.0).bind(id).execute(&mut *c).await?.rows_affected());
    Ok(
        on!(ex, c => sqlx::query("DELETE FROM status_pages WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.0).bind(id).execute(&mut *c).await?.rows_affected())
            == 1,
    )
}

/// An incident.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Incident {
    /// Id.
    pub id: Uuid,
    /// Tenant.
    pub tenant_id: Uuid,
    /// Its page.
    pub page_id: Uuid,
    /// Title.
    pub title: String,
    /// Its latest status.
    pub status: String,
    /// Impact.
    pub impact: String,
    /// Opened.
    pub created_at: OffsetDateTime,
    /// Last update.
    pub updated_at: OffsetDateTime,
    /// When it was resolved.
    pub resolved_at: Option<OffsetDateTime>,
}

const INCIDENT: &str =
    "id, tenant_id, page_id, title, status, impact, created_at, updated_at, resolved_at";

/// One update of an incident.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Update {
    /// Id.
    pub id: Uuid,
    /// Its incident.
    pub incident_id: Uuid,
    /// The status it set.
    pub status: String,
    /// What it said.
    pub message: String,
    /// Who wrote it (the user's email).
    pub created_by: String,
    /// When.
    pub created_at: OffsetDateTime,
}

/// Stores a new incident.
pub async fn insert_incident(ex: &mut impl Exec, i: &Incident) -> StoreResult<()> {
    let sql = format!(
        "INSERT INTO status_incidents ({INCIDENT}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
    );
    on!(ex, c => sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(i.id).bind(i.tenant_id).bind(i.page_id).bind(&i.title).bind(&i.status)
        .bind(&i.impact).bind(i.created_at).bind(i.updated_at).bind(i.resolved_at)
        .execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// Sets an incident's status (and impact) after an update.
pub async fn set_incident(ex: &mut impl Exec, i: &Incident) -> StoreResult<()> {
    on!(ex, c => sqlx::query(
        "UPDATE status_incidents SET status = $2, impact = $3, updated_at = $4, resolved_at = $5 WHERE id = $1")
        .bind(i.id).bind(&i.status).bind(&i.impact).bind(i.updated_at).bind(i.resolved_at)
        .execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// Stores an update.
pub async fn insert_update(ex: &mut impl Exec, u: &Update) -> StoreResult<()> {
    on!(ex, c => sqlx::query(
        "INSERT INTO status_incident_updates (id, incident_id, status, message, created_by, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6)")
        .bind(u.id).bind(u.incident_id).bind(&u.status).bind(&u.message).bind(&u.created_by)
        .bind(u.created_at).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// One incident of the tenant.
pub async fn incident(
    ex: &mut impl Exec,
    tenant: TenantId,
    id: Uuid,
) -> StoreResult<Option<Incident>> {
    let sql = format!("SELECT {INCIDENT} FROM status_incidents WHERE tenant_id = $1 AND id = $2");
    Ok(on!(ex, c => sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).bind(id).fetch_optional(&mut *c).await?))
}

/// A page's incidents still open or resolved since `since`, newest first (at most 50).
pub async fn incidents_of_page(
    ex: &mut impl Exec,
    page: Uuid,
    since: OffsetDateTime,
) -> StoreResult<Vec<Incident>> {
    let sql = format!(
        "SELECT {INCIDENT} FROM status_incidents WHERE page_id = $1 \
         AND (resolved_at IS NULL OR resolved_at > $2) ORDER BY created_at DESC, id DESC LIMIT 50"
    );
    Ok(on!(ex, c => sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(page).bind(since).fetch_all(&mut *c).await?))
}

/// The updates of these incidents, newest first.
pub async fn updates_of(ex: &mut impl Exec, incidents: &[Uuid]) -> StoreResult<Vec<Update>> {
    let mut out = Vec::new();
    for id in incidents {
        let rows: Vec<Update> = on!(ex, c => sqlx::query_as(
            "SELECT id, incident_id, status, message, created_by, created_at FROM status_incident_updates \
             WHERE incident_id = $1 ORDER BY created_at DESC, id DESC")
            .bind(id).fetch_all(&mut *c).await?);
        out.extend(rows);
    }
    Ok(out)
}
