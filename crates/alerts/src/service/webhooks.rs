//! The webhook services (SPEC 6.1; CONTRACT 6): what the API's handlers and the dashboard's
//! pages both call, with the caller's role as a typed value ([`Admin`]) — the permission is
//! decided once, by [`Admin::of`] or the extractor.

use crate::alerting::{EVENTS, WEBHOOK_TEST};
use crate::auth::Admin;
use crate::error::{ApiError, ApiResult, FieldError, all_valid};
use crate::extract::Meta;
use crate::state::{AppState, now};
use crate::store::webhooks::{self, Delivery, NewDelivery, NewWebhook, Webhook};
use serde::{Deserialize, Serialize};
use serde_json::json;
use time::OffsetDateTime;
use trusthub_core::alerting::Severity;
use trusthub_core::audit as ev;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

/// Sealing context of webhook secrets.
pub const SECRET_CONTEXT: &str = "webhook_secret";

/// Only alerts of agents with this tag.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentFilter {
    /// Tag.
    #[schema(pattern = r"^[A-Za-z0-9_.:=/-]+$", min_length = 1, max_length = 64)]
    pub tag: String,
}

/// An endpoint to create (SPEC 2.6).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewWebhookRequest {
    /// `http` or `https` URL. Loopback, private, link-local, CGNAT, multicast and other
    /// special-use addresses are refused in every spelling, at creation (a name is resolved
    /// then) and at each delivery, unless `TRUSTHUB_OUTBOUND_ALLOW_CIDRS` allows the range;
    /// redirects are not followed.
    #[schema(format = "uri", pattern = r"^https?://[^\s/?#@]+", max_length = 2048)]
    pub url: String,
    /// Shared HMAC secret, 16 to 256 characters; generated (`whsec_` + base64 of 32 random
    /// bytes) when absent. Shown in this answer only.
    #[schema(
        pattern = r"^[^\x00-\x1f\x7f-\x9f]+$",
        min_length = 16,
        max_length = 256
    )]
    pub secret: Option<String>,
    /// `alert.created`, `alert.resolved` and/or `drift.ticket` (default all three).
    #[schema(value_type = Option<Vec<crate::openapi::EventName>>, min_items = 1)]
    pub events: Option<Vec<String>>,
    /// Lowest severity delivered: `info`, `warning` (default) or `critical`.
    #[schema(pattern = r"^(info|warning|critical)$")]
    pub min_severity: Option<String>,
    /// Only alerts whose agent has this tag.
    pub agent_filter: Option<AgentFilter>,
}

/// Changes to an endpoint (JSON merge patch): absent fields stay as they are;
/// `agent_filter: null` removes the filter. A new `secret` replaces the old one at once.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookPatch {
    /// New target.
    #[schema(pattern = r"^https?://[^\s/?#@]+", max_length = 2048)]
    pub url: Option<String>,
    /// New HMAC secret, 16 to 256 characters.
    #[schema(
        pattern = r"^[^\x00-\x1f\x7f-\x9f]+$",
        min_length = 16,
        max_length = 256
    )]
    pub secret: Option<String>,
    /// New event list.
    #[schema(value_type = Option<Vec<crate::openapi::EventName>>, min_items = 1)]
    pub events: Option<Vec<String>>,
    /// New lowest severity.
    #[schema(pattern = r"^(info|warning|critical)$")]
    pub min_severity: Option<String>,
    /// New tag filter, or null to deliver alerts of every agent.
    #[serde(default, deserialize_with = "crate::extract::present")]
    pub agent_filter: Option<Option<AgentFilter>>,
}

/// An endpoint as listed: never the secret.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookView {
    /// Id.
    pub id: Uuid,
    /// Target.
    pub url: String,
    /// Events.
    pub events: Vec<String>,
    /// Lowest severity delivered.
    pub min_severity: String,
    /// Tag filter.
    pub agent_filter: Option<AgentFilter>,
    /// The secret's first characters, to recognise it.
    pub secret_hint: String,
    /// After a delivery failed for good the endpoint rests until then; deliveries meanwhile
    /// are recorded as `skipped`.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub cooldown_until: Option<OffsetDateTime>,
    /// Created.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

