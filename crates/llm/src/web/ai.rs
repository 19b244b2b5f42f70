//! LLM usage: the teams table (sortable by cost or p95), a team's daily chart, the month's
//! CSV (the API's own export, which the session may fetch), and the price table (admins
//! add overrides). Figures come from the API's own handlers.

use super::UserBar;
use super::{ASSETS, Assets, Flash, WebUser, chart, form_error};
use crate::auth::{Admin, Viewer};
use crate::error::ApiError;
use crate::extract::Meta;
use crate::service::ai::{self as api, PriceView, PricesIn, TeamView, TeamsQuery};
use crate::state::{AppState, now};
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use trusthub_core::Role;
use trusthub_identity::Act;
use trusthub_platform::page::{PageResult, render};

/// A team's figures as shown.
#[derive(Debug)]
struct TeamRow {
    team: String,
    link: String,
    cost: String,
    p95: String,
    calls: u64,
    traces: u64,
    refusals: String,
    models: String,
}

/// Micro-EUR as euros: `EUR 1.50`, `EUR 0.0012`; unknown when nothing was priced.
fn euros(v: Option<u64>, partial: bool) -> String {
    match v {
        None => "unknown (no price)".into(),
        Some(m) => {
            let e = m as f64 / 1e6;
            let s = if e >= 1.0 || m == 0 {
                format!("EUR {e:.2}")
            } else {
                format!("EUR {e:.4}")
            };
            if partial {
                format!("{s} + unpriced")
            } else {
                s
            }
        }
    }
}

fn row(t: TeamView) -> TeamRow {
    TeamRow {
        link: format!("/ui/ai/teams/{}", url_segment(&t.team)),
        cost: euros(t.cost_micro_eur, t.cost_is_partial),
        p95: t
            .p95_latency_ms
            .map(|p| format!("{p} ms"))
            .unwrap_or_else(|| "—".into()),
        calls: t.call_count,
        traces: t.trace_count,
        refusals: format!("{:.1} %", t.refusal_rate * 100.0),
        models: t.top_models.join(", "),
        team: t.team,
    }
}

/// A path segment, percent-encoded.
fn url_segment(s: &str) -> String {
    trusthub_core::encode::component(s)
}

/// The period and order of the teams table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TeamsForm {
    /// `cost` (default) or `p95`.
    sort: Option<String>,
    /// The last 1, 7, 30 (default) or 90 days.
    days: Option<i64>,
}

const PERIODS: [i64; 4] = [1, 7, 30, 90];

fn period(days: Option<i64>) -> i64 {
    days.filter(|d| PERIODS.contains(d)).unwrap_or(30)
}

fn query(days: i64, sort: Option<String>) -> TeamsQuery {
    let to = now() + time::Duration::seconds(1);
    let fmt = |t: time::OffsetDateTime| {
        t.replace_nanosecond(0)
            .unwrap_or(t)
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default()
    };
    TeamsQuery {
        from: Some(fmt(to - time::Duration::days(days))),
        to: Some(fmt(to)),
        sort,
    }
}

#[derive(Template)]
#[template(path = "ai.html")]
struct TeamsPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    teams: Vec<TeamRow>,
    by_p95: bool,
    days: i64,
    periods: [i64; 4],
    month: String,
}

/// `GET /ui/ai`: teams over the period, by cost or by p95 latency.
pub async fn teams(
    State(state): State<AppState>,
    user: WebUser,
    axum::extract::Query(f): axum::extract::Query<TeamsForm>,
) -> PageResult {
    let by_p95 = f.sort.as_deref() == Some("p95");
    let days = period(f.days);
    let list = api::teams(
        &state,
        &Viewer::of(&user.principal)?,
        query(days, Some(if by_p95 { "p95" } else { "cost" }.into())),
    )
    .await?;
    let today = now().date();
    let page = TeamsPage {
        assets: &ASSETS,
        user: Some(UserBar::from(&user)),
        teams: list.into_iter().map(row).collect(),
        by_p95,
        days,
        periods: PERIODS,
        month: format!("{:04}-{:02}", today.year(), u8::from(today.month())),
    };
    render(page.render(), StatusCode::OK)
}

#[derive(Template)]
#[template(path = "ai_team.html")]
struct TeamPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    total: TeamRow,
    days: i64,
    periods: [i64; 4],
    link: String,
    cost_chart: String,
    cost_legend: String,
    latency_chart: String,
    latency_legend: String,
    daily: Vec<(String, TeamRow)>,
}

