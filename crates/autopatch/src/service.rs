//! The auto-patch services (CONTRACT 19), called by the API routes, the dashboard and the
//! worker alike: settings with their TOTP rule, a host's run (plan, skips, dispatch), the
//! results the agents send back, and the attestation chains.

use crate::rules::{self, Category, Change, Plan, Scope};
use crate::store;
use serde::Serialize;
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use time::OffsetDateTime;
use trusthub_core::severity::Severity;
use trusthub_fleet::actions::{ActionRequest, LogEntryView, Prepared, Requester, prepare};
use trusthub_fleet::agent_ws::ActionResult;
use trusthub_identity::auth::purpose::AgentAutoPatch;
use trusthub_identity::auth::{Admin, TotpOffer, TotpProof, Viewer};
use trusthub_platform::AppState;
use trusthub_platform::error::{ApiError, ApiResult};
use trusthub_platform::extract::Meta;
use trusthub_store::{StoreResult, TenantId, Tx};
use utoipa::ToSchema;
use uuid::Uuid;

/// Who the audit log and the actions name as the sender of auto-patch actions.
pub const ACTOR: &str = "system:auto_patch";
/// The attestation kinds (SPEC 6.5).
pub mod kind {
    /// A flag or the minimum severity changed.
    pub const FLAG_SET: &str = "remediation.auto_flag_set";
    /// An auto-update-all request, per host: the head of the chain its proposals link to
    /// (`flag_set_seq`), as a flag change heads the worker's.
    pub const UPDATE_ALL: &str = "remediation.auto_update_all";
    /// A package was proposed (an action sent).
    pub const PROPOSED: &str = "remediation.auto_proposed";
    /// The host applied it.
    pub const APPLIED: &str = "remediation.auto_applied";
    /// The host failed or rolled it back.
    pub const ROLLED_BACK: &str = "remediation.auto_rolled_back";
    /// A finding was not patched, and why.
    pub const SKIPPED: &str = "remediation.skipped";
}

/// A host's auto-patch settings (SPEC 2.8).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SettingsView {
    /// The host.
    pub agent_id: Uuid,
    /// Distribution packages are patched.
    pub os_packages: bool,
    /// Application dependencies are patched.
    pub app_deps: bool,
    /// `CRITICAL` or `HIGH`: the lowest severity patched.
    pub min_severity: String,
    /// Who last turned a flag on.
    pub enabled_by: Option<Uuid>,
    /// When.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub enabled_at: Option<OffsetDateTime>,
    /// The worker's last run for the host (also when it had nothing to patch).
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_run_at: Option<OffsetDateTime>,
}

impl From<store::Settings> for SettingsView {
    fn from(s: store::Settings) -> Self {
        SettingsView {
            agent_id: s.agent_id,
            os_packages: s.os_packages,
            app_deps: s.app_deps,
            min_severity: s.min_severity,
            enabled_by: s.enabled_by,
            enabled_at: s.enabled_at,
            last_run_at: s.last_run_at,
        }
    }
}

/// A change of a host's settings; absent fields stay.
#[derive(Debug, Clone, Default, serde::Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SettingsPatch {
    /// Patch distribution packages (apt, dnf, apk, zypper). Turning it on needs TOTP.
    pub os_packages: Option<bool>,
    /// Patch application dependencies (npm, pip, composer, bundler, go). Turning it on needs
    /// TOTP.
    pub app_deps: Option<bool>,
    /// `CRITICAL` or `HIGH`. Widening it (CRITICAL to HIGH) while a flag is on needs TOTP.
    #[schema(pattern = "^(CRITICAL|HIGH)$")]
    pub min_severity: Option<String>,
}

