//! Tracked applications (SPEC 2.1, 3.1, 4.1): create, list, change the expected state,
//! untrack, and the discovery list of what an agent runs.

use crate::auth::{Operator, Viewer};
use crate::error::{ApiError, ApiResult, FieldError, Problem};
use crate::extract::{Json, Meta, Path};
use crate::state::{AppState, now};
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use time::OffsetDateTime;
use trusthub_core::apps::{self as core_apps, AppKind};
use trusthub_core::{audit as ev, validate};
use trusthub_store::apps::{self, App, NewApp};
use trusthub_store::{TenantId, agents, telemetry};
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(get_app, update, delete))
        .routes(routes!(checks))
        .routes(routes!(candidates))
}

/// Shortest HTTP check interval.
pub const MIN_HTTP_INTERVAL: i64 = 10;
/// Longest HTTP check interval.
pub const MAX_HTTP_INTERVAL: i64 = 86_400;

/// An app to track. Either `app_type` (`systemd`, `docker`, `compose`, `process`) with
/// `identifier`, or `type: http` with `endpoint` and `interval_seconds`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct NewAppRequest {
    /// The host that should run it (an agent of your tenant).
    pub agent_id: Uuid,
    /// Label, 1 to 100 characters.
    pub name: String,
    /// `systemd`, `docker`, `compose` or `process`.
    pub app_type: Option<String>,
    /// `http` for an endpoint check (SPEC 4.1's SLO-style form).
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// systemd: unit name (`.service` is added when there is no suffix); docker: container
    /// name; compose: `<project>::<service>`; process: absolute path of the binary.
    pub identifier: Option<String>,
    /// Contact to notify.
    pub owner_email: Option<String>,
    /// Runbook URL (http or https).
    pub runbook_url: Option<String>,
    /// Free text, at most 2000 characters.
    pub notes: Option<String>,
    /// `running` (default) or `stopped`.
    pub expected_state: Option<String>,
    /// process: what a restart runs; absolute path first.
    pub restart_command: Option<String>,
    /// http: the URL the agent checks (http or https).
    pub endpoint: Option<String>,
    /// http: seconds between checks, 10 to 86400.
    pub interval_seconds: Option<i64>,
}

/// The latest HTTP check of an `http` app.
#[derive(Debug, Serialize, ToSchema)]
pub struct LastCheck {
    /// When the agent ran it.
    #[serde(with = "time::serde::rfc3339")]
    pub checked_at: OffsetDateTime,
    /// 2xx or 3xx within the timeout.
    pub ok: bool,
    /// HTTP status, when one came.
    pub status_code: Option<i64>,
    /// Latency.
    pub latency_ms: Option<i64>,
    /// Why it failed.
    pub error: Option<String>,
}

