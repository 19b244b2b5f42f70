//! LLM traces (CONTRACT 9; SPEC 2.11): intake, and the per-team views and monthly CSV.

use crate::auth::{Authenticated, Credential, Viewer};
use crate::error::{ApiError, ApiResult, FieldError, Problem};
use crate::extract::{Json, Query};
use crate::state::{AppState, now};
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use time::OffsetDateTime;
use trusthub_core::ai::{self, Cost, Usage};
use trusthub_core::{Role, TokenScope};
use trusthub_store::ai::{self as store, NewCall, NewTrace};
use trusthub_store::apps;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(ingest))
        .routes(routes!(otlp_traces))
        .routes(routes!(teams))
        .routes(routes!(export_csv))
        .routes(routes!(team))
        .routes(routes!(list_prices, put_prices))
}

/// The tenant's price table: the shipped defaults with its overrides on top.
pub(crate) async fn price_table(
    state: &AppState,
    tenant: trusthub_store::TenantId,
) -> ApiResult<ai::PriceTable> {
    let mut c = state.db.conn().await?;
    let overrides: Vec<ai::Price> = store::price_overrides(&mut c, tenant)
        .await?
        .into_iter()
        .filter_map(|r| {
            Some(ai::Price {
                effective_from: time::Date::parse(&r.effective_from, DATE).ok()?,
                model: r.model,
                input: r.input.max(0) as u64,
                output: r.output.max(0) as u64,
                cache_read: r.cache_read.max(0) as u64,
                cache_write: r.cache_write.max(0) as u64,
                reasoning: r.reasoning.max(0) as u64,
            })
        })
        .collect();
    Ok(state.prices.with(&overrides))
}

/// The hub-wide price table: the shipped defaults with the operator's price file on top
/// (`TRUSTHUB_AI_PRICES_FILE`: JSON, `{"prices": [{model, effective_from: "YYYY-MM-DD",
/// input, output, cache_read, cache_write, reasoning}]}` in micro-EUR per 1,000 tokens).
/// Tenants' overrides (`PUT /ai/prices`) go on top of it.
pub fn base_prices(file: Option<&std::path::Path>) -> Result<ai::PriceTable, String> {
    let Some(path) = file else {
        return Ok(ai::default_prices());
    };
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let parsed: PricesIn = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not a price file: {e}", path.display()))?;
    if let Some(e) = check_prices(&parsed.prices).first() {
        return Err(format!("{}: {} {}", path.display(), e.field, e.message));
    }
    let prices: Vec<ai::Price> = parsed
        .prices
        .into_iter()
        .filter_map(|x| {
            Some(ai::Price {
                model: x.model.trim().to_owned(),
                effective_from: time::Date::parse(&x.effective_from, DATE).ok()?,
                input: x.input,
                output: x.output,
                cache_read: x.cache_read,
                cache_write: x.cache_write,
                reasoning: x.reasoning,
            })
        })
        .collect();
    Ok(ai::default_prices().with(&prices))
}

/// What is wrong with a list of prices (the API's and the price file's rules).
fn check_prices(prices: &[PriceView]) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if prices.is_empty() || prices.len() > 500 {
        errors.push(FieldError {
            field: "prices".into(),
            message: "must hold 1 to 500 prices".into(),
        });
    }
    for (i, x) in prices.iter().enumerate() {
        if !label(&x.model, 200) {
            errors.push(FieldError {
                field: format!("prices[{i}].model"),
                message: "must be 1-200 characters".into(),
            });
        }
        if time::Date::parse(&x.effective_from, DATE).is_err() {
            errors.push(FieldError {
                field: format!("prices[{i}].effective_from"),
                message: "must be YYYY-MM-DD".into(),
            });
        }
        if [x.input, x.output, x.cache_read, x.cache_write, x.reasoning]
            .iter()
            .any(|v| *v > 1_000_000_000)
        {
            errors.push(FieldError {
                field: format!("prices[{i}]"),
                message: "prices must be at most 1e9 micro-EUR per 1,000 tokens".into(),
            });
        }
    }
    errors
}

