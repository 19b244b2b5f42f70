//! The monitors' API under `/api/v1`.

pub mod apps;
pub mod restart;
pub mod rules;
