//! Supply chain (SPEC 2.7, CONTRACT 15): the npm dependencies of the tenant's hosts whose
//! maintainers changed recently.

use crate::auth::Viewer;
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::Query;
use crate::openapi::api_routes;
use crate::state::{AppState, now};
use axum::extract::State;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(api_routes!(maintainer_changes))
}

/// The window.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ChangesQuery {
    /// Changes seen in the last this many days, 1 to 400 (default 7).
    #[param(minimum = 1, maximum = 400)]
    pub days: Option<i64>,
}

/// A host depending on the package.
#[derive(Debug, Serialize, ToSchema)]
pub struct Dependent {
    /// Agent id.
    pub agent_id: Uuid,
    /// Its host name.
    pub hostname: String,
}

/// A package whose maintainers changed.
#[derive(Debug, Serialize, ToSchema)]
pub struct MaintainerChange {
    /// Package name.
    pub package_name: String,
    /// `npm`.
    pub ecosystem: String,
    /// Who maintains it now: the packument's `maintainers` and the latest version's
    /// publisher (`_npmUser`), sorted.
    pub maintainers: Vec<String>,
    /// Who did before the change.
    pub previous_maintainers: Vec<String>,
    /// Whether the latest version is deprecated.
    pub deprecated: bool,
    /// Its deprecation message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deprecation_message: Option<String>,
    /// The latest version (`dist-tags.latest`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latest_version: Option<String>,
    /// When the registry last changed the packument, as it said when the change was seen.
    #[serde(
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_maintainer_change_at: Option<OffsetDateTime>,
    /// When the hub saw the change.
    #[serde(with = "time::serde::rfc3339")]
    pub seen_at: OffsetDateTime,
    /// The tenant's hosts whose lockfiles name it.
    pub agents: Vec<Dependent>,
}

/// The service behind `maintainer_changes`, for the API and the dashboard alike.
pub async fn maintainer_changes_by(
    state: &AppState,
    by: &Viewer,
    q: ChangesQuery,
) -> ApiResult<Vec<MaintainerChange>> {
    let p = &by.0;
    let days = q.days.unwrap_or(7);
    if !(1..=400).contains(&days) {
        return Err(ApiError::BadRequest(
            "days must be between 1 and 400".into(),
        ));
    }
    let deps = crate::jobs::supply_chain::dependents(state, Some(p.tenant())).await?;
    let since = now() - time::Duration::days(days);
    let mut c = state.db.conn().await?;
    let changed = crate::store::npm::changed_since(&mut c, since).await?;
    Ok(changed
        .into_iter()
        .filter_map(|pkg| {
            let hosts = deps.get(&pkg.name)?;
            Some(MaintainerChange {
                ecosystem: "npm".into(),
                maintainers: serde_json::from_str(&pkg.maintainers).unwrap_or_default(),
                previous_maintainers: serde_json::from_str(&pkg.previous_maintainers)
                    .unwrap_or_default(),
                deprecated: pkg.deprecated.is_some(),
                deprecation_message: pkg.deprecated,
                latest_version: pkg.latest_version,
                last_maintainer_change_at: pkg.registry_modified_at,
                seen_at: pkg.changed_at?,
                agents: hosts
                    .iter()
                    .map(|(_, a, h)| Dependent {
                        agent_id: *a,
                        hostname: h.clone(),
                    })
                    .collect(),
                package_name: pkg.name,
            })
        })
        .collect())
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
    maintainer_changes_by(&state, &by, q).await.map(axum::Json)
}
