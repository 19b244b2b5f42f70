//! API tests: every test runs against the real hub on a port, once on SQLite and once on
//! PostgreSQL (see `harness::dual!`).

mod harness;

mod actions;
mod agents;
mod ai;
mod alerts;
mod anomalies;
mod api_tokens;
mod apps;
mod audit_log;
mod auth;
mod browser;
mod browser_pages;
mod client_certs;
mod contract;
mod cve;
mod errors;
mod evidence;
mod hardening;
mod invitations;
mod meta;
mod mtls;
mod osv_api;
mod osv_pull;
mod otlp;
mod slo;
mod supply_chain;
mod suppressions;
mod totp;
mod users;
mod web;
mod webdriver;
mod webhooks;
