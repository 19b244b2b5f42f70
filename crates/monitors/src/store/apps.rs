//! Tracked applications (SPEC 2.1, 3.1), their liveness state, the HTTP checks agents report
//! for them, and each agent's live state reduced to an observed map.

use sqlx::types::Json;
use time::OffsetDateTime;
use trusthub_core::apps::ObservedMap;
use trusthub_store::{Exec, Handle, StoreResult, TenantId, on};
use uuid::Uuid;

/// An app as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct App {
    /// Id.
    pub id: Uuid,
    /// Tenant.
    pub tenant_id: Uuid,
    /// The host that runs (or checks) it; `None` for a check the hub runs itself.
    pub agent_id: Option<Uuid>,
    /// Label.
    pub name: String,
    /// Kind (`systemd`, `docker`, `compose`, `process`, `http`, `tcp`, `tls`).
    pub app_type: String,
    /// Unit, container, `<project>::<service>`, binary path, or the URL for `http`.
    pub identifier: String,
    /// Contact.
    pub owner_email: Option<String>,
    /// Runbook.
    pub runbook_url: Option<String>,
    /// Notes.
    pub notes: Option<String>,
    /// `running` or `stopped`.
    pub expected_state: String,
    /// For processes: what a restart runs.
    pub restart_command: Option<String>,
    /// For `http`: the URL.
    pub endpoint: Option<String>,
    /// For `http`: seconds between checks.
    pub interval_seconds: Option<i64>,
    /// Consecutive mismatches.
    pub consecutive_mismatch: i64,
    /// Consecutive unknowns.
    pub consecutive_unknown: i64,
    /// What the last check observed.
    pub observed_state: Option<String>,
    /// When the observed state last changed.
    pub last_state_change: Option<OffsetDateTime>,
    /// When liveness last looked at it.
    pub last_checked_at: Option<OffsetDateTime>,
    /// A liveness alert is open (the red marker).
    pub alerting: bool,
    /// For `http`: the latest check the agent reported.
    pub last_check_at: Option<OffsetDateTime>,
    /// Its outcome.
    pub last_check_ok: Option<bool>,
    /// Its HTTP status.
    pub last_check_status: Option<i64>,
    /// Its latency.
    pub last_check_latency_ms: Option<i64>,
    /// Its error.
    pub last_check_error: Option<String>,
    /// Created.
    pub created_at: OffsetDateTime,
    /// Checks: seconds a probe may take.
    pub timeout_seconds: Option<i64>,
    /// Checks: failures tolerated before down.
    pub retries: i64,
    /// Checks: successes needed to be up.
    pub recoveries: i64,
    /// http: accepted statuses (`200-399` when `None`).
    pub expected_status: Option<String>,
    /// http: text the body must contain.
    pub keyword: Option<String>,
    /// tls: days before expiry that warn.
    pub tls_min_days: Option<i64>,
    /// Checks: consecutive failures.
    pub consecutive_failures: i64,
    /// Checks: consecutive successes.
    pub consecutive_successes: i64,
    /// Hub checks: when the next probe is due.
    pub next_check_at: Option<OffsetDateTime>,
    /// tls: when the certificate last seen expires.
    pub tls_expires_at: Option<OffsetDateTime>,
    /// push: seconds past the interval before a missing ping counts.
    pub grace_seconds: Option<i64>,
    /// push: the first characters of the secret token (shown masked).
    pub push_token_prefix: Option<String>,
    /// push: when the app said its run started (`/start`), until its ping.
    pub push_started_at: Option<OffsetDateTime>,
    /// dns: the values the answer must hold (a JSON array).
    pub expected_values: Option<String>,
    /// http: the assertion on a JSON body (`{path, op, value}` as JSON).
    pub json_query: Option<String>,
    /// The public badge's token, while the badge is on.
    pub badge_token: Option<String>,
}

impl App {
    /// dns: the expected values.
    pub fn expected(&self) -> Vec<String> {
        self.expected_values
            .as_deref()
            .and_then(|v| serde_json::from_str(v).ok())
            .unwrap_or_default()
    }

    /// http: the JSON assertion.
    pub fn query(&self) -> Option<trusthub_core::json_query::JsonQuery> {
        self.json_query
            .as_deref()
            .and_then(|v| serde_json::from_str(v).ok())
    }
}

const COLUMNS: &str = "id, tenant_id, agent_id, name, app_type, identifier, owner_email, runbook_url, notes, \
    expected_state, restart_command, endpoint, interval_seconds, consecutive_mismatch, consecutive_unknown, \
    observed_state, last_state_change, last_checked_at, alerting, last_check_at, last_check_ok, last_check_status, \
    last_check_latency_ms, last_check_error, created_at, timeout_seconds, retries, recoveries, expected_status, \
    keyword, tls_min_days, consecutive_failures, consecutive_successes, next_check_at, tls_expires_at, grace_seconds, \
    push_token_prefix, push_started_at, expected_values, json_query, badge_token";

