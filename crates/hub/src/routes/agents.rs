//! Agents (CONTRACT 4; SPEC 4.2): enrollment, registration with a pinned signing key, signed
//! idempotent ingest, the agent records and what they reported, and token/key rotation.

use crate::auth::{Admin, AgentAuth, Viewer};
use crate::error::{ApiError, ApiResult, FieldError, Problem};
use crate::extract::{Json, Meta, Path, Query, SignedBody, parse_json};
use crate::ratelimit;
use crate::state::{AppState, now};
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
use trusthub_store::agents::{self, Agent, Governance, Registration};
use trusthub_store::{TenantId, audit, telemetry};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

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
const SLICES: [(&str, &str); 6] = [
    ("containers", "containers"),
    ("systemd", "systemd"),
    ("users", "users"),
    ("sudo", "sudo"),
    ("ssh-keys", "ssh_keys"),
    ("backups", "backups"),
];

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_enrollment_token, list_enrollment_tokens))
        .routes(routes!(revoke_enrollment_token))
        .routes(routes!(eat_public_key))
        .routes(routes!(register))
        .routes(routes!(ingest))
        .routes(routes!(heartbeat))
        .routes(routes!(list))
        .routes(routes!(get_agent, delete_agent))
        .routes(routes!(metrics))
        .routes(routes!(inventory))
        .routes(routes!(inventory_slice))
        .routes(routes!(processes))
        .routes(routes!(get_governance, put_governance))
        .routes(routes!(rotate_token))
        .routes(routes!(rotate_signing_key))
}

fn tags_valid(tags: &[String]) -> Result<Vec<String>, String> {
    if tags.len() > 32 {
        return Err("at most 32 tags".into());
    }
    let mut out: Vec<String> = Vec::with_capacity(tags.len());
    for t in tags {
        let t = t.trim();
        let ok = !t.is_empty()
            && t.len() <= 64
            && t.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.:=/".contains(c));
        if !ok {
            return Err(format!(
                "tag `{t}` must be 1-64 characters of letters, digits and - _ . : = /"
            ));
        }
        if !out.iter().any(|o| o == t) {
            out.push(t.to_owned());
        }
    }
    Ok(out)
}

fn rfc3339(t: &OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

// ---------------------------------------------------------------- enrollment

/// An enrollment token to create.
#[derive(Debug, Deserialize, ToSchema)]
pub struct NewEnrollmentToken {
    /// Until when it enrols agents (default 24 h from now).
    #[serde(default, with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub expires_at: Option<OffsetDateTime>,
    /// Tags every agent enrolled with it gets.
    #[serde(default)]
    pub tags: Vec<String>,
}

/// A created enrollment token, shown once.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedEnrollmentToken {
    /// Id.
    pub id: Uuid,
    /// `the_...`: pass to `trusthub-agent --enroll`.
    pub token: String,
    /// Expiry.
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    /// Tags given to enrolled agents.
    pub tags: Vec<String>,
}

/// Create an enrollment token (admin). It enrols any number of hosts until it expires
/// (default 24 h); stored hashed.
#[utoipa::path(post, path = "/agents/enrollment-tokens", tag = "agents", request_body = NewEnrollmentToken,
    responses((status = 201, body = CreatedEnrollmentToken), (status = 422, body = Problem)))]
async fn create_enrollment_token(
    State(state): State<AppState>,
    meta: Meta,
    Admin(p): Admin,
    Json(req): Json<NewEnrollmentToken>,
) -> ApiResult<(StatusCode, axum::Json<CreatedEnrollmentToken>)> {
    let now = now();
    let tags = tags_valid(&req.tags).map_err(|m| ApiError::invalid("tags", m))?;
    let expires_at = match req.expires_at {
        Some(e) if e <= now => {
            return Err(ApiError::invalid("expires_at", "must be in the future"));
        }
        Some(e) => e
            .to_offset(time::UtcOffset::UTC)
            .replace_nanosecond(0)
            .unwrap_or(e),
        None => now + ENROLLMENT_TTL,
    };
    let token =
        new_token(ENROLLMENT_TOKEN_PREFIX).map_err(|e| ApiError::Internal(e.to_string()))?;
    let mut tx = state.db.begin().await?;
    let id = agents::insert_enrollment_token(
        &mut tx,
        p.tenant(),
        &token_hash(&token),
        &tags,
        Some(p.user.id),
        now,
        expires_at,
    )
    .await?;
    meta.record(
        &mut tx,
        &p,
        ev::ENROLLMENT_TOKEN_CREATED,
        format!("enrollment_token:{id}"),
        json!({"tags": tags, "expires_at": rfc3339(&expires_at)}),
    )
    .await?;
    tx.commit().await?;
    Ok((
        StatusCode::CREATED,
        axum::Json(CreatedEnrollmentToken {
            id,
            token,
            expires_at,
            tags,
        }),
    ))
}

/// An enrollment token as listed (never the token itself).
#[derive(Debug, Serialize, ToSchema)]
pub struct EnrollmentTokenView {
    /// Id.
    pub id: Uuid,
    /// Tags given to enrolled agents.
    pub tags: Vec<String>,
    /// Who created it.
    pub created_by: Option<Uuid>,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Until when it enrols.
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
}

