//! Tracking an app: the checks of `POST /apps` (every problem at once, each naming its field)
//! and the insert, for the API and the dashboard alike.

use super::*;

pub(super) fn expected(v: Option<&str>, errors: &mut Vec<FieldError>) -> &'static str {
    match v.unwrap_or("running") {
        "running" => "running",
        "stopped" => "stopped",
        _ => {
            errors.push(FieldError::new(
                "expected_state",
                "must be `running` or `stopped`",
            ));
            "running"
        }
    }
}

fn opt_text(
    field: &str,
    v: Option<&str>,
    max: usize,
    errors: &mut Vec<FieldError>,
) -> Option<String> {
    let v = v.map(str::trim).filter(|s| !s.is_empty())?;
    if v.chars().count() > max || v.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        errors.push(FieldError::new(
            field,
            format!("must be at most {max} characters without control characters"),
        ));
    }
    Some(v.to_owned())
}

/// Tracks an app for `p`'s tenant (the API and the dashboard), checked and audited.
pub(crate) async fn create_app(
    state: &AppState,
    meta: &Meta,
    p: &crate::auth::Principal,
    req: NewAppRequest,
) -> ApiResult<(StatusCode, axum::Json<AppView>)> {
    let mut errors = Vec::new();
    let err = |errors: &mut Vec<FieldError>, field: &str, m: String| {
        errors.push(FieldError::new(field, m))
    };
    let name = validate::name(&req.name)
        .map_err(|m| err(&mut errors, "name", m.into()))
        .unwrap_or_default();
    let kind = match (req.app_type.as_deref(), req.kind.as_deref()) {
        (a, Some(t)) => {
            let k = AppKind::parse(t).filter(|k| k.is_check());
            if k.is_none() {
                err(
                    &mut errors,
                    "type",
                    "must be http, tcp, tls, push, dns or ping; the other kinds go in `app_type`"
                        .into(),
                );
            } else if a.is_some_and(|a| a != t) {
                err(
                    &mut errors,
                    "app_type",
                    "must be left out or repeat `type` for a check".into(),
                );
            }
            k
        }
        (Some(a), None) => {
            let k = AppKind::parse(a).filter(|k| !k.is_check());
            if k.is_none() {
                let m = if AppKind::parse(a).is_some() {
                    "http, tcp, tls, push, dns and ping are checks: send them as `type`"
                } else {
                    "must be systemd, docker, compose or process (or type: http, tcp, tls, push, dns, ping)"
                };
                err(&mut errors, "app_type", m.into());
            }
            k
        }
        (None, None) => {
            err(
                &mut errors,
                "app_type",
                "is required: systemd, docker, compose or process (or type: http, tcp, tls, push, dns, ping)".into(),
            );
            None
        }
    };
    let by_hub = req.agent_id.is_none();
    let expected_state = expected(req.expected_state.as_deref(), &mut errors);
    let owner_email = match req
        .owner_email
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        Some(e) => validate::email(e)
            .map_err(|m| err(&mut errors, "owner_email", m.into()))
            .ok(),
        None => None,
    };
    let runbook_url = opt_text("runbook_url", req.runbook_url.as_deref(), 2048, &mut errors);
    if let Some(u) = &runbook_url
        && let Err(m) = core_apps::http_url(u)
    {
        err(&mut errors, "runbook_url", m);
    }
    let notes = opt_text("notes", req.notes.as_deref(), 2000, &mut errors);
    let mut identifier = String::new();
    let mut endpoint = None;
    let mut interval = None;
    let mut restart_command = None;
    let (mut retries, mut recoveries) = (probe::DEFAULT_RETRIES, probe::DEFAULT_RECOVERIES);
    let (mut timeout, mut tls_min_days) = (None, None);
    let (mut expected_status, mut keyword) = (None, None);
    let (mut grace, mut expected_values, mut json_query) = (None, None, None);
    match kind {
        Some(k) if k.is_check() => {
            if req.identifier.is_some() {
                err(
                    &mut errors,
                    "identifier",
                    "checks name their target in `endpoint`".into(),
                );
            }
            match req.endpoint.as_deref().map(str::trim) {
                Some(_) if k == AppKind::Push => err(
                    &mut errors,
                    "endpoint",
                    "push monitors have none: the app calls the push URL the hub answers with"
                        .into(),
                ),
                None if k == AppKind::Push => {}
                Some(e) => {
                    let checked = core_apps::identifier(k, e).and_then(|e| {
                        if !by_hub {
                            agent_target(k, &e)?;
                        }
                        Ok(e)
                    });
                    match checked {
                        Ok(e) => {
                            identifier = e.clone();
                            endpoint = Some(e);
                        }
                        Err(m) => err(&mut errors, "endpoint", m),
                    }
                }
                None => err(
                    &mut errors,
                    "endpoint",
                    format!("is required for type {}", k.as_str()),
                ),
            }
            if !by_hub && !AGENT_CHECKS.contains(&k) {
                err(
                    &mut errors,
                    "agent_id",
                    format!(
                        "agents run http, dns and ping checks; omit agent_id and the hub checks this {} target itself",
                        k.as_str()
                    ),
                );
            }
            let (lo, hi) = if k == AppKind::Push {
                (probe::MIN_INTERVAL_SECS, MAX_PUSH_SECS)
            } else if by_hub {
                (probe::MIN_INTERVAL_SECS, probe::MAX_INTERVAL_SECS)
            } else {
                (MIN_HTTP_INTERVAL, MAX_HTTP_INTERVAL)
            };
            match req.interval_seconds {
                Some(i) if (lo..=hi).contains(&i) => interval = Some(i),
                Some(_) => err(
                    &mut errors,
                    "interval_seconds",
                    format!("must be {lo} to {hi}"),
                ),
                None if by_hub => interval = Some(60),
                None => err(
                    &mut errors,
                    "interval_seconds",
                    "is required for an agent's check".into(),
                ),
            }
            let range = |errors: &mut Vec<FieldError>,
                         field: &str,
                         v: Option<i64>,
                         lo: i64,
                         hi: i64,
                         default: i64| match v {
                Some(v) if (lo..=hi).contains(&v) => v,
                Some(_) => {
                    errors.push(FieldError::new(field, format!("must be {lo} to {hi}")));
                    default
                }
                None => default,
            };
            // A push monitor's grace is its tolerance: down on the first late ping.
            let default_retries = if k == AppKind::Push {
                0
            } else {
                probe::DEFAULT_RETRIES
            };
            retries = range(&mut errors, "retries", req.retries, 0, 10, default_retries);
            recoveries = range(
                &mut errors,
                "recoveries",
                req.recoveries,
                1,
                10,
                probe::DEFAULT_RECOVERIES,
            );
            // Hub and agent checks take the same options (CONTRACT 33).
            if k == AppKind::Push {
                if req.timeout_seconds.is_some() {
                    err(
                        &mut errors,
                        "timeout_seconds",
                        "push monitors call nothing: `grace_seconds` is their tolerance".into(),
                    );
                }
                grace = Some(range(
                    &mut errors,
                    "grace_seconds",
                    req.grace_seconds,
                    0,
                    MAX_PUSH_SECS,
                    DEFAULT_GRACE_SECS,
                ));
            } else {
                timeout = Some(range(
                    &mut errors,
                    "timeout_seconds",
                    req.timeout_seconds,
                    1,
                    60,
                    probe::DEFAULT_TIMEOUT_SECS,
                ));
                if req.grace_seconds.is_some() {
                    err(
                        &mut errors,
                        "grace_seconds",
                        "only push monitors have one".into(),
                    );
                }
            }
            match (k, &req.expected) {
                (AppKind::Dns, Some(values)) => {
                    let rtype = core_apps::identifier(k, &identifier)
                        .ok()
                        .and_then(|t| trusthub_core::dns::parse_target(&t).ok())
                        .map_or("A", |t| t.rtype);
                    match dns_expected(rtype, values) {
                        Ok(v) => expected_values = Some(v),
                        Err(m) => err(&mut errors, "expected", m),
                    }
                }
                (_, Some(_)) => err(
                    &mut errors,
                    "expected",
                    "only dns checks take expected values".into(),
                ),
                _ => {}
            }
            match (k, &req.json_query) {
                (AppKind::Http, Some(q)) => {
                    let q = trusthub_core::json_query::JsonQuery {
                        path: q.path.trim().to_owned(),
                        op: q.op.trim().to_owned(),
                        value: q.value.clone(),
                    };
                    let problems = trusthub_core::json_query::check(&q);
                    if problems.is_empty() {
                        json_query = Some(q);
                    }
                    for (field, m) in problems {
                        err(&mut errors, &format!("json_query.{field}"), m);
                    }
                }
                (_, Some(_)) => err(
                    &mut errors,
                    "json_query",
                    "only http checks take one".into(),
                ),
                _ => {}
            }
            if k == AppKind::Tls {
                tls_min_days = Some(range(
                    &mut errors,
                    "tls_min_days",
                    req.tls_min_days,
                    1,
                    365,
                    probe::DEFAULT_TLS_MIN_DAYS,
                ));
            } else if req.tls_min_days.is_some() {
                err(
                    &mut errors,
                    "tls_min_days",
                    "only tls checks have one".into(),
                );
            }
            match (k, req.expected_status.as_deref().map(str::trim)) {
                (AppKind::Http, Some(sv)) => match probe::StatusSet::parse(sv) {
                    Ok(set) => expected_status = Some(set.text()),
                    Err(m) => err(&mut errors, "expected_status", m),
                },
                (_, Some(_)) => err(
                    &mut errors,
                    "expected_status",
                    "only http checks take one".into(),
                ),
                _ => {}
            }
            match (k, req.keyword.as_deref()) {
                (AppKind::Http, Some(kw)) => {
                    if kw.is_empty() || kw.chars().count() > 200 || kw.chars().any(char::is_control)
                    {
                        err(
                            &mut errors,
                            "keyword",
                            "must be 1 to 200 characters without control characters".into(),
                        );
                    } else {
                        keyword = Some(kw.to_owned());
                    }
                }
                (_, Some(_)) => err(&mut errors, "keyword", "only http checks take one".into()),
                _ => {}
            }
        }
        Some(k) => {
            match req.identifier.as_deref() {
                Some(i) => match core_apps::identifier(k, i) {
                    Ok(i) => identifier = i,
                    Err(m) => err(&mut errors, "identifier", m),
                },
                None => err(&mut errors, "identifier", "is required".into()),
            }
            if req.endpoint.is_some() || req.interval_seconds.is_some() {
                err(
                    &mut errors,
                    "endpoint",
                    "only checks (type http, tcp, tls, dns, ping) have an endpoint".into(),
                );
            }
            for (field, set) in [
                ("timeout_seconds", req.timeout_seconds.is_some()),
                ("retries", req.retries.is_some()),
                ("recoveries", req.recoveries.is_some()),
                ("expected_status", req.expected_status.is_some()),
                ("keyword", req.keyword.is_some()),
                ("tls_min_days", req.tls_min_days.is_some()),
                ("grace_seconds", req.grace_seconds.is_some()),
                ("expected", req.expected.is_some()),
                ("json_query", req.json_query.is_some()),
            ] {
                if set {
                    err(&mut errors, field, "only checks (a `type`) take it".into());
                }
            }
            if by_hub {
                err(
                    &mut errors,
                    "agent_id",
                    format!("is required: an agent runs the {}", k.as_str()),
                );
            }
        }
        None => {}
    }
    match (kind, req.restart_command.as_deref().map(str::trim)) {
        (Some(AppKind::Process), Some(cmd)) if !cmd.is_empty() => {
            let program = cmd.split_whitespace().next().unwrap_or_default();
            match core_apps::absolute_path(program) {
                Ok(()) if cmd.len() <= 4096 => restart_command = Some(cmd.to_owned()),
                Ok(()) => err(
                    &mut errors,
                    "restart_command",
                    "must be at most 4096 characters".into(),
                ),
                Err(m) => err(&mut errors, "restart_command", format!("its program {m}")),
            }
        }
        (_, Some(cmd)) if !cmd.is_empty() => {
            err(
                &mut errors,
                "restart_command",
                "only process apps have a restart command".into(),
            );
        }
        _ => {}
    }
    all_valid(errors)?;
    let Some(kind) = kind else {
        return Err(ApiError::invalid("app_type", "is required"));
    };
    if by_hub
        && let Some(e) = &endpoint
        && let Some(url) = called_url(kind, e).map_err(|m| ApiError::invalid("endpoint", m))?
    {
        // The outbound policy (CONTRACT 18) at creation: the hub will call this target.
        let policy = crate::outbound::Policy::of_tenant(
            &state.settings,
            &mut state.db.conn().await?,
            p.tenant(),
        )
        .await?;
        policy.check_url(&url).await.map_err(|m| {
            ApiError::invalid(
                "endpoint",
                format!("{m}; or run the check from a host (agent_id): its agent reaches the networks it is on"),
            )
        })?;
    }
    let now = now();
    // A push monitor's secret (CONTRACT 32): shown once, kept hashed.
    let push_token = match kind {
        AppKind::Push => Some(
            trusthub_core::secret::new_token(PUSH_TOKEN_PREFIX)
                .map_err(|e| ApiError::Internal(e.to_string()))?,
        ),
        _ => None,
    };
    let push_hash = push_token.as_deref().map(trusthub_core::secret::token_hash);
    if let Some(h) = &push_hash {
        identifier = format!("push:{}", &h[..16]);
    }
    let first_due = match (by_hub, kind) {
        (true, AppKind::Push) => {
            Some(now + time::Duration::seconds(interval.unwrap_or(60) + grace.unwrap_or(0)))
        }
        (true, _) => Some(now),
        (false, _) => None,
    };
    let expected_json = expected_values
        .as_ref()
        .map(|v: &Vec<String>| serde_json::to_string(v).unwrap_or_default());
    let query_json = json_query
        .as_ref()
        .map(|q| serde_json::to_string(q).unwrap_or_default());
    let mut tx = state.db.begin().await?;
    let agent = match req.agent_id {
        None => None,
        Some(id) => match trusthub_fleet::agent(&mut tx, p.tenant(), id).await? {
            Some(a) => Some(a),
            None => {
                return Err(ApiError::invalid(
                    "agent_id",
                    "is not an agent of your tenant",
                ));
            }
        },
    };
    if kind == AppKind::Systemd
        && let Some(agent) = &agent
        && let Some(inv) = trusthub_fleet::latest_inventory(&mut tx, p.tenant(), agent.id).await?
        && inv.inventory.systemd().is_empty()
    {
        return Err(ApiError::invalid(
            "app_type",
            "this host reports no systemd units (no systemd, or the agent cannot read it); \
             track the service as a `process` (its binary's path) or a container instead",
        ));
    }
    let app = apps::insert(
        &mut tx,
        p.tenant(),
        &NewApp {
            agent_id: agent.as_ref().map(|a| a.id),
            name: &name,
            app_type: kind.as_str(),
            identifier: &identifier,
            owner_email: owner_email.as_deref(),
            runbook_url: runbook_url.as_deref(),
            notes: notes.as_deref(),
            expected_state,
            restart_command: restart_command.as_deref(),
            endpoint: endpoint.as_deref(),
            interval_seconds: interval,
            timeout_seconds: timeout,
            retries,
            recoveries,
            expected_status: expected_status.as_deref(),
            keyword: keyword.as_deref(),
            tls_min_days,
            grace_seconds: grace,
            push_token: push_hash
                .as_deref()
                .zip(push_token.as_deref())
                .map(|(h, t)| (h, &t[..PUSH_TOKEN_PREFIX.len() + 4])),
            expected_values: expected_json.as_deref(),
            json_query: query_json.as_deref(),
            first_due,
        },
        now,
    )
    .await?
    .ok_or_else(|| match &agent {
        Some(a) => ApiError::Conflict(format!(
            "agent {} already tracks {} `{identifier}`",
            a.id,
            kind.as_str()
        )),
        None => ApiError::Conflict(format!(
            "the hub already checks {} `{identifier}` for your tenant",
            kind.as_str()
        )),
    })?;
    meta.record(
        &mut tx,
        p,
        ev::APP_CREATED,
        format!("app:{}", app.id),
        json!({"agent_id": agent.as_ref().map(|a| a.id), "app_type": kind.as_str(), "identifier": identifier, "name": name}),
    )
    .await?;
    tx.commit().await?;
    // A host's check starts now, not at the agent's next push (CONTRACT 33): the answer to
    // the push it is asked for names the check.
    if let (Some(a), true) = (&agent, kind == AppKind::Http) {
        trusthub_fleet::ask_to_push(state, a.id);
    }
    let tags = agent.map(|a| a.tags.0).unwrap_or_default();
    let mut view = AppView::new(app, tags, &state.public_url);
    if let Some(t) = push_token {
        view.push_url = Some(push_url(&state.public_url, &t));
    }
    Ok((StatusCode::CREATED, axum::Json(view)))
}

