//! Trusthub's domain: the records, rules and wire formats that every other crate shares.
//!
//! Nothing here performs I/O or reads the clock: time is always a parameter, so every rule
//! can be unit-tested against the SPEC section it implements.

pub mod agent;
pub mod ai;
pub mod alerting;
pub mod apps;
pub mod audit;
pub mod auth;
pub mod badge;
pub mod canonical;
pub mod compliance;
pub mod csv;
pub mod dns;
pub mod drift;
pub mod eat;
pub mod emergency;
pub mod encode;
pub mod evidence;
pub mod inventory;
pub mod json_guard;
pub mod json_query;
pub mod keys;
pub mod liveness;
pub mod probe;
pub mod redact;
pub mod rng;
pub mod secret;
pub mod secrets;
pub mod severity;
pub mod totp;
pub mod validate;
pub mod webhook;

pub use auth::{Role, TokenScope, TotpPurpose};
