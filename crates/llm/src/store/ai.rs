//! LLM traces and calls (CONTRACT 9), idempotent on `trace_id` / `(trace_id, span_id)`, and content
//! blobs stored once per SHA-256.

use sqlx::types::Json;
use time::OffsetDateTime;
use trusthub_store::{Exec, StoreResult, TenantId, on};
use uuid::Uuid;

/// A trace to store.
#[derive(Debug, Clone)]
pub struct NewTrace<'a> {
    /// Sender's id.
    pub trace_id: &'a str,
    /// Name.
    pub name: &'a str,
    /// Team.
    pub team: &'a str,
    /// App of the tenant.
    pub app_id: Option<Uuid>,
    /// Start.
    pub started_at: OffsetDateTime,
    /// End.
    pub ended_at: OffsetDateTime,
    /// Tags.
    pub tags: &'a [String],
}

/// A call to store.
#[derive(Debug, Clone)]
pub struct NewCall<'a> {
    /// Sender's id.
    pub span_id: &'a str,
    /// Model.
    pub model: &'a str,
    /// Provider.
    pub provider: Option<&'a str>,
    /// Input tokens.
    pub prompt_tokens: i64,
    /// Output tokens.
    pub completion_tokens: i64,
    /// Of the input, read from cache.
    pub cache_read_tokens: i64,
    /// Of the input, written to cache.
    pub cache_write_tokens: i64,
    /// Of the output, reasoning.
    pub reasoning_tokens: i64,
    /// Latency.
    pub latency_ms: i64,
    /// SHA-256 of the redacted prompt.
    pub prompt_sha256: &'a str,
    /// SHA-256 of redacted content, when sent.
    pub content_sha256: Option<&'a str>,
    /// The model refused.
    pub refused: bool,
}

/// Stores a trace unless its `trace_id` is known; true when new.
pub async fn insert_trace(
    ex: &mut impl Exec,
    tenant: TenantId,
    t: &NewTrace<'_>,
    now: OffsetDateTime,
) -> StoreResult<bool> {
    Ok(on!(ex, c => sqlx::query(
        "INSERT INTO ai_traces (tenant_id, trace_id, name, team, app_id, started_at, ended_at, tags, received_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING")
        .bind(tenant.0).bind(t.trace_id).bind(t.name).bind(t.team).bind(t.app_id).bind(t.started_at)
        .bind(t.ended_at).bind(Json(t.tags)).bind(now).execute(&mut *c).await?.rows_affected())
        == 1)
}

/// Stores a call of a trace unless `(trace_id, span_id)` is known; true when new.
pub async fn insert_call(
    ex: &mut impl Exec,
    tenant: TenantId,
    trace: &NewTrace<'_>,
    k: &NewCall<'_>,
) -> StoreResult<bool> {
    Ok(on!(ex, c => sqlx::query(
        "INSERT INTO ai_calls (tenant_id, span_id, trace_id, team, model, provider, prompt_tokens, completion_tokens, \
         cache_read_tokens, cache_write_tokens, reasoning_tokens, latency_ms, prompt_sha256, content_sha256, refused, started_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) ON CONFLICT DO NOTHING")
        .bind(tenant.0).bind(k.span_id).bind(trace.trace_id).bind(trace.team).bind(k.model).bind(k.provider)
        .bind(k.prompt_tokens).bind(k.completion_tokens).bind(k.cache_read_tokens).bind(k.cache_write_tokens)
        .bind(k.reasoning_tokens).bind(k.latency_ms).bind(k.prompt_sha256).bind(k.content_sha256).bind(k.refused)
        .bind(trace.started_at).execute(&mut *c).await?.rows_affected())
        == 1)
}

/// The start and team of a stored trace, which its calls carry.
pub async fn trace_key(
    ex: &mut impl Exec,
    tenant: TenantId,
    trace_id: &str,
) -> StoreResult<Option<(OffsetDateTime, String)>> {
    Ok(on!(ex, c => sqlx::query_as(
        "SELECT started_at, team FROM ai_traces WHERE tenant_id = $1 AND trace_id = $2")
        .bind(tenant.0).bind(trace_id).fetch_optional(&mut *c).await?))
}