/// Longest interval and grace of a push monitor: 31 days (a monthly job).
pub const MAX_PUSH_SECS: i64 = 31 * 86_400;
/// A push monitor's grace when none is given.
pub const DEFAULT_GRACE_SECS: i64 = 60;
/// What a push token starts with.
pub const PUSH_TOKEN_PREFIX: &str = "thp_";

/// A push monitor's URL for `token`.
pub fn push_url(base: &str, token: &str) -> String {
    format!("{base}/api/v1/push/{token}")
}

/// The URL the outbound policy judges for a hub check of `kind` at `endpoint`; `None` when
/// the hub calls nothing the tenant names (a push monitor, a dns check on the host's own
/// resolver).
pub(crate) fn called_url(kind: AppKind, endpoint: &str) -> Result<Option<String>, String> {
    let at = |h: &str, port: u16| {
        if h.contains(':') {
            format!("http://[{h}]:{port}/")
        } else {
            format!("http://{h}:{port}/")
        }
    };
    Ok(match kind {
        AppKind::Http => Some(endpoint.to_owned()),
        AppKind::Tcp | AppKind::Tls => {
            let (h, port) = probe::host_port(kind.as_str(), endpoint)?;
            Some(at(&h, port))
        }
        AppKind::Dns => trusthub_core::dns::parse_target(endpoint)?
            .server
            .map(|s| at(&s.ip().to_string(), s.port())),
        AppKind::Ping => Some(at(&core_apps::icmp_host(endpoint)?, 80)),
        _ => None,
    })
}

