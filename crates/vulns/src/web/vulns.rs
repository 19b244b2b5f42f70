//! Vulnerabilities (CONTRACT 15): the tenant's findings with filters, acknowledge and take
//! back from the row (operators), and an advisory's page with the hosts it affects — through
//! the API's own handlers.

use super::{ASSETS, Assets, Flash, WebUser};
use super::{UserBar, ago};
use crate::auth::{Operator, Viewer};
use crate::error::ApiResult;
use crate::extract::Meta;
use crate::service::cve::{self as api, AckRequest, FindingView, FindingsQuery};
use crate::state::{AppState, now};
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use trusthub_core::Role;
use trusthub_identity::Act;
use trusthub_platform::page::NoFields;
use trusthub_platform::page::{PageResult, render};

/// One finding row.
#[derive(Debug)]
pub(super) struct Row {
    /// The binary packages of an OS finding's source package (`libssl3, openssl`).
    binaries: String,
    id: String,
    severity: String,
    class: &'static str,
    vuln_id: String,
    aliases: String,
    agent: String,
    host: String,
    package: String,
    where_: String,
    installed: String,
    fixed: String,
    status: String,
    note: String,
    summary: String,
    seen: String,
    ecosystem: String,
    /// The installed version alone, in the ecosystem's range syntax (the suppress form's
    /// default).
    exact_range: String,
    suppression: String,
}

fn class(severity: &str) -> &'static str {
    match severity {
        "CRITICAL" => "critical",
        "HIGH" | "MEDIUM" => "warning",
        _ => "info",
    }
}

/// The installed version alone as a range of its ecosystem.
fn exact(ecosystem: &str, version: &str) -> String {
    match ecosystem.split(':').next().unwrap_or_default() {
        "npm" => version.to_owned(),
        "PyPI" => format!("=={version}"),
        _ => format!("= {version}"),
    }
}

pub(super) fn row(f: FindingView, now: time::OffsetDateTime) -> Row {
    Row {
        exact_range: exact(&f.ecosystem, &f.installed_version),
        ecosystem: f.ecosystem.clone(),
        suppression: f.suppression_id.map(|i| i.to_string()).unwrap_or_default(),
        id: f.id.to_string(),
        class: class(&f.severity),
        severity: f.severity,
        vuln_id: f.vuln_id,
        aliases: f.aliases.join(", "),
        agent: f.agent_id.to_string(),
        host: f.hostname,
        binaries: f
            .binary_packages
            .iter()
            .map(|b| b.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        package: f.package,
        where_: match (f.source, f.source_kind) {
            (Some(s), Some(k)) => format!("{s} ({k})"),
            _ => f.project_path.unwrap_or_else(|| f.ecosystem.clone()),
        },
        installed: f.installed_version,
        fixed: if f.fixed_versions.is_empty() {
            "no fix published".into()
        } else {
            f.fixed_versions.join(", ")
        },
        note: match (&f.ack_reason, &f.fixed_at, &f.suppression_reason) {
            (_, Some(t), _) => format!("fixed {}", ago(Some(*t), now)),
            (_, None, Some(r)) => format!(
                "suppressed until {}: {r}",
                f.suppressed_until
                    .map(|t| t.date().to_string())
                    .unwrap_or_default()
            ),
            (Some(r), None, None) => format!("acknowledged: {r}"),
            _ => String::new(),
        },
        status: f.status,
        summary: f.summary,
        seen: ago(Some(f.first_seen_at), now),
    }
}

#[derive(Template)]
#[template(path = "vulns.html")]
struct Page<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    csrf: String,
    can_ack: bool,
    rows: Vec<Row>,
    severities: Vec<(&'static str, &'static str, bool)>,
    statuses: Vec<(&'static str, &'static str, bool)>,
    flash: Flash,
    agent_id: String,
    package: String,
    default_expiry: String,
}

/// The suppress form's default expiry: 90 days ahead.
pub(super) fn default_expiry(now: time::OffsetDateTime) -> String {
    (now + time::Duration::days(90)).date().to_string()
}

/// The page's filters (the API's, as the form sends them).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Filters {
    #[serde(default)]
    severity: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    agent_id: String,
    #[serde(default)]
    package: String,
}

