//! Alert rules (SPEC 2.4; CONTRACT 10) and the window aggregates they are evaluated on.

use sqlx::types::Json;
use time::OffsetDateTime;
use trusthub_store::{Exec, StoreResult, TenantId, on};
use uuid::Uuid;

/// A rule as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Rule {
    /// Id.
    pub id: Uuid,
    /// Tenant.
    pub tenant_id: Uuid,
    /// Label.
    pub name: String,
    /// Metric name.
    pub metric: String,
    /// `> >= < <= == !=`.
    pub operator: String,
    /// Threshold.
    pub threshold: f64,
    /// Window as given (`5m`).
    pub window_spec: String,
    /// Window in seconds.
    pub window_secs: i64,
    /// Severity of its alerts.
    pub severity: String,
    /// `agent_id` and/or label names.
    pub group_by: Json<Vec<String>>,
    /// Minimal-body POST target.
    pub webhook_url: Option<String>,
    /// Created.
    pub created_at: OffsetDateTime,
    /// Last evaluation.
    pub last_evaluated_at: Option<OffsetDateTime>,
    /// Groups with data at the last evaluation.
    pub last_groups: Option<i64>,
    /// Groups firing at the last evaluation.
    pub last_firing: Option<i64>,
    /// The whole webhook URL sealed with the hub key, when it holds userinfo (`webhook_url`
    /// then shows `https://***@host/...`).
    pub webhook_url_sealed: Option<Vec<u8>>,
}

const COLUMNS: &str = "id, tenant_id, name, metric, operator, threshold, window_spec, window_secs, severity, group_by, \
    webhook_url, created_at, last_evaluated_at, last_groups, last_firing, webhook_url_sealed";

/// A rule's settings.
#[derive(Debug, Clone, Copy)]
pub struct RuleSpec<'a> {
    /// Label.
    pub name: &'a str,
    /// Metric name.
    pub metric: &'a str,
    /// Operator.
    pub operator: &'a str,
    /// Threshold.
    pub threshold: f64,
    /// Window as given.
    pub window_spec: &'a str,
    /// Window in seconds.
    pub window_secs: i64,
    /// Severity.
    pub severity: &'a str,
    /// Grouping.
    pub group_by: &'a [String],
    /// Minimal-body POST target.
    pub webhook_url: Option<&'a str>,
    /// The whole webhook URL sealed, when it holds userinfo.
    pub webhook_url_sealed: Option<&'a [u8]>,
}

/// Stores a rule.
pub async fn insert(
    ex: &mut impl Exec,
    tenant: TenantId,
    r: &RuleSpec<'_>,
    now: OffsetDateTime,
) -> StoreResult<Rule> {
    let sql = format!(
        "INSERT INTO alert_rules (id, tenant_id, name, metric, operator, threshold, window_spec, window_secs, severity, \
         group_by, webhook_url, created_at, webhook_url_sealed) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING {COLUMNS}"
    );
    Ok(
        on!(ex, c => sqlx::query_as::<_, Rule>(sqlx::AssertSqlSafe(sql))
        .bind(Uuid::now_v7()).bind(tenant.0).bind(r.name).bind(r.metric).bind(r.operator).bind(r.threshold)
        .bind(r.window_spec).bind(r.window_secs).bind(r.severity).bind(Json(r.group_by)).bind(r.webhook_url).bind(now)
        .bind(r.webhook_url_sealed).fetch_one(&mut *c).await?),
    )
}

/// Replaces a rule's settings; the updated row, or `None` when absent.
pub async fn update(
    ex: &mut impl Exec,
    tenant: TenantId,
    id: Uuid,
    r: &RuleSpec<'_>,
) -> StoreResult<Option<Rule>> {
    let sql = format!(
        "UPDATE alert_rules SET name = $3, metric = $4, operator = $5, threshold = $6, window_spec = $7, \
         window_secs = $8, severity = $9, group_by = $10, webhook_url = $11, webhook_url_sealed = $12 \
         WHERE tenant_id = $1 AND id = $2 RETURNING {COLUMNS}"
    );
    Ok(
        on!(ex, c => sqlx::query_as::<_, Rule>(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).bind(id).bind(r.name).bind(r.metric).bind(r.operator).bind(r.threshold)
        .bind(r.window_spec).bind(r.window_secs).bind(r.severity).bind(Json(r.group_by)).bind(r.webhook_url)
        .bind(r.webhook_url_sealed).fetch_optional(&mut *c).await?),
    )
}

/// The tenant's rules.
pub async fn list(ex: &mut impl Exec, tenant: TenantId) -> StoreResult<Vec<Rule>> {
    let sql = format!("SELECT {COLUMNS} FROM alert_rules WHERE tenant_id = $1 ORDER BY id");
    Ok(
        on!(ex, c => sqlx::query_as::<_, Rule>(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).fetch_all(&mut *c).await?),
    )
}

/// One rule of the tenant.
pub async fn get(ex: &mut impl Exec, tenant: TenantId, id: Uuid) -> StoreResult<Option<Rule>> {
    let sql = format!("SELECT {COLUMNS} FROM alert_rules WHERE tenant_id = $1 AND id = $2");
    Ok(
        on!(ex, c => sqlx::query_as::<_, Rule>(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).bind(id).fetch_optional(&mut *c).await?),
    )
}

/// Every rule, for an evaluation pass.
pub async fn all(ex: &mut impl Exec) -> StoreResult<Vec<Rule>> {
    let sql = format!("SELECT {COLUMNS} FROM alert_rules ORDER BY id");
    Ok(on!(ex, c => sqlx::query_as::<_, Rule>(sqlx::AssertSqlSafe(sql)).fetch_all(&mut *c).await?))
}

/// Removes a rule.
pub async fn delete(ex: &mut impl Exec, tenant: TenantId, id: Uuid) -> StoreResult<bool> {
    Ok(
        on!(ex, c => sqlx::query("DELETE FROM alert_rules WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.0).bind(id).execute(&mut *c).await?.rows_affected())
            == 1,
    )
}

/// Records an evaluation.
pub async fn evaluated(
    ex: &mut impl Exec,
    id: Uuid,
    groups: i64,
    firing: i64,
    now: OffsetDateTime,
) -> StoreResult<()> {
    on!(ex, c => sqlx::query("UPDATE alert_rules SET last_evaluated_at = $2, last_groups = $3, last_firing = $4 WHERE id = $1")
        .bind(id).bind(now).bind(groups).bind(firing).execute(&mut *c).await?.rows_affected());
    Ok(())
}
