//! The cloud tables: accounts (credentials sealed), runs, resources and findings.

use crate::providers::{Facts, Found};
use sqlx::types::Json;
use std::collections::BTreeMap;
use time::OffsetDateTime;
use trusthub_store::{Exec, StoreResult, TenantId, on};
use uuid::Uuid;

/// An account as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Account {
    /// Id.
    pub id: Uuid,
    /// Tenant.
    pub tenant_id: Uuid,
    /// Provider.
    pub provider: String,
    /// Name.
    pub name: String,
    /// Regions asked for (empty: all).
    pub regions: Json<Vec<String>>,
    /// API base URL override.
    pub endpoint: Option<String>,
    /// The credentials (JSON), sealed with the hub key.
    pub credentials_sealed: Vec<u8>,
    /// `ok`, `error` (the last run failed) or `pending` (no run yet).
    pub status: String,
    /// When.
    pub created_at: OffsetDateTime,
    /// The last run's start.
    pub last_run_at: Option<OffsetDateTime>,
}

const ACCOUNT: &str = "id, tenant_id, provider, name, regions, endpoint, credentials_sealed, status, created_at, last_run_at";

/// Stores an account.
pub async fn insert_account(ex: &mut impl Exec, a: &Account) -> StoreResult<()> {
    on!(ex, c => sqlx::query(
        "INSERT INTO cloud_accounts (id, tenant_id, provider, name, regions, endpoint, credentials_sealed, status, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)")
        .bind(a.id).bind(a.tenant_id).bind(&a.provider).bind(&a.name).bind(&a.regions).bind(&a.endpoint)
        .bind(&a.credentials_sealed).bind(&a.status).bind(a.created_at).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// A tenant's account.
pub async fn account(
    ex: &mut impl Exec,
    tenant: TenantId,
    id: Uuid,
) -> StoreResult<Option<Account>> {
    let sql = format!("SELECT {ACCOUNT} FROM cloud_accounts WHERE tenant_id = $1 AND id = $2");
    Ok(
        on!(ex, c => sqlx::query_as::<_, Account>(sqlx::AssertSqlSafe(sql)).bind(tenant.0).bind(id).fetch_optional(&mut *c).await?),
    )
}

/// A tenant's accounts (`None`: every tenant's), oldest first.
pub async fn accounts(ex: &mut impl Exec, tenant: Option<TenantId>) -> StoreResult<Vec<Account>> {
    let sql = format!(
        "SELECT {ACCOUNT} FROM cloud_accounts WHERE ($1 IS NULL OR tenant_id = $1) ORDER BY created_at, id"
    );
    Ok(
        on!(ex, c => sqlx::query_as::<_, Account>(sqlx::AssertSqlSafe(sql)).bind(tenant.map(|t| t.0)).fetch_all(&mut *c).await?),
    )
}

/// Deletes an account with its runs, resources and findings.
pub async fn delete_account(ex: &mut impl Exec, tenant: TenantId, id: Uuid) -> StoreResult<bool> {
    for table in ["cloud_findings", "cloud_resources", "cloud_runs"] {
        let sql = format!("DELETE FROM {table} WHERE tenant_id = $1 AND account_id = $2");
        on!(ex, c => sqlx::query(sqlx::AssertSqlSafe(sql)).bind(tenant.0).bind(id).execute(&mut *c).await?.rows_affected());
    }
    let n = on!(ex, c => sqlx::query("DELETE FROM cloud_accounts WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.0).bind(id).execute(&mut *c).await?.rows_affected());
    Ok(n == 1)
}

/// Records a run's start and the account's `last_run_at`.
pub async fn start_run(
    ex: &mut impl Exec,
    tenant: TenantId,
    account: Uuid,
    id: Uuid,
    now: OffsetDateTime,
) -> StoreResult<()> {
    on!(ex, c => sqlx::query(
        "INSERT INTO cloud_runs (id, tenant_id, account_id, status, started_at) VALUES ($1, $2, $3, 'running', $4)")
        .bind(id).bind(tenant.0).bind(account).bind(now).execute(&mut *c).await?.rows_affected());
    on!(ex, c => sqlx::query("UPDATE cloud_accounts SET last_run_at = $1 WHERE id = $2")
        .bind(now).bind(account).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// A run as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Run {
    /// Id.
    pub id: Uuid,
    /// Its account.
    pub account_id: Uuid,
    /// `running`, `succeeded`, `partial`, `failed`.
    pub status: String,
    /// When.
    pub started_at: OffsetDateTime,
    /// When it ended.
    pub finished_at: Option<OffsetDateTime>,
    /// Resources listed.
    pub resources_seen: i64,
    /// New ones.
    pub added: i64,
    /// Changed ones.
    pub changed: i64,
    /// Gone ones.
    pub removed: i64,
    /// `[{region, message}]`.
    pub errors: Json<Vec<RunError>>,
}

/// What a run could not read.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct RunError {
    /// The region (empty: the whole account).
    pub region: String,
    /// The provider's or the transport's message.
    pub message: String,
}

/// Ends a run.
pub async fn finish_run(ex: &mut impl Exec, r: &Run, account_status: &str) -> StoreResult<()> {
    on!(ex, c => sqlx::query(
        "UPDATE cloud_runs SET status = $1, finished_at = $2, resources_seen = $3, added = $4, changed = $5, removed = $6, \
         errors = $7 WHERE id = $8")
        .bind(&r.status).bind(r.finished_at).bind(r.resources_seen).bind(r.added).bind(r.changed).bind(r.removed)
        .bind(&r.errors).bind(r.id).execute(&mut *c).await?.rows_affected());
    on!(ex, c => sqlx::query("UPDATE cloud_accounts SET status = $1 WHERE id = $2")
        .bind(account_status).bind(r.account_id).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// A tenant's runs, newest first (at most 500).
pub async fn runs(
    ex: &mut impl Exec,
    tenant: TenantId,
    account: Option<Uuid>,
) -> StoreResult<Vec<Run>> {
    Ok(on!(ex, c => sqlx::query_as::<_, Run>(
        "SELECT id, account_id, status, started_at, finished_at, resources_seen, added, changed, removed, errors \
         FROM cloud_runs WHERE tenant_id = $1 AND ($2 IS NULL OR account_id = $2) ORDER BY started_at DESC, id DESC LIMIT 500")
        .bind(tenant.0).bind(account).fetch_all(&mut *c).await?))
}

/// The run an account has going (one that started within the hour: a run whose process
/// stopped does not block the account for ever).
pub async fn running(
    ex: &mut impl Exec,
    account: Uuid,
    now: OffsetDateTime,
) -> StoreResult<Option<Uuid>> {
    Ok(on!(ex, c => sqlx::query_scalar::<_, Uuid>(
        "SELECT id FROM cloud_runs WHERE account_id = $1 AND status = 'running' AND started_at > $2 LIMIT 1")
        .bind(account).bind(now - time::Duration::hours(1)).fetch_optional(&mut *c).await?))
}

/// A resource as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Resource {
    /// Id.
    pub id: Uuid,
    /// Its account.
    pub account_id: Uuid,
    /// Provider.
    pub provider: String,
    /// `vm`, …
    #[sqlx(rename = "type")]
    pub kind: String,
    /// The provider's id.
    pub provider_id: String,
    /// Name.
    pub name: String,
    /// Region.
    pub region: String,
    /// State.
    pub state: String,
    /// Public addresses.
    pub public_ips: Json<Vec<String>>,
    /// Private addresses.
    pub private_ips: Json<Vec<String>>,
    /// Tags.
    pub tags: Json<BTreeMap<String, String>>,
    /// Exposure facts.
    pub facts: Json<Facts>,
    /// First seen.
    pub first_seen_at: OffsetDateTime,
    /// Last seen.
    pub last_seen_at: OffsetDateTime,
    /// When a run no longer saw it (or saw it terminated).
    pub removed_at: Option<OffsetDateTime>,
}

const RESOURCE: &str = "id, account_id, provider, type, provider_id, name, region, state, public_ips, private_ips, tags, \
    facts, first_seen_at, last_seen_at, removed_at";

impl Resource {
    /// Whether a listing changed what is kept of it.
    pub fn differs(&self, f: &Found) -> bool {
        self.name != f.name
            || self.region != f.region
            || self.state != f.state
            || self.public_ips.0 != f.public_ips
            || self.private_ips.0 != f.private_ips
            || self.tags.0 != f.tags
            || self.facts.0 != f.facts
            || self.removed_at.is_some() != f.gone
    }
}

/// A tenant's resources (of one account, or all), live ones unless `removed` too.
pub async fn resources(
    ex: &mut impl Exec,
    tenant: TenantId,
    account: Option<Uuid>,
    removed: bool,
) -> StoreResult<Vec<Resource>> {
    let sql = format!(
        "SELECT {RESOURCE} FROM cloud_resources WHERE tenant_id = $1 AND ($2 IS NULL OR account_id = $2) \
         AND ($3 OR removed_at IS NULL) ORDER BY name, id"
    );
    Ok(
        on!(ex, c => sqlx::query_as::<_, Resource>(sqlx::AssertSqlSafe(sql)).bind(tenant.0).bind(account).bind(removed)
        .fetch_all(&mut *c).await?),
    )
}

/// A tenant's resource.
pub async fn resource(
    ex: &mut impl Exec,
    tenant: TenantId,
    id: Uuid,
) -> StoreResult<Option<Resource>> {
    let sql = format!("SELECT {RESOURCE} FROM cloud_resources WHERE tenant_id = $1 AND id = $2");
    Ok(
        on!(ex, c => sqlx::query_as::<_, Resource>(sqlx::AssertSqlSafe(sql)).bind(tenant.0).bind(id).fetch_optional(&mut *c).await?),
    )
}

/// Records a resource seen for the first time.
pub async fn insert_resource(
    ex: &mut impl Exec,
    tenant: TenantId,
    account: Uuid,
    provider: &str,
    f: &Found,
    now: OffsetDateTime,
) -> StoreResult<Uuid> {
    let id = Uuid::now_v7();
    on!(ex, c => sqlx::query(
        "INSERT INTO cloud_resources (id, tenant_id, account_id, provider, type, provider_id, name, region, state, public_ips, \
         private_ips, tags, facts, first_seen_at, last_seen_at, removed_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $14, $15)")
        .bind(id).bind(tenant.0).bind(account).bind(provider).bind(&f.kind).bind(&f.provider_id).bind(&f.name)
        .bind(&f.region).bind(&f.state).bind(Json(&f.public_ips)).bind(Json(&f.private_ips)).bind(Json(&f.tags))
        .bind(Json(&f.facts)).bind(now).bind(f.gone.then_some(now)).execute(&mut *c).await?.rows_affected());
    Ok(id)
}

/// Updates a resource seen again (`removed_at` set when it is gone, cleared when it came back).
pub async fn update_resource(
    ex: &mut impl Exec,
    id: Uuid,
    f: &Found,
    now: OffsetDateTime,
) -> StoreResult<()> {
    on!(ex, c => sqlx::query(
        "UPDATE cloud_resources SET name = $1, region = $2, state = $3, public_ips = $4, private_ips = $5, tags = $6, \
         facts = $7, last_seen_at = $8, removed_at = CASE WHEN $9 THEN COALESCE(removed_at, $8) ELSE NULL END WHERE id = $10")
        .bind(&f.name).bind(&f.region).bind(&f.state).bind(Json(&f.public_ips)).bind(Json(&f.private_ips))
        .bind(Json(&f.tags)).bind(Json(&f.facts)).bind(now).bind(f.gone).bind(id).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// Marks resources seen again unchanged.
pub async fn touch_resources(
    ex: &mut impl Exec,
    ids: &[Uuid],
    now: OffsetDateTime,
) -> StoreResult<()> {
    for chunk in ids.chunks(trusthub_store::ROWS_PER_INSERT) {
        let marks: Vec<String> = (0..chunk.len()).map(|i| format!("${}", i + 2)).collect();
        let sql = format!(
            "UPDATE cloud_resources SET last_seen_at = $1 WHERE id IN ({})",
            marks.join(", ")
        );
        on!(ex, c => {
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(now);
            for id in chunk {
                q = q.bind(id);
            }
            q.execute(&mut *c).await?.rows_affected()
        });
    }
    Ok(())
}

/// Marks a resource no longer seen as removed.
pub async fn remove_resource(ex: &mut impl Exec, id: Uuid, now: OffsetDateTime) -> StoreResult<()> {
    on!(ex, c => sqlx::query("UPDATE cloud_resources SET removed_at = $1 WHERE id = $2 AND removed_at IS NULL")
        .bind(now).bind(id).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// A finding as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Finding {
    /// Id.
    pub id: Uuid,
    /// Its account.
    pub account_id: Uuid,
    /// Its resource.
    pub resource_id: Uuid,
    /// The rule.
    pub rule: String,
    /// `CRITICAL`, `HIGH`, `MEDIUM`, `LOW`.
    pub severity: String,
    /// `open` or `resolved`.
    pub status: String,
    /// What was seen.
    pub detail: String,
    /// When first seen.
    pub first_seen_at: OffsetDateTime,
    /// When it resolved.
    pub resolved_at: Option<OffsetDateTime>,
}

const FINDING: &str =
    "id, account_id, resource_id, rule, severity, status, detail, first_seen_at, resolved_at";

/// A tenant's findings, open first then newest (at most 5000), of one account or all.
pub async fn findings(
    ex: &mut impl Exec,
    tenant: TenantId,
    account: Option<Uuid>,
    severity: Option<&str>,
    status: Option<&str>,
) -> StoreResult<Vec<Finding>> {
    let sql = format!(
        "SELECT {FINDING} FROM cloud_findings WHERE tenant_id = $1 AND ($2 IS NULL OR account_id = $2) \
         AND ($3 IS NULL OR severity = $3) AND ($4 IS NULL OR status = $4) \
         ORDER BY status, first_seen_at DESC, id DESC LIMIT 5000"
    );
    Ok(
        on!(ex, c => sqlx::query_as::<_, Finding>(sqlx::AssertSqlSafe(sql)).bind(tenant.0).bind(account).bind(severity)
        .bind(status).fetch_all(&mut *c).await?),
    )
}

/// Every open finding of an account: `(id, resource, rule)` (what a run reconciles).
pub async fn open_findings(
    ex: &mut impl Exec,
    account: Uuid,
) -> StoreResult<Vec<(Uuid, Uuid, String)>> {
    Ok(on!(ex, c => sqlx::query_as::<_, (Uuid, Uuid, String)>(
        "SELECT id, resource_id, rule FROM cloud_findings WHERE account_id = $1 AND status = 'open'")
        .bind(account).fetch_all(&mut *c).await?))
}

/// A tenant's open findings counted by severity.
pub async fn open_by_severity(
    ex: &mut impl Exec,
    tenant: TenantId,
) -> StoreResult<Vec<(String, i64)>> {
    Ok(on!(ex, c => sqlx::query_as::<_, (String, i64)>(
        "SELECT severity, COUNT(*) FROM cloud_findings WHERE tenant_id = $1 AND status = 'open' GROUP BY severity")
        .bind(tenant.0).fetch_all(&mut *c).await?))
}

/// Opens a finding.
pub async fn open_finding(
    ex: &mut impl Exec,
    tenant: TenantId,
    account: Uuid,
    resource: Uuid,
    (rule, severity, detail): (&str, &str, &str),
    now: OffsetDateTime,
) -> StoreResult<()> {
    on!(ex, c => sqlx::query(
        "INSERT INTO cloud_findings (id, tenant_id, account_id, resource_id, rule, severity, status, detail, first_seen_at) \
         VALUES ($1, $2, $3, $4, $5, $6, 'open', $7, $8)")
        .bind(Uuid::now_v7()).bind(tenant.0).bind(account).bind(resource).bind(rule).bind(severity).bind(detail)
        .bind(now).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// Resolves an open finding.
pub async fn resolve_finding(ex: &mut impl Exec, id: Uuid, now: OffsetDateTime) -> StoreResult<()> {
    on!(ex, c => sqlx::query("UPDATE cloud_findings SET status = 'resolved', resolved_at = $1 WHERE id = $2 AND status = 'open'")
        .bind(now).bind(id).execute(&mut *c).await?.rows_affected());
    Ok(())
}