async fn page(
    state: &AppState,
    user: &WebUser,
    f: &Filters,
    flash: Flash,
    status: StatusCode,
) -> PageResult {
    let p = &user.principal;
    let agent_id = match f.agent_id.trim() {
        "" => None,
        a => Some(uuid::Uuid::parse_str(a).map_err(|_| {
            crate::error::ApiError::BadRequest("agent_id is not an agent id".into())
        })?),
    };
    let found = api::findings(
        state,
        &Viewer::of(p)?,
        FindingsQuery {
            severity: Some(f.severity.clone()).filter(|s| !s.is_empty()),
            status: Some(f.status.clone()).filter(|s| !s.is_empty()),
            agent_id,
            package: Some(f.package.trim().to_owned()).filter(|s| !s.is_empty()),
            limit: Some(500),
            ..Default::default()
        },
    )
    .await?;
    let now = now();
    let page = Page {
        assets: &ASSETS,
        user: Some(UserBar::from(user)),
        csrf: user.csrf.clone(),
        can_ack: p.has_role(Role::Operator),
        rows: found.items.into_iter().map(|f| row(f, now)).collect(),
        severities: [
            ("", "any"),
            ("CRITICAL", "CRITICAL"),
            ("HIGH", "HIGH"),
            ("MEDIUM", "MEDIUM"),
            ("LOW", "LOW"),
        ]
        .into_iter()
        .map(|(v, l)| (v, l, f.severity == v))
        .collect(),
        statuses: [
            ("open", "open"),
            ("suppressed", "suppressed"),
            ("acknowledged", "acknowledged"),
            ("fixed", "fixed"),
            ("all", "all"),
        ]
        .into_iter()
        .map(|(v, l)| (v, l, f.status == v || (f.status.is_empty() && v == "all")))
        .collect(),
        flash,
        agent_id: f.agent_id.trim().to_owned(),
        package: f.package.trim().to_owned(),
        default_expiry: default_expiry(now),
    };
    render(page.render(), status)
}

/// `GET /ui/vulnerabilities` (open findings by default).
pub async fn list(
    State(state): State<AppState>,
    user: WebUser,
    axum::extract::Query(mut f): axum::extract::Query<Filters>,
) -> PageResult {
    if f.status.is_empty() {
        f.status = "open".into();
    }
    if f.status == "all" {
        f.status.clear();
    }
    page(&state, &user, &f, Flash::default(), StatusCode::OK).await
}

/// The acknowledge form.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AckForm {
    #[serde(default)]
    reason: String,
}

/// `POST /ui/vulnerabilities/{id}/acknowledge` (operator).
pub async fn acknowledge(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path(id): axum::extract::Path<uuid::Uuid>,
    Act { by, user, form: f }: Act<Operator, AckForm>,
) -> PageResult {
    let result = api::acknowledge(&state, &meta, &by, id, AckRequest { reason: f.reason }).await;
    respond(
        &state,
        &user,
        result,
        "Acknowledged: it stays listed and is never auto-patched.",
    )
    .await
}

/// `POST /ui/vulnerabilities/{id}/unacknowledge` (operator).
pub async fn unacknowledge(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path(id): axum::extract::Path<uuid::Uuid>,
    Act { by, user, .. }: Act<Operator, NoFields>,
) -> PageResult {
    let result = api::unacknowledge(&state, &meta, &by, id).await;
    respond(&state, &user, result, "Open again.").await
}

async fn respond<T>(
    state: &AppState,
    user: &WebUser,
    result: ApiResult<T>,
    notice: &str,
) -> PageResult {
    match super::outcome(result, notice, StatusCode::OK) {
        Ok((flash, status)) => {
            let all = Filters {
                status: String::new(),
                ..Default::default()
            };
            page(state, user, &all, flash, status).await
        }
        Err(e) => Err(e),
    }
}

#[derive(Template)]
#[template(path = "cve.html")]
struct AdvisoryPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    id: String,
    aliases: String,
    severity: String,
    class: &'static str,
    score: String,
    summary: String,
    details: String,
    modified: String,
    withdrawn: bool,
    references: Vec<String>,
    rows: Vec<Row>,
    can_ack: bool,
    csrf: String,
    default_expiry: String,
}