/// One package of an attempt.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PackageChange {
    /// The package installed (the binary package for OS packages).
    pub name: String,
    /// Its version before.
    pub from: String,
    /// The target version.
    pub to: String,
    /// The advisories it fixes.
    pub vuln_ids: Vec<String>,
    /// The source package, when it differs from `name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// An auto-patch attempt: one signed action (CONTRACT 19).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AttemptView {
    /// The action's nonce (`GET /actions/{jti}` has the host's output).
    pub eat_nonce: String,
    /// `os_packages` or `app_deps`.
    pub category: String,
    /// The package manager (`apt`, `npm`, ...).
    pub manager: String,
    /// The lockfile's folder (dependencies only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_path: Option<String>,
    /// The OSV ecosystem (dependencies only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ecosystem: Option<String>,
    /// What it installs.
    pub packages: Vec<PackageChange>,
    /// `proposed` (sent, no answer yet), `applied`, `rolled_back` (failed or restored) or
    /// `expired` (no answer within the token's lifetime).
    pub status: String,
    /// The host's exit code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// The host's note (`rolled back: <reason>`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Sent.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Answered.
    #[serde(
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub finished_at: Option<OffsetDateTime>,
}

impl AttemptView {
    fn of(a: store::Attempt, now: OffsetDateTime) -> AttemptView {
        let packages: Vec<Change> = serde_json::from_str(&a.packages).unwrap_or_default();
        let deps = a.category == Category::AppDeps.as_str();
        AttemptView {
            status: if a.status == "proposed" && a.expires_at <= now {
                "expired".into()
            } else {
                a.status
            },
            eat_nonce: a.eat_nonce,
            category: a.category,
            manager: a.manager,
            project_path: deps.then_some(a.project_path),
            ecosystem: deps.then_some(a.ecosystem),
            packages: packages
                .into_iter()
                .map(|c| PackageChange {
                    name: c.name,
                    from: c.from,
                    to: c.to,
                    vuln_ids: c.vuln_ids,
                    source: c.source,
                })
                .collect(),
            exit_code: a.exit_code,
            note: a.note,
            created_at: a.created_at,
            finished_at: a.finished_at,
        }
    }
}

async fn host(state: &AppState, tenant: TenantId, agent: Uuid) -> ApiResult<()> {
    let mut c = state.db.conn().await?;
    trusthub_fleet::agent(&mut c, tenant, agent)
        .await?
        .ok_or(ApiError::NotFound("agent"))?;
    Ok(())
}

async fn current(state: &AppState, tenant: TenantId, agent: Uuid) -> ApiResult<store::Settings> {
    host(state, tenant, agent).await?;
    let mut c = state.db.conn().await?;
    Ok(store::settings(&mut c, tenant, agent)
        .await?
        .unwrap_or_else(|| store::Settings::default_for(tenant, agent)))
}

/// A host's settings (viewer).
pub async fn get_settings(state: &AppState, by: &Viewer, agent: Uuid) -> ApiResult<SettingsView> {
    current(state, by.0.tenant(), agent).await.map(Into::into)
}

/// Changes a host's settings (admin). Turning a flag on, or widening the minimum severity
/// while a flag is on, needs TOTP purpose `agent_auto_patch`; turning off does not. Each
/// change is a `remediation.auto_flag_set` attestation and an audit row.
pub async fn patch_settings(
    state: &AppState,
    meta: &Meta,
    by: &Admin,
    offer: &TotpOffer,
    agent: Uuid,
    req: SettingsPatch,
) -> ApiResult<SettingsView> {
    let p = &by.0;
    p.may_change()?;
    let min_severity = match req.min_severity.as_deref() {
        None => None,
        Some(s @ ("CRITICAL" | "HIGH")) => Some(s.to_owned()),
        Some(_) => {
            return Err(ApiError::invalid(
                "min_severity",
                "must be CRITICAL or HIGH",
            ));
        }
    };
    let before = current(state, p.tenant(), agent).await?;
    let mut after = before.clone();
    if let Some(v) = req.os_packages {
        after.os_packages = v;
    }
    if let Some(v) = req.app_deps {
        after.app_deps = v;
    }
    if let Some(v) = min_severity {
        after.min_severity = v;
    }
    let turned_on =
        (after.os_packages && !before.os_packages) || (after.app_deps && !before.app_deps);
    let widened = (after.os_packages || after.app_deps)
        && before.min_severity == "CRITICAL"
        && after.min_severity == "HIGH";
    if turned_on || widened {
        TotpProof::<AgentAutoPatch>::from_offer(state, meta, p.clone(), offer).await?;
    }
    let changed = (after.os_packages, after.app_deps, &after.min_severity)
        != (before.os_packages, before.app_deps, &before.min_severity);
    if !changed {
        return Ok(before.into());
    }
    let now = trusthub_platform::state::now();
    let mut tx = state.db.begin().await?;
    let entry = trusthub_fleet::append_log(
        &mut tx,
        p.tenant(),
        kind::FLAG_SET,
        &agent.to_string(),
        &json!({"os_packages": after.os_packages, "app_deps": after.app_deps,
            "min_severity": after.min_severity, "set_by": p.user.id, "turned_on": turned_on}),
        now,
    )
    .await?;
    if turned_on {
        after.enabled_by = Some(p.user.id);
        after.enabled_at = Some(now);
        after.flag_seq = Some(entry.seq);
    }
    store::put(&mut tx, &after).await?;
    meta.record(
        &mut tx,
        p,
        trusthub_core::audit::AUTO_PATCH_SETTINGS_CHANGED,
        format!("agent:{agent}"),
        json!({"os_packages": after.os_packages, "app_deps": after.app_deps,
            "min_severity": after.min_severity, "turned_on": turned_on}),
    )
    .await?;
    tx.commit().await?;
    Ok(after.into())
}

