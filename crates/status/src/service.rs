//! The status services, for the API and the dashboard alike: pages (admin), incidents and
//! their updates (operator), and the public view of a page.

use crate::error::{ApiError, ApiResult, FieldError, all_valid};
use crate::rules;
use crate::state::{AppState, now, rfc3339};
use crate::store::{self, Group, Incident, Page, Update};
use serde::{Deserialize, Serialize};
use serde_json::json;
use sqlx::types::Json;
use std::collections::HashMap;
use time::OffsetDateTime;
use trusthub_alerts::alerting::{INCIDENT_CREATED, INCIDENT_UPDATED, Notifier};
use trusthub_core::alerting::Severity;
use trusthub_store::TenantId;
use utoipa::ToSchema;
use uuid::Uuid;

/// A group of apps on a page.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupBody {
    /// Its heading, 1 to 100 characters.
    #[schema(min_length = 1, max_length = 100)]
    pub name: String,
    /// The tenant's apps it shows, in order (1 to 100).
    #[schema(min_items = 1, max_items = 100)]
    pub app_ids: Vec<Uuid>,
}

/// A new status page.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewStatusPage {
    /// Its public address: `/status/<slug>` (3 to 64 of `a-z 0-9 -`; unique on the hub).
    #[schema(pattern = "^[a-z0-9][a-z0-9-]{1,62}[a-z0-9]$")]
    pub slug: String,
    /// Title, 1 to 100 characters.
    #[schema(min_length = 1, max_length = 100)]
    pub title: String,
    /// A line under the title, at most 500 characters.
    #[schema(max_length = 500)]
    pub description: Option<String>,
    /// Groups of apps (1 to 20).
    #[schema(min_items = 1, max_items = 20)]
    pub groups: Vec<GroupBody>,
    /// Days of daily uptime shown, 1 to 90 (default 90).
    #[schema(minimum = 1, maximum = 90)]
    pub show_uptime_days: Option<i64>,
}

/// A change of a page: only the fields sent (`description: null` clears it).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusPagePatch {
    /// New slug (the old address stops answering).
    #[schema(pattern = "^[a-z0-9][a-z0-9-]{1,62}[a-z0-9]$")]
    pub slug: Option<String>,
    /// New title.
    #[schema(min_length = 1, max_length = 100)]
    pub title: Option<String>,
    /// New description; null clears it.
    #[serde(default, deserialize_with = "trusthub_platform::extract::present")]
    #[schema(value_type = Option<String>, max_length = 500)]
    pub description: Option<Option<String>>,
    /// New groups.
    #[schema(min_items = 1, max_items = 20)]
    pub groups: Option<Vec<GroupBody>>,
    /// New number of days.
    #[schema(minimum = 1, maximum = 90)]
    pub show_uptime_days: Option<i64>,
}

/// A status page as its admins see it.
#[derive(Debug, Serialize, ToSchema)]
pub struct StatusPageView {
    /// Id.
    pub id: Uuid,
    /// Slug.
    pub slug: String,
    /// Title.
    pub title: String,
    /// Description.
    pub description: Option<String>,
    /// Groups.
    pub groups: Vec<GroupBody>,
    /// Days of uptime shown.
    pub show_uptime_days: i64,
    /// The public page (`.json` and `/feed.atom` beside it).
    pub url: String,
    /// Created.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
    /// Changed.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: OffsetDateTime,
}

fn view(state: &AppState, p: Page) -> StatusPageView {
    StatusPageView {
        id: p.id,
        url: format!("{}/status/{}", state.public_url, p.slug),
        slug: p.slug,
        title: p.title,
        description: p.description,
        groups: p
            .groups
            .0
            .into_iter()
            .map(|g| GroupBody {
                name: g.name,
                app_ids: g.app_ids,
            })
            .collect(),
        show_uptime_days: p.show_uptime_days,
        created_at: p.created_at,
        updated_at: p.updated_at,
    }
}

