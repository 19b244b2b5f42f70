//! The web platform every Trusthub capability builds on — shared mechanisms only, no
//! capability's rules or tables:
//!
//! - [`state`]: the state container ([`AppState`]), with each capability's own values in
//!   [`state::Parts`];
//! - [`extract`]: strict body, query and path extractors, client address, request metadata;
//! - [`error`]: `ApiError` and RFC 9457 problem documents;
//! - [`openapi`]: the OpenAPI mechanism ([`api_routes!`], [`openapi::Documented`]);
//! - [`middleware`], [`ratelimit`], [`conn`]: request tracking, SPEC 8 limits, connection
//!   guards; [`tls`]: listeners and client certificates;
//! - [`outbound`]: the one HTTP client for calls the hub makes, with its address policy;
//! - [`archive`]: bounded reading of uploaded and pulled archives;
//! - [`scheduler`]: cluster-wide periodic jobs under a lease; [`notify`]: messages between
//!   the hub processes on one PostgreSQL database;
//! - [`page`], [`chart`], [`qr`]: the dashboard's shell, charts and QR codes;
//! - [`settings`], [`mail`], [`metrics`]: configuration, SMTP, request figures.

pub mod archive;
pub mod capability;
pub mod chart;
pub mod conn;
pub mod error;
pub mod extract;
pub mod mail;
pub mod metrics;
pub mod middleware;
pub mod names;
pub mod notify;
pub mod openapi;
pub mod outbound;
pub mod page;
pub mod qr;
pub mod ratelimit;
pub mod scheduler;
pub mod settings;
pub mod state;
pub mod tls;

pub use state::{AppState, now};

/// A boxed future, the shape of the hooks one capability gives another through the state.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "trusthub_session";