impl From<Webhook> for WebhookView {
    fn from(w: Webhook) -> Self {
        WebhookView {
            id: w.id,
            url: w.url,
            events: w.events.0,
            min_severity: w.min_severity,
            agent_filter: w.agent_filter_tag.map(|tag| AgentFilter { tag }),
            secret_hint: w.secret_hint,
            cooldown_until: w.cooldown_until,
            created_at: w.created_at,
        }
    }
}

/// A created endpoint with its secret, shown this once.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedWebhook {
    /// The endpoint.
    #[serde(flatten)]
    pub webhook: WebhookView,
    /// The HMAC secret: `X-Service-Signature: sha256=<hex HMAC-SHA256(secret, body)>`, and
    /// Standard Webhooks `webhook-signature` (key: the base64 after `whsec_`, or the secret's
    /// bytes when it is not in that form).
    pub secret: String,
}

/// An endpoint's settings, checked.
pub(crate) struct Checked {
    pub(crate) url: String,
    /// The secret given, if any.
    pub(crate) secret: Option<String>,
    pub(crate) events: Vec<String>,
    pub(crate) min_severity: String,
    pub(crate) rank: i64,
    pub(crate) tag: Option<String>,
}

/// Checks an endpoint's settings; every bad field in one 422.
pub(crate) async fn check(
    state: &AppState,
    tenant: trusthub_store::TenantId,
    req: &NewWebhookRequest,
) -> ApiResult<Checked> {
    let policy =
        crate::outbound::Policy::of_tenant(&state.settings, &mut state.db.conn().await?, tenant)
            .await?;
    let mut errors = Vec::new();
    let mut err = |field: &str, m: String| errors.push(FieldError::new(field, m));
    let url = req.url.trim().to_owned();
    if let Err(m) = policy.check_url(&url).await {
        err("url", m);
    }
    let secret = match req.secret.as_deref() {
        Some(s) if (16..=256).contains(&s.chars().count()) && !s.chars().any(char::is_control) => {
            Some(s.to_owned())
        }
        Some(_) => {
            err("secret", "must be 16 to 256 characters".into());
            None
        }
        None => None,
    };
    let (events, min_severity, rank, tag) = subscription(
        &EVENTS,
        &crate::alerting::DEFAULT_EVENTS,
        req.events.as_deref(),
        req.min_severity.as_deref(),
        req.agent_filter.as_ref(),
        &mut errors,
    );
    all_valid(errors)?;
    Ok(Checked {
        url,
        secret,
        events,
        min_severity,
        rank,
        tag,
    })
}

/// Which alerts an endpoint or a notification channel gets — its events (default both),
/// lowest severity (default `warning`) and agent tag — checked, every bad field added to
/// `errors`: `(events, min_severity, its rank, tag)`.
pub(crate) fn subscription(
    allowed: &[&str],
    default: &[&str],
    events: Option<&[String]>,
    min_severity: Option<&str>,
    filter: Option<&AgentFilter>,
    errors: &mut Vec<FieldError>,
) -> (Vec<String>, String, i64, Option<String>) {
    let mut err = |field: &str, m: String| errors.push(FieldError::new(field, m));
    let mut chosen: Vec<String> = Vec::new();
    match events {
        Some([]) => err("events", "must name at least one event".into()),
        Some(list) => {
            for (i, e) in list.iter().enumerate() {
                if !allowed.contains(&e.as_str()) {
                    err(
                        &format!("events[{i}]"),
                        format!("must be one of {}", allowed.join(", ")),
                    );
                } else if !chosen.contains(e) {
                    chosen.push(e.clone());
                }
            }
        }
        None => chosen = default.iter().map(|e| (*e).to_owned()).collect(),
    }
    let min_severity = min_severity.unwrap_or("warning").to_owned();
    let rank = match Severity::parse(&min_severity) {
        Some(s) => s.rank(),
        None => {
            err("min_severity", "must be info, warning or critical".into());
            0
        }
    };
    let tag = filter.map(|f| f.tag.trim().to_owned());
    if let Some(t) = &tag
        && let Err(m) = trusthub_core::validate::tags(std::slice::from_ref(t))
    {
        err("agent_filter.tag", m);
    }
    (chosen, min_severity, rank, tag)
}