fn field(errors: &mut Vec<FieldError>, f: impl Into<String>, m: impl Into<String>) {
    errors.push(FieldError::new(f, m));
}

/// Checks groups against the tenant's apps.
fn groups(
    list: &[GroupBody],
    apps: &HashMap<Uuid, String>,
    errors: &mut Vec<FieldError>,
) -> Vec<Group> {
    if list.is_empty() || list.len() > rules::MAX_GROUPS {
        field(
            errors,
            "groups",
            format!("must hold 1 to {} groups", rules::MAX_GROUPS),
        );
    }
    let mut out = Vec::new();
    for (i, g) in list.iter().enumerate() {
        let name = rules::text(&g.name, 100)
            .map_err(|m| field(errors, format!("groups[{i}].name"), m))
            .unwrap_or_default();
        if g.app_ids.is_empty() || g.app_ids.len() > rules::MAX_APPS_PER_GROUP {
            field(
                errors,
                format!("groups[{i}].app_ids"),
                format!("must name 1 to {} apps", rules::MAX_APPS_PER_GROUP),
            );
        }
        let mut ids = Vec::new();
        for (j, id) in g.app_ids.iter().enumerate() {
            if !apps.contains_key(id) {
                field(
                    errors,
                    format!("groups[{i}].app_ids[{j}]"),
                    "is not an app of your tenant",
                );
            } else if !ids.contains(id) {
                ids.push(*id);
            }
        }
        out.push(Group { name, app_ids: ids });
    }
    out
}

fn days(v: Option<i64>, errors: &mut Vec<FieldError>) -> i64 {
    match v {
        None => rules::MAX_DAYS,
        Some(d) if (1..=rules::MAX_DAYS).contains(&d) => d,
        Some(_) => {
            field(
                errors,
                "show_uptime_days",
                format!("must be 1 to {}", rules::MAX_DAYS),
            );
            rules::MAX_DAYS
        }
    }
}

async fn app_names(state: &AppState, tenant: TenantId) -> ApiResult<HashMap<Uuid, String>> {
    let mut c = state.db.conn().await?;
    Ok(trusthub_monitors::app_names(&mut c, tenant).await?)
}

/// Makes a page (admin), audited.
pub async fn create(
    state: &AppState,
    meta: &crate::extract::Meta,
    p: &trusthub_identity::auth::Principal,
    req: NewStatusPage,
) -> ApiResult<StatusPageView> {
    let mut errors = Vec::new();
    let slug = req.slug.trim().to_owned();
    if let Err(m) = rules::slug(&slug) {
        field(&mut errors, "slug", m);
    }
    let title = rules::text(&req.title, 100)
        .map_err(|m| field(&mut errors, "title", m))
        .unwrap_or_default();
    let description = match req.description.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(d) => rules::text(d, 500)
            .map_err(|m| field(&mut errors, "description", m))
            .ok(),
    };
    let apps = app_names(state, p.tenant()).await?;
    let groups = groups(&req.groups, &apps, &mut errors);
    let show_uptime_days = days(req.show_uptime_days, &mut errors);
    all_valid(errors)?;
    let at = now();
    let page = Page {
        id: Uuid::now_v7(),
        tenant_id: p.tenant().0,
        slug,
        title,
        description,
        groups: Json(groups),
        show_uptime_days,
        created_at: at,
        updated_at: at,
    };
    save(state, meta, p, page, true).await
}

/// Stores a page made (`new`) or changed (a slug another page has is 409), audited; the
/// public views are forgotten.
async fn save(
    state: &AppState,
    meta: &crate::extract::Meta,
    p: &trusthub_identity::auth::Principal,
    page: Page,
    new: bool,
) -> ApiResult<StatusPageView> {
    let mut tx = state.db.begin().await?;
    let (stored, action) = if new {
        let stored = store::insert_page(&mut tx, &page).await?;
        (stored, trusthub_core::audit::STATUS_PAGE_CREATED)
    } else {
        let stored = store::update_page(&mut tx, &page).await?;
        (stored, trusthub_core::audit::STATUS_PAGE_UPDATED)
    };
    if !stored {
        return Err(ApiError::Conflict(format!(
            "the slug `{}` is taken",
            page.slug
        )));
    }
    meta.record(
        &mut tx,
        p,
        action,
        format!("status_page:{}", page.id),
        json!({"slug": page.slug, "title": page.title}),
    )
    .await?;
    tx.commit().await?;
    state.part::<PublicCache>().clear();
    Ok(view(state, page))
}

