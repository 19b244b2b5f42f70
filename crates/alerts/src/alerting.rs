//! Raising and resolving alerts (CONTRACT 7) with their webhook deliveries written to the
//! outbox in the same transaction (CONTRACT 6), so an alert change and its notifications
//! commit or roll back together.

use crate::store::alerts::{self, Alert, NewAlert};
use crate::store::webhooks::{self, NewDelivery, Webhook};
use serde::Serialize;
use serde_json::json;
use std::collections::HashMap;
use time::OffsetDateTime;
use trusthub_core::alerting::Severity;
use trusthub_store::{StoreResult, TenantId, Tx};
use utoipa::ToSchema;
use uuid::Uuid;

/// What another capability does, in the resolving transaction, when a user resolves an
/// alert (a typed event: the apps capability clears its red marker).
pub type OnResolved = for<'a> fn(
    &'a mut Tx,
    TenantId,
    &'a AlertView,
) -> std::pin::Pin<
    Box<dyn std::future::Future<Output = StoreResult<()>> + Send + 'a>,
>;

/// The [`OnResolved`] hooks the composition root installs (a part of the state).
#[derive(Debug, Default)]
pub struct ResolveHooks(pub Vec<OnResolved>);

/// `alert.created`.
pub const ALERT_CREATED: &str = "alert.created";
/// `alert.resolved`.
pub const ALERT_RESOLVED: &str = "alert.resolved";
/// The test ping's event name.
pub const WEBHOOK_TEST: &str = "webhook.test";
/// `drift.ticket` (CONTRACT 20): a file drifted within 7 days after a human rebase.
pub const DRIFT_TICKET: &str = "drift.ticket";
/// `incident.created` (CONTRACT 32): an incident was opened on a status page.
pub const INCIDENT_CREATED: &str = "incident.created";
/// `incident.updated` (CONTRACT 32): an incident got an update.
pub const INCIDENT_UPDATED: &str = "incident.updated";
/// Events an endpoint may subscribe to (SPEC 6.1, CONTRACT 20, 32).
pub const EVENTS: [&str; 5] = [
    ALERT_CREATED,
    ALERT_RESOLVED,
    DRIFT_TICKET,
    INCIDENT_CREATED,
    INCIDENT_UPDATED,
];
/// What an endpoint subscribes to when it names no events: what it did before incidents
/// existed (incident events are asked for by name).
pub const DEFAULT_EVENTS: [&str; 3] = [ALERT_CREATED, ALERT_RESOLVED, DRIFT_TICKET];

/// The agent of an alert.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AlertAgent {
    /// Id.
    pub id: Uuid,
    /// Host name.
    pub hostname: String,
    /// Tags (as they are now).
    pub tags: Vec<String>,
}

/// An alert (CONTRACT 7).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AlertView {
    /// Id.
    pub id: Uuid,
    /// `info`, `warning` or `critical`.
    pub severity: String,
    /// E.g. `liveness`, or the rule's metric.
    pub category: String,
    /// Title.
    pub title: String,
    /// More words.
    pub detail: Option<String>,
    /// `rule`, `liveness`, ...
    pub source: String,
    /// At most one open alert has a given fingerprint.
    pub fingerprint: String,
    /// The host, when the alert is about one.
    pub agent: Option<AlertAgent>,
    /// The app, for liveness alerts.
    pub app_id: Option<Uuid>,
    /// The rule, for rule alerts.
    pub rule_id: Option<Uuid>,
    /// Raised.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Resolved?
    pub is_resolved: bool,
    /// When.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub resolved_at: Option<OffsetDateTime>,
    /// By whom: `user:<id>`, or `liveness` / `rule` when it resolved itself.
    pub resolved_by: Option<String>,
    /// Why.
    pub resolution: Option<String>,
}

impl From<Alert> for AlertView {
    fn from(a: Alert) -> Self {
        let agent = a.agent_id.map(|id| AlertAgent {
            id,
            hostname: a.agent_hostname.clone().unwrap_or_default(),
            tags: a.agent_tags.clone().map(|t| t.0).unwrap_or_default(),
        });
        AlertView {
            id: a.id,
            severity: a.severity,
            category: a.category,
            title: a.title,
            detail: a.detail,
            source: a.source,
            fingerprint: a.fingerprint,
            agent,
            app_id: a.app_id,
            rule_id: a.rule_id,
            created_at: a.created_at,
            is_resolved: a.is_resolved,
            resolved_at: a.resolved_at,
            resolved_by: a.resolved_by,
            resolution: a.resolution,
        }
    }
}

