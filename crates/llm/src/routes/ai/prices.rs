//! Model prices: the shipped dated table, the operator's file and the tenant's overrides.

use super::*;
use crate::auth::Admin;
use crate::extract::Meta;
use crate::service::ai::prices::{self as service, *};

/// The prices in force for your tenant: the shipped table (dated) with your overrides.
#[utoipa::path(get, path = "/ai/prices", tag = "ai", responses((status = 200, body = Vec<PriceView>)))]
pub(crate) async fn list_prices(
    State(state): State<AppState>,
    by: Viewer,
) -> ApiResult<axum::Json<Vec<PriceView>>> {
    service::list_prices(&state, &by).await.map(axum::Json)
}

/// Override prices (admin): costs are computed at query time, so past calls are re-priced
/// by the table in force on their date.
#[utoipa::path(put, path = "/ai/prices", tag = "ai", request_body = PricesIn,
    responses((status = 200, body = Vec<PriceView>), (status = 422, body = Problem)))]
pub(crate) async fn put_prices(
    State(state): State<AppState>,
    meta: Meta,
    by: Admin,
    Json(req): Json<PricesIn>,
) -> ApiResult<axum::Json<Vec<PriceView>>> {
    service::put_prices(&state, &meta, &by, req)
        .await
        .map(axum::Json)
}
