//! The compliance and security pages — results per framework and host with pass/fail over
//! time, runs, export buttons; honeypots, host DNA and silent agents — through the same
//! services as the API.

use crate::frameworks::{self, FRAMEWORKS};
use crate::service::{self, Filter};
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use serde::Deserialize;
use std::collections::BTreeMap;
use trusthub_core::Role;
use trusthub_identity::auth::Admin;
use trusthub_identity::auth::Viewer;
use trusthub_identity::{Act, UserBar, WebUser};
use trusthub_platform::AppState;
use trusthub_platform::error::ApiResult;
use trusthub_platform::extract::Meta;
use trusthub_platform::page::{ASSETS, Assets, Flash, PageResult, outcome, render};
use trusthub_platform::state::rfc3339;
use uuid::Uuid;

/// The pages (merged at the root by the composition root, which adds the page layers).
pub fn pages() -> axum::Router<AppState> {
    axum::Router::new()
        .route("/ui/compliance", get(compliance))
        .route("/ui/compliance/run", post(run))
        .route("/ui/compliance/export/{tool}", get(export))
        .route("/ui/security", get(security))
}

/// The page's filters (empty values mean none, as forms send them).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageQuery {
    #[serde(default)]
    framework: Option<String>,
    #[serde(default)]
    agent_id: Option<String>,
    #[serde(default)]
    status: Option<String>,
}

impl PageQuery {
    fn filter(&self) -> ApiResult<Filter> {
        let some = |v: &Option<String>| v.clone().filter(|s| !s.is_empty());
        let agent_id = match some(&self.agent_id) {
            None => None,
            Some(a) => Some(Uuid::parse_str(&a).map_err(|_| {
                trusthub_platform::error::ApiError::invalid("agent_id", "must be an agent id")
            })?),
        };
        let f = Filter {
            framework: some(&self.framework),
            agent_id,
            status: some(&self.status),
        };
        f.check()?;
        Ok(f)
    }
}

struct ResultRow {
    agent_id: String,
    hostname: String,
    check_id: String,
    title: String,
    controls: String,
    status: String,
    evidence: String,
    remediation: String,
    checked_at: String,
}

struct HostRow {
    agent_id: String,
    hostname: String,
    passed: usize,
    failed: usize,
    not_applicable: usize,
    errors: usize,
    checked_at: String,
}

struct HistoryRow {
    at: String,
    hostname: String,
    passed: i64,
    failed: i64,
    total: i64,
}

