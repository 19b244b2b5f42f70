//! The monitors' periodic jobs: the liveness check and alert-rule evaluation.

pub mod liveness;
pub mod rules;
