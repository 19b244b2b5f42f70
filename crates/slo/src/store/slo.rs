//! SLOs (CONTRACT 16): each app's objective and the summary of its last evaluation.

use time::OffsetDateTime;
use trusthub_store::{Exec, StoreResult, TenantId, on};
use uuid::Uuid;

/// An app's SLO.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct Slo {
    /// The app.
    pub app_id: Uuid,
    /// Tenant.
    pub tenant_id: Uuid,
    /// Availability target in (0, 1).
    pub target: f64,
    /// Rolling window.
    pub window_days: i64,
    /// Coverage guard.
    pub minimum_data: f64,
    /// Created.
    pub created_at: OffsetDateTime,
    /// Last replaced.
    pub updated_at: OffsetDateTime,
}

const SLO_COLUMNS: &str =
    "app_id, tenant_id, target, window_days, minimum_data, created_at, updated_at";

/// Creates or replaces an app's SLO; whether it replaced one.
pub async fn put(ex: &mut impl Exec, s: &Slo) -> StoreResult<bool> {
    let existing = get(&mut *ex, TenantId(s.tenant_id), s.app_id).await?;
    on!(ex, c => {
        sqlx::query("DELETE FROM app_slos WHERE app_id = $1").bind(s.app_id).execute(&mut *c).await?;
        let sql = format!("INSERT INTO app_slos ({SLO_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)");
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(s.app_id).bind(s.tenant_id).bind(s.target).bind(s.window_days).bind(s.minimum_data)
            .bind(existing.as_ref().map_or(s.created_at, |e| e.created_at)).bind(s.updated_at)
            .execute(&mut *c).await?;
    });
    Ok(existing.is_some())
}

/// An app's SLO in the tenant.
pub async fn get(ex: &mut impl Exec, tenant: TenantId, app: Uuid) -> StoreResult<Option<Slo>> {
    let sql = format!("SELECT {SLO_COLUMNS} FROM app_slos WHERE tenant_id = $1 AND app_id = $2");
    Ok(on!(ex, c => sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).bind(app).fetch_optional(&mut *c).await?))
}

/// The tenant's SLOs (every tenant's when `None`).
pub async fn list(ex: &mut impl Exec, tenant: Option<TenantId>) -> StoreResult<Vec<Slo>> {
    Ok(match tenant {
        Some(t) => {
            let sql = format!("SELECT {SLO_COLUMNS} FROM app_slos WHERE tenant_id = $1");
            on!(ex, c => sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(t.0).fetch_all(&mut *c).await?)
        }
        None => {
            let sql = format!("SELECT {SLO_COLUMNS} FROM app_slos");
            on!(ex, c => sqlx::query_as(sqlx::AssertSqlSafe(sql)).fetch_all(&mut *c).await?)
        }
    })
}

/// Each SLO of the tenant (by its app) with its last evaluated state (`ok`, `burning`,
/// `exhausted`; `unknown` before the first evaluation).
pub async fn states(ex: &mut impl Exec, tenant: TenantId) -> StoreResult<Vec<(Uuid, String)>> {
    Ok(on!(ex, c => sqlx::query_as::<_, (Uuid, String)>(
        "SELECT app_id, COALESCE(last_state, 'unknown') FROM app_slos WHERE tenant_id = $1 ORDER BY app_id")
        .bind(tenant.0).fetch_all(&mut *c).await?))
}

/// Deletes an app's SLO; whether there was one.
pub async fn delete(ex: &mut impl Exec, tenant: TenantId, app: Uuid) -> StoreResult<bool> {
    Ok(
        on!(ex, c => sqlx::query("DELETE FROM app_slos WHERE tenant_id = $1 AND app_id = $2")
        .bind(tenant.0).bind(app).execute(&mut *c).await?.rows_affected())
            > 0,
    )
}

/// An SLO's last evaluated status, as the overview and the apps page read it.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct Summary {
    /// The app.
    pub app_id: Uuid,
    /// Its name (the apps capability's; filled by [`summaries`]).
    #[sqlx(skip)]
    pub app_name: String,
    /// `ok`, `burning`, `exhausted`, `insufficient_data`; `None` until first evaluated.
    pub last_state: Option<String>,
    /// Minutes of budget left.
    pub last_budget_remaining: Option<f64>,
    /// Minutes of budget in the window.
    pub last_budget_total: Option<f64>,
    /// Uptime in the window, percent.
    pub last_uptime: Option<f64>,
}

/// Keeps an SLO's status as of `at`.
pub async fn save_summary(
    ex: &mut impl Exec,
    app: Uuid,
    state: &str,
    budget_remaining: f64,
    budget_total: f64,
    uptime: Option<f64>,
    at: OffsetDateTime,
) -> StoreResult<()> {
    on!(ex, c => sqlx::query(
        "UPDATE app_slos SET last_state = $2, last_budget_remaining = $3, last_budget_total = $4, \
         last_uptime = $5, last_evaluated_at = $6 WHERE app_id = $1")
        .bind(app).bind(state).bind(budget_remaining).bind(budget_total).bind(uptime).bind(at)
        .execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// The tenant's SLOs, and how many were burning or exhausted at their last evaluation.
pub async fn summary_counts(ex: &mut impl Exec, tenant: TenantId) -> StoreResult<(i64, i64)> {
    Ok(on!(ex, c => sqlx::query_as::<_, (i64, i64)>(
        "SELECT COUNT(*), COALESCE(SUM(CASE WHEN last_state IN ('burning', 'exhausted') THEN 1 ELSE 0 END), 0) \
         FROM app_slos WHERE tenant_id = $1")
        .bind(tenant.0).fetch_one(&mut *c).await?))
}

/// The tenant's SLOs with their last status, least budget left first (never evaluated
/// last), then by app name (from `app_names`, the apps capability's).
pub async fn summaries(
    ex: &mut impl Exec,
    tenant: TenantId,
    app_names: &std::collections::HashMap<Uuid, String>,
) -> StoreResult<Vec<Summary>> {
    let mut out: Vec<Summary> = on!(ex, c => sqlx::query_as::<_, Summary>(
        "SELECT app_id, last_state, last_budget_remaining, last_budget_total, last_uptime \
         FROM app_slos WHERE tenant_id = $1")
        .bind(tenant.0).fetch_all(&mut *c).await?);
    for s in &mut out {
        s.app_name = app_names.get(&s.app_id).cloned().unwrap_or_default();
    }
    out.sort_by(|a, b| {
        let key = |s: &Summary| (s.last_budget_remaining.is_none(), s.last_budget_remaining);
        let (na, la) = key(a);
        let (nb, lb) = key(b);
        na.cmp(&nb)
            .then(la.partial_cmp(&lb).unwrap_or(std::cmp::Ordering::Equal))
            .then_with(|| a.app_name.cmp(&b.app_name))
    });
    Ok(out)
}