/// A tracked app (SPEC 2.1).
#[derive(Debug, Serialize, ToSchema)]
pub struct AppView {
    /// Id.
    pub id: Uuid,
    /// Host.
    pub agent_id: Uuid,
    /// Label.
    pub name: String,
    /// `systemd`, `docker`, `compose`, `process` or `http`.
    pub app_type: String,
    /// Unit, container, `<project>::<service>`, binary path; the URL for `http`.
    pub identifier: String,
    /// Contact.
    pub owner_email: Option<String>,
    /// Runbook.
    pub runbook_url: Option<String>,
    /// Notes.
    pub notes: Option<String>,
    /// `running` or `stopped`.
    pub expected_state: String,
    /// What the last liveness check observed: `running`, `stopped`, `unknown` (none yet:
    /// null).
    pub observed_state: Option<String>,
    /// Consecutive observed-vs-expected differences.
    pub consecutive_mismatch: i64,
    /// When the observed state last changed.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_state_change: Option<OffsetDateTime>,
    /// A liveness alert is open for it (the red marker).
    pub alerting: bool,
    /// process: the restart command.
    pub restart_command: Option<String>,
    /// http: URL.
    pub endpoint: Option<String>,
    /// http: seconds between checks.
    pub interval_seconds: Option<i64>,
    /// http: the latest check.
    pub last_check: Option<LastCheck>,
    /// The agent's tags (apps inherit them).
    pub tags: Vec<String>,
    /// Created.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

impl AppView {
    fn new(a: App, tags: Vec<String>) -> AppView {
        let last_check = a.last_check_at.map(|checked_at| LastCheck {
            checked_at,
            ok: a.last_check_ok.unwrap_or(false),
            status_code: a.last_check_status,
            latency_ms: a.last_check_latency_ms,
            error: a.last_check_error.clone(),
        });
        AppView {
            id: a.id,
            agent_id: a.agent_id,
            name: a.name,
            app_type: a.app_type,
            identifier: a.identifier,
            owner_email: a.owner_email,
            runbook_url: a.runbook_url,
            notes: a.notes,
            expected_state: a.expected_state,
            observed_state: a.observed_state,
            consecutive_mismatch: a.consecutive_mismatch,
            last_state_change: a.last_state_change,
            alerting: a.alerting,
            restart_command: a.restart_command,
            endpoint: a.endpoint,
            interval_seconds: a.interval_seconds,
            last_check,
            tags,
            created_at: a.created_at,
        }
    }
}

async fn tags_by_agent(
    state: &AppState,
    tenant: TenantId,
) -> ApiResult<std::collections::HashMap<Uuid, Vec<String>>> {
    let mut c = state.db.conn().await?;
    Ok(agents::list(&mut c, tenant)
        .await?
        .into_iter()
        .map(|a| (a.id, a.tags.0))
        .collect())
}

/// The tenant's tracked apps.
#[utoipa::path(get, path = "/apps", tag = "apps", responses((status = 200, body = Vec<AppView>)))]
async fn list(
    State(state): State<AppState>,
    Viewer(p): Viewer,
) -> ApiResult<axum::Json<Vec<AppView>>> {
    let tags = tags_by_agent(&state, p.tenant()).await?;
    let mut c = state.db.conn().await?;
    Ok(axum::Json(
        apps::list(&mut c, p.tenant(), None)
            .await?
            .into_iter()
            .map(|a| {
                let t = tags.get(&a.agent_id).cloned().unwrap_or_default();
                AppView::new(a, t)
            })
            .collect(),
    ))
}

fn expected(v: Option<&str>, errors: &mut Vec<FieldError>) -> &'static str {
    match v.unwrap_or("running") {
        "running" => "running",
        "stopped" => "stopped",
        _ => {
            errors.push(FieldError {
                field: "expected_state".into(),
                message: "must be `running` or `stopped`".into(),
            });
            "running"
        }
    }
}

fn opt_text(
    field: &str,
    v: Option<&str>,
    max: usize,
    errors: &mut Vec<FieldError>,
) -> Option<String> {
    let v = v.map(str::trim).filter(|s| !s.is_empty())?;
    if v.chars().count() > max || v.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        errors.push(FieldError {
            field: field.into(),
            message: format!("must be at most {max} characters without control characters"),
        });
    }
    Some(v.to_owned())
}

/// Track an app (operator). Liveness starts at the next check (within
/// `TRUSTHUB_LIVENESS_INTERVAL_SECS`, 60 s by default) against `expected_state` (default
/// `running`). An agent tracks one app per kind and identifier (409 otherwise). `http`
/// apps are checked by their agent every `interval_seconds`; 2xx and 3xx count as running.
#[utoipa::path(post, path = "/apps", tag = "apps", request_body = NewAppRequest,
    responses((status = 201, body = AppView), (status = 409, body = Problem), (status = 422, body = Problem)))]
