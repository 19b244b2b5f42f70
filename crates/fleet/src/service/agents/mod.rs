//! The agents' services (CONTRACT 4; SPEC 4.2): enrollment, registration with a pinned signing key, signed
//! idempotent ingest, the agent records and what they reported, and token/key rotation.

use crate::agent_auth::{AgentAuth, IngestAuth};
use crate::auth::{Admin, Operator, Viewer};
use crate::error::{ApiError, ApiResult, FieldError, all_valid};
use crate::extract::{Meta, SignedBody, parse_json};
use crate::ratelimit;
use crate::state::{AppState, now};
use crate::store::agents::{self, Agent, Governance, Registration};
use crate::store::telemetry;
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

pub use certs::*;
pub use enrollment::*;
pub use governance::*;
pub use ingest::*;
pub use inventory::*;
pub use metrics::*;
pub use records::*;
pub use registration::*;
pub use rotation::*;

/// Action kinds an EAT may carry (CONTRACT 5).
pub const ACTION_KINDS: [&str; 5] = [
    "restart_app",
    "install_package",
    "update_packages",
    "console_open",
    "emergency",
];
/// Default lifetime of an enrollment token.
pub(crate) const ENROLLMENT_TTL: time::Duration = time::Duration::hours(24);
/// Inventory arrays served by the slice endpoints, by path segment.
pub(crate) const SLICES: [(&str, &str); 9] = [
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
