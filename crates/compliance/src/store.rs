//! The compliance tables: runs and the hosts each still owes, the latest result per host and
//! check, per-run summaries, touched honeypots, and each host's DNA.

use sqlx::types::Json;
use time::OffsetDateTime;
use trusthub_core::compliance::{CheckResult, DnaParts};
use trusthub_store::{Exec, StoreResult, TenantId, on};
use uuid::Uuid;

/// A host's latest result of a check.
#[derive(Debug, Clone)]
pub struct ResultRow {
    /// The host.
    pub agent_id: Uuid,
    /// The check.
    pub check_id: String,
    /// Verdict.
    pub status: String,
    /// What was seen.
    pub evidence: String,
    /// What to do.
    pub remediation: String,
    /// When it ran.
    pub checked_at: OffsetDateTime,
    /// The run it answered (none: the agent's own schedule).
    pub run_id: Option<Uuid>,
}

/// One check's result as the host's document keeps it.
#[derive(serde::Serialize, serde::Deserialize)]
struct Kept<'a> {
    #[serde(borrow)]
    check_id: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    status: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    evidence: std::borrow::Cow<'a, str>,
    /// Left out when it is the check's own text.
    #[serde(default, borrow, skip_serializing_if = "Option::is_none")]
    remediation: Option<std::borrow::Cow<'a, str>>,
}

/// Stores a host's results (the latest run replaces an older one, never a newer) and the
/// run's summary.
pub async fn put_results(
    ex: &mut impl Exec,
    tenant: TenantId,
    agent: Uuid,
    run: Option<Uuid>,
    at: OffsetDateTime,
    results: &[CheckResult],
) -> StoreResult<()> {
    let kept: Vec<Kept<'_>> = results
        .iter()
        .map(|r| Kept {
            check_id: r.check_id.as_str().into(),
            status: r.status.as_str().into(),
            evidence: r.evidence.as_str().into(),
            remediation: match trusthub_core::compliance::check(&r.check_id) {
                Some(c) if c.remediation == r.remediation => None,
                _ => Some(r.remediation.as_str().into()),
            },
        })
        .collect();
    let doc = serde_json::to_string(&kept)
        .map_err(|_| trusthub_store::StoreError::Corrupt("compliance_results.results"))?;
    on!(ex, c => sqlx::query(
        "INSERT INTO compliance_results (tenant_id, agent_id, checked_at, run_id, results) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (agent_id) DO UPDATE SET checked_at = excluded.checked_at, run_id = excluded.run_id, \
         results = excluded.results WHERE compliance_results.checked_at <= excluded.checked_at")
        .bind(tenant.0).bind(agent).bind(at).bind(run).bind(&doc).execute(&mut *c).await?.rows_affected());
    let count = |s: &str| results.iter().filter(|r| r.status == s).count() as i64;
    on!(ex, c => sqlx::query(
        "INSERT INTO compliance_history (tenant_id, agent_id, checked_at, run_id, passed, failed, not_applicable, errors) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (agent_id, checked_at) DO NOTHING")
        .bind(tenant.0).bind(agent).bind(at).bind(run).bind(count("pass")).bind(count("fail"))
        .bind(count("not_applicable")).bind(count("error")).execute(&mut *c).await?.rows_affected());
    if let Some(run) = run {
        on!(ex, c => sqlx::query(
            "UPDATE compliance_run_hosts SET done_at = $1 WHERE run_id = $2 AND agent_id = $3 AND done_at IS NULL")
            .bind(at).bind(run).bind(agent).execute(&mut *c).await?.rows_affected());
    }
    Ok(())
}

#[derive(sqlx::FromRow)]
struct DocRow {
    agent_id: Uuid,
    checked_at: OffsetDateTime,
    run_id: Option<Uuid>,
    results: String,
}

