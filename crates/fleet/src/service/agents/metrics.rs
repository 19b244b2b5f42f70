//! Metric ranges of an agent, raw or averaged per bucket (rollups).

use super::*;

/// Range and resolution of a metrics query.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct MetricsQuery {
    /// Start, RFC 3339 (default one hour before `to`).
    #[param(format = DateTime)]
    pub from: Option<String>,
    /// End, RFC 3339, exclusive (default now).
    #[param(format = DateTime)]
    pub to: Option<String>,
    /// Bucket like `60s`, `5m`, `1h`, `1d`: points are averaged per bucket. Raw points when absent.
    /// Whole minutes or hours are read from the rollups, which on the embedded SQLite store
    /// may trail the raw points by about a second while ingest is under sustained load.
    #[param(pattern = r"^[1-9][0-9]{0,3}[smhd]$")]
    pub interval: Option<String>,
    /// Only this metric.
    pub name: Option<String>,
}

/// One series.
#[derive(Debug, Serialize, ToSchema)]
pub struct SeriesView {
    /// Metric name.
    pub name: String,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// `[ts (RFC 3339), value]` pairs, oldest first.
    #[schema(value_type = Vec<Vec<Object>>)]
    pub points: Vec<(String, f64)>,
}

/// The answer of a metrics query.
#[derive(Debug, Serialize, ToSchema)]
pub struct MetricsView {
    /// One entry per (name, labels).
    pub series: Vec<SeriesView>,
}

/// Most points one query answers, in all series together.
pub(crate) const MAX_POINTS: i64 = 100_000;

/// Parses `60s`, `5m`, `1h`, `1d` into milliseconds.
pub fn parse_duration_ms(s: &str) -> Option<i64> {
    let s = s.trim();
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit())?);
    let n: i64 = num.parse().ok().filter(|n| *n > 0)?;
    let unit_ms = match unit {
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return None,
    };
    n.checked_mul(unit_ms)
}

/// The service behind the `metrics` handler, for the API and the dashboard alike.
pub async fn metrics(
    state: &AppState,
    by: &Viewer,
    id: Uuid,
    q: MetricsQuery,
) -> ApiResult<MetricsView> {
    let p = &by.0;
    let parse = |field: &str, v: &Option<String>| -> ApiResult<Option<OffsetDateTime>> {
        v.as_deref()
            .map(|s| OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339))
            .transpose()
            .map_err(|_| ApiError::BadRequest(format!("{field} must be an RFC 3339 timestamp")))
    };
    // Default end: just past now, so samples stamped this second are included.
    let to = parse("to", &q.to)?.unwrap_or_else(|| now() + time::Duration::seconds(1));
    let from = parse("from", &q.from)?.unwrap_or(to - time::Duration::hours(1));
    if from >= to {
        return Err(ApiError::BadRequest("from must be before to".into()));
    }
    let bucket = match &q.interval {
        None => None,
        Some(i) => Some(parse_duration_ms(i).ok_or_else(|| {
            ApiError::BadRequest("interval must look like 60s, 5m, 1h or 1d".into())
        })?),
    };
    let (from_ms, to_ms) = (telemetry::unix_ms(from), telemetry::unix_ms(to));
    if let Some(b) = bucket
        && (to_ms - from_ms) / b > MAX_POINTS
    {
        return Err(ApiError::BadRequest(
            "too many buckets; choose a longer interval or a shorter range".into(),
        ));
    }
    load(state, p.tenant(), id).await?;
    let all = {
        let mut c = state.db.conn().await?;
        telemetry::series(&mut c, p.tenant(), id, q.name.as_deref()).await?
    };
    let window = crate::ranges::Window {
        from_ms,
        to_ms,
        bucket_ms: bucket,
    };
    let refs: Vec<&telemetry::Series> = all.iter().collect();
    let ranges =
        crate::ranges::points_of(state, p.tenant(), id, &refs, window, MAX_POINTS + 1).await?;
    let mut out = Vec::new();
    let mut budget = MAX_POINTS;
    for (s, pts) in all.into_iter().zip(ranges) {
        budget -= pts.len() as i64;
        if budget < 0 {
            return Err(ApiError::BadRequest(format!(
                "more than {MAX_POINTS} points; narrow the range or set interval"
            )));
        }
        if pts.is_empty() {
            continue;
        }
        let points = pts
            .into_iter()
            .map(|(ts, v)| {
                let t = OffsetDateTime::from_unix_timestamp_nanos(i128::from(ts) * 1_000_000)
                    .unwrap_or(OffsetDateTime::UNIX_EPOCH);
                (trusthub_platform::state::rfc3339(t), v)
            })
            .collect();
        out.push(SeriesView {
            name: s.name,
            labels: serde_json::from_str(&s.labels).unwrap_or_default(),
            points,
        });
    }
    Ok(MetricsView { series: out })
}
