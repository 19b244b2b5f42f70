//! The services behind the routes, the pages and ingest: an agent's report applied in its
//! batch's transaction (results, honeypot alerts, the `dna_changed` anomaly), runs, the
//! listing with the framework mappings, the exports, and the security view.

use crate::frameworks::{self, FRAMEWORKS};
use crate::store::{self, DnaRow, EventRow};
use serde::Serialize;
use serde_json::json;
use std::collections::{HashMap, HashSet};
use time::OffsetDateTime;
use trusthub_alerts::NewAlert;
use trusthub_alerts::alerting::Notifier;
use trusthub_core::alerting::Severity;
use trusthub_core::compliance::{DnaParts, Honeypot};
use trusthub_fleet::ingest::SecurityReport;
use trusthub_identity::auth::Principal;
use trusthub_platform::AppState;
use trusthub_platform::error::{ApiError, ApiResult};
use trusthub_platform::extract::Meta;
use trusthub_platform::ratelimit;
use trusthub_store::{StoreResult, TenantId, Tx};
use utoipa::ToSchema;
use uuid::Uuid;

/// Applies what an agent reported (the fleet's [`SecurityReports`] event, in the batch's
/// transaction): compliance results and the run they answer, a critical alert per touched
/// honeypot (one open alert per honeypot), and the `dna_changed` anomaly when the host's
/// fingerprint is not the one held.
///
/// [`SecurityReports`]: trusthub_fleet::ingest::SecurityReports
pub async fn on_report(tx: &mut Tx, r: &SecurityReport, now: OffsetDateTime) -> StoreResult<()> {
    if let Some(c) = &r.compliance {
        let at = c
            .checked_at
            .to_offset(time::UtcOffset::UTC)
            .replace_nanosecond(0)
            .unwrap_or(c.checked_at);
        store::put_results(&mut *tx, r.tenant, r.agent_id, c.run_id, at, &c.results).await?;
    }
    if let Some(states) = &r.honeypot_states {
        store::put_honeypot_states(&mut *tx, r.tenant, r.agent_id, states, now).await?;
    }
    if !r.honeypot_events.is_empty() {
        let mut notifier = Notifier::default();
        for e in &r.honeypot_events {
            let row = EventRow {
                agent_id: r.agent_id,
                kind: e.kind.clone(),
                target: e.target.clone(),
                triggered_at: e.at.replace_nanosecond(0).unwrap_or(e.at),
                detail: e.detail.clone(),
            };
            store::insert_event(&mut *tx, r.tenant, &row, now).await?;
            let title = format!(
                "Honeypot touched on {}: {} {}",
                r.hostname, e.kind, e.target
            );
            notifier
                .raise(
                    tx,
                    r.tenant,
                    &NewAlert {
                        severity: Severity::Critical.as_str(),
                        severity_rank: Severity::Critical.rank(),
                        category: "security",
                        title: &title,
                        detail: Some(&e.detail),
                        source: trusthub_core::alerting::source::HONEYPOT,
                        fingerprint: &format!("honeypot:{}:{}:{}", r.agent_id, e.kind, e.target),
                        agent_id: Some(r.agent_id),
                        app_id: None,
                        rule_id: None,
                    },
                    now,
                )
                .await?;
        }
    }
    if let Some(d) = &r.dna {
        let held = store::dna(&mut *tx, r.tenant, r.agent_id).await?;
        let mut row = DnaRow {
            agent_id: r.agent_id,
            fingerprint_sha256: d.fingerprint_sha256.clone(),
            parts: sqlx::types::Json(d.parts.clone()),
            seen_at: now,
            changed_at: held.as_ref().and_then(|h| h.changed_at),
            previous: held.as_ref().and_then(|h| h.previous.clone()),
        };
        if let Some(h) = held.filter(|h| h.fingerprint_sha256 != d.fingerprint_sha256) {
            let changed = d.parts.changed_from(&h.parts.0);
            row.changed_at = Some(now);
            row.previous = Some(h.fingerprint_sha256.clone());
            trusthub_certs::anomalies::record_in(
                tx,
                trusthub_certs::AgentRef {
                    id: r.agent_id,
                    tenant_id: r.tenant.0,
                    hostname: &r.hostname,
                },
                "dna_changed",
                &format!(
                    "The host behind this agent's identity changed: {} differ",
                    changed.join(", ")
                ),
                json!({"previous": h.fingerprint_sha256, "current": d.fingerprint_sha256, "changed": changed,
                       "previous_parts": h.parts.0, "current_parts": d.parts}),
                false,
                now,
            )
            .await?;
        }
        store::put_dna(&mut *tx, r.tenant, &row).await?;
    }
    Ok(())
}

