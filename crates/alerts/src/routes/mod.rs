//! The alerts capability's API under `/api/v1`.

pub mod alerts;
pub mod channels;
pub mod webhooks;