/// The tenant's latest results (one host, or all; one verdict, or all), by host and check.
pub async fn results(
    ex: &mut impl Exec,
    tenant: TenantId,
    agent: Option<Uuid>,
    status: Option<&str>,
) -> StoreResult<Vec<ResultRow>> {
    const SQL: &str = "SELECT agent_id, checked_at, run_id, results FROM compliance_results \
        WHERE tenant_id = $1 AND ($2 IS NULL OR agent_id = $2) ORDER BY agent_id";
    let docs: Vec<DocRow> =
        on!(ex, c => sqlx::query_as(SQL).bind(tenant.0).bind(agent).fetch_all(&mut *c).await?);
    let mut out = Vec::with_capacity(docs.len() * trusthub_core::compliance::CHECKS.len());
    for d in &docs {
        let mut kept: Vec<Kept<'_>> = serde_json::from_str(&d.results)
            .map_err(|_| trusthub_store::StoreError::Corrupt("compliance_results.results"))?;
        kept.sort_by(|a, b| a.check_id.cmp(&b.check_id));
        for k in kept {
            if status.is_some_and(|s| s != k.status) {
                continue;
            }
            let remediation = match k.remediation {
                Some(r) => r.into_owned(),
                None => trusthub_core::compliance::check(&k.check_id)
                    .map(|c| c.remediation.to_owned())
                    .unwrap_or_default(),
            };
            out.push(ResultRow {
                agent_id: d.agent_id,
                check_id: k.check_id.into_owned(),
                status: k.status.into_owned(),
                evidence: k.evidence.into_owned(),
                remediation,
                checked_at: d.checked_at,
                run_id: d.run_id,
            });
        }
    }
    Ok(out)
}

/// One run's summary on one host.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct HistoryRow {
    /// The host.
    pub agent_id: Uuid,
    /// When.
    pub checked_at: OffsetDateTime,
    /// The hub's run, if one asked.
    pub run_id: Option<Uuid>,
    /// Passed checks.
    pub passed: i64,
    /// Failed checks.
    pub failed: i64,
    /// Not applicable.
    pub not_applicable: i64,
    /// Could not run.
    pub errors: i64,
}

/// Run summaries since `since` (one host, or all), oldest first.
pub async fn history(
    ex: &mut impl Exec,
    tenant: TenantId,
    agent: Option<Uuid>,
    since: OffsetDateTime,
) -> StoreResult<Vec<HistoryRow>> {
    const SQL: &str = "SELECT agent_id, checked_at, run_id, passed, failed, not_applicable, errors FROM compliance_history \
        WHERE tenant_id = $1 AND ($2 IS NULL OR agent_id = $2) AND checked_at >= $3 ORDER BY checked_at, agent_id";
    Ok(
        on!(ex, c => sqlx::query_as(SQL).bind(tenant.0).bind(agent).bind(since).fetch_all(&mut *c).await?),
    )
}

/// Records a run and the hosts it asks.
pub async fn insert_run(
    ex: &mut impl Exec,
    tenant: TenantId,
    id: Uuid,
    agent: Option<Uuid>,
    by: &str,
    hosts: &[Uuid],
    now: OffsetDateTime,
) -> StoreResult<()> {
    on!(ex, c => sqlx::query(
        "INSERT INTO compliance_runs (id, tenant_id, agent_id, requested_by, created_at) VALUES ($1, $2, $3, $4, $5)")
        .bind(id).bind(tenant.0).bind(agent).bind(by).bind(now).execute(&mut *c).await?.rows_affected());
    for h in hosts {
        on!(ex, c => sqlx::query("INSERT INTO compliance_run_hosts (run_id, agent_id) VALUES ($1, $2)")
            .bind(id).bind(h).execute(&mut *c).await?.rows_affected());
    }
    Ok(())
}

/// The run each of these hosts owes now, if any: `(agent, run)`, the oldest run first.
pub async fn pending_runs(
    ex: &mut impl Exec,
    hosts: &[(TenantId, Uuid)],
) -> StoreResult<Vec<(Uuid, Uuid)>> {
    let mut out: Vec<(Uuid, Uuid)> = Vec::new();
    for chunk in hosts.chunks(4_000) {
        let rows: Vec<(Uuid, Uuid, Uuid)> = on!(ex, c => {
            let mut qb = sqlx::QueryBuilder::new(
                "SELECT h.agent_id, h.run_id, r.tenant_id FROM compliance_run_hosts h \
                 JOIN compliance_runs r ON r.id = h.run_id WHERE h.done_at IS NULL AND h.agent_id IN (",
            );
            let mut list = qb.separated(", ");
            for (_, a) in chunk {
                list.push_bind(*a);
            }
            qb.push(") ORDER BY h.agent_id, r.created_at");
            qb.build_query_as().fetch_all(&mut *c).await?
        });
        for (agent, run, tenant) in rows {
            let own = chunk.iter().any(|(t, a)| *a == agent && t.0 == tenant);
            if own && out.last().is_none_or(|(last, _)| *last != agent) {
                out.push((agent, run));
            }
        }
    }
    Ok(out)
}

