//! Evidence packs (SPEC 2.10; CONTRACT 8): the records of built packs, and the reads a pack is
//! built from — traces, calls and blobs of a period in (start, id) order, page by page so a
//! large period never sits in memory.
//!
//! On SQLite a page comes back as one JSON array (sqlx hands SQLite rows over one by one
//! through its worker thread, which costs more than the query); on PostgreSQL as rows. Both
//! give the same tuples, with times as RFC 3339 UTC text.

use crate::{Exec, Handle, StoreResult, TenantId, on};
use time::OffsetDateTime;
use uuid::Uuid;

/// What a pack covers.
#[derive(Debug, Clone, Copy)]
pub struct Scope {
    /// Owner.
    pub tenant: TenantId,
    /// One app, or all.
    pub app_id: Option<Uuid>,
    /// Inclusive start (UTC).
    pub from: OffsetDateTime,
    /// Exclusive end (UTC).
    pub to: OffsetDateTime,
}

/// A trace: `(trace_id, name, team, app_id, started_at, ended_at, tags JSON)`.
pub type TraceTuple = (
    String,
    String,
    String,
    Option<String>,
    String,
    String,
    String,
);

/// A call: `(span_id, trace_id, started_at, model, provider, prompt_tokens,
/// completion_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, latency_ms,
/// prompt_sha256, content_sha256, refused 0/1)`.
pub type SpanTuple = (
    String,
    String,
    String,
    String,
    Option<String>,
    i64,
    i64,
    i64,
    i64,
    i64,
    i64,
    String,
    Option<String>,
    i64,
);

const PG_TIME: &str = "to_char({} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')";

fn pg_time(col: &str) -> String {
    PG_TIME.replace("{}", col)
}

/// Traces of the scope after `(started_at, trace_id)`, at most `limit`, in that order.
pub async fn trace_page(
    ex: &mut impl Exec,
    s: &Scope,
    after: (&str, &str),
    limit: i64,
) -> StoreResult<Vec<TraceTuple>> {
    Ok(match ex.handle() {
        Handle::Sqlite(c) => {
            let packed: Option<String> = sqlx::query_scalar(
                "SELECT json_group_array(json_array(trace_id, name, team, lower(hex(app_id)), started_at, ended_at, tags)) \
                 FROM (SELECT * FROM ai_traces WHERE tenant_id = $1 AND started_at < $2 AND ($3 IS NULL OR app_id = $3) \
                 AND (started_at, trace_id) > ($4, $5) ORDER BY started_at, trace_id LIMIT $6)")
                .bind(s.tenant.0).bind(s.to).bind(s.app_id).bind(after.0).bind(after.1).bind(limit)
                .fetch_one(&mut *c).await?;
            let mut rows: Vec<TraceTuple> = unpack(packed)?;
            for r in &mut rows {
                r.3 =
                    r.3.take()
                        .and_then(|h| Uuid::parse_str(&h).ok())
                        .map(|u| u.to_string());
            }
            rows.sort_by(|a, b| (&a.4, &a.0).cmp(&(&b.4, &b.0)));
            rows
        }
        Handle::Postgres(c) => {
            let sql = format!(
                "SELECT trace_id, name, team, app_id::text, {}, {}, tags::text FROM ai_traces \
                 WHERE tenant_id = $1 AND started_at < $2 AND ($3::uuid IS NULL OR app_id = $3) \
                 AND (started_at, trace_id COLLATE \"C\") > ($4::timestamptz, $5 COLLATE \"C\") \
                 ORDER BY started_at, trace_id COLLATE \"C\" LIMIT $6",
                pg_time("started_at"),
                pg_time("ended_at")
            );
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(s.tenant.0)
                .bind(s.to)
                .bind(s.app_id)
                .bind(after.0)
                .bind(after.1)
                .bind(limit)
                .fetch_all(&mut *c)
                .await?
        }
    })
}