const DATE: &[time::format_description::BorrowedFormatItem<'static>] =
    time::macros::format_description!("[year]-[month]-[day]");

/// A price (micro-EUR per 1,000 tokens of each kind) from a date on.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct PriceView {
    /// Model name (exact match with what calls report).
    pub model: String,
    /// `YYYY-MM-DD`: calls from that UTC day on use this price, until a later one.
    pub effective_from: String,
    /// Uncached input.
    pub input: u64,
    /// Output (non-reasoning).
    pub output: u64,
    /// Input read from the prompt cache.
    pub cache_read: u64,
    /// Input written to the prompt cache.
    pub cache_write: u64,
    /// Reasoning output.
    pub reasoning: u64,
    /// `default` (shipped), `file` (the hub's `TRUSTHUB_AI_PRICES_FILE`) or `override`
    /// (your tenant's, set here); ignored on input.
    #[serde(default)]
    pub source: String,
}

/// The prices in force for your tenant: the shipped table (dated) with your overrides.
#[utoipa::path(get, path = "/ai/prices", tag = "ai", responses((status = 200, body = Vec<PriceView>)))]
async fn list_prices(
    State(state): State<AppState>,
    Viewer(p): Viewer,
) -> ApiResult<axum::Json<Vec<PriceView>>> {
    let table = price_table(&state, p.tenant()).await?;
    let defaults = ai::default_prices();
    let mut out: Vec<PriceView> = table
        .prices
        .into_iter()
        .map(|x| PriceView {
            source: if defaults.prices.contains(&x) {
                "default"
            } else if state.prices.prices.contains(&x) {
                "file"
            } else {
                "override"
            }
            .into(),
            model: x.model,
            effective_from: x.effective_from.format(DATE).unwrap_or_default(),
            input: x.input,
            output: x.output,
            cache_read: x.cache_read,
            cache_write: x.cache_write,
            reasoning: x.reasoning,
        })
        .collect();
    out.sort_by(|a, b| {
        a.model
            .cmp(&b.model)
            .then(a.effective_from.cmp(&b.effective_from))
    });
    Ok(axum::Json(out))
}

/// Prices to add or replace.
#[derive(Debug, Deserialize, ToSchema)]
pub struct PricesIn {
    /// Each replaces the entry of the same model and date, or adds one.
    pub prices: Vec<PriceView>,
}

/// Override prices (admin): costs are computed at query time, so past calls are re-priced
/// by the table in force on their date.
#[utoipa::path(put, path = "/ai/prices", tag = "ai", request_body = PricesIn,
    responses((status = 200, body = Vec<PriceView>), (status = 422, body = Problem)))]
async fn put_prices(
    State(state): State<AppState>,
    meta: crate::extract::Meta,
    crate::auth::Admin(p): crate::auth::Admin,
    Json(req): Json<PricesIn>,
) -> ApiResult<axum::Json<Vec<PriceView>>> {
    let errors = check_prices(&req.prices);
    if !errors.is_empty() {
        return Err(ApiError::Validation(errors));
    }
    let mut tx = state.db.begin().await?;
    for x in &req.prices {
        let as_i64 = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        store::upsert_price(
            &mut tx,
            p.tenant(),
            &store::PriceRow {
                model: x.model.trim().to_owned(),
                effective_from: x.effective_from.clone(),
                input: as_i64(x.input),
                output: as_i64(x.output),
                cache_read: as_i64(x.cache_read),
                cache_write: as_i64(x.cache_write),
                reasoning: as_i64(x.reasoning),
            },
        )
        .await?;
    }
    let models: Vec<&str> = req.prices.iter().map(|x| x.model.as_str()).collect();
    meta.record(
        &mut tx,
        &p,
        trusthub_core::audit::AI_PRICES_CHANGED,
        "ai_prices".into(),
        serde_json::json!({"models": models}),
    )
    .await?;
    tx.commit().await?;
    list_prices(State(state), Viewer(p)).await
}

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
pub struct CallIn {
    /// Unique per tenant; a known span_id is skipped (idempotence).
    pub span_id: String,
    /// Model name as the provider reports it.
    pub model: String,
    /// All input tokens.
    pub prompt_tokens: u64,
    /// All output tokens.
    pub completion_tokens: u64,
    /// Milliseconds.
    pub latency_ms: u64,
    /// SHA-256 (hex) of the redacted prompt.
    pub prompt_sha256: String,
    /// The model refused.
    #[serde(default)]
    pub refused: bool,
    /// SHA-256 (hex) of the redacted content, when it is sent in `blobs`.
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
pub struct TraceIn {
    /// Unique per tenant; a known trace_id is skipped with its calls (idempotence).
    pub trace_id: String,
    /// Name.
    pub name: String,
    /// Team (the SDK's configured team).
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
    pub tags: Vec<String>,
    /// Calls.
    #[serde(default)]
    pub calls: Vec<CallIn>,
}

/// Redacted content, stored once per SHA-256.
#[derive(Debug, Deserialize, ToSchema)]
pub struct BlobIn {
    /// SHA-256 (hex) of `text`; checked.
    pub sha256: String,
    /// The redacted text (at most 256 KiB).
    pub text: String,
}

/// A batch of traces (CONTRACT 9).
#[derive(Debug, Deserialize, ToSchema)]
pub struct TracesIn {
    /// 1 to 500 traces.
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
    /// Traces already known (skipped).
    pub duplicate_traces: usize,
    /// New calls.
    pub accepted_calls: usize,
    /// New blobs (known hashes are not stored twice).
    pub stored_blobs: usize,
}

fn hex64(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
}

fn ident(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"-_.:".contains(&c))
}

