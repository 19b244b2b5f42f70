//! `/cloud/accounts`, `/cloud/runs`, `/cloud/resources`, `/cloud/findings`, `/cloud/summary`.

use crate::service::{
    self, AccountView, FindingView, Install, NewAccount, ResourceFilter, ResourceView, RunView,
    Summary,
};
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use trusthub_identity::auth::{Admin, Operator, Viewer};
use trusthub_platform::AppState;
use trusthub_platform::error::{ApiError, ApiResult, Problem};
use trusthub_platform::extract::{Json, Meta, Path, Query};
use trusthub_platform::openapi::api_routes;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    let mut r = OpenApiRouter::new()
        .routes(api_routes!(list_accounts, create_account))
        .routes(api_routes!(get_account, delete_account))
        .routes(api_routes!(discover))
        .routes(api_routes!(runs))
        .routes(api_routes!(resources))
        .routes(api_routes!(resource))
        .routes(api_routes!(install))
        .routes(api_routes!(findings))
        .routes(api_routes!(summary));
    // The credentials' fields are the provider's own.
    trusthub_platform::openapi::one_of(r.get_openapi_mut(), "NewAccount", service::shapes());
    r
}

/// The tenant's cloud accounts (never their credentials).
#[utoipa::path(get, path = "/cloud/accounts", tag = "cloud",
    responses((status = 200, body = Vec<AccountView>)))]
pub(crate) async fn list_accounts(
    State(state): State<AppState>,
    by: Viewer,
) -> ApiResult<axum::Json<Vec<AccountView>>> {
    service::accounts(&state, by.0.tenant())
        .await
        .map(axum::Json)
}

/// Add a cloud account (admin). The credentials are checked live with one read call of the
/// provider's API (AWS `DescribeRegions`, Hetzner `GET /servers`): a refusal, an unreachable
/// endpoint included, is 422 `credentials_rejected` with the provider's or the transport's
/// message, and nothing is stored. Accepted credentials are sealed (AES-256-GCM with the hub
/// key, `CLOUD_ENCRYPTION_KEY`) and never returned; a first discovery run starts at once.
/// An `endpoint` must pass the hub's outbound address policy and hold no userinfo (422
/// naming `endpoint`: credentials belong in `credentials`).
///
/// Beyond the schema: the provider checks the credentials live (made-up ones are 422 `credentials_rejected`), and `endpoint` must resolve to an address the outbound policy allows.
#[utoipa::path(post, path = "/cloud/accounts", tag = "cloud", request_body = NewAccount,
    responses((status = 201, body = AccountView), (status = 403, body = Problem),
        (status = 422, description = "Invalid fields, `credentials_rejected` (the provider refused them) or `provider_unreachable` (the provider was not reached)", body = Problem)))]
pub(crate) async fn create_account(
    State(state): State<AppState>,
    meta: Meta,
    by: Admin,
    Json(req): Json<NewAccount>,
) -> ApiResult<(StatusCode, axum::Json<AccountView>)> {
    let a = service::create(&state, &meta, &by.0, req).await?;
    Ok((StatusCode::CREATED, axum::Json(a)))
}

/// One cloud account (never its credentials; an endpoint's userinfo shown `***`).
#[utoipa::path(get, path = "/cloud/accounts/{id}", tag = "cloud",
    params(("id" = Uuid, Path, description = "Account id")),
    responses((status = 200, body = AccountView), (status = 404, body = Problem)))]
pub(crate) async fn get_account(
    State(state): State<AppState>,
    by: Viewer,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<AccountView>> {
    service::account_view(&state, by.0.tenant(), id)
        .await
        .map(axum::Json)
}

/// Delete a cloud account with its runs, resources and findings (admin).
#[utoipa::path(delete, path = "/cloud/accounts/{id}", tag = "cloud",
    params(("id" = Uuid, Path, description = "Account id")),
    responses((status = 204, description = "Deleted"), (status = 403, body = Problem), (status = 404, body = Problem)))]
