//! The drift pages — the tenant's drift list and each host's drift tab (attributes of the
//! baseline against the latest scan, explained or not, the rebase with its reason, the
//! latest rebases) — through the same services as the API.

use crate::service::{self, Attributes, DriftView};
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use serde::Deserialize;
use trusthub_core::Role;
use trusthub_core::drift::Status;
use trusthub_identity::auth::{Operator, Viewer};
use trusthub_identity::{Act, UserBar, WebUser};
use trusthub_platform::AppState;
use trusthub_platform::error::ApiError;
use trusthub_platform::extract::Meta;
use trusthub_platform::page::{ASSETS, Assets, Flash, FormPairs, outcome};
use trusthub_platform::page::{PageResult, render};
use uuid::Uuid;

/// The pages (merged at the root by the composition root, which adds the page layers).
pub fn pages() -> axum::Router<AppState> {
    axum::Router::new()
        .route("/ui/drift", get(tenant))
        .route("/ui/agents/{id}/drift", get(host))
        .route("/ui/agents/{id}/drift/rebase", post(rebase))
}

/// One attribute of a path: its name, baseline value, current value, whether they differ.
type Cell = (&'static str, String, String, bool);

/// How an attribute is shown.
type Show = fn(&Attributes) -> Option<String>;

/// A path as the pages show it.
struct Row {
    agent_id: String,
    hostname: String,
    path: String,
    status: String,
    explained: String,
    changed_at: String,
    cells: Vec<Cell>,
}

fn cells(b: Option<&Attributes>, c: Option<&Attributes>) -> Vec<Cell> {
    let show = |v: Option<String>| v.unwrap_or_else(|| "—".into());
    let pick = |f: Show| (show(b.and_then(f)), show(c.and_then(f)));
    let attrs: [(&'static str, Show); 8] = [
        ("sha256", |a| a.sha256.clone()),
        ("kind", |a| Some(a.kind.clone())),
        ("size", |a| a.size.map(|s| s.to_string())),
        ("mode", |a| a.mode.clone()),
        ("owner", |a| {
            a.uid.zip(a.gid).map(|(u, g)| format!("{u}:{g}"))
        }),
        ("link target", |a| a.link_target.clone()),
        ("package", |a| {
            a.package.as_ref().map(|p| match &a.package_version {
                Some(v) => format!("{p} {v}"),
                None => p.clone(),
            })
        }),
        ("package verifies it", |a| {
            a.package_verified
                .map(|v| if v { "yes" } else { "no" }.into())
        }),
    ];
    attrs
        .into_iter()
        .map(|(name, f)| {
            let (x, y) = pick(f);
            let differs = x != y && name != "package verifies it";
            (name, x, y, differs)
        })
        .collect()
}

fn row(v: &DriftView, hostname: &str) -> Row {
    Row {
        agent_id: v.agent_id.to_string(),
        hostname: hostname.to_owned(),
        path: v.path.clone(),
        status: v.status.clone(),
        explained: v
            .explained_by
            .as_ref()
            .map(|e| match &e.from_version {
                Some(f) => format!("{} {} → {}", e.package, f, e.to_version),
                None => format!("installed by {} {}", e.package, e.to_version),
            })
            .unwrap_or_default(),
        changed_at: v.changed_at.clone(),
        cells: cells(v.baseline.as_ref(), v.current.as_ref()),
    }
}

#[derive(Template)]
#[template(path = "drift.html")]
struct TenantPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    rows: Vec<Row>,
    filter: String,
    filters: Vec<(&'static str, bool)>,
    watched: usize,
    hosts: usize,
}

/// The list's filter.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantQuery {
    #[serde(default)]
    status: Option<String>,
}

/// `GET /ui/drift`: every path not as in its baseline across the tenant's hosts (or one
/// state with `?status=`).
pub async fn tenant(
    State(state): State<AppState>,
    user: WebUser,
    axum::extract::Query(q): axum::extract::Query<TenantQuery>,
) -> PageResult {
    let p = &user.principal;
    Viewer::of(p)?;
    let filter =
        match q.status.as_deref().filter(|s| !s.is_empty()) {
            None => None,
            Some(s) => Some(Status::parse(s).ok_or_else(|| {
                ApiError::invalid("status", "must be ok, drifted, missing or new")
            })?),
        };
    let all = service::list(&state, p.tenant(), None, filter).await?;
    let names = trusthub_fleet::host_names(&state, p.tenant()).await?;
    let hosts = all
        .iter()
        .map(|v| v.agent_id)
        .collect::<std::collections::HashSet<_>>()
        .len();
    let watched = all.len();
    let page = TenantPage {
        assets: &ASSETS,
        user: Some(UserBar::from(&user)),
        rows: all
            .iter()
            .filter(|v| filter.is_some() || v.status != "ok")
            .map(|v| row(v, names.get(&v.agent_id).map_or("", String::as_str)))
            .collect(),
        filter: filter.map(|s| s.as_str().to_owned()).unwrap_or_default(),
        filters: ["drifted", "missing", "new", "ok"]
            .into_iter()
            .map(|s| (s, filter.is_some_and(|f| f.as_str() == s)))
            .collect(),
        watched,
        hosts,
    };
    render(page.render(), StatusCode::OK)
}

#[derive(Template)]
#[template(path = "drift_host.html")]
struct HostPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    csrf: String,
    can_rebase: bool,
    agent_id: String,
    hostname: String,
    rows: Vec<Row>,
    rebases: Vec<(String, String, String, String)>,
    flash: Flash,
}