/// The tenant's pages.
pub async fn list(state: &AppState, tenant: TenantId) -> ApiResult<Vec<StatusPageView>> {
    let mut c = state.db.conn().await?;
    Ok(store::pages(&mut c, tenant)
        .await?
        .into_iter()
        .map(|p| view(state, p))
        .collect())
}

/// One page of the tenant.
pub async fn get(state: &AppState, tenant: TenantId, id: Uuid) -> ApiResult<StatusPageView> {
    let mut c = state.db.conn().await?;
    let p = store::page(&mut c, tenant, id)
        .await?
        .ok_or(ApiError::NotFound("status page"))?;
    Ok(view(state, p))
}

/// Changes a page (admin), audited.
pub async fn update(
    state: &AppState,
    meta: &crate::extract::Meta,
    p: &trusthub_identity::auth::Principal,
    id: Uuid,
    req: StatusPagePatch,
) -> ApiResult<StatusPageView> {
    let mut c = state.db.conn().await?;
    let mut page = store::page(&mut c, p.tenant(), id)
        .await?
        .ok_or(ApiError::NotFound("status page"))?;
    drop(c);
    let mut errors = Vec::new();
    if let Some(s) = &req.slug {
        let s = s.trim();
        match rules::slug(s) {
            Ok(()) => page.slug = s.to_owned(),
            Err(m) => field(&mut errors, "slug", m),
        }
    }
    if let Some(t) = &req.title {
        match rules::text(t, 100) {
            Ok(t) => page.title = t,
            Err(m) => field(&mut errors, "title", m),
        }
    }
    match &req.description {
        None => {}
        Some(None) => page.description = None,
        Some(Some(d)) if d.trim().is_empty() => page.description = None,
        Some(Some(d)) => match rules::text(d, 500) {
            Ok(d) => page.description = Some(d),
            Err(m) => field(&mut errors, "description", m),
        },
    }
    if let Some(g) = &req.groups {
        let apps = app_names(state, p.tenant()).await?;
        page.groups = Json(groups(g, &apps, &mut errors));
    }
    if req.show_uptime_days.is_some() {
        page.show_uptime_days = days(req.show_uptime_days, &mut errors);
    }
    all_valid(errors)?;
    page.updated_at = now();
    save(state, meta, p, page, false).await
}

/// Deletes a page and its incidents (admin), audited.
pub async fn delete(
    state: &AppState,
    meta: &crate::extract::Meta,
    p: &trusthub_identity::auth::Principal,
    id: Uuid,
) -> ApiResult<()> {
    let mut tx = state.db.begin().await?;
    let page = store::page(&mut tx, p.tenant(), id)
        .await?
        .ok_or(ApiError::NotFound("status page"))?;
    store::delete_page(&mut tx, p.tenant(), id).await?;
    meta.record(
        &mut tx,
        p,
        trusthub_core::audit::STATUS_PAGE_DELETED,
        format!("status_page:{id}"),
        json!({"slug": page.slug}),
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// A new incident.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewIncident {
    /// Title, 1 to 200 characters.
    #[schema(min_length = 1, max_length = 200)]
    pub title: String,
    /// `investigating`, `identified`, `monitoring` or `resolved`.
    #[schema(pattern = "^(investigating|identified|monitoring|resolved)$")]
    pub status: String,
    /// `none`, `minor`, `major` or `critical`.
    #[schema(pattern = "^(none|minor|major|critical)$")]
    pub impact: String,
    /// The first update's text, 1 to 5000 characters.
    #[schema(min_length = 1, max_length = 5000)]
    pub message: String,
}

/// An update of an incident.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewIncidentUpdate {
    /// The status now.
    #[schema(pattern = "^(investigating|identified|monitoring|resolved)$")]
    pub status: String,
    /// What changed, 1 to 5000 characters.
    #[schema(min_length = 1, max_length = 5000)]
    pub message: String,
    /// A new impact, when it changed.
    #[schema(pattern = "^(none|minor|major|critical)$")]
    pub impact: Option<String>,
}

