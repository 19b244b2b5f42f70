//! Per-team views of LLM calls: costs, latency, refusals, the monthly CSV.

use super::*;
use trusthub_core::csv::cell as csv_field;

/// A team's figures over a period.
#[derive(Debug, Serialize, ToSchema)]
pub struct TeamView {
    /// Team.
    pub team: String,
    /// Cost of the priced calls in micro-EUR (millionths of a euro: 1,500,000 is EUR 1.50).
    /// Null when the team has calls and none of them is priced: the cost is unknown, not 0.
    pub cost_micro_eur: Option<u64>,
    /// Some calls are unpriced, so `cost_micro_eur` covers only the priced ones.
    pub cost_is_partial: bool,
    /// Calls of models with no price on their date: not in `cost_micro_eur`, never counted as 0.
    pub unpriced_calls: u64,
    /// Nearest-rank p95 of call latencies: the smallest latency at or above which lie no more
    /// than 5 % of the calls (the `ceil(0.95 n)`-th smallest). Null without calls.
    pub p95_latency_ms: Option<u64>,
    /// The 3 models with the most calls (ties by name).
    pub top_models: Vec<String>,
    /// Refused calls / calls (0 without calls).
    pub refusal_rate: f64,
    /// Traces that started in the period.
    pub trace_count: u64,
    /// Calls.
    pub call_count: u64,
}

pub(crate) fn summarize(
    calls: &[store::CallRow],
    traces: &[(String, OffsetDateTime)],
    prices: &ai::PriceTable,
) -> Vec<TeamView> {
    let mut by_team: BTreeMap<&str, Vec<&store::CallRow>> = BTreeMap::new();
    for c in calls {
        by_team.entry(c.team.as_str()).or_default().push(c);
    }
    let mut trace_counts: HashMap<&str, u64> = HashMap::new();
    for (team, _) in traces {
        *trace_counts.entry(team.as_str()).or_insert(0) += 1;
    }
    let mut teams: BTreeMap<&str, ()> = by_team.keys().map(|k| (*k, ())).collect();
    for t in trace_counts.keys() {
        teams.insert(t, ());
    }
    teams
        .keys()
        .map(|team| {
            let list = by_team.get(team).map(Vec::as_slice).unwrap_or(&[]);
            let (mut cost, mut unpriced) = (0u64, 0u64);
            let mut models: HashMap<&str, u64> = HashMap::new();
            for c in list {
                let u = Usage {
                    prompt_tokens: c.prompt_tokens.max(0) as u64,
                    completion_tokens: c.completion_tokens.max(0) as u64,
                    cache_read_tokens: c.cache_read_tokens.max(0) as u64,
                    cache_write_tokens: c.cache_write_tokens.max(0) as u64,
                    reasoning_tokens: c.reasoning_tokens.max(0) as u64,
                };
                match prices.cost(&c.model, c.started_at.date(), &u) {
                    Cost::Priced(v) => cost = cost.saturating_add(v),
                    Cost::Unpriced => unpriced += 1,
                }
                *models.entry(c.model.as_str()).or_insert(0) += 1;
            }
            let mut top: Vec<(&str, u64)> = models.into_iter().collect();
            top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
            let latencies: Vec<u64> = list.iter().map(|c| c.latency_ms.max(0) as u64).collect();
            let refused = list.iter().filter(|c| c.refused).count();
            let all_unpriced = !list.is_empty() && unpriced == list.len() as u64;
            TeamView {
                team: (*team).to_owned(),
                cost_micro_eur: (!all_unpriced).then_some(cost),
                cost_is_partial: unpriced > 0 && !all_unpriced,
                unpriced_calls: unpriced,
                p95_latency_ms: ai::p95(&latencies),
                top_models: top.into_iter().take(3).map(|(m, _)| m.to_owned()).collect(),
                refusal_rate: if list.is_empty() {
                    0.0
                } else {
                    refused as f64 / list.len() as f64
                },
                trace_count: trace_counts.get(team).copied().unwrap_or(0),
                call_count: list.len() as u64,
            }
        })
        .collect()
}

/// Period and order of the team view.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct TeamsQuery {
    /// Start, RFC 3339 (default 30 days before `to`).
    #[param(format = DateTime)]
    pub from: Option<String>,
    /// End, RFC 3339, exclusive (default: the end of the current second, so a trace sent
    /// just now is included).
    #[param(format = DateTime)]
    pub to: Option<String>,
    /// `cost` (default, highest first; unknown costs last) or `p95` (slowest first).
    #[param(pattern = r"^(cost|p95)$")]
    pub sort: Option<String>,
}

impl TeamsQuery {
    /// `[from, to)`: `to` defaults to now, `from` to 30 days before it.
    fn period(&self) -> ApiResult<(OffsetDateTime, OffsetDateTime)> {
        let to = parse_time("to", self.to.as_deref())?
            .unwrap_or_else(|| stored_time(now()) + time::Duration::seconds(1));
        let from =
            parse_time("from", self.from.as_deref())?.unwrap_or(to - time::Duration::days(30));
        if from >= to {
            return Err(ApiError::invalid("from", "must be before to"));
        }
        Ok((from, to))
    }
}

pub(crate) fn parse_time(field: &str, v: Option<&str>) -> ApiResult<Option<OffsetDateTime>> {
    v.map(|s| {
        OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
            .map_err(|_| ApiError::invalid(field, "must be an RFC 3339 time"))
    })
    .transpose()
}

