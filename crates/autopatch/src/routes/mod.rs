//! The auto-patch API (CONTRACT 19).

pub mod attestations;
pub mod auto_patch;