#[derive(Template)]
#[template(path = "compliance.html")]
struct CompliancePage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    csrf: String,
    can_run: bool,
    framework: String,
    framework_title: &'static str,
    frameworks: Vec<(&'static str, bool)>,
    agent_id: String,
    status: String,
    statuses: Vec<(&'static str, bool)>,
    query: String,
    hosts: Vec<HostRow>,
    rows: Vec<ResultRow>,
    history: Vec<HistoryRow>,
    runs: Vec<(String, String, i64, i64)>,
    flash: Flash,
}

async fn page(
    state: &AppState,
    user: &WebUser,
    q: &PageQuery,
    flash: Flash,
    code: StatusCode,
) -> PageResult {
    let p = &user.principal;
    Viewer::of(p)?;
    let mut f = q.filter()?;
    let framework = f
        .framework
        .clone()
        .unwrap_or_else(|| "cis-debian".to_owned());
    f.framework = Some(framework.clone());
    let results = service::results(
        state,
        p.tenant(),
        &Filter {
            status: None,
            ..f.clone()
        },
    )
    .await?;
    let names = trusthub_fleet::host_names(state, p.tenant()).await?;
    let mut hosts: BTreeMap<(String, Uuid), HostRow> = BTreeMap::new();
    for (r, _) in &results {
        let h = hosts
            .entry((r.hostname.clone(), r.agent_id))
            .or_insert_with(|| HostRow {
                agent_id: r.agent_id.to_string(),
                hostname: r.hostname.clone(),
                passed: 0,
                failed: 0,
                not_applicable: 0,
                errors: 0,
                checked_at: String::new(),
            });
        match r.status.as_str() {
            "pass" => h.passed += 1,
            "fail" => h.failed += 1,
            "not_applicable" => h.not_applicable += 1,
            _ => h.errors += 1,
        }
        let at = rfc3339(r.checked_at);
        if at > h.checked_at {
            h.checked_at = at;
        }
    }
    let mut rows: Vec<ResultRow> = results
        .iter()
        .filter(|(r, _)| f.status.as_deref().is_none_or(|s| s == r.status))
        .map(|(r, _)| ResultRow {
            agent_id: r.agent_id.to_string(),
            hostname: r.hostname.clone(),
            check_id: r.check_id.clone(),
            title: r.title.clone(),
            controls: frameworks::controls(&r.check_id, &framework).join(", "),
            status: r.status.clone(),
            evidence: r.evidence.clone(),
            remediation: r.remediation.clone(),
            checked_at: rfc3339(r.checked_at),
        })
        .collect();
    // Failures first, then by host and check.
    rows.sort_by(|a, b| {
        (a.status != "fail", &a.hostname, &a.check_id).cmp(&(
            b.status != "fail",
            &b.hostname,
            &b.check_id,
        ))
    });
    let history = service::history(state, p.tenant(), f.agent_id, 30)
        .await?
        .into_iter()
        .rev()
        .take(60)
        .map(|h| HistoryRow {
            at: rfc3339(h.checked_at),
            hostname: names.get(&h.agent_id).cloned().unwrap_or_default(),
            passed: h.passed,
            failed: h.failed,
            total: (h.passed + h.failed).max(1),
        })
        .collect();
    let runs = service::runs(state, p.tenant())
        .await?
        .into_iter()
        .take(10)
        .map(|r| {
            (
                rfc3339(r.created_at),
                r.agent_id
                    .and_then(|a| names.get(&a).cloned())
                    .unwrap_or_else(|| "every host".into()),
                r.done,
                r.hosts,
            )
        })
        .collect();
    let query = serde_urlencoded::to_string([
        ("framework", framework.as_str()),
        (
            "agent_id",
            &f.agent_id.map(|a| a.to_string()).unwrap_or_default(),
        ),
    ])
    .unwrap_or_default();
    let page = CompliancePage {
        assets: &ASSETS,
        user: Some(UserBar::from(user)),
        csrf: user.csrf.clone(),
        can_run: p.has_role(Role::Admin),
        framework_title: frameworks::framework_title(&framework),
        frameworks: FRAMEWORKS
            .into_iter()
            .map(|x| (x, x == framework))
            .collect(),
        framework,
        agent_id: f.agent_id.map(|a| a.to_string()).unwrap_or_default(),
        statuses: trusthub_core::compliance::STATUSES
            .into_iter()
            .map(|s| (s, f.status.as_deref() == Some(s)))
            .collect(),
        status: f.status.clone().unwrap_or_default(),
        query,
        hosts: hosts.into_values().collect(),
        rows,
        history,
        runs,
        flash,
    };
    render(page.render(), code)
}

/// `GET /ui/compliance[?framework=&agent_id=&status=]`.
pub async fn compliance(
    State(state): State<AppState>,
    user: WebUser,
    axum::extract::Query(q): axum::extract::Query<PageQuery>,
) -> PageResult {
    page(&state, &user, &q, Flash::default(), StatusCode::OK).await
}

/// The run form: a framework and a host, either empty for all.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunForm {
    #[serde(default)]
    framework: String,
    #[serde(default)]
    agent_id: String,
}