/// `GET /ui/ai/teams/{team}`: the team's totals and its day-by-day cost and p95.
pub async fn team(
    State(state): State<AppState>,
    user: WebUser,
    axum::extract::Path(name): axum::extract::Path<String>,
    axum::extract::Query(f): axum::extract::Query<TeamsForm>,
) -> PageResult {
    let days = period(f.days);
    let q = query(days, None);
    let to_ms = trusthub_fleet::unix_ms(now());
    let from_ms = to_ms - days * 86_400_000;
    let detail = api::team(&state, &Viewer::of(&user.principal)?, name, q).await?;
    let mut cost = Vec::new();
    let mut p95 = Vec::new();
    let mut daily = Vec::new();
    for d in detail.daily {
        let at = time::Date::parse(
            &d.date,
            time::macros::format_description!("[year]-[month]-[day]"),
        )
        .map(|day| trusthub_fleet::unix_ms(day.midnight().assume_utc()) + 43_200_000)
        .unwrap_or(from_ms);
        if let Some(c) = d.figures.cost_micro_eur {
            cost.push((at, c as f64 / 1e6));
        }
        if let Some(p) = d.figures.p95_latency_ms {
            p95.push((at, p as f64));
        }
        daily.push((d.date, row(d.figures)));
    }
    daily.reverse();
    let cost_lines = [chart::Line {
        label: "cost, EUR (priced calls)".into(),
        points: cost,
    }];
    let p95_lines = [chart::Line {
        label: "p95 latency, ms".into(),
        points: p95,
    }];
    let total = row(detail.total);
    let page = TeamPage {
        assets: &ASSETS,
        user: Some(UserBar::from(&user)),
        link: total.link.clone(),
        cost_chart: chart::line_chart("Cost per day, EUR", &cost_lines, from_ms, to_ms, None),
        cost_legend: chart::legend(&cost_lines),
        latency_chart: chart::line_chart(
            "p95 latency per day, ms",
            &p95_lines,
            from_ms,
            to_ms,
            None,
        ),
        latency_legend: chart::legend(&p95_lines),
        total,
        days,
        periods: PERIODS,
        daily,
    };
    render(page.render(), StatusCode::OK)
}

// ---------------------------------------------------------------- prices

#[derive(Template)]
#[template(path = "ai_prices.html")]
struct PricesPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    csrf: String,
    can_edit: bool,
    prices: Vec<PriceView>,
    draft: PriceForm,
    flash: Flash,
}

async fn prices_page(
    state: &AppState,
    user: &WebUser,
    draft: PriceForm,
    flash: Flash,
    status: StatusCode,
) -> PageResult {
    match async {
        let by = Viewer::of(&user.principal)?;
        api::list_prices(state, &by).await
    }
    .await
    {
        Ok(prices) => render(
            PricesPage {
                assets: &ASSETS,
                user: Some(UserBar::from(user)),
                csrf: user.csrf.clone(),
                can_edit: user.principal.has_role(Role::Admin),
                prices,
                draft,
                flash,
            }
            .render(),
            status,
        ),
        Err(e) => Err(e),
    }
}

/// `GET /ui/ai/prices`.
pub async fn prices(State(state): State<AppState>, user: WebUser) -> PageResult {
    prices_page(
        &state,
        &user,
        PriceForm::default(),
        Flash::default(),
        StatusCode::OK,
    )
    .await
}

/// One price to set (shown again, as typed, when refused).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceForm {
    model: String,
    effective_from: String,
    input: String,
    output: String,
    #[serde(default)]
    cache_read: String,
    #[serde(default)]
    cache_write: String,
    #[serde(default)]
    reasoning: String,
}

/// `POST /ui/ai/prices` (admin): adds or replaces the price of a model from a date on.
pub async fn set_price(
    State(state): State<AppState>,
    meta: Meta,
    Act { by, user, form: f }: Act<Admin, PriceForm>,
) -> PageResult {
    let mut errors = Vec::new();
    let mut amount = |name: &str, v: &str| -> u64 {
        match v.trim() {
            "" => 0,
            v => v.parse().unwrap_or_else(|_| {
                errors.push(crate::error::FieldError::new(
                    name,
                    "must be a whole number of micro-EUR per 1,000 tokens",
                ));
                0
            }),
        }
    };
    let draft = f.clone();
    let price = PriceView {
        input: amount("input", &f.input),
        output: amount("output", &f.output),
        cache_read: amount("cache_read", &f.cache_read),
        cache_write: amount("cache_write", &f.cache_write),
        reasoning: amount("reasoning", &f.reasoning),
        model: f.model,
        effective_from: f.effective_from,
        source: String::new(),
    };
    let result = if errors.is_empty() {
        api::put_prices(
            &state,
            &meta,
            &by,
            PricesIn {
                prices: vec![price],
            },
        )
        .await
        .map(|_| ())
    } else {
        Err(ApiError::Validation(errors))
    };
    match result {
        Ok(()) => {
            prices_page(
                &state,
                &user,
                PriceForm::default(),
                Flash::notice("Saved; costs are recomputed with it at once."),
                StatusCode::OK,
            )
            .await
        }
        Err(e) => match form_error(e) {
            Ok((status, m)) => prices_page(&state, &user, draft, Flash::error(m), status).await,
            Err(e) => Err(e),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_read_as_euros_and_unknown_is_never_zero() {
        assert_eq!(euros(Some(1_500_000), false), "EUR 1.50");
        assert_eq!(euros(Some(1_200), false), "EUR 0.0012");
        assert_eq!(euros(Some(0), false), "EUR 0.00");
        assert_eq!(euros(Some(2_000_000), true), "EUR 2.00 + unpriced");
        assert_eq!(euros(None, false), "unknown (no price)");
        assert_eq!(url_segment("team a/b"), "team%20a%2Fb");
    }
}
