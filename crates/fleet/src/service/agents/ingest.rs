//! Signed batches and heartbeats from agents (CONTRACT 4).

use super::*;
use crate::extract;
use trusthub_core::inventory::{Inventory, Live, Process};

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
    /// The configuration files to watch (CONTRACT 20): paths and globs.
    pub config_paths: Vec<String>,
    /// Seconds between configuration scans.
    pub config_scan_interval_secs: i64,
    /// The HTTP checks of this agent's `http` apps: `{app_id, endpoint, interval_seconds}`;
    /// results go back in `app_checks` of later batches.
    #[schema(value_type = Vec<Object>)]
    pub http_checks: Vec<wire::HttpCheck>,
    /// Seconds between the agent's own compliance runs (CONTRACT 25).
    pub compliance_interval_secs: i64,
    /// The honeypots to watch: `{kind, target}`.
    #[schema(value_type = Vec<Object>)]
    pub honeypots: Vec<trusthub_core::compliance::Honeypot>,
    /// A compliance run the hub asks for now (`POST /compliance/run`): the agent runs its
    /// checks and sends the results with this id. A run asked on another hub process of a
    /// cluster is named here within 5 s of the request.
    pub compliance_run_id: Option<Uuid>,
}

/// A batch read and checked into the writer's job (a 422 names every problem).
pub(crate) fn job(
    auth: &IngestAuth,
    body: &SignedBody,
    now: OffsetDateTime,
) -> ApiResult<crate::ingest::Job> {
    let agent = &auth.agent.agent;
    let mut batch: Batch = parse_json(&body.json)?;
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
            wire::check_sample(s)
                .err()
                .map(|m| FieldError::new(format!("metrics[{i}]"), m))
        })
        .take(20)
        .collect();
    // The agent's own documents, read once into the hub's types (CONTRACT 4): a field the
    // hub reads with the wrong type is refused naming its path; the snapshot is stored as sent.
    let inventory_value = document(batch.inventory.as_ref(), "inventory", &mut errors);
    let live_value = document(batch.live.as_ref(), "live", &mut errors);
    let inventory: Option<Inventory> = inventory_value.and_then(|v| {
        extract::parse_part(v, "inventory")
            .map_err(|e| errors.extend(e))
            .ok()
    });
    let live: Option<Live> = live_value.and_then(|v| {
        extract::parse_part(v, "live")
            .map_err(|e| errors.extend(e))
            .ok()
    });
    let processes: Option<Vec<Process>> = batch.processes.as_ref().and_then(|list| {
        let mut read = Vec::with_capacity(list.len());
        for (i, p) in list.iter().enumerate() {
            match extract::parse_part(p, &format!("processes[{i}]")) {
                Ok(p) => read.push(p),
                Err(e) => errors.extend(e),
            }
        }
        (read.len() == list.len()).then_some(read)
    });
    let config_hashes = batch.config_hashes.take();
    if let Some(list) = &config_hashes {
        if list.len() > trusthub_core::drift::MAX_REPORTED_FILES {
            errors.push(FieldError::new(
                "config_hashes",
                format!(
                    "at most {} entries",
                    trusthub_core::drift::MAX_REPORTED_FILES
                ),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for (i, h) in list.iter().enumerate() {
            if let Err(m) = h.check() {
                errors.push(FieldError::new(format!("config_hashes[{i}]"), m));
            } else if !seen.insert(h.path.as_str()) {
                errors.push(FieldError::new(
                    format!("config_hashes[{i}]"),
                    format!("{} is reported twice", h.path),
                ));
            }
            if errors.len() >= 20 {
                break;
            }
        }
    }
    // The patterns the agent scanned with: a glob is new to the hub at the first scan that
    // carried it, whatever governance said meanwhile (CONTRACT 30).
    let config_patterns = batch.config_patterns.take();
    if let Some(list) = &config_patterns {
        if config_hashes.is_none() {
            errors.push(FieldError::new(
                "config_patterns",
                "is sent only with config_hashes",
            ));
        } else if list.len() > trusthub_core::drift::MAX_CONFIG_PATHS
            || list.iter().any(|p| {
                !p.starts_with('/') || p.len() > trusthub_core::drift::MAX_PATH || p.contains('\0')
            })
        {
            errors.push(FieldError::new(
                "config_patterns",
                format!(
                    "at most {} absolute patterns of at most {} bytes",
                    trusthub_core::drift::MAX_CONFIG_PATHS,
                    trusthub_core::drift::MAX_PATH
                ),
            ));
        }
    }
    let security = security_report(&mut batch, agent, &mut errors);
    all_valid(errors)?;
    let config = config_hashes.map(|hashes| crate::ingest::ConfigScan {
        tenant: TenantId(agent.tenant_id),
        agent_id: agent.id,
        hostname: agent.hostname.clone(),
        tags: agent.tags.0.clone(),
        patterns: config_patterns.unwrap_or_else(|| agent.watched_paths()),
        hashes,
    });
    let inventory_at = inventory.as_ref().map(|i| {
        i.collected_at
            .to_offset(time::UtcOffset::UTC)
            .replace_nanosecond(0)
            .unwrap_or(i.collected_at)
    });
    let observed = observed_map(inventory.as_ref(), live.as_ref(), processes.as_deref());
    let checks: Vec<trusthub_core::apps::CheckResult> = batch
        .app_checks
        .iter()
        .map(|c| trusthub_core::apps::CheckResult {
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
    Ok(crate::ingest::Job {
        tenant: TenantId(agent.tenant_id),
        agent_id: agent.id,
        token_hash: auth.token_hash.clone(),
        checked: auth.agent.clone(),
        batch,
        inventory_at,
        reported_actions,
        observed,
        checks,
        config,
        security,
        now,
        resolved: None,
    })
}

/// The batch's compliance results, DNA and honeypot events, taken out of it and checked
/// (CONTRACT 18: each problem named by its path).
pub(crate) fn security_report(
    batch: &mut Batch,
    agent: &crate::Agent,
    errors: &mut Vec<FieldError>,
) -> Option<crate::ingest::SecurityReport> {
    let compliance = batch.compliance.take();
    let dna = batch.dna.take();
    let events = std::mem::take(&mut batch.honeypot_events);
    let states = batch.honeypot_states.take();
    let mut problems: Vec<(String, String)> = Vec::new();
    if let Some(list) = &states {
        if list.len() > trusthub_core::compliance::MAX_HONEYPOTS {
            problems.push((
                "honeypot_states".into(),
                format!("at most {}", trusthub_core::compliance::MAX_HONEYPOTS),
            ));
        }
        for (i, s) in list.iter().enumerate() {
            if let Some(m) = s.problem() {
                problems.push((format!("honeypot_states[{i}]"), m));
            }
        }
    }
    if let Some(c) = &compliance {
        problems.extend(
            c.problems()
                .into_iter()
                .map(|(f, m)| (format!("compliance.{f}"), m)),
        );
    }
    if let Some(d) = &dna {
        problems.extend(d.problems());
    }
    if events.len() > trusthub_core::compliance::MAX_EVENTS {
        problems.push((
            "honeypot_events".into(),
            format!("at most {} events", trusthub_core::compliance::MAX_EVENTS),
        ));
    }
    for (i, e) in events.iter().enumerate() {
        if !["file", "user", "port"].contains(&e.kind.as_str()) {
            problems.push((
                format!("honeypot_events[{i}].kind"),
                "must be file, user or port".into(),
            ));
        }
        if e.target.is_empty() || e.target.chars().count() > 1024 {
            problems.push((
                format!("honeypot_events[{i}].target"),
                "must be 1 to 1024 characters".into(),
            ));
        }
        if e.detail.chars().count() > 2000 {
            problems.push((
                format!("honeypot_events[{i}].detail"),
                "at most 2000 characters".into(),
            ));
        }
    }
    errors.extend(
        problems
            .into_iter()
            .take(20)
            .map(|(field, message)| FieldError::new(field, message)),
    );
    (compliance.is_some() || dna.is_some() || !events.is_empty() || states.is_some()).then(|| {
        crate::ingest::SecurityReport {
            tenant: TenantId(agent.tenant_id),
            agent_id: agent.id,
            hostname: agent.hostname.clone(),
            compliance,
            dna,
            honeypot_events: events,
            honeypot_states: states,
        }
    })
}

/// One of the agent's own documents in a batch, when it is a JSON object or list (else the
/// field error).
pub(crate) fn document<'a>(
    value: Option<&'a Value>,
    at: &str,
    errors: &mut Vec<FieldError>,
) -> Option<&'a Value> {
    let v = value?;
    if v.is_object() || v.is_array() {
        return Some(v);
    }
    errors.push(FieldError::new(at, format!("{at} must be a JSON object")));
    None
}

/// What runs on the host according to a batch (`live`, `processes`, or the inventory's
/// lists), reduced for the liveness check; `None` when the batch says nothing about it.
pub(crate) fn observed_map(
    inventory: Option<&Inventory>,
    live: Option<&Live>,
    processes: Option<&[Process]>,
) -> Option<trusthub_core::apps::ObservedMap> {
    if live.is_none() && processes.is_none() && inventory.is_none() {
        return None;
    }
    let systemd = live
        .and_then(|l| l.systemd.as_deref())
        .or_else(|| inventory.and_then(|i| i.systemd.as_deref()))
        .unwrap_or_default();
    let containers = live
        .and_then(|l| l.containers.as_deref())
        .or_else(|| inventory.and_then(|i| i.containers.as_deref()))
        .unwrap_or_default();
    let processes = processes
        .or_else(|| inventory.and_then(|i| i.processes.as_deref()))
        .unwrap_or_default();
    Some(trusthub_core::apps::observed_map(
        systemd, containers, processes,
    ))
}

/// The hub's clock, answering a heartbeat.
#[derive(Debug, Serialize, ToSchema)]
pub struct HeartbeatAck {
    /// The hub's clock.
    #[serde(with = "time::serde::rfc3339")]
    pub server_time: OffsetDateTime,
}

/// The service behind the `ingest` handler, for the API and the dashboard alike.
pub async fn ingest(
    state: &AppState,
    mut auth: IngestAuth,
    headers: &HeaderMap,
    body: &SignedBody,
) -> ApiResult<(StatusCode, IngestAccepted)> {
    let mut limited = false;
    loop {
        let snapshot = auth.agent.clone();
        let agent = &snapshot.agent;
        if auth.cached {
            if signed_by(agent, snapshot.key.as_ref(), headers, &body.raw).is_err() {
                // The key may have changed since the agent was cached: decide on its row.
                auth.reread(state).await?;
                continue;
            }
        } else {
            check_agent_signature(state, agent, snapshot.key.as_ref(), headers, &body.raw).await?;
        }
        let now = now();
        if !limited {
            state
                .limiter
                .hit(
                    ratelimit::INGEST,
                    &agent.id.to_string(),
                    now.unix_timestamp(),
                )
                .await?;
            limited = true;
        }
        let job = match job(&auth, body, now) {
            Ok(job) => job,
            // Decided on the agent as it stands: a token rotated elsewhere answers 401, not
            // the batch's problems.
            Err(_) if auth.cached => {
                auth.reread(state).await?;
                continue;
            }
            Err(e) => return Err(e),
        };
        let samples = job.batch.metrics.len();
        let ingest = state.part::<crate::ingest::Ingest>();
        let arriving = auth.arriving.take().unwrap_or_else(|| ingest.arriving());
        let Some(accepted) = ingest.submit(job, arriving).await? else {
            // The agent changed since it was read (token rotated, deleted, key or settings
            // changed): nothing was stored; read it again and decide on what it is now.
            if auth.cached {
                auth.reread(state).await?;
                continue;
            }
            state
                .part::<crate::ingest::Ingest>()
                .agents()
                .forget(&auth.token_hash);
            return Err(ApiError::Unauthenticated(
                "unknown, rotated or deleted agent token".into(),
            ));
        };
        let fresh = accepted.fresh;
        state.metrics.ingested(fresh, samples);
        let http_checks = accepted.http_checks;
        return Ok((
            StatusCode::ACCEPTED,
            (IngestAccepted {
                accepted: true,
                duplicate: !fresh,
                server_time: now,
                ingest_interval_secs: agent.ingest_interval_secs,
                inventory_interval_secs: agent.inventory_interval_secs,
                config_paths: agent.watched_paths(),
                config_scan_interval_secs: agent.config_scan_interval_secs,
                http_checks,
                compliance_interval_secs: agent.compliance_interval_secs,
                honeypots: agent.honeypots.0.clone(),
                compliance_run_id: accepted.compliance_run,
            }),
        ));
    }
}

/// The service behind the `heartbeat` handler, for the API and the dashboard alike.
pub async fn heartbeat(
    state: &AppState,
    AgentAuth(agent): &AgentAuth,
    id: Uuid,
    headers: &HeaderMap,
    body: &SignedBody,
) -> ApiResult<HeartbeatAck> {
    if id != agent.id {
        return Err(ApiError::NotFound("agent"));
    }
    let key = agent
        .signing_pubkey
        .as_deref()
        .and_then(|k| wire::parse_public_key(k).ok());
    check_agent_signature(state, agent, key.as_ref(), headers, &body.raw).await?;
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
        cpu_percent: None,
    };
    agents::seen_many(&mut tx, &[seen], now).await?;
    tx.commit().await?;
    Ok(HeartbeatAck { server_time: now })
}
