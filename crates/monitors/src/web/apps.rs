//! The apps page: tracked apps and URL monitors, their states, SLOs and candidates.

use super::*;
use crate::auth::Operator;
use crate::error::{ApiError, ApiResult};
use crate::extract::Meta;
use crate::state::{AppState, now};
use crate::store::apps;
use askama::Template;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use trusthub_core::Role;
use trusthub_identity::Act;
use trusthub_platform::page::NoFields;

/// One tracked app.
#[derive(Debug)]
struct AppRow {
    id: String,
    name: String,
    app_type: String,
    identifier: String,
    host: String,
    expected: String,
    observed: String,
    alerting: bool,
    changed: String,
    /// Checks: `every 30 s · last 12 s ago: cannot connect: …`.
    check: Option<String>,
    /// A restart can work here (an agent's process with a restart command, a unit, a
    /// container or a compose service).
    restartable: bool,
    /// The public badge's address, while it is on.
    badge: Option<String>,
    /// A push monitor (its URL can be replaced).
    push: bool,
}

/// One discovery candidate.
#[derive(Debug)]
struct CandidateRow {
    app_type: String,
    identifier: String,
    name: String,
    listening: String,
    tracked: bool,
}

#[derive(Template)]
#[template(path = "apps.html")]
struct AppsPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    apps: Vec<AppRow>,
    hosts: Vec<(String, String, bool)>,
    agent: String,
    candidates: Vec<CandidateRow>,
    only_off: bool,
    total: usize,
    page: usize,
    pages: usize,
    error: Option<String>,
    /// A push monitor just made: its name and whole URL, shown this once.
    pushed: Option<(String, String)>,
    can_edit: bool,
    can_restart: bool,
    csrf: String,
    /// SLOs, least budget left first: `(app id, name, state, class, budget left, total,
    /// uptime)`.
    slos: Vec<crate::service::events::SloLine>,
    /// How many SLOs the tenant has (`slos` holds the first ones).
    slo_total: usize,
}

/// Which host's discovery list to show.
#[derive(Debug, Deserialize)]
pub struct AppsQuery {
    agent: Option<uuid::Uuid>,
    /// `off`: only apps out of their expected state or alerting.
    show: Option<String>,
    /// 1-based page of [`APPS_PAGE`] apps.
    page: Option<usize>,
}

/// Apps per page of the apps list.
const APPS_PAGE: usize = 200;

async fn apps_page(
    state: &AppState,
    user: &WebUser,
    q: &AppsQuery,
    error: Option<String>,
    status: StatusCode,
) -> Response {
    apps_page_with(state, user, q, error, None, status).await
}