/// One delivery (never the secret).
#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryView {
    /// Id: `X-Service-Delivery` / `webhook-id`, the same on every attempt.
    pub id: Uuid,
    /// Event.
    pub event: String,
    /// The alert it is about.
    pub alert_id: Option<Uuid>,
    /// `pending`, `retrying`, `succeeded`, `failed` or `skipped` (cooldown).
    pub status: String,
    /// Attempts made.
    pub attempts: i64,
    /// Next attempt, while pending or retrying.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub next_attempt_at: Option<OffsetDateTime>,
    /// Last attempt.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_attempt_at: Option<OffsetDateTime>,
    /// HTTP status of the last attempt.
    pub last_status_code: Option<i64>,
    /// Why the last attempt failed.
    pub last_error: Option<String>,
    /// The exact body sent.
    pub payload: serde_json::Value,
    /// Created.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Finished (succeeded, failed or skipped).
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub completed_at: Option<OffsetDateTime>,
}

impl From<Delivery> for DeliveryView {
    fn from(d: Delivery) -> Self {
        DeliveryView {
            id: d.id,
            event: d.event,
            alert_id: d.alert_id,
            status: d.status,
            attempts: d.attempts,
            next_attempt_at: d.next_attempt_at,
            last_attempt_at: d.last_attempt_at,
            last_status_code: d.last_status_code,
            last_error: d.last_error,
            payload: serde_json::from_str(&d.payload).unwrap_or(serde_json::Value::Null),
            created_at: d.created_at,
            completed_at: d.completed_at,
        }
    }
}

/// Paging of deliveries.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct DeliveryQuery {
    /// Page size, 1 to 500 (default 100).
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<i64>,
}

/// Registers an endpoint for `p`'s tenant (the API and the dashboard): checked, the secret
/// sealed, audited; the answer holds the secret, shown this once.
pub async fn create(
    state: &AppState,
    meta: &Meta,
    p: &crate::auth::Principal,
    req: &NewWebhookRequest,
) -> ApiResult<CreatedWebhook> {
    let Checked {
        url,
        secret,
        events,
        min_severity,
        rank,
        tag,
    } = check(state, p.tenant(), req).await?;
    let secret = match secret {
        Some(s) => s,
        None => {
            trusthub_core::webhook::new_secret().map_err(|e| ApiError::Internal(e.to_string()))?
        }
    };
    let sealed = state
        .key
        .seal(SECRET_CONTEXT, secret.as_bytes())
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    let hint: String = secret.chars().take(10).collect();
    let (url, url_sealed) = crate::outbound::keep(&state.key, &url)?;
    let now = now();
    let mut tx = state.db.begin().await?;
    let w = webhooks::insert(
        &mut tx,
        p.tenant(),
        &NewWebhook {
            url: &url,
            url_sealed: url_sealed.as_deref(),
            secret_sealed: &sealed,
            secret_hint: &hint,
            events: &events,
            min_severity: &min_severity,
            min_severity_rank: rank,
            agent_filter_tag: tag.as_deref(),
        },
        now,
    )
    .await?;
    meta.record(
        &mut tx,
        p,
        ev::WEBHOOK_CREATED,
        format!("webhook:{}", w.id),
        json!({"url": url, "events": events, "min_severity": min_severity, "agent_filter_tag": tag}),
    )
    .await?;
    tx.commit().await?;
    Ok(CreatedWebhook {
        webhook: w.into(),
        secret,
    })
}

