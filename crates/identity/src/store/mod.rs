//! Identity's tables: tenants, users, sessions, API tokens, TOTP state, invitations and
//! password resets. Other capabilities reach them only through this crate's functions.

pub mod invitations;
pub mod password_resets;
pub mod sessions;
pub mod tenants;
pub mod tokens;
pub mod totp;
pub mod users;
