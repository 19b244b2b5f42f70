//! The alerts capability's services: what routes and pages both call.

pub mod webhooks;