/// `GET /ui/cves/{id}`: an advisory and the hosts it affects.
pub async fn advisory(
    State(state): State<AppState>,
    user: WebUser,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> PageResult {
    let by = Viewer::of(&user.principal)?;
    let a = api::advisory(&state, &by, id).await?;
    let now = now();
    let page = AdvisoryPage {
        assets: &ASSETS,
        user: Some(UserBar::from(&user)),
        class: class(&a.severity),
        aliases: a.aliases.join(", "),
        score: a
            .cvss_score
            .map(|s| format!("CVSS {s:.1}"))
            .unwrap_or_default(),
        details: a.record["details"].as_str().unwrap_or_default().to_owned(),
        references: a.record["references"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["url"].as_str())
            .filter(|u| u.starts_with("https://") || u.starts_with("http://"))
            .map(str::to_owned)
            .collect(),
        modified: ago(Some(a.modified), now),
        withdrawn: a.withdrawn,
        summary: a.summary,
        severity: a.severity,
        rows: a.findings.into_iter().map(|f| row(f, now)).collect(),
        id: a.id,
        can_ack: user.principal.has_role(Role::Operator),
        csrf: user.csrf.clone(),
        default_expiry: default_expiry(now),
    };
    render(page.render(), StatusCode::OK)
}

#[derive(Template)]
#[template(path = "agent_vulns.html")]
struct HostPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    agent: String,
    hostname: String,
    scanned: String,
    packages: i64,
    not_covered: Vec<String>,
    sources: Vec<crate::rules::scan::SourceCoverage>,
    counts: (usize, usize, usize, usize),
    suppressed: usize,
    can_ack: bool,
    csrf: String,
    rows: Vec<Row>,
    default_expiry: String,
    flash: Flash,
}

/// `GET /ui/agents/{id}/vulnerabilities`: the host's coverage, unfixed findings and SBOM.
pub async fn host(
    State(state): State<AppState>,
    user: WebUser,
    axum::extract::Path(id): axum::extract::Path<uuid::Uuid>,
) -> PageResult {
    let p = &user.principal;
    let hostname = {
        let mut c = state.db.conn().await?;
        trusthub_fleet::agent(&mut c, p.tenant(), id)
            .await?
            .ok_or(crate::error::ApiError::NotFound("agent"))?
            .hostname
    };
    let coverage = api::coverage(&state, &Viewer::of(p)?).await?;
    let cov = coverage.into_iter().find(|c| c.agent_id == id);
    let found = api::findings(
        &state,
        &Viewer::of(p)?,
        FindingsQuery {
            agent_id: Some(id),
            status: Some("unfixed".into()),
            limit: Some(500),
            ..Default::default()
        },
    )
    .await?;
    let now = now();
    let mut counts = (0, 0, 0, 0);
    let mut suppressed = 0;
    for f in &found.items {
        if f.status == "suppressed" {
            suppressed += 1;
            continue;
        }
        match f.severity.as_str() {
            "CRITICAL" => counts.0 += 1,
            "HIGH" => counts.1 += 1,
            "MEDIUM" => counts.2 += 1,
            _ => counts.3 += 1,
        }
    }
    let page = HostPage {
        assets: &ASSETS,
        user: Some(UserBar::from(&user)),
        agent: id.to_string(),
        hostname,
        scanned: cov
            .as_ref()
            .and_then(|c| c.scanned_at)
            .map(|t| ago(Some(t), now))
            .unwrap_or_default(),
        packages: cov.as_ref().map_or(0, |c| c.packages),
        sources: cov.as_ref().map(|c| c.sources.clone()).unwrap_or_default(),
        not_covered: cov.map(|c| c.not_covered).unwrap_or_default(),
        counts,
        suppressed,
        can_ack: p.has_role(Role::Operator),
        csrf: user.csrf.clone(),
        rows: found.items.into_iter().map(|f| row(f, now)).collect(),
        default_expiry: default_expiry(now),
        flash: Flash::default(),
    };
    render(page.render(), StatusCode::OK)
}