fn label(s: &str, max: usize) -> bool {
    let t = s.trim();
    !t.is_empty() && t.chars().count() <= max && !t.chars().any(char::is_control)
}

/// Who may send traces: an `ai_ingest` or `write` token (a `write` token of an operator or
/// above), or the session of an operator or above.
fn may_send_traces(p: &crate::auth::Principal) -> ApiResult<()> {
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

/// Send LLM traces: an API token with scope `ai_ingest` (or `write`), or a session of an
/// operator or above. Validation is all-or-nothing (422 names every bad field, nothing is
/// stored); known `trace_id`s and `span_id`s are skipped, so retries are harmless. Blobs must
/// hash to their `sha256` and are stored once per hash.
#[utoipa::path(post, path = "/ai/traces", tag = "ai", request_body = TracesIn,
    responses((status = 202, body = TracesAccepted), (status = 403, body = Problem), (status = 422, body = Problem)))]
async fn ingest(
    State(state): State<AppState>,
    Authenticated(p): Authenticated,
    Json(req): Json<TracesIn>,
) -> ApiResult<(StatusCode, axum::Json<TracesAccepted>)> {
    may_send_traces(&p)?;
    let mut errors = Vec::new();
    let mut err = |field: String, m: &str| {
        if errors.len() < 50 {
            errors.push(FieldError {
                field,
                message: m.into(),
            })
        }
    };
    if req.traces.is_empty() || req.traces.len() > MAX_TRACES {
        err("traces".into(), "must hold 1 to 500 traces");
    }
    let mut trace_ids = HashSet::new();
    let mut span_ids = HashSet::new();
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
        for (j, c) in t.calls.iter().enumerate() {
            let g = |k: &str| format!("traces[{i}].calls[{j}].{k}");
            if !ident(&c.span_id, 128) || !span_ids.insert(c.span_id.as_str()) {
                err(
                    g("span_id"),
                    "must be 1-128 characters of letters, digits and - _ . :, unique in the request",
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
            if apps::get(&mut c, p.tenant(), *a).await?.is_none() {
                err("app_id".into(), "is not an app of your tenant");
            }
        }
    }
    if !errors.is_empty() {
        return Err(ApiError::Validation(errors));
    }
    let now = now();
    let mut out = TracesAccepted {
        accepted_traces: 0,
        duplicate_traces: 0,
        accepted_calls: 0,
        stored_blobs: 0,
    };
    let mut tx = state.db.begin().await?;
    for t in &req.traces {
        let tags: Vec<String> = t.tags.iter().map(|g| g.trim().to_owned()).collect();
        let trace = NewTrace {
            trace_id: &t.trace_id,
            name: t.name.trim(),
            team: t.team.trim(),
            app_id: t.app_id,
            started_at: stored_time(t.started_at),
            ended_at: stored_time(t.ended_at),
            tags: &tags,
        };
        if !store::insert_trace(&mut tx, p.tenant(), &trace, now).await? {
            out.duplicate_traces += 1;
            continue;
        }
        out.accepted_traces += 1;
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
            out.accepted_calls +=
                usize::from(store::insert_call(&mut tx, p.tenant(), &trace, &call).await?);
        }
    }
    for b in &req.blobs {
        out.stored_blobs +=
            usize::from(store::insert_blob(&mut tx, p.tenant(), &b.sha256, &b.text, now).await?);
    }
    tx.commit().await?;
    Ok((StatusCode::ACCEPTED, axum::Json(out)))
}

