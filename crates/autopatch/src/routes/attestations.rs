//! `/attestations`: the auto-patch attestation chains (SPEC 6.5).

use crate::service::{self, Chain};
use axum::extract::State;
use serde::Deserialize;
use trusthub_identity::auth::Viewer;
use trusthub_platform::AppState;
use trusthub_platform::error::{ApiResult, Problem};
use trusthub_platform::extract::Query;
use trusthub_platform::openapi::api_routes;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(api_routes!(list))
}

/// The chains' filter.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AttestationQuery {
    /// Only this host's.
    pub agent_id: Option<Uuid>,
}

/// The auto-patch attestation chains, newest first: each `remediation.auto_flag_set` entry
/// that turned a flag on, with every `remediation.auto_proposed` entry made under it (its
/// payload's `flag_set_seq`) and that package's `remediation.auto_applied` or
/// `remediation.auto_rolled_back` entry (the same `eat_nonce`), or null while the host has
/// not answered. Entries are the transparency log's, so each hash can be recomputed and the
/// chain checked against `/transparency-log/head`.
#[utoipa::path(get, path = "/attestations", tag = "auto-patch", params(AttestationQuery),
    responses((status = 200, body = Vec<Chain>), (status = 404, body = Problem)))]
pub(crate) async fn list(
    State(state): State<AppState>,
    by: Viewer,
    Query(q): Query<AttestationQuery>,
) -> ApiResult<axum::Json<Vec<Chain>>> {
    service::attestations(&state, &by, q.agent_id)
        .await
        .map(axum::Json)
}
