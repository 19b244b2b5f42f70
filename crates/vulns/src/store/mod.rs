//! The vulnerabilities' tables: advisories as imported, findings and suppressions, the OSV
//! pull's state, npm maintainer records.

pub mod cve;
pub mod npm;
pub mod osv;