/// A host's attempts, newest first (viewer).
pub async fn runs(
    state: &AppState,
    by: &Viewer,
    agent: Uuid,
    limit: i64,
) -> ApiResult<Vec<AttemptView>> {
    host(state, by.0.tenant(), agent).await?;
    let mut c = state.db.conn().await?;
    let now = trusthub_platform::state::now();
    Ok(store::attempts(&mut c, by.0.tenant(), agent, limit)
        .await?
        .into_iter()
        .map(|a| AttemptView::of(a, now))
        .collect())
}

/// Runs one cycle for a host now (admin, TOTP `agent_auto_patch`): rolled-back targets are
/// tried again. The attempts it dispatched.
pub async fn run_now(
    state: &AppState,
    meta: &Meta,
    proof: &TotpProof<AgentAutoPatch>,
    agent: Uuid,
) -> ApiResult<Vec<AttemptView>> {
    let p = &proof.principal;
    trusthub_identity::auth::Admin::of(p)?;
    let settings = current(state, p.tenant(), agent).await?;
    if !settings.os_packages && !settings.app_deps {
        return Err(ApiError::Conflict(
            "auto-patch is off for this host: turn on os_packages or app_deps first".into(),
        ));
    }
    {
        let mut tx = state.db.begin().await?;
        meta.record(
            &mut tx,
            p,
            trusthub_core::audit::AUTO_PATCH_RUN_REQUESTED,
            format!("agent:{agent}"),
            json!({}),
        )
        .await?;
        tx.commit().await?;
    }
    let now = trusthub_platform::state::now();
    let read = {
        let mut c = state.db.conn().await?;
        Read {
            findings: trusthub_vulns::patching::unfixed_findings(&mut c, p.tenant(), agent, now)
                .await?,
            blocked: store::blocked(&mut c, agent, now, true).await?,
        }
    };
    let sent = run_host(state, &settings, now, read).await?;
    Ok(sent.into_iter().map(|a| AttemptView::of(a, now)).collect())
}

/// The worker's cycle at `now`: every host with a flag on whose last run is at least
/// `TRUSTHUB_AUTOPATCH_MIN_GAP_SECS` old. Findings and past attempts are read for all of them
/// at once, before any host is written. How many hosts ran.
pub async fn cycle(state: &AppState, now: OffsetDateTime) -> StoreResult<usize> {
    let gap =
        time::Duration::seconds(crate::settings::of(&state.settings).autopatch_min_gap_secs as i64);
    let (due, mut findings, mut blocked) = {
        let mut c = state.db.conn().await?;
        let due: Vec<store::Settings> = store::enabled(&mut c)
            .await?
            .into_iter()
            .filter(|s| s.last_run_at.is_none_or(|t| t + gap <= now))
            .collect();
        let ids: Vec<Uuid> = due.iter().map(|s| s.agent_id).collect();
        let findings = trusthub_vulns::patching::unfixed_findings_of(&mut c, &ids, now).await?;
        let blocked = store::blocked_all(&mut c, now).await?;
        (due, findings, blocked)
    };
    let mut ran = 0;
    for s in due {
        let read = Read {
            findings: findings.remove(&s.agent_id).unwrap_or_default(),
            blocked: blocked.remove(&s.agent_id).unwrap_or_default(),
        };
        match run_host(state, &s, now, read).await {
            Ok(_) => ran += 1,
            Err(e) => {
                tracing::warn!(agent = %s.agent_id, error = %e, "auto-patch run failed; the next cycle tries again")
            }
        }
    }
    Ok(ran)
}