/// `POST /ui/compliance/run` (admin, CSRF): one host (`agent_id`) or every host.
pub async fn run(
    State(state): State<AppState>,
    meta: Meta,
    Act { user, form, .. }: Act<Admin, RunForm>,
) -> PageResult {
    let q = PageQuery {
        framework: Some(form.framework.trim().to_owned()),
        agent_id: Some(form.agent_id.trim().to_owned()),
        status: None,
    };
    let result = match q.filter() {
        Ok(f) => service::run(&state, &meta, &user.principal, f.agent_id).await,
        Err(e) => Err(e),
    };
    let notice = match &result {
        Ok(r) => format!(
            "Asked {} host(s) to run the checks: results arrive with their next batch.",
            r.agents.len()
        ),
        Err(_) => String::new(),
    };
    let (flash, code) = outcome(result, &notice, StatusCode::OK)?;
    page(&state, &user, &q, flash, code).await
}

/// `GET /ui/compliance/export/{tool}[?framework=&agent_id=]`: the API's export as a download.
pub async fn export(
    State(state): State<AppState>,
    user: WebUser,
    axum::extract::Path(tool): axum::extract::Path<String>,
    axum::extract::Query(q): axum::extract::Query<PageQuery>,
) -> PageResult {
    let p = &user.principal;
    Viewer::of(p)?;
    let f = q.filter()?;
    let e = service::export(&state, p.tenant(), &tool, &f, None).await?;
    Ok(crate::routes::attachment(e))
}

/// A honeypot row of the security page.
struct HoneypotRow {
    agent_id: String,
    host: String,
    kind: String,
    target: String,
    touched: String,
    detail: String,
    explain: String,
    state: String,
}

#[derive(Template)]
#[template(path = "security.html")]
struct SecurityPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    honeypots: Vec<HoneypotRow>,
    dna: Vec<(String, String, String, String, String, String, String)>,
    silent: Vec<(String, String, String, i64)>,
}

/// `GET /ui/security`.
pub async fn security(State(state): State<AppState>, user: WebUser) -> PageResult {
    let p = &user.principal;
    Viewer::of(p)?;
    let v = service::security(&state, p.tenant()).await?;
    let names = trusthub_fleet::host_names(&state, p.tenant()).await?;
    let name = |a: &Uuid| names.get(a).cloned().unwrap_or_default();
    let page = SecurityPage {
        assets: &ASSETS,
        user: Some(UserBar::from(&user)),
        honeypots: v
            .honeypots
            .iter()
            .map(|h| HoneypotRow {
                agent_id: h.agent_id.to_string(),
                host: name(&h.agent_id),
                kind: h.kind.clone(),
                target: h.target.clone(),
                touched: h.triggered_at.map(rfc3339).unwrap_or_default(),
                detail: h.detail.clone().unwrap_or_default(),
                explain: serde_urlencoded::to_string([
                    ("agent_id", h.agent_id.to_string()),
                    ("log", h.detail.clone().unwrap_or_default()),
                ])
                .unwrap_or_default(),
                state: match (h.state.as_str(), &h.why) {
                    ("not_armed", Some(why)) => format!("not armed: {why}"),
                    ("not_armed", None) => "not armed".into(),
                    (s, _) => s.to_owned(),
                },
            })
            .collect(),
        dna: v
            .dna
            .iter()
            .map(|d| {
                (
                    d.agent_id.to_string(),
                    name(&d.agent_id),
                    d.fingerprint_sha256.clone(),
                    d.changed_at.map(rfc3339).unwrap_or_default(),
                    format!("{} · {}", d.parts.os, d.parts.kernel),
                    d.parts.machine_id.clone(),
                    d.parts.ssh_host_keys.join(" "),
                )
            })
            .collect(),
        silent: v
            .silent_agents
            .iter()
            .map(|s| {
                (
                    s.agent_id.to_string(),
                    s.hostname.clone(),
                    s.last_seen_at
                        .map(rfc3339)
                        .unwrap_or_else(|| "never".into()),
                    s.expected_every_secs,
                )
            })
            .collect(),
    };
    render(page.render(), StatusCode::OK)
}
