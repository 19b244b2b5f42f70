//! Agent rows as the hosts page and the overview show them.

use crate::error::ApiResult;
use crate::state::{AppState, now};
use crate::store::agents;
use time::OffsetDateTime;
use trusthub_core::agent::{AgentStatus, status};
use trusthub_identity::WebUser;
use trusthub_platform::page::ago;

/// One agent row of the overview.
#[derive(Debug)]
pub struct AgentRow {
    pub id: String,
    pub hostname: String,
    pub status: &'static str,
    pub status_mark: &'static str,
    pub last_seen: String,
    pub os: String,
    pub tags: Vec<String>,
    pub version: String,
    pub connected: bool,
    /// CPU over the last hour as an SVG polyline's points (empty without data).
    pub spark: String,
    /// The newest point (`x`, `y`), marked: the first minute of data is a dot, not nothing.
    pub spark_end: Option<(String, String)>,
    /// The newest minute's CPU, as text (`12 %`).
    pub cpu_now: String,
}

/// The word and mark of a status.
pub fn status_words(s: AgentStatus) -> (&'static str, &'static str) {
    match s {
        AgentStatus::Online => ("online", "●"),
        AgentStatus::Silent => ("silent", "▲"),
        AgentStatus::Offline => ("offline", "✕"),
    }
}

/// The row of `a`.
pub fn agent_row(a: agents::Agent, now: OffsetDateTime, connected: bool) -> AgentRow {
    let (word, mark) = status_words(status(a.last_seen_at, a.ingest_interval_secs, now));
    AgentRow {
        id: a.id.to_string(),
        hostname: a.hostname,
        status: word,
        status_mark: mark,
        last_seen: ago(a.last_seen_at, now),
        os: a.os,
        tags: a.tags.0,
        version: a.agent_version,
        connected,
        spark: String::new(),
        spark_end: None,
        cpu_now: String::new(),
    }
}

/// The agents with a live WebSocket.
pub async fn connected_agents(
    c: &mut trusthub_store::Conn,
    user: &WebUser,
    now: OffsetDateTime,
) -> ApiResult<std::collections::HashSet<uuid::Uuid>> {
    let since = now - time::Duration::seconds(crate::store::actions::CONNECTION_FRESH_SECS);
    Ok(crate::store::actions::connected_agents(c, user.principal.tenant(), since).await?)
}

/// The rows of `user`'s tenant's agents.
pub async fn agent_rows(state: &AppState, user: &WebUser) -> ApiResult<Vec<AgentRow>> {
    let now = now();
    let mut c = state.db.conn().await?;
    let connected = connected_agents(&mut c, user, now).await?;
    Ok(agents::list(&mut c, user.principal.tenant())
        .await?
        .into_iter()
        .map(|a| {
            let on = connected.contains(&a.id);
            agent_row(a, now, on)
        })
        .collect())
}