async fn apps_page_with(
    state: &AppState,
    user: &WebUser,
    q: &AppsQuery,
    error: Option<String>,
    pushed: Option<(String, String)>,
    status: StatusCode,
) -> Response {
    let page: ApiResult<AppsPage> = async {
        let tenant = user.principal.tenant();
        let now = now();
        let mut c = state.db.conn().await?;
        let hosts = trusthub_fleet::agents(&mut c, tenant).await?;
        let names: std::collections::HashMap<uuid::Uuid, String> =
            hosts.iter().map(|h| (h.id, h.hostname.clone())).collect();
        let agent = q.agent;
        let only_off = q.show.as_deref() == Some("off");
        let page = q.page.unwrap_or(1).max(1);
        let (mut listed, total) = apps::page(
            &mut c,
            tenant,
            &names,
            only_off,
            ((page - 1) * APPS_PAGE) as i64,
            APPS_PAGE as i64,
        )
        .await?;
        let total = usize::try_from(total).unwrap_or(0);
        let pages = total.div_ceil(APPS_PAGE).max(1);
        if page > pages {
            listed.clear();
        }
        let apps = listed
            .into_iter()
            .map(|a| {
                let kind = trusthub_core::apps::AppKind::parse(&a.app_type);
                let is_check = kind.is_some_and(|k| k.is_check());
                let check = is_check.then(|| {
                    let every = a.interval_seconds.unwrap_or(60);
                    let last = match (a.last_check_at, a.last_check_ok) {
                        (Some(at), Some(true)) => format!("last {}: ok", ago(Some(at), now)),
                        (Some(at), _) => format!(
                            "last {}: {}",
                            ago(Some(at), now),
                            a.last_check_error.clone().unwrap_or_else(|| {
                                match a.last_check_status {
                                    Some(s) => format!("HTTP {s}"),
                                    None => "failed".into(),
                                }
                            })
                        ),
                        (None, _) => "not checked yet".into(),
                    };
                    let n = a.retries + 1;
                    if kind == Some(trusthub_core::apps::AppKind::Push) {
                        let last = match (a.last_check_at, a.last_check_ok) {
                            (None, _) => "no ping yet".to_owned(),
                            _ => last.replacen("last", "last ping", 1),
                        };
                        return format!(
                            "a ping every {every} s (+{} s grace), down after {n} missed · {last}",
                            a.grace_seconds.unwrap_or(0)
                        );
                    }
                    format!(
                        "every {every} s, down after {n} failure{} · {last}",
                        if n == 1 { "" } else { "s" }
                    )
                });
                let restartable = a.agent_id.is_some()
                    && !is_check
                    && (kind != Some(trusthub_core::apps::AppKind::Process)
                        || a.restart_command.is_some());
                (a, check, restartable)
            })
            .map(|(a, check, restartable)| AppRow {
                check,
                restartable,
                push: a.app_type == "push",
                badge: a
                    .badge_token
                    .as_deref()
                    .map(|t| format!("{}/badge/app/{t}.svg", state.public_url)),
                id: a.id.to_string(),
                host: match a.agent_id {
                    Some(g) => names.get(&g).cloned().unwrap_or_default(),
                    None => "the hub".into(),
                },
                name: a.name,
                app_type: a.app_type,
                identifier: match &a.push_token_prefix {
                    Some(p) => {
                        crate::service::apps::create::push_url(&state.public_url, &format!("{p}…"))
                    }
                    None => a.identifier,
                },
                expected: a.expected_state,
                observed: a.observed_state.unwrap_or_else(|| "unknown".into()),
                alerting: a.alerting,
                changed: ago(a.last_state_change, now),
            })
            .collect();
        drop(c);
        // Each SLO as of its last evaluation (every minute, and when it or a maintenance
        // window changes), not computed here for every SLO.
        let slos = (state.part::<crate::service::events::SloLines>().0)(state, tenant).await?;
        let slo_total = slos.total;
        let slos = slos.lines;
        let candidates = match agent {
            Some(id) => crate::service::apps::candidates_of(state, &user.principal, id)
                .await?
                .into_iter()
                .map(|c| CandidateRow {
                    app_type: c.app_type,
                    identifier: c.identifier,
                    name: c.name,
                    listening: c.listening.join(", "),
                    tracked: c.tracked,
                })
                .collect(),
            None => Vec::new(),
        };
        Ok(AppsPage {
            assets: &ASSETS,
            user: Some(UserBar::from(user)),
            apps,
            hosts: hosts
                .into_iter()
                .map(|h| (h.id.to_string(), h.hostname, Some(h.id) == agent))
                .collect(),
            agent: agent.map(|a| a.to_string()).unwrap_or_default(),
            only_off,
            total,
            page,
            pages,
            candidates,
            error,
            pushed,
            can_edit: user.principal.has_role(Role::Operator),
            can_restart: user.principal.has_role(Role::Admin),
            csrf: user.csrf.clone(),
            slos,
            slo_total,
        })
    }
    .await;
    match page {
        Ok(p) => html(p.render(), status),
        Err(e) => e.into_response(),
    }
}

/// `GET /ui/apps`: tracked apps with their expected and observed state; operators track
/// more from a host's discovery list, change what is expected, and untrack.
pub async fn apps(
    State(state): State<AppState>,
    user: WebUser,
    Query(q): Query<AppsQuery>,
) -> Response {
    apps_page(&state, &user, &q, None, StatusCode::OK).await
}

/// A candidate to track.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrackForm {
    agent_id: uuid::Uuid,
    app_type: String,
    identifier: String,
    name: String,
}

