//! Webhook endpoints (SPEC 2.6, 6.1; CONTRACT 6): create (the secret shown once, stored
//! sealed), list, delete, their deliveries, redelivery and a test ping.

use crate::auth::Admin;
use crate::error::{ApiResult, Problem};
use crate::extract::{Json, Meta, Path, Query};
use crate::openapi::api_routes;
use crate::service::webhooks::{
    self as service, CreatedWebhook, DeliveryQuery, DeliveryView, NewWebhookRequest, WebhookPatch,
    WebhookView,
};
use crate::state::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(api_routes!(create, list))
        .routes(api_routes!(get_webhook, update, delete))
        .routes(api_routes!(deliveries))
        .routes(api_routes!(redeliver))
        .routes(api_routes!(ping))
}

/// Register a webhook endpoint (admin). Deliveries: POST with the SPEC 6.1 body, headers of
/// CONTRACT 6 (`X-Service-Signature`, `X-Service-Delivery`, `X-Service-Event`,
/// `X-Service-Timestamp`, `webhook-id`, `webhook-timestamp`, `webhook-signature`), 10 s
/// limit, any 2xx is success; retries on `TRUSTHUB_WEBHOOK_RETRY_SCHEDULE` with the same
/// delivery id, then `failed`, `webhook_delivery_failed` in the audit log and a cooldown of
/// `TRUSTHUB_WEBHOOK_COOLDOWN_SECS`. Redirects are not followed.
///
/// Beyond the schema: the URL must resolve to an address the outbound policy allows (SSRF protection).
#[utoipa::path(post, path = "/webhooks", tag = "webhooks", request_body = NewWebhookRequest,
    responses((status = 201, body = CreatedWebhook), (status = 422, body = Problem)))]
pub(crate) async fn create(
    State(state): State<AppState>,
    meta: Meta,
    Admin(p): Admin,
    Json(req): Json<NewWebhookRequest>,
) -> ApiResult<(StatusCode, axum::Json<CreatedWebhook>)> {
    let created = service::create(&state, &meta, &p, &req).await?;
    Ok((StatusCode::CREATED, axum::Json(created)))
}

/// The tenant's webhook endpoints (admin); never the secrets.
#[utoipa::path(get, path = "/webhooks", tag = "webhooks", responses((status = 200, body = Vec<WebhookView>)))]
pub(crate) async fn list(
    State(state): State<AppState>,
    Admin(p): Admin,
) -> ApiResult<axum::Json<Vec<WebhookView>>> {
    service::list(&state, &p).await.map(axum::Json)
}

/// One endpoint (admin).
#[utoipa::path(get, path = "/webhooks/{id}", tag = "webhooks", params(("id" = Uuid, Path, description = "Webhook id")),
    responses((status = 200, body = WebhookView), (status = 404, body = Problem)))]
pub(crate) async fn get_webhook(
    State(state): State<AppState>,
    admin: Admin,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<WebhookView>> {
    service::get(&state, &admin, id).await.map(axum::Json)
}

/// Change an endpoint (admin): only the fields sent change, checked like at creation; a
/// changed endpoint leaves its cooldown. Deliveries already queued keep the URL they were
/// queued for and are signed with the current secret.
///
/// Beyond the schema: the URL must resolve to an address the outbound policy allows (SSRF protection).
#[utoipa::path(patch, path = "/webhooks/{id}", tag = "webhooks", params(("id" = Uuid, Path, description = "Webhook id")),
    request_body = WebhookPatch,
    responses((status = 200, body = WebhookView), (status = 404, body = Problem), (status = 422, body = Problem)))]
pub(crate) async fn update(
    State(state): State<AppState>,
    meta: Meta,
    admin: Admin,
    Path(id): Path<Uuid>,
    Json(patch): Json<WebhookPatch>,
) -> ApiResult<axum::Json<WebhookView>> {
    service::update(&state, &meta, &admin, id, patch)
        .await
        .map(axum::Json)
}

/// Remove an endpoint (admin) with its deliveries, pending ones included.
#[utoipa::path(delete, path = "/webhooks/{id}", tag = "webhooks", params(("id" = Uuid, Path, description = "Webhook id")),
    responses((status = 204, description = "Removed"), (status = 404, body = Problem)))]
pub(crate) async fn delete(
    State(state): State<AppState>,
    meta: Meta,
    admin: Admin,
    Path(id): Path<Uuid>,
) -> ApiResult<StatusCode> {
    service::delete(&state, &meta, &admin, id)
        .await
        .map(|()| StatusCode::NO_CONTENT)
}

/// An endpoint's deliveries, newest first (admin).
#[utoipa::path(get, path = "/webhooks/{id}/deliveries", tag = "webhooks",
    params(("id" = Uuid, Path, description = "Webhook id"), DeliveryQuery),
    responses((status = 200, body = Vec<DeliveryView>), (status = 404, body = Problem)))]
pub(crate) async fn deliveries(
    State(state): State<AppState>,
    admin: Admin,
    Path(id): Path<Uuid>,
    Query(q): Query<DeliveryQuery>,
) -> ApiResult<axum::Json<Vec<DeliveryView>>> {
    service::deliveries(&state, &admin, id, q)
        .await
        .map(axum::Json)
}

/// Send a finished delivery again (admin): same id and body, attempts from zero. 409 while
/// it is still pending or retrying, or while the endpoint is in cooldown.
#[utoipa::path(post, path = "/webhooks/{id}/deliveries/{delivery_id}/redeliver", tag = "webhooks",
    params(("id" = Uuid, Path, description = "Webhook id"), ("delivery_id" = Uuid, Path, description = "Delivery id")),
    responses((status = 202, body = DeliveryView), (status = 404, body = Problem), (status = 409, body = Problem)))]
pub(crate) async fn redeliver(
    State(state): State<AppState>,
    meta: Meta,
    admin: Admin,
    Path((id, delivery_id)): Path<(Uuid, Uuid)>,
) -> ApiResult<(StatusCode, axum::Json<DeliveryView>)> {
    service::redeliver(&state, &meta, &admin, id, delivery_id)
        .await
        .map(|d| (StatusCode::ACCEPTED, axum::Json(d)))
}

/// Queue a test ping (admin): event `webhook.test`, body `{event, webhook_id, tenant_id,
/// timestamp}`, signed like every delivery; ignores the event and severity filters but not
/// the cooldown.
#[utoipa::path(post, path = "/webhooks/{id}/test", tag = "webhooks", params(("id" = Uuid, Path, description = "Webhook id")),
    responses((status = 202, body = DeliveryView), (status = 404, body = Problem)))]
pub(crate) async fn ping(
    State(state): State<AppState>,
    admin: Admin,
    Path(id): Path<Uuid>,
) -> ApiResult<(StatusCode, axum::Json<DeliveryView>)> {
    service::ping(&state, &admin, id)
        .await
        .map(|d| (StatusCode::ACCEPTED, axum::Json(d)))
}