/// The tenant's enrollment tokens that still enrol (admin), newest first.
#[utoipa::path(get, path = "/agents/enrollment-tokens", tag = "agents", responses((status = 200, body = Vec<EnrollmentTokenView>)))]
async fn list_enrollment_tokens(
    State(state): State<AppState>,
    Admin(p): Admin,
) -> ApiResult<axum::Json<Vec<EnrollmentTokenView>>> {
    let mut c = state.db.conn().await?;
    let rows = agents::list_enrollment_tokens(&mut c, p.tenant(), now()).await?;
    Ok(axum::Json(
        rows.into_iter()
            .map(|r| EnrollmentTokenView {
                id: r.id,
                tags: r.tags.0,
                created_by: r.created_by,
                created_at: r.created_at,
                expires_at: r.expires_at,
            })
            .collect(),
    ))
}

/// Revoke an enrollment token (admin): it enrols no more hosts; agents it enrolled keep
/// working.
#[utoipa::path(delete, path = "/agents/enrollment-tokens/{id}", tag = "agents", params(("id" = Uuid, Path, description = "Enrollment token id")),
    responses((status = 204, description = "Revoked"), (status = 404, body = Problem)))]
async fn revoke_enrollment_token(
    State(state): State<AppState>,
    meta: Meta,
    Admin(p): Admin,
    Path(id): Path<Uuid>,
) -> ApiResult<StatusCode> {
    let mut tx = state.db.begin().await?;
    if !agents::delete_enrollment_token(&mut tx, p.tenant(), id).await? {
        return Err(ApiError::NotFound("enrollment token"));
    }
    meta.record(
        &mut tx,
        &p,
        ev::ENROLLMENT_TOKEN_REVOKED,
        format!("enrollment_token:{id}"),
        json!({}),
    )
    .await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The hub's public key for emergency action tokens.
#[derive(Debug, Serialize, ToSchema)]
pub struct EatPublicKey {
    /// `EdDSA` (Ed25519, RFC 8037).
    pub alg: String,
    /// Key id, as in the `kid` header of every token.
    pub kid: String,
    /// The Ed25519 public key, hex.
    pub public_key_hex: String,
}

/// The hub's EAT public key (CONTRACT 5), the same one agents pin at registration. Public: a
/// public key is no secret, and anyone may check a token or a pin against it.
#[utoipa::path(get, path = "/agents/eat-public-key", tag = "agents", responses((status = 200, body = EatPublicKey)))]
async fn eat_public_key(State(state): State<AppState>) -> axum::Json<EatPublicKey> {
    let public = state.eat_key.verifying_key();
    axum::Json(EatPublicKey {
        alg: "EdDSA".into(),
        kid: trusthub_core::eat::kid(&public),
        public_key_hex: hex(public.as_bytes()),
    })
}

// ---------------------------------------------------------------- registration

/// What a host says when it registers.
#[derive(Debug, Deserialize, ToSchema)]
pub struct RegisterRequest {
    /// Stable machine identity (`/etc/machine-id`).
    pub machine_id: String,
    /// Host name.
    pub hostname: String,
    /// OS name and version.
    pub os: String,
    /// CPU architecture.
    pub arch: String,
    /// Agent build.
    pub agent_version: String,
    /// The agent's Ed25519 public key, 64 hex characters.
    pub signing_pubkey: String,
    /// Extra tags.
    #[serde(default)]
    pub tags: Vec<String>,
}

/// The hub's answer to a registration.
#[derive(Debug, Serialize, ToSchema)]
pub struct Registered {
    /// The agent's id.
    pub agent_id: Uuid,
    /// `tha_...`: the agent's bearer token (a new one at every registration).
    pub agent_token: String,
    /// The hub's Ed25519 key for action tokens, hex: pin it.
    pub hub_eat_public_key: String,
    /// Push interval.
    pub ingest_interval_secs: i64,
    /// Inventory interval.
    pub inventory_interval_secs: i64,
}

fn short(field: &str, v: &str, max: usize) -> Option<FieldError> {
    let t = v.trim();
    (t.is_empty() || t.len() > max || t.chars().any(char::is_control)).then(|| FieldError {
        field: field.into(),
        message: format!("must be 1-{max} printable characters"),
    })
}

/// Register a host (CONTRACT 4). `Authorization: Bearer <enrollment token>` and
/// `X-Service-Signature: ed25519=<base64>` over the exact body, made with the key of
/// `signing_pubkey` (proof of possession; 401 otherwise). Idempotent per (tenant,
/// machine_id): 201 the first time, 200 after, each time with a new agent token (the old one
/// stops working). A different key for a machine whose key is pinned is 409: change keys
/// through `rotate-signing-key`.
#[utoipa::path(post, path = "/agents/register", tag = "agents", request_body = RegisterRequest,
    responses((status = 201, body = Registered), (status = 200, body = Registered),
        (status = 401, description = "Bad enrollment token or signature", body = Problem),
        (status = 409, description = "Another key is pinned for this machine", body = Problem)))]