/// One update as its team sees it.
#[derive(Debug, Serialize, ToSchema)]
pub struct UpdateView {
    /// The status it set.
    pub status: String,
    /// What it said.
    pub message: String,
    /// Who wrote it.
    pub created_by: String,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub at: OffsetDateTime,
}

/// An incident as its team sees it.
#[derive(Debug, Serialize, ToSchema)]
pub struct IncidentView {
    /// Id.
    pub id: Uuid,
    /// Its status page.
    pub status_page_id: Uuid,
    /// Title.
    pub title: String,
    /// The latest status.
    pub status: String,
    /// Impact.
    pub impact: String,
    /// Opened.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
    /// Last update.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: OffsetDateTime,
    /// When it was resolved.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub resolved_at: Option<OffsetDateTime>,
    /// Its updates, newest first.
    pub updates: Vec<UpdateView>,
}

fn status_of(v: &str, errors: &mut Vec<FieldError>) -> String {
    if !rules::INCIDENT_STATUSES.contains(&v) {
        field(
            errors,
            "status",
            "must be investigating, identified, monitoring or resolved",
        );
    }
    v.to_owned()
}

fn impact_of(v: &str, errors: &mut Vec<FieldError>) -> String {
    if !rules::IMPACTS.contains(&v) {
        field(errors, "impact", "must be none, minor, major or critical");
    }
    v.to_owned()
}

fn severity(impact: &str) -> Severity {
    match impact {
        "major" | "critical" => Severity::Critical,
        "minor" => Severity::Warning,
        _ => Severity::Info,
    }
}

/// Tells the subscribed webhooks and channels about an incident (its latest update).
async fn notify(
    state: &AppState,
    tx: &mut trusthub_store::Tx,
    page: &Page,
    i: &Incident,
    message: &str,
    event: &str,
) -> ApiResult<()> {
    let url = format!("{}/status/{}", state.public_url, page.slug);
    let body = json!({
        "event": event,
        "tenant_id": page.tenant_id,
        "link": url,
        "incident": {
            "id": i.id, "title": i.title, "status": i.status, "impact": i.impact,
            "message": message, "created_at": rfc3339(i.created_at), "updated_at": rfc3339(i.updated_at),
            "page": {"id": page.id, "slug": page.slug, "title": page.title, "url": url},
        },
    });
    Notifier::default()
        .enqueue_notice(
            tx,
            TenantId(page.tenant_id),
            event,
            &body,
            severity(&i.impact),
            i.updated_at,
        )
        .await?;
    Ok(())
}

/// The tail of opening or updating an incident, in `tx`: its update stored, audited, told
/// to the subscribers, committed; the public views forgotten; the incident as it is now.
#[allow(clippy::too_many_arguments)]
async fn post_update(
    state: &AppState,
    meta: &crate::extract::Meta,
    p: &trusthub_identity::auth::Principal,
    mut tx: trusthub_store::Tx,
    page: &Page,
    i: &Incident,
    message: String,
    (action, event, detail): (&str, &str, serde_json::Value),
) -> ApiResult<IncidentView> {
    store::insert_update(
        &mut tx,
        &Update {
            id: Uuid::now_v7(),
            incident_id: i.id,
            status: i.status.clone(),
            message: message.clone(),
            created_by: p.user.email.clone(),
            created_at: i.updated_at,
        },
    )
    .await?;
    meta.record(&mut tx, p, action, format!("incident:{}", i.id), detail)
        .await?;
    notify(state, &mut tx, page, i, &message, event).await?;
    tx.commit().await?;
    state.part::<PublicCache>().clear();
    incident(state, p.tenant(), i.id).await
}

