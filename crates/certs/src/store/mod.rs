//! Certificates' tables: issued client certificates and integrity anomalies.

pub mod anomalies;
pub mod client_certs;