/// Calls of the scope's traces after `(started_at, span_id)`, at most `limit`, in that order.
pub async fn span_page(
    ex: &mut impl Exec,
    s: &Scope,
    after: (&str, &str),
    limit: i64,
) -> StoreResult<Vec<SpanTuple>> {
    const COLS: &str = "c.span_id, c.trace_id, {t}, c.model, c.provider, c.prompt_tokens, c.completion_tokens, \
        c.cache_read_tokens, c.cache_write_tokens, c.reasoning_tokens, c.latency_ms, c.prompt_sha256, \
        c.content_sha256, {r}";
    const FROM: &str = "FROM ai_calls c WHERE c.tenant_id = $1 AND c.started_at < $2 \
        AND ({null} OR EXISTS (SELECT 1 FROM ai_traces t WHERE t.tenant_id = c.tenant_id AND t.trace_id = c.trace_id AND t.app_id = $3)) \
        AND (c.started_at, c.span_id) > ({after}, $5) ORDER BY c.started_at, c.span_id LIMIT $6";
    Ok(match ex.handle() {
        Handle::Sqlite(c) => {
            // The page as one JSON array of arrays; the inner select keeps the order.
            let sql = format!(
                "SELECT json_group_array(json_array(span_id, trace_id, started_at, model, provider, prompt_tokens, \
                 completion_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, latency_ms, prompt_sha256, \
                 content_sha256, refused)) FROM (SELECT c.* {})",
                FROM.replace("{null}", "$3 IS NULL")
                    .replace("{after}", "$4")
            );
            let packed: Option<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
                .bind(s.tenant.0)
                .bind(s.to)
                .bind(s.app_id)
                .bind(after.0)
                .bind(after.1)
                .bind(limit)
                .fetch_one(&mut *c)
                .await?;
            let mut rows: Vec<SpanTuple> = unpack(packed)?;
            rows.sort_by(|a, b| (&a.2, &a.0).cmp(&(&b.2, &b.0)));
            rows
        }
        Handle::Postgres(c) => {
            let cols = COLS
                .replace("{t}", &pg_time("c.started_at"))
                .replace("{r}", "c.refused::int4::int8");
            let from = FROM
                .replace("{null}", "$3::uuid IS NULL")
                .replace("({after}, $5)", "($4::timestamptz, $5 COLLATE \"C\")")
                .replace("c.span_id)", "c.span_id COLLATE \"C\")")
                .replace(
                    "ORDER BY c.started_at, c.span_id",
                    "ORDER BY c.started_at, c.span_id COLLATE \"C\"",
                );
            sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {cols} {from}")))
                .bind(s.tenant.0)
                .bind(s.to)
                .bind(s.app_id)
                .bind(after.0)
                .bind(after.1)
                .bind(limit)
                .fetch_all(&mut *c)
                .await?
        }
    })
}

fn unpack<T: serde::de::DeserializeOwned>(packed: Option<String>) -> StoreResult<Vec<T>> {
    match packed {
        None => Ok(Vec::new()),
        Some(text) => serde_json::from_str(&text).map_err(|e| {
            tracing::error!(error = %e, "packed page does not parse");
            crate::StoreError::Corrupt("packed page")
        }),
    }
}

/// Blobs referenced (`content_sha256`) by calls of the scope, hash after `after`, at most
/// `limit`, by hash: `(sha256, text)`.
pub async fn blob_page(
    ex: &mut impl Exec,
    s: &Scope,
    after: &str,
    limit: i64,
) -> StoreResult<Vec<(String, String)>> {
    let (null, collate) = match ex.handle() {
        Handle::Sqlite(_) => ("$3 IS NULL", ""),
        Handle::Postgres(_) => ("$3::uuid IS NULL", " COLLATE \"C\""),
    };
    let sql = format!(
        "SELECT b.sha256, b.text FROM ai_blobs b WHERE b.tenant_id = $1 AND b.sha256{collate} > $5{collate} AND EXISTS ( \
         SELECT 1 FROM ai_calls c WHERE c.tenant_id = b.tenant_id AND c.content_sha256 = b.sha256 \
         AND c.started_at >= $4 AND c.started_at < $2 AND ({null} OR EXISTS (SELECT 1 FROM ai_traces t \
         WHERE t.tenant_id = c.tenant_id AND t.trace_id = c.trace_id AND t.app_id = $3))) \
         ORDER BY b.sha256{collate} LIMIT $6"
    );
    Ok(
        on!(ex, c => sqlx::query_as(sqlx::AssertSqlSafe(sql.clone()))
        .bind(s.tenant.0).bind(s.to).bind(s.app_id).bind(s.from).bind(after).bind(limit)
        .fetch_all(&mut *c).await?),
    )
}