/// Opens an incident on a page (operator): its first update, audited, and
/// `incident.created` to those subscribed.
pub async fn open(
    state: &AppState,
    meta: &crate::extract::Meta,
    p: &trusthub_identity::auth::Principal,
    page_id: Uuid,
    req: NewIncident,
) -> ApiResult<IncidentView> {
    let mut errors = Vec::new();
    let title = rules::text(&req.title, 200)
        .map_err(|m| field(&mut errors, "title", m))
        .unwrap_or_default();
    let status = status_of(req.status.trim(), &mut errors);
    let impact = impact_of(req.impact.trim(), &mut errors);
    let message = rules::text(&req.message, 5000)
        .map_err(|m| field(&mut errors, "message", m))
        .unwrap_or_default();
    let mut tx = state.db.begin().await?;
    let page = store::page(&mut tx, p.tenant(), page_id)
        .await?
        .ok_or(ApiError::NotFound("status page"))?;
    all_valid(errors)?;
    let at = now();
    let i = Incident {
        id: Uuid::now_v7(),
        tenant_id: p.tenant().0,
        page_id,
        title,
        resolved_at: (status == "resolved").then_some(at),
        status,
        impact,
        created_at: at,
        updated_at: at,
    };
    store::insert_incident(&mut tx, &i).await?;
    let detail = json!({"status_page": page.slug, "title": i.title, "impact": i.impact});
    let audit = (
        trusthub_core::audit::INCIDENT_CREATED,
        INCIDENT_CREATED,
        detail,
    );
    post_update(state, meta, p, tx, &page, &i, message, audit).await
}

/// Adds an update to an incident (operator): its status (and impact) now, audited, and
/// `incident.updated` to those subscribed.
pub async fn add_update(
    state: &AppState,
    meta: &crate::extract::Meta,
    p: &trusthub_identity::auth::Principal,
    id: Uuid,
    req: NewIncidentUpdate,
) -> ApiResult<IncidentView> {
    let mut errors = Vec::new();
    let status = status_of(req.status.trim(), &mut errors);
    let impact = req
        .impact
        .as_deref()
        .map(|i| impact_of(i.trim(), &mut errors));
    let message = rules::text(&req.message, 5000)
        .map_err(|m| field(&mut errors, "message", m))
        .unwrap_or_default();
    let mut tx = state.db.begin().await?;
    let mut i = store::incident(&mut tx, p.tenant(), id)
        .await?
        .ok_or(ApiError::NotFound("incident"))?;
    all_valid(errors)?;
    let page = store::page(&mut tx, p.tenant(), i.page_id)
        .await?
        .ok_or(ApiError::NotFound("incident"))?;
    let at = now().max(i.updated_at);
    i.resolved_at = match (status.as_str(), i.resolved_at) {
        ("resolved", Some(r)) => Some(r),
        ("resolved", None) => Some(at),
        _ => None,
    };
    i.status = status;
    if let Some(im) = impact {
        i.impact = im;
    }
    i.updated_at = at;
    store::set_incident(&mut tx, &i).await?;
    let detail = json!({"status": i.status, "impact": i.impact});
    let audit = (
        trusthub_core::audit::INCIDENT_UPDATED,
        INCIDENT_UPDATED,
        detail,
    );
    post_update(state, meta, p, tx, &page, &i, message, audit).await
}

/// One incident of the tenant with its updates.
pub async fn incident(state: &AppState, tenant: TenantId, id: Uuid) -> ApiResult<IncidentView> {
    let mut c = state.db.conn().await?;
    let i = store::incident(&mut c, tenant, id)
        .await?
        .ok_or(ApiError::NotFound("incident"))?;
    let updates = store::updates_of(&mut c, &[i.id]).await?;
    Ok(incident_view(i, updates))
}