/// A team's figures over a period.
#[derive(Debug, Serialize, ToSchema)]
pub struct TeamView {
    /// Team.
    pub team: String,
    /// Cost of the priced calls, micro-EUR.
    pub cost_micro_eur: u64,
    /// Calls of models with no price on their date: not in `cost_micro_eur`, never counted as 0.
    pub unpriced_calls: u64,
    /// Nearest-rank p95 of call latencies: the smallest latency at or above which lie no more
    /// than 5 % of the calls (the `ceil(0.95 n)`-th smallest). Null without calls.
    pub p95_latency_ms: Option<u64>,
    /// The 3 models with the most calls (ties by name).
    pub top_models: Vec<String>,
    /// Refused calls / calls (0 without calls).
    pub refusal_rate: f64,
    /// Traces that started in the period.
    pub trace_count: u64,
    /// Calls.
    pub call_count: u64,
}

fn summarize(
    calls: &[store::CallRow],
    traces: &[(String, OffsetDateTime)],
    prices: &ai::PriceTable,
) -> Vec<TeamView> {
    let mut by_team: BTreeMap<&str, Vec<&store::CallRow>> = BTreeMap::new();
    for c in calls {
        by_team.entry(c.team.as_str()).or_default().push(c);
    }
    let mut trace_counts: HashMap<&str, u64> = HashMap::new();
    for (team, _) in traces {
        *trace_counts.entry(team.as_str()).or_insert(0) += 1;
    }
    let mut teams: BTreeMap<&str, ()> = by_team.keys().map(|k| (*k, ())).collect();
    for t in trace_counts.keys() {
        teams.insert(t, ());
    }
    teams
        .keys()
        .map(|team| {
            let list = by_team.get(team).map(Vec::as_slice).unwrap_or(&[]);
            let (mut cost, mut unpriced) = (0u64, 0u64);
            let mut models: HashMap<&str, u64> = HashMap::new();
            for c in list {
                let u = Usage {
                    prompt_tokens: c.prompt_tokens.max(0) as u64,
                    completion_tokens: c.completion_tokens.max(0) as u64,
                    cache_read_tokens: c.cache_read_tokens.max(0) as u64,
                    cache_write_tokens: c.cache_write_tokens.max(0) as u64,
                    reasoning_tokens: c.reasoning_tokens.max(0) as u64,
                };
                match prices.cost(&c.model, c.started_at.date(), &u) {
                    Cost::Priced(v) => cost = cost.saturating_add(v),
                    Cost::Unpriced => unpriced += 1,
                }
                *models.entry(c.model.as_str()).or_insert(0) += 1;
            }
            let mut top: Vec<(&str, u64)> = models.into_iter().collect();
            top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
            let latencies: Vec<u64> = list.iter().map(|c| c.latency_ms.max(0) as u64).collect();
            let refused = list.iter().filter(|c| c.refused).count();
            TeamView {
                team: (*team).to_owned(),
                cost_micro_eur: cost,
                unpriced_calls: unpriced,
                p95_latency_ms: ai::p95(&latencies),
                top_models: top.into_iter().take(3).map(|(m, _)| m.to_owned()).collect(),
                refusal_rate: if list.is_empty() {
                    0.0
                } else {
                    refused as f64 / list.len() as f64
                },
                trace_count: trace_counts.get(team).copied().unwrap_or(0),
                call_count: list.len() as u64,
            }
        })
        .collect()
}

/// Period and order of the team view.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TeamsQuery {
    /// Start, RFC 3339 (default 30 days before `to`).
    pub from: Option<String>,
    /// End, RFC 3339, exclusive (default now).
    pub to: Option<String>,
    /// `cost` (default, highest first) or `p95` (slowest first).
    pub sort: Option<String>,
}

