//! API tokens (CONTRACT 2): `tht_` bearer tokens, scoped `read`, `write` or `ai_ingest`.

use crate::auth::{SessionUser, Viewer};
use crate::error::{ApiResult, Problem};
use crate::extract::{Json, Meta, Path};
use crate::state::AppState;
use axum::extract::State;
use axum::http::StatusCode;

use crate::openapi::api_routes;
use crate::service::api_tokens::{self as service, *};
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(api_routes!(create, list))
        .routes(api_routes!(delete))
}

/// Create an API token for yourself. Needs a login session: a token cannot mint tokens.
/// A `write` token acts with your role; a `read` token as a viewer at most.
///
/// Beyond the schema: `expires_at` must be in the future.
#[utoipa::path(post, path = "/api-tokens", tag = "api-tokens", request_body = NewApiToken,
    responses((status = 201, body = CreatedApiToken), (status = 422, body = Problem)))]
pub(crate) async fn create(
    State(state): State<AppState>,
    meta: Meta,
    by: SessionUser,
    Json(req): Json<NewApiToken>,
) -> ApiResult<(StatusCode, axum::Json<CreatedApiToken>)> {
    let t = service::create(&state, &meta, &by, req).await?;
    Ok((StatusCode::CREATED, axum::Json(t)))
}

/// List API tokens: your own; admins and owners see every token of the tenant.
#[utoipa::path(get, path = "/api-tokens", tag = "api-tokens", responses((status = 200, body = Vec<ApiTokenView>)))]
pub(crate) async fn list(
    State(state): State<AppState>,
    by: Viewer,
) -> ApiResult<axum::Json<Vec<ApiTokenView>>> {
    service::list(&state, &by).await.map(axum::Json)
}

/// Delete an API token; it stops working at once. Your own, or any of the tenant's for
/// admins and owners.
#[utoipa::path(delete, path = "/api-tokens/{id}", tag = "api-tokens", params(("id" = Uuid, Path, description = "Token id")),
    responses((status = 204, description = "Deleted"), (status = 404, body = Problem)))]
pub(crate) async fn delete(
    State(state): State<AppState>,
    meta: Meta,
    by: Viewer,
    Path(id): Path<Uuid>,
) -> ApiResult<StatusCode> {
    service::delete(&state, &meta, &by, id)
        .await
        .map(|()| StatusCode::NO_CONTENT)
}
