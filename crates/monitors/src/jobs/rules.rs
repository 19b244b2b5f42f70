//! Alert-rule evaluation (CONTRACT 10), once per cluster every
//! `TRUSTHUB_RULE_EVAL_INTERVAL_SECS`.

use crate::alerting::{self, AlertView};
use crate::state::AppState;
use crate::store::rules;
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use time::OffsetDateTime;
use trusthub_alerts as alerts;
use trusthub_alerts::outbox::{self as webhooks, NewDelivery, status};
use trusthub_core::alerting::{self as rules_core, Op, Severity, source};
use trusthub_store::{StoreResult, TenantId};
use uuid::Uuid;

/// The lease and log name of this job.
pub const JOB: &str = "alert_rules";

/// One scheduled run at `now`.
pub async fn tick(state: &AppState, now: OffsetDateTime) -> StoreResult<()> {
    evaluate_rules(state, now).await.map(|_| ())
}

/// Seconds between ticks.
pub fn interval(s: &trusthub_platform::settings::Settings) -> u64 {
    crate::settings::of(s).rule_eval_interval_secs.max(1)
}

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
    let to_ms = trusthub_fleet::unix_ms(now) + 1;
    for rule in all {
        let tenant = TenantId(rule.tenant_id);
        let Some(op) = Op::parse(&rule.operator) else {
            continue;
        };
        let hourly = rule.window_secs
            > trusthub_fleet::settings::of(&state.settings)
                .metrics_raw_retention_hours
                .max(1)
                * 3600;
        let from_ms = to_ms - rule.window_secs * 1000;
        let sums = {
            let mut c = state.db.conn().await?;
            trusthub_fleet::window_sums(&mut c, tenant, &rule.metric, from_ms, to_ms, hourly)
                .await?
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
        let mut open: HashMap<String, trusthub_alerts::Alert> =
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
                            channel_id: None,
                            target_url: url,
                            target_url_sealed: rule.webhook_url_sealed.as_deref(),
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
        // The alert's dashboard page: a person follows this link (CONTRACT 27).
        "link": format!("{}/ui/alerts/{}", state.public_url, alert.id),
    })
    .to_string()
}
