//! `/compliance*` and `/security` (CONTRACT 25; SPEC 4.2, 4.5).

use crate::service::{self, Filter, ResultView, RunAccepted, RunView, SecurityView};
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use trusthub_identity::auth::{Admin, Viewer};
use trusthub_platform::AppState;
use trusthub_platform::error::{ApiResult, Problem};
use trusthub_platform::extract::{Json, Meta, Path, Query};
use trusthub_platform::openapi::api_routes;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(api_routes!(list_compliance))
        .routes(api_routes!(run_compliance))
        .routes(api_routes!(compliance_runs))
        .routes(api_routes!(compliance_history))
        .routes(api_routes!(export_compliance))
        .routes(api_routes!(export_compliance_vanta))
        .routes(api_routes!(security_view))
}

/// The listing's filters.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// `cis-debian`, `iso27001`, `soc2` or `nis2` (default: all four).
    #[param(pattern = "^(cis-debian|iso27001|soc2|nis2)$")]
    pub framework: Option<String>,
    /// One host.
    pub agent_id: Option<Uuid>,
    /// `pass`, `fail`, `not_applicable` or `error`.
    #[param(pattern = "^(pass|fail|not_applicable|error)$")]
    pub status: Option<String>,
}

impl From<ListQuery> for Filter {
    fn from(q: ListQuery) -> Filter {
        Filter {
            framework: q.framework,
            agent_id: q.agent_id,
            status: q.status,
        }
    }
}

/// The latest result of each host check on each host, once per framework it is asked in,
/// with the framework's control ids (CONTRACT 25). Checks run on the agents every
/// `compliance_interval_secs` of governance (default 12 h) and on `POST /compliance/run`.
#[utoipa::path(get, path = "/compliance", tag = "compliance", params(ListQuery),
    responses((status = 200, body = Vec<ResultView>), (status = 404, body = Problem), (status = 422, body = Problem)))]
pub(crate) async fn list_compliance(
    State(state): State<AppState>,
    by: Viewer,
    Query(q): Query<ListQuery>,
) -> ApiResult<axum::Json<Vec<ResultView>>> {
    service::list(&state, by.0.tenant(), &q.into())
        .await
        .map(axum::Json)
}

/// Which hosts to run on.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    /// One host (absent: every host of the tenant).
    #[serde(default)]
    pub agent_id: Option<Uuid>,
}

/// Ask hosts to run the compliance checks now (admin; 10 accepted runs per hour per user).
/// Each host runs them when its next batch is answered (within one push interval) and sends
/// the results with the run's id.
///
/// Beyond the schema: a run needs hosts: your tenant must have agents, and an `agent_id` must be one of them.
#[utoipa::path(post, path = "/compliance/run", tag = "compliance", request_body = RunRequest,
    responses((status = 202, body = RunAccepted), (status = 404, body = Problem), (status = 422, body = Problem),
        (status = 429, body = Problem)))]
pub(crate) async fn run_compliance(
    State(state): State<AppState>,
    meta: Meta,
    by: Admin,
    Json(req): Json<RunRequest>,
) -> ApiResult<(StatusCode, axum::Json<RunAccepted>)> {
    service::run(&state, &meta, &by.0, req.agent_id)
        .await
        .map(|r| (StatusCode::ACCEPTED, axum::Json(r)))
}

/// The tenant's 50 latest runs asked for, newest first, with how many hosts answered.
#[utoipa::path(get, path = "/compliance/runs", tag = "compliance",
    responses((status = 200, body = Vec<RunView>)))]
pub(crate) async fn compliance_runs(
    State(state): State<AppState>,
    by: Viewer,
) -> ApiResult<axum::Json<Vec<RunView>>> {
    service::runs(&state, by.0.tenant()).await.map(axum::Json)
}

/// Pass/fail over time's filters.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct HistoryQuery {
    /// One host.
    pub agent_id: Option<Uuid>,
    /// How far back, 1 to 365 days (default 30).
    #[param(minimum = 1, maximum = 365)]
    pub days: Option<i64>,
}

/// One run on one host, summed up.
#[derive(Debug, Serialize, ToSchema)]
pub struct HistoryView {
    /// The host.
    pub agent_id: Uuid,
    /// When the checks ran.
    #[serde(with = "time::serde::rfc3339")]
    pub checked_at: OffsetDateTime,
    /// The run asked for (null: the agent's schedule).
    pub run_id: Option<Uuid>,
    /// Checks passed.
    pub passed: i64,
    /// Checks failed.
    pub failed: i64,
    /// Checks that do not apply.
    pub not_applicable: i64,
    /// Checks that could not run.
    pub errors: i64,
}

/// Pass/fail over time: each run of the checks on each host, oldest first.
#[utoipa::path(get, path = "/compliance/history", tag = "compliance", params(HistoryQuery),
    responses((status = 200, body = Vec<HistoryView>), (status = 422, body = Problem)))]
