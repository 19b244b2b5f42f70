//! Tracked applications (SPEC 2.1, 3.1, 4.1): create, list, change the expected state,
//! untrack, and the discovery list of what an agent runs.

use crate::auth::{Operator, Viewer};
use crate::error::{ApiResult, Problem};
use crate::extract::{Json, Meta, Path};
use crate::openapi::api_routes;
use crate::service::apps::{self as service, *};
use crate::state::AppState;
use crate::store::apps::{self};
use axum::extract::State;
use axum::http::StatusCode;
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    let mut r = OpenApiRouter::new()
        .routes(api_routes!(list, create))
        .routes(api_routes!(get_app, update, delete))
        .routes(api_routes!(checks))
        .routes(api_routes!(candidates));
    // Each kind takes its own fields.
    trusthub_platform::openapi::one_of(
        r.get_openapi_mut(),
        "NewAppRequest",
        super::apps_shapes::shapes(),
    );
    r
}

/// The tenant's tracked apps.
#[utoipa::path(get, path = "/apps", tag = "apps", responses((status = 200, body = Vec<AppView>)))]
pub(crate) async fn list(
    State(state): State<AppState>,
    Viewer(p): Viewer,
) -> ApiResult<axum::Json<Vec<AppView>>> {
    let tags = tags_by_agent(&state, p.tenant()).await?;
    let mut c = state.db.conn().await?;
    Ok(axum::Json(
        apps::list(&mut c, p.tenant(), None)
            .await?
            .into_iter()
            .map(|a| {
                let t = a
                    .agent_id
                    .and_then(|g| tags.get(&g).cloned())
                    .unwrap_or_default();
                AppView::new(a, t, &state.public_url)
            })
            .collect(),
    ))
}

/// Track an app (operator). An agent's systemd unit, container, compose service or process
/// is compared with `expected_state` (default `running`) at each liveness tick
/// (`TRUSTHUB_LIVENESS_INTERVAL_SECS`, 60 s by default). A check (`type` `http`, `tcp`,
/// `tls`, `dns`, `ping`, `push`) counts at its own interval (CONTRACT 27, 32): without
/// `agent_id` the hub probes it itself (the outbound address policy applies; first probe at
/// once), with `agent_id` that agent runs it (http, dns and ping: from its own networks, never a link-local or cloud-metadata address); it is down — and alerts, with the
/// probe's error — after `retries + 1` failures in a row, and up again after `recoveries`
/// successes. A `push` monitor probes nothing: the answer's `push_url` (whole only here;
/// `POST /apps/{id}/push-url` makes a new one) is called by the job, and no call within
/// `interval_seconds + grace_seconds` counts a failure (`retries` defaults to 0 for push). A
/// `dns` check asks its server (or the hub's resolver) and needs every `expected` value in
/// the answer; a `ping` check sends one ICMP echo (a datagram ICMP socket where
/// `net.ipv4.ping_group_range` allows, else a raw one, which needs CAP_NET_RAW); an http
/// check's `json_query` asserts on its JSON body. An agent tracks one app per kind and
/// identifier, a tenant one hub check per kind and target (409 otherwise).
///
/// Beyond the schema: `agent_id` must be an agent of your tenant; a check's `endpoint` must be in its kind's form (an http(s) URL, `tcp://host:port`, `tls://host:port`, `dns://name?type=A&server=ip[:port]`, `icmp://host`) and resolve to an address the outbound policy allows; a dns check's `expected` values must be addresses for A and AAAA; a systemd unit needs a host that reports systemd.
#[utoipa::path(post, path = "/apps", tag = "apps", request_body = NewAppRequest,
    responses((status = 201, body = AppView), (status = 409, body = Problem), (status = 422, body = Problem)))]
pub(crate) async fn create(
    State(state): State<AppState>,
    meta: Meta,
    Operator(p): Operator,
    Json(req): Json<NewAppRequest>,
) -> ApiResult<(StatusCode, axum::Json<AppView>)> {
    create_app(&state, &meta, &p, req).await
}

/// One app.
#[utoipa::path(get, path = "/apps/{id}", tag = "apps", params(("id" = Uuid, Path, description = "App id")),
    responses((status = 200, body = AppView), (status = 404, body = Problem)))]
pub(crate) async fn get_app(
    State(state): State<AppState>,
    by: Viewer,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<AppView>> {
    service::get_app(&state, &by, id).await.map(axum::Json)
}

/// Change what the app is expected to do, or its public badge (operator). A new expected
/// state: the comparison continues with it, its mismatch counters start again. `badge:
/// true` gives the app a `badge_token` and its `badge_url` (public, shields.io's flat style:
/// `?type=status` (the default), `uptime` or `latency`, `&days=1..90` (30)); `false` revokes
/// it. Beyond the schema: at least one of the two fields.
#[utoipa::path(patch, path = "/apps/{id}", tag = "apps", params(("id" = Uuid, Path, description = "App id")),
    request_body = AppPatch, responses((status = 200, body = AppView), (status = 404, body = Problem), (status = 422, body = Problem)))]
pub(crate) async fn update(
    State(state): State<AppState>,
    meta: Meta,
    Operator(p): Operator,
    Path(id): Path<Uuid>,
    Json(req): Json<AppPatch>,
) -> ApiResult<axum::Json<AppView>> {
    set_expected_state(&state, &meta, &p, id, req)
        .await
        .map(axum::Json)
}

/// Stop tracking an app (operator). Its open liveness alert stays until resolved.
#[utoipa::path(delete, path = "/apps/{id}", tag = "apps", params(("id" = Uuid, Path, description = "App id")),
    responses((status = 204, description = "Untracked"), (status = 404, body = Problem)))]
pub(crate) async fn delete(
    State(state): State<AppState>,
    meta: Meta,
    Operator(p): Operator,
    Path(id): Path<Uuid>,
) -> ApiResult<StatusCode> {
    untrack(&state, &meta, &p, id).await
}

/// The latest HTTP check results of an `http` app, newest first (at most 100).
#[utoipa::path(get, path = "/apps/{id}/checks", tag = "apps", params(("id" = Uuid, Path, description = "App id")),
    responses((status = 200, body = Vec<LastCheck>), (status = 404, body = Problem)))]
pub(crate) async fn checks(
    State(state): State<AppState>,
    by: Viewer,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<Vec<LastCheck>>> {
    service::checks(&state, &by, id).await.map(axum::Json)
}

/// Discovery (SPEC 4.1 rule 2): what runs on the host, to fill `app_type`, `identifier` and
/// `name`: active systemd services, running containers and compose services, and — so a
/// host without systemd (postgres, redis, mariadb, nats or mosquitto started otherwise)
/// still offers its services — processes that listen on a socket or run as daemons (parent
/// pid 1), by their binary's path, listening ones first. Kernel threads, shells, pid 1 and
/// the agent itself are left out.
#[utoipa::path(get, path = "/agents/{id}/app-candidates", tag = "apps", params(("id" = Uuid, Path, description = "Agent id")),
    responses((status = 200, body = Vec<AppCandidate>), (status = 404, body = Problem)))]
pub(crate) async fn candidates(
    State(state): State<AppState>,
    by: Viewer,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<Vec<AppCandidate>>> {
    candidates_of(&state, &by.0, id).await.map(axum::Json)
}
