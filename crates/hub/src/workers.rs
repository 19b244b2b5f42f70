//! Periodic work: the liveness check of tracked apps (SPEC 3.1), alert-rule evaluation
//! (CONTRACT 10) and the webhook deliverer (SPEC 3.3; CONTRACT 6).
//!
//! Liveness and rules run once per cluster: each tick first takes a lease in the database
//! (CONTRACT 11), so with several hub processes on PostgreSQL only the holder ticks, and
//! another takes over when the holder stops renewing. The deliverer runs in every process;
//! claiming due rows with `FOR UPDATE SKIP LOCKED` sends each delivery from one of them.

use crate::alerting::{self, AlertView};
use crate::state::{AppState, now};
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;
use time::OffsetDateTime;
use trusthub_core::alerting::{self as rules_core, Op, Severity, source};
use trusthub_core::apps::{AppKind, ObservedMap, observe};
use trusthub_core::liveness::{self, Expected, Observed, State};
use trusthub_core::webhook::{self as hook, AfterFailure};
use trusthub_store::apps::{self, LivenessRow, LivenessUpdate};
use trusthub_store::webhooks::{self, Attempt, Due, NewDelivery, status};
use trusthub_store::{StoreResult, TenantId, alerts, audit, leases, rules};
use uuid::Uuid;

/// Starts the periodic workers; they stop when the returned handles are aborted.
pub fn spawn(state: &AppState) -> Vec<tokio::task::JoinHandle<()>> {
    let s = &state.settings;
    vec![
        tokio::spawn(periodic(
            state.clone(),
            "liveness",
            s.liveness_interval_secs.max(1),
            |st, now| Box::pin(async move { liveness_tick(&st, now).await.map(|_| ()) }),
        )),
        tokio::spawn(periodic(
            state.clone(),
            "alert_rules",
            s.rule_eval_interval_secs.max(1),
            |st, now| Box::pin(async move { evaluate_rules(&st, now).await.map(|_| ()) }),
        )),
        tokio::spawn(deliverer(state.clone())),
        tokio::spawn(crate::routing::listen(state.clone())),
        tokio::spawn(refresh_connections(state.clone())),
    ]
}

/// Every 30 s: marks this process's agent sockets fresh and expires actions whose token
/// ran out without a result.
async fn refresh_connections(state: AppState) {
    let mut timer = tokio::time::interval(Duration::from_secs(30));
    loop {
        timer.tick().await;
        let now = now();
        let r = async {
            let mut tx = state.db.begin().await?;
            trusthub_store::actions::touch_instance(&mut tx, &state.instance, now).await?;
            trusthub_store::actions::expire_due(&mut tx, now).await?;
            tx.commit().await
        }
        .await;
        if let Err(e) = r {
            tracing::warn!(error = %e, "cannot refresh agent connections");
        }
    }
}

type Tick = fn(
    AppState,
    OffsetDateTime,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = StoreResult<()>> + Send>>;

async fn periodic(state: AppState, name: &'static str, every_secs: u64, tick: Tick) {
    let every = Duration::from_secs(every_secs);
    let mut timer = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        timer.tick().await;
        let now = now();
        let lease_until = now + time::Duration::seconds(every_secs as i64 * 3 + 5);
        let held = async {
            let mut tx = state.db.begin().await?;
            let held = leases::acquire(&mut tx, name, &state.instance, now, lease_until).await?;
            tx.commit().await?;
            Ok::<_, trusthub_store::StoreError>(held)
        }
        .await;
        match held {
            Ok(true) => {
                if let Err(e) = tick(state.clone(), now).await {
                    tracing::warn!(worker = name, error = %e, "periodic work failed; next tick retries");
                }
            }
            Ok(false) => tracing::debug!(worker = name, "another hub process holds the lease"),
            Err(e) => tracing::warn!(worker = name, error = %e, "cannot take the lease"),
        }
    }
}

// ---------------------------------------------------------------- liveness