pub(crate) async fn compliance_history(
    State(state): State<AppState>,
    by: Viewer,
    Query(q): Query<HistoryQuery>,
) -> ApiResult<axum::Json<Vec<HistoryView>>> {
    let days = q.days.unwrap_or(30);
    if !(1..=365).contains(&days) {
        return Err(trusthub_platform::error::ApiError::invalid(
            "days",
            "must be between 1 and 365",
        ));
    }
    Ok(axum::Json(
        service::history(&state, by.0.tenant(), q.agent_id, days)
            .await?
            .into_iter()
            .map(|h| HistoryView {
                agent_id: h.agent_id,
                checked_at: h.checked_at,
                run_id: h.run_id,
                passed: h.passed,
                failed: h.failed,
                not_applicable: h.not_applicable,
                errors: h.errors,
            })
            .collect(),
    ))
}

/// The export's filters.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ExportQuery {
    /// One framework (default: all four).
    #[param(pattern = "^(cis-debian|iso27001|soc2|nis2)$")]
    pub framework: Option<String>,
    /// One host.
    pub agent_id: Option<Uuid>,
    /// One verdict.
    #[param(pattern = "^(pass|fail|not_applicable|error)$")]
    pub status: Option<String>,
    /// Vanta's only: sent here, 422 naming it (clearer than an unknown parameter).
    #[param(ignore)]
    pub resource_id: Option<String>,
}

/// The Vanta export's filters.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct VantaQuery {
    /// One framework (default: all four).
    #[param(pattern = "^(cis-debian|iso27001|soc2|nis2)$")]
    pub framework: Option<String>,
    /// One host.
    pub agent_id: Option<Uuid>,
    /// One verdict.
    #[param(pattern = "^(pass|fail|not_applicable|error)$")]
    pub status: Option<String>,
    /// The id of the custom resource type made in the Vanta app (default
    /// `trusthub-host-compliance`), 1 to 128 characters without control characters.
    #[param(
        min_length = 1,
        max_length = 128,
        pattern = r"^[^\x00-\x1f\x7f-\x9f]+$"
    )]
    pub resource_id: Option<String>,
}

/// The latest results for another tool (CONTRACT 25): `generic` is an OSCAL 1.1
/// `assessment-results` document (hosts as inventory items, one observation per host and
/// check, one finding per host, check and control: `satisfied` or `not-satisfied`; control
/// ids as OSCAL tokens such as `cis-debian_5.1.20`); `trustos` and `cyberday` are CSV
/// `framework,control_id,check_id,title,hostname,status,evidence,checked_at`, one row per
/// control id; Vanta's is `GET /compliance/export/vanta`. Sent as an attachment.
#[utoipa::path(get, path = "/compliance/export/{tool}", tag = "compliance",
    params(("tool" = String, Path, description = "trustos, cyberday or generic", pattern = "^(trustos|cyberday|generic)$"), ExportQuery),
    responses((status = 200, description = "The export: JSON for generic, CSV for trustos and cyberday",
            content((Object = "application/json"), (String = "text/csv"))),
        (status = 404, body = Problem), (status = 422, body = Problem)))]
pub(crate) async fn export_compliance(
    State(state): State<AppState>,
    by: Viewer,
    Path(tool): Path<String>,
    Query(q): Query<ExportQuery>,
) -> ApiResult<Response> {
    let f = Filter {
        framework: q.framework,
        agent_id: q.agent_id,
        status: q.status,
    };
    let e = service::export(&state, by.0.tenant(), &tool, &f, q.resource_id.as_deref()).await?;
    Ok(attachment(e))
}

/// The latest results for Vanta (CONTRACT 25): the body of Vanta's `PUT
/// /v1/resources/custom_resource/sync_all` for the custom resource type `resource_id`.
/// Sent as an attachment.
#[utoipa::path(get, path = "/compliance/export/vanta", tag = "compliance",
    params(VantaQuery),
    responses((status = 200, description = "The export (JSON)", content((Object = "application/json"))),
        (status = 404, body = Problem), (status = 422, body = Problem)))]
pub(crate) async fn export_compliance_vanta(
    State(state): State<AppState>,
    by: Viewer,
    Query(q): Query<VantaQuery>,
) -> ApiResult<Response> {
    let f = Filter {
        framework: q.framework,
        agent_id: q.agent_id,
        status: q.status,
    };
    let e = service::export(&state, by.0.tenant(), "vanta", &f, q.resource_id.as_deref()).await?;
    Ok(attachment(e))
}

/// An export as a download.
pub fn attachment(e: service::Export) -> Response {
    (
        [
            (header::CONTENT_TYPE, e.content_type.to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{}\"", e.filename),
            ),
        ],
        e.body,
    )
        .into_response()
}

/// The security view (CONTRACT 25): every honeypot governance sets with its latest touch
/// (a touch raises a critical alert), every host's DNA (a change raises the `dna_changed`
/// integrity anomaly), and hosts not heard from for three push intervals.
#[utoipa::path(get, path = "/security", tag = "security",
    responses((status = 200, body = SecurityView)))]
pub(crate) async fn security_view(
    State(state): State<AppState>,
    by: Viewer,
) -> ApiResult<axum::Json<SecurityView>> {
    service::security(&state, by.0.tenant())
        .await
        .map(axum::Json)
}
