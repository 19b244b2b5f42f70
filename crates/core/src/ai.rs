//! LLM observability arithmetic (SPEC 2.11; CONTRACT 9): the price table, the cost of a
//! call with every kind of token, and the p95 latency definition. Pure; the hub and the SDKs
//! share it.
//!
//! Token accounting: `prompt_tokens` counts every input token, of which `cache_read_tokens`
//! were read from the provider's prompt cache and `cache_write_tokens` were written to it;
//! `completion_tokens` counts every output token, of which `reasoning_tokens` were reasoning.
//! Each part is priced at its own rate; a model with no price in force on the call's date is
//! *unpriced* (never costed as 0).

use serde::{Deserialize, Serialize};
use time::Date;

/// Micro-EUR per 1,000 tokens of each kind, for one model from one date on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Price {
    /// Model name as callers report it (exact match).
    pub model: String,
    /// First day this price applies (UTC).
    pub effective_from: Date,
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
}

/// The token counts of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// All input tokens.
    pub prompt_tokens: u64,
    /// All output tokens.
    pub completion_tokens: u64,
    /// Of the input, read from cache.
    pub cache_read_tokens: u64,
    /// Of the input, written to cache.
    pub cache_write_tokens: u64,
    /// Of the output, reasoning.
    pub reasoning_tokens: u64,
}

/// What a call costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cost {
    /// Micro-EUR, rounded half up.
    Priced(u64),
    /// No price for the model on that date.
    Unpriced,
}

/// Why usage figures are inconsistent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum UsageError {
    /// Cache reads and writes exceed the prompt.
    #[error("cache_read_tokens + cache_write_tokens exceed prompt_tokens")]
    Cache,
    /// Reasoning exceeds the completion.
    #[error("reasoning_tokens exceed completion_tokens")]
    Reasoning,
}

impl Usage {
    /// Checks that the parts fit in the totals.
    pub fn check(&self) -> Result<(), UsageError> {
        if self
            .cache_read_tokens
            .saturating_add(self.cache_write_tokens)
            > self.prompt_tokens
        {
            return Err(UsageError::Cache);
        }
        if self.reasoning_tokens > self.completion_tokens {
            return Err(UsageError::Reasoning);
        }
        Ok(())
    }
}

/// A set of prices; several dates per model.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PriceTable {
    /// Entries, any order.
    pub prices: Vec<Price>,
}

impl PriceTable {
    /// The price of `model` in force on `day`: the latest `effective_from` not after it.
    pub fn price_on(&self, model: &str, day: Date) -> Option<&Price> {
        self.prices
            .iter()
            .filter(|p| p.model == model && p.effective_from <= day)
            .max_by_key(|p| p.effective_from)
    }

    /// The cost of a call of `model` on `day`.
    pub fn cost(&self, model: &str, day: Date, u: &Usage) -> Cost {
        match self.price_on(model, day) {
            Some(p) => Cost::Priced(cost_with(p, u)),
            None => Cost::Unpriced,
        }
    }

    /// This table with `overrides` on top: an override replaces the entry of the same model
    /// and date, or adds one.
    pub fn with(&self, overrides: &[Price]) -> PriceTable {
        let mut prices: Vec<Price> = self
            .prices
            .iter()
            .filter(|p| {
                !overrides
                    .iter()
                    .any(|o| o.model == p.model && o.effective_from == p.effective_from)
            })
            .cloned()
            .collect();
        prices.extend(overrides.iter().cloned());
        PriceTable { prices }
    }
}

/// The shipped default prices (micro-EUR per 1,000 tokens, in force from 2026-01-01; list
/// prices converted at 1 USD = 0.92 EUR). Operators override them; a model not listed is
/// unpriced.
pub fn default_prices() -> PriceTable {
    let from = time::macros::date!(2026 - 01 - 01);
    let p = |model: &str, input: u64, output: u64, cache_read: u64, cache_write: u64| Price {
        model: model.into(),
        effective_from: from,
        input,
        output,
        cache_read,
        cache_write,
        reasoning: output,
    };
    PriceTable {
        prices: vec![
            p("gpt-4o", 2300, 9200, 1150, 2300),
            p("gpt-4o-mini", 138, 552, 69, 138),
            p("gpt-4.1", 1840, 7360, 460, 1840),
            p("gpt-4.1-mini", 368, 1472, 92, 368),
            p("o3", 1840, 7360, 460, 1840),
            p("o4-mini", 1012, 4048, 253, 1012),
            p("claude-sonnet-4", 2760, 13800, 276, 3450),
            p("claude-opus-4", 13800, 69000, 1380, 17250),
            p("claude-3-5-haiku", 736, 3680, 74, 920),
            p("gemini-2.5-pro", 1150, 9200, 288, 1150),
            p("gemini-2.5-flash", 276, 2300, 69, 276),
            p("mistral-large", 1840, 5520, 1840, 1840),
        ],
    }
}