/// An app to create.
#[derive(Debug, Clone)]
pub struct NewApp<'a> {
    /// Host (`None`: the hub checks it).
    pub agent_id: Option<Uuid>,
    /// Label.
    pub name: &'a str,
    /// Kind.
    pub app_type: &'a str,
    /// Canonical identifier.
    pub identifier: &'a str,
    /// Contact.
    pub owner_email: Option<&'a str>,
    /// Runbook.
    pub runbook_url: Option<&'a str>,
    /// Notes.
    pub notes: Option<&'a str>,
    /// `running` or `stopped`.
    pub expected_state: &'a str,
    /// Restart command (processes).
    pub restart_command: Option<&'a str>,
    /// URL (`http`).
    pub endpoint: Option<&'a str>,
    /// Check interval (`http`, `tcp`, `tls`).
    pub interval_seconds: Option<i64>,
    /// Checks: the probe's timeout.
    pub timeout_seconds: Option<i64>,
    /// Checks: failures tolerated before down.
    pub retries: i64,
    /// Checks: successes needed to be up.
    pub recoveries: i64,
    /// http: accepted statuses.
    pub expected_status: Option<&'a str>,
    /// http: text the body must contain.
    pub keyword: Option<&'a str>,
    /// tls: days before expiry that warn.
    pub tls_min_days: Option<i64>,
    /// push: grace seconds.
    pub grace_seconds: Option<i64>,
    /// push: the token's hash and first characters.
    pub push_token: Option<(&'a str, &'a str)>,
    /// dns: expected values (a JSON array).
    pub expected_values: Option<&'a str>,
    /// http: the JSON assertion (JSON).
    pub json_query: Option<&'a str>,
    /// When the first check is due (hub checks; a push monitor's first deadline).
    pub first_due: Option<OffsetDateTime>,
}

/// Creates an app; `None` when the agent (or, for hub checks, the tenant) already tracks the
/// same kind and identifier. A hub check is due at once.
pub async fn insert(
    ex: &mut impl Exec,
    tenant: TenantId,
    app: &NewApp<'_>,
    now: OffsetDateTime,
) -> StoreResult<Option<App>> {
    let id = Uuid::now_v7();
    let sql = format!(
        "INSERT INTO apps (id, tenant_id, agent_id, name, app_type, identifier, owner_email, runbook_url, notes, \
         expected_state, restart_command, endpoint, interval_seconds, created_at, timeout_seconds, retries, recoveries, \
         expected_status, keyword, tls_min_days, next_check_at, grace_seconds, push_token_hash, push_token_prefix, \
         expected_values, json_query) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, \
         $22, $23, $24, $25, $26) ON CONFLICT DO NOTHING RETURNING {COLUMNS}"
    );
    let due = app.first_due;
    Ok(
        on!(ex, c => sqlx::query_as::<_, App>(sqlx::AssertSqlSafe(sql))
        .bind(id).bind(tenant.0).bind(app.agent_id).bind(app.name).bind(app.app_type).bind(app.identifier)
        .bind(app.owner_email).bind(app.runbook_url).bind(app.notes).bind(app.expected_state)
        .bind(app.restart_command).bind(app.endpoint).bind(app.interval_seconds).bind(now)
        .bind(app.timeout_seconds).bind(app.retries).bind(app.recoveries).bind(app.expected_status)
        .bind(app.keyword).bind(app.tls_min_days).bind(due).bind(app.grace_seconds)
        .bind(app.push_token.map(|t| t.0)).bind(app.push_token.map(|t| t.1)).bind(app.expected_values)
        .bind(app.json_query)
        .fetch_optional(&mut *c).await?),
    )
}

/// The tenant's apps, optionally of one agent, oldest first.
pub async fn list(
    ex: &mut impl Exec,
    tenant: TenantId,
    agent_id: Option<Uuid>,
) -> StoreResult<Vec<App>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM apps WHERE tenant_id = $1 AND ($2 IS NULL OR agent_id = $2) ORDER BY id"
    );
    Ok(
        on!(ex, c => sqlx::query_as::<_, App>(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).bind(agent_id).fetch_all(&mut *c).await?),
    )
}

