//! Exports of the findings that other tools read (CONTRACT 15): SARIF 2.1.0 of the tenant's
//! open findings and a CycloneDX 1.6 SBOM per host with its vulnerabilities.

use crate::auth::Viewer;
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{Path, Query};
use crate::openapi::api_routes;
use crate::service::cve_export::{self as service, *};
use crate::state::{AppState, now};
use crate::store::cve::Filter;
use axum::extract::State;
use axum::response::Response;
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(api_routes!(sarif))
        .routes(api_routes!(sbom))
}

/// SARIF 2.1.0 of the tenant's open findings (viewer): one rule per vulnerability, one
/// result per open finding (neither suppressed, acknowledged nor fixed), located at the
/// lockfile (`file:///srv/app/package-lock.json`; the project folder for agents that do not
/// report the lockfile's name) or `os-packages`. Levels: CRITICAL and HIGH `error`, MEDIUM
/// `warning`, the rest `note`; `security-severity` carries the CVSS score.
#[utoipa::path(get, path = "/inventory/cves/export.sarif", tag = "cve", params(SarifQuery),
    responses((status = 200, description = "A SARIF 2.1.0 log", content_type = "application/sarif+json", body = Object),
        (status = 400, body = Problem)))]
pub(crate) async fn sarif(
    State(state): State<AppState>,
    by: Viewer,
    Query(q): Query<SarifQuery>,
) -> ApiResult<Response> {
    service::sarif(&state, &by, q).await
}

/// The host's CycloneDX 1.6 SBOM (viewer): every package of its latest inventory (OS
/// packages and lockfile dependencies, with purls) and a `vulnerabilities` section of its
/// unfixed findings (suppressed ones with `analysis.state` `not_affected` and the reason,
/// acknowledged ones `exploitable` / `will_not_fix`). 404 for another tenant's host.
#[utoipa::path(get, path = "/agents/{id}/sbom.cdx.json", tag = "cve",
    params(("id" = Uuid, Path, description = "Agent id")),
    responses((status = 200, description = "A CycloneDX 1.6 JSON BOM", content_type = "application/vnd.cyclonedx+json", body = Object),
        (status = 404, body = Problem)))]
pub(crate) async fn sbom(
    State(state): State<AppState>,
    Viewer(p): Viewer,
    Path(id): Path<Uuid>,
) -> ApiResult<Response> {
    let now = now();
    let mut c = state.db.conn().await?;
    let Some(agent) = trusthub_fleet::agent(&mut c, p.tenant(), id).await? else {
        return Err(ApiError::NotFound("agent"));
    };
    let inv = trusthub_fleet::latest_inventory(&mut c, p.tenant(), id).await?;
    let filter = Filter {
        agent_id: Some(id),
        status: Some("unfixed".into()),
        ..Default::default()
    };
    let findings =
        crate::store::cve::list(&mut c, p.tenant(), &filter, None, i64::MAX, now).await?;
    let bom = cyclonedx(
        &agent.hostname,
        id,
        inv.as_ref().map(|r| &r.inventory),
        inv.as_ref().map(|r| r.collected_at),
        &findings,
        now,
    );
    Ok(json_file(
        &bom,
        "application/vnd.cyclonedx+json; version=1.6",
    ))
}