async fn host_page(
    state: &AppState,
    user: &WebUser,
    id: Uuid,
    flash: Flash,
    code: StatusCode,
) -> PageResult {
    let p = &user.principal;
    Viewer::of(p)?;
    let agent = {
        let mut c = state.db.conn().await?;
        trusthub_fleet::agent(&mut c, p.tenant(), id)
            .await?
            .ok_or(ApiError::NotFound("agent"))?
    };
    let views = service::of_agent(state, p.tenant(), id).await?;
    let mut rows: Vec<Row> = views.iter().map(|v| row(v, &agent.hostname)).collect();
    // What needs a look first.
    rows.sort_by_key(|r| (r.status == "ok", r.path.clone()));
    let page = HostPage {
        assets: &ASSETS,
        user: Some(UserBar::from(user)),
        csrf: user.csrf.clone(),
        can_rebase: p.has_role(Role::Operator),
        agent_id: id.to_string(),
        hostname: agent.hostname,
        rows,
        rebases: service::rebases(state, p.tenant(), id)
            .await?
            .into_iter()
            .map(|r| {
                (
                    r.at,
                    r.by.email.unwrap_or(r.by.kind),
                    r.paths
                        .iter()
                        .map(|p| p.path.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                    r.reason,
                )
            })
            .collect(),
        flash,
    };
    render(page.render(), code)
}

/// `GET /ui/agents/{id}/drift`.
pub async fn host(
    State(state): State<AppState>,
    user: WebUser,
    axum::extract::Path(id): axum::extract::Path<Uuid>,
) -> PageResult {
    host_page(&state, &user, id, Flash::default(), StatusCode::OK).await
}

/// `POST /ui/agents/{id}/drift/rebase` (operator, CSRF): the checked paths adopted, with
/// the reason.
pub async fn rebase(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path(id): axum::extract::Path<Uuid>,
    Act { user, form, .. }: Act<Operator, FormPairs>,
) -> PageResult {
    let form = form.only(&["path", "reason"])?;
    let paths = form.all("path");
    let result = service::rebase(
        &state,
        &meta,
        &user.principal,
        id,
        &paths,
        &form.get("reason"),
    )
    .await;
    let notice = match &result {
        Ok(r) => format!(
            "Rebased {} path(s): their current state is the new baseline.",
            r.paths.len()
        ),
        Err(_) => String::new(),
    };
    let (flash, code) = outcome(result, &notice, StatusCode::OK)?;
    host_page(&state, &user, id, flash, code).await
}
