//! The status pages: the public page (HTML without scripts, JSON, Atom) and the dashboard's
//! pages to make pages and tell incidents, through the same services as the API.

use crate::service::{self, GroupBody, NewIncident, NewIncidentUpdate, NewStatusPage, PublicPage};
use askama::Template;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use trusthub_core::Role;
use trusthub_identity::auth::{Admin, Operator};
use trusthub_identity::{Act, UserBar, WebUser, allowed};
use trusthub_platform::AppState;
use trusthub_platform::error::ApiError;
use trusthub_platform::extract::Meta;
use trusthub_platform::page::{ASSETS, Assets, Flash, FormPairs, PageResult, ago, outcome, render};
use trusthub_platform::state::now;
use uuid::Uuid;

/// The pages (merged at the root by the composition root, which adds the page layers).
pub fn pages() -> axum::Router<AppState> {
    axum::Router::new()
        .route("/ui/status-pages", get(list).post(list_form))
        .route("/ui/status-pages/{id}", get(show).post(show_form))
        .route("/status/{file}", get(public))
        .route("/status/{slug}/feed.atom", get(feed))
        .route("/badge/app/{file}", get(crate::badge::app_badge))
}

/// Seconds a public answer may be cached.
const PUBLIC_MAX_AGE: &str = "public, max-age=30";

fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "No such status page.\n",
    )
        .into_response()
}

/// One day's bar.
struct Bar {
    class: &'static str,
    label: String,
}

struct AppLine {
    name: String,
    status: String,
    uptime: String,
    bars: Vec<Bar>,
}

struct GroupLine {
    name: String,
    apps: Vec<AppLine>,
}

#[derive(Template)]
#[template(path = "status_public.html")]
struct PublicHtml<'a> {
    assets: &'a Assets,
    page: &'a PublicPage,
    headline: &'static str,
    groups: Vec<GroupLine>,
    days: usize,
    /// Resolved incidents shown.
    past: usize,
}

fn headline(status: &str) -> &'static str {
    match status {
        "major_outage" => "Major outage",
        "partial_outage" => "Partial outage",
        "degraded" => "Degraded performance",
        "maintenance" => "Under maintenance",
        _ => "All systems operational",
    }
}

/// A day's bar class (short: a page draws 90 of them per app): up, partly down, down, none.
fn bar_class(p: Option<f64>) -> &'static str {
    match p {
        None => "n",
        Some(p) if p >= 99.9 => "u",
        Some(p) if p >= 95.0 => "p",
        Some(_) => "d",
    }
}

/// `GET /status/<slug>` (HTML) and `/status/<slug>.json` (public).
pub async fn public(State(state): State<AppState>, Path(file): Path<String>) -> Response {
    let (slug, json) = match file.strip_suffix(".json") {
        Some(s) => (s.to_owned(), true),
        None => (file, false),
    };
    let page = match service::public_cached(&state, &slug).await {
        Ok(Some(p)) => p,
        Ok(None) => return not_found(),
        Err(e) => return e.into_response(),
    };
    let cache = [(header::CACHE_CONTROL, PUBLIC_MAX_AGE)];
    if json {
        return (cache, axum::Json(&*page)).into_response();
    }
    let groups: Vec<GroupLine> = page
        .groups
        .iter()
        .map(|g| GroupLine {
            name: g.name.clone(),
            apps: g
                .apps
                .iter()
                .map(|a| AppLine {
                    name: a.name.clone(),
                    status: a.status.clone(),
                    uptime: a
                        .uptime_percent
                        .map_or_else(|| "no data".into(), |p| format!("{p:.2} %")),
                    bars: a
                        .daily
                        .iter()
                        .map(|d| Bar {
                            class: bar_class(d.uptime_percent),
                            label: match d.uptime_percent {
                                Some(p) => format!("{} {p:.2}%", d.date),
                                None => format!("{} no data", d.date),
                            },
                        })
                        .collect(),
                })
                .collect(),
        })
        .collect();
    let days = groups
        .first()
        .and_then(|g| g.apps.first())
        .map_or(0, |a| a.bars.len());
    let html = PublicHtml {
        assets: &ASSETS,
        headline: headline(&page.status),
        page: &page,
        past: page
            .incidents
            .iter()
            .filter(|i| i.status == "resolved")
            .count(),
        groups,
        days,
    }
    .render();
    match render(html, StatusCode::OK) {
        Ok(mut r) => {
            r.headers_mut().insert(
                header::CACHE_CONTROL,
                header::HeaderValue::from_static(PUBLIC_MAX_AGE),
            );
            r
        }
        Err(e) => e.into_response(),
    }
}

