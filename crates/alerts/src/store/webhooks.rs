//! Webhook endpoints (SPEC 2.6; CONTRACT 6) and the delivery outbox (SPEC 3.3): every
//! delivery is a row written in the transaction that changed the alert; deliverers claim due
//! rows (`FOR UPDATE SKIP LOCKED` on PostgreSQL, so each is sent by one process), send, and
//! record the outcome.

use sqlx::types::Json;
use time::OffsetDateTime;
use trusthub_store::{Exec, Handle, StoreResult, TenantId, on};
use uuid::Uuid;

/// An endpoint as stored (the secret sealed).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Webhook {
    /// Id.
    pub id: Uuid,
    /// Tenant.
    pub tenant_id: Uuid,
    /// Target (`https://***@host/...` when it holds userinfo).
    pub url: String,
    /// The whole URL sealed with the hub key, when it holds userinfo.
    pub url_sealed: Option<Vec<u8>>,
    /// The secret, sealed with the hub key.
    pub secret_sealed: Vec<u8>,
    /// First characters of the secret, to recognise it.
    pub secret_hint: String,
    /// Subscribed events.
    pub events: Json<Vec<String>>,
    /// Lowest severity delivered.
    pub min_severity: String,
    /// Its rank.
    pub min_severity_rank: i64,
    /// Only alerts of agents with this tag.
    pub agent_filter_tag: Option<String>,
    /// Created.
    pub created_at: OffsetDateTime,
    /// In cooldown until then.
    pub cooldown_until: Option<OffsetDateTime>,
}

const COLUMNS: &str = "id, tenant_id, url, url_sealed, secret_sealed, secret_hint, events, min_severity, min_severity_rank, \
    agent_filter_tag, created_at, cooldown_until";

/// An endpoint to create.
#[derive(Debug, Clone)]
pub struct NewWebhook<'a> {
    /// Target as shown.
    pub url: &'a str,
    /// The whole URL sealed, when it holds userinfo.
    pub url_sealed: Option<&'a [u8]>,
    /// Sealed secret.
    pub secret_sealed: &'a [u8],
    /// Hint.
    pub secret_hint: &'a str,
    /// Events.
    pub events: &'a [String],
    /// Lowest severity.
    pub min_severity: &'a str,
    /// Its rank.
    pub min_severity_rank: i64,
    /// Tag filter.
    pub agent_filter_tag: Option<&'a str>,
}

/// Stores an endpoint.
pub async fn insert(
    ex: &mut impl Exec,
    tenant: TenantId,
    w: &NewWebhook<'_>,
    now: OffsetDateTime,
) -> StoreResult<Webhook> {
    let sql = format!(
        "INSERT INTO webhooks (id, tenant_id, url, secret_sealed, secret_hint, events, min_severity, min_severity_rank, \
         agent_filter_tag, created_at, url_sealed) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING {COLUMNS}"
    );
    Ok(
        on!(ex, c => sqlx::query_as::<_, Webhook>(sqlx::AssertSqlSafe(sql))
        .bind(Uuid::now_v7()).bind(tenant.0).bind(w.url).bind(w.secret_sealed).bind(w.secret_hint)
        .bind(Json(w.events)).bind(w.min_severity).bind(w.min_severity_rank).bind(w.agent_filter_tag).bind(now)
        .bind(w.url_sealed).fetch_one(&mut *c).await?),
    )
}

/// The tenant's endpoints.
pub async fn list(ex: &mut impl Exec, tenant: TenantId) -> StoreResult<Vec<Webhook>> {
    let sql = format!("SELECT {COLUMNS} FROM webhooks WHERE tenant_id = $1 ORDER BY id");
    Ok(
        on!(ex, c => sqlx::query_as::<_, Webhook>(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).fetch_all(&mut *c).await?),
    )
}

/// One endpoint of the tenant.
pub async fn get(ex: &mut impl Exec, tenant: TenantId, id: Uuid) -> StoreResult<Option<Webhook>> {
    let sql = format!("SELECT {COLUMNS} FROM webhooks WHERE tenant_id = $1 AND id = $2");
    Ok(
        on!(ex, c => sqlx::query_as::<_, Webhook>(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).bind(id).fetch_optional(&mut *c).await?),
    )
}