async fn create(
    State(state): State<AppState>,
    meta: Meta,
    Operator(p): Operator,
    Json(req): Json<NewAppRequest>,
) -> ApiResult<(StatusCode, axum::Json<AppView>)> {
    let mut errors = Vec::new();
    let err = |errors: &mut Vec<FieldError>, field: &str, m: String| {
        errors.push(FieldError {
            field: field.into(),
            message: m,
        })
    };
    let name = validate::name(&req.name)
        .map_err(|m| err(&mut errors, "name", m.into()))
        .unwrap_or_default();
    let kind = match (req.app_type.as_deref(), req.kind.as_deref()) {
        (_, Some("http")) | (Some("http"), None) => Some(AppKind::Http),
        (_, Some(_)) => {
            err(
                &mut errors,
                "type",
                "only takes `http`; the other kinds go in `app_type`".into(),
            );
            None
        }
        (Some(t), None) => {
            let k = AppKind::parse(t);
            if k.is_none() {
                err(
                    &mut errors,
                    "app_type",
                    "must be systemd, docker, compose or process (or type: http)".into(),
                );
            }
            k
        }
        (None, None) => {
            err(
                &mut errors,
                "app_type",
                "is required: systemd, docker, compose or process (or type: http)".into(),
            );
            None
        }
    };
    let expected_state = expected(req.expected_state.as_deref(), &mut errors);
    let owner_email = match req
        .owner_email
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        Some(e) => validate::email(e)
            .map_err(|m| err(&mut errors, "owner_email", m.into()))
            .ok(),
        None => None,
    };
    let runbook_url = opt_text("runbook_url", req.runbook_url.as_deref(), 2048, &mut errors);
    if let Some(u) = &runbook_url
        && let Err(m) = core_apps::http_url(u)
    {
        err(&mut errors, "runbook_url", m);
    }
    let notes = opt_text("notes", req.notes.as_deref(), 2000, &mut errors);
    let mut identifier = String::new();
    let mut endpoint = None;
    let mut interval = None;
    let mut restart_command = None;
    match kind {
        Some(AppKind::Http) => {
            match req.endpoint.as_deref().map(str::trim) {
                Some(e) => match core_apps::identifier(AppKind::Http, e) {
                    Ok(e) => {
                        identifier = e.clone();
                        endpoint = Some(e);
                    }
                    Err(m) => err(&mut errors, "endpoint", m),
                },
                None => err(&mut errors, "endpoint", "is required for type http".into()),
            }
            match req.interval_seconds {
                Some(i) if (MIN_HTTP_INTERVAL..=MAX_HTTP_INTERVAL).contains(&i) => {
                    interval = Some(i)
                }
                Some(_) => err(
                    &mut errors,
                    "interval_seconds",
                    format!("must be {MIN_HTTP_INTERVAL} to {MAX_HTTP_INTERVAL}"),
                ),
                None => err(
                    &mut errors,
                    "interval_seconds",
                    "is required for type http".into(),
                ),
            }
        }
        Some(k) => {
            match req.identifier.as_deref() {
                Some(i) => match core_apps::identifier(k, i) {
                    Ok(i) => identifier = i,
                    Err(m) => err(&mut errors, "identifier", m),
                },
                None => err(&mut errors, "identifier", "is required".into()),
            }
            if req.endpoint.is_some() || req.interval_seconds.is_some() {
                err(
                    &mut errors,
                    "endpoint",
                    "only apps of type http have an endpoint".into(),
                );
            }
        }
        None => {}
    }
    match (kind, req.restart_command.as_deref().map(str::trim)) {
        (Some(AppKind::Process), Some(cmd)) if !cmd.is_empty() => {
            let program = cmd.split_whitespace().next().unwrap_or_default();
            match core_apps::absolute_path(program) {
                Ok(()) if cmd.len() <= 4096 => restart_command = Some(cmd.to_owned()),
                Ok(()) => err(
                    &mut errors,
                    "restart_command",
                    "must be at most 4096 characters".into(),
                ),
                Err(m) => err(&mut errors, "restart_command", format!("its program {m}")),
            }
        }
        (_, Some(cmd)) if !cmd.is_empty() => {
            err(
                &mut errors,
                "restart_command",
                "only process apps have a restart command".into(),
            );
        }
        _ => {}
    }
    if !errors.is_empty() {
        return Err(ApiError::Validation(errors));
    }
    let Some(kind) = kind else {
        return Err(ApiError::invalid("app_type", "is required"));
    };
    let now = now();
    let mut tx = state.db.begin().await?;
    let Some(agent) = agents::get(&mut tx, p.tenant(), req.agent_id).await? else {
        return Err(ApiError::invalid(
            "agent_id",
            "is not an agent of your tenant",
        ));
    };
    let app = apps::insert(
        &mut tx,
        p.tenant(),
        &NewApp {
            agent_id: agent.id,
            name: &name,
            app_type: kind.as_str(),
            identifier: &identifier,
            owner_email: owner_email.as_deref(),
            runbook_url: runbook_url.as_deref(),
            notes: notes.as_deref(),
            expected_state,
            restart_command: restart_command.as_deref(),
            endpoint: endpoint.as_deref(),
            interval_seconds: interval,
        },
        now,
    )
    .await?
    .ok_or_else(|| {
        ApiError::Conflict(format!(
            "agent {} already tracks {} `{identifier}`",
            agent.id,
            kind.as_str()
        ))
    })?;
    meta.record(
        &mut tx,
        &p,
        ev::APP_CREATED,
        format!("app:{}", app.id),
        json!({"agent_id": agent.id, "app_type": kind.as_str(), "identifier": identifier, "name": name}),
    )
    .await?;
    tx.commit().await?;
    Ok((
        StatusCode::CREATED,
        axum::Json(AppView::new(app, agent.tags.0)),
    ))
}

