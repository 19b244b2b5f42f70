//! Certificates' API under `/api/v1`.

pub mod anomalies;