/// Every host owing a run, with the oldest run it owes and that run's tenant: `(agent, run,
/// tenant)`, one row per host (through the index of open rows only).
pub async fn open_runs(ex: &mut impl Exec) -> StoreResult<Vec<(Uuid, Uuid, Uuid)>> {
    let rows: Vec<(Uuid, Uuid, Uuid)> = on!(ex, c => sqlx::query_as(
        "SELECT h.agent_id, h.run_id, r.tenant_id FROM compliance_run_hosts h \
         JOIN compliance_runs r ON r.id = h.run_id WHERE h.done_at IS NULL \
         ORDER BY h.agent_id, r.created_at")
        .fetch_all(&mut *c).await?);
    let mut out: Vec<(Uuid, Uuid, Uuid)> = Vec::with_capacity(rows.len());
    for row in rows {
        if out.last().is_none_or(|last| last.0 != row.0) {
            out.push(row);
        }
    }
    Ok(out)
}

/// A run with how many hosts answered.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RunRow {
    /// Id.
    pub id: Uuid,
    /// The one host asked, or none for all.
    pub agent_id: Option<Uuid>,
    /// `user:<id>` or `token:<id>`.
    pub requested_by: String,
    /// When.
    pub created_at: OffsetDateTime,
    /// Hosts asked.
    pub hosts: i64,
    /// Hosts that answered.
    pub done: i64,
}

/// The tenant's latest runs, newest first.
pub async fn runs(ex: &mut impl Exec, tenant: TenantId, limit: i64) -> StoreResult<Vec<RunRow>> {
    const SQL: &str = "SELECT r.id, r.agent_id, r.requested_by, r.created_at, \
        (SELECT COUNT(*) FROM compliance_run_hosts h WHERE h.run_id = r.id) AS hosts, \
        (SELECT COUNT(*) FROM compliance_run_hosts h WHERE h.run_id = r.id AND h.done_at IS NOT NULL) AS done \
        FROM compliance_runs r WHERE r.tenant_id = $1 ORDER BY r.created_at DESC, r.id DESC LIMIT $2";
    Ok(on!(ex, c => sqlx::query_as(SQL).bind(tenant.0).bind(limit).fetch_all(&mut *c).await?))
}

/// A honeypot touch.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct EventRow {
    /// The host.
    pub agent_id: Uuid,
    /// `file`, `user` or `port`.
    pub kind: String,
    /// Which.
    pub target: String,
    /// When the agent saw it.
    pub triggered_at: OffsetDateTime,
    /// What happened.
    pub detail: String,
}