async fn load(state: &AppState, tenant: TenantId, id: Uuid) -> ApiResult<AppView> {
    let mut c = state.db.conn().await?;
    let app = apps::get(&mut c, tenant, id)
        .await?
        .ok_or(ApiError::NotFound("app"))?;
    let tags = agents::get(&mut c, tenant, app.agent_id)
        .await?
        .map(|a| a.tags.0)
        .unwrap_or_default();
    Ok(AppView::new(app, tags))
}

/// One app.
#[utoipa::path(get, path = "/apps/{id}", tag = "apps", params(("id" = Uuid, Path, description = "App id")),
    responses((status = 200, body = AppView), (status = 404, body = Problem)))]
async fn get_app(
    State(state): State<AppState>,
    Viewer(p): Viewer,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<AppView>> {
    Ok(axum::Json(load(&state, p.tenant(), id).await?))
}

/// A change of expected state.
#[derive(Debug, Deserialize, ToSchema)]
pub struct AppPatch {
    /// `running` or `stopped`.
    pub expected_state: String,
}

/// Change what the app is expected to do (operator); the comparison continues with the new
/// value, its mismatch counters start again.
#[utoipa::path(patch, path = "/apps/{id}", tag = "apps", params(("id" = Uuid, Path, description = "App id")),
    request_body = AppPatch, responses((status = 200, body = AppView), (status = 404, body = Problem), (status = 422, body = Problem)))]
async fn update(
    State(state): State<AppState>,
    meta: Meta,
    Operator(p): Operator,
    Path(id): Path<Uuid>,
    Json(req): Json<AppPatch>,
) -> ApiResult<axum::Json<AppView>> {
    let mut errors = Vec::new();
    let expected_state = expected(Some(&req.expected_state), &mut errors);
    if !errors.is_empty() {
        return Err(ApiError::Validation(errors));
    }
    let mut tx = state.db.begin().await?;
    let Some(before) = apps::get(&mut tx, p.tenant(), id).await? else {
        return Err(ApiError::NotFound("app"));
    };
    if before.expected_state != expected_state {
        apps::set_expected(&mut tx, p.tenant(), id, expected_state).await?;
        meta.record(
            &mut tx,
            &p,
            ev::APP_EXPECTED_STATE_CHANGED,
            format!("app:{id}"),
            json!({"from": before.expected_state, "to": expected_state}),
        )
        .await?;
    }
    tx.commit().await?;
    Ok(axum::Json(load(&state, p.tenant(), id).await?))
}

/// Stop tracking an app (operator). Its open liveness alert stays until resolved.
#[utoipa::path(delete, path = "/apps/{id}", tag = "apps", params(("id" = Uuid, Path, description = "App id")),
    responses((status = 204, description = "Untracked"), (status = 404, body = Problem)))]
async fn delete(
    State(state): State<AppState>,
    meta: Meta,
    Operator(p): Operator,
    Path(id): Path<Uuid>,
) -> ApiResult<StatusCode> {
    let mut tx = state.db.begin().await?;
    let Some(app) = apps::get(&mut tx, p.tenant(), id).await? else {
        return Err(ApiError::NotFound("app"));
    };
    apps::delete(&mut tx, p.tenant(), id).await?;
    meta.record(
        &mut tx,
        &p,
        ev::APP_DELETED,
        format!("app:{id}"),
        json!({"app_type": app.app_type, "identifier": app.identifier, "name": app.name}),
    )
    .await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The latest HTTP check results of an `http` app, newest first (at most 100).
#[utoipa::path(get, path = "/apps/{id}/checks", tag = "apps", params(("id" = Uuid, Path, description = "App id")),
    responses((status = 200, body = Vec<LastCheck>), (status = 404, body = Problem)))]