/// One page of the tenant's apps for the dashboard: those out of their expected state or
/// alerting first (only those with `only_off`), then by host name (from `hostnames`, the
/// fleet's) and app name; with the number of apps matching.
pub async fn page(
    ex: &mut impl Exec,
    tenant: TenantId,
    hostnames: &std::collections::HashMap<Uuid, String>,
    only_off: bool,
    offset: i64,
    limit: i64,
) -> StoreResult<(Vec<App>, i64)> {
    // The order's keys of every app (a few small columns), then the page's rows whole: a
    // page of 200 among 10,000 apps decodes 200 full rows, not 10,000.
    #[derive(sqlx::FromRow)]
    struct Key {
        id: Uuid,
        agent_id: Option<Uuid>,
        name: String,
        alerting: bool,
        observed_state: Option<String>,
        expected_state: String,
    }
    let off = |a: &Key| {
        a.alerting
            || a.observed_state
                .as_deref()
                .is_none_or(|o| o != a.expected_state)
    };
    let keys: Vec<Key> = on!(ex, c => sqlx::query_as(
        "SELECT id, agent_id, name, alerting, observed_state, expected_state FROM apps WHERE tenant_id = $1")
        .bind(tenant.0).fetch_all(&mut *c).await?);
    let mut keys: Vec<Key> = keys.into_iter().filter(|a| !only_off || off(a)).collect();
    let host = |a: &Key| {
        a.agent_id
            .and_then(|g| hostnames.get(&g))
            .map_or("", String::as_str)
    };
    keys.sort_by(|a, b| (!off(a), host(a), &a.name, a.id).cmp(&(!off(b), host(b), &b.name, b.id)));
    let total = keys.len() as i64;
    let ids: Vec<Uuid> = keys
        .iter()
        .skip(usize::try_from(offset).unwrap_or(0))
        .take(usize::try_from(limit).unwrap_or(0))
        .map(|k| k.id)
        .collect();
    if ids.is_empty() {
        return Ok((Vec::new(), total));
    }
    let rows: Vec<App> = on!(ex, c => {
        let mut qb = sqlx::QueryBuilder::new(format!("SELECT {COLUMNS} FROM apps WHERE tenant_id = "));
        qb.push_bind(tenant.0).push(" AND id IN (");
        let mut list = qb.separated(", ");
        for id in &ids {
            list.push_bind(*id);
        }
        qb.push(")");
        qb.build_query_as().fetch_all(&mut *c).await?
    });
    let mut by_id: std::collections::HashMap<Uuid, App> =
        rows.into_iter().map(|a| (a.id, a)).collect();
    Ok((
        ids.iter().filter_map(|id| by_id.remove(id)).collect(),
        total,
    ))
}

/// The tenant's tracked apps, and how many of them are observed in another state than
/// expected (the overview).
pub async fn state_counts(ex: &mut impl Exec, tenant: TenantId) -> StoreResult<(i64, i64)> {
    Ok(on!(ex, c => sqlx::query_as::<_, (i64, i64)>(
        "SELECT COUNT(*), COUNT(CASE WHEN observed_state IS NOT NULL AND observed_state <> 'unknown' \
         AND observed_state <> expected_state THEN 1 END) FROM apps WHERE tenant_id = $1")
        .bind(tenant.0).fetch_one(&mut *c).await?))
}

/// One app of the tenant.
pub async fn get(ex: &mut impl Exec, tenant: TenantId, id: Uuid) -> StoreResult<Option<App>> {
    let sql = format!("SELECT {COLUMNS} FROM apps WHERE tenant_id = $1 AND id = $2");
    Ok(
        on!(ex, c => sqlx::query_as::<_, App>(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).bind(id).fetch_optional(&mut *c).await?),
    )
}

