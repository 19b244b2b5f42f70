//! The monitors' tables: apps and their checks, alert rules, the availability timeline and
//! maintenance windows.

pub mod apps;
pub mod rules;
pub mod timeline;