async fn checks(
    State(state): State<AppState>,
    Viewer(p): Viewer,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<Vec<LastCheck>>> {
    let mut c = state.db.conn().await?;
    apps::get(&mut c, p.tenant(), id)
        .await?
        .ok_or(ApiError::NotFound("app"))?;
    Ok(axum::Json(
        apps::checks(&mut c, id, 100)
            .await?
            .into_iter()
            .map(
                |(checked_at, ok, status_code, latency_ms, error)| LastCheck {
                    checked_at,
                    ok,
                    status_code,
                    latency_ms,
                    error,
                },
            )
            .collect(),
    ))
}

/// Something an agent runs that could be tracked.
#[derive(Debug, Serialize, ToSchema)]
pub struct AppCandidate {
    /// `systemd`, `docker` or `compose`.
    pub app_type: String,
    /// What to put in `identifier`.
    pub identifier: String,
    /// A suggested name.
    pub name: String,
    /// Its state in the snapshot (`active`, `running`, `exited`, ...).
    pub state: String,
    /// Whether an app already tracks it.
    pub tracked: bool,
}

/// Discovery (SPEC 4.1 rule 2): the live systemd services and containers (and compose
/// services) of the agent's latest inventory snapshot, to fill `app_type`, `identifier`
/// and `name`. Only units that are active and containers that are running are listed.
#[utoipa::path(get, path = "/agents/{id}/app-candidates", tag = "apps", params(("id" = Uuid, Path, description = "Agent id")),
    responses((status = 200, body = Vec<AppCandidate>), (status = 404, body = Problem)))]
async fn candidates(
    State(state): State<AppState>,
    Viewer(p): Viewer,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<Vec<AppCandidate>>> {
    let mut c = state.db.conn().await?;
    agents::get(&mut c, p.tenant(), id)
        .await?
        .ok_or(ApiError::NotFound("agent"))?;
    let snapshot = telemetry::latest_inventory(&mut c, p.tenant(), id)
        .await?
        .map(|s| s.snapshot.0)
        .unwrap_or(Value::Null);
    let tracked: std::collections::HashSet<(String, String)> =
        apps::list(&mut c, p.tenant(), Some(id))
            .await?
            .into_iter()
            .map(|a| (a.app_type, a.identifier))
            .collect();
    let mut out = Vec::new();
    let mut push = |kind: AppKind, identifier: &str, name: &str, st: &str| {
        out.push(AppCandidate {
            app_type: kind.as_str().into(),
            identifier: identifier.into(),
            name: name.into(),
            state: st.into(),
            tracked: tracked.contains(&(kind.as_str().to_owned(), identifier.to_owned())),
        })
    };
    for u in snapshot["systemd"].as_array().into_iter().flatten() {
        let (Some(unit), Some(st)) = (u["unit"].as_str(), u["active_state"].as_str()) else {
            continue;
        };
        if st == "active" {
            push(
                AppKind::Systemd,
                unit,
                unit.trim_end_matches(".service"),
                st,
            );
        }
    }
    let mut compose = std::collections::BTreeSet::new();
    for ct in snapshot["containers"].as_array().into_iter().flatten() {
        let (Some(name), Some(st)) = (ct["name"].as_str(), ct["state"].as_str()) else {
            continue;
        };
        if st != "running" {
            continue;
        }
        let name = name.trim_start_matches('/');
        push(AppKind::Docker, name, name, st);
        if let (Some(pr), Some(sv)) = (
            ct["compose_project"].as_str(),
            ct["compose_service"].as_str(),
        ) {
            compose.insert(format!("{pr}::{sv}"));
        }
    }
    for cs in compose {
        let name = cs.replace("::", "/");
        push(AppKind::Compose, &cs, &name, "running");
    }
    Ok(axum::Json(out))
}
