//! The pages: sign-in, overview (updating itself through htmx), agents.

use super::{ASSETS, Assets, WebUser, html};
use crate::error::ApiResult;
use crate::state::{AppState, now};
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use trusthub_fleet::{AgentRow, agent_rows};

pub use trusthub_platform::page::{UserBar, ago};
use trusthub_store::audit;

// ---------------------------------------------------------------- overview

/// What the overview shows; re-rendered every 15 s by htmx.
#[derive(Debug, Default)]
struct Live {
    agents_total: usize,
    online: usize,
    silent: usize,
    offline: usize,
    alerts_total: usize,
    critical: usize,
    warning: usize,
    info: usize,
    apps_total: usize,
    apps_off: usize,
    anomalies: usize,
    slos_total: usize,
    slos_alarm: usize,
    agents: Vec<AgentRow>,
    more_agents: usize,
    events: Vec<Event>,
}

#[derive(Debug)]
struct Event {
    at: String,
    what: String,
    /// The subject by name (the raw reference when it has none), and its page.
    subject: String,
    link: Option<String>,
    /// Who, by name (empty for the system).
    by: String,
}

/// Each agent's CPU over the last hour, as sparkline points in a 100 × 30 box.
/// Agents the overview lists at most; the rest are on the agents page.
const OVERVIEW_AGENTS: usize = 24;

/// Keeps the agents that most need a look (offline, then silent, then the busiest by the CPU
/// of their newest batch, which ingest keeps on the agent and [`agent_rows`] reads) and draws
/// their last hour of CPU: the one series of each agent shown, read out of its minute rollups
/// on one connection, older minutes kept in memory ([`trusthub_fleet::CpuMinutes`]). Issue
/// 63: ranking from five minutes of every agent's rollups cost the overview ~100 ms at 1,000
/// agents of 100 series.
async fn glance(state: &AppState, user: &WebUser, rows: &mut Vec<AgentRow>) -> ApiResult<()> {
    let tenant = user.principal.tenant();
    let to = trusthub_fleet::unix_ms(now()) / 60_000 * 60_000 + 60_000;
    let rank = |r: &AgentRow| match r.status {
        "offline" => 0,
        "silent" => 1,
        _ => 2,
    };
    rows.sort_by(|a, b| {
        rank(a).cmp(&rank(b)).then_with(|| {
            let cpu = |r: &AgentRow| r.cpu.unwrap_or(-1.0);
            cpu(b).total_cmp(&cpu(a))
        })
    });
    rows.truncate(OVERVIEW_AGENTS);
    let from = to - 3_600_000;
    let ids: Vec<uuid::Uuid> = rows.iter().filter_map(|r| r.id.parse().ok()).collect();
    let drawn = trusthub_fleet::cpu_minutes(state, tenant, &ids, from, to).await?;
    let drawn: std::collections::HashMap<uuid::Uuid, Vec<(i64, f64)>> =
        ids.into_iter().zip(drawn).collect();
    let point = |minute: i64, avg: f64| {
        let x = (minute - from) as f64 / 3_600_000.0 * 100.0;
        let y = 30.0 - avg.clamp(0.0, 100.0) * 0.3;
        (format!("{x:.1}"), format!("{y:.1}"))
    };
    for r in rows.iter_mut() {
        let Some(minutes) = r.id.parse().ok().and_then(|id| drawn.get(&id)) else {
            continue;
        };
        r.spark = minutes
            .iter()
            .map(|(minute, avg)| {
                let (x, y) = point(*minute, *avg);
                format!("{x},{y}")
            })
            .collect::<Vec<_>>()
            .join(" ");
        if let Some((minute, avg)) = minutes.last() {
            r.spark_end = Some(point(*minute, *avg));
            r.cpu_now = format!("{avg:.0} %");
        }
    }
    Ok(())
}

/// A reference nothing names (a record deleted since), short: `enrollment token 01a219b2…`.
fn short_ref(r: &str) -> String {
    match r.split_once(':') {
        Some((kind, id)) if id.len() > 8 && id.is_char_boundary(8) => {
            format!("{} {}…", kind.replace('_', " "), &id[..8])
        }
        _ => r.replace('_', " "),
    }
}

