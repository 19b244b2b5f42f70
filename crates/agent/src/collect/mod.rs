//! What the agent reports (CONTRACT 4): host metrics every interval, the inventory (with
//! the dependencies of the projects it finds) every few hours, configuration drift,
//! compliance and DNA, honeypot events and the results of the checks the hub assigns.
//! Collectors read the host through [`crate::host`] and never act on it.

pub mod checks;
pub mod compliance;
pub mod deps;
pub mod dna;
pub mod drift;
pub mod honeypot;
pub mod inventory;
pub mod metrics;
pub mod sockets;
