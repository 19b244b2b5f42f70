//! The pages: sign-in, overview (updating itself through htmx), agents.

use super::{ASSETS, Assets, WebUser, html};
use crate::error::{ApiError, ApiResult};
use crate::extract::Meta;
use crate::state::{AppState, now};
use askama::Template;
use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use trusthub_alerts::store::alerts;
use trusthub_fleet::web::rows::{AgentRow, agent_rows};
use trusthub_monitors::store::apps;
pub use trusthub_platform::page::{CsrfForm, UserBar, ago};
use trusthub_store::audit;

// ---------------------------------------------------------------- sign-in

#[derive(Template)]
#[template(path = "login.html")]
struct LoginPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    error: Option<String>,
    email: String,
    totp: bool,
    /// The form's target, keeping where to go after signing in.
    action: String,
    notice: Option<&'static str>,
}

/// Where to go after signing in: a local path only (no open redirect).
#[derive(Debug, Deserialize)]
pub struct Next {
    next: Option<String>,
    /// Why the user is here again (`password`: after changing it).
    changed: Option<String>,
}

/// `/login`, with `next` kept when it is a local path.
fn login_action(next: Option<&str>) -> String {
    match local(next) {
        "/" => "/login".into(),
        n => format!(
            "/login?next={}",
            n.replace('%', "%25")
                .replace('&', "%26")
                .replace('#', "%23")
                .replace('+', "%2B")
        ),
    }
}

/// `next` when it is a local path: `/` followed by anything but `/` or `\`, with no control
/// character and no backslash anywhere (browsers read `/\evil` as `//evil`); else `/`.
fn local(next: Option<&str>) -> &str {
    match next {
        Some(n)
            if n.starts_with('/')
                && !n[1..].starts_with(['/', '\\'])
                && !n.contains('\\')
                && !n.chars().any(char::is_control) =>
        {
            n
        }
        _ => "/",
    }
}

/// `GET /login`.
pub async fn login_form(Query(q): Query<Next>) -> Response {
    let page = LoginPage {
        assets: &ASSETS,
        user: None,
        error: None,
        email: String::new(),
        totp: false,
        action: login_action(q.next.as_deref()),
        notice: (q.changed.as_deref() == Some("password")).then_some(
            "Your password was changed and every session ended; sign in with the new one.",
        ),
    };
    html(page.render(), StatusCode::OK)
}

/// The sign-in form.
#[derive(Debug, Deserialize)]
pub struct LoginForm {
    email: String,
    password: String,
    #[serde(default)]
    totp_code: Option<String>,
}