/// Sets the expected state; the comparison continues with the new value (SPEC 3.1), so the
/// mismatch counters start again.
pub async fn set_expected(
    ex: &mut impl Exec,
    tenant: TenantId,
    id: Uuid,
    expected: &str,
) -> StoreResult<bool> {
    Ok(on!(ex, c => sqlx::query(
        "UPDATE apps SET expected_state = $3, consecutive_mismatch = 0, consecutive_unknown = 0 \
         WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.0).bind(id).bind(expected).execute(&mut *c).await?.rows_affected())
        == 1)
}

/// Stops tracking an app.
pub async fn delete(ex: &mut impl Exec, tenant: TenantId, id: Uuid) -> StoreResult<bool> {
    Ok(
        on!(ex, c => sqlx::query("DELETE FROM apps WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.0).bind(id).execute(&mut *c).await?.rows_affected())
            == 1,
    )
}

/// What a liveness tick reads of an app (only what deciding needs, so 100k apps read fast).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct LivenessRow {
    /// App.
    pub id: Uuid,
    /// Host.
    pub agent_id: Uuid,
    /// Kind.
    pub app_type: String,
    /// Identifier.
    pub identifier: String,
    /// `running` or `stopped`.
    pub expected_state: String,
    /// For `http`.
    pub interval_seconds: Option<i64>,
    /// Counter.
    pub consecutive_mismatch: i64,
    /// Counter.
    pub consecutive_unknown: i64,
    /// Last observation.
    pub observed_state: Option<String>,
    /// Red marker.
    pub alerting: bool,
    /// For `http`: the latest check.
    pub last_check_at: Option<OffsetDateTime>,
    /// Its outcome.
    pub last_check_ok: Option<bool>,
}

/// An `http` app's check columns: interval, latest check time and outcome.
type HttpCols = (Option<i64>, Option<OffsetDateTime>, Option<bool>);

/// Each app's name by id, read packed: one JSON array the database builds, not 10,000 rows
/// of every column (the apps page's SLO list: 141 ms at 10,000 apps, bench/RESULTS.md).
pub async fn names(
    ex: &mut impl Exec,
    tenant: TenantId,
) -> StoreResult<std::collections::HashMap<Uuid, String>> {
    let packed: Option<String> =
        match ex.handle() {
            Handle::Sqlite(c) => sqlx::query_scalar(
                "SELECT json_group_array(json_array(hex(id), name)) FROM apps WHERE tenant_id = $1",
            )
            .bind(tenant.0)
            .fetch_one(&mut *c)
            .await?,
            Handle::Postgres(c) => sqlx::query_scalar(
                "SELECT json_agg(json_build_array(id, name))::text FROM apps WHERE tenant_id = $1",
            )
            .bind(tenant.0)
            .fetch_one(&mut *c)
            .await?,
        };
    let bad = || trusthub_store::StoreError::Corrupt("apps (packed names)");
    let rows: Vec<(String, String)> = match packed {
        Some(text) => serde_json::from_str(&text).map_err(|_| bad())?,
        None => Vec::new(),
    };
    rows.into_iter()
        .map(|(id, name)| Ok((Uuid::parse_str(&id).map_err(|_| bad())?, name)))
        .collect()
}

type PackedRow = (
    String,
    String,
    String,
    String,
    String,
    i64,
    i64,
    Option<String>,
    serde_json::Value,
);

/// Every app, for a liveness tick. The rows come packed as one JSON array per agent, which
/// both engines build and serde reads far faster than 100k typed rows (measured on SQLite:
/// 1.26 s typed, 0.25 s packed, bench/RESULTS.md); the few `http` apps add their check
/// columns from a typed query.
pub async fn liveness_rows(ex: &mut impl Exec) -> StoreResult<Vec<LivenessRow>> {
    let packed: Vec<String> = match ex.handle() {
        Handle::Sqlite(c) => sqlx::query_scalar(
            "SELECT json_group_array(json_array(hex(id), hex(agent_id), app_type, identifier, expected_state, \
             consecutive_mismatch, consecutive_unknown, observed_state, alerting)) FROM apps \
             WHERE agent_id IS NOT NULL GROUP BY agent_id",
        )
        .fetch_all(&mut *c)
        .await?,
        Handle::Postgres(c) => sqlx::query_scalar(
            "SELECT json_agg(json_build_array(id, agent_id, app_type, identifier, expected_state, \
             consecutive_mismatch, consecutive_unknown, observed_state, alerting))::text FROM apps \
             WHERE agent_id IS NOT NULL GROUP BY agent_id",
        )
        .fetch_all(&mut *c)
        .await?,
    };
    let http: std::collections::HashMap<Uuid, HttpCols> =
        on!(ex, c => sqlx::query_as::<_, (Uuid, Option<i64>, Option<OffsetDateTime>, Option<bool>)>(
            "SELECT id, interval_seconds, last_check_at, last_check_ok FROM apps \
             WHERE app_type IN ('http', 'tcp', 'tls') AND agent_id IS NOT NULL")
            .fetch_all(&mut *c).await?)
        .into_iter()
        .map(|(id, i, at, ok)| (id, (i, at, ok)))
        .collect();
    let bad = |what: &'static str| trusthub_store::StoreError::Corrupt(what);
    let mut out = Vec::new();
    for group in packed {
        let rows: Vec<PackedRow> =
            serde_json::from_str(&group).map_err(|_| bad("apps (packed liveness rows)"))?;
        for (
            id,
            agent_id,
            app_type,
            identifier,
            expected_state,
            cm,
            cu,
            observed_state,
            alerting,
        ) in rows
        {
            let id = Uuid::parse_str(&id).map_err(|_| bad("apps.id"))?;
            let (interval_seconds, last_check_at, last_check_ok) =
                http.get(&id).copied().unwrap_or((None, None, None));
            out.push(LivenessRow {
                id,
                agent_id: Uuid::parse_str(&agent_id).map_err(|_| bad("apps.agent_id"))?,
                app_type,
                identifier,
                expected_state,
                interval_seconds,
                consecutive_mismatch: cm,
                consecutive_unknown: cu,
                observed_state,
                alerting: alerting.as_bool().unwrap_or(alerting.as_i64() == Some(1)),
                last_check_at,
                last_check_ok,
            });
        }
    }
    Ok(out)
}

/// Apps by id (any tenant), for the few a tick raises or resolves alerts for.
pub async fn by_ids(ex: &mut impl Exec, ids: &[Uuid]) -> StoreResult<Vec<App>> {
    let mut out = Vec::with_capacity(ids.len());
    let sql = format!("SELECT {COLUMNS} FROM apps WHERE id = $1");
    for id in ids {
        if let Some(a) = on!(ex, c => sqlx::query_as::<_, App>(sqlx::AssertSqlSafe(sql.as_str()))
            .bind(id).fetch_optional(&mut *c).await?)
        {
            out.push(a);
        }
    }
    Ok(out)
}

/// The liveness state a tick writes back.
#[derive(Debug, Clone, Copy)]
pub struct LivenessUpdate {
    /// App.
    pub id: Uuid,
    /// Counter.
    pub consecutive_mismatch: i64,
    /// Counter.
    pub consecutive_unknown: i64,
    /// Observed now.
    pub observed_state: &'static str,
    /// When it changed, if it did now (`None` keeps the stored time).
    pub last_state_change: Option<OffsetDateTime>,
    /// Red marker.
    pub alerting: bool,
}

/// Writes a tick's changed liveness states: one statement per 1000 apps (`UNNEST` on
/// PostgreSQL, a `VALUES` list joined with `UPDATE ... FROM` on SQLite).
pub async fn save_liveness(
    ex: &mut impl Exec,
    updates: &[LivenessUpdate],
    now: OffsetDateTime,
) -> StoreResult<()> {
    for chunk in updates.chunks(1000) {
        match ex.handle() {
            Handle::Postgres(c) => {
                sqlx::query(
                    "UPDATE apps a SET consecutive_mismatch = v.cm, consecutive_unknown = v.cu, observed_state = v.os, \
                     last_state_change = COALESCE(v.lsc, a.last_state_change), alerting = v.al, last_checked_at = $7 \
                     FROM UNNEST($1::uuid[], $2::int8[], $3::int8[], $4::text[], $5::timestamptz[], $6::bool[]) \
                     AS v(id, cm, cu, os, lsc, al) WHERE a.id = v.id",
                )
                .bind(chunk.iter().map(|u| u.id).collect::<Vec<_>>())
                .bind(chunk.iter().map(|u| u.consecutive_mismatch).collect::<Vec<_>>())
                .bind(chunk.iter().map(|u| u.consecutive_unknown).collect::<Vec<_>>())
                .bind(chunk.iter().map(|u| u.observed_state).collect::<Vec<_>>())
                .bind(chunk.iter().map(|u| u.last_state_change).collect::<Vec<_>>())
                .bind(chunk.iter().map(|u| u.alerting).collect::<Vec<_>>())
                .bind(now)
                .execute(&mut *c)
                .await?;
            }
            Handle::Sqlite(c) => {
                let mut qb =
                    sqlx::QueryBuilder::<sqlx::Sqlite>::new("WITH v(id, cm, cu, os, lsc, al) AS (");
                qb.push_values(chunk, |mut b, u| {
                    b.push_bind(u.id)
                        .push_bind(u.consecutive_mismatch)
                        .push_bind(u.consecutive_unknown)
                        .push_bind(u.observed_state)
                        .push_bind(u.last_state_change)
                        .push_bind(u.alerting);
                });
                qb.push(
                    ") UPDATE apps SET consecutive_mismatch = v.cm, consecutive_unknown = v.cu, observed_state = v.os, \
                     last_state_change = COALESCE(v.lsc, apps.last_state_change), alerting = v.al, last_checked_at = ",
                );
                qb.push_bind(now);
                qb.push(" FROM v WHERE apps.id = v.id");
                qb.build().execute(&mut *c).await?;
            }
        }
    }
    Ok(())
}

/// An agent's live state.
#[derive(Debug, Clone)]
pub struct Live {
    /// Agent.
    pub agent_id: Uuid,
    /// When the report arrived.
    pub received_at: OffsetDateTime,
    /// Its push interval (how fresh a report must be).
    pub ingest_interval_secs: i64,
    /// What it shows.
    pub observed: Json<ObservedMap>,
}

/// Replaces an agent's live state.
pub async fn set_live(
    ex: &mut impl Exec,
    agent_id: Uuid,
    observed: &ObservedMap,
    now: OffsetDateTime,
) -> StoreResult<()> {
    on!(ex, c => sqlx::query(
        "INSERT INTO agent_live (agent_id, received_at, observed) VALUES ($1, $2, $3) \
         ON CONFLICT (agent_id) DO UPDATE SET received_at = excluded.received_at, observed = excluded.observed")
        .bind(agent_id).bind(now).bind(Json(observed)).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// Live states of every agent that has apps, with each agent's push interval from
/// `intervals` (the fleet's; an agent missing there is gone and skipped).
pub async fn live_of_tracked_agents(
    ex: &mut impl Exec,
    intervals: &std::collections::HashMap<Uuid, i64>,
) -> StoreResult<Vec<Live>> {
    let rows: Vec<(Uuid, OffsetDateTime, Json<ObservedMap>)> = on!(ex, c => sqlx::query_as(
        "SELECT l.agent_id, l.received_at, l.observed FROM agent_live l \
         WHERE EXISTS (SELECT 1 FROM apps a WHERE a.agent_id = l.agent_id)")
        .fetch_all(&mut *c).await?);
    Ok(rows
        .into_iter()
        .filter_map(|(agent_id, received_at, observed)| {
            Some(Live {
                agent_id,
                received_at,
                ingest_interval_secs: *intervals.get(&agent_id)?,
                observed,
            })
        })
        .collect())
}

pub use trusthub_core::apps::CheckResult;

/// The checks an agent runs (its results for anything else are ignored).
pub async fn checks_of_agent(ex: &mut impl Exec, agent_id: Uuid) -> StoreResult<Vec<App>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM apps WHERE agent_id = $1 AND app_type IN ('http', 'dns', 'ping')"
    );
    Ok(
        on!(ex, c => sqlx::query_as::<_, App>(sqlx::AssertSqlSafe(sql))
        .bind(agent_id).fetch_all(&mut *c).await?),
    )
}

/// Hub checks due at `now`, oldest due first.
pub async fn due_checks(
    ex: &mut impl Exec,
    now: OffsetDateTime,
    limit: i64,
) -> StoreResult<Vec<App>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM apps WHERE agent_id IS NULL AND next_check_at IS NOT NULL \
         AND next_check_at <= $1 ORDER BY next_check_at LIMIT $2"
    );
    Ok(
        on!(ex, c => sqlx::query_as::<_, App>(sqlx::AssertSqlSafe(sql))
        .bind(now).bind(limit).fetch_all(&mut *c).await?),
    )
}

/// One check's result as the app row keeps it.
#[derive(Debug, Clone)]
pub struct CheckUpdate<'a> {
    /// App.
    pub id: Uuid,
    /// The result.
    pub result: &'a CheckResult,
    /// Counters after it.
    pub consecutive_failures: i64,
    /// Counters after it.
    pub consecutive_successes: i64,
    /// The verdict after it (`running`, `stopped`, `unknown`).
    pub observed_state: &'a str,
    /// When the verdict changed, if it did now.
    pub last_state_change: Option<OffsetDateTime>,
    /// Red marker.
    pub alerting: bool,
    /// Hub checks: the next probe.
    pub next_check_at: Option<OffsetDateTime>,
    /// tls: the certificate's expiry.
    pub tls_expires_at: Option<OffsetDateTime>,
}

