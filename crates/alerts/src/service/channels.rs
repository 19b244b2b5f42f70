//! The services behind [`crate::routes::channels`]: what its handlers, the dashboard's
//! pages and other capabilities call.

use crate::auth::{Admin, Viewer};
use crate::channels::{self, Config, KINDS};
use crate::error::{ApiError, ApiResult, FieldError};
use crate::extract::Meta;
use crate::service::webhooks::{AgentFilter, DeliveryView};
use crate::state::{AppState, now};
use crate::store::channels::Channel;
use crate::store::webhooks::{self, NewDelivery};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::types::Json as SqlJson;
use time::OffsetDateTime;
use trusthub_core::audit as ev;
use utoipa::ToSchema;
use uuid::Uuid;

/// A channel to create.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewChannel {
    /// Label, 1 to 100 characters.
    #[schema(min_length = 1, max_length = 100)]
    pub name: String,
    /// `slack`, `discord`, `teams`, `telegram`, `ntfy`, `email`, `pagerduty` or `webhook`.
    #[schema(pattern = "^(slack|discord|teams|telegram|ntfy|email|pagerduty|webhook)$")]
    pub kind: String,
    /// Per kind: `slack`/`discord`/`teams` `{url}` (the incoming webhook or Teams workflow
    /// URL); `telegram` `{bot_token, chat_id, api_url?}`; `ntfy` `{url, topic, token?}`;
    /// `email` `{to: [addresses]}` (the hub's SMTP relay, `TRUSTHUB_SMTP_URL`);
    /// `pagerduty` `{routing_key, api_url?}`; `webhook` `{url, secret?}` (signed as SPEC 6.1).
    /// Secret fields are sealed and only shown masked.
    #[schema(value_type = Object)]
    pub config: Value,
    /// `alert.created` and/or `alert.resolved` (default both).
    #[schema(value_type = Option<Vec<crate::openapi::AlertEventName>>, min_items = 1)]
    pub events: Option<Vec<String>>,
    /// Lowest severity sent: `info`, `warning` (default) or `critical`.
    #[schema(pattern = r"^(info|warning|critical)$")]
    pub min_severity: Option<String>,
    /// Only alerts whose agent has this tag.
    pub agent_filter: Option<AgentFilter>,
}

/// Changes to a channel (merge patch): absent fields stay; a `config` replaces the whole
/// config (secrets included); `agent_filter: null` removes the filter.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChannelPatch {
    /// New label.
    #[schema(min_length = 1, max_length = 100)]
    pub name: Option<String>,
    /// New config (whole), with the fields of the channel's kind (as `config` of
    /// `NewChannel`).
    #[schema(schema_with = crate::channels::any_config)]
    pub config: Option<Value>,
    /// New events.
    #[schema(value_type = Option<Vec<crate::openapi::AlertEventName>>, min_items = 1)]
    pub events: Option<Vec<String>>,
    /// New lowest severity.
    #[schema(pattern = r"^(info|warning|critical)$")]
    pub min_severity: Option<String>,
    /// New filter; null removes it.
    #[serde(default, deserialize_with = "crate::extract::present")]
    pub agent_filter: Option<Option<AgentFilter>>,
}