impl TeamsQuery {
    /// `[from, to)`: `to` defaults to now, `from` to 30 days before it.
    fn period(&self) -> ApiResult<(OffsetDateTime, OffsetDateTime)> {
        let to = parse_time("to", self.to.as_deref())?.unwrap_or_else(now);
        let from =
            parse_time("from", self.from.as_deref())?.unwrap_or(to - time::Duration::days(30));
        if from >= to {
            return Err(ApiError::invalid("from", "must be before to"));
        }
        Ok((from, to))
    }
}

fn parse_time(field: &str, v: Option<&str>) -> ApiResult<Option<OffsetDateTime>> {
    v.map(|s| {
        OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
            .map_err(|_| ApiError::invalid(field, "must be an RFC 3339 time"))
    })
    .transpose()
}

/// Per team over `[from, to)` (by trace start): cost (priced calls; unpriced ones counted
/// apart), p95 latency (nearest rank), top 3 models, refusal rate, trace count.
#[utoipa::path(get, path = "/ai/teams", tag = "ai", params(TeamsQuery),
    responses((status = 200, body = Vec<TeamView>), (status = 422, body = Problem)))]
async fn teams(
    State(state): State<AppState>,
    Viewer(p): Viewer,
    Query(q): Query<TeamsQuery>,
) -> ApiResult<axum::Json<Vec<TeamView>>> {
    let (from, to) = q.period()?;
    let by_p95 = match q.sort.as_deref().unwrap_or("cost") {
        "cost" => false,
        "p95" => true,
        _ => return Err(ApiError::invalid("sort", "must be cost or p95")),
    };
    let mut c = state.db.conn().await?;
    let calls = store::calls_between(&mut c, p.tenant(), from, to).await?;
    let traces = store::trace_starts(&mut c, p.tenant(), from, to).await?;
    let prices = price_table(&state, p.tenant()).await?;
    let mut list = summarize(&calls, &traces, &prices);
    if by_p95 {
        list.sort_by(|a, b| {
            b.p95_latency_ms
                .cmp(&a.p95_latency_ms)
                .then(a.team.cmp(&b.team))
        });
    } else {
        list.sort_by(|a, b| {
            b.cost_micro_eur
                .cmp(&a.cost_micro_eur)
                .then(a.team.cmp(&b.team))
        });
    }
    Ok(axum::Json(list))
}

/// The month of the export.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MonthQuery {
    /// `YYYY-MM` (UTC).
    pub month: String,
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// The month's per-team figures as RFC 4180 CSV (CRLF line ends, quoted where needed):
/// `team,month,trace_count,call_count,cost_micro_eur,unpriced_calls,p95_latency_ms,
/// refusal_rate,top_models` (models joined by `;`).
#[utoipa::path(get, path = "/ai/teams/export.csv", tag = "ai", params(MonthQuery),
    responses((status = 200, content_type = "text/csv", body = String), (status = 422, body = Problem)))]
async fn export_csv(
    State(state): State<AppState>,
    Viewer(p): Viewer,
    Query(q): Query<MonthQuery>,
) -> ApiResult<impl IntoResponse> {
    let bad = || ApiError::invalid("month", "must be YYYY-MM");
    let (y, m) = q.month.split_once('-').ok_or_else(bad)?;
    let (y, m): (i32, u8) = (y.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
    if q.month.len() != 7 {
        return Err(bad());
    }
    let month = time::Month::try_from(m).map_err(|_| bad())?;
    let start = time::Date::from_calendar_date(y, month, 1).map_err(|_| bad())?;
    let next = if month == time::Month::December {
        time::Date::from_calendar_date(y + 1, time::Month::January, 1)
    } else {
        time::Date::from_calendar_date(y, month.next(), 1)
    }
    .map_err(|_| bad())?;
    let (from, to) = (start.midnight().assume_utc(), next.midnight().assume_utc());
    let mut c = state.db.conn().await?;
    let calls = store::calls_between(&mut c, p.tenant(), from, to).await?;
    let traces = store::trace_starts(&mut c, p.tenant(), from, to).await?;
    let mut body = String::from(
        "team,month,trace_count,call_count,cost_micro_eur,unpriced_calls,p95_latency_ms,refusal_rate,top_models\r\n",
    );
    let prices = price_table(&state, p.tenant()).await?;
    for t in summarize(&calls, &traces, &prices) {
        let row = [
            csv_field(&t.team),
            q.month.clone(),
            t.trace_count.to_string(),
            t.call_count.to_string(),
            t.cost_micro_eur.to_string(),
            t.unpriced_calls.to_string(),
            t.p95_latency_ms.map(|v| v.to_string()).unwrap_or_default(),
            format!("{:.4}", t.refusal_rate),
            csv_field(&t.top_models.join(";")),
        ];
        body.push_str(&row.join(","));
        body.push_str("\r\n");
    }
    Ok((
        [
            (
                header::CONTENT_TYPE,
                "text/csv; charset=utf-8; header=present".to_owned(),
            ),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"ai-teams-{}.csv\"", q.month),
            ),
        ],
        body,
    ))
}

