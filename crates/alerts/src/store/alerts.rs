//! Alerts (SPEC 2.3, 3.2; CONTRACT 7): at most one open alert per fingerprint.

use sqlx::types::Json;
use time::OffsetDateTime;
use trusthub_store::{Exec, Handle, StoreResult, TenantId, on};
use uuid::Uuid;

/// An alert with its agent as it is now.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Alert {
    /// Id (UUIDv7: ordered by creation).
    pub id: Uuid,
    /// Tenant.
    pub tenant_id: Uuid,
    /// `info`, `warning`, `critical`.
    pub severity: String,
    /// E.g. `cpu`, `liveness`.
    pub category: String,
    /// Title.
    pub title: String,
    /// More words.
    pub detail: Option<String>,
    /// `rule`, `liveness`, ...
    pub source: String,
    /// Deduplication key.
    pub fingerprint: String,
    /// The host, if any.
    pub agent_id: Option<Uuid>,
    /// Its hostname (kept when the agent is removed).
    pub agent_hostname: Option<String>,
    /// Its current tags.
    pub agent_tags: Option<Json<Vec<String>>>,
    /// The app, for liveness alerts.
    pub app_id: Option<Uuid>,
    /// The rule, for rule alerts.
    pub rule_id: Option<Uuid>,
    /// Raised.
    pub created_at: OffsetDateTime,
    /// Resolved?
    pub is_resolved: bool,
    /// When.
    pub resolved_at: Option<OffsetDateTime>,
    /// Who (`user:<id>`, `liveness`, `rule`).
    pub resolved_by: Option<String>,
    /// Why.
    pub resolution: Option<String>,
}

const SELECT: &str = "SELECT a.id, a.tenant_id, a.severity, a.category, a.title, a.detail, a.source, a.fingerprint, \
    a.agent_id, COALESCE(g.hostname, a.agent_hostname) AS agent_hostname, g.tags AS agent_tags, a.app_id, a.rule_id, \
    a.created_at, a.is_resolved, a.resolved_at, a.resolved_by, a.resolution \
    FROM alerts a LEFT JOIN alert_hosts g ON g.agent_id = a.agent_id";

/// An alert to raise.
#[derive(Debug, Clone)]
pub struct NewAlert<'a> {
    /// Severity name.
    pub severity: &'a str,
    /// Its rank (0 info, 1 warning, 2 critical).
    pub severity_rank: i64,
    /// Category.
    pub category: &'a str,
    /// Title.
    pub title: &'a str,
    /// Detail.
    pub detail: Option<&'a str>,
    /// Source.
    pub source: &'a str,
    /// Fingerprint.
    pub fingerprint: &'a str,
    /// Host.
    pub agent_id: Option<Uuid>,
    /// App.
    pub app_id: Option<Uuid>,
    /// Rule.
    pub rule_id: Option<Uuid>,
}

/// Raises an alert unless one with the same fingerprint is open; the new alert, or `None`.
pub async fn raise(
    ex: &mut impl Exec,
    tenant: TenantId,
    a: &NewAlert<'_>,
    now: OffsetDateTime,
) -> StoreResult<Option<Alert>> {
    Ok(raise_many(ex, tenant, std::slice::from_ref(a), now)
        .await?
        .pop())
}

