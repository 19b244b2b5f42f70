//! Advisory data sources (CONTRACT 15): what is loaded and how fresh it is, and an admin's
//! upload of OSV records for the tenant (hub-wide data comes from `trusthub cve import`).

use crate::auth::{Admin, Viewer};
use crate::cve::{ImportError, ImportReport};
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::Meta;
use crate::openapi::api_routes;
use crate::state::{AppState, now};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, header};
use serde::Serialize;
use serde_json::json;
use time::OffsetDateTime;
use trusthub_core::audit as ev;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;

/// The largest upload (an ecosystem's `all.zip` of the OSV bucket is a few hundred MiB; the
/// whole database belongs to `trusthub cve import`).
pub const MAX_UPLOAD_BYTES: usize = 512 * 1024 * 1024;

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(api_routes!(sources)).merge(
        OpenApiRouter::new()
            .routes(api_routes!(import))
            .layer(DefaultBodyLimit::max(MAX_UPLOAD_BYTES)),
    )
}

/// What is loaded for one ecosystem.
#[derive(Debug, Serialize, ToSchema)]
pub struct Source {
    /// OSV ecosystem (`npm`, `PyPI`, `Debian:12`, …).
    pub ecosystem: String,
    /// Advisories naming a package of it (withdrawn ones not counted).
    pub advisories: i64,
    /// The newest `modified` among them: how fresh the data is.
    #[serde(with = "time::serde::rfc3339")]
    pub newest_modified: OffsetDateTime,
    /// The last import that brought one of them.
    #[serde(with = "time::serde::rfc3339")]
    pub imported_at: OffsetDateTime,
}

/// Advisory data visible to the tenant (hub-wide and its own uploads), per ecosystem.
#[utoipa::path(get, path = "/cve/sources", tag = "cve", responses((status = 200, body = Vec<Source>)))]
pub(crate) async fn sources(
    State(state): State<AppState>,
    Viewer(p): Viewer,
) -> ApiResult<axum::Json<Vec<Source>>> {
    let mut c = state.db.conn().await?;
    let rows = trusthub_store::osv::sources(&mut c, &p.tenant().0.to_string()).await?;
    Ok(axum::Json(
        rows.into_iter()
            .map(
                |(ecosystem, advisories, newest_modified, imported_at)| Source {
                    ecosystem,
                    advisories,
                    newest_modified,
                    imported_at,
                },
            )
            .collect(),
    ))
}

/// Upload OSV records for this tenant (admin): a zip of OSV JSON files, in the OSV bucket's
/// layout (`<Ecosystem>/<ID>.json`, an ecosystem's `all.zip`, or zips of those) or flat.
/// Records are stored by id and `modified` (re-uploading older data changes nothing); files
/// that are not OSV records are counted and listed, the rest is stored. The tenant's scans
/// use these records besides the hub-wide data. Audit `cve_source_imported`.
#[utoipa::path(post, path = "/cve/sources/import", tag = "cve",
    request_body(content = Vec<u8>, content_type = "application/zip", description = "A zip of OSV JSON records"),
    responses((status = 200, body = ImportReport), (status = 400, description = "Not a zip, or an entry too large", body = Problem),
        (status = 413, body = Problem), (status = 415, body = Problem)))]
pub(crate) async fn import(
    State(state): State<AppState>,
    meta: Meta,
    Admin(p): Admin,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> ApiResult<axum::Json<ImportReport>> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    if !content_type.starts_with("application/zip") {
        return Err(ApiError::UnsupportedMediaType(
            "expected Content-Type application/zip (a zip of OSV JSON records)".into(),
        ));
    }
    let now = now();
    let tenant = p.tenant();
    let report = crate::cve::import_zip(&state.db, &tenant.0.to_string(), body, now)
        .await
        .map_err(|e| match e {
            ImportError::Source(m) => ApiError::BadRequest(m),
            ImportError::Store(s) => s.into(),
        })?;
    let mut tx = state.db.begin().await?;
    trusthub_store::audit::append(
        &mut tx,
        tenant,
        &meta.audit(
            ev::CVE_SOURCE_IMPORTED,
            p.actor(),
            "cve_sources".into(),
            json!({"files": report.files, "inserted": report.inserted, "updated": report.updated,
                "unchanged": report.unchanged, "errors": report.error_count}),
        ),
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(axum::Json(report))
}