/// `POST /ui/apps` (operator, CSRF token): tracked as through the API.
pub async fn track_app(
    State(state): State<AppState>,
    meta: Meta,
    Act { user, form, .. }: Act<Operator, TrackForm>,
) -> Response {
    let req = crate::service::apps::NewAppRequest {
        agent_id: Some(form.agent_id),
        name: form.name,
        app_type: Some(form.app_type),
        kind: None,
        identifier: Some(form.identifier),
        owner_email: None,
        runbook_url: None,
        notes: None,
        expected_state: None,
        restart_command: None,
        endpoint: None,
        interval_seconds: None,
        timeout_seconds: None,
        retries: None,
        recoveries: None,
        expected_status: None,
        keyword: None,
        tls_min_days: None,
        grace_seconds: None,
        expected: None,
        json_query: None,
    };
    match crate::service::apps::create_app(&state, &meta, &user.principal, req).await {
        Ok(_) => Redirect::to("/ui/apps").into_response(),
        Err(ApiError::Validation(errors)) => {
            apps_page(
                &state,
                &user,
                &AppsQuery {
                    agent: Some(form.agent_id),
                    show: None,
                    page: None,
                },
                Some(refusal(&errors)),
                StatusCode::UNPROCESSABLE_ENTITY,
            )
            .await
        }
        Err(e) => e.into_response(),
    }
}

/// A check the hub runs itself.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckForm {
    name: String,
    kind: String,
    endpoint: String,
    #[serde(default)]
    interval_seconds: String,
    /// Failures in a row before down (`retries + 1`).
    #[serde(default)]
    failures: String,
    #[serde(default)]
    keyword: String,
    /// push: seconds a ping may be late.
    #[serde(default)]
    grace_seconds: String,
    /// dns: expected values, comma-separated.
    #[serde(default)]
    expected: String,
    /// http: a JSON assertion's path, operator and value (the value read as JSON when it
    /// is a number, a boolean or null, else as text).
    #[serde(default)]
    json_path: String,
    #[serde(default)]
    json_op: String,
    #[serde(default)]
    json_value: String,
    /// Empty for the hub, else the id of the host whose agent runs it.
    #[serde(default)]
    run_from: String,
}

/// `POST /ui/apps/checks` (operator, CSRF token): a check the hub runs, or a host's agent
/// (`run_from`), made as through the API (`POST /apps`, with `agent_id` for a host).
pub async fn add_check(
    State(state): State<AppState>,
    meta: Meta,
    Act { user, form, .. }: Act<Operator, CheckForm>,
) -> Response {
    let number = |field: &str, v: &str| -> Result<Option<i64>, ApiError> {
        match v.trim() {
            "" => Ok(None),
            n => n
                .parse()
                .map(Some)
                .map_err(|_| ApiError::invalid(field, "must be a whole number")),
        }
    };
    let run_from = match form.run_from.trim() {
        "" => Ok(None),
        id => uuid::Uuid::parse_str(id)
            .map(Some)
            .map_err(|_| ApiError::invalid("run_from", "must be the hub or one of your hosts")),
    };
    let push = form.kind == "push";
    let json_query = (!form.json_path.trim().is_empty()).then(|| {
        let v = form.json_value.trim();
        crate::service::apps::JsonQueryBody {
            path: form.json_path.clone(),
            op: form.json_op.clone(),
            value: serde_json::from_str::<serde_json::Value>(v)
                .ok()
                .filter(|j| !j.is_object() && !j.is_array() && !j.is_string())
                .unwrap_or_else(|| serde_json::Value::String(v.to_owned())),
        }
    });
    let expected: Vec<String> = form
        .expected
        .split(',')
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
        .collect();
    let req = match (
        number("interval_seconds", &form.interval_seconds),
        number("failures", &form.failures),
        run_from,
        number("grace_seconds", &form.grace_seconds),
    ) {
        (Ok(interval_seconds), Ok(failures), Ok(agent_id), Ok(grace_seconds)) => {
            crate::service::apps::NewAppRequest {
                agent_id,
                name: form.name,
                app_type: None,
                kind: Some(form.kind),
                identifier: None,
                owner_email: None,
                runbook_url: None,
                notes: None,
                expected_state: None,
                restart_command: None,
                endpoint: Some(form.endpoint).filter(|e| !(push && e.trim().is_empty())),
                interval_seconds,
                timeout_seconds: None,
                retries: failures.map(|f| f - 1),
                recoveries: None,
                expected_status: None,
                keyword: Some(form.keyword).filter(|k| !k.trim().is_empty()),
                tls_min_days: None,
                grace_seconds: grace_seconds.filter(|_| push),
                expected: (!expected.is_empty()).then_some(expected),
                json_query,
            }
        }
        (Err(e), _, _, _) | (_, Err(e), _, _) | (_, _, Err(e), _) | (_, _, _, Err(e)) => {
            return match form_error(e) {
                Ok((status, m)) => apps_page(&state, &user, &no_query(), Some(m), status).await,
                Err(e) => e.into_response(),
            };
        }
    };
    match crate::service::apps::create_app(&state, &meta, &user.principal, req).await {
        // A push URL is whole only now: shown once, with how to call it.
        Ok((_, axum::Json(view))) if view.push_url.is_some() => {
            let pushed = (view.name, view.push_url.unwrap_or_default());
            apps_page_with(
                &state,
                &user,
                &no_query(),
                None,
                Some(pushed),
                StatusCode::CREATED,
            )
            .await
        }
        Ok(_) => Redirect::to("/ui/apps").into_response(),
        Err(e) => match form_error(e) {
            Ok((status, m)) => apps_page(&state, &user, &no_query(), Some(m), status).await,
            Err(e) => e.into_response(),
        },
    }
}