/// Stores one check result (history, and the latest on the app row with the counters and
/// verdict). `false` when the same app and instant were stored before (nothing changes).
pub async fn save_check(ex: &mut impl Exec, u: &CheckUpdate<'_>) -> StoreResult<bool> {
    let r = u.result;
    let n = on!(ex, c => sqlx::query(
        "INSERT INTO app_checks (app_id, checked_at, ok, status_code, latency_ms, error) \
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING")
        .bind(u.id).bind(r.checked_at).bind(r.ok).bind(r.status_code).bind(r.latency_ms)
        .bind(r.error.as_deref()).execute(&mut *c).await?.rows_affected());
    if n == 0 {
        return Ok(false);
    }
    on!(ex, c => sqlx::query(
        "UPDATE apps SET last_check_at = $2, last_check_ok = $3, last_check_status = $4, \
         last_check_latency_ms = $5, last_check_error = $6, consecutive_failures = $7, \
         consecutive_successes = $8, observed_state = $9, \
         last_state_change = COALESCE($10, last_state_change), alerting = $11, last_checked_at = $2, \
         next_check_at = COALESCE($12, next_check_at), tls_expires_at = COALESCE($13, tls_expires_at) \
         WHERE id = $1")
        .bind(u.id).bind(r.checked_at).bind(r.ok).bind(r.status_code).bind(r.latency_ms)
        .bind(r.error.as_deref()).bind(u.consecutive_failures).bind(u.consecutive_successes)
        .bind(u.observed_state).bind(u.last_state_change).bind(u.alerting).bind(u.next_check_at)
        .bind(u.tls_expires_at).execute(&mut *c).await?.rows_affected());
    Ok(true)
}

