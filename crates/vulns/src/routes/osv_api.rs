//! The OSV-compatible query API over the imported advisory data (CONTRACT 15), at the root
//! (`//osv/v1/query`, `//osv/v1/querybatch`) so OSV clients (osv-scanner and others) can use
//! the hub as their database with a bearer API token: the request and response shapes of
//! api.osv.dev.

use crate::auth::Viewer;
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::Json;
use crate::openapi::api_routes;
use crate::service::osv_api::{self as service, *};
use crate::state::AppState;
use axum::extract::State;
use serde_json::Value;
use utoipa_axum::router::OpenApiRouter;

pub fn router() -> OpenApiRouter<AppState> {
    let mut r = OpenApiRouter::new()
        .routes(api_routes!(query))
        .routes(api_routes!(querybatch));
    // A package is named by a purl, or by a name and an ecosystem: one of the two.
    {
        use serde_json::json;
        use trusthub_platform::openapi::{Variant, one_of};
        let none = json!({"type": "null", "description": "Not with this form."});
        one_of(
            r.get_openapi_mut(),
            "QueryPackage",
            vec![
                Variant::new(
                    json!({"purl": {"type": "string", "maxLength": 1000, "pattern": r"\S"},
                        "name": none, "ecosystem": none}),
                    &["purl"],
                ),
                Variant::new(
                    json!({"purl": none, "name": {"type": "string", "maxLength": 500, "pattern": r"\S"},
                        "ecosystem": {"type": "string", "maxLength": 100, "pattern": r"\S"}}),
                    &["name", "ecosystem"],
                ),
            ],
        );
    }
    r
}

/// Query one package (bearer API token or session; viewer): the OSV records of the
/// tenant's advisory data (hub-wide and its own uploads) that affect `version` — by the
/// ecosystem's own version order and every range event kind — or, without a version, every
/// record naming the package. Withdrawn records never match. Shapes as api.osv.dev's
/// `POST /v1/query`; the whole answer comes in one page (no `next_page_token`).
///
/// Beyond the schema: `version` must be readable in the ecosystem's version syntax; a purl must be of a type served here (npm, pypi, gem, golang, composer, deb, apk, rpm), and a purl with a version takes no `version`.
#[utoipa::path(post, path = "/osv/v1/query", tag = "cve", request_body = OsvQuery,
    responses((status = 200, body = QueryResponse), (status = 422, body = Problem)))]
pub(crate) async fn query(
    State(state): State<AppState>,
    Viewer(p): Viewer,
    Json(q): Json<OsvQuery>,
) -> ApiResult<axum::Json<Value>> {
    let (eco, name, version) = read(&q, "").map_err(|e| ApiError::Validation(vec![e]))?;
    let mut c = state.db.conn().await?;
    let scope = p.tenant().0.to_string();
    let records = answer(&mut c, &scope, &eco, &name, version.as_deref()).await?;
    let vulns: Vec<Value> = records.into_iter().map(|(_, raw)| raw).collect();
    Ok(axum::Json(
        serde_json::to_value(QueryResponse { vulns }).unwrap_or_default(),
    ))
}

/// Query many packages at once (viewer): up to 1000 queries, answered in their order with
/// the id and `modified` of each matching record, as api.osv.dev's `POST /v1/querybatch`.
/// A refused query refuses the batch (422 naming `queries[i]…`).
///
/// Beyond the schema: each query as `POST /osv/v1/query` says: `version` readable in the ecosystem's syntax, a purl of a type served here, no `version` beside a versioned purl.
#[utoipa::path(post, path = "/osv/v1/querybatch", tag = "cve", request_body = BatchQuery,
    responses((status = 200, body = BatchResponse), (status = 422, body = Problem)))]
pub(crate) async fn querybatch(
    State(state): State<AppState>,
    by: Viewer,
    Json(b): Json<BatchQuery>,
) -> ApiResult<axum::Json<BatchResponse>> {
    service::querybatch(&state, &by, b).await.map(axum::Json)
}
