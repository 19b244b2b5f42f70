//! The fleet's API under `/api/v1`.

pub mod actions;
pub mod agents;
