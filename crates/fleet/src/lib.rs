//! The fleet (SPEC 2.2, 3.1, 4, 5; CONTRACT 5, 11): agents and their enrolment and
//! registration, signed ingest of metrics and inventory, the agent WebSocket, signed action
//! tokens (EATs) and their records, and the transparency log.
//!
//! What it offers other capabilities:
//! - [`agent_auth::AgentAuth`]: an agent's credential on the API;
//! - [`routes::actions::dispatch`]: sends a signed action to an agent (app restarts, later
//!   patches);
//! - [`store::agents`], [`store::telemetry`]: hosts, their inventory and metric series for
//!   the capabilities built on them (apps, rules, vulnerabilities);
//! - [`host_names`]: host names of a tenant's agents, the lookup other capabilities are
//!   given instead of this crate's tables;
//! - [`api`], [`web::pages`], [`connections::refresh_connections`], [`routing::listen`]: what
//!   the composition root mounts and starts.

pub mod admin;
pub mod agent_auth;
pub mod agent_ws;
pub mod connections;
pub mod ingest;
pub mod routes;
pub mod routing;
pub mod store;
pub mod web;

use trusthub_identity::auth;
use trusthub_platform::{error, extract, openapi, ratelimit, state};

use std::collections::HashMap;
use trusthub_platform::AppState;
use trusthub_store::{StoreResult, TenantId};
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

/// The API routes, relative to `/api/v1`.
pub fn api() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(routes::agents::router())
        .merge(routes::actions::router())
}

/// The HTTP checks an agent runs for the apps capability: `(app, URL, interval)` (a part of
/// the state the composition root installs).
#[derive(Debug)]
pub struct HttpChecks(pub HttpChecksFn);

/// The signature of [`HttpChecks`].
pub type HttpChecksFn =
    for<'a> fn(
        &'a AppState,
        Uuid,
    ) -> trusthub_platform::BoxFuture<'a, StoreResult<Vec<(Uuid, String, i64)>>>;

/// The host name of each of `tenant`'s agents.
pub async fn host_names(state: &AppState, tenant: TenantId) -> StoreResult<HashMap<Uuid, String>> {
    let mut c = state.db.conn().await?;
    Ok(store::agents::list(&mut c, tenant)
        .await?
        .into_iter()
        .map(|a| (a.id, a.hostname))
        .collect())
}