async fn register(
    State(state): State<AppState>,
    meta: Meta,
    headers: HeaderMap,
    body: SignedBody,
) -> ApiResult<(StatusCode, axum::Json<Registered>)> {
    let enrollment = {
        let token = crate::auth::bearer(&headers)?;
        if !token.starts_with(ENROLLMENT_TOKEN_PREFIX) {
            return Err(ApiError::Unauthenticated(
                "expected Authorization: Bearer <enrollment token>".into(),
            ));
        }
        let mut c = state.db.conn().await?;
        agents::find_enrollment_token(&mut c, &token_hash(token), now())
            .await?
            .ok_or_else(|| {
                ApiError::Unauthenticated("unknown or expired enrollment token".into())
            })?
    };
    let req: RegisterRequest = parse_json(&body.json)?;
    let mut errors: Vec<FieldError> = [
        short("machine_id", &req.machine_id, 128),
        short("hostname", &req.hostname, 253),
        short("os", &req.os, 200),
        short("arch", &req.arch, 32),
        short("agent_version", &req.agent_version, 100),
    ]
    .into_iter()
    .flatten()
    .collect();
    let key = wire::parse_public_key(&req.signing_pubkey).map_err(|e| {
        errors.push(FieldError {
            field: "signing_pubkey".into(),
            message: e.to_string(),
        })
    });
    let extra_tags = tags_valid(&req.tags).map_err(|m| {
        errors.push(FieldError {
            field: "tags".into(),
            message: m,
        })
    });
    let (Ok(key), Ok(extra_tags), true) = (key, extra_tags, errors.is_empty()) else {
        return Err(ApiError::Validation(errors));
    };
    let signature = headers
        .get("x-service-signature")
        .and_then(|v| v.to_str().ok());
    wire::verify_signature(&key, signature, &body.raw)
        .map_err(|e| ApiError::Unauthenticated(format!("registration signature refused: {e}")))?;
    let pubkey_hex = hex(key.as_bytes());
    let mut tags = enrollment.tags.0.clone();
    for t in extra_tags {
        if !tags.contains(&t) {
            tags.push(t);
        }
    }
    let tenant = TenantId(enrollment.tenant_id);
    let reg = Registration {
        machine_id: req.machine_id.trim(),
        hostname: req.hostname.trim(),
        os: req.os.trim(),
        arch: req.arch.trim(),
        agent_version: req.agent_version.trim(),
        signing_pubkey: &pubkey_hex,
        tags: &tags,
    };
    let agent_token =
        new_token(AGENT_TOKEN_PREFIX).map_err(|e| ApiError::Internal(e.to_string()))?;
    let now = now();
    let mut tx = state.db.begin().await?;
    let (id, status, intervals) = match agents::find_by_machine(&mut tx, tenant, reg.machine_id)
        .await?
    {
        Some(existing) => {
            if existing
                .signing_pubkey
                .as_deref()
                .is_some_and(|pinned| pinned != pubkey_hex)
            {
                return Err(ApiError::Conflict(
                    "another signing key is pinned for this machine; an admin must call rotate-signing-key first".into(),
                ));
            }
            agents::reregister(
                &mut tx,
                tenant,
                existing.id,
                &reg,
                &token_hash(&agent_token),
            )
            .await?;
            (
                existing.id,
                StatusCode::OK,
                (
                    existing.ingest_interval_secs,
                    existing.inventory_interval_secs,
                ),
            )
        }
        None => {
            let allowed: Vec<String> = ACTION_KINDS.iter().map(|s| (*s).to_owned()).collect();
            let id = match agents::insert(
                &mut tx,
                tenant,
                &reg,
                &token_hash(&agent_token),
                &allowed,
                now,
            )
            .await
            {
                Ok(id) => id,
                Err(trusthub_store::StoreError::Conflict(_)) => {
                    return Err(ApiError::Conflict(
                        "this machine registered at the same moment; retry".into(),
                    ));
                }
                Err(e) => return Err(e.into()),
            };
            (
                id,
                StatusCode::CREATED,
                (
                    wire::DEFAULT_INGEST_INTERVAL_SECS,
                    wire::DEFAULT_INVENTORY_INTERVAL_SECS,
                ),
            )
        }
    };
    audit::append(
        &mut tx,
        tenant,
        &meta.audit(ev::AGENT_REGISTERED, format!("agent:{id}"), format!("agent:{id}"), json!({"hostname": reg.hostname, "machine_id": reg.machine_id, "first": status == StatusCode::CREATED, "enrollment_token": enrollment.id})),
        now,
    )
    .await?;
    tx.commit().await?;
    Ok((
        status,
        axum::Json(Registered {
            agent_id: id,
            agent_token,
            hub_eat_public_key: hex(state.eat_key.verifying_key().as_bytes()),
            ingest_interval_secs: intervals.0,
            inventory_interval_secs: intervals.1,
        }),
    ))
}

/// Checks the request signature when the agent's key is pinned (CONTRACT 4).
fn check_agent_signature(agent: &Agent, headers: &HeaderMap, raw: &[u8]) -> ApiResult<()> {
    let Some(pinned) = &agent.signing_pubkey else {
        return Ok(());
    };
    let key = wire::parse_public_key(pinned)
        .map_err(|_| ApiError::Internal("pinned key unreadable".into()))?;
    let signature = headers
        .get("x-service-signature")
        .and_then(|v| v.to_str().ok());
    wire::verify_signature(&key, signature, raw)
        .map_err(|e| ApiError::Unauthenticated(format!("signature refused: {e}")))
}

// ---------------------------------------------------------------- ingest

/// The answer to an ingest.
#[derive(Debug, Serialize, ToSchema)]
pub struct IngestAccepted {
    /// Always true: everything in the batch is committed.
    pub accepted: bool,
    /// True when this `batch_id` was stored before; nothing was stored again.
    pub duplicate: bool,
    /// The hub's clock.
    #[serde(with = "time::serde::rfc3339")]
    pub server_time: OffsetDateTime,
    /// The push interval the hub's governance asks for now (the agent follows it).
    pub ingest_interval_secs: i64,
    /// The inventory interval the hub's governance asks for now.
    pub inventory_interval_secs: i64,
    /// The HTTP checks of this agent's `http` apps: `{app_id, endpoint, interval_seconds}`;
    /// results go back in `app_checks` of later batches.
    #[schema(value_type = Vec<Object>)]
    pub http_checks: Vec<wire::HttpCheck>,
}

