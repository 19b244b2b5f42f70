//! LLM trace intake over our API (CONTRACT 9, CONTRACT 13).

use super::*;

/// A time as stored: UTC, whole seconds (so SQLite's text order is time order).
pub(crate) fn stored_time(t: OffsetDateTime) -> OffsetDateTime {
    let t = t.to_offset(time::UtcOffset::UTC);
    t.replace_nanosecond(0).unwrap_or(t)
}

/// Most traces per request.
pub const MAX_TRACES: usize = 500;

/// Most calls per trace.
pub const MAX_CALLS: usize = 1000;

/// Largest blob text.
pub const MAX_BLOB: usize = 256 * 1024;

/// One LLM call.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CallIn {
    /// Unique within its trace; a call is identified by `(trace_id, span_id)`, and a known
    /// one is counted in `duplicate_calls` and not stored again (idempotence).
    #[schema(pattern = r"^[A-Za-z0-9_.:-]+$", min_length = 1, max_length = 128)]
    pub span_id: String,
    /// Model name as the provider reports it.
    #[schema(
        pattern = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$",
        min_length = 1,
        max_length = 200
    )]
    pub model: String,
    /// All input tokens.
    pub prompt_tokens: u64,
    /// All output tokens.
    pub completion_tokens: u64,
    /// Milliseconds.
    pub latency_ms: u64,
    /// SHA-256 (hex) of the redacted prompt.
    #[schema(pattern = r"^[0-9a-f]{64}$")]
    pub prompt_sha256: String,
    /// The model refused.
    #[serde(default)]
    pub refused: bool,
    /// SHA-256 (hex) of the redacted content, when it is sent in `blobs`.
    #[schema(pattern = r"^[0-9a-f]{64}$")]
    pub content_sha256: Option<String>,
    /// Provider.
    pub provider: Option<String>,
    /// Of the input, read from the prompt cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Of the input, written to the prompt cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// Of the output, reasoning.
    #[serde(default)]
    pub reasoning_tokens: u64,
}

/// One trace.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TraceIn {
    /// Unique per tenant; a known trace is kept as stored (idempotence) and only its calls
    /// not stored yet are added.
    #[schema(pattern = r"^[A-Za-z0-9_.:-]+$", min_length = 1, max_length = 128)]
    pub trace_id: String,
    /// Name.
    #[schema(
        pattern = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$",
        min_length = 1,
        max_length = 200
    )]
    pub name: String,
    /// Team (the SDK's configured team).
    #[schema(
        pattern = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$",
        min_length = 1,
        max_length = 100
    )]
    pub team: String,
    /// An app of your tenant.
    pub app_id: Option<Uuid>,
    /// Start, RFC 3339 (stored in UTC to the second).
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub started_at: OffsetDateTime,
    /// End, RFC 3339, not before the start.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub ended_at: OffsetDateTime,
    /// Tags.
    #[serde(default)]
    #[schema(value_type = Vec<crate::openapi::Label>, max_items = 32)]
    pub tags: Vec<String>,
    /// Calls.
    #[serde(default)]
    #[schema(max_items = 1000)]
    pub calls: Vec<CallIn>,
}

/// Redacted content, stored once per SHA-256.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BlobIn {
    /// SHA-256 (hex) of `text`; checked.
    pub sha256: String,
    /// The redacted text (at most 256 KiB).
    pub text: String,
}

/// A batch of traces (CONTRACT 9).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TracesIn {
    /// 1 to 500 traces.
    #[schema(min_items = 1, max_items = 500)]
    pub traces: Vec<TraceIn>,
    /// Content blobs, only when the sender chose to send redacted content.
    #[serde(default)]
    pub blobs: Vec<BlobIn>,
}