/// `POST /login`: the API's checks (rate limit, TOTP or a recovery code, audit), then the
/// session cookie and a redirect.
pub async fn login(
    State(state): State<AppState>,
    meta: Meta,
    headers: axum::http::HeaderMap,
    Query(next): Query<Next>,
    axum::Form(form): axum::Form<LoginForm>,
) -> Response {
    // Login CSRF: a sign-in posted from another site is refused, and starts no session.
    if !crate::auth::posted_from_here(&headers) {
        return ApiError::Forbidden(
            "this sign-in did not come from this site's sign-in page; open the sign-in page and try again".into(),
        )
        .into_response();
    }
    let code = form.totp_code.as_deref().filter(|c| !c.trim().is_empty());
    let again = |error: String, totp: bool, status: StatusCode| {
        let page = LoginPage {
            assets: &ASSETS,
            user: None,
            error: Some(error),
            email: form.email.clone(),
            totp,
            action: login_action(next.next.as_deref()),
            notice: None,
        };
        html(page.render(), status)
    };
    match crate::routes::auth::authenticate(&state, &meta, &form.email, form.password.clone(), code)
        .await
    {
        Ok(user) => {
            let started =
                crate::routes::auth::start_session(&state, &user, &meta, StatusCode::OK).await;
            match started {
                Ok(resp) => {
                    let mut redirect = Redirect::to(local(next.next.as_deref())).into_response();
                    if let Some(cookie) = resp.headers().get(header::SET_COOKIE) {
                        redirect
                            .headers_mut()
                            .insert(header::SET_COOKIE, cookie.clone());
                    }
                    redirect
                }
                Err(e) => e.into_response(),
            }
        }
        Err(ApiError::Totp { code, detail, .. }) => again(
            if code == "totp_required" {
                "Enter the code from your authenticator app (or a recovery code).".into()
            } else {
                detail
            },
            true,
            StatusCode::UNAUTHORIZED,
        ),
        Err(e @ ApiError::RateLimited(_)) => {
            again(e.to_string(), code.is_some(), StatusCode::TOO_MANY_REQUESTS)
        }
        Err(ApiError::Unauthenticated(m)) => again(m, code.is_some(), StatusCode::UNAUTHORIZED),
        Err(ApiError::Validation(_)) => again(
            "Enter your email and password.".into(),
            false,
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        Err(e) => e.into_response(),
    }
}

/// `POST /logout` (CSRF token required).
pub async fn logout(
    State(state): State<AppState>,
    meta: Meta,
    user: WebUser,
    axum::Form(form): axum::Form<CsrfForm>,
) -> Response {
    if let Err(refused) = user.check_csrf(&form.csrf) {
        return refused.into_response();
    }
    let p = &user.principal;
    let crate::auth::Credential::Session { session_id } = p.credential else {
        return Redirect::to("/login").into_response();
    };
    let done: ApiResult<()> = async {
        let mut tx = state.db.begin().await?;
        trusthub_identity::store::sessions::delete(&mut tx, p.tenant(), session_id).await?;
        meta.record(
            &mut tx,
            p,
            trusthub_core::audit::LOGOUT,
            p.actor(),
            serde_json::json!({}),
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }
    .await;
    if let Err(e) = done {
        return e.into_response();
    }
    let mut resp = Redirect::to("/login").into_response();
    resp.headers_mut().insert(
        header::SET_COOKIE,
        header::HeaderValue::from_static(
            "trusthub_session=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0",
        ),
    );
    resp
}

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
}

/// Each agent's CPU over the last hour, as sparkline points in a 100 × 30 box.
/// Agents the overview lists at most; the rest are on the agents page.
const OVERVIEW_AGENTS: usize = 24;

/// Keeps the agents that most need a look (offline, then silent, then the busiest by their
/// last minutes of CPU) and draws their last hour of CPU: one fleet query over five minutes
/// to rank, then one query per agent shown.
async fn glance(state: &AppState, user: &WebUser, rows: &mut Vec<AgentRow>) -> ApiResult<()> {
    let tenant = user.principal.tenant();
    let to = trusthub_fleet::store::telemetry::unix_ms(now()) / 60_000 * 60_000 + 60_000;
    let mut c = state.db.conn().await?;
    let recent = trusthub_fleet::store::telemetry::fleet_minutes(
        &mut c,
        tenant,
        "cpu.percent",
        None,
        to - 300_000,
        to,
    )
    .await?;
    let mut latest: std::collections::HashMap<String, f64> = Default::default();
    for (agent, _, avg) in recent {
        // Ordered by time: the last one wins.
        latest.insert(agent.to_string(), avg);
    }
    let rank = |r: &AgentRow| match r.status {
        "offline" => 0,
        "silent" => 1,
        _ => 2,
    };
    rows.sort_by(|a, b| {
        rank(a).cmp(&rank(b)).then_with(|| {
            let cpu = |r: &AgentRow| latest.get(&r.id).copied().unwrap_or(-1.0);
            cpu(b).total_cmp(&cpu(a))
        })
    });
    rows.truncate(OVERVIEW_AGENTS);
    let from = to - 3_600_000;
    for r in rows.iter_mut() {
        let Ok(id) = r.id.parse::<uuid::Uuid>() else {
            continue;
        };
        let minutes = trusthub_fleet::store::telemetry::fleet_minutes(
            &mut c,
            tenant,
            "cpu.percent",
            Some(id),
            from,
            to,
        )
        .await?;
        r.spark = minutes
            .iter()
            .map(|(_, minute, avg)| {
                let x = (minute - from) as f64 / 3_600_000.0 * 100.0;
                let y = 30.0 - avg.clamp(0.0, 100.0) * 0.3;
                format!("{x:.1},{y:.1}")
            })
            .collect::<Vec<_>>()
            .join(" ");
    }
    Ok(())
}

async fn live(state: &AppState, user: &WebUser) -> ApiResult<Live> {
    let tenant = user.principal.tenant();
    let mut l = Live {
        agents: agent_rows(state, user).await?,
        ..Live::default()
    };
    l.agents_total = l.agents.len();
    for a in &l.agents {
        match a.status {
            "online" => l.online += 1,
            "silent" => l.silent += 1,
            _ => l.offline += 1,
        }
    }
    glance(state, user, &mut l.agents).await?;
    l.more_agents = l.agents_total - l.agents.len();
    let mut c = state.db.conn().await?;
    for (severity, n) in alerts::open_counts(&mut c, tenant).await? {
        let n = usize::try_from(n).unwrap_or(0);
        l.alerts_total += n;
        match severity.as_str() {
            "critical" => l.critical += n,
            "warning" => l.warning += n,
            _ => l.info += n,
        }
    }
    l.anomalies =
        usize::try_from(trusthub_certs::store::anomalies::open_count(&mut c, tenant).await?)
            .unwrap_or(0);
    let (tracked, off) = apps::state_counts(&mut c, tenant).await?;
    l.apps_total = usize::try_from(tracked).unwrap_or(0);
    l.apps_off = usize::try_from(off).unwrap_or(0);
    // As of each SLO's last evaluation (every minute): computing every status here would
    // take about 0.9 s at 10,000 SLOs, every 15 s per open dashboard.
    let (total, alarm) = trusthub_slo::store::slo::summary_counts(&mut c, tenant).await?;
    l.slos_total = usize::try_from(total).unwrap_or(0);
    l.slos_alarm = usize::try_from(alarm).unwrap_or(0);
    let now = now();
    l.events = audit::list(
        &mut c,
        tenant,
        &audit::Filter {
            event_type: None,
            since: None,
            before_id: None,
            limit: 10,
        },
    )
    .await?
    .into_iter()
    .map(|e| Event {
        at: ago(Some(e.created_at), now),
        what: format!("{} — {}", e.event_type.replace('_', " "), e.subject),
    })
    .collect();
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

// ---------------------------------------------------------------- audit log

/// One audit row.
#[derive(Debug)]
struct AuditRow {
    at: String,
    event: String,
    actor: String,
    subject: String,
    ip: String,
}

#[derive(Template)]
#[template(path = "audit.html")]
struct AuditPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    entries: Vec<AuditRow>,
}

/// `GET /ui/audit`: the newest 200 audit rows of the tenant.
pub async fn audit_log(State(state): State<AppState>, user: WebUser) -> Response {
    let rows: ApiResult<Vec<trusthub_store::audit::Entry>> = async {
        let mut c = state.db.conn().await?;
        Ok(audit::list(
            &mut c,
            user.principal.tenant(),
            &audit::Filter {
                event_type: None,
                since: None,
                before_id: None,
                limit: 200,
            },
        )
        .await?)
    }
    .await;
    match rows {
        Ok(rows) => html(
            AuditPage {
                assets: &ASSETS,
                user: Some(UserBar::from(&user)),
                entries: rows
                    .into_iter()
                    .map(|e| AuditRow {
                        at: trusthub_platform::state::rfc3339(e.created_at),
                        event: e.event_type,
                        actor: e.actor,
                        subject: e.subject,
                        ip: e.ip.unwrap_or_default(),
                    })
                    .collect(),
            }
            .render(),
            StatusCode::OK,
        ),
        Err(e) => e.into_response(),
    }
}
