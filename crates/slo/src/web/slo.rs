//! An app's SLO page (CONTRACT 16, 17): status, budget, the burn-rate chart of 7 days, the
//! 30-day history, maintenance windows, and the forms — through the API's own functions.

use super::UserBar;
use super::{ASSETS, Assets, Flash, WebUser, chart};
use crate::auth::Operator;
use crate::error::{ApiError, ApiResult};
use crate::extract::Meta;
use crate::service::slo::{self as api, NewMaintenance, SloRequest, SloStatus};
use crate::state::{AppState, now};
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use time::OffsetDateTime;
use trusthub_core::Role;
use trusthub_identity::Act;
use trusthub_platform::page::NoFields;
use trusthub_platform::page::{PageResult, render};
use uuid::Uuid;

/// The status as the page shows it.
#[derive(Debug)]
pub(super) struct StatusCard {
    state: String,
    class: &'static str,
    target: f64,
    window_days: i64,
    uptime: String,
    minutes_down: String,
    minutes_observed: String,
    coverage: String,
    remaining: String,
    total: String,
    remaining_percent: String,
    days: String,
    burn_1h: String,
    burn_6h: String,
    burn_24h: String,
    burn_7d: String,
}

/// The status class of a state.
pub(super) fn class(state: &str) -> &'static str {
    match state {
        "ok" => "online",
        "burning" => "warning",
        "exhausted" => "critical",
        _ => "unknown",
    }
}

fn card(s: &SloStatus) -> StatusCard {
    let f = |x: f64| format!("{x:.2}");
    StatusCard {
        class: class(&s.state),
        state: s.state.replace('_', " "),
        target: s.target,
        window_days: s.window_days,
        uptime: s
            .uptime_percent
            .map_or_else(|| "–".into(), |u| format!("{u:.3}")),
        minutes_down: f(s.minutes_down),
        minutes_observed: format!("{:.0}", s.minutes_observed),
        coverage: format!("{:.1}", s.data_coverage * 100.0),
        remaining: format!("{:.1}", s.budget_remaining_minutes),
        total: format!("{:.1}", s.budget_total_minutes),
        remaining_percent: format!(
            "{:.0}",
            (100.0 * s.budget_remaining_minutes / s.budget_total_minutes.max(1e-9))
                .clamp(0.0, 100.0)
        ),
        days: s
            .days_to_exhaustion
            .map_or("—".into(), |d| format!("{d:.1}")),
        burn_1h: f(s.burn_rate_1h),
        burn_6h: f(s.burn_rate_6h),
        burn_24h: f(s.burn_rate_24h),
        burn_7d: f(s.burn_rate_7d),
    }
}

#[derive(Template)]
#[template(path = "slo.html")]
struct Page<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    csrf: String,
    can_edit: bool,
    app_id: String,
    app_name: String,
    status: Option<StatusCard>,
    chart: String,
    days: Vec<(String, String, String, String, String, String, String)>,
    windows: Vec<(String, String, String, String, String)>,
    form: (String, String, String),
    flash: Flash,
}

fn minute(t: OffsetDateTime) -> String {
    format!("{} {:02}:{:02}", t.date(), t.hour(), t.minute())
}