fn no_query() -> AppsQuery {
    AppsQuery {
        agent: None,
        show: None,
        page: None,
    }
}

/// A new expected state.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectForm {
    expected_state: String,
}

/// `POST /ui/apps/{id}/expected` (operator, CSRF token).
pub async fn expect_app(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path(id): axum::extract::Path<uuid::Uuid>,
    Act { user, form, .. }: Act<Operator, ExpectForm>,
) -> Response {
    let req = crate::service::apps::AppPatch {
        expected_state: Some(form.expected_state),
        badge: None,
    };
    match crate::service::apps::set_expected_state(&state, &meta, &user.principal, id, req).await {
        Ok(_) => Redirect::to("/ui/apps").into_response(),
        Err(e) => e.into_response(),
    }
}

/// The badge switch.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BadgeForm {
    badge: String,
}

/// `POST /ui/apps/{id}/badge` (operator, CSRF token): the public badge on or off.
pub async fn badge_app(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path(id): axum::extract::Path<uuid::Uuid>,
    Act { user, form, .. }: Act<Operator, BadgeForm>,
) -> Response {
    let req = crate::service::apps::AppPatch {
        expected_state: None,
        badge: Some(form.badge == "on"),
    };
    match crate::service::apps::set_expected_state(&state, &meta, &user.principal, id, req).await {
        Ok(_) => Redirect::to(&format!("/ui/apps#app-{id}")).into_response(),
        Err(e) => e.into_response(),
    }
}

/// `POST /ui/apps/{id}/push-url` (operator, CSRF token): a new push URL, shown once.
pub async fn new_push_url(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path(id): axum::extract::Path<uuid::Uuid>,
    Act { user, .. }: Act<Operator, NoFields>,
) -> Response {
    match crate::service::push::rotate(&state, &meta, &user.principal, id).await {
        Ok(view) => {
            let pushed = (view.name, view.push_url.unwrap_or_default());
            apps_page_with(
                &state,
                &user,
                &no_query(),
                None,
                Some(pushed),
                StatusCode::OK,
            )
            .await
        }
        Err(e) => e.into_response(),
    }
}

/// `POST /ui/apps/{id}/untrack` (operator, CSRF token).
pub async fn untrack_app(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path(id): axum::extract::Path<uuid::Uuid>,
    Act { user, .. }: Act<Operator, NoFields>,
) -> Response {
    match crate::service::apps::untrack(&state, &meta, &user.principal, id).await {
        Ok(_) => Redirect::to("/ui/apps").into_response(),
        Err(e) => e.into_response(),
    }
}
