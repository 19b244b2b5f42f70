//! Push monitors' pings (CONTRACT 32): the app calls its secret URL — GET or POST — when a
//! run ends: `status=up` (the default) keeps it up until `interval + grace` from now,
//! `status=down&msg=...` counts a failure with the message in the alert; `/start` notes
//! when a run began so its ping carries the run's duration as `latency_ms` (`ping=<ms>`
//! gives one directly). Counted like every check ([`crate::checks::record`]).

use crate::alerting::Notifier;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::store::apps::{self, CheckResult};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use trusthub_store::TenantId;
use utoipa::{IntoParams, ToSchema};

/// Longest message kept (the rest is cut).
pub const MAX_MSG: usize = 500;

/// What a ping says.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PushQuery {
    /// `up` (the default) or `down`.
    #[param(pattern = "^(up|down)$")]
    pub status: Option<String>,
    /// What happened, up to 500 characters (cut past that): the failure's words in the
    /// alert.
    pub msg: Option<String>,
    /// The run's duration in milliseconds, 0 to 86400000 (else measured from `/start`).
    #[param(minimum = 0, maximum = 86_400_000)]
    pub ping: Option<i64>,
}

/// What the hub recorded.
#[derive(Debug, Serialize, ToSchema)]
pub struct PushAnswer {
    /// `up`, `down` or `started`.
    pub recorded: String,
    /// When a missing next ping starts to count (interval + grace from now).
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub next_deadline: OffsetDateTime,
}

/// Records a ping (or a run's start) for the push monitor whose token is `token`.
pub async fn ping(
    state: &AppState,
    token: &str,
    q: PushQuery,
    start: bool,
    now: OffsetDateTime,
) -> ApiResult<PushAnswer> {
    let up = match q.status.as_deref().map(str::trim) {
        None | Some("up") | Some("") => true,
        Some("down") => false,
        Some(_) => return Err(ApiError::invalid("status", "must be `up` or `down`")),
    };
    if let Some(p) = q.ping
        && !(0..=86_400_000).contains(&p)
    {
        return Err(ApiError::invalid(
            "ping",
            "must be 0 to 86400000 (milliseconds)",
        ));
    }
    let hash = trusthub_core::secret::token_hash(token);
    let mut tx = state.db.begin().await?;
    let app = apps::by_push_token(&mut tx, &hash)
        .await?
        .ok_or(ApiError::NotFound("push monitor"))?;
    let every = time::Duration::seconds(
        app.interval_seconds.unwrap_or(60) + app.grace_seconds.unwrap_or(0),
    );
    let next_deadline = now + every;
    if start {
        apps::set_push_started(&mut tx, app.id, Some(now)).await?;
        tx.commit().await?;
        return Ok(PushAnswer {
            recorded: "started".into(),
            next_deadline: app.next_check_at.unwrap_or(next_deadline),
        });
    }
    let latency_ms = q.ping.or_else(|| {
        app.push_started_at
            .filter(|s| *s <= now)
            .map(|s| i64::try_from((now - s).whole_milliseconds()).unwrap_or(i64::MAX))
    });
    let msg: Option<String> = q
        .msg
        .as_deref()
        .map(|m| {
            m.chars()
                .filter(|c| !c.is_control())
                .take(MAX_MSG)
                .collect()
        })
        .filter(|m: &String| !m.trim().is_empty());
    // Results are kept to the second: a ping in the second of the previous result is the
    // same heartbeat when it says the same, else it is counted a second later (at most a
    // minute ahead: past that, the pinger is told to slow down).
    let mut at = now;
    if let Some(last) = app.last_check_at.filter(|l| *l >= now) {
        if app.last_check_ok == Some(up) && msg.is_none() && latency_ms.is_none() {
            tx.commit().await?;
            return Ok(PushAnswer {
                recorded: if up { "up" } else { "down" }.into(),
                next_deadline: app.next_check_at.unwrap_or(next_deadline),
            });
        }
        at = last + time::Duration::seconds(1);
        if at > now + time::Duration::seconds(60) {
            return Err(ApiError::RateLimited(crate::error::RateInfo {
                limit: 60,
                remaining: 0,
                reset_secs: 60,
            }));
        }
    }
    let next_deadline = at + every;
    let result = CheckResult {
        app_id: app.id,
        checked_at: at,
        ok: up,
        status_code: None,
        latency_ms,
        error: (!up).then(|| match msg {
            Some(m) => format!("the job reported down: {m}"),
            None => "the job reported down".to_owned(),
        }),
    };
    // This app's windows only (the probes job reads every open window once a tick; a ping
    // asks about its own app).
    let quiet = crate::store::timeline::maintenance(&mut tx, TenantId(app.tenant_id), app.id, at)
        .await?
        .iter()
        .any(|w| w.starts_at <= at);
    let mut notifier = Notifier::default();
    crate::checks::record(
        &mut tx,
        &mut notifier,
        &app,
        &result,
        Some(next_deadline),
        None,
        quiet,
        now,
    )
    .await?;
    if app.push_started_at.is_some() {
        apps::set_push_started(&mut tx, app.id, None).await?;
    }
    tx.commit().await?;
    Ok(PushAnswer {
        recorded: if up { "up" } else { "down" }.into(),
        next_deadline,
    })
}

/// Gives a push monitor of `p`'s tenant a new URL (the old one stops answering), audited;
/// the whole URL, shown this once.
pub(crate) async fn rotate(
    state: &AppState,
    meta: &crate::extract::Meta,
    p: &crate::auth::Principal,
    id: uuid::Uuid,
) -> ApiResult<crate::service::apps::AppView> {
    use crate::service::apps::create::{PUSH_TOKEN_PREFIX, push_url};
    let token = trusthub_core::secret::new_token(PUSH_TOKEN_PREFIX)
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    let hash = trusthub_core::secret::token_hash(&token);
    let mut tx = state.db.begin().await?;
    let prefix = &token[..PUSH_TOKEN_PREFIX.len() + 4];
    if !apps::set_push_token(&mut tx, p.tenant(), id, &hash, prefix).await? {
        return Err(match apps::get(&mut tx, p.tenant(), id).await? {
            Some(_) => ApiError::Conflict("only push monitors have a push URL".into()),
            None => ApiError::NotFound("app"),
        });
    }
    meta.record(
        &mut tx,
        p,
        trusthub_core::audit::APP_PUSH_URL_ROTATED,
        format!("app:{id}"),
        serde_json::json!({}),
    )
    .await?;
    tx.commit().await?;
    let mut view = crate::service::apps::load(state, p.tenant(), id).await?;
    view.push_url = Some(push_url(&state.public_url, &token));
    Ok(view)
}
