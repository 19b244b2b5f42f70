//! The vulnerabilities' API: under `/api/v1`, and the OSV-compatible API at the root.

pub mod cve;
pub mod cve_export;
pub mod osv_api;
pub mod supply_chain;
pub mod suppressions;
