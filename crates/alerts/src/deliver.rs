//! The webhook deliverer (SPEC 3.3; CONTRACT 6). It runs in every process; claiming due
//! rows with `FOR UPDATE SKIP LOCKED` sends each delivery from one of them.

use crate::state::{AppState, now};
use crate::store::webhooks::{self, Attempt, Due, status};
use serde_json::json;
use std::time::Duration;
use time::OffsetDateTime;
use trusthub_core::webhook::{self as hook, AfterFailure};
use trusthub_store::{StoreResult, TenantId, audit};

/// Most deliveries one pass claims.
const CLAIM: i64 = 16;

pub async fn deliverer(state: AppState) {
    let client = match client_of(&state, &crate::outbound::Policy::of(&state.settings)) {
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

/// The client of deliveries under `policy`: no redirects, its resolver, the timeout.
fn client_of(
    state: &AppState,
    policy: &crate::outbound::Policy,
) -> reqwest::Result<reqwest::Client> {
    let secs = crate::settings::of(&state.settings).webhook_timeout_secs;
    policy
        .client()
        .timeout(Duration::from_secs(secs.max(1)))
        .build()
}

/// Claims and sends the deliveries due now; answers how many were attempted or skipped.
pub async fn deliver_due(state: &AppState, client: &reqwest::Client) -> StoreResult<usize> {
    let now = now();
    let lease = now
        + time::Duration::seconds(
            crate::settings::of(&state.settings).webhook_timeout_secs as i64 + 60,
        );
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
    // The tenant's private networks (CONTRACT 33): a tenant whose owner narrowed them gets a
    // client whose resolver knows it.
    let policy =
        crate::outbound::Policy::of_tenant(&state.settings, &mut state.db.conn().await?, tenant)
            .await?;
    let narrowed = match policy.is_narrowed() {
        true => match client_of(state, &policy) {
            Ok(c) => Some(c),
            Err(e) => {
                // Never the operator's wider client: the claim's lease runs out and it is retried.
                tracing::warn!(error = %e, "cannot build a tenant's delivery client");
                return Ok(());
            }
        },
        false => None,
    };
    let client = narrowed.as_ref().unwrap_or(client);
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
    let outcome = match d.channel_id {
        Some(channel) => send_channel(state, client, &policy, &d, channel).await,
        None => {
            let secret = match &d.secret_sealed {
                Some(sealed) => match state
                    .key
                    .open(crate::service::webhooks::SECRET_CONTEXT, sealed)
                {
                    Ok(s) => Some(String::from_utf8_lossy(&s).into_owned()),
                    Err(_) => None,
                },
                None => None,
            };
            // Checked at every attempt: the operator's allowed ranges may have changed.
            let target =
                crate::outbound::to_call(&state.key, &d.target_url, d.target_url_sealed.as_deref());
            match target.and_then(|t| policy.check_target(&t).map(|()| t)) {
                Err(e) => Err(e),
                Ok(t) => send(client, &d, &t, secret.as_deref()).await,
            }
        }
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
            &crate::settings::of(&state.settings)
                .webhook_retry_schedule
                .0,
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
        _ if d.channel_id.is_some() => {
            format!("notification_channel:{}", d.channel_id.unwrap_or_default())
        }
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
                Duration::from_secs(crate::settings::of(&state.settings).webhook_cooldown_secs),
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
async fn send(
    client: &reqwest::Client,
    d: &Due,
    target: &str,
    secret: Option<&str>,
) -> Result<u16, String> {
    let ts = OffsetDateTime::now_utc().unix_timestamp();
    let id = d.id.to_string();
    let mut req = client
        .post(target)
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

/// Sends one delivery of a notification channel in the service's own format (CONTRACT 27).
async fn send_channel(
    state: &AppState,
    client: &reqwest::Client,
    policy: &crate::outbound::Policy,
    d: &Due,
    channel: uuid::Uuid,
) -> Result<u16, String> {
    use crate::channels::{self, Config, Outgoing};
    let ch = {
        let mut c = state.db.conn().await.map_err(|e| e.to_string())?;
        crate::store::channels::by_id(&mut c, channel)
            .await
            .map_err(|e| e.to_string())?
    }
    .ok_or("the channel was deleted")?;
    let sealed = state
        .key
        .open(channels::SEAL_CONTEXT, &ch.config_sealed)
        .map_err(|_| "the channel's config cannot be unsealed with the hub key".to_owned())?;
    let config: Config = serde_json::from_slice(&sealed)
        .map_err(|e| format!("the channel's config cannot be read: {e}"))?;
    let alert = serde_json::from_str::<serde_json::Value>(&d.payload)
        .ok()
        .and_then(|v| v["alert"]["id"].as_str().map(str::to_owned));
    let base = state.public_url.trim_end_matches('/');
    // A notice names its own page (an incident's status page); an alert its page here.
    let own_link = serde_json::from_str::<serde_json::Value>(&d.payload)
        .ok()
        .and_then(|v| v["link"].as_str().map(str::to_owned))
        .filter(|l| l.starts_with(base));
    let link = match (own_link, alert) {
        (Some(l), _) => l,
        (None, Some(id)) if d.event != "test" => format!("{base}/ui/alerts/{id}"),
        _ => format!("{base}/ui/alerts"),
    };
    match channels::render(&ch.kind, &config, &d.payload, &link)? {
        Outgoing::Post { url, headers, body } => {
            policy.check_target(&url)?;
            let mut req = client
                .post(&url)
                .header("content-type", "application/json")
                .header(
                    "user-agent",
                    concat!("Trusthub/", env!("CARGO_PKG_VERSION")),
                );
            for (k, v) in headers {
                req = req.header(k, v);
            }
            match req.body(body.to_string()).send().await {
                Ok(resp) => Ok(resp.status().as_u16()),
                // Never the URL: Telegram's holds the bot token.
                Err(e) => Err(describe(&e.without_url())),
            }
        }
        Outgoing::Signed { url, secret, body } => {
            policy.check_target(&url)?;
            let mut signed = d.clone();
            signed.payload = body;
            send(client, &signed, &url, Some(&secret)).await
        }
        Outgoing::Mail { to, subject, body } => {
            let mailer = state
                .mailer
                .as_ref()
                .ok_or("no SMTP relay is set (TRUSTHUB_SMTP_URL)")?;
            mailer.send(&to, &subject, body).await.map(|()| 250)
        }
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