/// What was stored.
#[derive(Debug, Serialize, ToSchema)]
pub struct TracesAccepted {
    /// New traces.
    pub accepted_traces: usize,
    /// Traces already known: the stored trace is kept as it is, and its new calls are added
    /// to it.
    pub duplicate_traces: usize,
    /// New calls, stored.
    pub accepted_calls: usize,
    /// Calls already stored under the same `(trace_id, span_id)` (a retry): not stored
    /// again. `accepted_calls + duplicate_calls` is every call sent.
    pub duplicate_calls: usize,
    /// New blobs (known hashes are not stored twice).
    pub stored_blobs: usize,
}

pub(crate) fn hex64(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
}

pub(crate) fn ident(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"-_.:".contains(&c))
}

pub(crate) fn label(s: &str, max: usize) -> bool {
    let t = s.trim();
    !t.is_empty() && t.chars().count() <= max && !t.chars().any(char::is_control)
}

/// Who may send traces: an `ai_ingest` or `write` token (a `write` token of an operator or
/// above), or the session of an operator or above.
pub(crate) fn may_send_traces(p: &crate::auth::Principal) -> ApiResult<()> {
    let allowed = matches!(
        p.credential,
        Credential::Token {
            scope: TokenScope::AiIngest | TokenScope::Write,
            ..
        }
    ) && (p.role.is_none() || p.has_role(Role::Operator))
        || (matches!(p.credential, Credential::Session { .. }) && p.has_role(Role::Operator));
    if allowed {
        Ok(())
    } else {
        Err(ApiError::Forbidden(
            "sending traces needs an ai_ingest or write token, or an operator".into(),
        ))
    }
}

