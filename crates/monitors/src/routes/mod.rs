//! The monitors' API under `/api/v1`.

pub mod apps;
mod apps_shapes;
pub mod push;
pub mod restart;
pub mod rules;