/// The checks each of these agents runs (http, dns, ping: CONTRACT 32), by agent and app.
pub async fn http_checks_of_agents(
    ex: &mut impl Exec,
    agents: &[Uuid],
) -> StoreResult<Vec<(Uuid, trusthub_core::agent::HttpCheck)>> {
    #[derive(sqlx::FromRow)]
    struct Row {
        agent_id: Uuid,
        id: Uuid,
        endpoint: String,
        interval_seconds: i64,
        timeout_seconds: Option<i64>,
        expected_status: Option<String>,
        keyword: Option<String>,
        json_query: Option<String>,
        expected_values: Option<String>,
    }
    let mut out = Vec::new();
    for chunk in agents.chunks(4_000) {
        let rows: Vec<Row> = on!(ex, c => {
            let mut qb = sqlx::QueryBuilder::new(
                "SELECT agent_id, id, endpoint, interval_seconds, timeout_seconds, expected_status, \
                 keyword, json_query, expected_values FROM apps WHERE app_type IN ('http', 'dns', 'ping') \
                 AND endpoint IS NOT NULL AND interval_seconds IS NOT NULL AND agent_id IN (",
            );
            let mut list = qb.separated(", ");
            for a in chunk {
                list.push_bind(*a);
            }
            qb.push(") ORDER BY agent_id, id");
            qb.build_query_as().fetch_all(&mut *c).await?
        });
        out.extend(rows.into_iter().map(|r| {
            let check = trusthub_core::agent::HttpCheck {
                app_id: r.id,
                endpoint: r.endpoint,
                interval_seconds: r.interval_seconds,
                timeout_seconds: r.timeout_seconds,
                expected_status: r.expected_status,
                keyword: r.keyword,
                json_query: r.json_query.and_then(|q| serde_json::from_str(&q).ok()),
                expected: r
                    .expected_values
                    .and_then(|v| serde_json::from_str(&v).ok()),
            };
            (r.agent_id, check)
        }));
    }
    Ok(out)
}