/// A pack's record.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Pack {
    /// Numeric id.
    pub id: i64,
    /// One app, or all.
    pub app_id: Option<Uuid>,
    /// Window start.
    pub period_start: OffsetDateTime,
    /// Window end.
    pub period_end: OffsetDateTime,
    /// Content bundled.
    pub include_blobs: bool,
    /// `building` or `ready`.
    pub status: String,
    /// Lines of traces.jsonl.
    pub trace_count: i64,
    /// Lines of spans.jsonl.
    pub span_count: i64,
    /// Blobs.
    pub blob_count: i64,
    /// Cost of the priced spans.
    pub total_cost_micro_eur: i64,
    /// Spans without a price.
    pub unpriced_span_count: i64,
    /// SHA-256 of manifest.json.
    pub manifest_sha256: Option<String>,
    /// Signing key.
    pub signing_public_hex: Option<String>,
    /// Size of the bundle file.
    pub size_bytes: i64,
    /// Its transparency-log entry.
    pub transparency_seq: Option<i64>,
    /// `user:<id>` or `token:<id>`.
    pub created_by: String,
    /// Generation time.
    pub created_at: OffsetDateTime,
    /// Not deleted before.
    pub expires_at: OffsetDateTime,
}

const PACK_COLS: &str = "id, app_id, period_start, period_end, include_blobs, status, trace_count, span_count, \
    blob_count, total_cost_micro_eur, unpriced_span_count, manifest_sha256, signing_public_hex, size_bytes, \
    transparency_seq, created_by, created_at, expires_at";

/// A new pack's fixed inputs.
#[derive(Debug, Clone)]
pub struct NewPack<'a> {
    /// Scope.
    pub scope: Scope,
    /// Content bundled.
    pub include_blobs: bool,
    /// Who asked.
    pub created_by: &'a str,
    /// Generation time.
    pub created_at: OffsetDateTime,
    /// Kept until.
    pub expires_at: OffsetDateTime,
}

/// The data digests of a built pack (what "unchanged data" means).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Digests {
    /// traces.jsonl.
    pub traces_sha256: String,
    /// spans.jsonl.
    pub spans_sha256: String,
    /// The blob index.
    pub blobs_sha256: String,
}

/// Reserves an id for a pack being built.
pub async fn reserve(ex: &mut impl Exec, p: &NewPack<'_>) -> StoreResult<i64> {
    Ok(on!(ex, c => sqlx::query_scalar(
        "INSERT INTO evidence_packs (tenant_id, app_id, period_start, period_end, include_blobs, status, created_by, created_at, expires_at) \
         VALUES ($1, $2, $3, $4, $5, 'building', $6, $7, $8) RETURNING id")
        .bind(p.scope.tenant.0).bind(p.scope.app_id).bind(p.scope.from).bind(p.scope.to).bind(p.include_blobs)
        .bind(p.created_by).bind(p.created_at).bind(p.expires_at).fetch_one(&mut *c).await?))
}

/// What a finished pack records.
#[derive(Debug, Clone)]
pub struct Finished<'a> {
    /// Data digests.
    pub digests: &'a Digests,
    /// Counts and cost.
    pub trace_count: i64,
    /// Spans.
    pub span_count: i64,
    /// Blobs.
    pub blob_count: i64,
    /// Cost.
    pub total_cost_micro_eur: i64,
    /// Unpriced spans.
    pub unpriced_span_count: i64,
    /// SHA-256 of manifest.json.
    pub manifest_sha256: &'a str,
    /// Key.
    pub signing_public_hex: &'a str,
    /// File size.
    pub size_bytes: i64,
    /// Transparency entry.
    pub transparency_seq: i64,
}

