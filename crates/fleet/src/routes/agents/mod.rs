//! Agents (CONTRACT 4; SPEC 4.2): enrollment, registration with a pinned signing key, signed
//! idempotent ingest, the agent records and what they reported, and token/key rotation.

use crate::agent_auth::{AgentAuth, IngestAuth};
use crate::auth::{Admin, Operator, Viewer};
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{Json, Meta, Path, Query, SignedBody};
use crate::openapi::api_routes;
use crate::state::{AppState, now};
use crate::store::agents::{self};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};
use trusthub_core::audit as ev;
use trusthub_core::secret::hex;
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
        .routes(api_routes!(
            get_governance,
            put_governance,
            patch_governance
        ))
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
        crate::service::agents::governance::honeypot_shapes(),
    );
    r
}