/// How long a hub answers ingest from the hosts owing a run as it last read them. A run asked
/// on this hub is seen at once ([`OpenRuns::forget`]); one asked on another hub of a cluster
/// within this long (its hosts' next pushes are further apart).
pub const OPEN_RUNS_KEPT: std::time::Duration = std::time::Duration::from_secs(5);

/// The hosts owing a compliance run, as this hub last read them: every ingest group's answer
/// comes from here (issue 63: it was a read per group), re-read when older than
/// [`OPEN_RUNS_KEPT`] or forgotten. A host whose batch carried a report is read afresh (its
/// report may have answered its run).
#[derive(Debug, Default)]
pub struct OpenRuns(std::sync::Mutex<Kept>);

#[derive(Debug, Default)]
struct Kept {
    read_at: Option<std::time::Instant>,
    /// Bumped by every `forget`: a read that began before one is not kept.
    generation: u64,
    /// Agent → (tenant, the oldest run it owes).
    runs: HashMap<Uuid, (Uuid, Uuid)>,
}

impl OpenRuns {
    /// Reads afresh at the next group (a run was asked on this hub).
    pub fn forget(&self) {
        if let Ok(mut k) = self.0.lock() {
            k.generation += 1;
            k.read_at = None;
        }
    }

    /// The runs owed, when what is kept is fresh enough; else the generation to read at.
    fn fresh(&self, hosts: &[(TenantId, Uuid, bool)]) -> Result<Vec<(Uuid, Uuid)>, u64> {
        let k = self.0.lock().map_err(|_| 0u64)?;
        if k.read_at.is_none_or(|at| at.elapsed() >= OPEN_RUNS_KEPT) {
            return Err(k.generation);
        }
        Ok(owed(&k.runs, hosts))
    }
}

/// Of `hosts`, those owing a run in `runs` (of their own tenant).
fn owed(runs: &HashMap<Uuid, (Uuid, Uuid)>, hosts: &[(TenantId, Uuid, bool)]) -> Vec<(Uuid, Uuid)> {
    hosts
        .iter()
        .filter_map(|(t, a, _)| match runs.get(a) {
            Some((tenant, run)) if *tenant == t.0 => Some((*a, *run)),
            _ => None,
        })
        .collect()
}

/// The run each of these hosts owes now, if any (the fleet's `ComplianceRuns` lookup, called
/// after each ingest group's commit and answered with each batch), from `kept` (an
/// [`OpenRuns`]); hosts that reported in the group are read afresh.
pub async fn pending_runs(
    kept: &(dyn std::any::Any + Send + Sync),
    c: &mut trusthub_store::Conn,
    hosts: &[(TenantId, Uuid, bool)],
) -> StoreResult<Vec<(Uuid, Uuid)>> {
    let Some(open) = kept.downcast_ref::<OpenRuns>() else {
        let all: Vec<(TenantId, Uuid)> = hosts.iter().map(|h| (h.0, h.1)).collect();
        return store::pending_runs(c, &all).await;
    };
    let reported: Vec<(TenantId, Uuid)> =
        hosts.iter().filter(|h| h.2).map(|h| (h.0, h.1)).collect();
    let mut out = match open.fresh(hosts) {
        Ok(kept) => kept,
        Err(generation) => {
            let read: HashMap<Uuid, (Uuid, Uuid)> = store::open_runs(c)
                .await?
                .into_iter()
                .map(|(agent, run, tenant)| (agent, (tenant, run)))
                .collect();
            let out = owed(&read, hosts);
            if let Ok(mut k) = open.0.lock()
                && k.generation == generation
            {
                k.runs = read;
                k.read_at = Some(std::time::Instant::now());
            }
            out
        }
    };
    if !reported.is_empty() {
        // What they owe now, read after their reports were stored; kept for the next groups.
        let now: HashMap<Uuid, Uuid> = store::pending_runs(c, &reported)
            .await?
            .into_iter()
            .collect();
        out.retain(|(a, _)| !reported.iter().any(|r| r.1 == *a));
        if let Ok(mut k) = open.0.lock() {
            for (t, a) in &reported {
                match now.get(a) {
                    Some(run) => k.runs.insert(*a, (t.0, *run)),
                    None => k.runs.remove(a),
                };
            }
        }
        out.extend(now);
    }
    Ok(out)
}