/// `GET /status/<slug>/feed.atom` (public): Atom 1.0 of the page's incidents.
pub async fn feed(State(state): State<AppState>, Path(slug): Path<String>) -> Response {
    let at = now();
    let page = match service::public_cached(&state, &slug).await {
        Ok(Some(p)) => p,
        Ok(None) => return not_found(),
        Err(e) => return e.into_response(),
    };
    let page_url = format!("{}/status/{}", state.public_url, page.slug);
    let feed_url = format!("{page_url}/feed.atom");
    let entries: Vec<crate::rules::FeedEntry<'_>> = page
        .incidents
        .iter()
        .map(|i| crate::rules::FeedEntry {
            id: i.id,
            title: &i.title,
            status: &i.status,
            impact: &i.impact,
            updates: i
                .updates
                .iter()
                .map(|u| (u.status.as_str(), u.message.as_str(), u.at.clone()))
                .collect(),
            published: i.created_at.clone(),
            updated: i.updated_at.clone(),
        })
        .collect();
    let updated = page
        .incidents
        .iter()
        .map(|i| i.updated_at.clone())
        .max()
        .unwrap_or_else(|| trusthub_platform::state::rfc3339(at));
    let body = crate::rules::atom(&page.title, &page_url, &feed_url, &updated, &entries);
    (
        [
            (header::CONTENT_TYPE, "application/atom+xml; charset=utf-8"),
            (header::CACHE_CONTROL, PUBLIC_MAX_AGE),
        ],
        body,
    )
        .into_response()
}

struct PageRow {
    id: String,
    title: String,
    slug: String,
    url: String,
    apps: usize,
}

#[derive(Template)]
#[template(path = "status_pages.html")]
struct ListPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    csrf: String,
    flash: Flash,
    can_admin: bool,
    pages: Vec<PageRow>,
    apps: Vec<(String, String)>,
}

async fn list_page(state: &AppState, user: &WebUser, flash: Flash, code: StatusCode) -> PageResult {
    let tenant = user.principal.tenant();
    let pages = service::list(state, tenant).await?;
    let mut c = state.db.conn().await?;
    let mut apps: Vec<(String, String)> = trusthub_monitors::app_names(&mut c, tenant)
        .await?
        .into_iter()
        .map(|(id, name)| (id.to_string(), name))
        .collect();
    apps.sort_by(|a, b| a.1.cmp(&b.1));
    render(
        ListPage {
            assets: &ASSETS,
            user: Some(UserBar::from(user)),
            csrf: user.csrf.clone(),
            flash,
            can_admin: user.principal.has_role(Role::Admin),
            pages: pages
                .into_iter()
                .map(|p| PageRow {
                    id: p.id.to_string(),
                    apps: p.groups.iter().map(|g| g.app_ids.len()).sum(),
                    title: p.title,
                    slug: p.slug,
                    url: p.url,
                })
                .collect(),
            apps,
        }
        .render(),
        code,
    )
}

/// `GET /ui/status-pages`: the tenant's status pages; admins make one.
pub async fn list(State(state): State<AppState>, user: WebUser) -> PageResult {
    list_page(&state, &user, Flash::default(), StatusCode::OK).await
}

fn uuids(values: Vec<String>, field: &str) -> Result<Vec<Uuid>, ApiError> {
    values
        .iter()
        .map(|v| {
            Uuid::parse_str(v.trim())
                .map_err(|_| ApiError::invalid(field, "must be one of your apps"))
        })
        .collect()
}

/// `POST /ui/status-pages` (admin, CSRF token): a page with one group of the apps ticked.
pub async fn list_form(
    State(state): State<AppState>,
    meta: Meta,
    Act { user, form, .. }: Act<Admin, FormPairs>,
) -> PageResult {
    let f = form.only(&[
        "slug",
        "title",
        "description",
        "group",
        "app_id",
        "show_uptime_days",
    ])?;
    let made = async {
        let days = match f.get("show_uptime_days").as_str() {
            "" => None,
            d => Some(
                d.parse()
                    .map_err(|_| ApiError::invalid("show_uptime_days", "must be a whole number"))?,
            ),
        };
        let group = match f.get("group").as_str() {
            "" => "Services".to_owned(),
            g => g.to_owned(),
        };
        let req = NewStatusPage {
            slug: f.get("slug"),
            title: f.get("title"),
            description: Some(f.get("description")).filter(|d| !d.is_empty()),
            groups: vec![GroupBody {
                name: group,
                app_ids: uuids(f.all("app_id"), "app_id")?,
            }],
            show_uptime_days: days,
        };
        service::create(&state, &meta, &user.principal, req).await
    }
    .await;
    let (flash, code) = outcome(
        made,
        "Status page made: its public address is in the list.",
        StatusCode::CREATED,
    )?;
    list_page(&state, &user, flash, code).await
}

