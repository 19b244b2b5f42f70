//! LLM trace intake over our API (CONTRACT 9, CONTRACT 13).

use super::*;
use crate::service::ai::traces::{self as service, *};

/// Send LLM traces: an API token with scope `ai_ingest` (or `write`), or a session of an
/// operator or above. Validation is all-or-nothing (422 names every bad field, nothing is
/// stored); a call is identified by `(trace_id, span_id)` and a known one is counted in
/// `duplicate_calls`, not stored twice, so retries are harmless and nothing is dropped
/// uncounted. Blobs must
/// hash to their `sha256` and are stored once per hash.
///
/// Beyond the schema: `app_id` must be an app of your tenant, `ended_at` not before `started_at`, and the token counts consistent with each other.
#[utoipa::path(post, path = "/ai/traces", tag = "ai", request_body = TracesIn,
    responses((status = 202, body = TracesAccepted), (status = 403, body = Problem), (status = 422, body = Problem)))]
pub(crate) async fn ingest(
    State(state): State<AppState>,
    by: TraceSender,
    Json(req): Json<TracesIn>,
) -> ApiResult<(StatusCode, axum::Json<TracesAccepted>)> {
    service::ingest(&state, &by, req)
        .await
        .map(|(status, v)| (status, axum::Json(v)))
}