/// The service behind the `teams` handler, for the API and the dashboard alike.
pub async fn teams(state: &AppState, by: &Viewer, q: TeamsQuery) -> ApiResult<Vec<TeamView>> {
    let p = &by.0;
    let (from, to) = q.period()?;
    let by_p95 = match q.sort.as_deref().unwrap_or("cost") {
        "cost" => false,
        "p95" => true,
        _ => return Err(ApiError::invalid("sort", "must be cost or p95")),
    };
    let mut c = state.db.conn().await?;
    let calls = store::calls_between(&mut c, p.tenant(), from, to).await?;
    let traces = store::trace_starts(&mut c, p.tenant(), from, to).await?;
    let prices = price_table(state, p.tenant()).await?;
    let mut list = summarize(&calls, &traces, &prices);
    if by_p95 {
        list.sort_by(|a, b| {
            b.p95_latency_ms
                .cmp(&a.p95_latency_ms)
                .then(a.team.cmp(&b.team))
        });
    } else {
        list.sort_by(|a, b| {
            b.cost_micro_eur
                .cmp(&a.cost_micro_eur)
                .then(a.team.cmp(&b.team))
        });
    }
    Ok(list)
}

/// The month of the export.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct MonthQuery {
    /// `YYYY-MM` (UTC).
    #[param(pattern = r"^[0-9]{4}-(0[1-9]|1[0-2])$")]
    pub month: String,
}

/// One day of a team.
#[derive(Debug, Serialize, ToSchema)]
pub struct TeamDay {
    /// `YYYY-MM-DD` (UTC, by trace start).
    pub date: String,
    /// The day's figures.
    #[serde(flatten)]
    pub figures: TeamView,
}

/// A team over a period.
#[derive(Debug, Serialize, ToSchema)]
pub struct TeamDetail {
    /// The whole period.
    pub total: TeamView,
    /// One entry per day with traces, oldest first.
    pub daily: Vec<TeamDay>,
}

/// The service behind the `team` handler, for the API and the dashboard alike.
pub async fn team(
    state: &AppState,
    by: &Viewer,
    name: String,
    q: TeamsQuery,
) -> ApiResult<TeamDetail> {
    let p = &by.0;
    let (from, to) = q.period()?;
    let mut c = state.db.conn().await?;
    let calls: Vec<store::CallRow> = store::calls_between(&mut c, p.tenant(), from, to)
        .await?
        .into_iter()
        .filter(|k| k.team == name)
        .collect();
    let traces = store::trace_starts(&mut c, p.tenant(), from, to).await?;
    let prices = price_table(state, p.tenant()).await?;
    let Some(total) = summarize(&calls, &traces, &prices)
        .into_iter()
        .find(|t| t.team == name)
    else {
        return Err(ApiError::NotFound("team"));
    };
    type Day = (Vec<store::CallRow>, Vec<(String, OffsetDateTime)>);
    let mut days: BTreeMap<time::Date, Day> = BTreeMap::new();
    for k in calls {
        days.entry(k.started_at.date()).or_default().0.push(k);
    }
    for t in traces.into_iter().filter(|(team, _)| *team == name) {
        days.entry(t.1.date()).or_default().1.push(t);
    }
    let daily = days
        .into_iter()
        .filter_map(|(day, (calls, traces))| {
            let figures = summarize(&calls, &traces, &prices).into_iter().next()?;
            Some(TeamDay {
                date: day.format(DATE).unwrap_or_default(),
                figures,
            })
        })
        .collect();
    Ok(TeamDetail { total, daily })
}

/// The month's per-team CSV behind the `export_csv` handler: (file name, body).
pub async fn export_csv(
    state: &AppState,
    by: &Viewer,
    q: MonthQuery,
) -> ApiResult<(String, String)> {
    let p = &by.0;
    let bad = || ApiError::invalid("month", "must be YYYY-MM");
    let (y, m) = q.month.split_once('-').ok_or_else(bad)?;
    let (y, m): (i32, u8) = (y.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
    if q.month.len() != 7 {
        return Err(bad());
    }
    let month = time::Month::try_from(m).map_err(|_| bad())?;
    let start = time::Date::from_calendar_date(y, month, 1).map_err(|_| bad())?;
    let next = if month == time::Month::December {
        time::Date::from_calendar_date(y + 1, time::Month::January, 1)
    } else {
        time::Date::from_calendar_date(y, month.next(), 1)
    }
    .map_err(|_| bad())?;
    let (from, to) = (start.midnight().assume_utc(), next.midnight().assume_utc());
    let mut c = state.db.conn().await?;
    let calls = store::calls_between(&mut c, p.tenant(), from, to).await?;
    let traces = store::trace_starts(&mut c, p.tenant(), from, to).await?;
    let mut body = String::from(
        "team,month,trace_count,call_count,cost_micro_eur,unpriced_calls,p95_latency_ms,refusal_rate,top_models\r\n",
    );
    let prices = price_table(state, p.tenant()).await?;
    for t in summarize(&calls, &traces, &prices) {
        let row = [
            csv_field(&t.team),
            q.month.clone(),
            t.trace_count.to_string(),
            t.call_count.to_string(),
            t.cost_micro_eur.map(|v| v.to_string()).unwrap_or_default(),
            t.unpriced_calls.to_string(),
            t.p95_latency_ms.map(|v| v.to_string()).unwrap_or_default(),
            format!("{:.4}", t.refusal_rate),
            csv_field(&t.top_models.join(";")),
        ];
        body.push_str(&row.join(","));
        body.push_str("\r\n");
    }
    Ok((format!("ai-teams-{}.csv", q.month), body))
}
