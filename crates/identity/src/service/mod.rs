//! What the API's handlers, the dashboard's pages and other capabilities call.

pub mod api_tokens;
pub mod audit_log;
pub mod auth;
pub mod invitations;
pub mod me;
pub mod totp;
pub mod users;