/// Push a batch (CONTRACT 4): `Authorization: Bearer <agent token>`, `X-Service-Signature`
/// over the exact body bytes as sent (required once the key is pinned; gzip and zstd bodies
/// are signed compressed). 202 means committed: samples, inventory snapshot and processes of
/// the batch are stored in one transaction. A `sent_at` more than 10 minutes from the hub's
/// clock is refused; a `batch_id` seen in the last 24 h answers `duplicate: true` and stores
/// nothing. 60 per minute per agent.
#[utoipa::path(post, path = "/ingest", tag = "agents", request_body = Object,
    responses((status = 202, body = IngestAccepted), (status = 401, body = Problem), (status = 422, body = Problem),
        (status = 429, body = Problem)))]
async fn ingest(
    State(state): State<AppState>,
    AgentAuth(agent): AgentAuth,
    headers: HeaderMap,
    body: SignedBody,
) -> ApiResult<(StatusCode, axum::Json<IngestAccepted>)> {
    check_agent_signature(&agent, &headers, &body.raw)?;
    let now = now();
    state
        .limiter
        .hit(
            ratelimit::INGEST,
            &agent.id.to_string(),
            now.unix_timestamp(),
        )
        .await?;
    let batch: Batch = parse_json(&body.json)?;
    let skew = (batch.sent_at - now).whole_seconds().abs();
    if skew > wire::REPLAY_WINDOW_SECS {
        return Err(ApiError::invalid(
            "sent_at",
            format!("is {skew} s from the hub's clock; the replay window is 600 s"),
        ));
    }
    let mut errors: Vec<FieldError> = batch
        .metrics
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            wire::check_sample(s).err().map(|m| FieldError {
                field: format!("metrics[{i}]"),
                message: m,
            })
        })
        .take(20)
        .collect();
    let inventory_at = match &batch.inventory {
        None => None,
        Some(inv) => match inv
            .get("collected_at")
            .and_then(Value::as_str)
            .map(|s| OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339))
        {
            Some(Ok(t)) if inv.is_object() => Some(
                t.to_offset(time::UtcOffset::UTC)
                    .replace_nanosecond(0)
                    .unwrap_or(t),
            ),
            _ => {
                errors.push(FieldError {
                    field: "inventory.collected_at".into(),
                    message: "inventory must be an object with an RFC 3339 collected_at".into(),
                });
                None
            }
        },
    };
    if !errors.is_empty() {
        return Err(ApiError::Validation(errors));
    }
    let observed = observed_map(&batch);
    let checks: Vec<trusthub_store::apps::CheckResult> = batch
        .app_checks
        .iter()
        .map(|c| trusthub_store::apps::CheckResult {
            app_id: c.app_id,
            checked_at: c
                .checked_at
                .to_offset(time::UtcOffset::UTC)
                .replace_nanosecond(0)
                .unwrap_or(c.checked_at),
            ok: c.ok,
            status_code: c.status_code.map(i64::from),
            latency_ms: c.latency_ms.map(|l| l.min(i64::MAX as u64) as i64),
            error: c.error.as_ref().map(|e| e.chars().take(500).collect()),
        })
        .collect();
    let reported_actions: Option<Vec<String>> = batch
        .heartbeat
        .as_ref()
        .and_then(|h| h.get("allowed_actions"))
        .and_then(|a| serde_json::from_value(a.clone()).ok());
    let samples = batch.metrics.len();
    let fresh = state
        .ingest
        .submit(crate::ingest::Job {
            agent_id: agent.id,
            batch,
            inventory_at,
            reported_actions,
            observed,
            checks,
            now,
        })
        .await?;
    state.metrics.ingested(fresh, samples);
    let http_checks = {
        let mut c = state.db.conn().await?;
        trusthub_store::apps::http_checks_of(&mut c, agent.id)
            .await?
            .into_iter()
            .map(|(app_id, endpoint, interval_seconds)| wire::HttpCheck {
                app_id,
                endpoint,
                interval_seconds,
            })
            .collect()
    };
    Ok((
        StatusCode::ACCEPTED,
        axum::Json(IngestAccepted {
            accepted: true,
            duplicate: !fresh,
            server_time: now,
            ingest_interval_secs: agent.ingest_interval_secs,
            inventory_interval_secs: agent.inventory_interval_secs,
            http_checks,
        }),
    ))
}

/// What runs on the host according to a batch (`live`, `processes`, or the inventory's
/// lists), reduced for the liveness check; `None` when the batch says nothing about it.
fn observed_map(batch: &Batch) -> Option<trusthub_core::apps::ObservedMap> {
    let inv = batch.inventory.as_ref();
    let live = batch.live.as_ref();
    if live.is_none() && batch.processes.is_none() && inv.is_none() {
        return None;
    }
    let list = |key: &str| -> Vec<Value> {
        live.and_then(|l| l.get(key))
            .or_else(|| inv.and_then(|i| i.get(key)))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let processes = batch
        .processes
        .clone()
        .or_else(|| {
            inv.and_then(|i| i.get("processes"))
                .and_then(Value::as_array)
                .cloned()
        })
        .unwrap_or_default();
    Some(trusthub_core::apps::observed_map(
        &list("systemd"),
        &list("containers"),
        &processes,
    ))
}

/// The hub's clock, answering a heartbeat.
#[derive(Debug, Serialize, ToSchema)]
pub struct HeartbeatAck {
    /// The hub's clock.
    #[serde(with = "time::serde::rfc3339")]
    pub server_time: OffsetDateTime,
}

/// An agent's heartbeat: marks it seen; the optional JSON object is kept as its last
/// heartbeat (`allowed_actions` in it reports the host's own action allowlist). Same
/// authentication and signature rules as `/ingest`; only the agent itself may send it.
#[utoipa::path(post, path = "/agents/{id}/heartbeat", tag = "agents", params(("id" = Uuid, Path, description = "Agent id")),
    request_body = Object, responses((status = 200, body = HeartbeatAck), (status = 401, body = Problem), (status = 404, body = Problem)))]
