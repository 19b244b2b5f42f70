//! The SLO job: burn-rate alerts and summaries, every minute.

pub mod slo;
