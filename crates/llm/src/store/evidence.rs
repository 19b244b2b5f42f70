//! Evidence packs (SPEC 2.10; CONTRACT 8): the records of built packs, and the reads a pack is
//! built from — traces, calls and blobs of a period in (start, id) order, page by page so a
//! large period never sits in memory.
//!
//! On SQLite a page comes back as one JSON array (sqlx hands SQLite rows over one by one
//! through its worker thread, which costs more than the query); on PostgreSQL as rows. Both
//! give the same tuples, with times as RFC 3339 UTC text.

use time::OffsetDateTime;
use trusthub_store::{Exec, Handle, StoreResult, TenantId, on};
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

/// Reads a scope's traces or calls in (start, id) order a page at a time, inside the one
/// snapshot transaction it is handed each time.
///
/// On SQLite each page is a keyset query after the last row read. On PostgreSQL the whole
/// pass is one server-side cursor: one plan, chosen for a fast start. A plan per page would be
/// at the mercy of the statistics — right after a bulk load they are missing, and a generic
/// plan that sorts the whole period made each page of a million-call period cost a second.
#[derive(Debug)]
pub struct Pager {
    scope: Scope,
    /// Last `(started_at, id, trace_id)` read (SQLite; the third only for calls, whose
    /// span ids are unique per trace only).
    after: (String, String, String),
    /// The cursor is declared (PostgreSQL).
    open: bool,
    done: bool,
}

impl Pager {
    /// A pass over `scope` (times as stored: RFC 3339 UTC whole seconds).
    pub fn new(scope: Scope) -> Pager {
        let from = scope
            .from
            .to_offset(time::UtcOffset::UTC)
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        Pager {
            scope,
            after: (from, String::new(), String::new()),
            open: false,
            done: false,
        }
    }

    /// The next page of traces, at most `limit`; empty at the end.
    pub async fn traces(&mut self, ex: &mut impl Exec, limit: i64) -> StoreResult<Vec<TraceTuple>> {
        if self.done {
            return Ok(Vec::new());
        }
        let s = self.scope;
        let rows: Vec<TraceTuple> = match ex.handle() {
            Handle::Sqlite(c) => {
                let packed: Option<String> = sqlx::query_scalar(
                    "SELECT json_group_array(json_array(trace_id, name, team, lower(hex(app_id)), started_at, ended_at, tags)) \
                     FROM (SELECT * FROM ai_traces WHERE tenant_id = $1 AND started_at < $2 AND ($3 IS NULL OR app_id = $3) \
                     AND (started_at, trace_id) > ($4, $5) ORDER BY started_at, trace_id LIMIT $6)")
                    .bind(s.tenant.0).bind(s.to).bind(s.app_id).bind(&self.after.0).bind(&self.after.1).bind(limit)
                    .fetch_one(&mut *c).await?;
                let mut rows: Vec<TraceTuple> = unpack(packed)?;
                for r in &mut rows {
                    r.3 =
                        r.3.take()
                            .and_then(|h| Uuid::parse_str(&h).ok())
                            .map(|u| u.to_string());
                }
                rows.sort_by(|a, b| (&a.4, &a.0).cmp(&(&b.4, &b.0)));
                if let Some(last) = rows.last() {
                    self.after = (last.4.clone(), last.0.clone(), String::new());
                }
                rows
            }
            Handle::Postgres(c) => {
                let select = format!(
                    "SELECT trace_id, name, team, app_id::text, {}, {}, tags::text FROM ai_traces \
                     WHERE tenant_id = $1 AND started_at >= $2 AND started_at < $3 AND ($4::uuid IS NULL OR app_id = $4) \
                     ORDER BY started_at, trace_id COLLATE \"C\"",
                    pg_time("started_at"),
                    pg_time("ended_at")
                );
                self.cursor_page(c, "evidence_traces", &select, limit)
                    .await?
            }
        };
        self.done = (rows.len() as i64) < limit;
        Ok(rows)
    }