pub(crate) async fn delete_account(
    State(state): State<AppState>,
    meta: Meta,
    by: Admin,
    Path(id): Path<Uuid>,
) -> ApiResult<StatusCode> {
    service::delete(&state, &meta, &by.0, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A started run.
#[derive(Debug, Serialize, ToSchema)]
pub struct Started {
    /// The run (`GET /cloud/runs?account_id=` follows it).
    pub run_id: Uuid,
}

/// Run a discovery of the account now (operator); runs also start every
/// `TRUSTHUB_CLOUD_DISCOVER_INTERVAL_SECS` (3600). 409 while one is running.
#[utoipa::path(post, path = "/cloud/accounts/{id}/discover", tag = "cloud",
    params(("id" = Uuid, Path, description = "Account id")),
    responses((status = 202, body = Started), (status = 403, body = Problem), (status = 404, body = Problem),
        (status = 409, description = "A run of this account is going", body = Problem)))]
pub(crate) async fn discover(
    State(state): State<AppState>,
    by: Operator,
    Path(id): Path<Uuid>,
) -> ApiResult<(StatusCode, axum::Json<Started>)> {
    let run_id = service::discover(&state, by.0.tenant(), id).await?;
    Ok((StatusCode::ACCEPTED, axum::Json(Started { run_id })))
}

/// The run filter.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct RunQuery {
    /// Only this account.
    pub account_id: Option<Uuid>,
}

/// Discovery runs, newest first (at most 500): counts of resources seen, added, changed and
/// removed, and the regions that could not be read.
#[utoipa::path(get, path = "/cloud/runs", tag = "cloud", params(RunQuery),
    responses((status = 200, body = Vec<RunView>)))]
pub(crate) async fn runs(
    State(state): State<AppState>,
    by: Viewer,
    Query(q): Query<RunQuery>,
) -> ApiResult<axum::Json<Vec<RunView>>> {
    service::runs(&state, by.0.tenant(), q.account_id)
        .await
        .map(axum::Json)
}

/// The resource filters.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ResourceQuery {
    /// Only this account.
    pub account_id: Option<Uuid>,
    /// Only this type: `vm`, `container`, `database`, `load_balancer` or `bucket`.
    #[serde(rename = "type")]
    #[param(
        rename = "type",
        pattern = "^(vm|container|database|load_balancer|bucket)$"
    )]
    pub kind: Option<String>,
    /// Only those an agent watches (`true`/`1`) or not (`false`/`0`).
    #[serde(default, deserialize_with = "trusthub_platform::extract::flag")]
    #[param(value_type = Option<String>, pattern = "^(true|false|1|0)$")]
    pub has_agent: Option<bool>,
    /// Only public ones, or only private ones.
    #[serde(default, deserialize_with = "trusthub_platform::extract::flag")]
    #[param(value_type = Option<String>, pattern = "^(true|false|1|0)$")]
    pub is_public: Option<bool>,
    /// Removed resources too (`1`).
    #[serde(default, deserialize_with = "trusthub_platform::extract::flag")]
    #[param(value_type = Option<String>, pattern = "^(true|false|1|0)$")]
    pub include_removed: Option<bool>,
}

/// Resources of every account, by name: live ones unless `include_removed=1`. A resource
/// has an agent when an agent's latest inventory matches its instance id, one of its
/// addresses, or its name (the host's short name, case-insensitive) — as of this request.
#[utoipa::path(get, path = "/cloud/resources", tag = "cloud", params(ResourceQuery),
    responses((status = 200, body = Vec<ResourceView>), (status = 422, body = Problem)))]