/// [`raise`] for many alerts at once: one insert per hundred (each skipped while an alert with
/// its fingerprint is open) and one read of the new ones; the new alerts in `alerts` order.
pub async fn raise_many(
    ex: &mut impl Exec,
    tenant: TenantId,
    alerts: &[NewAlert<'_>],
    now: OffsetDateTime,
) -> StoreResult<Vec<Alert>> {
    let mut out = Vec::new();
    for chunk in alerts.chunks(trusthub_store::ROWS_PER_INSERT) {
        let ids: Vec<Uuid> = chunk.iter().map(|_| Uuid::now_v7()).collect();
        let rows: Vec<String> = (0..chunk.len())
            .map(|r| {
                let b = r * 13;
                let p: Vec<String> = (1..=13).map(|i| format!("${}", b + i)).collect();
                format!(
                    "({}, (SELECT hostname FROM alert_hosts WHERE agent_id = {}), {})",
                    p[..10].join(", "),
                    p[9],
                    p[10..].join(", ")
                )
            })
            .collect();
        let sql = format!(
            "INSERT INTO alerts (id, tenant_id, severity, severity_rank, category, title, detail, source, fingerprint, \
             agent_id, agent_hostname, app_id, rule_id, created_at) VALUES {} ON CONFLICT DO NOTHING RETURNING id",
            rows.join(", ")
        );
        let inserted: Vec<(Uuid,)> = on!(ex, c => {
            let mut q = sqlx::query_as::<_, (Uuid,)>(sqlx::AssertSqlSafe(sql.clone()));
            for (id, a) in ids.iter().zip(chunk) {
                q = q.bind(id).bind(tenant.0).bind(a.severity).bind(a.severity_rank).bind(a.category).bind(a.title)
                    .bind(a.detail).bind(a.source).bind(a.fingerprint).bind(a.agent_id).bind(a.app_id).bind(a.rule_id).bind(now);
            }
            q.fetch_all(&mut *c).await?
        });
        if inserted.is_empty() {
            continue;
        }
        // By id alone: with the tenant in the filter SQLite's planner takes the tenant
        // index and reads every alert of the tenant. The ids are the ones just inserted for
        // this tenant; the tenant is checked on what comes back.
        let sql = format!(
            "{SELECT} WHERE a.id IN ({}) ORDER BY a.id",
            (1..=inserted.len())
                .map(|i| format!("${i}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let read: Vec<Alert> = on!(ex, c => {
            let mut q = sqlx::query_as::<_, Alert>(sqlx::AssertSqlSafe(sql.clone()));
            for (id,) in &inserted {
                q = q.bind(id);
            }
            q.fetch_all(&mut *c).await?
        });
        out.extend(read.into_iter().filter(|a| a.tenant_id == tenant.0));
    }
    Ok(out)
}

/// One alert of the tenant.
pub async fn get(ex: &mut impl Exec, tenant: TenantId, id: Uuid) -> StoreResult<Option<Alert>> {
    let sql = format!("{SELECT} WHERE a.tenant_id = $1 AND a.id = $2");
    Ok(
        on!(ex, c => sqlx::query_as::<_, Alert>(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).bind(id).fetch_optional(&mut *c).await?),
    )
}

/// Resolves an open alert; the resolved alert, or `None` when it was not open.
pub async fn resolve(
    ex: &mut impl Exec,
    tenant: TenantId,
    id: Uuid,
    by: &str,
    resolution: &str,
    now: OffsetDateTime,
) -> StoreResult<Option<Alert>> {
    let n = on!(ex, c => sqlx::query(
        "UPDATE alerts SET is_resolved = TRUE, resolved_at = $3, resolved_by = $4, resolution = $5 \
         WHERE tenant_id = $1 AND id = $2 AND NOT is_resolved")
        .bind(tenant.0).bind(id).bind(now).bind(by).bind(resolution).execute(&mut *c).await?.rows_affected());
    if n == 0 {
        return Ok(None);
    }
    get(ex, tenant, id).await
}

/// The open alert with this fingerprint.
pub async fn open_by_fingerprint(
    ex: &mut impl Exec,
    tenant: TenantId,
    fingerprint: &str,
) -> StoreResult<Option<Alert>> {
    let sql =
        format!("{SELECT} WHERE a.tenant_id = $1 AND a.fingerprint = $2 AND NOT a.is_resolved");
    Ok(
        on!(ex, c => sqlx::query_as::<_, Alert>(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).bind(fingerprint).fetch_optional(&mut *c).await?),
    )
}

/// Open alerts of a rule.
pub async fn open_of_rule(
    ex: &mut impl Exec,
    tenant: TenantId,
    rule_id: Uuid,
) -> StoreResult<Vec<Alert>> {
    let sql = format!("{SELECT} WHERE a.tenant_id = $1 AND a.rule_id = $2 AND NOT a.is_resolved");
    Ok(
        on!(ex, c => sqlx::query_as::<_, Alert>(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).bind(rule_id).fetch_all(&mut *c).await?),
    )
}

/// Listing filters.
#[derive(Debug, Clone, Default)]
pub struct Filter<'a> {
    /// Only this severity.
    pub severity: Option<&'a str>,
    /// Only resolved / open ones.
    pub is_resolved: Option<bool>,
    /// Only alerts whose agent carries this tag.
    pub tag: Option<&'a str>,
    /// Only alerts older than this id (paging).
    pub before: Option<Uuid>,
    /// Page size.
    pub limit: i64,
}

/// The tenant's open alerts counted by severity (the overview).
pub async fn open_counts(ex: &mut impl Exec, tenant: TenantId) -> StoreResult<Vec<(String, i64)>> {
    Ok(on!(ex, c => sqlx::query_as::<_, (String, i64)>(
        "SELECT severity, COUNT(*) FROM alerts WHERE tenant_id = $1 AND is_resolved = $2 GROUP BY severity")
        .bind(tenant.0).bind(false).fetch_all(&mut *c).await?))
}

/// The tenant's alerts, newest first.
pub async fn list(ex: &mut impl Exec, tenant: TenantId, f: &Filter<'_>) -> StoreResult<Vec<Alert>> {
    let where_ = "WHERE a.tenant_id = $1 AND ($2 IS NULL OR a.severity = $2) AND ($3 IS NULL OR a.is_resolved = $3) \
        AND ($4 IS NULL OR a.id < $4)";
    Ok(match ex.handle() {
        Handle::Sqlite(c) => {
            let sql = format!(
                "{SELECT} {where_} AND ($5 IS NULL OR EXISTS (SELECT 1 FROM json_each(g.tags) j WHERE j.value = $5)) \
                 ORDER BY a.id DESC LIMIT $6"
            );
            sqlx::query_as::<_, Alert>(sqlx::AssertSqlSafe(sql))
                .bind(tenant.0)
                .bind(f.severity)
                .bind(f.is_resolved)
                .bind(f.before)
                .bind(f.tag)
                .bind(f.limit)
                .fetch_all(&mut *c)
                .await?
        }
        Handle::Postgres(c) => {
            let sql = format!(
                "{SELECT} {where_} AND ($5::text IS NULL OR g.tags ? $5) ORDER BY a.id DESC LIMIT $6"
            );
            sqlx::query_as::<_, Alert>(sqlx::AssertSqlSafe(sql))
                .bind(tenant.0)
                .bind(f.severity)
                .bind(f.is_resolved)
                .bind(f.before)
                .bind(f.tag)
                .bind(f.limit)
                .fetch_all(&mut *c)
                .await?
        }
    })
}