/// A run accepted.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunAccepted {
    /// The run: hosts answer it with their next batch.
    pub run_id: Uuid,
    /// The hosts asked.
    pub agents: Vec<Uuid>,
}

/// Asks one host (or every host of the tenant) to run the checks now: admin, 10 accepted
/// runs per hour per user, audited.
pub async fn run(
    state: &AppState,
    meta: &Meta,
    p: &Principal,
    agent: Option<Uuid>,
) -> ApiResult<RunAccepted> {
    let tenant = p.tenant();
    let hosts: Vec<Uuid> = {
        let mut c = state.db.conn().await?;
        match agent {
            Some(id) => vec![
                trusthub_fleet::agent(&mut c, tenant, id)
                    .await?
                    .ok_or(ApiError::NotFound("agent"))?
                    .id,
            ],
            None => trusthub_fleet::agents(&mut c, tenant)
                .await?
                .into_iter()
                .map(|a| a.id)
                .collect(),
        }
    };
    if hosts.is_empty() {
        return Err(ApiError::invalid(
            "agent_id",
            "the tenant has no agents to run the checks on",
        ));
    }
    let now = trusthub_platform::state::now();
    state
        .limiter
        .hit(
            ratelimit::COMPLIANCE_RUN,
            &p.user.id.to_string(),
            now.unix_timestamp(),
        )
        .await?;
    let id = Uuid::now_v7();
    let mut tx = state.db.begin().await?;
    store::insert_run(&mut tx, tenant, id, agent, &p.actor(), &hosts, now).await?;
    meta.record(
        &mut tx,
        p,
        trusthub_core::audit::COMPLIANCE_RUN_REQUESTED,
        format!("compliance_run:{id}"),
        json!({"agent_id": agent, "hosts": hosts.len()}),
    )
    .await?;
    tx.commit().await?;
    // The next ingest answers read the hosts owing a run afresh.
    state.part::<std::sync::Arc<OpenRuns>>().forget();
    // Each host hears of it now, over its WebSocket (CONTRACT 33: answered within 10 s).
    for host in &hosts {
        trusthub_fleet::ask_to_push(state, *host);
    }
    Ok(RunAccepted {
        run_id: id,
        agents: hosts,
    })
}

/// A result as served: the latest of a check on a host, in one framework.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ResultView {
    /// The check (CONTRACT 25's id).
    pub check_id: String,
    /// What it asks.
    pub title: String,
    /// `cis-debian`, `iso27001`, `soc2` or `nis2`.
    pub framework: String,
    /// The framework's controls the check maps to (may be empty: CIS Debian 12 has no SSH
    /// password-authentication recommendation).
    pub control_ids: Vec<String>,
    /// The host.
    pub agent_id: Uuid,
    /// Its name.
    pub hostname: String,
    /// `pass`, `fail`, `not_applicable` or `error`.
    pub status: String,
    /// What the agent saw.
    pub evidence: String,
    /// What to do about a failure.
    pub remediation: String,
    /// When the check ran.
    #[serde(with = "time::serde::rfc3339")]
    pub checked_at: OffsetDateTime,
    /// The run it answered (null: the agent's own schedule).
    pub run_id: Option<Uuid>,
}

/// The filters of the listing and the exports.
#[derive(Debug, Default, Clone)]
pub struct Filter {
    /// One framework (else all four).
    pub framework: Option<String>,
    /// One host.
    pub agent_id: Option<Uuid>,
    /// One verdict.
    pub status: Option<String>,
}

