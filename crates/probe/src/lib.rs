//! The network side of the checks both the hub and its agents run (CONTRACT 32): a DNS
//! question ([`dns::lookup`]) and an ICMP echo ([`ping::echo`]). What they may call is the
//! caller's to say: each takes a guard that answers, for an address, why it is not called
//! (the hub's outbound policy, an agent's refusal of link-local and cloud-metadata
//! addresses). Judging the answers is pure and lives in `trusthub_core::dns`.

pub mod dns;
pub mod ping;

/// Why an address is not called, or `Ok` when it may be.
pub type Guard<'a> = &'a (dyn Fn(std::net::IpAddr) -> Result<(), String> + Send + Sync);
