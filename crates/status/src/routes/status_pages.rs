//! Status pages (admin) and incidents (operator) under `/api/v1` (CONTRACT 32). The public
//! pages themselves are at `//status/<slug>` (HTML), `.json` and `/feed.atom` ([`crate::web`]).

use crate::error::{ApiResult, Problem};
use crate::extract::{Json, Meta, Path};
use crate::openapi::api_routes;
use crate::service::{
    self, IncidentView, NewIncident, NewIncidentUpdate, NewStatusPage, StatusPagePatch,
    StatusPageView,
};
use crate::state::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use trusthub_identity::auth::{Admin, Operator, Viewer};
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(api_routes!(list, create))
        .routes(api_routes!(get_page, update, delete))
        .routes(api_routes!(incidents, open_incident))
        .routes(api_routes!(get_incident))
        .routes(api_routes!(add_update))
}

/// The tenant's status pages.
#[utoipa::path(get, path = "/status-pages", tag = "status pages",
    responses((status = 200, body = Vec<StatusPageView>)))]
pub(crate) async fn list(
    State(state): State<AppState>,
    Viewer(p): Viewer,
) -> ApiResult<axum::Json<Vec<StatusPageView>>> {
    service::list(&state, p.tenant()).await.map(axum::Json)
}

/// Make a status page (admin): groups of the tenant's apps, public at `//status/<slug>`
/// (HTML without scripts, readable on a phone), `//status/<slug>.json` and
/// `//status/<slug>/feed.atom` (Atom 1.0 of its incidents). The public page shows each
/// app's name, state (`up`, `degraded`, `down`, `maintenance`, `unknown`) and daily uptime
/// over `show_uptime_days`, the incidents, and maintenance from the apps' windows — never
/// a host, an address, a probe's error or an internal id. The page's status is the worst
/// of its apps' (all down: `major_outage`, some: `partial_outage`, failing: `degraded`,
/// in a window: `maintenance`) and its open incidents' impact (critical, major, minor).
///
/// Beyond the schema: `slug` must be free on the hub (409); each of `app_ids` must be an app of your tenant.
#[utoipa::path(post, path = "/status-pages", tag = "status pages", request_body = NewStatusPage,
    responses((status = 201, body = StatusPageView), (status = 409, body = Problem), (status = 422, body = Problem)))]
pub(crate) async fn create(
    State(state): State<AppState>,
    meta: Meta,
    Admin(p): Admin,
    Json(req): Json<NewStatusPage>,
) -> ApiResult<(StatusCode, axum::Json<StatusPageView>)> {
    service::create(&state, &meta, &p, req)
        .await
        .map(|v| (StatusCode::CREATED, axum::Json(v)))
}

/// One status page.
#[utoipa::path(get, path = "/status-pages/{id}", tag = "status pages",
    params(("id" = Uuid, Path, description = "Status page id")),
    responses((status = 200, body = StatusPageView), (status = 404, body = Problem)))]
pub(crate) async fn get_page(
    State(state): State<AppState>,
    Viewer(p): Viewer,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<StatusPageView>> {
    service::get(&state, p.tenant(), id).await.map(axum::Json)
}

/// Change a status page (admin): only the fields sent. A new slug moves its public
/// address (the old one answers 404).
///
/// Beyond the schema: a new `slug` must be free on the hub (409); each of `app_ids` must be an app of your tenant.
#[utoipa::path(patch, path = "/status-pages/{id}", tag = "status pages",
    params(("id" = Uuid, Path, description = "Status page id")), request_body = StatusPagePatch,
    responses((status = 200, body = StatusPageView), (status = 404, body = Problem), (status = 409, body = Problem), (status = 422, body = Problem)))]
pub(crate) async fn update(
    State(state): State<AppState>,
    meta: Meta,
    Admin(p): Admin,
    Path(id): Path<Uuid>,
    Json(req): Json<StatusPagePatch>,
) -> ApiResult<axum::Json<StatusPageView>> {
    service::update(&state, &meta, &p, id, req)
        .await
        .map(axum::Json)
}

/// Delete a status page and its incidents (admin); its public address answers 404.
#[utoipa::path(delete, path = "/status-pages/{id}", tag = "status pages",
    params(("id" = Uuid, Path, description = "Status page id")),
    responses((status = 204, description = "Deleted"), (status = 404, body = Problem)))]
pub(crate) async fn delete(
    State(state): State<AppState>,
    meta: Meta,
    Admin(p): Admin,
    Path(id): Path<Uuid>,
) -> ApiResult<StatusCode> {
    service::delete(&state, &meta, &p, id)
        .await
        .map(|()| StatusCode::NO_CONTENT)
}

/// A page's incidents, open or resolved within its days, newest first, with their updates
/// and who wrote them.
#[utoipa::path(get, path = "/status-pages/{id}/incidents", tag = "status pages",
    params(("id" = Uuid, Path, description = "Status page id")),
    responses((status = 200, body = Vec<IncidentView>), (status = 404, body = Problem)))]
pub(crate) async fn incidents(
    State(state): State<AppState>,
    Viewer(p): Viewer,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<Vec<IncidentView>>> {
    service::incidents(&state, p.tenant(), id)
        .await
        .map(axum::Json)
}

/// Open an incident on a page (operator), with its first update; `incident.created` goes
/// to the webhooks and notification channels subscribed to it (impact `none` ranks as
/// info, `minor` as warning, `major` and `critical` as critical for their `min_severity`).
#[utoipa::path(post, path = "/status-pages/{id}/incidents", tag = "status pages",
    params(("id" = Uuid, Path, description = "Status page id")), request_body = NewIncident,
    responses((status = 201, body = IncidentView), (status = 404, body = Problem), (status = 422, body = Problem)))]
pub(crate) async fn open_incident(
    State(state): State<AppState>,
    meta: Meta,
    Operator(p): Operator,
    Path(id): Path<Uuid>,
    Json(req): Json<NewIncident>,
) -> ApiResult<(StatusCode, axum::Json<IncidentView>)> {
    service::open(&state, &meta, &p, id, req)
        .await
        .map(|v| (StatusCode::CREATED, axum::Json(v)))
}

/// One incident with its updates.
#[utoipa::path(get, path = "/incidents/{id}", tag = "status pages",
    params(("id" = Uuid, Path, description = "Incident id")),
    responses((status = 200, body = IncidentView), (status = 404, body = Problem)))]
pub(crate) async fn get_incident(
    State(state): State<AppState>,
    Viewer(p): Viewer,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<IncidentView>> {
    service::incident(&state, p.tenant(), id)
        .await
        .map(axum::Json)
}

/// Add an update to an incident (operator): its status now (`resolved` closes it) and,
/// when it changed, its impact; `incident.updated` goes to those subscribed.
#[utoipa::path(post, path = "/incidents/{id}/updates", tag = "status pages",
    params(("id" = Uuid, Path, description = "Incident id")), request_body = NewIncidentUpdate,
    responses((status = 201, body = IncidentView), (status = 404, body = Problem), (status = 422, body = Problem)))]
pub(crate) async fn add_update(
    State(state): State<AppState>,
    meta: Meta,
    Operator(p): Operator,
    Path(id): Path<Uuid>,
    Json(req): Json<NewIncidentUpdate>,
) -> ApiResult<(StatusCode, axum::Json<IncidentView>)> {
    service::add_update(&state, &meta, &p, id, req)
        .await
        .map(|v| (StatusCode::CREATED, axum::Json(v)))
}
