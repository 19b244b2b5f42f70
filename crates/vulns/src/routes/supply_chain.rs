//! Supply chain (SPEC 2.7, CONTRACT 15): the npm dependencies of the tenant's hosts whose
//! maintainers changed recently.

use crate::auth::Viewer;
use crate::error::{ApiResult, Problem};
use crate::extract::Query;
use crate::openapi::api_routes;
use crate::service::supply_chain::{self as service, *};
use crate::state::AppState;
use axum::extract::State;
use utoipa_axum::router::OpenApiRouter;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(api_routes!(maintainer_changes))
}

/// npm dependencies of the tenant's hosts whose maintainer set changed in the last `days`
/// (viewer), newest first. The hub reads each package's full packument from
/// `TRUSTHUB_NPM_REGISTRY` at most once per `TRUSTHUB_SUPPLY_CHAIN_INTERVAL_SECS` (with
/// `If-None-Match`, a cap on requests per minute, backing off on 429); the first read is the
/// baseline. Each change also raised a `supply_chain` warning alert.
#[utoipa::path(get, path = "/supply-chain/maintainer-changes", tag = "supply-chain", params(ChangesQuery),
    responses((status = 200, body = Vec<MaintainerChange>), (status = 400, body = Problem)))]
pub(crate) async fn maintainer_changes(
    State(state): State<AppState>,
    by: Viewer,
    Query(q): Query<ChangesQuery>,
) -> ApiResult<axum::Json<Vec<MaintainerChange>>> {
    service::maintainer_changes(&state, &by, q)
        .await
        .map(axum::Json)
}
