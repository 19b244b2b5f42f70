//! Reading metrics back: series, points over a range, an agent's minutes and window sums.

use super::*;

/// Per-minute averages of one metric (its label-less series) of one of a tenant's agents in
/// `[from_ms, to_ms)`, from the minute rollup in one query: `(minute, average)`, oldest
/// first (the overview's sparklines). The agent is found by its key (issue 63: a filter that
/// also allowed "every agent" had SQLite walk all the tenant's agents for each read).
pub async fn agent_minutes(
    ex: &mut impl Exec,
    tenant: TenantId,
    name: &str,
    agent: Uuid,
    from_ms: i64,
    to_ms: i64,
) -> StoreResult<Vec<(i64, f64)>> {
    let rows: Vec<(i64, i64, String)> = on!(ex, c => sqlx::query_as(
        "SELECT s.id, r.bucket, CAST(r.stats AS TEXT) FROM agents a \
         JOIN metric_series s ON s.agent_id = a.id AND s.name = $2 AND s.labels = '{}' \
         JOIN metric_rollup_1m r ON r.agent_seq = a.seq AND r.bucket >= $3 AND r.bucket < $4 \
         WHERE a.tenant_id = $1 AND a.id = $5 ORDER BY r.bucket")
        .bind(tenant.0).bind(name).bind(from_ms).bind(to_ms).bind(agent).fetch_all(&mut *c).await?);
    let mut out = Vec::with_capacity(rows.len());
    for (series, bucket, text) in rows {
        if let Some(s) = metric_rows::stat_of(&text, series)?
            && s.1 > 0
        {
            out.push((bucket, s.2 / s.1 as f64));
        }
    }
    Ok(out)
}
/// A metric series of an agent.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Series {
    /// Id.
    pub id: i64,
    /// Its agent's number (`agents.seq`), the first part of its points' key.
    pub agent_seq: i64,
    /// Metric name.
    pub name: String,
    /// Canonical JSON of the labels.
    pub labels: String,
}

/// The series of a tenant's agent, optionally of one metric name.
pub async fn series(
    ex: &mut impl Exec,
    tenant: TenantId,
    agent_id: Uuid,
    name: Option<&str>,
) -> StoreResult<Vec<Series>> {
    Ok(on!(ex, c => sqlx::query_as::<_, Series>(
        "SELECT s.id, a.seq AS agent_seq, s.name, s.labels FROM metric_series s JOIN agents a ON a.id = s.agent_id \
         WHERE a.tenant_id = $1 AND s.agent_id = $2 AND ($3 IS NULL OR s.name = $3) ORDER BY s.name, s.labels")
        .bind(tenant.0).bind(agent_id).bind(name).fetch_all(&mut *c).await?))
}

/// Points of an agent's series (`series`: their ids) in `[from_ms, to_ms)`, oldest first, at
/// most `limit` per series: raw, or averaged per `bucket_ms` (the bucket's start as its
/// timestamp). Buckets that are whole hours are served from the hour rollup, whole minutes
/// from the minute rollup (so they outlive the raw retention), anything else from the raw
/// points. The agent's rows are read once for all the series, a page at a time, and reading
/// stops once every series has its `limit` (or, raw, once more than `limit` points were found
/// in all: callers refuse or cut such answers).
pub async fn points(
    ex: &mut impl Exec,
    agent_seq: i64,
    series: &[i64],
    from_ms: i64,
    to_ms: i64,
    bucket_ms: Option<i64>,
    limit: i64,
) -> StoreResult<Vec<Vec<(i64, f64)>>> {
    const PAGE: i64 = 1_000;
    let cap = usize::try_from(limit).unwrap_or(usize::MAX);
    let table = match bucket_ms {
        Some(b) if b % HOUR_MS == 0 && from_ms % HOUR_MS == 0 => Some(ROLLUP_TABLES[1].0),
        Some(b) if b % MINUTE_MS == 0 && from_ms % MINUTE_MS == 0 => Some(ROLLUP_TABLES[0].0),
        _ => None,
    };
    let mut raw: Vec<Vec<(i64, f64)>> = vec![Vec::new(); series.len()];
    // Per series: bucket start → (sum, count), in order.
    let mut sums: Vec<BTreeMap<i64, (f64, i64)>> = vec![BTreeMap::new(); series.len()];
    let mut found = 0usize;
    let mut cursor = from_ms;
    loop {
        let page = metric_rows::range(
            ex,
            table.unwrap_or(metric_rows::POINTS),
            agent_seq,
            cursor,
            to_ms,
            PAGE,
        )
        .await?;
        let done = (page.len() as i64) < PAGE;
        for (key, text) in &page {
            match (bucket_ms, table) {
                (Some(b), Some(_)) => {
                    let stats = metric_rows::stats(text)?;
                    for (i, id) in series.iter().enumerate() {
                        if let Some(s) = metric_rows::find(&stats, *id, |s| s.0) {
                            let e = sums[i].entry(key / b * b).or_insert((0.0, 0));
                            e.0 += s.2;
                            e.1 += s.1;
                        }
                    }
                }
                (b, _) => {
                    let samples = metric_rows::samples(text)?;
                    for (i, id) in series.iter().enumerate() {
                        if let Some(s) = metric_rows::find(&samples, *id, |s| s.0) {
                            match b {
                                None if raw[i].len() < cap => {
                                    raw[i].push((*key, s.1));
                                    found += 1;
                                }
                                None => {}
                                Some(b) => {
                                    let e = sums[i].entry(key / b * b).or_insert((0.0, 0));
                                    e.0 += s.1;
                                    e.1 += 1;
                                }
                            }
                        }
                    }
                }
            }
        }
        // A series is complete when it has `limit` points, or `limit` finished buckets (one
        // more started: rows come in time order).
        let complete = match bucket_ms {
            None => found > cap || raw.iter().all(|r| r.len() >= cap),
            Some(_) => sums.iter().all(|m| m.len() > cap),
        };
        match page.last() {
            Some((key, _)) if !done && !complete => cursor = key + 1,
            _ => break,
        }
    }
    Ok(match bucket_ms {
        None => raw,
        Some(_) => sums
            .into_iter()
            .map(|m| {
                m.into_iter()
                    .take(cap)
                    .filter(|(_, (_, n))| *n > 0)
                    .map(|(k, (sum, n))| (k, sum / n as f64))
                    .collect()
            })
            .collect(),
    })
}
/// Whether any agent of the tenant has ever sent this metric.
pub async fn metric_known(ex: &mut impl Exec, tenant: TenantId, metric: &str) -> StoreResult<bool> {
    Ok(on!(ex, c => sqlx::query_scalar::<_, i64>(
        "SELECT COUNT(*) FROM metric_series s JOIN agents g ON g.id = s.agent_id WHERE g.tenant_id = $1 AND s.name = $2")
        .bind(tenant.0).bind(metric).fetch_one(&mut *c).await?)
        > 0)
}

