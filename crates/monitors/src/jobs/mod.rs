//! The monitors' periodic jobs: the liveness check, the hub's own checks and alert-rule
//! evaluation.

pub mod liveness;
pub mod probes;
pub mod rules;