/// One day of a team.
#[derive(Debug, Serialize, ToSchema)]
pub struct TeamDay {
    /// `YYYY-MM-DD` (UTC, by trace start).
    pub date: String,
    /// The day's figures.
    #[serde(flatten)]
    pub figures: TeamView,
}

/// A team over a period.
#[derive(Debug, Serialize, ToSchema)]
pub struct TeamDetail {
    /// The whole period.
    pub total: TeamView,
    /// One entry per day with traces, oldest first.
    pub daily: Vec<TeamDay>,
}

/// One team over `[from, to)` with a daily series (same figures as `/ai/teams`).
#[utoipa::path(get, path = "/ai/teams/{team}", tag = "ai", params(("team" = String, Path, description = "Team"), TeamsQuery),
    responses((status = 200, body = TeamDetail), (status = 404, body = Problem)))]
async fn team(
    State(state): State<AppState>,
    Viewer(p): Viewer,
    axum::extract::Path(name): axum::extract::Path<String>,
    Query(q): Query<TeamsQuery>,
) -> ApiResult<axum::Json<TeamDetail>> {
    let (from, to) = q.period()?;
    let mut c = state.db.conn().await?;
    let calls: Vec<store::CallRow> = store::calls_between(&mut c, p.tenant(), from, to)
        .await?
        .into_iter()
        .filter(|k| k.team == name)
        .collect();
    let traces = store::trace_starts(&mut c, p.tenant(), from, to).await?;
    let prices = price_table(&state, p.tenant()).await?;
    let Some(total) = summarize(&calls, &traces, &prices)
        .into_iter()
        .find(|t| t.team == name)
    else {
        return Err(ApiError::NotFound("team"));
    };
    type Day = (Vec<store::CallRow>, Vec<(String, OffsetDateTime)>);
    let mut days: BTreeMap<time::Date, Day> = BTreeMap::new();
    for k in calls {
        days.entry(k.started_at.date()).or_default().0.push(k);
    }
    for t in traces.into_iter().filter(|(team, _)| *team == name) {
        days.entry(t.1.date()).or_default().1.push(t);
    }
    let daily = days
        .into_iter()
        .filter_map(|(day, (calls, traces))| {
            let figures = summarize(&calls, &traces, &prices).into_iter().next()?;
            Some(TeamDay {
                date: day.format(DATE).unwrap_or_default(),
                figures,
            })
        })
        .collect();
    Ok(axum::Json(TeamDetail { total, daily }))
}

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
async fn otlp_traces(
    State(state): State<AppState>,
    Authenticated(p): Authenticated,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> ApiResult<axum::response::Response> {
    may_send_traces(&p)?;
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
        &body,
    )?;
    let spans = if json {
        trusthub_core::otlp::decode_json(&raw)
    } else {
        trusthub_core::otlp::decode_protobuf(&raw)
    }
    .map_err(|e| ApiError::BadRequest(format!("not an OTLP ExportTraceServiceRequest: {e}")))?;
    let mapped = trusthub_core::otlp::map(&spans);
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
            trusthub_core::otlp::encode_response(mapped.rejected, &message),
        )
            .into_response()
    })
}