impl Filter {
    /// Refuses unknown frameworks and verdicts.
    pub fn check(&self) -> ApiResult<()> {
        if let Some(f) = &self.framework
            && !FRAMEWORKS.contains(&f.as_str())
        {
            return Err(ApiError::invalid(
                "framework",
                "must be cis-debian, iso27001, soc2 or nis2",
            ));
        }
        if let Some(s) = &self.status
            && !trusthub_core::compliance::STATUSES.contains(&s.as_str())
        {
            return Err(ApiError::invalid(
                "status",
                "must be pass, fail, not_applicable or error",
            ));
        }
        Ok(())
    }

    fn frameworks(&self) -> Vec<&'static str> {
        FRAMEWORKS
            .into_iter()
            .filter(|f| self.framework.as_deref().is_none_or(|x| x == *f))
            .collect()
    }
}

/// The latest results with host names (one host's may be asked: another tenant's is 404).
pub async fn results(
    state: &AppState,
    tenant: TenantId,
    f: &Filter,
) -> ApiResult<Vec<(frameworks::Result, Option<Uuid>)>> {
    f.check()?;
    let mut c = state.db.conn().await?;
    let names = trusthub_fleet::host_names(state, tenant).await?;
    if let Some(a) = f.agent_id
        && !names.contains_key(&a)
    {
        return Err(ApiError::NotFound("agent"));
    }
    let rows = store::results(&mut c, tenant, f.agent_id, f.status.as_deref()).await?;
    let mut titles: HashMap<String, String> = HashMap::new();
    Ok(rows
        .into_iter()
        .filter_map(|r| {
            let hostname = names.get(&r.agent_id)?.clone();
            let title = titles
                .entry(r.check_id.clone())
                .or_insert_with(|| frameworks::title(&r.check_id))
                .clone();
            Some((
                frameworks::Result {
                    agent_id: r.agent_id,
                    hostname,
                    check_id: r.check_id,
                    title,
                    status: r.status,
                    evidence: r.evidence,
                    remediation: r.remediation,
                    checked_at: r.checked_at,
                },
                r.run_id,
            ))
        })
        .collect())
}

/// `GET /compliance`: the latest result per host, check and framework.
pub async fn list(state: &AppState, tenant: TenantId, f: &Filter) -> ApiResult<Vec<ResultView>> {
    let rows = results(state, tenant, f).await?;
    let mut out = Vec::with_capacity(rows.len() * f.frameworks().len());
    for fw in f.frameworks() {
        for (r, run) in &rows {
            out.push(ResultView {
                check_id: r.check_id.clone(),
                title: r.title.clone(),
                framework: fw.to_owned(),
                control_ids: frameworks::controls(&r.check_id, fw)
                    .iter()
                    .map(|c| (*c).to_owned())
                    .collect(),
                agent_id: r.agent_id,
                hostname: r.hostname.clone(),
                status: r.status.clone(),
                evidence: r.evidence.clone(),
                remediation: r.remediation.clone(),
                checked_at: r.checked_at,
                run_id: *run,
            });
        }
    }
    Ok(out)
}

/// An export, ready to send.
#[derive(Debug)]
pub struct Export {
    /// Its media type.
    pub content_type: &'static str,
    /// The file name to save it as.
    pub filename: String,
    /// The bytes.
    pub body: String,
}