/// A dns check's expected values: 1 to 20, each 1 to 255 characters, addresses for A and
/// AAAA.
fn dns_expected(rtype: &str, values: &[String]) -> Result<Vec<String>, String> {
    if values.is_empty() || values.len() > 20 {
        return Err("must list 1 to 20 values".into());
    }
    let mut out = Vec::new();
    for v in values {
        let v = v.trim();
        if v.is_empty() || v.chars().count() > 255 || v.chars().any(char::is_control) {
            return Err("each value must be 1 to 255 characters without control characters".into());
        }
        match rtype {
            "A" if v.parse::<std::net::Ipv4Addr>().is_err() => {
                return Err(format!(
                    "`{v}` is not an IPv4 address (the check asks for A records)"
                ));
            }
            "AAAA" if v.parse::<std::net::Ipv6Addr>().is_err() => {
                return Err(format!(
                    "`{v}` is not an IPv6 address (the check asks for AAAA records)"
                ));
            }
            _ => {}
        }
        out.push(v.to_owned());
    }
    Ok(out)
}

/// The checks an agent runs from its host (CONTRACT 32): the rest are the hub's own.
pub const AGENT_CHECKS: [AppKind; 3] = [AppKind::Http, AppKind::Dns, AppKind::Ping];

/// An agent's check target as the agent will call it: never a link-local or cloud-metadata
/// address written literally (a name resolving to one fails at the agent).
fn agent_target(kind: AppKind, endpoint: &str) -> Result<(), String> {
    let literal = match kind {
        AppKind::Http => return crate::outbound::check_agent_endpoint(endpoint),
        AppKind::Dns => trusthub_core::dns::parse_target(endpoint)?
            .server
            .map(|s| s.ip()),
        AppKind::Ping => trusthub_core::apps::literal_host_ip(&core_apps::icmp_host(endpoint)?),
        _ => None,
    };
    match literal {
        Some(ip) if trusthub_core::apps::metadata_address(ip) => Err(format!(
            "is {ip}, a link-local or cloud-metadata address, which agents never check"
        )),
        _ => Ok(()),
    }
}
