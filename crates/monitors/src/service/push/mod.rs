//! Push monitors' pings (CONTRACT 32): the app calls its secret URL — GET or POST — when a
//! run ends: `status=up` (the default) keeps it up until `interval + grace` from now,
//! `status=down&msg=...` counts a failure with the message in the alert; `/start` notes
//! when a run began so its ping carries the run's duration as `latency_ms` (`ping=<ms>`
//! gives one directly). Counted like every check ([`crate::checks::record`]), a batch of
//! pings at a time ([`batch`]).

mod batch;

pub use batch::Pings;

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::store::apps;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
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
    let ping = batch::Ping {
        hash: trusthub_core::secret::token_hash(token),
        up,
        msg,
        ping_ms: q.ping,
        start,
        now,
    };
    batch::submit(state, ping).await
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
