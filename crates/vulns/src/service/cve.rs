//! The services behind [`crate::routes::cve`]: what its handlers, the dashboard's
//! pages and other capabilities call.

use crate::auth::{Admin, Operator, Viewer};
use crate::cve::ImportReport;
use crate::error::{ApiError, ApiResult};
use crate::extract::Meta;
use crate::state::{AppState, now};
use axum::http::{HeaderMap, header};
use serde::{Deserialize, Serialize};
use serde_json::json;
use time::OffsetDateTime;
use trusthub_core::audit as ev;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

/// The largest upload (an ecosystem's `all.zip` of the OSV bucket is a few hundred MiB; the
/// whole database belongs to `trusthub cve import`).
pub const MAX_UPLOAD_BYTES: usize = 512 * 1024 * 1024;

/// What is loaded for one ecosystem.
#[derive(Debug, Serialize, ToSchema)]
pub struct Source {
    /// OSV ecosystem (`npm`, `PyPI`, `Debian:12`, …).
    pub ecosystem: String,
    /// Advisories naming a package of it (withdrawn ones not counted).
    pub advisories: i64,
    /// The newest `modified` among them: how fresh the data is.
    #[serde(with = "time::serde::rfc3339")]
    pub newest_modified: OffsetDateTime,
    /// The last import that brought one of them.
    #[serde(with = "time::serde::rfc3339")]
    pub imported_at: OffsetDateTime,
}

/// The service behind `sources`, for the API and the dashboard alike.
pub async fn sources(state: &AppState, by: &Viewer) -> ApiResult<Vec<Source>> {
    let p = &by.0;
    let mut c = state.db.conn().await?;
    let rows = crate::store::osv::sources(&mut c, &p.tenant().0.to_string()).await?;
    Ok(rows
        .into_iter()
        .map(
            |(ecosystem, advisories, newest_modified, imported_at)| Source {
                ecosystem,
                advisories,
                newest_modified,
                imported_at,
            },
        )
        .collect())
}

/// The tenant's host names.
pub(crate) async fn hostnames(
    c: &mut impl trusthub_store::Exec,
    tenant: trusthub_store::TenantId,
) -> ApiResult<std::collections::HashMap<Uuid, String>> {
    Ok(trusthub_fleet::agents(c, tenant)
        .await?
        .into_iter()
        .map(|a| (a.id, a.hostname))
        .collect())
}

/// A finding as the API shows it.
pub(crate) fn view(
    f: crate::store::cve::Finding,
    hosts: &std::collections::HashMap<Uuid, String>,
) -> FindingView {
    FindingView {
        status: if f.fixed_at.is_some() {
            "fixed"
        } else if f.suppression_id.is_some() {
            "suppressed"
        } else if f.acknowledged_at.is_some() {
            "acknowledged"
        } else {
            "open"
        }
        .into(),
        id: f.id,
        vuln_id: f.seen.vuln_id,
        aliases: serde_json::from_str(&f.seen.aliases).unwrap_or_default(),
        hostname: hosts.get(&f.agent_id).cloned().unwrap_or_default(),
        agent_id: f.agent_id,
        ecosystem: f.seen.ecosystem,
        binary_packages: crate::store::cve::binaries(&f.seen.binaries)
            .into_iter()
            .map(|b| BinaryPackage {
                name: b.name,
                version: b.version,
            })
            .collect(),
        package: f.seen.package,
        installed_version: f.seen.installed_version,
        fixed_versions: serde_json::from_str(&f.seen.fixed_versions).unwrap_or_default(),
        severity: f.seen.severity,
        cvss_score: f.seen.cvss_score,
        summary: f.seen.summary,
        project_path: Some(f.seen.project_path).filter(|p| !p.is_empty()),
        source: Some(f.seen.source).filter(|p| !p.is_empty()),
        source_kind: Some(f.seen.source_kind).filter(|p| !p.is_empty()),
        first_seen_at: f.first_seen_at,
        last_seen_at: f.last_seen_at,
        fixed_at: f.fixed_at,
        acknowledged_at: f.acknowledged_at,
        acknowledged_by: f.acknowledged_by,
        ack_reason: f.ack_reason,
        suppression_id: f.suppression_id.filter(|_| f.fixed_at.is_none()),
        suppression_reason: f.suppression_reason.filter(|_| f.fixed_at.is_none()),
        suppressed_until: f.suppression_expires_at.filter(|_| f.fixed_at.is_none()),
    }
}