/// Replaces an endpoint's settings (`secret_sealed`/`secret_hint` kept when `None`); a
/// changed endpoint starts without cooldown. The updated row, or `None` when absent.
pub async fn update(
    ex: &mut impl Exec,
    tenant: TenantId,
    id: Uuid,
    w: &NewWebhook<'_>,
) -> StoreResult<Option<Webhook>> {
    let sql = format!(
        "UPDATE webhooks SET url = $3, secret_sealed = $4, secret_hint = $5, events = $6, min_severity = $7, \
         min_severity_rank = $8, agent_filter_tag = $9, cooldown_until = NULL, url_sealed = $10 \
         WHERE tenant_id = $1 AND id = $2 RETURNING {COLUMNS}"
    );
    Ok(
        on!(ex, c => sqlx::query_as::<_, Webhook>(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).bind(id).bind(w.url).bind(w.secret_sealed).bind(w.secret_hint)
        .bind(Json(w.events)).bind(w.min_severity).bind(w.min_severity_rank).bind(w.agent_filter_tag)
        .bind(w.url_sealed).fetch_optional(&mut *c).await?),
    )
}

/// Removes an endpoint and its deliveries.
pub async fn delete(ex: &mut impl Exec, tenant: TenantId, id: Uuid) -> StoreResult<bool> {
    Ok(
        on!(ex, c => sqlx::query("DELETE FROM webhooks WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.0).bind(id).execute(&mut *c).await?.rows_affected())
            == 1,
    )
}

/// Starts an endpoint's cooldown.
pub async fn set_cooldown(ex: &mut impl Exec, id: Uuid, until: OffsetDateTime) -> StoreResult<()> {
    on!(ex, c => sqlx::query("UPDATE webhooks SET cooldown_until = $2 WHERE id = $1")
        .bind(id).bind(until).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// Delivery states (SPEC 3.3).
pub mod status {
    /// Waiting for its first attempt.
    pub const PENDING: &str = "pending";
    /// Failed at least once; another attempt is scheduled.
    pub const RETRYING: &str = "retrying";
    /// A 2xx came back.
    pub const SUCCEEDED: &str = "succeeded";
    /// Every attempt failed.
    pub const FAILED: &str = "failed";
    /// Not sent: the endpoint was in cooldown.
    pub const SKIPPED: &str = "skipped";
}

/// The state a new delivery starts in: `pending`, or `skipped` while the endpoint rests
/// after a final failure (SPEC 3.3).
pub fn initial_status(cooldown_until: Option<OffsetDateTime>, now: OffsetDateTime) -> &'static str {
    if trusthub_core::webhook::in_cooldown(cooldown_until, now) {
        status::SKIPPED
    } else {
        status::PENDING
    }
}

/// A delivery as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Delivery {
    /// Id: `X-Service-Delivery` and `webhook-id`, the same on every attempt.
    pub id: Uuid,
    /// Tenant.
    pub tenant_id: Uuid,
    /// Endpoint (`None` for alert-rule webhooks).
    pub webhook_id: Option<Uuid>,
    /// Rule (alert-rule webhooks).
    pub rule_id: Option<Uuid>,
    /// Where it goes.
    pub target_url: String,
    /// Event name.
    pub event: String,
    /// The alert it is about.
    pub alert_id: Option<Uuid>,
    /// The exact body.
    pub payload: String,
    /// State.
    pub status: String,
    /// Attempts made.
    pub attempts: i64,
    /// Next attempt (while pending or retrying).
    pub next_attempt_at: Option<OffsetDateTime>,
    /// Last attempt.
    pub last_attempt_at: Option<OffsetDateTime>,
    /// Last HTTP status.
    pub last_status_code: Option<i64>,
    /// Last error.
    pub last_error: Option<String>,
    /// Created.
    pub created_at: OffsetDateTime,
    /// When it succeeded, failed or was skipped.
    pub completed_at: Option<OffsetDateTime>,
}

const DELIVERY_COLUMNS: &str = "id, tenant_id, webhook_id, rule_id, target_url, event, alert_id, payload, status, \
    attempts, next_attempt_at, last_attempt_at, last_status_code, last_error, created_at, completed_at";

/// A delivery to enqueue.
#[derive(Debug, Clone)]
pub struct NewDelivery<'a> {
    /// Endpoint.
    pub webhook_id: Option<Uuid>,
    /// Rule.
    pub rule_id: Option<Uuid>,
    /// Notification channel.
    pub channel_id: Option<Uuid>,
    /// Target as shown.
    pub target_url: &'a str,
    /// The whole target sealed, when it holds userinfo.
    pub target_url_sealed: Option<&'a [u8]>,
    /// Event.
    pub event: &'a str,
    /// Alert.
    pub alert_id: Option<Uuid>,
    /// Exact body.
    pub payload: &'a str,
    /// `pending`, or `skipped` during a cooldown.
    pub status: &'a str,
}

/// Enqueues a delivery (call it in the transaction that made the event).
pub async fn enqueue(
    ex: &mut impl Exec,
    tenant: TenantId,
    id: Uuid,
    d: &NewDelivery<'_>,
    now: OffsetDateTime,
) -> StoreResult<()> {
    let pending = d.status == status::PENDING;
    let next = pending.then_some(now);
    let completed = (!pending).then_some(now);
    on!(ex, c => sqlx::query(
        "INSERT INTO webhook_deliveries (id, tenant_id, webhook_id, rule_id, target_url, event, alert_id, payload, status, \
         next_attempt_at, created_at, completed_at, target_url_sealed, channel_id) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)")
        .bind(id).bind(tenant.0).bind(d.webhook_id).bind(d.rule_id).bind(d.target_url).bind(d.event)
        .bind(d.alert_id).bind(d.payload).bind(d.status).bind(next).bind(now).bind(completed).bind(d.target_url_sealed)
        .bind(d.channel_id)
        .execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// An endpoint's deliveries, newest first.
pub async fn deliveries(
    ex: &mut impl Exec,
    tenant: TenantId,
    webhook_id: Uuid,
    limit: i64,
) -> StoreResult<Vec<Delivery>> {
    let sql = format!(
        "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries WHERE tenant_id = $1 AND webhook_id = $2 \
         ORDER BY created_at DESC, id DESC LIMIT $3"
    );
    Ok(
        on!(ex, c => sqlx::query_as::<_, Delivery>(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).bind(webhook_id).bind(limit).fetch_all(&mut *c).await?),
    )
}

/// A notification channel's deliveries, newest first.
pub async fn channel_deliveries(
    ex: &mut impl Exec,
    tenant: TenantId,
    channel_id: Uuid,
    limit: i64,
) -> StoreResult<Vec<Delivery>> {
    let sql = format!(
        "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries WHERE tenant_id = $1 AND channel_id = $2 \
         ORDER BY created_at DESC, id DESC LIMIT $3"
    );
    Ok(
        on!(ex, c => sqlx::query_as::<_, Delivery>(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).bind(channel_id).bind(limit).fetch_all(&mut *c).await?),
    )
}

/// One delivery of an endpoint of the tenant.
pub async fn delivery(
    ex: &mut impl Exec,
    tenant: TenantId,
    webhook_id: Uuid,
    id: Uuid,
) -> StoreResult<Option<Delivery>> {
    let sql = format!(
        "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries WHERE tenant_id = $1 AND webhook_id = $2 AND id = $3"
    );
    Ok(
        on!(ex, c => sqlx::query_as::<_, Delivery>(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).bind(webhook_id).bind(id).fetch_optional(&mut *c).await?),
    )
}

/// Queues a finished delivery again (same id, attempts from zero); false when it is still
/// pending or retrying.
pub async fn redeliver(
    ex: &mut impl Exec,
    tenant: TenantId,
    id: Uuid,
    now: OffsetDateTime,
) -> StoreResult<bool> {
    Ok(on!(ex, c => sqlx::query(
        "UPDATE webhook_deliveries SET status = 'pending', attempts = 0, next_attempt_at = $3, completed_at = NULL \
         WHERE tenant_id = $1 AND id = $2 AND status NOT IN ('pending', 'retrying')")
        .bind(tenant.0).bind(id).bind(now).execute(&mut *c).await?.rows_affected())
        == 1)
}

/// A claimed delivery with what sending it needs.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Due {
    /// Id.
    pub id: Uuid,
    /// Tenant.
    pub tenant_id: Uuid,
    /// Endpoint.
    pub webhook_id: Option<Uuid>,
    /// Rule.
    pub rule_id: Option<Uuid>,
    /// Notification channel.
    pub channel_id: Option<Uuid>,
    /// Target as shown.
    pub target_url: String,
    /// The whole target sealed, when it holds userinfo.
    pub target_url_sealed: Option<Vec<u8>>,
    /// Event.
    pub event: String,
    /// Exact body.
    pub payload: String,
    /// Attempts before this one.
    pub attempts: i64,
    /// The endpoint's sealed secret (`None` for alert-rule webhooks).
    pub secret_sealed: Option<Vec<u8>>,
    /// The endpoint's cooldown.
    pub cooldown_until: Option<OffsetDateTime>,
}

/// Whether any delivery is due (a read: the deliverer polls twice a second and takes the
/// write transaction of [`claim_due`] only when there is something to claim, so that on SQLite
/// it does not queue for the one writer behind, or ahead of, ingest).
pub async fn any_due(ex: &mut impl Exec, now: OffsetDateTime) -> StoreResult<bool> {
    Ok(on!(ex, c => sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM webhook_deliveries WHERE status IN ('pending', 'retrying') \
         AND next_attempt_at <= $1)")
        .bind(now).fetch_one(&mut *c).await?))
}

/// Claims up to `limit` due deliveries: their next attempt moves to `lease_until`, so a
/// process that dies while sending leaves them to be retried (same id) by another.
pub async fn claim_due(
    ex: &mut impl Exec,
    now: OffsetDateTime,
    lease_until: OffsetDateTime,
    limit: i64,
) -> StoreResult<Vec<Due>> {
    let pick = "SELECT id FROM webhook_deliveries WHERE status IN ('pending', 'retrying') AND next_attempt_at <= $1 \
        ORDER BY next_attempt_at LIMIT $3";
    let sql = |lock: &str| {
        format!(
            "WITH picked AS ({pick}{lock}), claimed AS (UPDATE webhook_deliveries d SET next_attempt_at = $2 \
             FROM picked WHERE d.id = picked.id RETURNING d.id, d.tenant_id, d.webhook_id, d.rule_id, d.channel_id, d.target_url, \
             d.target_url_sealed, d.event, d.payload, d.attempts) \
             SELECT c.id, c.tenant_id, c.webhook_id, c.rule_id, c.channel_id, c.target_url, c.target_url_sealed, c.event, c.payload, c.attempts, \
             w.secret_sealed, w.cooldown_until FROM claimed c LEFT JOIN webhooks w ON w.id = c.webhook_id"
        )
    };
    Ok(match ex.handle() {
        Handle::Postgres(c) => {
            sqlx::query_as::<_, Due>(sqlx::AssertSqlSafe(sql(" FOR UPDATE SKIP LOCKED")))
                .bind(now)
                .bind(lease_until)
                .bind(limit)
                .fetch_all(&mut *c)
                .await?
        }
        Handle::Sqlite(c) => {
            // One writer: claiming and reading in one transaction is already exclusive.
            let ids: Vec<Uuid> = sqlx::query_scalar(sqlx::AssertSqlSafe(pick))
                .bind(now)
                .bind(lease_until)
                .bind(limit)
                .fetch_all(&mut *c)
                .await?;
            let mut out = Vec::with_capacity(ids.len());
            for id in ids {
                sqlx::query("UPDATE webhook_deliveries SET next_attempt_at = $2 WHERE id = $1")
                    .bind(id)
                    .bind(lease_until)
                    .execute(&mut *c)
                    .await?;
                out.push(
                    sqlx::query_as::<_, Due>(
                        "SELECT d.id, d.tenant_id, d.webhook_id, d.rule_id, d.channel_id, d.target_url, d.target_url_sealed, d.event, d.payload, d.attempts, \
                         w.secret_sealed, w.cooldown_until FROM webhook_deliveries d LEFT JOIN webhooks w ON w.id = d.webhook_id \
                         WHERE d.id = $1",
                    )
                    .bind(id)
                    .fetch_one(&mut *c)
                    .await?,
                );
            }
            out
        }
    })
}

/// The outcome of one attempt.
#[derive(Debug, Clone)]
pub struct Attempt<'a> {
    /// New state.
    pub status: &'a str,
    /// When to try again (retrying).
    pub next_attempt_at: Option<OffsetDateTime>,
    /// HTTP status, when one came.
    pub status_code: Option<i64>,
    /// Why it failed.
    pub error: Option<&'a str>,
    /// Whether an attempt was made (false when skipped for a cooldown).
    pub attempted: bool,
}

/// Records an attempt.
pub async fn record_attempt(
    ex: &mut impl Exec,
    id: Uuid,
    a: &Attempt<'_>,
    now: OffsetDateTime,
) -> StoreResult<()> {
    let done = matches!(
        a.status,
        status::SUCCEEDED | status::FAILED | status::SKIPPED
    );
    let inc = i64::from(a.attempted);
    on!(ex, c => sqlx::query(
        "UPDATE webhook_deliveries SET status = $2, next_attempt_at = $3, attempts = attempts + $4, \
         last_attempt_at = CASE WHEN $4 = 1 THEN $5 ELSE last_attempt_at END, \
         last_status_code = CASE WHEN $4 = 1 THEN $6 ELSE last_status_code END, \
         last_error = CASE WHEN $4 = 1 THEN $7 ELSE last_error END, completed_at = $8 WHERE id = $1")
        .bind(id).bind(a.status).bind(a.next_attempt_at).bind(inc).bind(now).bind(a.status_code)
        .bind(a.error).bind(done.then_some(now)).execute(&mut *c).await?.rows_affected());
    Ok(())
}