/// What a liveness tick did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LivenessReport {
    /// Apps looked at.
    pub apps: usize,
    /// Apps whose state changed (rows written).
    pub changed: usize,
    /// `app.state_mismatch` signals.
    pub mismatches: usize,
    /// Alerts raised.
    pub raised: usize,
    /// Alerts resolved.
    pub resolved: usize,
}

fn parse_observed(s: Option<&str>) -> Option<Observed> {
    match s? {
        "running" => Some(Observed::Running),
        "stopped" => Some(Observed::Stopped),
        "unknown" => Some(Observed::Unknown),
        _ => None,
    }
}

fn observed_name(o: Observed) -> &'static str {
    match o {
        Observed::Running => "running",
        Observed::Stopped => "stopped",
        Observed::Unknown => "unknown",
    }
}

/// The observed state of one app at `now`.
fn observed_of(
    app: &LivenessRow,
    live: Option<&(bool, ObservedMap)>,
    now: OffsetDateTime,
) -> Observed {
    let Some(kind) = AppKind::parse(&app.app_type) else {
        return Observed::Unknown;
    };
    if kind == AppKind::Http {
        // Fresh while within three check intervals (and at least three minutes).
        let window = app.interval_seconds.unwrap_or(60).max(60) * 3;
        return match (app.last_check_at, app.last_check_ok) {
            (Some(at), Some(ok)) if now - at <= time::Duration::seconds(window) => {
                if ok {
                    Observed::Running
                } else {
                    Observed::Stopped
                }
            }
            _ => Observed::Unknown,
        };
    }
    match live {
        Some((fresh, map)) => observe(kind, &app.identifier, map, *fresh),
        None => Observed::Unknown,
    }
}

