//! Model prices: the shipped dated table, the operator's file and the tenant's overrides.

use super::*;
use crate::auth::Admin;
use crate::extract::Meta;

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
    Ok(state
        .part::<trusthub_core::ai::PriceTable>()
        .with(&overrides))
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
pub(crate) fn check_prices(prices: &[PriceView]) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if prices.is_empty() || prices.len() > 500 {
        errors.push(FieldError::new("prices", "must hold 1 to 500 prices"));
    }
    for (i, x) in prices.iter().enumerate() {
        if !label(&x.model, 200) {
            errors.push(FieldError::new(
                format!("prices[{i}].model"),
                "must be 1-200 characters",
            ));
        }
        if time::Date::parse(&x.effective_from, DATE).is_err() {
            errors.push(FieldError::new(
                format!("prices[{i}].effective_from"),
                "must be YYYY-MM-DD",
            ));
        }
        if [x.input, x.output, x.cache_read, x.cache_write, x.reasoning]
            .iter()
            .any(|v| *v > 1_000_000_000)
        {
            errors.push(FieldError::new(
                format!("prices[{i}]"),
                "prices must be at most 1e9 micro-EUR per 1,000 tokens",
            ));
        }
    }
    errors
}

pub(crate) const DATE: &[time::format_description::BorrowedFormatItem<'static>] =
    time::macros::format_description!("[year]-[month]-[day]");

/// A price (micro-EUR per 1,000 tokens of each kind) from a date on.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PriceView {
    /// Model name (exact match with what calls report).
    #[schema(
        pattern = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$",
        min_length = 1,
        max_length = 200
    )]
    pub model: String,
    /// `YYYY-MM-DD`: calls from that UTC day on use this price, until a later one.
    #[schema(pattern = r"^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])$")]
    pub effective_from: String,
    /// Uncached input.
    #[schema(maximum = 1_000_000_000)]
    pub input: u64,
    /// Output (non-reasoning).
    #[schema(maximum = 1_000_000_000)]
    pub output: u64,
    /// Input read from the prompt cache.
    #[schema(maximum = 1_000_000_000)]
    pub cache_read: u64,
    /// Input written to the prompt cache.
    #[schema(maximum = 1_000_000_000)]
    pub cache_write: u64,
    /// Reasoning output.
    #[schema(maximum = 1_000_000_000)]
    pub reasoning: u64,
    /// `default` (shipped), `file` (the hub's `TRUSTHUB_AI_PRICES_FILE`) or `override`
    /// (your tenant's, set here); ignored on input.
    #[serde(default)]
    pub source: String,
}

/// The service behind the `list_prices` handler, for the API and the dashboard alike.
pub async fn list_prices(state: &AppState, by: &Viewer) -> ApiResult<Vec<PriceView>> {
    let p = &by.0;
    let table = price_table(state, p.tenant()).await?;
    let defaults = ai::default_prices();
    let mut out: Vec<PriceView> = table
        .prices
        .into_iter()
        .map(|x| PriceView {
            source: if defaults.prices.contains(&x) {
                "default"
            } else if state
                .part::<trusthub_core::ai::PriceTable>()
                .prices
                .contains(&x)
            {
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
    Ok(out)
}

/// Prices to add or replace.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PricesIn {
    /// Each replaces the entry of the same model and date, or adds one.
    #[schema(min_items = 1, max_items = 500)]
    pub prices: Vec<PriceView>,
}

/// The service behind the `put_prices` handler, for the API and the dashboard alike.
pub async fn put_prices(
    state: &AppState,
    meta: &Meta,
    by: &Admin,
    req: PricesIn,
) -> ApiResult<Vec<PriceView>> {
    let p = &by.0;
    let errors = check_prices(&req.prices);
    all_valid(errors)?;
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
        p,
        trusthub_core::audit::AI_PRICES_CHANGED,
        "ai_prices".into(),
        serde_json::json!({"models": models}),
    )
    .await?;
    tx.commit().await?;
    list_prices(state, &Viewer(p.clone())).await
}