/// Records a honeypot touch.
pub async fn insert_event(
    ex: &mut impl Exec,
    tenant: TenantId,
    e: &EventRow,
    now: OffsetDateTime,
) -> StoreResult<()> {
    on!(ex, c => sqlx::query(
        "INSERT INTO honeypot_events (id, tenant_id, agent_id, kind, target, triggered_at, detail, received_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)")
        .bind(Uuid::now_v7()).bind(tenant.0).bind(e.agent_id).bind(&e.kind).bind(&e.target).bind(e.triggered_at)
        .bind(&e.detail).bind(now).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// Replaces an agent's reported honeypot states (CONTRACT 30).
pub async fn put_honeypot_states(
    ex: &mut impl Exec,
    tenant: TenantId,
    agent: Uuid,
    states: &[trusthub_core::compliance::HoneypotState],
    now: OffsetDateTime,
) -> StoreResult<()> {
    on!(ex, c => sqlx::query("DELETE FROM honeypot_states WHERE tenant_id = $1 AND agent_id = $2")
        .bind(tenant.0).bind(agent).execute(&mut *c).await?.rows_affected());
    for s in states {
        on!(ex, c => sqlx::query(
            "INSERT INTO honeypot_states (tenant_id, agent_id, kind, target, armed, why, reported_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (agent_id, kind, target) DO NOTHING")
            .bind(tenant.0).bind(agent).bind(&s.kind).bind(&s.target).bind(s.armed).bind(&s.why)
            .bind(now).execute(&mut *c).await?.rows_affected());
    }
    Ok(())
}

/// Every reported honeypot state of the tenant: `(agent, kind, target, armed, why)`.
pub async fn honeypot_states(
    ex: &mut impl Exec,
    tenant: TenantId,
) -> StoreResult<Vec<(Uuid, String, String, bool, Option<String>)>> {
    Ok(on!(ex, c => sqlx::query_as(
        "SELECT agent_id, kind, target, armed, why FROM honeypot_states WHERE tenant_id = $1")
        .bind(tenant.0).fetch_all(&mut *c).await?))
}

/// The latest touch of each honeypot of the tenant.
pub async fn latest_events(ex: &mut impl Exec, tenant: TenantId) -> StoreResult<Vec<EventRow>> {
    const SQL: &str = "SELECT e.agent_id, e.kind, e.target, e.triggered_at, e.detail FROM honeypot_events e \
        WHERE e.tenant_id = $1 AND e.triggered_at = (SELECT MAX(x.triggered_at) FROM honeypot_events x \
        WHERE x.tenant_id = e.tenant_id AND x.agent_id = e.agent_id AND x.kind = e.kind AND x.target = e.target) \
        ORDER BY e.triggered_at DESC";
    Ok(on!(ex, c => sqlx::query_as(SQL).bind(tenant.0).fetch_all(&mut *c).await?))
}

/// A host's DNA as held.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DnaRow {
    /// The host.
    pub agent_id: Uuid,
    /// Its fingerprint.
    pub fingerprint_sha256: String,
    /// Its parts.
    pub parts: Json<DnaParts>,
    /// When it last arrived.
    pub seen_at: OffsetDateTime,
    /// When it last changed.
    pub changed_at: Option<OffsetDateTime>,
    /// The fingerprint before.
    pub previous: Option<String>,
}

/// One host's DNA.
pub async fn dna(ex: &mut impl Exec, tenant: TenantId, agent: Uuid) -> StoreResult<Option<DnaRow>> {
    const SQL: &str = "SELECT agent_id, fingerprint_sha256, parts, seen_at, changed_at, previous FROM host_dna \
        WHERE tenant_id = $1 AND agent_id = $2";
    Ok(on!(ex, c => sqlx::query_as(SQL).bind(tenant.0).bind(agent).fetch_optional(&mut *c).await?))
}

/// Every host's DNA.
pub async fn dnas(ex: &mut impl Exec, tenant: TenantId) -> StoreResult<Vec<DnaRow>> {
    const SQL: &str = "SELECT agent_id, fingerprint_sha256, parts, seen_at, changed_at, previous FROM host_dna \
        WHERE tenant_id = $1 ORDER BY agent_id";
    Ok(on!(ex, c => sqlx::query_as(SQL).bind(tenant.0).fetch_all(&mut *c).await?))
}

/// Writes a host's DNA (insert, or replace keeping what the caller says changed).
pub async fn put_dna(ex: &mut impl Exec, tenant: TenantId, d: &DnaRow) -> StoreResult<()> {
    on!(ex, c => sqlx::query(
        "INSERT INTO host_dna (tenant_id, agent_id, fingerprint_sha256, parts, seen_at, changed_at, previous) \
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (agent_id) DO UPDATE SET fingerprint_sha256 = excluded.fingerprint_sha256, \
         parts = excluded.parts, seen_at = excluded.seen_at, changed_at = excluded.changed_at, previous = excluded.previous")
        .bind(tenant.0).bind(d.agent_id).bind(&d.fingerprint_sha256).bind(&d.parts).bind(d.seen_at)
        .bind(d.changed_at).bind(&d.previous).execute(&mut *c).await?.rows_affected());
    Ok(())
}