/// `GET /compliance/export/:tool`.
pub async fn export(
    state: &AppState,
    tenant: TenantId,
    tool: &str,
    f: &Filter,
    resource_id: Option<&str>,
) -> ApiResult<Export> {
    if !frameworks::TOOLS.contains(&tool) {
        return Err(ApiError::NotFound("export tool"));
    }
    if resource_id.is_some() && tool != "vanta" {
        return Err(ApiError::invalid(
            "resource_id",
            "is for the vanta export only",
        ));
    }
    if let Some(r) = resource_id
        && (r.is_empty() || r.chars().count() > 128 || r.chars().any(char::is_control))
    {
        return Err(ApiError::invalid(
            "resource_id",
            "must be 1 to 128 printable characters",
        ));
    }
    let rows: Vec<frameworks::Result> = results(state, tenant, f)
        .await?
        .into_iter()
        .map(|(r, _)| r)
        .collect();
    let fws = f.frameworks();
    let date = trusthub_platform::state::now().date();
    Ok(match tool {
        "generic" => Export {
            content_type: "application/json",
            filename: format!("trusthub-oscal-assessment-results-{date}.json"),
            body: frameworks::oscal(&rows, &fws, tenant.0, trusthub_platform::state::now())
                .to_string(),
        },
        "vanta" => Export {
            content_type: "application/json",
            filename: format!("trusthub-vanta-custom-resources-{date}.json"),
            body: frameworks::vanta(
                &rows,
                resource_id.unwrap_or("trusthub-host-compliance"),
                &state.public_url,
            )
            .to_string(),
        },
        other => Export {
            content_type: "text/csv; charset=utf-8",
            filename: format!("trusthub-{other}-compliance-{date}.csv"),
            body: frameworks::csv(&rows, &fws),
        },
    })
}

/// A run as listed.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunView {
    /// Id.
    pub id: Uuid,
    /// The one host asked (null: all).
    pub agent_id: Option<Uuid>,
    /// Who asked (`user:<id>`, `token:<id>` or `system:…`).
    pub requested_by: String,
    /// Who asked, by name (the user's e-mail, the token's name), when known.
    pub requested_by_name: Option<String>,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Hosts asked.
    pub hosts: i64,
    /// Hosts that answered.
    pub done: i64,
}

/// The tenant's 50 latest runs.
pub async fn runs(state: &AppState, tenant: TenantId) -> ApiResult<Vec<RunView>> {
    let rows = {
        let mut c = state.db.conn().await?;
        store::runs(&mut c, tenant, 50).await?
    };
    let names = trusthub_platform::names::resolve(
        state,
        tenant,
        rows.iter().map(|r| r.requested_by.as_str()),
    )
    .await;
    Ok(rows
        .into_iter()
        .map(|r| RunView {
            id: r.id,
            agent_id: r.agent_id,
            requested_by_name: names.get(&r.requested_by).map(|n| n.name.clone()),
            requested_by: r.requested_by,
            created_at: r.created_at,
            hosts: r.hosts,
            done: r.done,
        })
        .collect())
}

/// A run's summary on a host, over time.
pub use store::HistoryRow;

/// Run summaries of the last `days` days (one host or all).
pub async fn history(
    state: &AppState,
    tenant: TenantId,
    agent: Option<Uuid>,
    days: i64,
) -> ApiResult<Vec<HistoryRow>> {
    let mut c = state.db.conn().await?;
    let since = trusthub_platform::state::now() - time::Duration::days(days);
    Ok(store::history(&mut c, tenant, agent, since).await?)
}

/// A honeypot and its latest touch.
#[derive(Debug, Serialize, ToSchema)]
pub struct HoneypotView {
    /// The host watching it.
    pub agent_id: Uuid,
    /// `file`, `user` or `port`.
    pub kind: String,
    /// The path, user name or port.
    pub target: String,
    /// When it was last touched (absent: never).
    #[serde(
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub triggered_at: Option<OffsetDateTime>,
    /// What happened then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// `armed`, `not_armed` (the host cannot watch it: a port in use, a file it cannot
    /// watch, no auth log; `why` says) or `unknown` (the host has not said yet).
    pub state: String,
    /// Why it is not armed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// A host's DNA.
#[derive(Debug, Serialize, ToSchema)]
pub struct DnaView {
    /// The host.
    pub agent_id: Uuid,
    /// SHA-256 of the canonical JSON of the stable parts.
    pub fingerprint_sha256: String,
    /// When it last changed (absent: never since first seen).
    #[serde(
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub changed_at: Option<OffsetDateTime>,
    /// The fingerprint before that change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous: Option<String>,
    /// `{machine_id, boot_id, kernel, os, ssh_host_keys[], agent_sha256}`.
    #[schema(value_type = Object)]
    pub parts: DnaParts,
}

/// A host not heard from for three push intervals.
#[derive(Debug, Serialize, ToSchema)]
pub struct SilentView {
    /// The host.
    pub agent_id: Uuid,
    /// Its name.
    pub hostname: String,
    /// When it was last heard from (null: never since it registered).
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_seen_at: Option<OffsetDateTime>,
    /// Its push interval.
    pub expected_every_secs: i64,
}

/// `GET /security`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SecurityView {
    /// Every governed honeypot with its latest touch, touched ones first.
    pub honeypots: Vec<HoneypotView>,
    /// Every host's DNA.
    pub dna: Vec<DnaView>,
    /// Hosts not heard from for three push intervals.
    pub silent_agents: Vec<SilentView>,
}

