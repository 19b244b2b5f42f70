//! The fleet's tables: agents and enrolment tokens, metrics and inventory, actions, agent
//! connections and the transparency log.

pub mod actions;
pub mod agents;
pub mod metric_log;
pub mod metric_rows;
pub mod telemetry;