/// The service behind the `ingest` handler, for the API and the dashboard alike.
pub async fn ingest(
    state: &AppState,
    by: &TraceSender,
    req: TracesIn,
) -> ApiResult<(StatusCode, TracesAccepted)> {
    let p = &by.0;
    may_send_traces(p)?;
    let mut errors = Vec::new();
    let mut err = |field: String, m: &str| {
        if errors.len() < 50 {
            errors.push(FieldError::new(field, m))
        }
    };
    if req.traces.is_empty() || req.traces.len() > MAX_TRACES {
        err("traces".into(), "must hold 1 to 500 traces");
    }
    let mut trace_ids = HashSet::new();
    let mut app_ids = HashSet::new();
    for (i, t) in req.traces.iter().enumerate() {
        let f = |k: &str| format!("traces[{i}].{k}");
        if !ident(&t.trace_id, 128) || !trace_ids.insert(t.trace_id.as_str()) {
            err(
                f("trace_id"),
                "must be 1-128 characters of letters, digits and - _ . :, unique in the request",
            );
        }
        if !label(&t.name, 200) {
            err(f("name"), "must be 1-200 characters");
        }
        if !label(&t.team, 100) {
            err(f("team"), "must be 1-100 characters");
        }
        if t.ended_at < t.started_at {
            err(f("ended_at"), "must not be before started_at");
        }
        if t.tags.len() > 32 || t.tags.iter().any(|g| !label(g, 100)) {
            err(f("tags"), "at most 32 tags of 1-100 characters");
        }
        if let Some(a) = t.app_id {
            app_ids.insert(a);
        }
        if t.calls.len() > MAX_CALLS {
            err(f("calls"), "at most 1000 calls per trace");
        }
        let mut span_ids = HashSet::new();
        for (j, c) in t.calls.iter().enumerate() {
            let g = |k: &str| format!("traces[{i}].calls[{j}].{k}");
            if !ident(&c.span_id, 128) || !span_ids.insert(c.span_id.as_str()) {
                err(
                    g("span_id"),
                    "must be 1-128 characters of letters, digits and - _ . :, unique in its trace",
                );
            }
            if !label(&c.model, 200) {
                err(g("model"), "must be 1-200 characters");
            }
            if !hex64(&c.prompt_sha256) {
                err(g("prompt_sha256"), "must be 64 lowercase hex characters");
            }
            if c.content_sha256.as_deref().is_some_and(|h| !hex64(h)) {
                err(g("content_sha256"), "must be 64 lowercase hex characters");
            }
            let usage = Usage {
                prompt_tokens: c.prompt_tokens,
                completion_tokens: c.completion_tokens,
                cache_read_tokens: c.cache_read_tokens,
                cache_write_tokens: c.cache_write_tokens,
                reasoning_tokens: c.reasoning_tokens,
            };
            if let Err(e) = usage.check() {
                err(g("tokens"), &e.to_string());
            }
            let big = [c.prompt_tokens, c.completion_tokens, c.latency_ms]
                .iter()
                .any(|v| *v > i64::MAX as u64 / 2);
            if big {
                err(
                    g("tokens"),
                    "token counts and latency must be reasonable numbers",
                );
            }
        }
    }
    for (k, b) in req.blobs.iter().enumerate() {
        use sha2::Digest;
        let actual = trusthub_core::secret::hex(&sha2::Sha256::digest(b.text.as_bytes()));
        if b.text.len() > MAX_BLOB {
            err(format!("blobs[{k}].text"), "must be at most 256 KiB");
        } else if actual != b.sha256 {
            err(format!("blobs[{k}].sha256"), "is not the SHA-256 of text");
        }
    }
    if !app_ids.is_empty() {
        let mut c = state.db.conn().await?;
        for a in &app_ids {
            if trusthub_monitors::app(&mut c, p.tenant(), *a)
                .await?
                .is_none()
            {
                err("app_id".into(), "is not an app of your tenant");
            }
        }
    }
    all_valid(errors)?;
    let now = now();
    let mut out = TracesAccepted {
        accepted_traces: 0,
        duplicate_traces: 0,
        accepted_calls: 0,
        duplicate_calls: 0,
        stored_blobs: 0,
    };
    let mut tx = state.db.begin().await?;
    for t in &req.traces {
        let tags: Vec<String> = t.tags.iter().map(|g| g.trim().to_owned()).collect();
        let mut trace = NewTrace {
            trace_id: &t.trace_id,
            name: t.name.trim(),
            team: t.team.trim(),
            app_id: t.app_id,
            started_at: stored_time(t.started_at),
            ended_at: stored_time(t.ended_at),
            tags: &tags,
        };
        let stored_team;
        if store::insert_trace(&mut tx, p.tenant(), &trace, now).await? {
            out.accepted_traces += 1;
        } else {
            // Calls of a known trace carry the stored trace's start and team.
            out.duplicate_traces += 1;
            if let Some((started_at, team)) =
                store::trace_key(&mut tx, p.tenant(), &t.trace_id).await?
            {
                stored_team = team;
                trace.started_at = started_at;
                trace.team = &stored_team;
            }
        }
        for c in &t.calls {
            let as_i64 = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
            let call = NewCall {
                span_id: &c.span_id,
                model: c.model.trim(),
                provider: c.provider.as_deref(),
                prompt_tokens: as_i64(c.prompt_tokens),
                completion_tokens: as_i64(c.completion_tokens),
                cache_read_tokens: as_i64(c.cache_read_tokens),
                cache_write_tokens: as_i64(c.cache_write_tokens),
                reasoning_tokens: as_i64(c.reasoning_tokens),
                latency_ms: as_i64(c.latency_ms),
                prompt_sha256: &c.prompt_sha256,
                content_sha256: c.content_sha256.as_deref(),
                refused: c.refused,
            };
            if store::insert_call(&mut tx, p.tenant(), &trace, &call).await? {
                out.accepted_calls += 1;
            } else {
                out.duplicate_calls += 1;
            }
        }
    }
    for b in &req.blobs {
        out.stored_blobs +=
            usize::from(store::insert_blob(&mut tx, p.tenant(), &b.sha256, &b.text, now).await?);
    }
    tx.commit().await?;
    Ok((StatusCode::ACCEPTED, (out)))
}