/// What a host's run plans from.
struct Read {
    findings: Vec<trusthub_vulns::patching::HostFinding>,
    blocked: std::collections::HashSet<String>,
}

fn scope(s: &store::Settings) -> Scope {
    Scope {
        os_packages: s.os_packages,
        app_deps: s.app_deps,
        min_rank: Severity::parse(&s.min_severity)
            .unwrap_or(Severity::High)
            .rank(),
    }
}

/// One host's run: its plan, the skips recorded (once each), the actions sent while the
/// host is reachable, and `last_run_at`.
async fn run_host(
    state: &AppState,
    s: &store::Settings,
    now: OffsetDateTime,
    read: Read,
) -> ApiResult<Vec<store::Attempt>> {
    let tenant = TenantId(s.tenant_id);
    let agent = s.agent_id;
    let Read { findings, blocked } = read;
    let Plan { dispatch, skipped } = rules::plan(&findings, scope(s), &blocked);
    let origin = Origin {
        who: Requester::Hub(tenant, ACTOR),
        by: s.enabled_by.map(|u| u.to_string()),
        at: s.enabled_at,
        seq: s.flag_seq,
        trigger: "auto_patch",
    };
    let book = Bookkeeping {
        skipped: &skipped,
        ran: true,
    };
    send(state, tenant, agent, dispatch, book, &origin, now).await
}

/// What a run writes whether or not it sends anything: its skips (once each) and the
/// host's `last_run_at`; in the same transaction as the actions when there are some.
pub(crate) struct Bookkeeping<'a> {
    /// The skips to record.
    pub skipped: &'a [rules::Skip],
    /// Mark the host's run (the worker and `/run`; not an auto-update-all).
    pub ran: bool,
}

impl Bookkeeping<'_> {
    async fn write(
        &self,
        tx: &mut Tx,
        tenant: TenantId,
        agent: Uuid,
        now: OffsetDateTime,
    ) -> StoreResult<()> {
        for skip in self.skipped {
            record_skip(&mut *tx, tenant, agent, skip, now).await?;
        }
        if self.ran {
            store::ran(&mut *tx, agent, now).await?;
        }
        Ok(())
    }
}

/// What authorised a dispatch: the host's flag (the worker, `/run`) or an admin's
/// auto-update-all request; the proposals link to it.
pub(crate) struct Origin<'a> {
    /// Who signs the actions.
    pub who: Requester<'a>,
    /// Who turned the flag on, or asked.
    pub by: Option<String>,
    /// When.
    pub at: Option<OffsetDateTime>,
    /// The transparency entry the proposals link to (`flag_set_seq`).
    pub seq: Option<i64>,
    /// `auto_patch` or `auto_update_all`.
    pub trigger: &'static str,
}