/// Stores a blob unless its hash is known; true when new.
pub async fn insert_blob(
    ex: &mut impl Exec,
    tenant: TenantId,
    sha256: &str,
    text: &str,
    now: OffsetDateTime,
) -> StoreResult<bool> {
    Ok(on!(ex, c => sqlx::query(
        "INSERT INTO ai_blobs (tenant_id, sha256, text, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING")
        .bind(tenant.0).bind(sha256).bind(text).bind(now).execute(&mut *c).await?.rows_affected())
        == 1)
}

/// A call as the team views read it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct CallRow {
    /// Team.
    pub team: String,
    /// Model.
    pub model: String,
    /// Tokens.
    pub prompt_tokens: i64,
    /// Tokens.
    pub completion_tokens: i64,
    /// Tokens.
    pub cache_read_tokens: i64,
    /// Tokens.
    pub cache_write_tokens: i64,
    /// Tokens.
    pub reasoning_tokens: i64,
    /// Latency.
    pub latency_ms: i64,
    /// Refused.
    pub refused: bool,
    /// The trace's start.
    pub started_at: OffsetDateTime,
}

/// The tenant's calls of traces that started in `[from, to)`.
pub async fn calls_between(
    ex: &mut impl Exec,
    tenant: TenantId,
    from: OffsetDateTime,
    to: OffsetDateTime,
) -> StoreResult<Vec<CallRow>> {
    Ok(on!(ex, c => sqlx::query_as::<_, CallRow>(
        "SELECT trace_id, team, model, prompt_tokens, completion_tokens, cache_read_tokens, cache_write_tokens, \
         reasoning_tokens, latency_ms, refused, started_at FROM ai_calls \
         WHERE tenant_id = $1 AND started_at >= $2 AND started_at < $3")
        .bind(tenant.0).bind(from).bind(to).fetch_all(&mut *c).await?))
}

/// Team and start of each of the tenant's traces that started in `[from, to)` (traces
/// without calls count too).
pub async fn trace_starts(
    ex: &mut impl Exec,
    tenant: TenantId,
    from: OffsetDateTime,
    to: OffsetDateTime,
) -> StoreResult<Vec<(String, OffsetDateTime)>> {
    Ok(on!(ex, c => sqlx::query_as::<_, (String, OffsetDateTime)>(
        "SELECT team, started_at FROM ai_traces WHERE tenant_id = $1 AND started_at >= $2 AND started_at < $3")
        .bind(tenant.0).bind(from).bind(to).fetch_all(&mut *c).await?))
}

/// A tenant's price override row.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct PriceRow {
    /// Model.
    pub model: String,
    /// `YYYY-MM-DD`.
    pub effective_from: String,
    /// Micro-EUR per 1,000 uncached input tokens.
    pub input: i64,
    /// Output.
    pub output: i64,
    /// Cache read.
    pub cache_read: i64,
    /// Cache write.
    pub cache_write: i64,
    /// Reasoning.
    pub reasoning: i64,
}

/// The tenant's overrides.
pub async fn price_overrides(ex: &mut impl Exec, tenant: TenantId) -> StoreResult<Vec<PriceRow>> {
    Ok(on!(ex, c => sqlx::query_as::<_, PriceRow>(
        "SELECT model, effective_from, input, output, cache_read, cache_write, reasoning FROM ai_price_overrides \
         WHERE tenant_id = $1 ORDER BY model, effective_from")
        .bind(tenant.0).fetch_all(&mut *c).await?))
}