async fn live(state: &AppState, user: &WebUser) -> ApiResult<Live> {
    let tenant = user.principal.tenant();
    let started = std::time::Instant::now();
    let mut lap = started;
    // Each part's time, logged at debug under `trusthub::overview` (the slowest page at
    // every size, issue 63): `RUST_LOG=info,trusthub::overview=debug`.
    let mut took = move || {
        let ms = lap.elapsed().as_secs_f64() * 1000.0;
        lap = std::time::Instant::now();
        ms
    };
    let mut l = Live {
        agents: agent_rows(state, user).await?,
        ..Live::default()
    };
    let rows_ms = took();
    l.agents_total = l.agents.len();
    for a in &l.agents {
        match a.status {
            "online" => l.online += 1,
            "silent" => l.silent += 1,
            _ => l.offline += 1,
        }
    }
    glance(state, user, &mut l.agents).await?;
    let glance_ms = took();
    l.more_agents = l.agents_total - l.agents.len();
    let mut c = state.db.conn().await?;
    for (severity, n) in trusthub_alerts::open_counts(&mut c, tenant).await? {
        let n = usize::try_from(n).unwrap_or(0);
        l.alerts_total += n;
        match severity.as_str() {
            "critical" => l.critical += n,
            "warning" => l.warning += n,
            _ => l.info += n,
        }
    }
    l.anomalies =
        usize::try_from(trusthub_certs::open_anomalies(&mut c, tenant).await?).unwrap_or(0);
    let (tracked, off) = trusthub_monitors::state_counts(&mut c, tenant).await?;
    l.apps_total = usize::try_from(tracked).unwrap_or(0);
    l.apps_off = usize::try_from(off).unwrap_or(0);
    // As of each SLO's last evaluation (every minute): computing every status here would
    // take about 0.9 s at 10,000 SLOs, every 15 s per open dashboard.
    let (total, alarm) = trusthub_slo::summary_counts(&mut c, tenant).await?;
    l.slos_total = usize::try_from(total).unwrap_or(0);
    l.slos_alarm = usize::try_from(alarm).unwrap_or(0);
    let counts_ms = took();
    let now = now();
    let events = audit::list(
        &mut c,
        tenant,
        &audit::Filter {
            event_type: None,
            since: None,
            before_id: None,
            limit: 10,
        },
    )
    .await?;
    drop(c);
    let names = trusthub_platform::names::resolve(
        state,
        tenant,
        events
            .iter()
            .flat_map(|e| [e.actor.as_str(), e.subject.as_str()]),
    )
    .await;
    l.events = events
        .into_iter()
        .map(|e| {
            let subject = names.get(&e.subject);
            Event {
                at: ago(Some(e.created_at), now),
                what: e.event_type.replace('_', " "),
                link: subject.and_then(|n| n.link.clone()),
                subject: subject.map_or_else(|| short_ref(&e.subject), |n| n.name.clone()),
                by: names
                    .get(&e.actor)
                    .map(|n| n.name.clone())
                    .unwrap_or_default(),
            }
        })
        .collect();
    tracing::debug!(
        target: "trusthub::overview",
        rows_ms,
        glance_ms,
        counts_ms,
        events_ms = took(),
        total_ms = started.elapsed().as_secs_f64() * 1000.0,
        agents = l.agents_total,
        "overview read"
    );
    Ok(l)
}

#[derive(Template)]
#[template(path = "overview.html")]
struct OverviewPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    live: Live,
}

#[derive(Template)]
#[template(path = "overview_live.html")]
struct OverviewLive {
    live: Live,
}

/// `GET /`: the fleet at a glance.
pub async fn overview(State(state): State<AppState>, user: WebUser) -> Response {
    match live(&state, &user).await {
        Ok(live) => html(
            OverviewPage {
                assets: &ASSETS,
                user: Some(UserBar::from(&user)),
                live,
            }
            .render(),
            StatusCode::OK,
        ),
        Err(e) => e.into_response(),
    }
}

/// `GET /ui/overview/live`: the overview's figures, for htmx to swap in.
pub async fn overview_live(State(state): State<AppState>, user: WebUser) -> Response {
    match live(&state, &user).await {
        Ok(live) => html(OverviewLive { live }.render(), StatusCode::OK),
        Err(e) => e.into_response(),
    }
}
