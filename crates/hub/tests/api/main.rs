//! API tests: every test runs against the real hub on a port, once on SQLite and once on
//! PostgreSQL (see `harness::dual!`).
//!
//! One test binary for the whole product (one browser, one PostgreSQL rig), its modules kept
//! where they belong: a capability's API and page tests live in its own crate, under
//! `crates/<capability>/tests/api/` (a folder without `main.rs`, so cargo builds no second
//! binary from it), and are compiled here; the harness and the tests of the product as a
//! whole (the OpenAPI document, errors, hardening, the browser walks) stay in this folder.

mod harness;

#[path = "../../../fleet/tests/api/actions.rs"]
mod actions;
#[path = "../../../fleet/tests/api/agents.rs"]
mod agents;
#[path = "../../../llm/tests/api/ai.rs"]
mod ai;
#[path = "../../../alerts/tests/api/alerts.rs"]
mod alerts;
#[path = "../../../certs/tests/api/anomalies.rs"]
mod anomalies;
#[path = "../../../identity/tests/api/api_tokens.rs"]
mod api_tokens;
#[path = "../../../monitors/tests/api/apps.rs"]
mod apps;
#[path = "../../../identity/tests/api/audit_log.rs"]
mod audit_log;
#[path = "../../../identity/tests/api/auth.rs"]
mod auth;
#[path = "../../../autopatch/tests/api/auto_patch.rs"]
mod auto_patch;
mod browser;
mod browser_pages;
#[path = "../../../alerts/tests/api/channels.rs"]
mod channels;
#[path = "../../../monitors/tests/api/check_types.rs"]
mod check_types;
#[path = "../../../monitors/tests/api/checks.rs"]
mod checks;
#[path = "../../../certs/tests/api/client_certs.rs"]
mod client_certs;
#[path = "../../../cloud/tests/api/cloud.rs"]
mod cloud;
#[path = "../../../compliance/tests/api/compliance.rs"]
mod compliance;
#[path = "../../../console/tests/api/console.rs"]
mod console;
mod contract;
#[path = "../../../vulns/tests/api/cve.rs"]
mod cve;
#[path = "../../../drift/tests/api/drift.rs"]
mod drift;
#[path = "../../../autopatch/tests/api/emergency.rs"]
mod emergency;
mod errors;
#[path = "../../../llm/tests/api/evidence.rs"]
mod evidence;
mod hardening;
#[path = "../../../identity/tests/api/invitations.rs"]
mod invitations;
mod meta;
#[path = "../../../certs/tests/api/mtls.rs"]
mod mtls;
#[path = "../../../trust/tests/api/networks.rs"]
mod networks;
#[path = "../../../alerts/tests/api/official_clients.rs"]
mod official_clients;
#[path = "../../../vulns/tests/api/osv_api.rs"]
mod osv_api;
#[path = "../../../vulns/tests/api/osv_pull.rs"]
mod osv_pull;
#[path = "../../../llm/tests/api/otlp.rs"]
mod otlp;
#[path = "../../../remotewrite/tests/api/remote_write.rs"]
mod remote_write;
#[path = "../../../remotewrite/tests/rig/mod.rs"]
mod rw_rig;
#[path = "../../../slo/tests/api/slo.rs"]
mod slo;
#[path = "../../../status/tests/api/status_pages.rs"]
mod status_pages;
#[path = "../../../vulns/tests/api/supply_chain.rs"]
mod supply_chain;
#[path = "../../../vulns/tests/api/suppressions.rs"]
mod suppressions;
#[path = "../../../topology/tests/api/topology.rs"]
mod topology;
#[path = "../../../identity/tests/api/totp.rs"]
mod totp;
#[path = "../../../trust/tests/api/trust.rs"]
mod trust;
#[path = "../../../autopatch/tests/api/update_all.rs"]
mod update_all;
#[path = "../../../identity/tests/api/users.rs"]
mod users;
mod web;
mod webdriver;
#[path = "../../../alerts/tests/api/webhooks.rs"]
mod webhooks;
