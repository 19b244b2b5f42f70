//! SLO objectives and the summaries of their last evaluation.

pub mod slo;
