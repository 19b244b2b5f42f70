//! The services behind [`crate::routes::slo`]: what its handlers, the dashboard's
//! pages and other capabilities call.

use crate::auth::Operator;
use crate::error::{ApiError, ApiResult, FieldError, all_valid};
use crate::extract::Meta;
use crate::objective::{self as core, Objective, Span, Verdict};
use crate::state::{AppState, now};
use crate::store::slo::{self as store, Slo};
use serde::{Deserialize, Serialize};
use serde_json::json;
use time::OffsetDateTime;
use trusthub_core::audit as ev;
use trusthub_monitors::timeline::{self as timeline, Maintenance};
use trusthub_store::TenantId;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

/// An SLO (SPEC 2.2); every field has a default.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SloRequest {
    /// Availability target, a fraction in (0, 1) (default 0.999).
    #[schema(exclusive_minimum = 0.0, exclusive_maximum = 1.0)]
    pub target: Option<f64>,
    /// Rolling window, 1 to 90 days (default 30).
    #[schema(minimum = 1, maximum = 90)]
    pub window_days: Option<i64>,
    /// The share of the window that must have a verdict for the SLO to say anything, in
    /// [0, 1] (default 0.95): below it the state is `insufficient_data` and no burn alert
    /// fires.
    #[schema(minimum = 0.0, maximum = 1.0)]
    pub minimum_data: Option<f64>,
}

/// One hour of the burn series.
#[derive(Debug, Serialize, ToSchema)]
pub struct BurnPoint {
    /// The hour's start.
    #[serde(with = "time::serde::rfc3339")]
    pub start: OffsetDateTime,
    /// Its burn rate.
    pub burn_rate: f64,
}

/// An SLO's status (CONTRACT 16).
#[derive(Debug, Serialize, ToSchema)]
pub struct SloStatus {
    /// The app.
    pub app_id: Uuid,
    /// Its name.
    pub app_name: String,
    /// Availability target.
    pub target: f64,
    /// Rolling window, days.
    pub window_days: i64,
    /// Coverage guard.
    pub minimum_data: f64,
    /// `ok`, `burning` (the week's burn rate is above 0), `exhausted` or `insufficient_data`.
    pub state: String,
    /// Up share of the observed minutes of the window; null while `minutes_observed` is 0
    /// (nothing was observed: no uptime is invented).
    pub uptime_percent: Option<f64>,
    /// Minutes down in the window.
    pub minutes_down: f64,
    /// Minutes with a verdict, outside maintenance.
    pub minutes_observed: f64,
    /// Minutes of the window outside maintenance windows.
    pub minutes_in_window: f64,
    /// `minutes_observed / minutes_in_window`.
    pub data_coverage: f64,
    /// `(1 - target) * window_days * 1440`.
    pub budget_total_minutes: f64,
    /// What is left (negative once overspent).
    pub budget_remaining_minutes: f64,
    /// Burn rate over the last hour (its observed minutes only).
    pub burn_rate_1h: f64,
    /// Over 6 hours.
    pub burn_rate_6h: f64,
    /// Over 24 hours.
    pub burn_rate_24h: f64,
    /// Over 7 days.
    pub burn_rate_7d: f64,
    /// Days until the budget is gone at the week's burn rate; null when not burning.
    pub days_to_exhaustion: Option<f64>,
    /// Hourly burn rates over the last 7 days, oldest first.
    pub burn_series: Vec<BurnPoint>,
    /// When this was computed.
    #[serde(with = "time::serde::rfc3339")]
    pub computed_at: OffsetDateTime,
}

pub(crate) fn secs(t: OffsetDateTime) -> i64 {
    t.unix_timestamp()
}

