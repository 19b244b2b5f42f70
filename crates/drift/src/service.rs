//! The services behind the routes, the pages and ingest: a scan applied in the batch's
//! transaction (rows, alerts, tickets), the lists, and the rebase.

use crate::rules::{self, Changes};
use crate::store::{self, FileRow, Rebase};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::HashSet;
use time::OffsetDateTime;
use trusthub_alerts::alerting::{DRIFT_TICKET, Notifier};
use trusthub_alerts::{NewAlert, open_by_fingerprint};
use trusthub_core::drift::{ConfigHash, Status};
use trusthub_fleet::ingest::ConfigScan;
use trusthub_identity::auth::{Credential, Principal};
use trusthub_platform::AppState;
use trusthub_platform::error::{ApiError, ApiResult, FieldError, all_valid};
use trusthub_platform::extract::Meta;
use trusthub_platform::state::rfc3339;
use trusthub_store::{StoreResult, TenantId, Tx};
use utoipa::ToSchema;
use uuid::Uuid;

/// How long after a human rebase a drift raises a ticket.
pub const TICKET_WINDOW: time::Duration = time::Duration::days(7);

fn fingerprint(agent: Uuid, path: &str) -> String {
    format!("drift:{agent}:{path}")
}

/// Applies a scan an agent reported (the fleet's [`ConfigReports`] event, in the batch's
/// transaction): new baselines, changed states, drift alerts raised and resolved, and
/// `drift.ticket` for a drift within 7 days after a human rebase.
///
/// [`ConfigReports`]: trusthub_fleet::ingest::ConfigReports
pub async fn on_config_scan(
    tx: &mut Tx,
    scan: &ConfigScan,
    now: OffsetDateTime,
) -> StoreResult<()> {
    let known: HashSet<String> = store::patterns(&mut *tx, scan.agent_id)
        .await?
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    // Almost every scan reports what the hub holds: compare the stored text first and read
    // no row in full when nothing changed.
    if scan.patterns.iter().all(|p| known.contains(p)) {
        let stored: std::collections::HashMap<String, Option<String>> =
            store::reported(&mut *tx, scan.tenant, scan.agent_id)
                .await?
                .into_iter()
                .collect();
        let reported = stored.values().filter(|c| c.is_some()).count();
        let same = reported == scan.hashes.len()
            && scan.hashes.iter().all(|h| {
                stored
                    .get(&h.path)
                    .is_some_and(|c| c.as_deref() == Some(store::report_json(h).as_str()))
            });
        if same {
            return Ok(());
        }
    }
    let held = store::of_agent(&mut *tx, scan.tenant, scan.agent_id).await?;
    let changes = rules::evaluate(
        scan.agent_id,
        &held,
        &known,
        &scan.patterns,
        &scan.hashes,
        now,
    );
    apply(tx, scan, changes, now).await
}

async fn apply(tx: &mut Tx, scan: &ConfigScan, c: Changes, now: OffsetDateTime) -> StoreResult<()> {
    let tenant = scan.tenant;
    let firsts: Vec<&str> = c.first_patterns.iter().map(String::as_str).collect();
    store::add_patterns(&mut *tx, scan.agent_id, &firsts, now).await?;
    store::insert_many(&mut *tx, tenant, &c.inserts).await?;
    for r in &c.updates {
        store::update(&mut *tx, tenant, r).await?;
    }
    for p in &c.deletes {
        store::delete(&mut *tx, tenant, scan.agent_id, p).await?;
    }
    if c.raise.is_empty() && c.resolve.is_empty() {
        return Ok(());
    }
    let mut notifier = Notifier::default();
    for path in &c.resolve {
        resolve_alert(
            tx,
            &mut notifier,
            tenant,
            scan.agent_id,
            path,
            "drift cleared",
            now,
        )
        .await?;
    }
    let row_of = |p: &str| c.updates.iter().chain(&c.inserts).find(|r| r.path == p);
    for path in &c.raise {
        let Some(row) = row_of(path) else { continue };
        let fp = fingerprint(scan.agent_id, path);
        let title = format!(
            "Configuration drift on {}: {path} {}",
            scan.hostname,
            row.status.as_str()
        );
        let detail = detail_of(row);
        notifier
            .raise(
                tx,
                tenant,
                &NewAlert {
                    severity: "warning",
                    severity_rank: 1,
                    category: "drift",
                    title: &title,
                    detail: Some(&detail),
                    source: "drift",
                    fingerprint: &fp,
                    agent_id: Some(scan.agent_id),
                    app_id: None,
                    rule_id: None,
                },
                now,
            )
            .await?;
    }
    if c.fresh_drift.is_empty() {
        return Ok(());
    }
    let Some(rebase) = store::last_rebase(&mut *tx, scan.agent_id, now - TICKET_WINDOW).await?
    else {
        return Ok(());
    };
    if rebase.infrastructure {
        return Ok(());
    }
    for path in &c.fresh_drift {
        let Some(row) = row_of(path) else { continue };
        let body = json!({
            "event": DRIFT_TICKET,
            "ticket": {
                "agent": {"id": scan.agent_id, "hostname": scan.hostname, "tags": scan.tags},
                "path": path,
                "status": row.status.as_str(),
                "baseline_sha256": row.baseline.as_ref().and_then(|b| b.sha256.clone()),
                "current_sha256": row.current.as_ref().and_then(|b| b.sha256.clone()),
                "rebase": rebase_ref(&rebase),
            },
            "tenant_id": tenant.0,
            "timestamp": rfc3339(now),
        });
        notifier
            .enqueue_payload(tx, tenant, DRIFT_TICKET, &body, &scan.tags, now)
            .await?;
    }
    Ok(())
}

