//! What the API's handlers, the dashboard's pages and other capabilities call.

pub mod cve;
pub mod cve_export;
pub mod osv_api;
pub mod supply_chain;
pub mod suppressions;
