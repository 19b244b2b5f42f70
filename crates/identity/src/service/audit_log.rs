//! The services behind [`crate::routes::audit_log`]: what its handlers, the dashboard's
//! pages and other capabilities call.

use crate::auth::Admin;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use time::OffsetDateTime;
use trusthub_platform::names;
use trusthub_platform::names::Named;
use trusthub_store::audit;
use trusthub_store::audit::{Entry, Filter};
use utoipa::{IntoParams, ToSchema};

/// Filters and paging.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// Only this event type, e.g. `login_succeeded`.
    pub event_type: Option<String>,
    /// Only rows at or after this instant (RFC 3339).
    #[param(format = DateTime)]
    pub since: Option<String>,
    /// Only rows with a smaller id: pass the last id of a page to get the next.
    pub before_id: Option<i64>,
    /// Rows per page, 1 to 1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
}

/// One row.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuditEntry {
    /// Increasing id.
    pub id: i64,
    /// What happened.
    pub event_type: String,
    /// Who did it: `user:<id>` (plus `token:<id>` when an API token was used), `cli`, `system`.
    pub actor: String,
    /// The actor for people: the user's email (and the token's name: `ops@example.com via
    /// token ci`); null for `cli`, `system` or a user deleted since.
    pub actor_name: Option<String>,
    /// What it was done to.
    pub subject: String,
    /// The subject for people: the host, app, rule, webhook, channel, user… by its name; null
    /// when the subject has no name or no longer exists.
    pub subject_name: Option<String>,
    /// Event facts; never secrets.
    #[schema(value_type = Object)]
    pub details: serde_json::Value,
    /// Client address.
    pub ip: Option<String>,
    /// Request id.
    pub request_id: Option<String>,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

impl AuditEntry {
    pub(crate) fn named(e: Entry, names: &HashMap<String, Named>) -> Self {
        let name = |r: &str| names.get(r).map(|n| n.name.clone());
        AuditEntry {
            id: e.id,
            event_type: e.event_type,
            actor_name: name(&e.actor),
            actor: e.actor,
            subject_name: name(&e.subject),
            subject: e.subject,
            details: e.details.0,
            ip: e.ip,
            request_id: e.request_id,
            created_at: e.created_at,
        }
    }
}

/// The service behind the `list` handler, for the API and the dashboard alike.
pub async fn list(state: &AppState, by: &Admin, q: AuditQuery) -> ApiResult<Vec<AuditEntry>> {
    let p = &by.0;
    let since = q
        .since
        .as_deref()
        .map(|s| OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339))
        .transpose()
        .map_err(|_| ApiError::BadRequest("since must be an RFC 3339 timestamp".into()))?;
    let limit = q.limit.unwrap_or(100);
    if !(1..=1000).contains(&limit) {
        return Err(ApiError::BadRequest(
            "limit must be between 1 and 1000".into(),
        ));
    }
    let filter = Filter {
        event_type: q.event_type,
        since: since.map(|s| s.to_offset(time::UtcOffset::UTC)),
        before_id: q.before_id,
        limit,
    };
    let rows = {
        let mut c = state.db.conn().await?;
        audit::list(&mut c, p.tenant(), &filter).await?
    };
    let names = names::resolve(
        state,
        p.tenant(),
        rows.iter()
            .flat_map(|e| [e.actor.as_str(), e.subject.as_str()]),
    )
    .await;
    Ok(rows
        .into_iter()
        .map(|e| AuditEntry::named(e, &names))
        .collect())
}
