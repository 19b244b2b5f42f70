//! The alerts capability's services: what routes and pages both call.

pub mod alerts;
pub mod channels;
pub mod webhooks;
