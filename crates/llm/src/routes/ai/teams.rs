//! Per-team views of LLM calls: costs, latency, refusals, the monthly CSV.

use super::*;
use crate::extract::Path;
use crate::service::ai::teams::{self as service, *};

/// Per team over `[from, to)` (by trace start): cost (priced calls; unpriced ones counted
/// apart), p95 latency (nearest rank), top 3 models, refusal rate, trace count.
///
/// Beyond the schema: `from` must be before `to`.
#[utoipa::path(get, path = "/ai/teams", tag = "ai", params(TeamsQuery),
    responses((status = 200, body = Vec<TeamView>), (status = 422, body = Problem)))]
pub(crate) async fn teams(
    State(state): State<AppState>,
    by: Viewer,
    Query(q): Query<TeamsQuery>,
) -> ApiResult<axum::Json<Vec<TeamView>>> {
    service::teams(&state, &by, q).await.map(axum::Json)
}

/// The month's per-team figures as RFC 4180 CSV (CRLF line ends, quoted where needed):
/// `team,month,trace_count,call_count,cost_micro_eur,unpriced_calls,p95_latency_ms,
/// refusal_rate,top_models` (models joined by `;`).
#[utoipa::path(get, path = "/ai/teams/export.csv", tag = "ai", params(MonthQuery),
    responses((status = 200, content_type = "text/csv", body = String), (status = 422, body = Problem)))]
pub(crate) async fn export_csv(
    State(state): State<AppState>,
    by: Viewer,
    Query(q): Query<MonthQuery>,
) -> ApiResult<impl IntoResponse> {
    let (file, body) = service::export_csv(&state, &by, q).await?;
    Ok((
        [
            (
                header::CONTENT_TYPE,
                "text/csv; charset=utf-8; header=present".to_owned(),
            ),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{file}\""),
            ),
        ],
        body,
    ))
}

/// One team over `[from, to)` with a daily series (same figures as `/ai/teams`).
///
/// Beyond the schema: `from` must be before `to`.
#[utoipa::path(get, path = "/ai/teams/{team}", tag = "ai", params(("team" = String, Path, description = "Team"), TeamsQuery),
    responses((status = 200, body = TeamDetail), (status = 404, body = Problem)))]
pub(crate) async fn team(
    State(state): State<AppState>,
    by: Viewer,
    Path(name): Path<String>,
    Query(q): Query<TeamsQuery>,
) -> ApiResult<axum::Json<TeamDetail>> {
    service::team(&state, &by, name, q).await.map(axum::Json)
}
