//! The alerts capability's tables: alerts, webhook endpoints and their delivery outbox.

pub mod alerts;
pub mod channels;
pub mod hosts;
pub mod webhooks;
