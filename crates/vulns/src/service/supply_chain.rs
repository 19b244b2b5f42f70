//! The services behind [`crate::routes::supply_chain`]: what its handlers, the dashboard's
//! pages and other capabilities call.

use crate::auth::Viewer;
use crate::error::{ApiError, ApiResult};
use crate::state::{AppState, now};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

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
pub async fn maintainer_changes(
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
