//! The vulnerabilities' periodic jobs: the scan, the daily OSV pull, npm maintainer tracking.

pub mod cve_scan;
pub mod osv_pull;
pub mod supply_chain;