/// The cost of `u` at price `p`, in micro-EUR, rounded half up once over the sum.
pub fn cost_with(p: &Price, u: &Usage) -> u64 {
    let uncached = u
        .prompt_tokens
        .saturating_sub(u.cache_read_tokens)
        .saturating_sub(u.cache_write_tokens);
    let output = u.completion_tokens.saturating_sub(u.reasoning_tokens);
    let milli: u128 = [
        (uncached, p.input),
        (u.cache_read_tokens, p.cache_read),
        (u.cache_write_tokens, p.cache_write),
        (output, p.output),
        (u.reasoning_tokens, p.reasoning),
    ]
    .iter()
    .map(|(tokens, per_k)| u128::from(*tokens) * u128::from(*per_k))
    .sum();
    u64::try_from((milli + 500) / 1000).unwrap_or(u64::MAX)
}

/// The p95 of latencies by the nearest-rank method: the smallest value such that at least
/// 95 % of the values are at or below it (the `ceil(0.95 n)`-th smallest). `None` for none.
pub fn p95(values: &[u64]) -> Option<u64> {
    percentile(values, 95)
}

/// The nearest-rank `pct`-th percentile (1 to 100).
pub fn percentile(values: &[u64], pct: u32) -> Option<u64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_unstable();
    let n = v.len() as u64;
    let rank = (u64::from(pct.clamp(1, 100)) * n).div_ceil(100).max(1);
    v.get((rank - 1) as usize).copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::date;

    fn price(model: &str, from: Date, k: u64) -> Price {
        Price {
            model: model.into(),
            effective_from: from,
            input: 1000 * k,
            output: 4000 * k,
            cache_read: 100 * k,
            cache_write: 1250 * k,
            reasoning: 4000 * k,
        }
    }

    #[test]
    fn every_token_kind_is_priced_at_its_own_rate() {
        let p = price("m", date!(2026 - 01 - 01), 1);
        let u = Usage {
            prompt_tokens: 10_000,
            completion_tokens: 3_000,
            cache_read_tokens: 6_000,
            cache_write_tokens: 1_000,
            reasoning_tokens: 2_000,
        };
        // uncached 3,000 × 1000 + cache read 6,000 × 100 + cache write 1,000 × 1250
        // + output 1,000 × 4000 + reasoning 2,000 × 4000, per 1,000 tokens.
        assert_eq!(cost_with(&p, &u), 3_000 + 600 + 1_250 + 4_000 + 8_000);
        assert!(u.check().is_ok());
        assert_eq!(
            Usage {
                cache_read_tokens: 11_000,
                ..u
            }
            .check(),
            Err(UsageError::Cache)
        );
        assert_eq!(
            Usage {
                reasoning_tokens: 3_001,
                ..u
            }
            .check(),
            Err(UsageError::Reasoning)
        );
        // Rounding half up, once over the sum: 1 token at 1,500 per 1,000 is 1.5 → 2.
        let q = Price {
            input: 1500,
            ..p.clone()
        };
        assert_eq!(
            cost_with(
                &q,
                &Usage {
                    prompt_tokens: 1,
                    ..Usage::default()
                }
            ),
            2
        );
        assert_eq!(cost_with(&q, &Usage::default()), 0);
    }

    #[test]
    fn the_price_in_force_on_the_call_date_applies_and_unknown_models_are_unpriced() {
        let table = PriceTable {
            prices: vec![
                price("m", date!(2026 - 01 - 01), 1),
                price("m", date!(2026 - 06 - 01), 2),
            ],
        };
        let u = Usage {
            prompt_tokens: 1000,
            ..Usage::default()
        };
        assert_eq!(table.cost("m", date!(2025 - 12 - 31), &u), Cost::Unpriced);
        assert_eq!(
            table.cost("m", date!(2026 - 05 - 31), &u),
            Cost::Priced(1000)
        );
        assert_eq!(
            table.cost("m", date!(2026 - 06 - 01), &u),
            Cost::Priced(2000)
        );
        assert_eq!(
            table.cost("other", date!(2026 - 06 - 01), &u),
            Cost::Unpriced
        );
        let over = table.with(&[price("m", date!(2026 - 06 - 01), 5)]);
        assert_eq!(
            over.cost("m", date!(2026 - 07 - 01), &u),
            Cost::Priced(5000)
        );
        assert_eq!(over.prices.len(), 2);
    }

    #[test]
    fn p95_is_the_nearest_rank() {
        assert_eq!(p95(&[]), None);
        assert_eq!(p95(&[7]), Some(7));
        let hundred: Vec<u64> = (1..=100).collect();
        assert_eq!(p95(&hundred), Some(95));
        let twenty: Vec<u64> = (1..=20).rev().collect();
        assert_eq!(p95(&twenty), Some(19));
        assert_eq!(p95(&[10, 1000]), Some(1000));
        assert_eq!(percentile(&hundred, 50), Some(50));
    }
}