fn incident_view(i: Incident, updates: Vec<Update>) -> IncidentView {
    IncidentView {
        id: i.id,
        status_page_id: i.page_id,
        title: i.title,
        status: i.status,
        impact: i.impact,
        created_at: i.created_at,
        updated_at: i.updated_at,
        resolved_at: i.resolved_at,
        updates: updates
            .into_iter()
            .map(|u| UpdateView {
                status: u.status,
                message: u.message,
                created_by: u.created_by,
                at: u.created_at,
            })
            .collect(),
    }
}

/// A page's incidents open or resolved within its days, newest first (its team's view).
pub async fn incidents(
    state: &AppState,
    tenant: TenantId,
    page_id: Uuid,
) -> ApiResult<Vec<IncidentView>> {
    let mut c = state.db.conn().await?;
    let page = store::page(&mut c, tenant, page_id)
        .await?
        .ok_or(ApiError::NotFound("status page"))?;
    let since = now() - time::Duration::days(page.show_uptime_days);
    let list = store::incidents_of_page(&mut c, page.id, since).await?;
    let ids: Vec<Uuid> = list.iter().map(|i| i.id).collect();
    let mut updates: HashMap<Uuid, Vec<Update>> = HashMap::new();
    for u in store::updates_of(&mut c, &ids).await? {
        updates.entry(u.incident_id).or_default().push(u);
    }
    Ok(list
        .into_iter()
        .map(|i| {
            let u = updates.remove(&i.id).unwrap_or_default();
            incident_view(i, u)
        })
        .collect())
}

/// An app on the public page: its name, state and uptime only.
#[derive(Debug, Serialize, ToSchema)]
pub struct PublicApp {
    /// Its name.
    pub name: String,
    /// `up`, `degraded`, `down`, `maintenance` or `unknown`.
    pub status: String,
    /// Uptime over the page's days, percent (null: nothing observed).
    pub uptime_percent: Option<f64>,
    /// Each day's uptime, oldest first.
    pub daily: Vec<rules::DayUptime>,
}

/// A group on the public page.
#[derive(Debug, Serialize, ToSchema)]
pub struct PublicGroup {
    /// Heading.
    pub name: String,
    /// Its apps.
    pub apps: Vec<PublicApp>,
}

/// An update on the public page.
#[derive(Debug, Serialize, ToSchema)]
pub struct PublicUpdate {
    /// Status it set.
    pub status: String,
    /// What it said.
    pub message: String,
    /// When (RFC 3339).
    pub at: String,
    /// When, for people (`6 Dec 2026 02:16 UTC`).
    #[serde(skip)]
    pub shown_at: String,
}

/// `t` for people on a public page: `6 Dec 2026 02:16 UTC`.
pub fn shown(t: OffsetDateTime) -> String {
    let f = time::macros::format_description!(
        "[day padding:none] [month repr:short] [year] [hour]:[minute] UTC"
    );
    t.to_offset(time::UtcOffset::UTC)
        .format(&f)
        .unwrap_or_default()
}

/// An incident on the public page.
#[derive(Debug, Serialize, ToSchema)]
pub struct PublicIncident {
    /// Id.
    pub id: Uuid,
    /// Title.
    pub title: String,
    /// Status.
    pub status: String,
    /// Impact.
    pub impact: String,
    /// Updates, newest first.
    pub updates: Vec<PublicUpdate>,
    /// Opened (RFC 3339).
    #[serde(skip)]
    pub created_at: String,
    /// Last update (RFC 3339).
    #[serde(skip)]
    pub updated_at: String,
}

/// Scheduled maintenance on the public page.
#[derive(Debug, Serialize, ToSchema)]
pub struct PublicMaintenance {
    /// What is maintained (its apps' names).
    pub title: String,
    /// Start.
    pub starts_at: String,
    /// End.
    pub ends_at: String,
    /// The span, for people.
    #[serde(skip)]
    pub shown: String,
}