/// The tenant's webhook endpoints; never the secrets.
pub async fn list(state: &AppState, p: &crate::auth::Principal) -> ApiResult<Vec<WebhookView>> {
    let mut c = state.db.conn().await?;
    Ok(webhooks::list(&mut c, p.tenant())
        .await?
        .into_iter()
        .map(WebhookView::from)
        .collect())
}

/// One endpoint of `p`'s tenant (404 for another tenant's).
pub(crate) async fn load(
    state: &AppState,
    p: &crate::auth::Principal,
    id: Uuid,
) -> ApiResult<Webhook> {
    let mut c = state.db.conn().await?;
    webhooks::get(&mut c, p.tenant(), id)
        .await?
        .ok_or(ApiError::NotFound("webhook"))
}

/// One endpoint of the admin's tenant (404 for another tenant's).
pub async fn get(state: &AppState, admin: &Admin, id: Uuid) -> ApiResult<WebhookView> {
    let p = &admin.0;
    Ok(load(state, p, id).await?.into())
}

/// Changes an endpoint: only the fields sent, checked like at creation; audited.
pub async fn update(
    state: &AppState,
    meta: &Meta,
    admin: &Admin,
    id: Uuid,
    patch: WebhookPatch,
) -> ApiResult<WebhookView> {
    let p = &admin.0;
    let w = load(state, p, id).await?;
    let current = crate::outbound::to_call(&state.key, &w.url, w.url_sealed.as_deref())
        .map_err(ApiError::Internal)?;
    let merged = NewWebhookRequest {
        url: patch.url.clone().unwrap_or(current),
        secret: patch.secret.clone(),
        events: Some(patch.events.clone().unwrap_or_else(|| w.events.0.clone())),
        min_severity: Some(
            patch
                .min_severity
                .clone()
                .unwrap_or_else(|| w.min_severity.clone()),
        ),
        agent_filter: match &patch.agent_filter {
            Some(f) => f.clone(),
            None => w.agent_filter_tag.clone().map(|tag| AgentFilter { tag }),
        },
    };
    let c = check(state, p.tenant(), &merged).await?;
    let (sealed, hint) = match &c.secret {
        Some(secret) => (
            state
                .key
                .seal(SECRET_CONTEXT, secret.as_bytes())
                .map_err(|e| ApiError::Internal(e.to_string()))?,
            secret.chars().take(10).collect(),
        ),
        None => (w.secret_sealed.clone(), w.secret_hint.clone()),
    };
    let (shown, url_sealed) = crate::outbound::keep(&state.key, &c.url)?;
    let mut tx = state.db.begin().await?;
    let updated = webhooks::update(
        &mut tx,
        p.tenant(),
        id,
        &NewWebhook {
            url: &shown,
            url_sealed: url_sealed.as_deref(),
            secret_sealed: &sealed,
            secret_hint: &hint,
            events: &c.events,
            min_severity: &c.min_severity,
            min_severity_rank: c.rank,
            agent_filter_tag: c.tag.as_deref(),
        },
    )
    .await?
    .ok_or(ApiError::NotFound("webhook"))?;
    meta.record(
        &mut tx,
        p,
        ev::WEBHOOK_UPDATED,
        format!("webhook:{id}"),
        json!({"url": shown, "events": c.events, "min_severity": c.min_severity,
            "agent_filter_tag": c.tag, "secret_changed": c.secret.is_some()}),
    )
    .await?;
    tx.commit().await?;
    Ok(updated.into())
}