    /// The next page of calls of the scope's traces, at most `limit`; empty at the end.
    pub async fn spans(&mut self, ex: &mut impl Exec, limit: i64) -> StoreResult<Vec<SpanTuple>> {
        if self.done {
            return Ok(Vec::new());
        }
        let s = self.scope;
        let rows: Vec<SpanTuple> = match ex.handle() {
            Handle::Sqlite(c) => {
                // The page as one JSON array of arrays; the inner select keeps the order.
                let packed: Option<String> = sqlx::query_scalar(
                    "SELECT json_group_array(json_array(span_id, trace_id, started_at, model, provider, prompt_tokens, \
                     completion_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, latency_ms, prompt_sha256, \
                     content_sha256, refused)) FROM (SELECT c.* FROM ai_calls c WHERE c.tenant_id = $1 AND c.started_at < $2 \
                     AND ($3 IS NULL OR EXISTS (SELECT 1 FROM ai_traces t WHERE t.tenant_id = c.tenant_id \
                     AND t.trace_id = c.trace_id AND t.app_id = $3)) \
                     AND (c.started_at, c.span_id, c.trace_id) > ($4, $5, $7) ORDER BY c.started_at, c.span_id, c.trace_id LIMIT $6)")
                    .bind(s.tenant.0).bind(s.to).bind(s.app_id).bind(&self.after.0).bind(&self.after.1).bind(limit)
                    .bind(&self.after.2)
                    .fetch_one(&mut *c).await?;
                let mut rows: Vec<SpanTuple> = unpack(packed)?;
                rows.sort_by(|a, b| (&a.2, &a.0, &a.1).cmp(&(&b.2, &b.0, &b.1)));
                if let Some(last) = rows.last() {
                    self.after = (last.2.clone(), last.0.clone(), last.1.clone());
                }
                rows
            }
            Handle::Postgres(c) => {
                let select = format!(
                    "SELECT c.span_id, c.trace_id, {}, c.model, c.provider, c.prompt_tokens, c.completion_tokens, \
                     c.cache_read_tokens, c.cache_write_tokens, c.reasoning_tokens, c.latency_ms, c.prompt_sha256, \
                     c.content_sha256, c.refused::int4::int8 FROM ai_calls c \
                     WHERE c.tenant_id = $1 AND c.started_at >= $2 AND c.started_at < $3 \
                     AND ($4::uuid IS NULL OR EXISTS (SELECT 1 FROM ai_traces t WHERE t.tenant_id = c.tenant_id \
                     AND t.trace_id = c.trace_id AND t.app_id = $4)) \
                     ORDER BY c.started_at, c.span_id COLLATE \"C\", c.trace_id COLLATE \"C\"",
                    pg_time("c.started_at")
                );
                self.cursor_page(c, "evidence_spans", &select, limit)
                    .await?
            }
        };
        self.done = (rows.len() as i64) < limit;
        Ok(rows)
    }

    /// PostgreSQL: the next `limit` rows of the cursor `name` over `select` (whose `$1..$4`
    /// are tenant, from, to, app), declared on the first call.
    async fn cursor_page<T>(
        &mut self,
        c: &mut sqlx::PgConnection,
        name: &str,
        select: &str,
        limit: i64,
    ) -> StoreResult<Vec<T>>
    where
        T: for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow> + Send + Unpin,
    {
        if !self.open {
            let s = self.scope;
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "DECLARE {name} NO SCROLL CURSOR FOR {select}"
            )))
            .bind(s.tenant.0)
            .bind(s.from)
            .bind(s.to)
            .bind(s.app_id)
            .execute(&mut *c)
            .await?;
            self.open = true;
        }
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "FETCH {} FROM {name}",
            limit.max(1)
        )))
        .fetch_all(&mut *c)
        .await?)
    }
}

fn unpack<T: serde::de::DeserializeOwned>(packed: Option<String>) -> StoreResult<Vec<T>> {
    match packed {
        None => Ok(Vec::new()),
        Some(text) => serde_json::from_str(&text).map_err(|e| {
            tracing::error!(error = %e, "packed page does not parse");
            trusthub_store::StoreError::Corrupt("packed page")
        }),
    }
}

/// The tenant's blobs among `hashes` (lowercase hex SHA-256), by hash: `(sha256, text)`.
/// Hashes without a stored blob are simply absent.
///
/// The builder collects the hashes while it writes spans.jsonl, so this is a lookup by primary
/// key; asking the database which blobs the period's calls reference would make it scan the
/// period's calls once per page.
pub async fn blobs_by_hash(
    ex: &mut impl Exec,
    tenant: TenantId,
    hashes: &[String],
) -> StoreResult<Vec<(String, String)>> {
    let list = serde_json::to_string(hashes).unwrap_or_else(|_| "[]".into());
    Ok(match ex.handle() {
        Handle::Sqlite(c) => {
            sqlx::query_as(
                "SELECT sha256, text FROM ai_blobs WHERE tenant_id = $1 \
                 AND sha256 IN (SELECT value FROM json_each($2)) ORDER BY sha256",
            )
            .bind(tenant.0)
            .bind(list)
            .fetch_all(&mut *c)
            .await?
        }
        Handle::Postgres(c) => {
            sqlx::query_as(
                "SELECT sha256, text FROM ai_blobs WHERE tenant_id = $1 \
                 AND sha256 = ANY($2::text[]) ORDER BY sha256 COLLATE \"C\"",
            )
            .bind(tenant.0)
            .bind(hashes)
            .fetch_all(&mut *c)
            .await?
        }
    })
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
