//! Notification channels (CONTRACT 27): create, list, read, change, delete, a test message,
//! and each channel's delivery log. The services below are what the API's handlers and the
//! dashboard's page both call, with the admin role as a typed value.

use crate::auth::{Admin, Viewer};
use crate::error::{ApiResult, Problem};
use crate::extract::{Json, Meta, Path, Query};
use crate::openapi::api_routes;
use crate::service::channels::{self as service, *};
use crate::service::webhooks::{DeliveryQuery, DeliveryView};
use crate::state::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    let mut r = OpenApiRouter::new()
        .routes(api_routes!(create, list))
        .routes(api_routes!(get_channel, update, delete))
        .routes(api_routes!(test))
        .routes(api_routes!(deliveries));
    // A channel's `config` takes the fields of its `kind`.
    trusthub_platform::openapi::one_of(
        r.get_openapi_mut(),
        "NewChannel",
        crate::channels::shapes(),
    );
    r
}

/// Add a notification channel (admin). Alerts matching `events`, `min_severity` and
/// `agent_filter` are sent in the service's own format, each linking to the alert's page
/// (`TRUSTHUB_PUBLIC_URL` + `/ui/alerts/<id>`); deliveries retry on
/// `TRUSTHUB_WEBHOOK_RETRY_SCHEDULE` and are listed under `/deliveries`. The URLs a channel
/// names follow the outbound address policy (CONTRACT 18), checked now and at each delivery.
///
/// Beyond the schema: the URLs `config` names must resolve to addresses the outbound policy allows (SSRF protection).
#[utoipa::path(post, path = "/notification-channels", tag = "notification-channels", request_body = NewChannel,
    responses((status = 201, body = ChannelView), (status = 422, body = Problem)))]
pub(crate) async fn create(
    State(state): State<AppState>,
    meta: Meta,
    admin: Admin,
    Json(req): Json<NewChannel>,
) -> ApiResult<(StatusCode, axum::Json<ChannelView>)> {
    let v = service::create(&state, &meta, &admin, req).await?;
    Ok((StatusCode::CREATED, axum::Json(v)))
}

/// The tenant's notification channels (secrets masked).
#[utoipa::path(get, path = "/notification-channels", tag = "notification-channels",
    responses((status = 200, body = Vec<ChannelView>)))]
pub(crate) async fn list(
    State(state): State<AppState>,
    by: Viewer,
) -> ApiResult<axum::Json<Vec<ChannelView>>> {
    service::list(&state, &by).await.map(axum::Json)
}

/// One notification channel (admin).
#[utoipa::path(get, path = "/notification-channels/{id}", tag = "notification-channels",
    params(("id" = Uuid, Path, description = "Channel id")),
    responses((status = 200, body = ChannelView), (status = 404, body = Problem)))]
pub(crate) async fn get_channel(
    State(state): State<AppState>,
    admin: Admin,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<ChannelView>> {
    Ok(axum::Json(load(&state, &admin, id).await?.into()))
}

/// Change a notification channel (admin; merge patch).
///
/// Beyond the schema: a new `config` takes the fields of the channel's own `kind`, and the URLs it names must resolve to addresses the outbound policy allows.
#[utoipa::path(patch, path = "/notification-channels/{id}", tag = "notification-channels",
    params(("id" = Uuid, Path, description = "Channel id")), request_body = ChannelPatch,
    responses((status = 200, body = ChannelView), (status = 404, body = Problem), (status = 422, body = Problem)))]
pub(crate) async fn update(
    State(state): State<AppState>,
    meta: Meta,
    admin: Admin,
    Path(id): Path<Uuid>,
    Json(patch): Json<ChannelPatch>,
) -> ApiResult<axum::Json<ChannelView>> {
    service::update(&state, &meta, &admin, id, patch)
        .await
        .map(axum::Json)
}

/// Delete a notification channel and its delivery log (admin).
#[utoipa::path(delete, path = "/notification-channels/{id}", tag = "notification-channels",
    params(("id" = Uuid, Path, description = "Channel id")),
    responses((status = 204, description = "Deleted"), (status = 404, body = Problem)))]
pub(crate) async fn delete(
    State(state): State<AppState>,
    meta: Meta,
    admin: Admin,
    Path(id): Path<Uuid>,
) -> ApiResult<StatusCode> {
    service::delete(&state, &meta, &admin, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Send a test message through the channel (admin); the answer is the queued delivery.
#[utoipa::path(post, path = "/notification-channels/{id}/test", tag = "notification-channels",
    params(("id" = Uuid, Path, description = "Channel id")),
    responses((status = 202, body = DeliveryView), (status = 404, body = Problem)))]
pub(crate) async fn test(
    State(state): State<AppState>,
    admin: Admin,
    Path(id): Path<Uuid>,
) -> ApiResult<(StatusCode, axum::Json<DeliveryView>)> {
    let d = service::test(&state, &admin, id).await?;
    Ok((StatusCode::ACCEPTED, axum::Json(d)))
}

/// A channel's deliveries, newest first (admin).
#[utoipa::path(get, path = "/notification-channels/{id}/deliveries", tag = "notification-channels",
    params(("id" = Uuid, Path, description = "Channel id"), DeliveryQuery),
    responses((status = 200, body = Vec<DeliveryView>), (status = 404, body = Problem)))]
pub(crate) async fn deliveries(
    State(state): State<AppState>,
    admin: Admin,
    Path(id): Path<Uuid>,
    Query(q): Query<DeliveryQuery>,
) -> ApiResult<axum::Json<Vec<DeliveryView>>> {
    service::deliveries(&state, &admin, id, q.limit)
        .await
        .map(axum::Json)
}