/// Records and sends `dispatch` to one host while it is reachable: attempts, their
/// attestations and alerts, and the signed actions in one transaction, sent once it commits.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn send(
    state: &AppState,
    tenant: TenantId,
    agent: Uuid,
    dispatch: Vec<rules::Dispatch>,
    book: Bookkeeping<'_>,
    origin: &Origin<'_>,
    now: OffsetDateTime,
) -> ApiResult<Vec<store::Attempt>> {
    if dispatch.is_empty() || !trusthub_fleet::actions::reachable(state, agent).await? {
        if book.ran || !book.skipped.is_empty() {
            let mut tx = state.db.begin().await?;
            book.write(&mut tx, tenant, agent, now).await?;
            tx.commit().await?;
        }
        return Ok(Vec::new());
    }
    let hostname = {
        let mut c = state.db.conn().await?;
        trusthub_fleet::agent(&mut c, tenant, agent)
            .await?
            .map(|a| a.hostname)
            .unwrap_or_default()
    };
    // One transaction for the host: its attempts, their attestations and alerts, and the
    // signed actions; sent once it commits, so an answer always finds its attempt.
    let who = origin.who;
    let subject = agent.to_string();
    let mut attempts = Vec::new();
    let mut entries: Vec<(&str, &str, serde_json::Value)> = Vec::new();
    // Each alert's title, detail and fingerprint.
    let mut alerts: Vec<(String, String, String)> = Vec::new();
    let mut prepared = Vec::new();
    for d in dispatch {
        let jti = Uuid::new_v4().simple().to_string();
        attempts.push(store::Attempt {
            eat_nonce: jti.clone(),
            tenant_id: tenant.0,
            agent_id: agent,
            category: d.category.as_str().into(),
            manager: d.manager.into(),
            ecosystem: d.ecosystem.clone(),
            project_path: d.project_path.clone(),
            package_key: d.key.clone(),
            advisories: d.advisories.join(","),
            packages: serde_json::to_string(&d.packages).unwrap_or_else(|_| "[]".into()),
            status: "proposed".into(),
            exit_code: None,
            note: None,
            created_at: now,
            expires_at: now + time::Duration::seconds(trusthub_core::eat::MAX_LIFETIME_SECS),
            finished_at: None,
        });
        for c in &d.packages {
            entries.push((
                kind::PROPOSED,
                subject.as_str(),
                json!({"category": d.category.as_str(), "package": c.name, "source": c.source,
                    "target_version": c.to, "from_version": c.from,
                    "cve_id": c.vuln_ids.first(), "vuln_ids": c.vuln_ids,
                    "severity": d.severity, "eat_nonce": jti, "flag_set_by": origin.by,
                    "flag_set_at": origin.at.map(trusthub_platform::state::rfc3339),
                    "flag_set_seq": origin.seq, "trigger": origin.trigger}),
            ));
            alerts.push((
                format!("Auto-patch dispatched: {} -> {}", c.name, c.to),
                format!("{} on {hostname}: {}", d.manager, c.vuln_ids.join(", ")),
                format!("auto_patch:{jti}:{}", c.name),
            ));
        }
        let packages: Vec<serde_json::Value> = d
            .packages
            .iter()
            .map(|c| json!({"name": c.name, "version": c.to}))
            .collect();
        let (act, args) = match d.category {
            Category::OsPackages => (
                "install_package",
                json!({"manager": d.manager, "packages": packages}),
            ),
            Category::AppDeps => (
                "update_packages",
                json!({"ecosystem": d.manager, "project_path": d.project_path, "packages": packages}),
            ),
        };
        let reason = format!(
            "auto-patch: {}",
            d.packages
                .iter()
                .map(|c| format!("{} {} -> {}", c.name, c.from, c.to))
                .collect::<Vec<_>>()
                .join(", ")
        );
        prepared.push(prepare(
            state,
            who,
            ActionRequest {
                agent_id: agent,
                app_id: None,
                act,
                args,
                reason: &reason,
                subject: format!("agent:{agent}"),
                jti: Some(jti),
            },
            now,
        )?);
    }
    // One transaction for the host, a few multi-row statements: its attempts, their
    // attestations and alerts, and the signed actions; sent once it commits, so an answer
    // always finds its attempt.
    let info = trusthub_core::alerting::Severity::Info;
    let new_alerts: Vec<trusthub_alerts::NewAlert<'_>> = alerts
        .iter()
        .map(|(title, detail, fingerprint)| trusthub_alerts::NewAlert {
            severity: info.as_str(),
            severity_rank: info.rank(),
            category: "remediation",
            title,
            detail: Some(detail),
            source: trusthub_core::alerting::source::AUTO_PATCH,
            fingerprint,
            agent_id: Some(agent),
            app_id: None,
            rule_id: None,
        })
        .collect();
    let mut tx = state.db.begin().await?;
    book.write(&mut tx, tenant, agent, now).await?;
    store::insert_attempts(&mut tx, &attempts).await?;
    trusthub_fleet::append_logs(&mut tx, tenant, &entries, now).await?;
    trusthub_alerts::alerting::Notifier::default()
        .raise_many(&mut tx, tenant, &new_alerts, now)
        .await?;
    Prepared::record_all(&prepared, &mut tx, who, now).await?;
    tx.commit().await?;
    let mut sent = Vec::new();
    let mut gone: Option<String> = None;
    for (p, attempt) in prepared.into_iter().zip(attempts) {
        if gone.is_none() {
            match p.send(state).await {
                Ok(_) => {
                    sent.push(attempt);
                    continue;
                }
                Err(ApiError::Conflict(why)) => gone = Some(why),
                Err(e) => return Err(e),
            }
        }
        // The host left while its actions were recorded: nothing more reaches it.
        let why = gone.as_deref().unwrap_or("the agent is not connected");
        let mut tx = state.db.begin().await?;
        store::finish(
            &mut tx,
            agent,
            &attempt.eat_nonce,
            "expired",
            None,
            Some(&format!("not delivered: {why}")),
            now,
        )
        .await?;
        tx.commit().await?;
    }
    Ok(sent)
}