/// The SPEC 6.1 body: `{event, alert {id, severity, category, title, agent {id, hostname,
/// tags}, ...}, tenant_id, timestamp}`.
pub fn event_body(event: &str, alert: &AlertView, tenant: TenantId, now: OffsetDateTime) -> String {
    json!({
        "event": event,
        "alert": alert,
        "tenant_id": tenant.0,
        "timestamp": trusthub_platform::state::rfc3339(now),
    })
    .to_string()
}

/// Raises and resolves alerts inside one transaction, queueing their webhook deliveries.
/// It reads each tenant's endpoints once per transaction, so a tick that changes many alerts
/// does not list the same endpoints again for every one.
#[derive(Debug, Default)]
pub struct Notifier {
    hooks: HashMap<TenantId, Vec<Webhook>>,
    channels: HashMap<TenantId, Vec<crate::store::channels::Channel>>,
}

/// One event on its way out: what every endpoint and channel of the tenant is matched against.
struct Outgoing<'a> {
    tenant: TenantId,
    event: &'a str,
    body: &'a str,
    /// The severity's rank, for `min_severity`.
    rank: i64,
    /// The host's tags, for `agent_filter.tag` (`None`: no host, so no tag filter passes).
    tags: Option<&'a [String]>,
    alert_id: Option<Uuid>,
    now: OffsetDateTime,
}

impl Outgoing<'_> {
    /// Whether a receiver subscribed to `events`, from `min_rank` up, for hosts tagged
    /// `tag` (if any) takes this event.
    fn wanted_by(&self, events: &[String], min_rank: i64, tag: Option<&str>) -> bool {
        let tag_ok = tag.is_none_or(|tag| self.tags.is_some_and(|t| t.iter().any(|x| x == tag)));
        events.iter().any(|e| e == self.event) && self.rank >= min_rank && tag_ok
    }
}

impl Notifier {
    /// Queues `event` about `alert` for every endpoint of the tenant that subscribes to it,
    /// whose `min_severity` the alert reaches and whose `agent_filter.tag` its agent carries.
    /// During an endpoint's cooldown the delivery is recorded as skipped.
    pub async fn enqueue_event(
        &mut self,
        tx: &mut Tx,
        tenant: TenantId,
        event: &str,
        alert: &AlertView,
        now: OffsetDateTime,
    ) -> StoreResult<usize> {
        let body = event_body(event, alert, tenant, now);
        let out = Outgoing {
            tenant,
            event,
            body: &body,
            rank: Severity::parse(&alert.severity).map_or(0, Severity::rank),
            tags: alert.agent.as_ref().map(|a| a.tags.as_slice()),
            alert_id: Some(alert.id),
            now,
        };
        // Notification channels (CONTRACT 27): the same event body, rendered for each
        // service when it is sent.
        Ok(self.queue_webhooks(tx, &out).await? + self.queue_channels(tx, &out).await?)
    }

    /// Queues an event that is not about an alert (`drift.ticket`) for every webhook
    /// endpoint of the tenant subscribed to it whose `agent_filter.tag` the host carries:
    /// the body is signed and retried like alerts. It ranks as `warning` for
    /// `min_severity`. Notification channels render alerts only and are not sent it.
    pub async fn enqueue_payload(
        &mut self,
        tx: &mut Tx,
        tenant: TenantId,
        event: &str,
        body: &serde_json::Value,
        host_tags: &[String],
        now: OffsetDateTime,
    ) -> StoreResult<usize> {
        let body = body.to_string();
        let out = Outgoing {
            tenant,
            event,
            body: &body,
            rank: Severity::Warning.rank(),
            tags: Some(host_tags),
            alert_id: None,
            now,
        };
        self.queue_webhooks(tx, &out).await
    }

    /// Queues a notice that is not about an alert but that people read (`incident.created`,
    /// `incident.updated`) for every webhook endpoint and notification channel of the tenant
    /// subscribed to it whose `min_severity` `severity` reaches (tag filters need a host:
    /// endpoints with one are skipped). Channels render it from the body's `incident`.
    pub async fn enqueue_notice(
        &mut self,
        tx: &mut Tx,
        tenant: TenantId,
        event: &str,
        body: &serde_json::Value,
        severity: Severity,
        now: OffsetDateTime,
    ) -> StoreResult<usize> {
        let body = body.to_string();
        let out = Outgoing {
            tenant,
            event,
            body: &body,
            rank: severity.rank(),
            tags: Some(&[]),
            alert_id: None,
            now,
        };
        Ok(self.queue_webhooks(tx, &out).await? + self.queue_channels(tx, &out).await?)
    }

