//! Advisory data sources (CONTRACT 15): what is loaded and how fresh it is, and an admin's
//! upload of OSV records for the tenant (hub-wide data comes from `trusthub cve import`).

use crate::auth::{Admin, Operator, Viewer};
use crate::cve::ImportReport;
use crate::error::{ApiResult, Problem};
use crate::extract::{Json, Meta, Path, Query};
use crate::openapi::api_routes;
use crate::service::cve::{self as service, *};
use crate::state::AppState;
use axum::extract::State;
use axum::http::HeaderMap;
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(api_routes!(sources))
        .routes(api_routes!(findings))
        .routes(api_routes!(coverage))
        .routes(api_routes!(acknowledge, unacknowledge))
        .routes(api_routes!(advisory))
        .routes(api_routes!(import))
}

/// Advisory data visible to the tenant (hub-wide and its own uploads), per ecosystem.
#[utoipa::path(get, path = "/cve/sources", tag = "cve", responses((status = 200, body = Vec<Source>)))]
pub(crate) async fn sources(
    State(state): State<AppState>,
    by: Viewer,
) -> ApiResult<axum::Json<Vec<Source>>> {
    service::sources(&state, &by).await.map(axum::Json)
}

/// Upload OSV records for this tenant (admin): a zip of OSV JSON files, in the OSV bucket's
/// layout (`<Ecosystem>/<ID>.json`, an ecosystem's `all.zip`, or zips of those) or flat.
/// Records are stored by id and `modified` (re-uploading older data changes nothing). The
/// tenant's scans use these records besides the hub-wide data.
///
/// All or nothing (CONTRACT 18): any file that is not an OSV record makes the answer 422 with
/// `errors[]` naming every such file, and nothing is stored; records the hub stores but
/// cannot evaluate in full are listed in `skipped`. The upload is read as a stream: at most
/// 512 MiB compressed, `TRUSTHUB_IMPORT_MAX_BYTES` (4 GiB) decompressed and 64 MiB (and
/// 500,000 JSON values) per record, else 413; an archive nested deeper than the `all.zip`
/// inside the upload is 422 naming the entry; JSON nested deeper than 128 or with a duplicate
/// key is 400. Audit `cve_import` (with counts) or `cve_import_failed` (with the reason).
#[utoipa::path(post, path = "/cve/sources/import", tag = "cve",
    request_body(content = Vec<u8>, content_type = "application/zip", description = "A zip of OSV JSON records"),
    responses((status = 200, body = ImportReport), (status = 400, description = "Not a zip, a damaged entry, or a record's JSON too deep or with a duplicate key", body = Problem),
        (status = 413, description = "Over the upload, decompressed or per-record bound", body = Problem),
        (status = 415, body = Problem),
        (status = 422, description = "Files that are not OSV records, or an archive nested too deep: nothing stored", body = Problem)))]
pub(crate) async fn import(
    State(state): State<AppState>,
    meta: Meta,
    by: Admin,
    headers: HeaderMap,
    body: axum::body::Body,
) -> ApiResult<axum::Json<ImportReport>> {
    service::import(&state, &meta, &by, &headers, body)
        .await
        .map(axum::Json)
}

/// The tenant's vulnerability findings (viewer), worst first: what the scans of its hosts'
/// OS packages (by source package, in the host's release) and lockfile dependencies found in
/// the advisory data. Fixed findings stay listed with `fixed_at`.
#[utoipa::path(get, path = "/inventory/cves", tag = "cve", params(FindingsQuery),
    responses((status = 200, body = FindingsPage), (status = 422, body = Problem)))]
pub(crate) async fn findings(
    State(state): State<AppState>,
    by: Viewer,
    Query(q): Query<FindingsQuery>,
) -> ApiResult<axum::Json<FindingsPage>> {
    service::findings(&state, &by, q).await.map(axum::Json)
}

/// Acknowledge a finding (operator): it stays listed as `acknowledged` and is never
/// auto-patched. 409 when it is already acknowledged. Audit `cve_finding_acknowledged`.
#[utoipa::path(post, path = "/cve-findings/{id}/acknowledge", tag = "cve",
    params(("id" = Uuid, Path, description = "Finding id")), request_body = AckRequest,
    responses((status = 200, body = FindingView), (status = 404, body = Problem), (status = 409, body = Problem)))]
pub(crate) async fn acknowledge(
    State(state): State<AppState>,
    meta: Meta,
    by: Operator,
    Path(id): Path<Uuid>,
    Json(req): Json<AckRequest>,
) -> ApiResult<axum::Json<FindingView>> {
    service::acknowledge(&state, &meta, &by, id, req)
        .await
        .map(axum::Json)
}

/// Take an acknowledgement back (operator): the finding is `open` again. 409 when it is not
/// acknowledged. Audit `cve_finding_unacknowledged`.
#[utoipa::path(delete, path = "/cve-findings/{id}/acknowledge", tag = "cve",
    params(("id" = Uuid, Path, description = "Finding id")),
    responses((status = 200, body = FindingView), (status = 404, body = Problem), (status = 409, body = Problem)))]
pub(crate) async fn unacknowledge(
    State(state): State<AppState>,
    meta: Meta,
    by: Operator,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<FindingView>> {
    service::unacknowledge(&state, &meta, &by, id)
        .await
        .map(axum::Json)
}

/// One advisory by its id or one of its aliases (`CVE-…`), with this tenant's findings of it
/// (viewer). 404 when no advisory visible to the tenant has that id.
#[utoipa::path(get, path = "/cves/{vuln_id}", tag = "cve",
    params(("vuln_id" = String, Path, description = "Advisory id or alias")),
    responses((status = 200, body = AdvisoryView), (status = 404, body = Problem)))]
pub(crate) async fn advisory(
    State(state): State<AppState>,
    by: Viewer,
    Path(vuln_id): Path<String>,
) -> ApiResult<axum::Json<AdvisoryView>> {
    service::advisory(&state, &by, vuln_id)
        .await
        .map(axum::Json)
}

/// Every source of every host's packages (viewer) and what the host's last vulnerability
/// scan could check of it (CONTRACT 29), by host name then in the order the agent reported
/// them (the OS package database first). A host with no finding is only clean for the
/// sources listed here as `covered`; a host not scanned yet has no rows.
#[utoipa::path(get, path = "/inventory/cves/coverage", tag = "cve", params(CoverageQuery),
    responses((status = 200, body = Vec<SourceView>), (status = 404, body = Problem)))]
pub(crate) async fn coverage(
    State(state): State<AppState>,
    by: Viewer,
    Query(q): Query<CoverageQuery>,
) -> ApiResult<axum::Json<Vec<SourceView>>> {
    sources_of(&state, &by, &q).await.map(axum::Json)
}
