//! Agents (CONTRACT 4; SPEC 4.2): enrollment, registration with a pinned signing key, signed
//! idempotent ingest, the agent records and what they reported, and token/key rotation.

use crate::agent_auth::{AgentAuth, IngestAuth};
use crate::auth::{Admin, Operator, Viewer};
use crate::error::{ApiError, ApiResult, FieldError, Problem};
use crate::extract::{Json, Meta, Path, Query, SignedBody, parse_json};
use crate::openapi::api_routes;
use crate::ratelimit;
use crate::state::{AppState, now};
use crate::store::agents::{self, Agent, Governance, Registration};
use crate::store::telemetry;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use time::OffsetDateTime;
use trusthub_core::agent::{
    self as wire, AGENT_TOKEN_PREFIX, AgentStatus, Batch, ENROLLMENT_TOKEN_PREFIX,
};
use trusthub_core::audit as ev;
use trusthub_core::secret::{hex, new_token, token_hash};
use trusthub_store::{TenantId, audit};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

pub mod certs;
pub mod enrollment;
pub mod governance;
pub mod ingest;
pub mod inventory;
pub mod metrics;
pub mod records;
pub mod registration;
pub mod rotation;

use certs::*;
use enrollment::*;
use governance::*;
use ingest::*;
use inventory::*;
use metrics::*;
use records::*;
use registration::*;
use rotation::*;

/// Action kinds an EAT may carry (CONTRACT 5).
pub const ACTION_KINDS: [&str; 5] = [
    "restart_app",
    "install_package",
    "update_packages",
    "console_open",
    "emergency",
];
/// Default lifetime of an enrollment token.
const ENROLLMENT_TTL: time::Duration = time::Duration::hours(24);
/// Inventory arrays served by the slice endpoints, by path segment.
const SLICES: [(&str, &str); 9] = [
    ("containers", "containers"),
    ("systemd", "systemd"),
    ("packages", "packages"),
    ("app-dependencies", "app_dependencies"),
    ("users", "users"),
    ("sudo", "sudo"),
    ("ssh-keys", "ssh_keys"),
    ("backups", "backups"),
    ("listening", "listening"),
];

pub fn router() -> OpenApiRouter<AppState> {
    let mut r = OpenApiRouter::new()
        .routes(api_routes!(create_enrollment_token, list_enrollment_tokens))
        .routes(api_routes!(revoke_enrollment_token))
        .routes(api_routes!(eat_public_key))
        .routes(api_routes!(register))
        .routes(api_routes!(ingest))
        .routes(api_routes!(heartbeat))
        .routes(api_routes!(list))
        .routes(api_routes!(get_agent, delete_agent))
        .routes(api_routes!(metrics))
        .routes(api_routes!(inventory))
        .routes(api_routes!(inventory_slice))
        .routes(api_routes!(processes))
        .routes(api_routes!(get_governance, put_governance))
        .routes(api_routes!(rotate_token))
        .routes(api_routes!(rotate_signing_key))
        .routes(api_routes!(issue_client_cert))
        .routes(api_routes!(ca_cert))
        .routes(api_routes!(ca_crl))
        .routes(api_routes!(client_certs_of))
        .routes(api_routes!(revoke_client_cert));
    // A honeypot's target is read by its kind.
    trusthub_platform::openapi::one_of(
        r.get_openapi_mut(),
        "Honeypot",
        governance::honeypot_shapes(),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contract_4_intervals_parse_to_milliseconds() {
        assert_eq!(parse_duration_ms("60s"), Some(60_000));
        assert_eq!(parse_duration_ms("5m"), Some(300_000));
        assert_eq!(parse_duration_ms("1h"), Some(3_600_000));
        assert_eq!(parse_duration_ms("1d"), Some(86_400_000));
        for bad in ["", "5", "m", "0s", "-1m", "5w", "1.5h"] {
            assert_eq!(parse_duration_ms(bad), None, "{bad}");
        }
    }
}