async fn heartbeat(
    State(state): State<AppState>,
    AgentAuth(agent): AgentAuth,
    Path(id): Path<Uuid>,
    headers: HeaderMap,
    body: SignedBody,
) -> ApiResult<axum::Json<HeartbeatAck>> {
    if id != agent.id {
        return Err(ApiError::NotFound("agent"));
    }
    check_agent_signature(&agent, &headers, &body.raw)?;
    let facts: Option<Value> = if body.json.iter().all(u8::is_ascii_whitespace) {
        None
    } else {
        Some(parse_json(&body.json)?)
    };
    if facts.as_ref().is_some_and(|f| !f.is_object()) {
        return Err(ApiError::invalid(
            ".",
            "a heartbeat body must be a JSON object",
        ));
    }
    let reported: Option<Vec<String>> = facts
        .as_ref()
        .and_then(|f| f.get("allowed_actions"))
        .and_then(|a| serde_json::from_value(a.clone()).ok());
    let now = now();
    let mut tx = state.db.begin().await?;
    let seen = agents::Seen {
        agent_id: agent.id,
        heartbeat: facts.as_ref(),
        reported_actions: reported.as_deref(),
    };
    agents::seen_many(&mut tx, &[seen], now).await?;
    tx.commit().await?;
    Ok(axum::Json(HeartbeatAck { server_time: now }))
}

// ---------------------------------------------------------------- records

/// An agent as the API shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct AgentView {
    /// Id.
    pub id: Uuid,
    /// Host name.
    pub hostname: String,
    /// Machine identity.
    pub machine_id: String,
    /// OS.
    pub os: String,
    /// Architecture.
    pub arch: String,
    /// Agent build.
    pub agent_version: String,
    /// Tags.
    pub tags: Vec<String>,
    /// When data last arrived.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_seen_at: Option<OffsetDateTime>,
    /// `online` (data within 3 intervals), `silent` (none for 3 intervals), `offline`
    /// (never, or none for a day).
    #[schema(value_type = String, example = "online")]
    pub status: AgentStatus,
    /// Whether its WebSocket is open to some hub process (actions can reach it).
    pub connected: bool,
    /// Whether a signing key is pinned (false after a rotation until it registers again).
    pub signing_key_pinned: bool,
    /// Push interval.
    pub ingest_interval_secs: i64,
    /// Inventory interval.
    pub inventory_interval_secs: i64,
    /// First registration.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

impl AgentView {
    fn new(a: Agent, now: OffsetDateTime, connected: bool) -> AgentView {
        AgentView {
            connected,
            status: wire::status(a.last_seen_at, a.ingest_interval_secs, now),
            id: a.id,
            hostname: a.hostname,
            machine_id: a.machine_id,
            os: a.os,
            arch: a.arch,
            agent_version: a.agent_version,
            tags: a.tags.0,
            last_seen_at: a.last_seen_at,
            signing_key_pinned: a.signing_pubkey.is_some(),
            ingest_interval_secs: a.ingest_interval_secs,
            inventory_interval_secs: a.inventory_interval_secs,
            created_at: a.created_at,
        }
    }
}

async fn connected_since(
    c: &mut trusthub_store::Conn,
    tenant: TenantId,
    now: OffsetDateTime,
) -> ApiResult<std::collections::HashSet<Uuid>> {
    let since = now - time::Duration::seconds(trusthub_store::actions::CONNECTION_FRESH_SECS);
    Ok(trusthub_store::actions::connected_agents(c, tenant, since).await?)
}

async fn load(state: &AppState, tenant: TenantId, id: Uuid) -> ApiResult<Agent> {
    let mut c = state.db.conn().await?;
    agents::get(&mut c, tenant, id)
        .await?
        .ok_or(ApiError::NotFound("agent"))
}

/// The tenant's agents.
#[utoipa::path(get, path = "/agents", tag = "agents", responses((status = 200, body = Vec<AgentView>)))]
async fn list(
    State(state): State<AppState>,
    Viewer(p): Viewer,
) -> ApiResult<axum::Json<Vec<AgentView>>> {
    let mut c = state.db.conn().await?;
    let now = now();
    let connected = connected_since(&mut c, p.tenant(), now).await?;
    Ok(axum::Json(
        agents::list(&mut c, p.tenant())
            .await?
            .into_iter()
            .map(|a| {
                let on = connected.contains(&a.id);
                AgentView::new(a, now, on)
            })
            .collect(),
    ))
}

/// One agent.
#[utoipa::path(get, path = "/agents/{id}", tag = "agents", params(("id" = Uuid, Path, description = "Agent id")),
    responses((status = 200, body = AgentView), (status = 404, body = Problem)))]
