//! The auto-patch and emergency API (CONTRACT 19).

pub mod attestations;
pub mod auto_patch;
pub mod emergency;
pub mod update_all;