async fn page(
    state: &AppState,
    user: &WebUser,
    app: Uuid,
    flash: Flash,
    code: StatusCode,
) -> PageResult {
    let p = &user.principal;
    let now = now();
    let name = {
        let mut c = state.db.conn().await?;
        trusthub_monitors::app(&mut c, p.tenant(), app)
            .await?
            .ok_or(ApiError::NotFound("app"))?
            .name
    };
    let status = match api::status_of_app(state, p.tenant(), app, now).await {
        Ok(s) => Some(s),
        Err(ApiError::NotFound(_)) => None,
        Err(e) => return Err(e),
    };
    let (chart, days, form) = match &status {
        Some(s) => {
            let line = chart::Line {
                label: "burn rate".into(),
                points: s
                    .burn_series
                    .iter()
                    .map(|b| (b.start.unix_timestamp() * 1000, b.burn_rate))
                    .collect(),
            };
            let to = now.unix_timestamp() * 1000;
            let svg = chart::line_chart(
                "Burn rate, last 7 days",
                &[line],
                to - 7 * 86_400_000,
                to,
                None,
            );
            let days = api::history_days(state, p.tenant(), app, 30, now)
                .await?
                .into_iter()
                .rev()
                .map(|d| {
                    (
                        OffsetDateTime::from_unix_timestamp(d.start)
                            .map(|t| t.date().to_string())
                            .unwrap_or_default(),
                        format!("{:.0}", d.minutes_observed),
                        format!("{:.1}", d.minutes_down),
                        format!("{:.0}", d.minutes_maintenance),
                        d.uptime_percent
                            .map_or_else(|| "–".into(), |u| format!("{u:.3}")),
                        format!("{:.1}", d.budget_remaining_minutes),
                        format!("{:.2}", d.burn_rate),
                    )
                })
                .collect();
            (
                svg,
                days,
                (
                    s.target.to_string(),
                    s.window_days.to_string(),
                    s.minimum_data.to_string(),
                ),
            )
        }
        None => (
            String::new(),
            Vec::new(),
            ("0.999".into(), "30".into(), "0.95".into()),
        ),
    };
    let windows = {
        let mut c = state.db.conn().await?;
        let list = trusthub_monitors::timeline::maintenance(
            &mut c,
            p.tenant(),
            app,
            now - time::Duration::days(400),
        )
        .await?;
        drop(c);
        // Who made each window, by name (a deleted user stays an id).
        let names = trusthub_platform::names::resolve(
            state,
            p.tenant(),
            list.iter().map(|m| m.created_by.as_str()),
        )
        .await;
        list.into_iter()
            .rev()
            .map(|m| {
                (
                    m.id.to_string(),
                    minute(m.starts_at),
                    minute(m.ends_at),
                    m.reason,
                    names
                        .get(&m.created_by)
                        .map_or(m.created_by.clone(), |n| n.name.clone()),
                )
            })
            .collect()
    };
    let page = Page {
        assets: &ASSETS,
        user: Some(UserBar::from(user)),
        csrf: user.csrf.clone(),
        can_edit: p.has_role(Role::Operator),
        app_id: app.to_string(),
        app_name: name,
        status: status.as_ref().map(card),
        chart,
        days,
        windows,
        form,
        flash,
    };
    render(page.render(), code)
}

/// `GET /ui/apps/{id}/slo`.
pub async fn show(
    State(state): State<AppState>,
    user: WebUser,
    axum::extract::Path(id): axum::extract::Path<Uuid>,
) -> PageResult {
    page(&state, &user, id, Flash::default(), StatusCode::OK).await
}

/// The SLO form.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SloForm {
    #[serde(default)]
    target: String,
    #[serde(default)]
    window_days: String,
    #[serde(default)]
    minimum_data: String,
}

async fn after<T>(
    state: &AppState,
    user: &WebUser,
    app: Uuid,
    result: ApiResult<T>,
    notice: &str,
) -> PageResult {
    match super::outcome(result, notice, StatusCode::OK) {
        Ok((flash, code)) => page(state, user, app, flash, code).await,
        Err(e) => Err(e),
    }
}

/// `POST /ui/apps/{id}/slo` (operator).
pub async fn save(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path(id): axum::extract::Path<Uuid>,
    Act { user, form: f, .. }: Act<Operator, SloForm>,
) -> PageResult {
    let number = |field: &str, v: &str| -> Result<f64, ApiError> {
        v.trim()
            .parse::<f64>()
            .map_err(|_| ApiError::invalid(field, "a number"))
    };
    let result = async {
        let req = SloRequest {
            target: Some(number("target", &f.target)?),
            window_days: Some(
                f.window_days
                    .trim()
                    .parse()
                    .map_err(|_| ApiError::invalid("window_days", "a whole number of days"))?,
            ),
            minimum_data: Some(number("minimum_data", &f.minimum_data)?),
        };
        api::put(&state, &meta, &user.principal, id, &req).await
    }
    .await;
    after(&state, &user, id, result, "Saved.").await
}

