//! What the API's handlers, the dashboard's pages and other capabilities call.

pub mod slo;
