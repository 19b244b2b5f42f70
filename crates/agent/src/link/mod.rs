//! The link to the hub: the signed HTTP client (registration and batch pushes), the
//! WebSocket that carries actions and console sessions, the client certificate, the on-disk
//! spool and the state directory that holds the key and the registration.

pub mod client;
pub mod mtls;
pub mod spool;
pub mod state;
pub mod ws;