/// `POST /ui/apps/{id}/slo/delete` (operator).
pub async fn remove(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path(id): axum::extract::Path<Uuid>,
    Act { by, user, .. }: Act<crate::auth::Operator, NoFields>,
) -> PageResult {
    let result = api::delete_slo(&state, &meta, &by, id).await;
    after(&state, &user, id, result, "The SLO is removed.").await
}

/// The maintenance form (`datetime-local` values, read as UTC).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowForm {
    #[serde(default)]
    starts_at: String,
    #[serde(default)]
    ends_at: String,
    #[serde(default)]
    reason: String,
}

fn local(field: &str, v: &str) -> Result<OffsetDateTime, ApiError> {
    let v = v.trim();
    let with_secs = if v.len() == 16 {
        format!("{v}:00")
    } else {
        v.to_owned()
    };
    time::PrimitiveDateTime::parse(
        &with_secs,
        time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]"),
    )
    .map(|t| t.assume_utc())
    .map_err(|_| ApiError::invalid(field, "a date and time (UTC)"))
}

/// `POST /ui/apps/{id}/maintenance-windows` (operator).
pub async fn plan(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path(id): axum::extract::Path<Uuid>,
    Act { user, form: f, .. }: Act<Operator, WindowForm>,
) -> PageResult {
    let result = async {
        let req = NewMaintenance {
            starts_at: local("starts_at", &f.starts_at)?,
            ends_at: local("ends_at", &f.ends_at)?,
            reason: f.reason.clone(),
        };
        api::create_maintenance(&state, &meta, &user.principal, id, &req).await
    }
    .await;
    after(&state, &user, id, result, "Planned.").await
}

/// The delete form of a window (and the app to come back to).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowDelete {
    app: Uuid,
}

/// `POST /ui/maintenance-windows/{id}/delete` (operator).
pub async fn unplan(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path(id): axum::extract::Path<Uuid>,
    Act { by, user, form: f }: Act<crate::auth::Operator, WindowDelete>,
) -> PageResult {
    let result = api::delete_maintenance(&state, &meta, &by, id).await;
    after(&state, &user, f.app, result, "Deleted.").await
}

/// The SLOs of `tenant` nearest their limit as of their last evaluation, as the apps page
/// lists them, and how many there are (the apps capability's `SloLines` lookup).
pub async fn app_lines(
    state: &AppState,
    tenant: trusthub_store::TenantId,
) -> trusthub_store::StoreResult<trusthub_monitors::SloList> {
    let mut c = state.db.conn().await?;
    let names = trusthub_monitors::app_names(&mut c, tenant).await?;
    let all = crate::store::slo::summaries(&mut c, tenant, &names).await?;
    let total = all.len();
    let lines = all
        .into_iter()
        .take(trusthub_monitors::SLO_LINES_SHOWN)
        .map(|s| {
            let st = s.last_state.unwrap_or_else(|| "not_evaluated".into());
            let num = |v: Option<f64>, digits: usize| {
                v.map_or_else(|| "–".into(), |v| format!("{v:.digits$}"))
            };
            trusthub_monitors::SloLine {
                app_id: s.app_id.to_string(),
                app_name: s.app_name,
                state: st.replace('_', " "),
                class: class(&st),
                budget_left: num(s.last_budget_remaining, 1),
                budget: num(s.last_budget_total, 1),
                uptime: num(s.last_uptime, 3),
            }
        })
        .collect();
    Ok(trusthub_monitors::SloList { lines, total })
}
