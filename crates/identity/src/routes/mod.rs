//! Identity's API under `/api/v1`, one module per resource.

pub mod api_tokens;
pub mod audit_log;
pub mod auth;
pub mod invitations;
pub mod me;
pub mod totp;
pub mod users;