struct IncidentRow {
    id: String,
    title: String,
    status: String,
    impact: String,
    opened: String,
    open: bool,
    updates: Vec<(String, String, String, String)>,
}

#[derive(Template)]
#[template(path = "status_page.html")]
struct ShowPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    csrf: String,
    flash: Flash,
    can_admin: bool,
    can_operate: bool,
    id: String,
    title: String,
    url: String,
    groups: Vec<(String, Vec<String>)>,
    incidents: Vec<IncidentRow>,
    statuses: [&'static str; 4],
    impacts: [&'static str; 4],
}

async fn show_page(
    state: &AppState,
    user: &WebUser,
    id: Uuid,
    flash: Flash,
    code: StatusCode,
) -> PageResult {
    let tenant = user.principal.tenant();
    let page = service::get(state, tenant, id).await?;
    let incidents = service::incidents(state, tenant, id).await?;
    let mut c = state.db.conn().await?;
    let names = trusthub_monitors::app_names(&mut c, tenant).await?;
    let at = now();
    render(
        ShowPage {
            assets: &ASSETS,
            user: Some(UserBar::from(user)),
            csrf: user.csrf.clone(),
            flash,
            can_admin: user.principal.has_role(Role::Admin),
            can_operate: user.principal.has_role(Role::Operator),
            id: page.id.to_string(),
            title: page.title,
            url: page.url,
            groups: page
                .groups
                .into_iter()
                .map(|g| {
                    let apps = g
                        .app_ids
                        .iter()
                        .filter_map(|a| names.get(a).cloned())
                        .collect();
                    (g.name, apps)
                })
                .collect(),
            incidents: incidents
                .into_iter()
                .map(|i| IncidentRow {
                    id: i.id.to_string(),
                    open: i.resolved_at.is_none(),
                    opened: ago(Some(i.created_at), at),
                    title: i.title,
                    status: i.status,
                    impact: i.impact,
                    updates: i
                        .updates
                        .into_iter()
                        .map(|u| (u.status, u.message, ago(Some(u.at), at), u.created_by))
                        .collect(),
                })
                .collect(),
            statuses: crate::rules::INCIDENT_STATUSES,
            impacts: crate::rules::IMPACTS,
        }
        .render(),
        code,
    )
}

/// `GET /ui/status-pages/{id}`: a page's groups and incidents; operators tell incidents.
pub async fn show(
    State(state): State<AppState>,
    user: WebUser,
    Path(id): Path<Uuid>,
) -> PageResult {
    show_page(&state, &user, id, Flash::default(), StatusCode::OK).await
}

/// `POST /ui/status-pages/{id}` (CSRF token): `action` `incident` or `update` (operator),
/// `delete` (admin).
pub async fn show_form(
    State(state): State<AppState>,
    meta: Meta,
    Path(id): Path<Uuid>,
    Act { user, form, .. }: Act<Operator, FormPairs>,
) -> PageResult {
    let p = &user.principal;
    match form.get("action").as_str() {
        "incident" => {
            let f = form.only(&["action", "title", "status", "impact", "message"])?;
            let req = NewIncident {
                title: f.get("title"),
                status: f.get("status"),
                impact: f.get("impact"),
                message: f.get("message"),
            };
            let r = service::open(&state, &meta, p, id, req).await;
            let (flash, code) = outcome(
                r,
                "Incident opened; its page and feed show it.",
                StatusCode::CREATED,
            )?;
            show_page(&state, &user, id, flash, code).await
        }
        "update" => {
            let f = form.only(&["action", "incident_id", "status", "message", "impact"])?;
            let incident = Uuid::parse_str(&f.get("incident_id")).map_err(|_| {
                ApiError::invalid("incident_id", "must be an incident of this page")
            })?;
            let req = NewIncidentUpdate {
                status: f.get("status"),
                message: f.get("message"),
                impact: Some(f.get("impact")).filter(|i| !i.is_empty()),
            };
            let r = service::add_update(&state, &meta, p, incident, req).await;
            let (flash, code) = outcome(r, "Update posted.", StatusCode::CREATED)?;
            show_page(&state, &user, id, flash, code).await
        }
        "delete" => {
            form.only(&["action"])?;
            allowed(&user, Role::Admin)?;
            service::delete(&state, &meta, p, id).await?;
            list_page(
                &state,
                &user,
                Flash::notice("Status page deleted; its address answers 404."),
                StatusCode::OK,
            )
            .await
        }
        _ => Err(ApiError::invalid(
            "action",
            "must be incident, update or delete",
        )),
    }
}