/// A channel (secrets masked).
#[derive(Debug, Serialize, ToSchema)]
pub struct ChannelView {
    /// Id.
    pub id: Uuid,
    /// Label.
    pub name: String,
    /// Kind.
    pub kind: String,
    /// Config with secret fields masked (`***` and the last four characters).
    #[schema(value_type = Object)]
    pub config: Value,
    /// Events sent.
    pub events: Vec<String>,
    /// Lowest severity sent.
    pub min_severity: String,
    /// Only alerts of agents with this tag.
    pub agent_filter: Option<AgentFilter>,
    /// Created.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Last changed.
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    /// The signing secret the hub generated for a `webhook` channel created without one:
    /// in the creation's answer only, this once (CONTRACT 33).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

impl From<Channel> for ChannelView {
    fn from(c: Channel) -> Self {
        ChannelView {
            id: c.id,
            name: c.name,
            kind: c.kind,
            config: c.config_shown.0,
            events: c.events.0,
            min_severity: c.min_severity,
            agent_filter: c.agent_filter_tag.map(|tag| AgentFilter { tag }),
            created_at: c.created_at,
            updated_at: c.updated_at,
            secret: None,
        }
    }
}

/// Checks a channel's settings (every bad field in one 422) and seals its config; with it
/// the signing secret generated for a webhook sent without one.
pub(crate) async fn checked(
    state: &AppState,
    req: &NewChannel,
    tenant: Uuid,
    id: Uuid,
    now: OffsetDateTime,
) -> ApiResult<(Channel, Option<String>)> {
    let generated = std::cell::RefCell::new(None::<String>);
    let mut errors = Vec::new();
    let mut err = |field: &str, m: String| errors.push(FieldError::new(field, m));
    let name = trusthub_core::validate::name(&req.name)
        .map_err(|m| err("name", m.into()))
        .unwrap_or_default();
    let config = if KINDS.contains(&req.kind.as_str()) {
        match channels::parse(&req.kind, &req.config, || {
            let secret = trusthub_core::secret::random_bytes::<32>()
                .map(|b| format!("whsec_{}", data_encoding::BASE64.encode(&b)))
                .unwrap_or_default();
            *generated.borrow_mut() = Some(secret.clone());
            secret
        }) {
            Ok(c) => Some(c),
            Err((field, m)) => {
                err(&field, m);
                None
            }
        }
    } else {
        err("kind", format!("must be one of {}", KINDS.join(", ")));
        None
    };
    if let Some(c) = &config {
        let policy = crate::outbound::Policy::of_tenant(
            &state.settings,
            &mut state.db.conn().await?,
            trusthub_store::TenantId(tenant),
        )
        .await?;
        for u in c.urls() {
            if let Err(m) = policy.check_url(&u).await {
                let field = match c {
                    Config::Telegram { .. } | Config::PagerDuty { .. } => "config.api_url",
                    _ => "config.url",
                };
                errors.push(FieldError::new(field, m));
            }
        }
        if matches!(c, Config::Email { .. }) && state.mailer.is_none() {
            errors.push(FieldError::new(
                "kind",
                "e-mail needs the hub's SMTP relay: set TRUSTHUB_SMTP_URL",
            ));
        }
    }
    let (events, min_severity, rank, tag) = crate::service::webhooks::subscription(
        &[
            crate::alerting::ALERT_CREATED,
            crate::alerting::ALERT_RESOLVED,
            crate::alerting::INCIDENT_CREATED,
            crate::alerting::INCIDENT_UPDATED,
        ],
        &[
            crate::alerting::ALERT_CREATED,
            crate::alerting::ALERT_RESOLVED,
        ],
        req.events.as_deref(),
        req.min_severity.as_deref(),
        req.agent_filter.as_ref(),
        &mut errors,
    );
    let (Some(config), true) = (config, errors.is_empty()) else {
        return Err(ApiError::Validation(errors));
    };
    let whole = serde_json::to_vec(&config).map_err(|e| ApiError::Internal(e.to_string()))?;
    let sealed = state
        .key
        .seal(channels::SEAL_CONTEXT, &whole)
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    let channel = Channel {
        id,
        tenant_id: tenant,
        name,
        kind: req.kind.clone(),
        config_shown: SqlJson(config.shown()),
        config_sealed: sealed,
        events: SqlJson(events),
        min_severity,
        min_severity_rank: rank,
        agent_filter_tag: tag,
        created_at: now,
        updated_at: now,
    };
    Ok((channel, generated.into_inner()))
}

pub(crate) async fn load(state: &AppState, admin: &Admin, id: Uuid) -> ApiResult<Channel> {
    let mut c = state.db.conn().await?;
    crate::store::channels::get(&mut c, admin.0.tenant(), id)
        .await?
        .ok_or(ApiError::NotFound("notification channel"))
}

/// Creates a channel for the admin's tenant; audited.
pub async fn create(
    state: &AppState,
    meta: &Meta,
    admin: &Admin,
    req: NewChannel,
) -> ApiResult<ChannelView> {
    let p = &admin.0;
    let now = now();
    let (ch, generated) = checked(state, &req, p.tenant().0, Uuid::now_v7(), now).await?;
    let mut tx = state.db.begin().await?;
    crate::store::channels::insert(&mut tx, &ch).await?;
    meta.record(
        &mut tx,
        p,
        ev::CHANNEL_CREATED,
        format!("notification_channel:{}", ch.id),
        json!({"name": ch.name, "kind": ch.kind, "config": ch.config_shown.0}),
    )
    .await?;
    tx.commit().await?;
    let mut view = ChannelView::from(ch);
    view.secret = generated;
    Ok(view)
}

/// The tenant's channels.
pub async fn list(state: &AppState, by: &Viewer) -> ApiResult<Vec<ChannelView>> {
    let mut c = state.db.conn().await?;
    Ok(crate::store::channels::list(&mut c, by.0.tenant())
        .await?
        .into_iter()
        .map(ChannelView::from)
        .collect())
}

/// Changes a channel: only the fields sent, checked like at creation; audited.
pub async fn update(
    state: &AppState,
    meta: &Meta,
    admin: &Admin,
    id: Uuid,
    patch: ChannelPatch,
) -> ApiResult<ChannelView> {
    let p = &admin.0;
    let old = load(state, admin, id).await?;
    let config = match patch.config {
        Some(c) => c,
        None => {
            let whole = state
                .key
                .open(channels::SEAL_CONTEXT, &old.config_sealed)
                .map_err(|_| {
                    ApiError::Internal("the channel's config cannot be unsealed".into())
                })?;
            let cfg: Config =
                serde_json::from_slice(&whole).map_err(|e| ApiError::Internal(e.to_string()))?;
            unsealed_input(&cfg)
        }
    };
    let merged = NewChannel {
        name: patch.name.unwrap_or_else(|| old.name.clone()),
        kind: old.kind.clone(),
        config,
        events: Some(patch.events.unwrap_or_else(|| old.events.0.clone())),
        min_severity: Some(
            patch
                .min_severity
                .unwrap_or_else(|| old.min_severity.clone()),
        ),
        agent_filter: match patch.agent_filter {
            Some(f) => f,
            None => old.agent_filter_tag.clone().map(|tag| AgentFilter { tag }),
        },
    };
    let now = now();
    let (mut ch, _) = checked(state, &merged, p.tenant().0, id, now).await?;
    ch.created_at = old.created_at;
    let mut tx = state.db.begin().await?;
    if !crate::store::channels::update(&mut tx, &ch).await? {
        return Err(ApiError::NotFound("notification channel"));
    }
    meta.record(
        &mut tx,
        p,
        ev::CHANNEL_UPDATED,
        format!("notification_channel:{id}"),
        json!({"name": ch.name, "kind": ch.kind, "config": ch.config_shown.0}),
    )
    .await?;
    tx.commit().await?;
    Ok(ch.into())
}

/// The input form of a stored config (to check it again when other fields change).
pub(crate) fn unsealed_input(c: &Config) -> Value {
    let mut v = serde_json::to_value(c).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut v {
        m.remove("form");
        if m.get("token").is_some_and(Value::is_null) {
            m.remove("token");
        }
    }
    v
}

/// Deletes a channel and its deliveries; audited.
pub async fn delete(state: &AppState, meta: &Meta, admin: &Admin, id: Uuid) -> ApiResult<()> {
    let p = &admin.0;
    let mut tx = state.db.begin().await?;
    let Some(ch) = crate::store::channels::get(&mut tx, p.tenant(), id).await? else {
        return Err(ApiError::NotFound("notification channel"));
    };
    crate::store::channels::delete(&mut tx, p.tenant(), id).await?;
    meta.record(
        &mut tx,
        p,
        ev::CHANNEL_DELETED,
        format!("notification_channel:{id}"),
        json!({"name": ch.name, "kind": ch.kind}),
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Queues a test message to the channel (an `alert.created`-shaped body about no real
/// alert, event `test`); the answer is the delivery, which the deliverer sends at once.
pub async fn test(state: &AppState, admin: &Admin, id: Uuid) -> ApiResult<DeliveryView> {
    let p = &admin.0;
    let ch = load(state, admin, id).await?;
    let now = now();
    let body = json!({
        "event": "test",
        "alert": {
            "id": Uuid::nil(), "severity": "warning", "category": "test",
            "title": format!("the channel “{}” works", ch.name),
            "detail": "Sent from the hub's notification settings. Real alerts look like this.",
            "source": "test", "fingerprint": format!("test:{}", ch.id), "agent": null,
            "created_at": trusthub_platform::state::rfc3339(now), "is_resolved": false,
        },
        "tenant_id": p.tenant().0,
        "timestamp": trusthub_platform::state::rfc3339(now),
    })
    .to_string();
    let delivery = Uuid::now_v7();
    let target = format!("{}: {}", ch.kind, ch.name);
    let mut tx = state.db.begin().await?;
    webhooks::enqueue(
        &mut tx,
        p.tenant(),
        delivery,
        &NewDelivery {
            webhook_id: None,
            rule_id: None,
            channel_id: Some(ch.id),
            target_url: &target,
            target_url_sealed: None,
            event: "test",
            alert_id: None,
            payload: &body,
            status: webhooks::status::PENDING,
        },
        now,
    )
    .await?;
    let d = webhooks::channel_deliveries(&mut tx, p.tenant(), ch.id, 1)
        .await?
        .into_iter()
        .next()
        .ok_or(ApiError::NotFound("delivery"))?;
    tx.commit().await?;
    Ok(d.into())
}

/// A channel's deliveries, newest first: `limit` 1 to 500 (default 100).
pub async fn deliveries(
    state: &AppState,
    admin: &Admin,
    id: Uuid,
    limit: Option<i64>,
) -> ApiResult<Vec<DeliveryView>> {
    let limit = ApiError::page_limit(limit, 100, 500)?;
    let ch = load(state, admin, id).await?;
    let mut c = state.db.conn().await?;
    Ok(
        webhooks::channel_deliveries(&mut c, admin.0.tenant(), ch.id, limit)
            .await?
            .into_iter()
            .map(DeliveryView::from)
            .collect(),
    )
}