fn rebase_ref(r: &Rebase) -> Value {
    json!({
        "rebase_id": r.id,
        "by": serde_json::from_str::<Value>(&r.by_actor).unwrap_or(Value::Null),
        "reason": r.reason,
        "at": rfc3339(r.at),
    })
}

fn detail_of(r: &FileRow) -> String {
    let b = r.baseline.as_ref();
    let c = r.current.as_ref();
    let sha = |h: Option<&ConfigHash>| {
        h.and_then(|h| h.sha256.as_deref())
            .map(|s| s[..12.min(s.len())].to_owned())
            .unwrap_or_else(|| "none".into())
    };
    let mut d = format!("sha256 {} -> {}", sha(b), sha(c));
    if let (Some(b), Some(c)) = (b, c) {
        if b.mode != c.mode {
            d.push_str(&format!(
                "; mode {} -> {}",
                b.mode.as_deref().unwrap_or("-"),
                c.mode.as_deref().unwrap_or("-")
            ));
        }
        if b.uid != c.uid || b.gid != c.gid {
            d.push_str("; owner changed");
        }
        if c.package.is_some() && c.package_verified == Some(false) {
            d.push_str(&format!(
                "; the package database no longer vouches for it ({})",
                c.package.as_deref().unwrap_or_default()
            ));
        }
    }
    d
}

async fn resolve_alert(
    tx: &mut Tx,
    notifier: &mut Notifier,
    tenant: TenantId,
    agent: Uuid,
    path: &str,
    why: &str,
    now: OffsetDateTime,
) -> StoreResult<()> {
    if let Some(a) = open_by_fingerprint(&mut *tx, tenant, &fingerprint(agent, path)).await? {
        notifier
            .resolve(tx, tenant, a.id, "system:drift", why, now)
            .await?;
    }
    Ok(())
}

/// A file's attributes at one time (CONTRACT 20).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Attributes {
    /// SHA-256 of the content, hex (null when missing).
    pub sha256: Option<String>,
    /// Bytes.
    pub size: Option<u64>,
    /// Permission bits, octal.
    pub mode: Option<String>,
    /// Owner.
    pub uid: Option<u32>,
    /// Group.
    pub gid: Option<u32>,
    /// `file`, `symlink` or `missing`.
    pub kind: String,
    /// Where a symlink points.
    pub link_target: Option<String>,
    /// Owning package.
    pub package: Option<String>,
    /// Its version.
    pub package_version: Option<String>,
    /// Whether the package database vouches for the file (current report only).
    pub package_verified: Option<bool>,
    /// File modification time the agent saw.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub mtime: Option<String>,
    /// When the hub took it (the baseline's time, or the report's).
    #[schema(value_type = String, format = DateTime)]
    pub at: String,
}

impl Attributes {
    fn of(h: &ConfigHash, at: OffsetDateTime) -> Attributes {
        Attributes {
            sha256: h.sha256.clone(),
            size: h.size,
            mode: h.mode.clone(),
            uid: h.uid,
            gid: h.gid,
            kind: h.kind.as_str().into(),
            link_target: h.link_target.clone(),
            package: h.package.clone(),
            package_version: h.package_version.clone(),
            package_verified: h.package_verified,
            mtime: h.mtime.map(rfc3339),
            at: rfc3339(at),
        }
    }
}

/// The package update that explains a drift.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ExplainedBy {
    /// The package.
    pub package: String,
    /// Its version in the baseline (null: the package put a new file there).
    pub from_version: Option<String>,
    /// Its version now.
    pub to_version: String,
    /// When the hub saw the change.
    #[schema(value_type = String, format = DateTime)]
    pub changed_at: String,
}