async fn get_agent(
    State(state): State<AppState>,
    Viewer(p): Viewer,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<AgentView>> {
    let now = now();
    let connected = {
        let mut c = state.db.conn().await?;
        connected_since(&mut c, p.tenant(), now).await?
    };
    Ok(axum::Json(AgentView::new(
        load(&state, p.tenant(), id).await?,
        now,
        connected.contains(&id),
    )))
}

/// Remove an agent (admin) with everything it reported; its token stops working at once.
#[utoipa::path(delete, path = "/agents/{id}", tag = "agents", params(("id" = Uuid, Path, description = "Agent id")),
    responses((status = 204, description = "Removed"), (status = 404, body = Problem)))]
async fn delete_agent(
    State(state): State<AppState>,
    meta: Meta,
    Admin(p): Admin,
    Path(id): Path<Uuid>,
) -> ApiResult<StatusCode> {
    let mut tx = state.db.begin().await?;
    let Some(agent) = agents::get(&mut tx, p.tenant(), id).await? else {
        return Err(ApiError::NotFound("agent"));
    };
    agents::delete(&mut tx, p.tenant(), id).await?;
    meta.record(
        &mut tx,
        &p,
        ev::AGENT_DELETED,
        format!("agent:{id}"),
        json!({"hostname": agent.hostname}),
    )
    .await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

// ---------------------------------------------------------------- metrics

/// Range and resolution of a metrics query.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MetricsQuery {
    /// Start, RFC 3339 (default one hour before `to`).
    pub from: Option<String>,
    /// End, RFC 3339, exclusive (default now).
    pub to: Option<String>,
    /// Bucket like `60s`, `5m`, `1h`, `1d`: points are averaged per bucket. Raw points when absent.
    pub interval: Option<String>,
    /// Only this metric.
    pub name: Option<String>,
}

/// One series.
#[derive(Debug, Serialize, ToSchema)]
pub struct SeriesView {
    /// Metric name.
    pub name: String,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// `[ts (RFC 3339), value]` pairs, oldest first.
    #[schema(value_type = Vec<Vec<Object>>)]
    pub points: Vec<(String, f64)>,
}

/// The answer of a metrics query.
#[derive(Debug, Serialize, ToSchema)]
pub struct MetricsView {
    /// One entry per (name, labels).
    pub series: Vec<SeriesView>,
}

/// Most points one query answers, in all series together.
const MAX_POINTS: i64 = 100_000;

/// Parses `60s`, `5m`, `1h`, `1d` into milliseconds.
pub fn parse_duration_ms(s: &str) -> Option<i64> {
    let s = s.trim();
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit())?);
    let n: i64 = num.parse().ok().filter(|n| *n > 0)?;
    let unit_ms = match unit {
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return None,
    };
    n.checked_mul(unit_ms)
}

/// Metric series of an agent over a range (CONTRACT 4), raw or averaged per `interval`.
#[utoipa::path(get, path = "/agents/{id}/metrics", tag = "agents", params(("id" = Uuid, Path, description = "Agent id"), MetricsQuery),
    responses((status = 200, body = MetricsView), (status = 400, body = Problem), (status = 404, body = Problem)))]
async fn metrics(
    State(state): State<AppState>,
    Viewer(p): Viewer,
    Path(id): Path<Uuid>,
    Query(q): Query<MetricsQuery>,
) -> ApiResult<axum::Json<MetricsView>> {
    let parse = |field: &str, v: &Option<String>| -> ApiResult<Option<OffsetDateTime>> {
        v.as_deref()
            .map(|s| OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339))
            .transpose()
            .map_err(|_| ApiError::BadRequest(format!("{field} must be an RFC 3339 timestamp")))
    };
    // Default end: just past now, so samples stamped this second are included.
    let to = parse("to", &q.to)?.unwrap_or_else(|| now() + time::Duration::seconds(1));
    let from = parse("from", &q.from)?.unwrap_or(to - time::Duration::hours(1));
    if from >= to {
        return Err(ApiError::BadRequest("from must be before to".into()));
    }
    let bucket = match &q.interval {
        None => None,
        Some(i) => Some(parse_duration_ms(i).ok_or_else(|| {
            ApiError::BadRequest("interval must look like 60s, 5m, 1h or 1d".into())
        })?),
    };
    let (from_ms, to_ms) = (telemetry::unix_ms(from), telemetry::unix_ms(to));
    if let Some(b) = bucket
        && (to_ms - from_ms) / b > MAX_POINTS
    {
        return Err(ApiError::BadRequest(
            "too many buckets; choose a longer interval or a shorter range".into(),
        ));
    }
    load(&state, p.tenant(), id).await?;
    let mut c = state.db.conn().await?;
    let mut out = Vec::new();
    let mut budget = MAX_POINTS;
    for s in telemetry::series(&mut c, p.tenant(), id, q.name.as_deref()).await? {
        let pts = telemetry::points(&mut c, &s, from_ms, to_ms, bucket, budget + 1).await?;
        budget -= pts.len() as i64;
        if budget < 0 {
            return Err(ApiError::BadRequest(format!(
                "more than {MAX_POINTS} points; narrow the range or set interval"
            )));
        }
        if pts.is_empty() {
            continue;
        }
        let points = pts
            .into_iter()
            .map(|(ts, v)| {
                let t = OffsetDateTime::from_unix_timestamp_nanos(i128::from(ts) * 1_000_000)
                    .unwrap_or(OffsetDateTime::UNIX_EPOCH);
                (rfc3339(&t), v)
            })
            .collect();
        out.push(SeriesView {
            name: s.name,
            labels: serde_json::from_str(&s.labels).unwrap_or_default(),
            points,
        });
    }
    Ok(axum::Json(MetricsView { series: out }))
}

// ---------------------------------------------------------------- inventory and processes

