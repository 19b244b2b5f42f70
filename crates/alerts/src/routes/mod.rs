//! The alerts capability's API under `/api/v1`.

pub mod alerts;
pub mod webhooks;
