//! OTLP/HTTP trace intake (OpenTelemetry GenAI conventions).

use super::*;

/// The service behind the `otlp_traces` handler, for the API and the dashboard alike.
pub async fn otlp_traces(
    state: &AppState,
    by: &TraceSender,
    headers: &axum::http::HeaderMap,
    body: &axum::body::Bytes,
) -> ApiResult<axum::response::Response> {
    let p = &by.0;
    may_send_traces(p)?;
    let header = |name: header::HeaderName| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_ascii_lowercase)
            .unwrap_or_default()
    };
    let content_type = header(header::CONTENT_TYPE);
    let json = if content_type.starts_with("application/x-protobuf")
        || content_type.starts_with("application/protobuf")
    {
        false
    } else if content_type.starts_with("application/json") {
        true
    } else {
        return Err(ApiError::UnsupportedMediaType(
            "expected Content-Type application/x-protobuf or application/json (OTLP/HTTP)".into(),
        ));
    };
    let encoding = header(header::CONTENT_ENCODING);
    let raw = crate::extract::decode_content(
        if encoding.is_empty() {
            "identity"
        } else {
            &encoding
        },
        body,
    )?;
    let spans = if json {
        crate::otlp::decode_json(&raw)
    } else {
        crate::otlp::decode_protobuf(&raw)
    }
    .map_err(|e| ApiError::BadRequest(format!("not an OTLP ExportTraceServiceRequest: {e}")))?;
    let mapped = crate::otlp::map(&spans);
    let at = |ns: u64| {
        stored_time(
            OffsetDateTime::from_unix_timestamp_nanos(i128::from(ns))
                .unwrap_or(OffsetDateTime::UNIX_EPOCH),
        )
    };
    let now = now();
    let mut tx = state.db.begin().await?;
    for t in &mapped.traces {
        let merged = store::MergedTrace {
            trace_id: &t.trace_id,
            name: &t.name.chars().take(200).collect::<String>(),
            team: &t.team.chars().take(100).collect::<String>(),
            root: t.root_seen,
            started_at: at(t.start_ns),
            ended_at: at(t.end_ns),
        };
        let Some((started_at, team)) =
            store::merge_trace(&mut tx, p.tenant(), &merged, !t.calls.is_empty(), now).await?
        else {
            continue;
        };
        let tags: Vec<String> = Vec::new();
        let trace = NewTrace {
            trace_id: &t.trace_id,
            name: merged.name,
            team: &team,
            app_id: None,
            started_at,
            ended_at: merged.ended_at,
            tags: &tags,
        };
        for c in &t.calls {
            let as_i64 = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
            let call = NewCall {
                span_id: &c.span_id,
                model: &c.model,
                provider: c.provider.as_deref(),
                prompt_tokens: as_i64(c.usage.prompt_tokens),
                completion_tokens: as_i64(c.usage.completion_tokens),
                cache_read_tokens: as_i64(c.usage.cache_read_tokens),
                cache_write_tokens: as_i64(c.usage.cache_write_tokens),
                reasoning_tokens: as_i64(c.usage.reasoning_tokens),
                latency_ms: as_i64(c.latency_ms),
                prompt_sha256: &c.prompt_sha256,
                content_sha256: None,
                refused: c.refused,
            };
            store::insert_call(&mut tx, p.tenant(), &trace, &call).await?;
        }
    }
    tx.commit().await?;
    let message = mapped.errors.join("; ");
    Ok(if json {
        let body = if mapped.rejected == 0 {
            serde_json::json!({})
        } else {
            serde_json::json!({"partialSuccess": {"rejectedSpans": mapped.rejected.to_string(), "errorMessage": message}})
        };
        (StatusCode::OK, axum::Json(body)).into_response()
    } else {
        (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/x-protobuf")],
            crate::otlp::encode_response(mapped.rejected, &message),
        )
            .into_response()
    })
}
