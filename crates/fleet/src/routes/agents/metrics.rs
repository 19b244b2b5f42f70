//! Metric ranges of an agent, raw or averaged per bucket (rollups).

use super::*;
use crate::service::agents::metrics::{self as service, *};

/// Metric series of an agent over a range (CONTRACT 4), raw or averaged per `interval` (a
/// bucket is labelled with its start and holds [start, start + interval)). With
/// `TRUSTHUB_METRICS_QUERY_URL` (CONTRACT 26) the points are read from that
/// Prometheus-compatible store (averages through `avg_over_time`, raw samples through a
/// range selector), in the same shape; 503 when it does not answer.
///
/// Beyond the schema: `from` must be before `to`.
#[utoipa::path(get, path = "/agents/{id}/metrics", tag = "agents", params(("id" = Uuid, Path, description = "Agent id"), MetricsQuery),
    responses((status = 200, body = MetricsView), (status = 400, body = Problem), (status = 404, body = Problem), (status = 503, body = Problem)))]
pub(crate) async fn metrics(
    State(state): State<AppState>,
    by: Viewer,
    Path(id): Path<Uuid>,
    Query(q): Query<MetricsQuery>,
) -> ApiResult<axum::Json<MetricsView>> {
    service::metrics(&state, &by, id, q).await.map(axum::Json)
}