/// The security view.
pub async fn security(state: &AppState, tenant: TenantId) -> ApiResult<SecurityView> {
    let now = trusthub_platform::state::now();
    let mut c = state.db.conn().await?;
    let agents = trusthub_fleet::agents(&mut c, tenant).await?;
    let events = store::latest_events(&mut c, tenant).await?;
    let states: HashMap<(Uuid, String, String), (bool, Option<String>)> =
        store::honeypot_states(&mut c, tenant)
            .await?
            .into_iter()
            .map(|(a, k, t, armed, why)| ((a, k, t), (armed, why)))
            .collect();
    let state_of = |agent: Uuid, kind: &str, target: &str| -> (String, Option<String>) {
        match states.get(&(agent, kind.to_owned(), target.to_owned())) {
            Some((true, _)) => ("armed".into(), None),
            Some((false, why)) => ("not_armed".into(), why.clone()),
            None => ("unknown".into(), None),
        }
    };
    let mut latest: HashMap<(Uuid, &str, &str), &EventRow> = HashMap::new();
    for e in &events {
        latest.entry((e.agent_id, &e.kind, &e.target)).or_insert(e);
    }
    let mut honeypots = Vec::new();
    let mut governed: HashSet<(Uuid, &str, &str)> = HashSet::new();
    for a in &agents {
        for Honeypot { kind, target } in &a.honeypots.0 {
            governed.insert((a.id, kind, target));
            let e = latest.get(&(a.id, kind.as_str(), target.as_str()));
            let (state, why) = state_of(a.id, kind, target);
            honeypots.push(HoneypotView {
                agent_id: a.id,
                kind: kind.clone(),
                target: target.clone(),
                triggered_at: e.map(|e| e.triggered_at),
                detail: e.map(|e| e.detail.clone()),
                state,
                why,
            });
        }
    }
    // Touches of honeypots governance no longer lists stay visible.
    for e in &events {
        if !governed.contains(&(e.agent_id, e.kind.as_str(), e.target.as_str()))
            && agents.iter().any(|a| a.id == e.agent_id)
            && latest
                .get(&(e.agent_id, e.kind.as_str(), e.target.as_str()))
                .is_some_and(|l| std::ptr::eq(*l, e))
        {
            honeypots.push(HoneypotView {
                agent_id: e.agent_id,
                kind: e.kind.clone(),
                target: e.target.clone(),
                triggered_at: Some(e.triggered_at),
                detail: Some(e.detail.clone()),
                // No longer governed: not watched.
                state: "unknown".into(),
                why: None,
            });
        }
    }
    honeypots.sort_by_key(|h| std::cmp::Reverse(h.triggered_at));
    let dna = store::dnas(&mut c, tenant)
        .await?
        .into_iter()
        .map(|d| DnaView {
            agent_id: d.agent_id,
            fingerprint_sha256: d.fingerprint_sha256,
            changed_at: d.changed_at,
            previous: d.previous,
            parts: d.parts.0,
        })
        .collect();
    let silent_agents = agents
        .iter()
        .filter(|a| {
            let quiet = time::Duration::seconds(3 * a.ingest_interval_secs);
            now - a.last_seen_at.unwrap_or(a.created_at) > quiet
        })
        .map(|a| SilentView {
            agent_id: a.id,
            hostname: a.hostname.clone(),
            last_seen_at: a.last_seen_at,
            expected_every_secs: a.ingest_interval_secs,
        })
        .collect();
    Ok(SecurityView {
        honeypots,
        dna,
        silent_agents,
    })
}