/// The metric names the tenant's agents send, sorted (for choosing a rule's metric).
pub async fn metric_names(ex: &mut impl Exec, tenant: TenantId) -> StoreResult<Vec<String>> {
    Ok(on!(ex, c => sqlx::query_scalar::<_, String>(
        "SELECT DISTINCT s.name FROM metric_series s JOIN agents g ON g.id = s.agent_id WHERE g.tenant_id = $1 ORDER BY s.name")
        .bind(tenant.0).fetch_all(&mut *c).await?))
}

/// Sum and count of one series over a window.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SeriesWindow {
    /// Agent.
    pub agent_id: Uuid,
    /// Canonical JSON labels.
    pub labels: String,
    /// Sum of values.
    pub sum: f64,
    /// Number of values.
    pub count: i64,
}

/// Per series of `metric` of the tenant: sum and count of the points in `[from_ms, to_ms)`;
/// from raw points, or from the hour rollups when `hourly` (windows longer than the raw
/// retention).
pub async fn window_sums(
    ex: &mut impl Exec,
    tenant: TenantId,
    metric: &str,
    from_ms: i64,
    to_ms: i64,
    hourly: bool,
) -> StoreResult<Vec<SeriesWindow>> {
    let list: Vec<(i64, i64, Uuid, String)> = on!(ex, c => sqlx::query_as(
        "SELECT g.seq, s.id, s.agent_id, s.labels FROM metric_series s JOIN agents g ON g.id = s.agent_id \
         WHERE g.tenant_id = $1 AND s.name = $2 ORDER BY g.seq, s.id")
        .bind(tenant.0).bind(metric).fetch_all(&mut *c).await?);
    let mut agents: Vec<i64> = list.iter().map(|l| l.0).collect();
    agents.dedup();
    let table = if hourly {
        ROLLUP_TABLES[1].0
    } else {
        metric_rows::POINTS
    };
    // (sum, count) per series, in `list` order.
    let mut acc: Vec<(f64, i64)> = vec![(0.0, 0); list.len()];
    let of_agent = |seq: i64| {
        let start = list.partition_point(|l| l.0 < seq);
        start..list.partition_point(|l| l.0 <= seq)
    };
    for (seq, _, text) in metric_rows::range_of_agents(ex, table, &agents, from_ms, to_ms).await? {
        let wanted = of_agent(seq);
        if hourly {
            let stats = metric_rows::stats(&text)?;
            for i in wanted {
                if let Some(s) = metric_rows::find(&stats, list[i].1, |s| s.0) {
                    acc[i].0 += s.2;
                    acc[i].1 += s.1;
                }
            }
        } else {
            let samples = metric_rows::samples(&text)?;
            for i in wanted {
                if let Some(s) = metric_rows::find(&samples, list[i].1, |s| s.0) {
                    acc[i].0 += s.1;
                    acc[i].1 += 1;
                }
            }
        }
    }
    Ok(list
        .into_iter()
        .zip(acc)
        .filter(|(_, (_, n))| *n > 0)
        .map(|((_, _, agent_id, labels), (sum, count))| SeriesWindow {
            agent_id,
            labels,
            sum,
            count,
        })
        .collect())
}
