//! Pure rules: OSV records, version orders and ranges of every ecosystem, package URLs, the
//! scan's matching, supply-chain changes. No I/O; checked against each ecosystem's own tool
//! (`tests/version_oracles.rs`).

pub mod osv;
pub mod purl;
pub mod scan;
pub mod supply_chain;
pub mod version;