/// Removes an endpoint with its deliveries; audited.
pub async fn delete(state: &AppState, meta: &Meta, admin: &Admin, id: Uuid) -> ApiResult<()> {
    let p = &admin.0;
    let mut tx = state.db.begin().await?;
    let Some(w) = webhooks::get(&mut tx, p.tenant(), id).await? else {
        return Err(ApiError::NotFound("webhook"));
    };
    webhooks::delete(&mut tx, p.tenant(), id).await?;
    meta.record(
        &mut tx,
        p,
        ev::WEBHOOK_DELETED,
        format!("webhook:{id}"),
        json!({"url": w.url}),
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// An endpoint's deliveries, newest first (`limit` 1 to 500, default 100).
pub async fn deliveries(
    state: &AppState,
    admin: &Admin,
    id: Uuid,
    q: DeliveryQuery,
) -> ApiResult<Vec<DeliveryView>> {
    let p = &admin.0;
    let limit = ApiError::page_limit(q.limit, 100, 500)?;
    load(state, p, id).await?;
    let mut c = state.db.conn().await?;
    Ok(webhooks::deliveries(&mut c, p.tenant(), id, limit)
        .await?
        .into_iter()
        .map(DeliveryView::from)
        .collect())
}

/// Sends a finished delivery again (409 while pending, retrying or in cooldown); audited.
pub async fn redeliver(
    state: &AppState,
    meta: &Meta,
    admin: &Admin,
    id: Uuid,
    delivery_id: Uuid,
) -> ApiResult<DeliveryView> {
    let p = &admin.0;
    let now = now();
    let mut tx = state.db.begin().await?;
    let Some(w) = webhooks::get(&mut tx, p.tenant(), id).await? else {
        return Err(ApiError::NotFound("webhook"));
    };
    if webhooks::delivery(&mut tx, p.tenant(), id, delivery_id)
        .await?
        .is_none()
    {
        return Err(ApiError::NotFound("delivery"));
    }
    if let Some(until) = w.cooldown_until.filter(|u| *u > now) {
        return Err(ApiError::Conflict(format!(
            "the endpoint is in cooldown until {}",
            until
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default()
        )));
    }
    if !webhooks::redeliver(&mut tx, p.tenant(), delivery_id, now).await? {
        return Err(ApiError::Conflict(
            "the delivery is still pending or retrying".into(),
        ));
    }
    meta.record(
        &mut tx,
        p,
        ev::WEBHOOK_REDELIVERY_REQUESTED,
        format!("webhook:{id}"),
        json!({"delivery_id": delivery_id}),
    )
    .await?;
    let d = webhooks::delivery(&mut tx, p.tenant(), id, delivery_id)
        .await?
        .ok_or(ApiError::NotFound("delivery"))?;
    tx.commit().await?;
    Ok(d.into())
}

/// Queues a signed `webhook.test` delivery to the endpoint.
pub async fn ping(state: &AppState, admin: &Admin, id: Uuid) -> ApiResult<DeliveryView> {
    let p = &admin.0;
    let now = now();
    let mut tx = state.db.begin().await?;
    let Some(w) = webhooks::get(&mut tx, p.tenant(), id).await? else {
        return Err(ApiError::NotFound("webhook"));
    };
    let body = json!({
        "event": WEBHOOK_TEST,
        "webhook_id": w.id,
        "tenant_id": p.tenant().0,
        "timestamp": now.format(&time::format_description::well_known::Rfc3339).unwrap_or_default(),
    })
    .to_string();
    let delivery_id = Uuid::now_v7();
    webhooks::enqueue(
        &mut tx,
        p.tenant(),
        delivery_id,
        &NewDelivery {
            webhook_id: Some(w.id),
            rule_id: None,
            channel_id: None,
            target_url: &w.url,
            target_url_sealed: w.url_sealed.as_deref(),
            event: WEBHOOK_TEST,
            alert_id: None,
            payload: &body,
            status: webhooks::initial_status(w.cooldown_until, now),
        },
        now,
    )
    .await?;
    let d = webhooks::delivery(&mut tx, p.tenant(), id, delivery_id)
        .await?
        .ok_or(ApiError::NotFound("delivery"))?;
    tx.commit().await?;
    Ok(d.into())
}
