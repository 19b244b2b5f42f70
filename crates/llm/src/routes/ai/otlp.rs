//! OTLP/HTTP trace intake (OpenTelemetry GenAI conventions).

use super::*;
use crate::service::ai::otlp as service;

/// OTLP/HTTP trace export (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=<hub>/api/v1/otlp/v1/traces`,
/// `OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer <token>`): `application/x-protobuf` or
/// `application/json`, optionally gzip. Same senders as `/ai/traces`. Spans with the
/// OpenTelemetry GenAI conventions become calls: model `gen_ai.request.model` (else
/// `gen_ai.response.model`); tokens `gen_ai.usage.input_tokens` / `output_tokens` /
/// `cache_read.input_tokens` / `cache_creation.input_tokens` / `reasoning.output_tokens` (and
/// their older names); provider `gen_ai.provider.name` (else `gen_ai.system`); refused when
/// `gen_ai.response.finish_reasons` holds `content_filter` or `refusal`. **Team**: span
/// attribute `trusthub.team`, else resource attribute `trusthub.team`, else the resource's
/// `service.name`, else `default`. The prompt is never stored: `trusthub.prompt_sha256` if
/// sent, else the SHA-256 of the prompt attributes' text after redaction, else of the empty
/// string. Other spans give their trace its name (the root span's) and time range; a trace
/// is stored once one of its spans is an LLM call, and later exports widen it. Idempotent per
/// span id. Answers 200 with an `ExportTraceServiceResponse` (in the request's encoding) whose
/// `partial_success` counts refused spans; an unreadable body is 400.
#[utoipa::path(post, path = "/otlp/v1/traces", tag = "ai",
    request_body(content = Vec<u8>, content_type = "application/x-protobuf", description = "ExportTraceServiceRequest (or OTLP/JSON)"),
    responses((status = 200, description = "ExportTraceServiceResponse"), (status = 400, body = Problem),
        (status = 403, body = Problem), (status = 415, body = Problem)))]
pub(crate) async fn otlp_traces(
    State(state): State<AppState>,
    by: TraceSender,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> ApiResult<axum::response::Response> {
    service::otlp_traces(&state, &by, &headers, &body).await
}