pub(crate) fn at(s: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(s).unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

/// Rounded for the API (no float noise such as 33.200000000000003).
pub(crate) fn r(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

pub(crate) fn core_spans(spans: &[timeline::Span]) -> Vec<Span> {
    spans
        .iter()
        .map(|s| Span {
            start: secs(s.start_at),
            end: secs(s.end_at),
            verdict: if s.down {
                Verdict::Differs
            } else {
                Verdict::Matches
            },
        })
        .collect()
}

pub(crate) fn objective(s: &Slo) -> Objective {
    Objective {
        target: s.target,
        window_days: s.window_days.clamp(1, 90) as u32,
        minimum_data: s.minimum_data,
    }
}

/// How far back a status reads: the window, and the 7 days of the series.
pub(crate) fn lookback(s: &Slo) -> time::Duration {
    time::Duration::days(s.window_days.max(7))
}

pub(crate) fn status_of(
    s: &Slo,
    app_name: String,
    spans: &[Span],
    maintenance: &[(i64, i64)],
    now: OffsetDateTime,
) -> SloStatus {
    let st = core::status(&objective(s), spans, maintenance, secs(now));
    SloStatus {
        app_id: s.app_id,
        app_name,
        target: s.target,
        window_days: s.window_days,
        minimum_data: s.minimum_data,
        state: st.state.as_str().into(),
        uptime_percent: st.uptime_percent.map(r),
        minutes_down: r(st.minutes_down),
        minutes_observed: r(st.minutes_observed),
        minutes_in_window: r(st.minutes_in_window),
        data_coverage: r(st.data_coverage),
        budget_total_minutes: r(st.budget_total_minutes),
        budget_remaining_minutes: r(st.budget_remaining_minutes),
        burn_rate_1h: r(st.burn_rates[0]),
        burn_rate_6h: r(st.burn_rates[1]),
        burn_rate_24h: r(st.burn_rates[2]),
        burn_rate_7d: r(st.burn_rates[3]),
        days_to_exhaustion: st.days_to_exhaustion.map(r),
        burn_series: st
            .burn_series
            .into_iter()
            .map(|(start, rate)| BurnPoint {
                start: at(start),
                burn_rate: r(rate),
            })
            .collect(),
        computed_at: now,
    }
}

/// Keeps `s` as its SLO's last status (the overview's counts, the apps page's list).
pub(crate) async fn remember(state: &AppState, s: &SloStatus) -> ApiResult<()> {
    let mut tx = state.db.begin().await?;
    store::save_summary(
        &mut tx,
        s.app_id,
        &s.state,
        s.budget_remaining_minutes,
        s.budget_total_minutes,
        s.uptime_percent,
        s.computed_at,
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Recomputes and keeps the app's SLO status, when it has an SLO.
pub(crate) async fn refresh(state: &AppState, tenant: TenantId, app: Uuid) -> ApiResult<()> {
    match status_of_app(state, tenant, app, now()).await {
        Ok(s) => remember(state, &s).await,
        Err(ApiError::NotFound(_)) => Ok(()),
        Err(e) => Err(e),
    }
}

/// One app's SLO status at `now`, or 404 (no such app in the tenant, or no SLO).
pub(crate) async fn status_of_app(
    state: &AppState,
    tenant: TenantId,
    app: Uuid,
    now: OffsetDateTime,
) -> ApiResult<SloStatus> {
    let mut c = state.db.conn().await?;
    let a = trusthub_monitors::app(&mut c, tenant, app)
        .await?
        .ok_or(ApiError::NotFound("app"))?;
    let s = store::get(&mut c, tenant, app)
        .await?
        .ok_or(ApiError::NotFound("SLO"))?;
    let since = now - lookback(&s);
    let spans = core_spans(&timeline::spans(&mut c, app, since).await?);
    let maint: Vec<(i64, i64)> = timeline::maintenance(&mut c, tenant, app, since)
        .await?
        .iter()
        .map(|m| (secs(m.starts_at), secs(m.ends_at)))
        .collect();
    Ok(status_of(&s, a.name, &spans, &maint, now))
}

pub(crate) fn check(req: &SloRequest) -> Result<(f64, i64, f64), ApiError> {
    let mut errors = Vec::new();
    let target = req.target.unwrap_or(0.999);
    if !(target > 0.0 && target < 1.0) {
        errors.push(FieldError::new(
            "target",
            "a fraction between 0 and 1, both excluded (0.999 for 99.9 %)",
        ));
    }
    let window_days = req.window_days.unwrap_or(30);
    if !(1..=90).contains(&window_days) {
        errors.push(FieldError::new("window_days", "between 1 and 90"));
    }
    let minimum_data = req.minimum_data.unwrap_or(0.95);
    if !(0.0..=1.0).contains(&minimum_data) {
        errors.push(FieldError::new(
            "minimum_data",
            "a fraction between 0 and 1",
        ));
    }
    if errors.is_empty() {
        Ok((target, window_days, minimum_data))
    } else {
        Err(ApiError::Validation(errors))
    }
}

/// Sets the app's SLO for `p`'s tenant (the API and the dashboard); whether it replaced one.
pub(crate) async fn put(
    state: &AppState,
    meta: &Meta,
    p: &crate::auth::Principal,
    app: Uuid,
    req: &SloRequest,
) -> ApiResult<(bool, SloStatus)> {
    let (target, window_days, minimum_data) = check(req)?;
    let now = now();
    let mut tx = state.db.begin().await?;
    if trusthub_monitors::app(&mut tx, p.tenant(), app)
        .await?
        .is_none()
    {
        return Err(ApiError::NotFound("app"));
    }
    let replaced = store::put(
        &mut tx,
        &Slo {
            app_id: app,
            tenant_id: p.tenant().0,
            target,
            window_days,
            minimum_data,
            created_at: now,
            updated_at: now,
        },
    )
    .await?;
    meta.record(
        &mut tx,
        p,
        ev::SLO_SET,
        format!("app:{app}"),
        json!({"target": target, "window_days": window_days, "minimum_data": minimum_data, "replaced": replaced}),
    )
    .await?;
    tx.commit().await?;
    let status = status_of_app(state, p.tenant(), app, now).await?;
    remember(state, &status).await?;
    Ok((replaced, status))
}

/// The service behind `delete_slo`, for the API and the dashboard alike.
pub async fn delete_slo(state: &AppState, meta: &Meta, by: &Operator, id: Uuid) -> ApiResult<()> {
    let p = &by.0;
    let mut tx = state.db.begin().await?;
    if !store::delete(&mut tx, p.tenant(), id).await? {
        return Err(ApiError::NotFound("SLO"));
    }
    meta.record(&mut tx, p, ev::SLO_DELETED, format!("app:{id}"), json!({}))
        .await?;
    tx.commit().await?;
    Ok(())
}

type Spans = std::collections::HashMap<Uuid, Vec<timeline::Span>>;
type Windows = std::collections::HashMap<Uuid, Vec<(i64, i64)>>;

/// Each app's timeline since `since` (sorted) and its maintenance windows.
async fn timelines(
    ex: &mut impl trusthub_store::Exec,
    tenant: TenantId,
    since: OffsetDateTime,
) -> trusthub_store::StoreResult<(Spans, Windows)> {
    let mut spans = Spans::default();
    for s in timeline::spans_of_tenant(ex, tenant, since).await? {
        spans.entry(s.app_id).or_default().push(s);
    }
    for v in spans.values_mut() {
        v.sort_unstable_by_key(|s| (s.start_at, s.id));
    }
    let mut maint = Windows::default();
    for m in timeline::maintenance_of_tenant(ex, tenant, since).await? {
        maint
            .entry(m.app_id)
            .or_default()
            .push((secs(m.starts_at), secs(m.ends_at)));
    }
    Ok((spans, maint))
}

/// Each app's availability over the `days` days before `now`, in percent of its observed
/// time outside maintenance (as an SLO counts it); apps without observed time are absent.
pub async fn availability(
    ex: &mut impl trusthub_store::Exec,
    tenant: TenantId,
    days: i64,
    now: OffsetDateTime,
) -> trusthub_store::StoreResult<std::collections::HashMap<Uuid, f64>> {
    let since = now - time::Duration::days(days);
    let (spans, maint) = timelines(ex, tenant, since).await?;
    Ok(spans
        .iter()
        .filter_map(|(app, list)| {
            let windows = maint.get(app).map_or(&[][..], Vec::as_slice);
            let t = core::tally(&core_spans(list), windows, secs(since), secs(now));
            (t.observed_secs > 0).then(|| {
                let up = (t.observed_secs - t.down_secs) as f64 / t.observed_secs as f64;
                (*app, up * 100.0)
            })
        })
        .collect())
}

/// Every SLO status of the tenant at `now`, least budget left first.
pub async fn statuses(
    state: &AppState,
    tenant: TenantId,
    now: OffsetDateTime,
) -> ApiResult<Vec<SloStatus>> {
    let mut c = state.db.conn().await?;
    let slos = store::list(&mut c, Some(tenant)).await?;
    let since = now
        - slos
            .iter()
            .map(lookback)
            .max()
            .unwrap_or(time::Duration::days(7));
    let names = trusthub_monitors::app_names(&mut c, tenant).await?;
    let (spans, maint) = timelines(&mut c, tenant, since).await?;
    let mut out: Vec<SloStatus> = slos
        .iter()
        .map(|s| {
            status_of(
                s,
                names.get(&s.app_id).cloned().unwrap_or_default(),
                &core_spans(spans.get(&s.app_id).map_or(&[][..], Vec::as_slice)),
                maint.get(&s.app_id).map_or(&[][..], Vec::as_slice),
                now,
            )
        })
        .collect();
    out.sort_by(|a, b| {
        a.budget_remaining_minutes
            .total_cmp(&b.budget_remaining_minutes)
            .then(a.app_name.cmp(&b.app_name))
    });
    Ok(out)
}

/// The history's length.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct HistoryQuery {
    /// UTC days up to today, 1 to 365 (default 30).
    #[param(minimum = 1, maximum = 365)]
    pub days: Option<i64>,
}

/// The daily rows of an app's SLO history (oldest first).
pub(crate) async fn history_days(
    state: &AppState,
    tenant: TenantId,
    app: Uuid,
    days: u32,
    now: OffsetDateTime,
) -> ApiResult<Vec<core::Day>> {
    let mut c = state.db.conn().await?;
    let Some(tracked) = trusthub_monitors::app(&mut c, tenant, app).await? else {
        return Err(ApiError::NotFound("app"));
    };
    let created = secs(tracked.created_at);
    let s = store::get(&mut c, tenant, app)
        .await?
        .ok_or(ApiError::NotFound("SLO"))?;
    let since = now - time::Duration::days(i64::from(days) + s.window_days + 1);
    let spans = core_spans(&timeline::spans(&mut c, app, since).await?);
    let maint: Vec<(i64, i64)> = timeline::maintenance(&mut c, tenant, app, since)
        .await?
        .iter()
        .map(|m| (secs(m.starts_at), secs(m.ends_at)))
        .collect();
    // Days before the app was tracked say nothing about it: not shown.
    Ok(
        core::history(&objective(&s), &spans, &maint, secs(now), days)
            .into_iter()
            .filter(|d| d.start + 86_400 > created)
            .collect(),
    )
}

/// The CSV of [`history`].
pub async fn history_csv(
    state: &AppState,
    tenant: TenantId,
    app: Uuid,
    days: u32,
    now: OffsetDateTime,
) -> ApiResult<String> {
    let mut body = String::from(
        "date,minutes_observed,minutes_down,uptime_percent,budget_remaining_minutes,burn_rate\r\n",
    );
    for d in history_days(state, tenant, app, days, now).await? {
        body.push_str(&format!(
            "{},{},{},{},{},{}\r\n",
            at(d.start).date(),
            r(d.minutes_observed),
            r(d.minutes_down),
            d.uptime_percent
                .map(|u| r(u).to_string())
                .unwrap_or_default(),
            r(d.budget_remaining_minutes),
            r(d.burn_rate)
        ));
    }
    Ok(body)
}

/// A maintenance window.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewMaintenance {
    /// Start (RFC 3339).
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub starts_at: OffsetDateTime,
    /// End (RFC 3339), after the start, at most 30 days later.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub ends_at: OffsetDateTime,
    /// Why (1 to 500 characters).
    #[schema(min_length = 1, max_length = 500)]
    pub reason: String,
}

/// A maintenance window as shown.
#[derive(Debug, Serialize, ToSchema)]
pub struct MaintenanceView {
    /// Id.
    pub id: Uuid,
    /// The app.
    pub app_id: Uuid,
    /// Start.
    #[serde(with = "time::serde::rfc3339")]
    pub starts_at: OffsetDateTime,
    /// End.
    #[serde(with = "time::serde::rfc3339")]
    pub ends_at: OffsetDateTime,
    /// Why.
    pub reason: String,
    /// Who.
    pub created_by: String,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

impl From<Maintenance> for MaintenanceView {
    fn from(m: Maintenance) -> Self {
        MaintenanceView {
            id: m.id,
            app_id: m.app_id,
            starts_at: m.starts_at,
            ends_at: m.ends_at,
            reason: m.reason,
            created_by: m.created_by,
            created_at: m.created_at,
        }
    }
}

/// Creates a maintenance window (the API and the dashboard), audited.
pub(crate) async fn create_maintenance(
    state: &AppState,
    meta: &Meta,
    p: &crate::auth::Principal,
    app: Uuid,
    req: &NewMaintenance,
) -> ApiResult<MaintenanceView> {
    let mut errors = Vec::new();
    let reason = req.reason.trim();
    if reason.is_empty() || reason.chars().count() > 500 {
        errors.push(FieldError::new("reason", "1 to 500 characters"));
    }
    if req.ends_at <= req.starts_at {
        errors.push(FieldError::new("ends_at", "must be after starts_at"));
    } else if req.ends_at - req.starts_at > time::Duration::days(30) {
        errors.push(FieldError::new("ends_at", "a window lasts at most 30 days"));
    }
    all_valid(errors)?;
    let now = now();
    let trunc = |t: OffsetDateTime| t.replace_nanosecond(0).unwrap_or(t);
    let m = Maintenance {
        id: Uuid::now_v7(),
        tenant_id: p.tenant().0,
        app_id: app,
        starts_at: trunc(req.starts_at),
        ends_at: trunc(req.ends_at),
        reason: reason.to_owned(),
        created_by: p.actor(),
        created_at: now,
    };
    let mut tx = state.db.begin().await?;
    if trusthub_monitors::app(&mut tx, p.tenant(), app)
        .await?
        .is_none()
    {
        return Err(ApiError::NotFound("app"));
    }
    timeline::insert_maintenance(&mut tx, &m).await?;
    meta.record(
        &mut tx,
        p,
        ev::MAINTENANCE_WINDOW_CREATED,
        format!("app:{app}"),
        json!({"id": m.id, "starts_at": m.starts_at.to_string(), "ends_at": m.ends_at.to_string(), "reason": m.reason}),
    )
    .await?;
    tx.commit().await?;
    refresh(state, p.tenant(), app).await?;
    Ok(m.into())
}

/// The service behind `delete_maintenance`, for the API and the dashboard alike.
pub async fn delete_maintenance(
    state: &AppState,
    meta: &Meta,
    by: &Operator,
    id: Uuid,
) -> ApiResult<()> {
    let p = &by.0;
    let mut tx = state.db.begin().await?;
    let Some(m) = timeline::maintenance_window(&mut tx, p.tenant(), id).await? else {
        return Err(ApiError::NotFound("maintenance window"));
    };
    timeline::delete_maintenance(&mut tx, p.tenant(), id).await?;
    meta.record(
        &mut tx,
        p,
        ev::MAINTENANCE_WINDOW_DELETED,
        format!("app:{}", m.app_id),
        json!({"id": id, "reason": m.reason}),
    )
    .await?;
    tx.commit().await?;
    refresh(state, p.tenant(), m.app_id).await?;
    Ok(())
}