/// A status page as the public sees it (CONTRACT 32): names, states, uptime and incidents,
/// never hosts, addresses, errors or internal ids.
#[derive(Debug, Serialize, ToSchema)]
pub struct PublicPage {
    /// Title.
    pub title: String,
    /// Description.
    pub description: Option<String>,
    /// `operational`, `degraded`, `partial_outage`, `major_outage` or `maintenance`.
    pub status: String,
    /// Groups of apps.
    pub groups: Vec<PublicGroup>,
    /// Incidents open or resolved within the page's days, newest first.
    pub incidents: Vec<PublicIncident>,
    /// Maintenance under way or to come, soonest first.
    pub maintenance: Vec<PublicMaintenance>,
    /// Slug (for links).
    #[serde(skip)]
    pub slug: String,
}

/// How long a public view is served from memory: a page read by many during an outage is
/// computed once every few seconds, not once per reader.
pub const PUBLIC_CACHE_SECS: u64 = 5;

/// Public views computed in the last [`PUBLIC_CACHE_SECS`], by slug (a part of the state).
/// A change of a page or of its incidents through this process forgets them at once.
#[derive(Debug, Default)]
pub struct PublicCache(
    std::sync::Mutex<HashMap<String, (std::time::Instant, std::sync::Arc<PublicPage>)>>,
);

impl PublicCache {
    /// Forgets every view.
    pub fn clear(&self) {
        if let Ok(mut m) = self.0.lock() {
            m.clear();
        }
    }
}

/// The public view of the page at `slug`, from memory when computed in the last seconds.
pub async fn public_cached(
    state: &AppState,
    slug: &str,
) -> ApiResult<Option<std::sync::Arc<PublicPage>>> {
    let cache = state.part::<PublicCache>();
    let fresh = std::time::Duration::from_secs(PUBLIC_CACHE_SECS);
    if let Ok(m) = cache.0.lock()
        && let Some((at, page)) = m.get(slug)
        && at.elapsed() < fresh
    {
        return Ok(Some(page.clone()));
    }
    let Some(page) = public(state, slug, now()).await?.map(std::sync::Arc::new) else {
        return Ok(None);
    };
    if let Ok(mut m) = cache.0.lock() {
        m.retain(|_, (at, _)| at.elapsed() < fresh);
        m.insert(slug.to_owned(), (std::time::Instant::now(), page.clone()));
    }
    Ok(Some(page))
}

