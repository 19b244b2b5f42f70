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
    /// The newest batch's CPU, as ingest keeps it (the overview ranks by it).
    pub cpu: Option<f64>,
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
pub fn agent_row(a: agents::Brief, now: OffsetDateTime, connected: bool) -> AgentRow {
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
        cpu: a.cpu_percent,
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
    Ok(agents::briefs(&mut c, user.principal.tenant())
        .await?
        .into_iter()
        .map(|a| {
            let on = connected.contains(&a.id);
            agent_row(a, now, on)
        })
        .collect())
}

/// The overview's sparklines: each drawn agent's minutes of `cpu.percent`, kept in memory. A
/// minute before the current one changes only when a batch arrives late (an agent emptying
/// its spool), so an agent drawn in the last [`CpuMinutes::FRESH`] has only its newest two
/// minutes read again, and the whole hour otherwise: late data shows within that time, and
/// the overview reads ~2 rows per agent instead of 60 (issue 63: 24 agents × an hour of rows
/// holding 100 series each cost it ~40 ms at the end of an hour).
#[derive(Debug, Default)]
pub struct CpuMinutes(std::sync::Mutex<std::collections::HashMap<(TenantKey, uuid::Uuid), Drawn>>);

type TenantKey = uuid::Uuid;

#[derive(Debug)]
struct Drawn {
    minutes: std::collections::BTreeMap<i64, f64>,
    read_at: std::time::Instant,
}

impl CpuMinutes {
    /// How long a drawn agent's older minutes are trusted.
    pub const FRESH: std::time::Duration = std::time::Duration::from_secs(300);
    /// Agents kept at most (the overview draws 24 per tenant).
    const MAX: usize = 10_000;
}

/// The minute averages of each of `agents`' unlabelled `cpu.percent` in `[from_ms, to_ms)`
/// (whole minutes; `to_ms` the end of the current minute), oldest first, in `agents`' order;
/// read on one connection.
pub async fn cpu_minutes(
    state: &AppState,
    tenant: trusthub_store::TenantId,
    agents: &[uuid::Uuid],
    from_ms: i64,
    to_ms: i64,
) -> ApiResult<Vec<Vec<(i64, f64)>>> {
    let cache = state.part::<CpuMinutes>();
    let recent = to_ms - 2 * crate::store::telemetry::MINUTE_MS;
    let mut c = state.db.conn().await?;
    let mut out = Vec::with_capacity(agents.len());
    for agent in agents {
        let key = (tenant.0, *agent);
        let since = {
            let held = cache
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match held.get(&key) {
                Some(d) if d.read_at.elapsed() < CpuMinutes::FRESH => recent.max(from_ms),
                _ => from_ms,
            }
        };
        let read = crate::store::telemetry::agent_minutes(
            &mut c,
            tenant,
            "cpu.percent",
            *agent,
            since,
            to_ms,
        )
        .await?;
        let mut held = cache
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if held.len() >= CpuMinutes::MAX {
            held.retain(|_, d| d.read_at.elapsed() < CpuMinutes::FRESH);
            if held.len() >= CpuMinutes::MAX {
                held.clear();
            }
        }
        let drawn = held.entry(key).or_insert_with(|| Drawn {
            minutes: Default::default(),
            read_at: std::time::Instant::now(),
        });
        if since == from_ms {
            drawn.minutes.clear();
            drawn.read_at = std::time::Instant::now();
        }
        let _ = drawn.minutes.split_off(&since);
        drawn.minutes.extend(read);
        drawn.minutes = drawn.minutes.split_off(&from_ms);
        out.push(drawn.minutes.iter().map(|(m, v)| (*m, *v)).collect());
    }
    Ok(out)
}
