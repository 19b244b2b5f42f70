//! LLM observability's API under `/api/v1`.

pub mod ai;
pub mod evidence;
pub mod explain;