/// The public view of the page at `slug` (`None`: no such page).
pub async fn public(
    state: &AppState,
    slug: &str,
    at: OffsetDateTime,
) -> ApiResult<Option<PublicPage>> {
    let mut c = state.db.conn().await?;
    let Some(page) = store::page_by_slug(&mut c, slug).await? else {
        return Ok(None);
    };
    let tenant = TenantId(page.tenant_id);
    let days = page.show_uptime_days.clamp(1, rules::MAX_DAYS);
    let since = at - time::Duration::days(days + 1);
    let apps: HashMap<Uuid, trusthub_monitors::App> = trusthub_monitors::apps(&mut c, tenant, None)
        .await?
        .into_iter()
        .map(|a| (a.id, a))
        .collect();
    let wanted: std::collections::HashSet<Uuid> = page
        .groups
        .0
        .iter()
        .flat_map(|g| g.app_ids.iter().copied())
        .collect();
    // Only the page's apps' spans, packed (a page of 50 apps reads 90 days of each).
    let listed: Vec<Uuid> = wanted.iter().copied().collect();
    let mut spans: HashMap<Uuid, Vec<trusthub_slo::objective::Span>> =
        trusthub_monitors::timeline::spans_of_apps(&mut c, &listed, since)
            .await?
            .into_iter()
            .map(|(id, v)| {
                (
                    id,
                    v.into_iter()
                        .map(|(a, b, d)| rules::span(a, b, d))
                        .collect(),
                )
            })
            .collect();
    let windows = trusthub_monitors::timeline::maintenance_of_tenant(&mut c, tenant, since).await?;
    let mut maint: HashMap<Uuid, Vec<(i64, i64)>> = HashMap::new();
    for w in &windows {
        if wanted.contains(&w.app_id) {
            maint
                .entry(w.app_id)
                .or_default()
                .push((w.starts_at.unix_timestamp(), w.ends_at.unix_timestamp()));
        }
    }
    let now_s = at.unix_timestamp();
    let mut states = Vec::new();
    let groups = page
        .groups
        .0
        .iter()
        .map(|g| PublicGroup {
            name: g.name.clone(),
            apps: g
                .app_ids
                .iter()
                .filter_map(|id| apps.get(id))
                .map(|a| {
                    let mut s = spans.remove(&a.id).unwrap_or_default();
                    s.sort_by_key(|x| (x.start, x.end));
                    let m = maint.get(&a.id).cloned().unwrap_or_default();
                    let in_maint = m.iter().any(|(b, e)| *b <= now_s && now_s < *e);
                    let failing = a.consecutive_failures > 0;
                    let status = rules::app_status(
                        a.observed_state.as_deref(),
                        &a.expected_state,
                        failing,
                        in_maint,
                    );
                    states.push(status);
                    let (daily, uptime_percent) = rules::daily(&s, &m, now_s, days);
                    PublicApp {
                        name: a.name.clone(),
                        status: status.into(),
                        uptime_percent,
                        daily,
                    }
                })
                .collect(),
        })
        .collect();
    let list = store::incidents_of_page(&mut c, page.id, at - time::Duration::days(days)).await?;
    let ids: Vec<Uuid> = list.iter().map(|i| i.id).collect();
    let mut updates: HashMap<Uuid, Vec<Update>> = HashMap::new();
    for u in store::updates_of(&mut c, &ids).await? {
        updates.entry(u.incident_id).or_default().push(u);
    }
    let open: Vec<&str> = list
        .iter()
        .filter(|i| i.resolved_at.is_none())
        .map(|i| i.impact.as_str())
        .collect();
    let status = rules::overall(&states, &open).to_owned();
    let incidents = list
        .iter()
        .map(|i| PublicIncident {
            id: i.id,
            title: i.title.clone(),
            status: i.status.clone(),
            impact: i.impact.clone(),
            created_at: rfc3339(i.created_at),
            updated_at: rfc3339(i.updated_at),
            updates: updates
                .remove(&i.id)
                .unwrap_or_default()
                .into_iter()
                .map(|u| PublicUpdate {
                    status: u.status,
                    message: u.message,
                    at: rfc3339(u.created_at),
                    shown_at: shown(u.created_at),
                })
                .collect(),
        })
        .collect();
    // Maintenance under way or to come: one line per span of time, naming its apps.
    let mut by_span: std::collections::BTreeMap<(OffsetDateTime, OffsetDateTime), Vec<String>> =
        Default::default();
    for w in windows
        .iter()
        .filter(|w| w.ends_at > at && wanted.contains(&w.app_id))
    {
        if let Some(a) = apps.get(&w.app_id) {
            let names = by_span.entry((w.starts_at, w.ends_at)).or_default();
            if !names.contains(&a.name) {
                names.push(a.name.clone());
            }
        }
    }
    let maintenance = by_span
        .into_iter()
        .map(|((s, e), names)| PublicMaintenance {
            title: format!("Maintenance: {}", names.join(", ")),
            starts_at: rfc3339(s),
            ends_at: rfc3339(e),
            shown: format!("{} to {}", shown(s), shown(e)),
        })
        .collect();
    Ok(Some(PublicPage {
        title: page.title,
        description: page.description,
        status,
        groups,
        incidents,
        maintenance,
        slug: page.slug,
    }))
}