/// One liveness check of every tracked app (SPEC 3.1), in one transaction: changed states
/// are written, the third consecutive mismatch raises a warning alert (once per incident),
/// and an app that matches again resolves its alert.
pub async fn liveness_tick(state: &AppState, now: OffsetDateTime) -> StoreResult<LivenessReport> {
    let (all, lives) = {
        let mut c = state.db.conn().await?;
        (
            apps::liveness_rows(&mut c).await?,
            apps::live_of_tracked_agents(&mut c).await?,
        )
    };
    let live: HashMap<Uuid, (bool, ObservedMap)> = lives
        .into_iter()
        .map(|l| {
            let fresh = now - l.received_at
                <= time::Duration::seconds(l.ingest_interval_secs.max(1) * 3 + 5);
            (l.agent_id, (fresh, l.observed.0))
        })
        .collect();
    let mut report = LivenessReport {
        apps: all.len(),
        ..Default::default()
    };
    let mut updates = Vec::new();
    let mut raise = Vec::new();
    let mut resolve = Vec::new();
    for app in &all {
        let prev = State {
            consecutive_mismatch: app.consecutive_mismatch.clamp(0, u32::MAX.into()) as u32,
            consecutive_unknown: app.consecutive_unknown.clamp(0, u32::MAX.into()) as u32,
            // Only a change sets it; `None` keeps the stored time.
            last_state_change: None,
            last_observed: parse_observed(app.observed_state.as_deref()),
            alerting: app.alerting,
        };
        let expected = if app.expected_state == "stopped" {
            Expected::Stopped
        } else {
            Expected::Running
        };
        let observed = observed_of(app, live.get(&app.agent_id), now);
        let d = liveness::check(&prev, expected, observed, now);
        if d.mismatch_signal {
            report.mismatches += 1;
            tracing::info!(signal = "app.state_mismatch", app_id = %app.id, observed = observed_name(observed),
                expected = %app.expected_state, consecutive = d.state.consecutive_mismatch, "app state mismatch");
        }
        if d.state != prev {
            updates.push(LivenessUpdate {
                id: app.id,
                consecutive_mismatch: d.state.consecutive_mismatch.into(),
                consecutive_unknown: d.state.consecutive_unknown.into(),
                observed_state: observed_name(observed),
                last_state_change: d.state.last_state_change,
                alerting: d.state.alerting,
            });
        }
        if d.raise_alert {
            raise.push((app.id, observed, d.state.consecutive_mismatch));
        }
        if d.resolve_alert {
            resolve.push((app.id, observed));
        }
    }
    report.changed = updates.len();
    if updates.is_empty() {
        return Ok(report);
    }
    let mut tx = state.db.begin().await?;
    let mut notifier = alerting::Notifier::default();
    apps::save_liveness(&mut tx, &updates, now).await?;
    let ids: Vec<Uuid> = raise
        .iter()
        .map(|r| r.0)
        .chain(resolve.iter().map(|r| r.0))
        .collect();
    let full: HashMap<Uuid, trusthub_store::apps::App> = apps::by_ids(&mut tx, &ids)
        .await?
        .into_iter()
        .map(|a| (a.id, a))
        .collect();
    for (id, observed, n) in raise {
        let Some(app) = full.get(&id) else { continue };
        let tenant = TenantId(app.tenant_id);
        let fingerprint = rules_core::liveness_fingerprint(&app.id.to_string());
        let title = format!(
            "{} is {}, expected {}",
            app.name,
            observed_name(observed),
            app.expected_state
        );
        let detail = format!(
            "{} `{}` observed {} on {n} consecutive checks",
            app.app_type,
            app.identifier,
            observed_name(observed)
        );
        let raised = notifier
            .raise(
                &mut tx,
                tenant,
                &alerts::NewAlert {
                    severity: Severity::Warning.as_str(),
                    severity_rank: Severity::Warning.rank(),
                    category: "liveness",
                    title: &title,
                    detail: Some(&detail),
                    source: source::LIVENESS,
                    fingerprint: &fingerprint,
                    agent_id: Some(app.agent_id),
                    app_id: Some(app.id),
                    rule_id: None,
                },
                now,
            )
            .await?;
        report.raised += usize::from(raised.is_some());
    }
    for (id, observed) in resolve {
        let Some(app) = full.get(&id) else { continue };
        let tenant = TenantId(app.tenant_id);
        let fingerprint = rules_core::liveness_fingerprint(&app.id.to_string());
        if let Some(open) = alerts::open_by_fingerprint(&mut tx, tenant, &fingerprint).await? {
            let why = format!(
                "resolved itself: {} is {} again, as expected",
                app.name,
                observed_name(observed)
            );
            let done = notifier
                .resolve(&mut tx, tenant, open.id, "liveness", &why, now)
                .await?;
            report.resolved += usize::from(done.is_some());
        }
    }
    tx.commit().await?;
    Ok(report)
}

// ---------------------------------------------------------------- alert rules

/// What an evaluation pass did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RulesReport {
    /// Rules evaluated.
    pub rules: usize,
    /// Groups firing over all rules.
    pub firing: usize,
    /// Alerts raised.
    pub raised: usize,
    /// Alerts resolved.
    pub resolved: usize,
}

struct Group {
    sum: f64,
    count: i64,
    agents: Vec<Uuid>,
}

