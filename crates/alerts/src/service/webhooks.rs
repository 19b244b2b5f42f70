//! The webhook services (SPEC 6.1; CONTRACT 6): what the API's handlers and the dashboard's
//! pages both call, with the caller's role as a typed value ([`Admin`]) — the permission is
//! decided once, by [`Admin::of`] or the extractor.

use crate::alerting::WEBHOOK_TEST;
use crate::auth::Admin;
use crate::error::{ApiError, ApiResult};
use crate::extract::Meta;
use crate::routes::webhooks::{
    AgentFilter, DeliveryQuery, DeliveryView, NewWebhookRequest, SECRET_CONTEXT, WebhookPatch,
    WebhookView, check, load,
};
use crate::state::{AppState, now};
use crate::store::webhooks::{self, NewDelivery, NewWebhook};
use serde_json::json;
use trusthub_core::audit as ev;
use uuid::Uuid;

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
    let c = check(state, &merged).await?;
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
    let limit = q.limit.unwrap_or(100);
    if !(1..=500).contains(&limit) {
        return Err(ApiError::invalid("limit", "must be 1 to 500"));
    }
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
