//! LLM observability's tables: traces and spans, teams, prices, evidence packs.

pub mod ai;
pub mod evidence;