#[allow(clippy::too_many_arguments)]
async fn alert(
    notifier: &mut trusthub_alerts::alerting::Notifier,
    tx: &mut Tx,
    tenant: TenantId,
    agent: Uuid,
    severity: &str,
    title: &str,
    detail: &str,
    fingerprint: &str,
    now: OffsetDateTime,
) -> StoreResult<()> {
    let s = match severity {
        "warning" => trusthub_core::alerting::Severity::Warning,
        _ => trusthub_core::alerting::Severity::Info,
    };
    notifier
        .raise(
            tx,
            tenant,
            &trusthub_alerts::NewAlert {
                severity: s.as_str(),
                severity_rank: s.rank(),
                category: "remediation",
                title,
                detail: Some(detail),
                source: trusthub_core::alerting::source::AUTO_PATCH,
                fingerprint,
                agent_id: Some(agent),
                app_id: None,
                rule_id: None,
            },
            now,
        )
        .await?;
    Ok(())
}

/// Records a skip once per (package, advisory, reason, suppression) with its attestation.
pub(crate) async fn record_skip(
    tx: &mut Tx,
    tenant: TenantId,
    agent: Uuid,
    skip: &rules::Skip,
    now: OffsetDateTime,
) -> StoreResult<()> {
    let detail = skip
        .suppression
        .as_ref()
        .map(|(id, _)| id.to_string())
        .unwrap_or_default();
    let mut fresh = Vec::new();
    for v in &skip.vuln_ids {
        if store::record_skip(
            &mut *tx,
            tenant,
            agent,
            &skip.package,
            v,
            skip.reason,
            &detail,
            now,
        )
        .await?
        {
            fresh.push(v.clone());
        }
    }
    if fresh.is_empty() {
        return Ok(());
    }
    let mut payload = json!({"package": skip.package, "vuln_ids": fresh, "reason": skip.reason});
    if let Some((id, reason)) = &skip.suppression {
        payload["suppression_id"] = json!(id);
        payload["suppression_reason"] = json!(reason);
    }
    trusthub_fleet::append_log(
        &mut *tx,
        tenant,
        kind::SKIPPED,
        &agent.to_string(),
        &payload,
        now,
    )
    .await?;
    Ok(())
}