/// An app's recent check results, newest first.
pub async fn checks(
    ex: &mut impl Exec,
    app_id: Uuid,
    limit: i64,
) -> StoreResult<
    Vec<(
        OffsetDateTime,
        bool,
        Option<i64>,
        Option<i64>,
        Option<String>,
    )>,
> {
    Ok(on!(ex, c => sqlx::query_as(
        "SELECT checked_at, ok, status_code, latency_ms, error FROM app_checks WHERE app_id = $1 \
         ORDER BY checked_at DESC LIMIT $2")
        .bind(app_id).bind(limit).fetch_all(&mut *c).await?))
}

/// Forgets check results older than `before`.
pub async fn purge_checks(ex: &mut impl Exec, before: OffsetDateTime) -> StoreResult<u64> {
    Ok(
        on!(ex, c => sqlx::query("DELETE FROM app_checks WHERE checked_at < $1")
        .bind(before).execute(&mut *c).await?.rows_affected()),
    )
}

/// An app with its push token's hash.
#[derive(sqlx::FromRow)]
struct PushRow {
    push_token_hash: String,
    #[sqlx(flatten)]
    app: App,
}

/// The push monitors whose token hashes are among `hashes`, with their hash.
pub async fn by_push_tokens(
    ex: &mut impl Exec,
    hashes: &[&str],
) -> StoreResult<Vec<(String, App)>> {
    let mut out = Vec::new();
    for chunk in hashes.chunks(500) {
        let sql = format!(
            "SELECT push_token_hash, {COLUMNS} FROM apps \
             WHERE app_type = 'push' AND push_token_hash IN ("
        );
        let rows: Vec<PushRow> = on!(ex, c => {
            let mut qb = sqlx::QueryBuilder::new(sql.clone());
            let mut list = qb.separated(", ");
            for h in chunk {
                list.push_bind(*h);
            }
            qb.push(")");
            qb.build_query_as().fetch_all(&mut *c).await?
        });
        out.extend(rows.into_iter().map(|r| (r.push_token_hash, r.app)));
    }
    Ok(out)
}