/// Evaluates every alert rule at `now` (CONTRACT 10): per `group_by` group, the average of
/// `metric` over `window` compared with `threshold`; a firing group raises one alert and,
/// when the rule has a `webhook_url`, queues the SPEC 6.2 POST; a group that no longer fires
/// (or has no data in the window) resolves its alert.
pub async fn evaluate_rules(state: &AppState, now: OffsetDateTime) -> StoreResult<RulesReport> {
    let all = {
        let mut c = state.db.conn().await?;
        rules::all(&mut c).await?
    };
    let mut report = RulesReport {
        rules: all.len(),
        ..Default::default()
    };
    let to_ms = trusthub_store::telemetry::unix_ms(now) + 1;
    for rule in all {
        let tenant = TenantId(rule.tenant_id);
        let Some(op) = Op::parse(&rule.operator) else {
            continue;
        };
        let hourly = rule.window_secs > state.settings.metrics_raw_retention_hours.max(1) * 3600;
        let from_ms = to_ms - rule.window_secs * 1000;
        let sums = {
            let mut c = state.db.conn().await?;
            rules::window_sums(&mut c, tenant, &rule.metric, from_ms, to_ms, hourly).await?
        };
        let mut groups: BTreeMap<BTreeMap<String, String>, Group> = BTreeMap::new();
        for s in sums {
            let labels: BTreeMap<String, String> =
                serde_json::from_str(&s.labels).unwrap_or_default();
            let key = rules_core::group_of(&rule.group_by.0, &s.agent_id.to_string(), &labels);
            let g = groups.entry(key).or_insert(Group {
                sum: 0.0,
                count: 0,
                agents: Vec::new(),
            });
            g.sum += s.sum;
            g.count += s.count;
            if !g.agents.contains(&s.agent_id) {
                g.agents.push(s.agent_id);
            }
        }
        let mut tx = state.db.begin().await?;
        let mut notifier = alerting::Notifier::default();
        let mut open: HashMap<String, trusthub_store::alerts::Alert> =
            alerts::open_of_rule(&mut tx, tenant, rule.id)
                .await?
                .into_iter()
                .map(|a| (a.fingerprint.clone(), a))
                .collect();
        let mut firing = 0;
        for (key, g) in &groups {
            if g.count == 0 {
                continue;
            }
            let avg = g.sum / g.count as f64;
            let fingerprint = rules_core::rule_fingerprint(&rule.id.to_string(), key);
            if !op.holds(avg, rule.threshold) {
                if let Some(a) = open.remove(&fingerprint) {
                    let why = format!(
                        "resolved itself: average {} over {} is {avg:.4}, no longer {} {}",
                        rule.metric, rule.window_spec, rule.operator, rule.threshold
                    );
                    let done = notifier
                        .resolve(&mut tx, tenant, a.id, "rule", &why, now)
                        .await?;
                    report.resolved += usize::from(done.is_some());
                }
                continue;
            }
            firing += 1;
            if open.remove(&fingerprint).is_some() {
                continue;
            }
            let agent_id = match g.agents.as_slice() {
                [one] => Some(*one),
                _ => None,
            };
            let group_text: Vec<String> = key.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let title = format!(
                "{}: average {} {avg:.4} {} {} over {}",
                rule.name, rule.metric, rule.operator, rule.threshold, rule.window_spec
            );
            let detail =
                (!group_text.is_empty()).then(|| format!("group {}", group_text.join(", ")));
            let raised = notifier
                .raise(
                    &mut tx,
                    tenant,
                    &alerts::NewAlert {
                        severity: &rule.severity,
                        severity_rank: Severity::parse(&rule.severity).map_or(1, Severity::rank),
                        category: &rule.metric,
                        title: &title,
                        detail: detail.as_deref(),
                        source: source::RULE,
                        fingerprint: &fingerprint,
                        agent_id,
                        app_id: None,
                        rule_id: Some(rule.id),
                    },
                    now,
                )
                .await?;
            if let Some(alert) = raised {
                report.raised += 1;
                if let Some(url) = &rule.webhook_url {
                    let body = rule_webhook_body(state, &alert);
                    webhooks::enqueue(
                        &mut tx,
                        tenant,
                        Uuid::now_v7(),
                        &NewDelivery {
                            webhook_id: None,
                            rule_id: Some(rule.id),
                            target_url: url,
                            event: "alert_rule.fired",
                            alert_id: Some(alert.id),
                            payload: &body,
                            status: status::PENDING,
                        },
                        now,
                    )
                    .await?;
                }
            }
        }
        // Groups that have no data in the window any more.
        for (_, a) in open {
            let why = format!(
                "resolved itself: no {} data in the last {}",
                rule.metric, rule.window_spec
            );
            let done = notifier
                .resolve(&mut tx, tenant, a.id, "rule", &why, now)
                .await?;
            report.resolved += usize::from(done.is_some());
        }
        rules::evaluated(&mut tx, rule.id, groups.len() as i64, firing as i64, now).await?;
        tx.commit().await?;
        report.firing += firing;
    }
    Ok(report)
}

