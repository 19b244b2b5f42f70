//! Agent registration (first contact and re-enrolment) and agent signatures.

use super::*;

/// What a host says when it registers.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
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

pub(crate) fn short(field: &str, v: &str, max: usize) -> Option<FieldError> {
    let t = v.trim();
    (t.is_empty() || t.len() > max || t.chars().any(char::is_control))
        .then(|| FieldError::new(field, format!("must be 1-{max} printable characters")))
}

/// Checks the request's `X-Service-Signature` against the agent's pinned key, when it has
/// one (`key`, read from `agent`). A refusal opens the agent's `bad_ingest_signature`
/// anomaly: the token may be in other hands.
pub(crate) async fn check_agent_signature(
    state: &AppState,
    agent: &Agent,
    key: Option<&ed25519_dalek::VerifyingKey>,
    headers: &HeaderMap,
    raw: &[u8],
) -> ApiResult<()> {
    let signature = headers
        .get("x-service-signature")
        .and_then(|v| v.to_str().ok());
    match signed_by(agent, key, headers, raw) {
        Ok(()) => Ok(()),
        Err(e) => {
            // A pinned agent's token with a body its key did not sign: the token may be in
            // other hands. One open anomaly per agent, however many batches follow.
            trusthub_certs::anomalies::record(
                state,
                agent.tenant_id,
                trusthub_certs::AgentRef {
                    id: agent.id,
                    tenant_id: agent.tenant_id,
                    hostname: &agent.hostname,
                },
                "bad_ingest_signature",
                "a request with this agent's token was not signed by its pinned key",
                json!({"error": e.to_string(), "signature_present": signature.is_some()}),
                true,
            )
            .await?;
            Err(ApiError::Unauthenticated(format!("signature refused: {e}")))
        }
    }
}

/// Whether the request is signed by the agent's pinned key (`key`, read from `agent`), or the
/// agent has none pinned.
pub(crate) fn signed_by(
    agent: &Agent,
    key: Option<&ed25519_dalek::VerifyingKey>,
    headers: &HeaderMap,
    raw: &[u8],
) -> Result<(), wire::SignatureError> {
    if agent.signing_pubkey.is_none() {
        return Ok(());
    }
    let key = key.ok_or(wire::SignatureError::BadKey)?;
    let signature = headers
        .get("x-service-signature")
        .and_then(|v| v.to_str().ok());
    wire::verify_signature(key, signature, raw)
}

/// The service behind the `register` handler, for the API and the dashboard alike.
pub async fn register(
    state: &AppState,
    meta: &Meta,
    headers: &HeaderMap,
    body: &SignedBody,
) -> ApiResult<(StatusCode, Registered)> {
    let enrollment = {
        let token = crate::auth::bearer(headers)?;
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
    let key = wire::parse_public_key(&req.signing_pubkey)
        .map_err(|e| errors.push(FieldError::new("signing_pubkey", e.to_string())));
    let extra_tags = trusthub_core::validate::tags(&req.tags)
        .map_err(|m| errors.push(FieldError::new("tags", m)));
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
    if enrollment.single_use && !agents::spend_enrollment_token(&mut tx, enrollment.id, now).await?
    {
        return Err(ApiError::Unauthenticated(
            "unknown or expired enrollment token".into(),
        ));
    }
    // SPEC 6.4: a version the hub has not seen for this agent is a checkpoint; a change on a
    // known agent is an integrity anomaly until an operator resolves it (an upgrade, or not).
    let mut version_changed: Option<(Agent, String)> = None;
    let (id, status, intervals) = match agents::find_by_machine(&mut tx, tenant, reg.machine_id)
        .await?
    {
        Some(existing) => {
            if existing.agent_version != reg.agent_version {
                version_changed = Some((existing.clone(), existing.agent_version.clone()));
            }
            if existing
                .signing_pubkey
                .as_deref()
                .is_some_and(|pinned| pinned != pubkey_hex)
            {
                return Err(ApiError::Conflict(format!(
                    "machine id {} is already agent {} (\"{}\") with another signing key. If this host \
                     is a copy of that one (a cloned VM or image), give it its own machine id \
                     (`rm /etc/machine-id && systemd-machine-id-setup`) and enrol again; if it is \
                     the same host reinstalled, an admin releases the old key first \
                     (POST /agents/{}/rotate-signing-key, or \"Release the signing key\" on its page)",
                    reg.machine_id, existing.id, existing.hostname, existing.id
                )));
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
    if status == StatusCode::CREATED || version_changed.is_some() {
        audit::append(
            &mut tx,
            tenant,
            &meta.audit(
                ev::AGENT_VERSION_SEEN,
                format!("agent:{id}"),
                format!("agent:{id}"),
                json!({"agent_version": reg.agent_version,
                    "previous": version_changed.as_ref().map(|(_, v)| v.clone())}),
            ),
            now,
        )
        .await?;
    }
    tx.commit().await?;
    if let Some((agent, previous)) = version_changed {
        trusthub_certs::anomalies::record(
            state,
            enrollment.tenant_id,
            trusthub_certs::AgentRef {
                id: agent.id,
                tenant_id: agent.tenant_id,
                hostname: &agent.hostname,
            },
            "agent_version_changed",
            &format!(
                "the agent re-registered as version {} (was {previous})",
                reg.agent_version
            ),
            json!({"previous": previous, "current": reg.agent_version, "ip": meta.ip.to_string()}),
            false,
        )
        .await?;
    }
    Ok((
        status,
        (Registered {
            agent_id: id,
            agent_token,
            hub_eat_public_key: hex(state
                .part::<crate::service::actions::EatKey>()
                .0
                .verifying_key()
                .as_bytes()),
            ingest_interval_secs: intervals.0,
            inventory_interval_secs: intervals.1,
        }),
    ))
}