/// Stores many check results and the app rows as they stand after them, at once (a batch of
/// pings): `results` go to the history (a result already stored for its app and instant is
/// kept as it was), and each of `apps` gets its latest result, counters, verdict, red
/// marker, next deadline and run start from the row given.
pub async fn save_checks(
    ex: &mut impl Exec,
    results: &[CheckResult],
    apps: &[&App],
) -> StoreResult<()> {
    for chunk in results.chunks(trusthub_store::ROWS_PER_INSERT) {
        let sql = format!(
            "INSERT INTO app_checks (app_id, checked_at, ok, status_code, latency_ms, error) \
             VALUES {} ON CONFLICT DO NOTHING",
            trusthub_store::values(chunk.len(), 6)
        );
        on!(ex, c => {
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql.clone()));
            for r in chunk {
                q = q.bind(r.app_id).bind(r.checked_at).bind(r.ok).bind(r.status_code)
                    .bind(r.latency_ms).bind(r.error.as_deref());
            }
            q.execute(&mut *c).await?.rows_affected()
        });
    }
    for chunk in apps.chunks(trusthub_store::ROWS_PER_INSERT) {
        let sql = format!(
            "WITH v(id, at, ok, status, latency, error, failures, successes, observed, changed, \
             alerting, next_at, started) AS (VALUES {}) \
             UPDATE apps SET last_check_at = v.at, last_check_ok = v.ok, last_check_status = v.status, \
             last_check_latency_ms = v.latency, last_check_error = v.error, \
             consecutive_failures = v.failures, consecutive_successes = v.successes, \
             observed_state = v.observed, last_state_change = v.changed, alerting = v.alerting, \
             last_checked_at = v.at, next_check_at = v.next_at, push_started_at = v.started \
             FROM v WHERE apps.id = v.id",
            trusthub_store::values(chunk.len(), 13)
        );
        on!(ex, c => {
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql.clone()));
            for a in chunk {
                q = q.bind(a.id).bind(a.last_check_at).bind(a.last_check_ok)
                    .bind(a.last_check_status).bind(a.last_check_latency_ms)
                    .bind(a.last_check_error.as_deref()).bind(a.consecutive_failures)
                    .bind(a.consecutive_successes).bind(a.observed_state.as_deref())
                    .bind(a.last_state_change).bind(a.alerting).bind(a.next_check_at)
                    .bind(a.push_started_at);
            }
            q.execute(&mut *c).await?.rows_affected()
        });
    }
    Ok(())
}

/// Gives a push monitor a new token (the old one stops working).
pub async fn set_push_token(
    ex: &mut impl Exec,
    tenant: TenantId,
    id: Uuid,
    hash: &str,
    prefix: &str,
) -> StoreResult<bool> {
    Ok(on!(ex, c => sqlx::query(
        "UPDATE apps SET push_token_hash = $3, push_token_prefix = $4 \
         WHERE tenant_id = $1 AND id = $2 AND app_type = 'push'")
        .bind(tenant.0).bind(id).bind(hash).bind(prefix).execute(&mut *c).await?.rows_affected())
        == 1)
}

/// Turns an app's badge on with `token` (kept when it is on already) or off (`None`).
pub async fn set_badge(
    ex: &mut impl Exec,
    tenant: TenantId,
    id: Uuid,
    token: Option<&str>,
) -> StoreResult<()> {
    on!(ex, c => sqlx::query(
        "UPDATE apps SET badge_token = CASE WHEN $3 IS NULL THEN NULL ELSE COALESCE(badge_token, $3) END \
         WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.0).bind(id).bind(token).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// The app whose badge token is `token` (any tenant: the token is the key).
pub async fn by_badge_token(ex: &mut impl Exec, token: &str) -> StoreResult<Option<App>> {
    let sql = format!("SELECT {COLUMNS} FROM apps WHERE badge_token = $1");
    Ok(
        on!(ex, c => sqlx::query_as::<_, App>(sqlx::AssertSqlSafe(sql))
        .bind(token).fetch_optional(&mut *c).await?),
    )
}

/// An app's mean check latency (ms) since `since`, and how many results it is of.
pub async fn mean_latency(
    ex: &mut impl Exec,
    app_id: Uuid,
    since: OffsetDateTime,
) -> StoreResult<(Option<f64>, i64)> {
    let (mean, n): (Option<f64>, i64) = on!(ex, c => sqlx::query_as(
        "SELECT CAST(AVG(latency_ms) AS DOUBLE PRECISION), COUNT(latency_ms) FROM app_checks \
         WHERE app_id = $1 AND checked_at >= $2 AND latency_ms IS NOT NULL")
        .bind(app_id).bind(since).fetch_one(&mut *c).await?);
    Ok((mean, n))
}

/// Drops an app's red marker (its liveness alert was resolved by hand).
pub async fn clear_alerting(ex: &mut impl Exec, tenant: TenantId, id: Uuid) -> StoreResult<()> {
    on!(ex, c => sqlx::query("UPDATE apps SET alerting = FALSE WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.0).bind(id).execute(&mut *c).await?.rows_affected());
    Ok(())
}