/// Filters and paging of the findings.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct FindingsQuery {
    /// At least this severity: CRITICAL, HIGH, MEDIUM, LOW or UNKNOWN.
    #[param(pattern = "^(CRITICAL|HIGH|MEDIUM|LOW|UNKNOWN)$")]
    pub severity: Option<String>,
    /// One host.
    pub agent_id: Option<Uuid>,
    /// One OSV ecosystem (`npm`, `Debian:12`, …).
    pub ecosystem: Option<String>,
    /// `open`, `acknowledged`, `suppressed` or `fixed`, or `unfixed` for the first three
    /// (what is still installed); all when absent.
    #[param(pattern = "^(open|acknowledged|suppressed|fixed|unfixed)$")]
    pub status: Option<String>,
    /// One package, by its installed name.
    pub package: Option<String>,
    /// Findings per page, 1 to 500 (default 100).
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<i64>,
    /// `next_cursor` of the previous page.
    #[param(pattern = "^[0-4]\\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")]
    pub cursor: Option<String>,
}

/// One finding (CONTRACT 15).
/// A binary package installed from a finding's source package.
#[derive(Debug, Serialize, ToSchema)]
pub struct BinaryPackage {
    /// Its name (`libcurl4`).
    pub name: String,
    /// Its installed version.
    pub version: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct FindingView {
    /// Finding id.
    pub id: Uuid,
    /// The advisory (GET /cves/{vuln_id}).
    pub vuln_id: String,
    /// Its other ids, and those of advisories of the same vulnerability.
    pub aliases: Vec<String>,
    /// Host.
    pub agent_id: Uuid,
    /// Its name.
    pub hostname: String,
    /// OSV ecosystem.
    pub ecosystem: String,
    /// The package the advisory names: for an OS package its source package (`curl`), whose
    /// binaries this host has installed are in `binary_packages`; for a dependency, itself.
    pub package: String,
    /// The binary packages installed from that source package (`curl`, `libcurl4`), with
    /// their versions; empty for application dependencies. One advisory on a source package
    /// is one finding, and a suppression of the source (or of any of its binaries) covers it.
    pub binary_packages: Vec<BinaryPackage>,
    /// Installed version (the source package's version for OS packages).
    pub installed_version: String,
    /// Versions that fix it (empty: no fix published).
    pub fixed_versions: Vec<String>,
    /// CRITICAL, HIGH, MEDIUM, LOW or UNKNOWN.
    pub severity: String,
    /// CVSS base score, when the advisory has a vector.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cvss_score: Option<f64>,
    /// One line.
    pub summary: String,
    /// The project's folder for an application dependency.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_path: Option<String>,
    /// Where the dependency was read (CONTRACT 29): the lockfile, the installed tree's root
    /// (`node_modules`, `site-packages`, the gem home) or the binary. Absent for OS
    /// packages. The same package at the same version in two sources of a project is two
    /// findings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// `lockfile`, `installed` or `binary` (what was installed wins over what a lockfile
    /// claims: a package in both is reported from the installed tree).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(pattern = "^(lockfile|installed|binary)$")]
    pub source_kind: Option<String>,
    /// `fixed` (the installed version moved past the fix, or the package is gone), else
    /// `suppressed` (a suppression in force matches it), else `acknowledged`, else `open`.
    pub status: String,
    /// First scan that found it.
    #[serde(with = "time::serde::rfc3339")]
    pub first_seen_at: OffsetDateTime,
    /// Last scan that found it.
    #[serde(with = "time::serde::rfc3339")]
    pub last_seen_at: OffsetDateTime,
    /// The scan that found the installed version past the fix (or the package gone).
    #[serde(
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub fixed_at: Option<OffsetDateTime>,
    /// When an operator acknowledged it (acknowledged findings are never auto-patched).
    #[serde(
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub acknowledged_at: Option<OffsetDateTime>,
    /// `user:<id>` who acknowledged it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acknowledged_by: Option<String>,
    /// Why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ack_reason: Option<String>,
    /// The suppression that applies to it (status `suppressed`; GET /cve-suppressions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suppression_id: Option<Uuid>,
    /// Its reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suppression_reason: Option<String>,
    /// When it stops applying (the finding is `open` again then, unless fixed).
    #[serde(
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub suppressed_until: Option<OffsetDateTime>,
}

/// A page of findings.
#[derive(Debug, Serialize, ToSchema)]
pub struct FindingsPage {
    /// Worst first, then newest.
    pub items: Vec<FindingView>,
    /// Pass as `cursor` for the next page; absent on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// The service behind `findings`, for the API and the dashboard alike.
pub async fn findings(state: &AppState, by: &Viewer, q: FindingsQuery) -> ApiResult<FindingsPage> {
    let p = &by.0;
    let mut errors = Vec::new();
    let min_rank = match q.severity.as_deref() {
        None => None,
        Some(s) => match crate::rules::osv::Severity::parse(s) {
            Some(v) if v.as_str() == s => Some(v.rank()),
            _ => {
                errors.push(("severity", "use CRITICAL, HIGH, MEDIUM, LOW or UNKNOWN"));
                None
            }
        },
    };
    if let Some(s) = q.status.as_deref()
        && !matches!(
            s,
            "open" | "acknowledged" | "suppressed" | "fixed" | "unfixed"
        )
    {
        errors.push((
            "status",
            "use open, acknowledged, suppressed, fixed or unfixed",
        ));
    }
    let limit = q.limit.unwrap_or(100);
    if !(1..=500).contains(&limit) {
        errors.push(("limit", "must be between 1 and 500"));
    }
    let cursor = match q.cursor.as_deref() {
        None => None,
        Some(c) => match c
            .split_once('.')
            .and_then(|(r, id)| Some((r.parse::<i64>().ok()?, Uuid::parse_str(id).ok()?)))
        {
            Some(c) => Some(c),
            None => {
                errors.push(("cursor", "not a cursor this endpoint gave"));
                None
            }
        },
    };
    if !errors.is_empty() {
        return Err(ApiError::Validation(
            errors
                .into_iter()
                .map(|(field, message)| crate::error::FieldError::new(field, message))
                .collect(),
        ));
    }
    let mut c = state.db.conn().await?;
    let filter = crate::store::cve::Filter {
        min_rank,
        agent_id: q.agent_id,
        ecosystem: q.ecosystem,
        status: q.status.clone(),
        package: q.package,
    };
    let rows =
        crate::store::cve::list(&mut c, p.tenant(), &filter, cursor, limit + 1, now()).await?;
    let hosts = hostnames(&mut c, p.tenant()).await?;
    let more = rows.len() as i64 > limit;
    let items: Vec<FindingView> = rows
        .into_iter()
        .take(limit as usize)
        .map(|f| view(f, &hosts))
        .collect();
    let next_cursor = if more {
        items.last().map(|f| {
            let rank = crate::rules::osv::Severity::parse(&f.severity)
                .map(|s| s.rank())
                .unwrap_or(0);
            format!("{rank}.{}", f.id)
        })
    } else {
        None
    };
    Ok(FindingsPage { items, next_cursor })
}

/// Why a finding is acknowledged.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AckRequest {
    /// Why (1 to 500 characters): mitigated, not reachable, accepted until the next release…
    #[schema(min_length = 1, max_length = 500)]
    pub reason: String,
}

/// The service behind `acknowledge`, for the API and the dashboard alike.
pub async fn acknowledge(
    state: &AppState,
    meta: &Meta,
    by: &Operator,
    id: Uuid,
    req: AckRequest,
) -> ApiResult<FindingView> {
    let p = &by.0;
    let reason = req.reason.trim();
    if reason.is_empty() || reason.chars().count() > 500 {
        return Err(ApiError::invalid("reason", "1 to 500 characters"));
    }
    set_ack(state, meta, p, id, Some(reason)).await.map(|j| j.0)
}

/// The service behind `unacknowledge`, for the API and the dashboard alike.
pub async fn unacknowledge(
    state: &AppState,
    meta: &Meta,
    by: &Operator,
    id: Uuid,
) -> ApiResult<FindingView> {
    let p = &by.0;
    set_ack(state, meta, p, id, None).await.map(|j| j.0)
}

pub(crate) async fn set_ack(
    state: &AppState,
    meta: &Meta,
    p: &crate::auth::Principal,
    id: Uuid,
    reason: Option<&str>,
) -> ApiResult<axum::Json<FindingView>> {
    let now = now();
    let mut tx = state.db.begin().await?;
    let Some(found) = crate::store::cve::get(&mut tx, p.tenant(), id, now).await? else {
        return Err(ApiError::NotFound("finding"));
    };
    match (reason, found.acknowledged_at.is_some()) {
        (Some(_), true) => {
            return Err(ApiError::Conflict(
                "the finding is already acknowledged".into(),
            ));
        }
        (None, false) => return Err(ApiError::Conflict("the finding is not acknowledged".into())),
        _ => {}
    }
    let actor = p.actor();
    crate::store::cve::set_ack(
        &mut tx,
        p.tenant(),
        id,
        reason.map(|r| (r, actor.as_str())),
        now,
    )
    .await?;
    trusthub_store::audit::append(
        &mut tx,
        p.tenant(),
        &meta.audit(
            if reason.is_some() {
                ev::CVE_FINDING_ACKNOWLEDGED
            } else {
                ev::CVE_FINDING_UNACKNOWLEDGED
            },
            actor.clone(),
            format!("cve_finding:{id}"),
            json!({"vuln_id": found.seen.vuln_id, "agent_id": found.agent_id, "package": found.seen.package, "reason": reason}),
        ),
        now,
    )
    .await?;
    let updated = crate::store::cve::get(&mut tx, p.tenant(), id, now)
        .await?
        .ok_or(ApiError::NotFound("finding"))?;
    let hosts = hostnames(&mut tx, p.tenant()).await?;
    tx.commit().await?;
    Ok(axum::Json(view(updated, &hosts)))
}

/// An advisory with the hosts of this tenant it affects.
#[derive(Debug, Serialize, ToSchema)]
pub struct AdvisoryView {
    /// The advisory's id.
    pub id: String,
    /// Its other ids.
    pub aliases: Vec<String>,
    /// CRITICAL … UNKNOWN (the worst over its packages).
    pub severity: String,
    /// CVSS base score.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cvss_score: Option<f64>,
    /// One line.
    pub summary: String,
    /// Last change.
    #[serde(with = "time::serde::rfc3339")]
    pub modified: OffsetDateTime,
    /// Whether it was withdrawn.
    pub withdrawn: bool,
    /// `hub` (loaded for every tenant) or `tenant` (uploaded by this tenant).
    pub source: String,
    /// The OSV record as imported (details, affected ranges, references, …).
    #[schema(value_type = Object)]
    pub record: serde_json::Value,
    /// This tenant's findings of it, worst first.
    pub findings: Vec<FindingView>,
}

/// The service behind `advisory`, for the API and the dashboard alike.
pub async fn advisory(state: &AppState, by: &Viewer, vuln_id: String) -> ApiResult<AdvisoryView> {
    let p = &by.0;
    let scope = p.tenant().0.to_string();
    let mut c = state.db.conn().await?;
    let Some(a) = crate::store::osv::get(&mut c, &scope, &vuln_id).await? else {
        return Err(ApiError::NotFound("advisory"));
    };
    let mut ids: Vec<String> = serde_json::from_str(&a.aliases).unwrap_or_default();
    ids.push(a.id.clone());
    let rows = crate::store::cve::of_vulnerability(&mut c, p.tenant(), &ids, now()).await?;
    let hosts = hostnames(&mut c, p.tenant()).await?;
    Ok(AdvisoryView {
        aliases: serde_json::from_str(&a.aliases).unwrap_or_default(),
        severity: a.severity,
        cvss_score: a.cvss_score,
        summary: a.summary,
        modified: a.modified,
        withdrawn: a.withdrawn,
        source: if a.scope.is_empty() { "hub" } else { "tenant" }.into(),
        record: serde_json::from_str(&a.record).unwrap_or(serde_json::Value::Null),
        findings: rows.into_iter().map(|f| view(f, &hosts)).collect(),
        id: a.id,
    })
}

/// What the last scan of a host could check.
#[derive(Debug)]
pub struct CoverageView {
    /// Host.
    pub agent_id: Uuid,
    /// Its name.
    pub hostname: String,
    /// The last scan (absent: not scanned yet — no inventory, or the scan has not run).
    pub scanned_at: Option<OffsetDateTime>,
    /// Packages it looked at (OS packages and application dependencies).
    pub packages: i64,
    /// What it could not check, and why, as sentences.
    pub not_covered: Vec<String>,
    /// Each source of its packages.
    pub sources: Vec<crate::rules::scan::SourceCoverage>,
}

/// The service behind `coverage`, for the API and the dashboard alike: every host of the
/// tenant with what its last scan could check.
pub async fn coverage(state: &AppState, by: &Viewer) -> ApiResult<Vec<CoverageView>> {
    let p = &by.0;
    let mut c = state.db.conn().await?;
    let mut scans: std::collections::HashMap<Uuid, (OffsetDateTime, i64, String, String)> =
        crate::store::cve::coverage(&mut c, p.tenant())
            .await?
            .into_iter()
            .map(|(a, t, n, nc, s)| (a, (t, n, nc, s)))
            .collect();
    let mut out: Vec<CoverageView> = trusthub_fleet::agents(&mut c, p.tenant())
        .await?
        .into_iter()
        .map(|a| {
            let scan = scans.remove(&a.id);
            CoverageView {
                agent_id: a.id,
                hostname: a.hostname,
                scanned_at: scan.as_ref().map(|s| s.0),
                packages: scan.as_ref().map_or(0, |s| s.1),
                not_covered: scan
                    .as_ref()
                    .and_then(|s| serde_json::from_str(&s.2).ok())
                    .unwrap_or_default(),
                sources: scan
                    .as_ref()
                    .and_then(|s| serde_json::from_str(&s.3).ok())
                    .unwrap_or_default(),
            }
        })
        .collect();
    out.sort_by(|a, b| {
        a.hostname
            .cmp(&b.hostname)
            .then(a.agent_id.cmp(&b.agent_id))
    });
    Ok(out)
}

/// One source of a host's packages and what the host's last scan could check of it
/// (CONTRACT 29).
#[derive(Debug, Serialize, ToSchema)]
pub struct SourceView {
    /// Host.
    pub agent_id: Uuid,
    /// Its name.
    pub hostname: String,
    /// The scan.
    #[serde(with = "time::serde::rfc3339")]
    pub scanned_at: OffsetDateTime,
    /// The lockfile, the installed tree's root (`node_modules`, `site-packages`, the gem
    /// home), the binary, or the OS package database (`/var/lib/dpkg/status`).
    pub source: String,
    /// `lockfile`, `installed` or `binary` (the OS package database is `installed`).
    #[schema(pattern = "^(lockfile|installed|binary)$")]
    pub source_kind: String,
    /// `package-lock`, `yarn-v1`, `uv-lock`, `node-modules`, `go-binary`, … (CONTRACT 29);
    /// `dpkg`, `rpm` or `apk` for the OS package database.
    pub format: String,
    /// The OSV ecosystem its packages are looked up in (`npm`, `Debian:12`, …; the agent's
    /// name for an ecosystem the hub does not know).
    pub ecosystem: String,
    /// Packages read from it.
    pub packages: i64,
    /// `covered`, or `not_covered` when any of it could not be checked: the agent could not
    /// read it (a line it cannot read makes the whole file not covered), no advisory data is
    /// loaded for its ecosystem, the hub cannot order its versions, an OS release without
    /// advisory mapping, a version or an advisory that could not be evaluated.
    #[schema(pattern = "^(covered|not_covered)$")]
    pub status: String,
    /// Why it is not covered (reasons separated by `; `, with the line number when the agent
    /// gave one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Filters of the coverage.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct CoverageQuery {
    /// One host.
    pub agent_id: Option<Uuid>,
    /// `covered` or `not_covered`.
    #[param(pattern = "^(covered|not_covered)$")]
    pub status: Option<String>,
}

/// The service behind `coverage`'s flat list, for the API and the CLI alike.
pub async fn sources_of(
    state: &AppState,
    by: &Viewer,
    q: &CoverageQuery,
) -> ApiResult<Vec<SourceView>> {
    if let Some(s) = q.status.as_deref()
        && !matches!(s, "covered" | "not_covered")
    {
        return Err(ApiError::invalid("status", "use covered or not_covered"));
    }
    let hosts = coverage(state, by).await?;
    if let Some(id) = q.agent_id
        && !hosts.iter().any(|h| h.agent_id == id)
    {
        return Err(ApiError::NotFound("agent"));
    }
    let mut out = Vec::new();
    for h in hosts {
        if q.agent_id.is_some_and(|id| id != h.agent_id) {
            continue;
        }
        let Some(scanned_at) = h.scanned_at else {
            continue;
        };
        for s in h.sources {
            if q.status.as_deref().is_some_and(|w| w != s.status) {
                continue;
            }
            out.push(SourceView {
                agent_id: h.agent_id,
                hostname: h.hostname.clone(),
                scanned_at,
                source: s.source,
                source_kind: s.source_kind,
                format: s.format,
                ecosystem: s.ecosystem,
                packages: s.packages,
                status: s.status,
                reason: s.reason,
            });
        }
    }
    Ok(out)
}

/// The service behind the `import` handler, for the API and the dashboard alike.
pub async fn import(
    state: &AppState,
    meta: &Meta,
    by: &Admin,
    headers: &HeaderMap,
    body: axum::body::Body,
) -> ApiResult<ImportReport> {
    let p = &by.0;
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    if !content_type.starts_with("application/zip") {
        return Err(ApiError::UnsupportedMediaType(
            "expected Content-Type application/zip (a zip of OSV JSON records)".into(),
        ));
    }
    let now = now();
    let tenant = p.tenant();
    let limits = crate::archive::Limits::with_total(state.settings.import_max_bytes);
    let outcome = match crate::archive::spool_body(body, MAX_UPLOAD_BYTES as u64).await {
        Ok(file) => {
            crate::cve::import_zip_file(&state.db, &tenant.0.to_string(), file, limits, now)
                .await
                .map_err(|e| (e.kind(), e.message(), ApiError::from(e)))
        }
        Err(e) => Err(("upload", e.to_string(), e)),
    };
    let (event, details) = match &outcome {
        Ok(r) => (
            ev::CVE_IMPORT,
            json!({"files": r.files, "inserted": r.inserted, "updated": r.updated,
                "unchanged": r.unchanged, "withdrawn": r.withdrawn, "skipped": r.skipped_count}),
        ),
        Err((kind, message, _)) => (
            ev::CVE_IMPORT_FAILED,
            json!({"reason": kind, "detail": message.chars().take(2000).collect::<String>()}),
        ),
    };
    let mut tx = state.db.begin().await?;
    trusthub_store::audit::append(
        &mut tx,
        tenant,
        &meta.audit(event, p.actor(), "cve_sources".into(), details),
        now,
    )
    .await?;
    tx.commit().await?;
    if outcome.is_ok() {
        // The hosts' findings follow at once, not at the scan's next check (CONTRACT 33).
        trusthub_platform::scheduler::nudge(state, crate::jobs::cve_scan::JOB);
    }
    outcome.map_err(|(_, _, e)| e)
}