    /// Queues `body` for every notification channel of the tenant subscribed to `event`,
    /// whose `min_severity` `rank` reaches and whose `agent_filter.tag` the host's `tags`
    /// carry (no host: only channels without a tag filter); each service renders it when it
    /// is sent.
    async fn queue_channels(&mut self, tx: &mut Tx, out: &Outgoing<'_>) -> StoreResult<usize> {
        let channels = match self.channels.entry(out.tenant) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(crate::store::channels::list(tx, out.tenant).await?)
            }
        };
        let mut queued = 0;
        for c in channels.iter() {
            if !out.wanted_by(
                &c.events.0,
                c.min_severity_rank,
                c.agent_filter_tag.as_deref(),
            ) {
                continue;
            }
            let target = format!("{}: {}", c.kind, c.name);
            let delivery = NewDelivery {
                webhook_id: None,
                rule_id: None,
                channel_id: Some(c.id),
                target_url: &target,
                target_url_sealed: None,
                event: out.event,
                alert_id: out.alert_id,
                payload: out.body,
                status: webhooks::status::PENDING,
            };
            webhooks::enqueue(tx, out.tenant, Uuid::now_v7(), &delivery, out.now).await?;
            queued += 1;
        }
        Ok(queued)
    }

    /// Queues `body` for every webhook endpoint of the tenant subscribed to `event`, whose
    /// `min_severity` `rank` reaches and whose `agent_filter.tag` the host's `tags` carry;
    /// during an endpoint's cooldown the delivery is recorded as skipped.
    async fn queue_webhooks(&mut self, tx: &mut Tx, out: &Outgoing<'_>) -> StoreResult<usize> {
        let hooks = match self.hooks.entry(out.tenant) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(webhooks::list(tx, out.tenant).await?)
            }
        };
        let mut queued = 0;
        for w in hooks.iter() {
            if !out.wanted_by(
                &w.events.0,
                w.min_severity_rank,
                w.agent_filter_tag.as_deref(),
            ) {
                continue;
            }
            let delivery = NewDelivery {
                webhook_id: Some(w.id),
                rule_id: None,
                channel_id: None,
                target_url: &w.url,
                target_url_sealed: w.url_sealed.as_deref(),
                event: out.event,
                alert_id: out.alert_id,
                payload: out.body,
                status: webhooks::initial_status(w.cooldown_until, out.now),
            };
            webhooks::enqueue(tx, out.tenant, Uuid::now_v7(), &delivery, out.now).await?;
            queued += 1;
        }
        Ok(queued)
    }

    /// Raises an alert (unless one with its fingerprint is open) and queues `alert.created`.
    pub async fn raise(
        &mut self,
        tx: &mut Tx,
        tenant: TenantId,
        a: &NewAlert<'_>,
        now: OffsetDateTime,
    ) -> StoreResult<Option<AlertView>> {
        let Some(alert) = alerts::raise(tx, tenant, a, now).await? else {
            return Ok(None);
        };
        let view = AlertView::from(alert);
        self.enqueue_event(tx, tenant, ALERT_CREATED, &view, now)
            .await?;
        Ok(Some(view))
    }

    /// Raises many alerts at once (a cycle of auto-patch raises hundreds) and queues
    /// `alert.created` for each new one; the new ones.
    pub async fn raise_many(
        &mut self,
        tx: &mut Tx,
        tenant: TenantId,
        alerts: &[NewAlert<'_>],
        now: OffsetDateTime,
    ) -> StoreResult<Vec<AlertView>> {
        let mut out = Vec::new();
        for alert in alerts::raise_many(tx, tenant, alerts, now).await? {
            let view = AlertView::from(alert);
            self.enqueue_event(tx, tenant, ALERT_CREATED, &view, now)
                .await?;
            out.push(view);
        }
        Ok(out)
    }

    /// Resolves an open alert and queues `alert.resolved`; `None` when it was not open.
    pub async fn resolve(
        &mut self,
        tx: &mut Tx,
        tenant: TenantId,
        id: Uuid,
        by: &str,
        resolution: &str,
        now: OffsetDateTime,
    ) -> StoreResult<Option<AlertView>> {
        let Some(alert) = alerts::resolve(tx, tenant, id, by, resolution, now).await? else {
            return Ok(None);
        };
        let view = AlertView::from(alert);
        self.enqueue_event(tx, tenant, ALERT_RESOLVED, &view, now)
            .await?;
        Ok(Some(view))
    }
}