/// Adds or replaces an override (same model and date).
pub async fn upsert_price(ex: &mut impl Exec, tenant: TenantId, p: &PriceRow) -> StoreResult<()> {
    on!(ex, c => sqlx::query(
        "INSERT INTO ai_price_overrides (tenant_id, model, effective_from, input, output, cache_read, cache_write, reasoning) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (tenant_id, model, effective_from) DO UPDATE SET \
         input = excluded.input, output = excluded.output, cache_read = excluded.cache_read, \
         cache_write = excluded.cache_write, reasoning = excluded.reasoning")
        .bind(tenant.0).bind(&p.model).bind(&p.effective_from).bind(p.input).bind(p.output).bind(p.cache_read)
        .bind(p.cache_write).bind(p.reasoning).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// A trace as OTLP spans describe it (they may arrive over several requests).
#[derive(Debug, Clone)]
pub struct MergedTrace<'a> {
    /// Trace id (hex).
    pub trace_id: &'a str,
    /// Name.
    pub name: &'a str,
    /// Team.
    pub team: &'a str,
    /// Whether name and team come from the root span (they then replace stored ones).
    pub root: bool,
    /// Earliest start seen in this request.
    pub started_at: OffsetDateTime,
    /// Latest end seen in this request.
    pub ended_at: OffsetDateTime,
}

/// Stores or widens an OTLP trace: an earlier start or later end widens the stored range;
/// the root span's name and team replace the stored ones; the trace's calls follow its
/// start and team. With `create` false a trace not yet stored is left alone. Returns the
/// trace's stored start and team, when it exists.
pub async fn merge_trace(
    ex: &mut impl Exec,
    tenant: TenantId,
    t: &MergedTrace<'_>,
    create: bool,
    now: OffsetDateTime,
) -> StoreResult<Option<(OffsetDateTime, String)>> {
    let (least, greatest) = match ex.handle() {
        trusthub_store::Handle::Sqlite(_) => ("min", "max"),
        trusthub_store::Handle::Postgres(_) => ("LEAST", "GREATEST"),
    };
    let widen = |start: &str, end: &str, name: &str, team: &str, root: &str| {
        format!(
            "started_at = {least}(ai_traces.started_at, {start}), ended_at = {greatest}(ai_traces.ended_at, {end}), \
             name = CASE WHEN {root} THEN {name} ELSE ai_traces.name END, \
             team = CASE WHEN {root} THEN {team} ELSE ai_traces.team END"
        )
    };
    let row: Option<(OffsetDateTime, String)> = if create {
        let sql = format!(
            "INSERT INTO ai_traces (tenant_id, trace_id, name, team, app_id, started_at, ended_at, tags, received_at) \
             VALUES ($1, $2, $3, $4, NULL, $5, $6, $7, $8) ON CONFLICT (tenant_id, trace_id) DO UPDATE SET {} \
             RETURNING started_at, team",
            widen(
                "excluded.started_at",
                "excluded.ended_at",
                "excluded.name",
                "excluded.team",
                "$9"
            )
        );
        let tags: Vec<String> = Vec::new();
        on!(ex, c => sqlx::query_as(sqlx::AssertSqlSafe(sql.clone()))
            .bind(tenant.0).bind(t.trace_id).bind(t.name).bind(t.team).bind(t.started_at)
            .bind(t.ended_at).bind(Json(&tags)).bind(now).bind(t.root).fetch_optional(&mut *c).await?)
    } else {
        let sql = format!(
            "UPDATE ai_traces SET {} WHERE tenant_id = $1 AND trace_id = $2 RETURNING started_at, team",
            widen("$5", "$6", "$3", "$4", "$7")
        );
        on!(ex, c => sqlx::query_as(sqlx::AssertSqlSafe(sql.clone()))
            .bind(tenant.0).bind(t.trace_id).bind(t.name).bind(t.team).bind(t.started_at)
            .bind(t.ended_at).bind(t.root).fetch_optional(&mut *c).await?)
    };
    if let Some((start, team)) = &row {
        on!(ex, c => sqlx::query(
            "UPDATE ai_calls SET started_at = $3, team = $4 WHERE tenant_id = $1 AND trace_id = $2 \
             AND (started_at <> $3 OR team <> $4)")
            .bind(tenant.0).bind(t.trace_id).bind(*start).bind(team).execute(&mut *c).await?.rows_affected());
    }
    Ok(row)
}