/// Marks a reserved pack ready.
pub async fn finish(
    ex: &mut impl Exec,
    tenant: TenantId,
    id: i64,
    f: &Finished<'_>,
) -> StoreResult<()> {
    on!(ex, c => sqlx::query(
        "UPDATE evidence_packs SET status = 'ready', traces_sha256 = $3, spans_sha256 = $4, blobs_sha256 = $5, \
         trace_count = $6, span_count = $7, blob_count = $8, total_cost_micro_eur = $9, unpriced_span_count = $10, \
         manifest_sha256 = $11, signing_public_hex = $12, size_bytes = $13, transparency_seq = $14 \
         WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.0).bind(id).bind(&f.digests.traces_sha256).bind(&f.digests.spans_sha256)
        .bind(&f.digests.blobs_sha256).bind(f.trace_count).bind(f.span_count).bind(f.blob_count)
        .bind(f.total_cost_micro_eur).bind(f.unpriced_span_count).bind(f.manifest_sha256)
        .bind(f.signing_public_hex).bind(f.size_bytes).bind(f.transparency_seq).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// Forgets a reservation whose build failed.
pub async fn abandon(ex: &mut impl Exec, tenant: TenantId, id: i64) -> StoreResult<()> {
    on!(ex, c => sqlx::query("DELETE FROM evidence_packs WHERE tenant_id = $1 AND id = $2 AND status = 'building'")
        .bind(tenant.0).bind(id).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// A ready pack with the same inputs and the same data, if one exists.
pub async fn find_same(
    ex: &mut impl Exec,
    scope: &Scope,
    include_blobs: bool,
    d: &Digests,
) -> StoreResult<Option<Pack>> {
    let sql = format!(
        "SELECT {PACK_COLS} FROM evidence_packs WHERE tenant_id = $1 AND period_start = $2 AND period_end = $3 \
         AND spans_sha256 = $4 AND traces_sha256 = $5 AND blobs_sha256 = $6 AND include_blobs = $7 \
         AND ((app_id IS NULL AND $8 IS NULL) OR app_id = $8) AND status = 'ready' ORDER BY id LIMIT 1"
    );
    let sql = match ex.handle() {
        Handle::Sqlite(_) => sql,
        Handle::Postgres(_) => sql.replace("$8 IS NULL", "$8::uuid IS NULL"),
    };
    Ok(
        on!(ex, c => sqlx::query_as::<_, Pack>(sqlx::AssertSqlSafe(sql.clone()))
        .bind(scope.tenant.0).bind(scope.from).bind(scope.to).bind(&d.spans_sha256).bind(&d.traces_sha256)
        .bind(&d.blobs_sha256).bind(include_blobs).bind(scope.app_id).fetch_optional(&mut *c).await?),
    )
}

/// One of the tenant's ready packs.
pub async fn get(ex: &mut impl Exec, tenant: TenantId, id: i64) -> StoreResult<Option<Pack>> {
    let sql = format!(
        "SELECT {PACK_COLS} FROM evidence_packs WHERE tenant_id = $1 AND id = $2 AND status = 'ready'"
    );
    Ok(
        on!(ex, c => sqlx::query_as::<_, Pack>(sqlx::AssertSqlSafe(sql.clone()))
        .bind(tenant.0).bind(id).fetch_optional(&mut *c).await?),
    )
}

/// The tenant's ready packs, newest first, with ids below `before`.
pub async fn list(
    ex: &mut impl Exec,
    tenant: TenantId,
    before: i64,
    limit: i64,
) -> StoreResult<Vec<Pack>> {
    let sql = format!(
        "SELECT {PACK_COLS} FROM evidence_packs WHERE tenant_id = $1 AND id < $2 AND status = 'ready' ORDER BY id DESC LIMIT $3"
    );
    Ok(
        on!(ex, c => sqlx::query_as::<_, Pack>(sqlx::AssertSqlSafe(sql.clone()))
        .bind(tenant.0).bind(before).bind(limit).fetch_all(&mut *c).await?),
    )
}

/// Packs past their retention, and reservations left by a build that died (older than
/// `stale_before`): `(tenant, id)`.
pub async fn due_for_removal(
    ex: &mut impl Exec,
    now: OffsetDateTime,
    stale_before: OffsetDateTime,
) -> StoreResult<Vec<(Uuid, i64)>> {
    Ok(on!(ex, c => sqlx::query_as(
        "SELECT tenant_id, id FROM evidence_packs WHERE (status = 'ready' AND expires_at <= $1) \
         OR (status = 'building' AND created_at < $2) ORDER BY id LIMIT 1000")
        .bind(now).bind(stale_before).fetch_all(&mut *c).await?))
}

/// Deletes a pack's record (after its file).
pub async fn delete(ex: &mut impl Exec, tenant: TenantId, id: i64) -> StoreResult<()> {
    on!(ex, c => sqlx::query("DELETE FROM evidence_packs WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.0).bind(id).execute(&mut *c).await?.rows_affected());
    Ok(())
}