/// The SPEC 6.2 minimal body: `{title, severity, agent, link}`, nothing else.
fn rule_webhook_body(state: &AppState, alert: &AlertView) -> String {
    json!({
        "title": alert.title,
        "severity": alert.severity,
        "agent": alert.agent,
        "link": format!("{}/api/v1/alerts/{}", state.public_url, alert.id),
    })
    .to_string()
}

// ---------------------------------------------------------------- webhook deliverer

/// Most deliveries one pass claims.
const CLAIM: i64 = 16;

async fn deliverer(state: AppState) {
    let client = match crate::webhook_client::client(&state.settings) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "cannot build the webhook HTTP client; deliveries stay queued");
            return;
        }
    };
    loop {
        match deliver_due(&state, &client).await {
            Ok(n) if n > 0 => continue,
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "webhook delivery pass failed"),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Claims and sends the deliveries due now; answers how many were attempted or skipped.
pub async fn deliver_due(state: &AppState, client: &reqwest::Client) -> StoreResult<usize> {
    let now = now();
    let lease = now + time::Duration::seconds(state.settings.webhook_timeout_secs as i64 + 60);
    if !webhooks::any_due(&mut state.db.conn().await?, now).await? {
        return Ok(0);
    }
    let due = {
        let mut tx = state.db.begin().await?;
        let due = webhooks::claim_due(&mut tx, now, lease, CLAIM).await?;
        tx.commit().await?;
        due
    };
    let n = due.len();
    let mut set = tokio::task::JoinSet::new();
    for d in due {
        let state = state.clone();
        let client = client.clone();
        set.spawn(async move {
            if let Err(e) = deliver_one(&state, &client, d).await {
                tracing::warn!(error = %e, "cannot record a webhook attempt; it will be retried");
            }
        });
    }
    while set.join_next().await.is_some() {}
    Ok(n)
}

async fn deliver_one(state: &AppState, client: &reqwest::Client, d: Due) -> StoreResult<()> {
    let tenant = TenantId(d.tenant_id);
    let started = now();
    if hook::in_cooldown(d.cooldown_until, started) {
        let mut tx = state.db.begin().await?;
        webhooks::record_attempt(
            &mut tx,
            d.id,
            &Attempt {
                status: status::SKIPPED,
                next_attempt_at: None,
                status_code: None,
                error: Some("the endpoint is in cooldown"),
                attempted: false,
            },
            started,
        )
        .await?;
        return tx.commit().await;
    }
    let secret = match &d.secret_sealed {
        Some(sealed) => match state
            .key
            .open(crate::routes::webhooks::SECRET_CONTEXT, sealed)
        {
            Ok(s) => Some(String::from_utf8_lossy(&s).into_owned()),
            Err(_) => None,
        },
        None => None,
    };
    let outcome = if !state.settings.webhook_allow_link_local
        && crate::webhook_client::literal_blocked(&d.target_url)
    {
        Err("the target is a link-local or metadata address".to_owned())
    } else {
        send(client, &d, secret.as_deref()).await
    };
    let finished = now();
    let attempt = d.attempts + 1;
    let mut tx = state.db.begin().await?;
    let (status_code, error) = match &outcome {
        Ok(code) if (200..300).contains(code) => (Some(i64::from(*code)), None),
        Ok(code) => (Some(i64::from(*code)), Some(format!("HTTP {code}"))),
        Err(e) => (None, Some(e.clone())),
    };
    let success = error.is_none();
    let (new_status, next) = if success {
        (status::SUCCEEDED, None)
    } else {
        match hook::after_failure(
            attempt.clamp(0, u32::MAX.into()) as u32,
            &state.settings.webhook_retry_schedule.0,
        ) {
            AfterFailure::RetryIn(wait) => (
                status::RETRYING,
                Some(finished + time::Duration::seconds(wait.as_secs() as i64)),
            ),
            AfterFailure::Failed => (status::FAILED, None),
        }
    };
    webhooks::record_attempt(
        &mut tx,
        d.id,
        &Attempt {
            status: new_status,
            next_attempt_at: next,
            status_code,
            error: error.as_deref(),
            attempted: true,
        },
        finished,
    )
    .await?;
    let subject = match (d.webhook_id, d.rule_id) {
        (Some(w), _) => format!("webhook:{w}"),
        (None, Some(r)) => format!("alert_rule:{r}"),
        _ => "webhook".to_owned(),
    };
    let details = json!({"delivery_id": d.id, "event": d.event, "attempt": attempt, "status": new_status,
        "status_code": status_code, "error": error, "url": d.target_url});
    if d.rule_id.is_some() {
        append_audit(
            &mut tx,
            tenant,
            trusthub_core::audit::WEBHOOK_DELIVERY,
            &subject,
            &details,
            finished,
        )
        .await?;
    }
    if new_status == status::FAILED {
        if let Some(w) = d.webhook_id {
            let until = hook::cooldown_until(
                finished,
                Duration::from_secs(state.settings.webhook_cooldown_secs),
            );
            webhooks::set_cooldown(&mut tx, w, until).await?;
        }
        append_audit(
            &mut tx,
            tenant,
            trusthub_core::audit::WEBHOOK_DELIVERY_FAILED,
            &subject,
            &details,
            finished,
        )
        .await?;
    }
    tx.commit().await
}

async fn append_audit(
    tx: &mut trusthub_store::Tx,
    tenant: TenantId,
    event_type: &str,
    subject: &str,
    details: &serde_json::Value,
    now: OffsetDateTime,
) -> StoreResult<()> {
    audit::append(
        tx,
        tenant,
        &audit::NewEntry {
            event_type,
            actor: "system".into(),
            subject: subject.to_owned(),
            details: details.clone(),
            ip: None,
            request_id: None,
        },
        now,
    )
    .await
}

/// One HTTP attempt: the status code, or why there was none.
async fn send(client: &reqwest::Client, d: &Due, secret: Option<&str>) -> Result<u16, String> {
    let ts = OffsetDateTime::now_utc().unix_timestamp();
    let id = d.id.to_string();
    let mut req = client
        .post(&d.target_url)
        .header("content-type", "application/json")
        .header(
            "user-agent",
            concat!("Trusthub-Webhooks/", env!("CARGO_PKG_VERSION")),
        )
        .header("x-service-delivery", &id)
        .header("x-service-event", &d.event)
        .header("x-service-timestamp", ts.to_string());
    if let Some(secret) = secret {
        req = req
            .header(
                "x-service-signature",
                hook::service_signature(secret, d.payload.as_bytes()),
            )
            .header("webhook-id", &id)
            .header("webhook-timestamp", ts.to_string())
            .header(
                "webhook-signature",
                hook::standard_signature(secret, &id, ts, d.payload.as_bytes()),
            );
    }
    match req.body(d.payload.clone()).send().await {
        Ok(resp) => Ok(resp.status().as_u16()),
        Err(e) => Err(describe(&e)),
    }
}

fn describe(e: &reqwest::Error) -> String {
    let mut s = if e.is_timeout() {
        "timed out".to_owned()
    } else if e.is_connect() {
        "cannot connect".to_owned()
    } else {
        "request failed".to_owned()
    };
    let mut src = std::error::Error::source(e);
    while let Some(inner) = src {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        src = inner.source();
    }
    s.chars().take(500).collect()
}