async fn latest_inventory(state: &AppState, tenant: TenantId, id: Uuid) -> ApiResult<Value> {
    load(state, tenant, id).await?;
    let mut c = state.db.conn().await?;
    telemetry::latest_inventory(&mut c, tenant, id)
        .await?
        .map(|s| s.snapshot.0)
        .ok_or(ApiError::NotFound("inventory (none received yet)"))
}

/// The latest inventory snapshot of an agent, as it sent it (CONTRACT 4).
#[utoipa::path(get, path = "/agents/{id}/inventory", tag = "agents", params(("id" = Uuid, Path, description = "Agent id")),
    responses((status = 200, body = Object), (status = 404, body = Problem)))]
async fn inventory(
    State(state): State<AppState>,
    Viewer(p): Viewer,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<Value>> {
    Ok(axum::Json(latest_inventory(&state, p.tenant(), id).await?))
}

/// One array of the latest inventory: `containers`, `systemd`, `users`, `sudo`, `ssh-keys`
/// or `backups` (empty when the snapshot has none).
#[utoipa::path(get, path = "/agents/{id}/inventory/{slice}", tag = "agents",
    params(("id" = Uuid, Path, description = "Agent id"), ("slice" = String, Path, description = "containers, systemd, users, sudo, ssh-keys or backups")),
    responses((status = 200, body = Vec<Object>), (status = 404, body = Problem)))]
async fn inventory_slice(
    State(state): State<AppState>,
    Viewer(p): Viewer,
    Path((id, slice)): Path<(Uuid, String)>,
) -> ApiResult<axum::Json<Value>> {
    let key = SLICES
        .iter()
        .find(|(path, _)| *path == slice)
        .map(|(_, k)| *k)
        .ok_or(ApiError::NotFound("inventory slice"))?;
    let inv = latest_inventory(&state, p.tenant(), id).await?;
    Ok(axum::Json(
        inv.get(key)
            .filter(|v| v.is_array())
            .cloned()
            .unwrap_or_else(|| json!([])),
    ))
}

/// The process list an agent last sent.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProcessesView {
    /// When the hub received it.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub received_at: Option<OffsetDateTime>,
    /// Processes as the agent described them.
    #[schema(value_type = Vec<Object>)]
    pub processes: Vec<Value>,
}

/// The processes an agent last reported (empty before the first report).
#[utoipa::path(get, path = "/agents/{id}/processes", tag = "agents", params(("id" = Uuid, Path, description = "Agent id")),
    responses((status = 200, body = ProcessesView), (status = 404, body = Problem)))]
async fn processes(
    State(state): State<AppState>,
    Viewer(p): Viewer,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<ProcessesView>> {
    load(&state, p.tenant(), id).await?;
    let mut c = state.db.conn().await?;
    let view = match telemetry::processes(&mut c, p.tenant(), id).await? {
        Some((at, list)) => ProcessesView {
            received_at: Some(at),
            processes: list.0,
        },
        None => ProcessesView {
            received_at: None,
            processes: Vec::new(),
        },
    };
    Ok(axum::Json(view))
}

// ---------------------------------------------------------------- governance

/// The settings the hub governs for an agent.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct GovernanceView {
    /// Push interval, 10 s to 1 day.
    pub ingest_interval_secs: i64,
    /// Inventory interval, 1 min to 7 days.
    pub inventory_interval_secs: i64,
    /// Tags (apps inherit them).
    pub tags: Vec<String>,
    /// Action kinds the hub may push: `restart_app`, `install_package`, `update_packages`,
    /// `console_open`, `emergency`.
    pub allowed_actions: Vec<String>,
    /// What the host's own allowlist accepts, as the agent last reported it (read-only; the
    /// host operator's veto).
    #[serde(default, skip_deserializing)]
    pub host_allowed_actions: Option<Vec<String>>,
    /// Kinds both allow: what the hub can actually push (read-only).
    #[serde(default, skip_deserializing)]
    pub effective_actions: Vec<String>,
}

impl GovernanceView {
    fn of(a: &Agent) -> GovernanceView {
        let host = a.reported_actions.as_ref().map(|r| r.0.clone());
        let effective = a
            .allowed_actions
            .0
            .iter()
            .filter(|k| host.as_ref().is_none_or(|h| h.contains(k)))
            .cloned()
            .collect();
        GovernanceView {
            ingest_interval_secs: a.ingest_interval_secs,
            inventory_interval_secs: a.inventory_interval_secs,
            tags: a.tags.0.clone(),
            allowed_actions: a.allowed_actions.0.clone(),
            host_allowed_actions: host,
            effective_actions: effective,
        }
    }
}

/// An agent's governed settings.
#[utoipa::path(get, path = "/agents/{id}/governance", tag = "agents", params(("id" = Uuid, Path, description = "Agent id")),
    responses((status = 200, body = GovernanceView), (status = 404, body = Problem)))]
async fn get_governance(
    State(state): State<AppState>,
    Viewer(p): Viewer,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<GovernanceView>> {
    Ok(axum::Json(GovernanceView::of(
        &load(&state, p.tenant(), id).await?,
    )))
}

/// Replace an agent's governed settings (admin): intervals, tags and the action kinds the
/// hub may push. The host's own allowlist still vetoes.
#[utoipa::path(put, path = "/agents/{id}/governance", tag = "agents", params(("id" = Uuid, Path, description = "Agent id")),
    request_body = GovernanceView, responses((status = 200, body = GovernanceView), (status = 404, body = Problem), (status = 422, body = Problem)))]
