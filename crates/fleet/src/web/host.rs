//! One host's page: status, charts, facts.

use super::*;
use crate::error::{ApiError, ApiResult};
use crate::service::hosts::{AgentRow, agent_row, connected_agents};
use crate::state::{AppState, now};
use crate::store::agents;
use askama::Template;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

/// A chart of the agent page.
#[derive(Debug)]
struct Chart {
    title: String,
    svg: String,
    legend: String,
    /// The same data for the interactive chart ([`chart::chart_data`]).
    data: String,
}

#[derive(Template)]
#[template(path = "agent.html")]
struct AgentPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    agent: AgentRow,
    ranges: Vec<(&'static str, bool)>,
    charts: Vec<Chart>,
}

/// The chart range.
#[derive(Debug, Deserialize)]
pub struct RangeQuery {
    range: Option<String>,
}

/// Ranges offered, with the bucket each is averaged over (served from the rollups).
const RANGES: [(&str, i64, i64); 4] = [
    ("1h", 3_600_000, 60_000),
    ("6h", 21_600_000, 300_000),
    ("24h", 86_400_000, 900_000),
    ("7d", 604_800_000, 3_600_000),
];

/// `GET /ui/agents/{id}`: the agent and its CPU, memory, disk and network charts.
pub async fn agent(
    State(state): State<AppState>,
    user: WebUser,
    axum::extract::Path(id): axum::extract::Path<uuid::Uuid>,
    Query(q): Query<RangeQuery>,
) -> Response {
    match agent_page(&state, &user, id, q.range.as_deref()).await {
        Ok(page) => html(page.render(), StatusCode::OK),
        Err(e) => e.into_response(),
    }
}

async fn agent_page<'a>(
    state: &AppState,
    user: &WebUser,
    id: uuid::Uuid,
    range: Option<&str>,
) -> ApiResult<AgentPage<'a>> {
    let tenant = user.principal.tenant();
    let agent = {
        let now = now();
        let mut c = state.db.conn().await?;
        let a = agents::get(&mut c, tenant, id)
            .await?
            .ok_or(ApiError::NotFound("agent"))?;
        let on = connected_agents(&mut c, user, now).await?.contains(&id);
        agent_row(a.into(), now, on)
    };
    let (name, span, bucket) = RANGES
        .iter()
        .copied()
        .find(|r| Some(r.0) == range)
        .unwrap_or(RANGES[0]);
    let now_ms = crate::store::telemetry::unix_ms(now());
    // Buckets aligned to their width, so averages come from the rollups.
    let to = (now_ms / bucket + 1) * bucket;
    let from = to - span;
    let all = {
        let mut c = state.db.conn().await?;
        crate::store::telemetry::series(&mut c, tenant, id, None).await?
    };
    let mut charts = Vec::new();
    for (title, names, max, unit) in [
        ("CPU %", &["cpu.percent"][..], Some(100.0), " %"),
        (
            "Memory used %",
            &["mem.used_percent"][..],
            Some(100.0),
            " %",
        ),
        ("Disk used %", &["disk.used_percent"][..], Some(100.0), " %"),
        (
            "Network bytes/s",
            &["net.rx_bytes_per_sec", "net.tx_bytes_per_sec"][..],
            None,
            "B/s",
        ),
    ] {
        let mut lines = Vec::new();
        for s in all.iter().filter(|s| names.contains(&s.name.as_str())) {
            let labels: std::collections::BTreeMap<String, String> =
                serde_json::from_str(&s.labels).unwrap_or_default();
            // Per-core CPU series are left to the API; the chart shows the whole host.
            if s.name == "cpu.percent" && labels.contains_key("core") {
                continue;
            }
            if lines.len() == 4 {
                break;
            }
            let points = crate::ranges::points_of(
                state,
                tenant,
                id,
                &[s],
                crate::ranges::Window {
                    from_ms: from,
                    to_ms: to,
                    bucket_ms: Some(bucket),
                },
                2_000,
            )
            .await?
            .pop()
            .unwrap_or_default();
            let suffix: Vec<String> = labels.values().cloned().collect();
            let direction = match s.name.as_str() {
                "net.rx_bytes_per_sec" => " in",
                "net.tx_bytes_per_sec" => " out",
                _ => "",
            };
            lines.push(chart::Line {
                label: if suffix.is_empty() {
                    format!("{}{direction}", s.name)
                } else {
                    format!("{}{direction}", suffix.join(" "))
                },
                points,
            });
        }
        charts.push(Chart {
            title: format!("{title}, last {name}"),
            svg: chart::line_chart(title, &lines, from, to, max),
            legend: chart::legend(&lines),
            data: chart::chart_data(&lines, from, to, max, unit),
        });
    }
    Ok(AgentPage {
        assets: &ASSETS,
        user: Some(UserBar::from(user)),
        agent,
        ranges: RANGES.iter().map(|r| (r.0, r.0 == name)).collect(),
        charts,
    })
}
