//! The SLO API under `/api/v1`.

pub mod slo;