pub(crate) async fn resources(
    State(state): State<AppState>,
    by: Viewer,
    Query(q): Query<ResourceQuery>,
) -> ApiResult<axum::Json<Vec<ResourceView>>> {
    if let Some(k) = &q.kind
        && !["vm", "container", "database", "load_balancer", "bucket"].contains(&k.as_str())
    {
        return Err(ApiError::invalid(
            "type",
            "must be vm, container, database, load_balancer or bucket",
        ));
    }
    let f = ResourceFilter {
        account_id: q.account_id,
        kind: q.kind,
        has_agent: q.has_agent,
        is_public: q.is_public,
        include_removed: q.include_removed.unwrap_or(false),
    };
    service::resources(&state, by.0.tenant(), &f)
        .await
        .map(axum::Json)
}

/// One resource.
#[utoipa::path(get, path = "/cloud/resources/{id}", tag = "cloud",
    params(("id" = Uuid, Path, description = "Resource id")),
    responses((status = 200, body = ResourceView), (status = 404, body = Problem)))]
pub(crate) async fn resource(
    State(state): State<AppState>,
    by: Viewer,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<ResourceView>> {
    service::resource(&state, by.0.tenant(), id)
        .await
        .map(axum::Json)
}

/// The agent install commands for a resource (admin): a fresh single-use enrollment token
/// (24 h; spent by the first registration, then 401 like an expired one), the shell
/// one-liner and the same as cloud-init user data.
#[utoipa::path(get, path = "/cloud/resources/{id}/install", tag = "cloud",
    params(("id" = Uuid, Path, description = "Resource id")),
    responses((status = 200, body = Install), (status = 403, body = Problem), (status = 404, body = Problem)))]
pub(crate) async fn install(
    State(state): State<AppState>,
    meta: Meta,
    by: Admin,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<Install>> {
    service::install(&state, &meta, &by.0, id)
        .await
        .map(axum::Json)
}

/// The finding filters.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct FindingQuery {
    /// Only this severity: `CRITICAL`, `HIGH`, `MEDIUM` or `LOW`.
    #[param(pattern = "^(CRITICAL|HIGH|MEDIUM|LOW)$")]
    pub severity: Option<String>,
    /// Only `open` or `resolved` ones.
    #[param(pattern = "^(open|resolved)$")]
    pub status: Option<String>,
}

/// Findings of the discovery runs, open ones first (at most 5000): `no_agent` (MEDIUM),
/// `public_without_agent` (HIGH), `ssh_open_to_world` (HIGH), `rdp_open_to_world`
/// (CRITICAL), `unencrypted_disk` (MEDIUM). A finding resolves by itself when a later run no
/// longer sees it.
#[utoipa::path(get, path = "/cloud/findings", tag = "cloud", params(FindingQuery),
    responses((status = 200, body = Vec<FindingView>), (status = 422, body = Problem)))]
pub(crate) async fn findings(
    State(state): State<AppState>,
    by: Viewer,
    Query(q): Query<FindingQuery>,
) -> ApiResult<axum::Json<Vec<FindingView>>> {
    if let Some(s) = &q.severity
        && !["CRITICAL", "HIGH", "MEDIUM", "LOW"].contains(&s.as_str())
    {
        return Err(ApiError::invalid(
            "severity",
            "must be CRITICAL, HIGH, MEDIUM or LOW",
        ));
    }
    if let Some(s) = &q.status
        && !["open", "resolved"].contains(&s.as_str())
    {
        return Err(ApiError::invalid("status", "must be open or resolved"));
    }
    service::findings(
        &state,
        by.0.tenant(),
        q.severity.as_deref(),
        q.status.as_deref(),
    )
    .await
    .map(axum::Json)
}

/// The tenant's cloud at a glance: live resources, agent coverage, exposure, open findings.
#[utoipa::path(get, path = "/cloud/summary", tag = "cloud",
    responses((status = 200, body = Summary)))]
pub(crate) async fn summary(
    State(state): State<AppState>,
    by: Viewer,
) -> ApiResult<axum::Json<Summary>> {
    service::summary(&state, by.0.tenant())
        .await
        .map(axum::Json)
}