/// One watched path of a host and its drift state (CONTRACT 20).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DriftView {
    /// The host.
    pub agent_id: Uuid,
    /// The path.
    pub path: String,
    /// `ok`, `drifted`, `missing` or `new`.
    #[schema(pattern = "^(ok|drifted|missing|new)$")]
    pub status: String,
    /// The baseline (null for a `new` file until a rebase).
    pub baseline: Option<Attributes>,
    /// What the latest scan saw (null when the file is no longer there).
    pub current: Option<Attributes>,
    /// When the state or the file last changed.
    #[schema(value_type = String, format = DateTime)]
    pub changed_at: String,
    /// The package update that explains the change, when one does (no alert then).
    pub explained_by: Option<ExplainedBy>,
}

impl DriftView {
    /// The view of a row.
    pub fn of(r: &FileRow) -> DriftView {
        DriftView {
            agent_id: r.agent_id,
            path: r.path.clone(),
            status: r.status.as_str().into(),
            baseline: r
                .baseline
                .as_ref()
                .map(|b| Attributes::of(b, r.baseline_at.unwrap_or(r.changed_at))),
            current: r.current.as_ref().map(|c| Attributes::of(c, r.reported_at)),
            changed_at: rfc3339(r.changed_at),
            explained_by: r.explained.as_ref().and_then(|e| {
                Some(ExplainedBy {
                    package: e["package"].as_str()?.to_owned(),
                    from_version: e["from_version"].as_str().map(str::to_owned),
                    to_version: e["to_version"].as_str()?.to_owned(),
                    changed_at: e["changed_at"].as_str()?.to_owned(),
                })
            }),
        }
    }
}

async fn host(state: &AppState, tenant: TenantId, agent: Uuid) -> ApiResult<trusthub_fleet::Agent> {
    let mut c = state.db.conn().await?;
    trusthub_fleet::agent(&mut c, tenant, agent)
        .await?
        .ok_or(ApiError::NotFound("agent"))
}

/// A host's watched paths (404 for another tenant's host).
pub async fn of_agent(
    state: &AppState,
    tenant: TenantId,
    agent: Uuid,
) -> ApiResult<Vec<DriftView>> {
    host(state, tenant, agent).await?;
    let mut c = state.db.conn().await?;
    Ok(store::of_agent(&mut c, tenant, agent)
        .await?
        .iter()
        .map(DriftView::of)
        .collect())
}

/// The tenant's watched paths, optionally of one host and in one state.
pub async fn list(
    state: &AppState,
    tenant: TenantId,
    agent: Option<Uuid>,
    status: Option<Status>,
) -> ApiResult<Vec<DriftView>> {
    let mut c = state.db.conn().await?;
    Ok(store::list(&mut c, tenant, agent, status)
        .await?
        .iter()
        .map(DriftView::of)
        .collect())
}

/// The tenant's drifted files that no package update explains, `(host, path)` by host and
/// path; `None` while no host of the tenant reported a scan (for the Trust Score: no inputs).
pub async fn unexplained(
    ex: &mut impl trusthub_store::Exec,
    tenant: TenantId,
) -> StoreResult<Option<Vec<(Uuid, String)>>> {
    let all = store::list(ex, tenant, None, None).await?;
    if all.is_empty() {
        return Ok(None);
    }
    Ok(Some(
        all.into_iter()
            .filter(rules::unexplained)
            .map(|r| (r.agent_id, r.path))
            .collect(),
    ))
}

/// Who rebased (CONTRACT 20).
#[derive(Debug, Clone, Serialize, serde::Deserialize, ToSchema)]
pub struct RebasedBy {
    /// `user` or `api_token`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The user's or the token's id.
    pub id: Uuid,
    /// The user's email.
    pub email: Option<String>,
}

/// One path a rebase adopted.
#[derive(Debug, Clone, Serialize, serde::Deserialize, ToSchema)]
pub struct RebasedPath {
    /// The path.
    pub path: String,
    /// The baseline's hash before (null when it had none).
    pub previous_sha256: Option<String>,
    /// The new baseline's hash (null: the file is gone and so is its baseline).
    pub sha256: Option<String>,
}

/// A rebase (CONTRACT 20).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RebaseView {
    /// Id.
    pub rebase_id: Uuid,
    /// The host.
    pub agent_id: Uuid,
    /// The paths adopted.
    pub paths: Vec<RebasedPath>,
    /// Who.
    pub by: RebasedBy,
    /// Why.
    pub reason: String,
    /// When.
    #[schema(value_type = String, format = DateTime)]
    pub at: String,
}

fn by_of(p: &Principal) -> (RebasedBy, bool) {
    match &p.credential {
        Credential::Token {
            token_id, service, ..
        } => (
            RebasedBy {
                kind: "api_token".into(),
                id: *token_id,
                email: Some(p.user.email.clone()),
            },
            service.as_deref() == Some("infrastructure"),
        ),
        Credential::Session { .. } => (
            RebasedBy {
                kind: "user".into(),
                id: p.user.id,
                email: Some(p.user.email.clone()),
            },
            false,
        ),
    }
}

