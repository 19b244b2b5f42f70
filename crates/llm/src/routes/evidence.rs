//! Evidence packs (SPEC 2.10, 4.10 and its Appendix; CONTRACT 8): create, list, read,
//! download, and the public evidence key auditors pin.

use crate::auth::{Operator, Viewer};
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{Json, Meta, Path, Query};
use crate::openapi::api_routes;
use crate::service::evidence::{self as service, *};
use crate::state::AppState;
use crate::store::evidence::{self as store};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use utoipa_axum::router::OpenApiRouter;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(api_routes!(create, list))
        .routes(api_routes!(get_pack))
        .routes(api_routes!(download))
        .routes(api_routes!(evidence_key))
}

/// Build a signed evidence pack of the LLM traces that started in `[period_start,
/// period_end)` (operator; a session or a `write` token). Deterministic (CONTRACT 8): asking
/// again with the same inputs over unchanged data answers 200 with the existing pack (same
/// `pack_id`, byte-identical manifest); otherwise 201 with a new one. Each new pack is an
/// `evidence_pack_created` entry in the transparency log and the audit log. Large periods
/// are built on disk, page by page; two builds run at once per hub process, more wait.
///
/// Beyond the schema: `period_end` must be after `period_start`, and `app_id` an app of your tenant.
#[utoipa::path(post, path = "/ai/evidence-packs", tag = "evidence", request_body = CreatePack,
    responses((status = 201, body = PackView, description = "A new pack"),
        (status = 200, body = PackView, description = "The existing pack over the same inputs and unchanged data"),
        (status = 422, body = Problem)))]
pub(crate) async fn create(
    State(state): State<AppState>,
    meta: Meta,
    Operator(p): Operator,
    Json(req): Json<CreatePack>,
) -> ApiResult<(StatusCode, axum::Json<PackView>)> {
    create_pack(&state, &meta, &p, req).await
}

/// Your tenant's packs, newest first (viewer).
#[utoipa::path(get, path = "/ai/evidence-packs", tag = "evidence", params(ListQuery),
    responses((status = 200, body = Vec<PackView>)))]
pub(crate) async fn list(
    State(state): State<AppState>,
    Viewer(p): Viewer,
    Query(q): Query<ListQuery>,
) -> ApiResult<axum::Json<Vec<PackView>>> {
    let limit = ApiError::page_limit(q.limit, 100, 500)?;
    let mut c = state.db.conn().await?;
    let packs = store::list(&mut c, p.tenant(), q.before.unwrap_or(i64::MAX), limit).await?;
    Ok(axum::Json(packs.into_iter().map(PackView::from).collect()))
}

/// One pack (viewer).
#[utoipa::path(get, path = "/ai/evidence-packs/{id}", tag = "evidence",
    params(("id" = i64, Path, description = "pack_id")),
    responses((status = 200, body = PackView), (status = 404, body = Problem)))]
pub(crate) async fn get_pack(
    State(state): State<AppState>,
    Viewer(p): Viewer,
    Path(id): Path<i64>,
) -> ApiResult<axum::Json<PackView>> {
    let mut c = state.db.conn().await?;
    let pack = store::get(&mut c, p.tenant(), id)
        .await?
        .ok_or(ApiError::NotFound("evidence pack"))?;
    Ok(axum::Json(pack.into()))
}

/// Download the bundle `pack-<id>.tar.gz` (viewer): manifest.json, manifest.sig,
/// traces.jsonl, spans.jsonl and blobs/<hash>.txt, streamed from disk.
#[utoipa::path(get, path = "/ai/evidence-packs/{id}/download", tag = "evidence",
    params(("id" = i64, Path, description = "pack_id")),
    responses((status = 200, content_type = "application/gzip", description = "The bundle"),
        (status = 404, body = Problem)))]
pub(crate) async fn download(
    State(state): State<AppState>,
    by: Viewer,
    Path(id): Path<i64>,
) -> ApiResult<Response> {
    service::download(&state, &by, id).await
}

/// The public key evidence packs are signed with, and its fingerprint (no authentication:
/// auditors need it without an account).
#[utoipa::path(get, path = "/ai/evidence-key", tag = "evidence", responses((status = 200, body = EvidenceKey)))]
pub(crate) async fn evidence_key(State(state): State<AppState>) -> axum::Json<EvidenceKey> {
    let public = state
        .part::<crate::evidence::EvidenceKey>()
        .0
        .verifying_key();
    axum::Json(EvidenceKey {
        algorithm: "Ed25519".into(),
        public_key_hex: trusthub_core::secret::hex(public.as_bytes()),
        fingerprint_sha256: trusthub_core::evidence::key_fingerprint(&public),
    })
}