/// What the hub does when a host answers an auto-patch action: the attempt becomes
/// `applied` (exit 0) or `rolled_back`, its attestation is appended, and a failure raises a
/// warning alert. Runs in the result's transaction.
pub async fn on_result(
    _state: &AppState,
    tx: &mut Tx,
    r: &ActionResult,
    now: OffsetDateTime,
) -> StoreResult<()> {
    let Some(attempt) = store::attempt(&mut *tx, r.agent_id, &r.jti).await? else {
        return Ok(());
    };
    let applied = r.status == "succeeded" && r.exit_code == Some(0);
    let note = r.note.clone().or_else(|| {
        r.refused_reason
            .as_ref()
            .map(|why| format!("refused: {why}"))
    });
    let status = if applied { "applied" } else { "rolled_back" };
    if !store::finish(
        &mut *tx,
        r.agent_id,
        &r.jti,
        status,
        r.exit_code,
        note.as_deref(),
        now,
    )
    .await?
    {
        return Ok(());
    }
    trusthub_fleet::append_log(
        &mut *tx,
        r.tenant,
        if applied {
            kind::APPLIED
        } else {
            kind::ROLLED_BACK
        },
        &r.agent_id.to_string(),
        &json!({"eat_nonce": r.jti, "exit_code": r.exit_code, "note": note}),
        now,
    )
    .await?;
    if !applied {
        let packages: Vec<Change> = serde_json::from_str(&attempt.packages).unwrap_or_default();
        let names: Vec<String> = packages
            .iter()
            .map(|c| format!("{} -> {}", c.name, c.to))
            .collect();
        alert(
            &mut trusthub_alerts::alerting::Notifier::default(),
            tx,
            r.tenant,
            r.agent_id,
            "warning",
            "Auto-patch rolled back",
            &format!(
                "{}: {} (exit code {})",
                names.join(", "),
                note.as_deref().unwrap_or("failed"),
                r.exit_code.map_or("none".into(), |c| c.to_string())
            ),
            &format!("auto_patch_rolled_back:{}", r.jti),
            now,
        )
        .await?;
    }
    Ok(())
}

/// One proposed package and what became of its action.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChainAttempt {
    /// The `remediation.auto_proposed` entry.
    pub proposed: LogEntryView,
    /// Its `remediation.auto_applied` or `remediation.auto_rolled_back` entry, once the host
    /// answered.
    pub result: Option<LogEntryView>,
}

/// A chain: who turned patching on, and what it proposed and did since.
#[derive(Debug, Serialize, ToSchema)]
pub struct Chain {
    /// The `remediation.auto_flag_set` entry that turned a flag on.
    pub flag_set: LogEntryView,
    /// The packages proposed under it, oldest first.
    pub attempts: Vec<ChainAttempt>,
}

/// The attestation chains of the tenant, or of one host (viewer): each flag turned on, the
/// packages proposed under it (linked by `flag_set_seq`), each with its result (linked by
/// `eat_nonce`). Every entry is a transparency-log entry whose hash can be recomputed.
pub async fn attestations(
    state: &AppState,
    by: &Viewer,
    agent: Option<Uuid>,
) -> ApiResult<Vec<Chain>> {
    let tenant = by.0.tenant();
    if let Some(a) = agent {
        host(state, tenant, a).await?;
    }
    let subject = agent.map(|a| a.to_string());
    let entries = {
        let mut c = state.db.conn().await?;
        trusthub_fleet::log_of_subject(&mut c, tenant, subject.as_deref(), "remediation.auto_")
            .await?
    };
    let mut results: HashMap<String, LogEntryView> = HashMap::new();
    let mut proposed: BTreeMap<i64, Vec<trusthub_core::canonical::LogEntry>> = BTreeMap::new();
    let mut chains: Vec<Chain> = Vec::new();
    let mut flags: HashMap<i64, usize> = HashMap::new();
    for e in entries {
        match e.kind.as_str() {
            // A flag turned on, or an auto-update-all request on the host, heads a chain.
            kind::FLAG_SET | kind::UPDATE_ALL if e.payload["turned_on"] == true => {
                flags.insert(e.seq, chains.len());
                chains.push(Chain {
                    flag_set: e.into(),
                    attempts: Vec::new(),
                });
            }
            kind::PROPOSED => {
                let flag = e.payload["flag_set_seq"].as_i64().unwrap_or(0);
                proposed.entry(flag).or_default().push(e);
            }
            kind::APPLIED | kind::ROLLED_BACK => {
                if let Some(n) = e.payload["eat_nonce"].as_str() {
                    results.insert(n.to_owned(), e.into());
                }
            }
            _ => {}
        }
    }
    for (flag, entries) in proposed {
        let Some(&i) = flags.get(&flag) else {
            continue;
        };
        for e in entries {
            let nonce = e.payload["eat_nonce"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let result = results.get(&nonce).cloned();
            chains[i].attempts.push(ChainAttempt {
                proposed: e.into(),
                result,
            });
        }
    }
    chains.reverse();
    Ok(chains)
}