async fn put_governance(
    State(state): State<AppState>,
    meta: Meta,
    Admin(p): Admin,
    Path(id): Path<Uuid>,
    Json(req): Json<GovernanceView>,
) -> ApiResult<axum::Json<GovernanceView>> {
    let mut errors = Vec::new();
    if !(10..=86_400).contains(&req.ingest_interval_secs) {
        errors.push(FieldError {
            field: "ingest_interval_secs".into(),
            message: "must be between 10 and 86400".into(),
        });
    }
    if !(60..=7 * 86_400).contains(&req.inventory_interval_secs) {
        errors.push(FieldError {
            field: "inventory_interval_secs".into(),
            message: "must be between 60 and 604800".into(),
        });
    }
    let tags = tags_valid(&req.tags)
        .map_err(|m| {
            errors.push(FieldError {
                field: "tags".into(),
                message: m,
            })
        })
        .unwrap_or_default();
    if let Some(bad) = req
        .allowed_actions
        .iter()
        .find(|k| !ACTION_KINDS.contains(&k.as_str()))
    {
        errors.push(FieldError {
            field: "allowed_actions".into(),
            message: format!("unknown action kind `{bad}`"),
        });
    }
    if !errors.is_empty() {
        return Err(ApiError::Validation(errors));
    }
    let mut allowed: Vec<String> = Vec::new();
    for k in req.allowed_actions {
        if !allowed.contains(&k) {
            allowed.push(k);
        }
    }
    let g = Governance {
        ingest_interval_secs: req.ingest_interval_secs,
        inventory_interval_secs: req.inventory_interval_secs,
        tags,
        allowed_actions: allowed,
    };
    let mut tx = state.db.begin().await?;
    if !agents::set_governance(&mut tx, p.tenant(), id, &g).await? {
        return Err(ApiError::NotFound("agent"));
    }
    meta.record(&mut tx, &p, ev::AGENT_GOVERNANCE_CHANGED, format!("agent:{id}"), json!({"ingest_interval_secs": g.ingest_interval_secs, "inventory_interval_secs": g.inventory_interval_secs, "tags": g.tags, "allowed_actions": g.allowed_actions})).await?;
    let agent = agents::get(&mut tx, p.tenant(), id)
        .await?
        .ok_or(ApiError::NotFound("agent"))?;
    tx.commit().await?;
    Ok(axum::Json(GovernanceView::of(&agent)))
}

// ---------------------------------------------------------------- rotation

/// A new agent token, shown once.
#[derive(Debug, Serialize, ToSchema)]
pub struct RotatedToken {
    /// The agent.
    pub agent_id: Uuid,
    /// `tha_...`: the old token stopped working.
    pub agent_token: String,
}

/// Rotate an agent's token (admin; 10 per hour per user; audit `agent_token_rotated`). The
/// old token stops working at once; hand the new one to the host (or let the agent
/// re-register with an enrollment token).
#[utoipa::path(post, path = "/agents/{id}/rotate-token", tag = "agents", params(("id" = Uuid, Path, description = "Agent id")),
    responses((status = 200, body = RotatedToken), (status = 404, body = Problem), (status = 429, body = Problem)))]
async fn rotate_token(
    State(state): State<AppState>,
    meta: Meta,
    Admin(p): Admin,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<RotatedToken>> {
    state
        .limiter
        .hit(
            ratelimit::ROTATE_TOKEN,
            &p.user.id.to_string(),
            now().unix_timestamp(),
        )
        .await?;
    let token = new_token(AGENT_TOKEN_PREFIX).map_err(|e| ApiError::Internal(e.to_string()))?;
    let mut tx = state.db.begin().await?;
    if !agents::set_token(&mut tx, p.tenant(), id, &token_hash(&token)).await? {
        return Err(ApiError::NotFound("agent"));
    }
    meta.record(
        &mut tx,
        &p,
        ev::AGENT_TOKEN_ROTATED,
        format!("agent:{id}"),
        json!({}),
    )
    .await?;
    tx.commit().await?;
    Ok(axum::Json(RotatedToken {
        agent_id: id,
        agent_token: token,
    }))
}

/// Whether a key is pinned now.
#[derive(Debug, Serialize, ToSchema)]
pub struct SigningKeyState {
    /// The agent.
    pub agent_id: Uuid,
    /// False: the next registration of this machine pins a key again.
    pub signing_key_pinned: bool,
}

/// Clear an agent's pinned signing key (admin; 10 per hour per user; audit
/// `agent_signing_key_cleared`) so that it can register with a new key.
#[utoipa::path(post, path = "/agents/{id}/rotate-signing-key", tag = "agents", params(("id" = Uuid, Path, description = "Agent id")),
    responses((status = 200, body = SigningKeyState), (status = 404, body = Problem), (status = 429, body = Problem)))]
async fn rotate_signing_key(
    State(state): State<AppState>,
    meta: Meta,
    Admin(p): Admin,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<SigningKeyState>> {
    state
        .limiter
        .hit(
            ratelimit::ROTATE_SIGNING_KEY,
            &p.user.id.to_string(),
            now().unix_timestamp(),
        )
        .await?;
    let mut tx = state.db.begin().await?;
    if !agents::clear_signing_key(&mut tx, p.tenant(), id).await? {
        return Err(ApiError::NotFound("agent"));
    }
    meta.record(
        &mut tx,
        &p,
        ev::AGENT_SIGNING_KEY_CLEARED,
        format!("agent:{id}"),
        json!({}),
    )
    .await?;
    tx.commit().await?;
    Ok(axum::Json(SigningKeyState {
        agent_id: id,
        signing_key_pinned: false,
    }))
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