/// Adopts the current state of `paths` as their baseline (operator), with a reason; the
/// transparency log records it (`drift.rebased`) and their alerts resolve.
pub async fn rebase(
    state: &AppState,
    meta: &Meta,
    p: &Principal,
    agent: Uuid,
    paths: &[String],
    reason: &str,
) -> ApiResult<RebaseView> {
    p.may_change()?;
    let tenant = p.tenant();
    let reason = reason.trim();
    let mut errors = Vec::new();
    if reason.is_empty() || reason.chars().count() > 500 || reason.chars().any(char::is_control) {
        errors.push(FieldError::new(
            "reason",
            "must be 1 to 500 printable characters",
        ));
    }
    if paths.is_empty() || paths.len() > 1000 {
        errors.push(FieldError::new("paths", "must name 1 to 1000 paths"));
    }
    let host = host(state, tenant, agent).await?;
    let now = trusthub_platform::state::now();
    let mut tx = state.db.begin().await?;
    let held = store::of_agent(&mut tx, tenant, agent).await?;
    let watched = host.watched_paths();
    let mut chosen: Vec<&FileRow> = Vec::new();
    for (i, path) in paths.iter().enumerate() {
        let row = held.iter().find(|r| &r.path == path);
        let is_watched = watched
            .iter()
            .any(|w| trusthub_core::drift::matches(w, path));
        match row {
            Some(r) if is_watched => {
                if !chosen.iter().any(|c| c.path == r.path) {
                    chosen.push(r);
                }
            }
            _ => errors.push(FieldError::new(
                format!("paths[{i}]"),
                format!(
                    "{path} is not {} on this host",
                    if is_watched { "reported" } else { "watched" }
                ),
            )),
        }
    }
    all_valid(errors)?;
    let (by, infrastructure) = by_of(p);
    let mut adopted = Vec::new();
    let mut notifier = Notifier::default();
    for r in chosen {
        adopted.push(RebasedPath {
            path: r.path.clone(),
            previous_sha256: r.baseline.as_ref().and_then(|b| b.sha256.clone()),
            sha256: r.current.as_ref().and_then(|c| c.sha256.clone()),
        });
        if r.current.is_none() {
            store::delete(&mut tx, tenant, agent, &r.path).await?;
        } else {
            let row = FileRow {
                status: Status::Ok,
                baseline: r.current.clone(),
                baseline_at: Some(now),
                explained: None,
                changed_at: now,
                ..r.clone()
            };
            store::update(&mut tx, tenant, &row).await?;
        }
        resolve_alert(
            &mut tx,
            &mut notifier,
            tenant,
            agent,
            &r.path,
            "rebased",
            now,
        )
        .await?;
    }
    let id = Uuid::now_v7();
    let by_json = serde_json::to_value(&by).unwrap_or(Value::Null);
    store::insert_rebase(
        &mut tx,
        tenant,
        &Rebase {
            id,
            agent_id: agent,
            paths: serde_json::to_string(&adopted).unwrap_or_default(),
            by_actor: by_json.to_string(),
            infrastructure,
            reason: reason.to_owned(),
            at: now,
        },
    )
    .await?;
    trusthub_fleet::append_log(
        &mut tx,
        tenant,
        "drift.rebased",
        &format!("agent:{agent}"),
        &json!({"rebase_id": id, "agent_id": agent, "paths": adopted, "by": by_json, "reason": reason}),
        now,
    )
    .await?;
    meta.record(
        &mut tx,
        p,
        trusthub_core::audit::CONFIG_REBASED,
        format!("agent:{agent}"),
        json!({"rebase_id": id, "paths": adopted.iter().map(|a| &a.path).collect::<Vec<_>>(), "reason": reason}),
    )
    .await?;
    tx.commit().await?;
    Ok(RebaseView {
        rebase_id: id,
        agent_id: agent,
        paths: adopted,
        by,
        reason: reason.to_owned(),
        at: rfc3339(now),
    })
}

/// A host's latest rebases (for its page).
pub async fn rebases(
    state: &AppState,
    tenant: TenantId,
    agent: Uuid,
) -> ApiResult<Vec<RebaseView>> {
    let mut c = state.db.conn().await?;
    Ok(store::rebases(&mut c, tenant, agent, 20)
        .await?
        .into_iter()
        .map(|r| RebaseView {
            rebase_id: r.id,
            agent_id: r.agent_id,
            // Written by `rebase` from these same types.
            paths: serde_json::from_str(&r.paths).unwrap_or_default(),
            by: serde_json::from_str(&r.by_actor).unwrap_or(RebasedBy {
                kind: String::new(),
                id: Uuid::nil(),
                email: None,
            }),
            reason: r.reason,
            at: rfc3339(r.at),
        })
        .collect())
}
