//! The console pages: a host's console (the start form with its TOTP code, then the xterm.js
//! terminal on the session's WebSocket) and the tenant's sessions (recordings, terminate) —
//! through the same services as the API.

use crate::service;
use askama::Template;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::routing::{get, post};
use serde::Deserialize;
use trusthub_core::Role;
use trusthub_identity::Act;
use trusthub_identity::auth::purpose::ConsoleStart;
use trusthub_identity::auth::{Admin, TotpProof, Viewer};
use trusthub_identity::{UserBar, WebUser};
use trusthub_platform::AppState;
use trusthub_platform::error::ApiError;
use trusthub_platform::extract::Meta;
use trusthub_platform::page::NoFields;
use trusthub_platform::page::{
    ASSETS, Assets, CONSOLE_CSP, Flash, PLAYER_CSP, PageResult, outcome, render,
};
use uuid::Uuid;

/// The pages (merged at the root by the composition root, which adds the page layers).
pub fn pages() -> axum::Router<AppState> {
    axum::Router::new()
        .route("/ui/agents/{id}/console", get(show).post(open))
        .route("/ui/console", get(sessions))
        .route("/ui/console/{id}/terminate", post(terminate))
        .route("/ui/console/{id}/recording", get(play))
}

#[derive(Template)]
#[template(path = "console.html")]
struct ConsolePage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    csrf: String,
    agent_id: String,
    hostname: String,
    can_start: bool,
    totp_enabled: bool,
    reason: String,
    cols: u16,
    rows: u16,
    session_id: String,
    ws_url: String,
    idle_minutes: u64,
    flash: Flash,
}

struct Started {
    session_id: Uuid,
    ws_url: String,
}

async fn console_page(
    state: &AppState,
    user: &WebUser,
    id: Uuid,
    form: (&str, u16, u16),
    started: Option<Started>,
    flash: Flash,
    code: StatusCode,
) -> PageResult {
    let p = &user.principal;
    Viewer::of(p)?;
    let host = {
        let mut c = state.db.conn().await?;
        trusthub_fleet::agent(&mut c, p.tenant(), id)
            .await?
            .ok_or(ApiError::NotFound("agent"))?
    };
    let page = ConsolePage {
        assets: &ASSETS,
        user: Some(UserBar::from(user)),
        csrf: user.csrf.clone(),
        agent_id: id.to_string(),
        hostname: host.hostname,
        can_start: p.has_role(Role::Admin),
        totp_enabled: p.user.totp_enabled,
        reason: form.0.to_owned(),
        cols: form.1,
        rows: form.2,
        session_id: started
            .as_ref()
            .map(|s| s.session_id.to_string())
            .unwrap_or_default(),
        ws_url: started.map(|s| s.ws_url).unwrap_or_default(),
        idle_minutes: crate::settings::of(&state.settings).console_idle_secs / 60,
        flash,
    };
    let terminal = !page.ws_url.is_empty();
    let mut resp = render(page.render(), code)?;
    if terminal {
        resp.headers_mut().insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONSOLE_CSP),
        );
    }
    Ok(resp)
}

/// `GET /ui/agents/{id}/console`: the start form.
pub async fn show(
    State(state): State<AppState>,
    user: WebUser,
    axum::extract::Path(id): axum::extract::Path<Uuid>,
) -> PageResult {
    console_page(
        &state,
        &user,
        id,
        ("", 120, 32),
        None,
        Flash::default(),
        StatusCode::OK,
    )
    .await
}

/// The start form.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenForm {
    #[serde(default)]
    reason: String,
    #[serde(default)]
    cols: String,
    #[serde(default)]
    rows: String,
    #[serde(default)]
    code: String,
}

/// `POST /ui/agents/{id}/console` (admin, CSRF, TOTP code): opens the session and shows the
/// terminal.
pub async fn open(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path(id): axum::extract::Path<Uuid>,
    Act { user, form: f, .. }: Act<Admin, OpenForm>,
) -> PageResult {
    let cols = f.cols.trim().parse::<u16>().unwrap_or(0);
    let rows = f.rows.trim().parse::<u16>().unwrap_or(0);
    let result = async {
        if !(10..=1000).contains(&cols) {
            return Err(ApiError::invalid("cols", "must be 10 to 1000"));
        }
        if !(5..=1000).contains(&rows) {
            return Err(ApiError::invalid("rows", "must be 5 to 1000"));
        }
        let reason = f.reason.trim();
        if reason.is_empty() || reason.chars().count() > 500 || reason.chars().any(char::is_control)
        {
            return Err(ApiError::invalid(
                "reason",
                "must be 1 to 500 printable characters",
            ));
        }
        let proof =
            TotpProof::<ConsoleStart>::from_code(&state, &meta, user.principal.clone(), &f.code)
                .await?;
        service::start(&state, &meta, &proof.principal, id, reason, cols, rows).await
    }
    .await;
    match result {
        Ok(s) => {
            let started = Started {
                session_id: s.session_id,
                ws_url: format!("/api/v1/ws/console/{}", s.session_id),
            };
            console_page(
                &state,
                &user,
                id,
                (&f.reason, cols, rows),
                Some(started),
                Flash::default(),
                StatusCode::OK,
            )
            .await
        }
        Err(e) => match outcome::<()>(Err(e), "", StatusCode::OK) {
            Ok((flash, code)) => {
                console_page(
                    &state,
                    &user,
                    id,
                    (&f.reason, cols.max(10), rows.max(5)),
                    None,
                    flash,
                    code,
                )
                .await
            }
            Err(e) => Err(e),
        },
    }
}

/// A session as the list shows it.
struct Row {
    id: String,
    agent_id: String,
    hostname: String,
    started: String,
    reason: String,
    status: String,
    end_reason: String,
    live: bool,
    /// Ended without the host saying so (host lost, hub restarted): an admin may ask the
    /// host to end what it left running.
    failed: bool,
    exit: String,
    bytes: i64,
    sha: String,
}

#[derive(Template)]
#[template(path = "console_sessions.html")]
struct SessionsPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    csrf: String,
    can_terminate: bool,
    rows: Vec<Row>,
    flash: Flash,
}

async fn sessions_page(
    state: &AppState,
    user: &WebUser,
    flash: Flash,
    code: StatusCode,
) -> PageResult {
    let p = &user.principal;
    Viewer::of(p)?;
    let names = trusthub_fleet::host_names(state, p.tenant()).await?;
    let list = service::list(state, p.tenant(), None, None).await?;
    let page = SessionsPage {
        assets: &ASSETS,
        user: Some(UserBar::from(user)),
        csrf: user.csrf.clone(),
        can_terminate: p.has_role(Role::Admin),
        rows: list
            .into_iter()
            .map(|s| Row {
                id: s.id.to_string(),
                agent_id: s.agent_id.to_string(),
                hostname: names.get(&s.agent_id).cloned().unwrap_or_default(),
                started: s.started_at,
                reason: s.reason,
                live: s.ended_at.is_none(),
                failed: s.status == "failed",
                status: s.status,
                end_reason: s.end_reason.unwrap_or_default(),
                exit: s.exit_code.map(|c| c.to_string()).unwrap_or_default(),
                bytes: s.recording_bytes,
                sha: s.recording_sha256.unwrap_or_default(),
            })
            .collect(),
        flash,
    };
    render(page.render(), code)
}

/// `GET /ui/console`.
pub async fn sessions(State(state): State<AppState>, user: WebUser) -> PageResult {
    sessions_page(&state, &user, Flash::default(), StatusCode::OK).await
}

/// `POST /ui/console/{id}/terminate` (admin, CSRF).
pub async fn terminate(
    State(state): State<AppState>,
    axum::extract::Path(id): axum::extract::Path<Uuid>,
    Act { user, .. }: Act<Admin, NoFields>,
) -> PageResult {
    let result = async {
        let admin = Admin::of(&user.principal)?;
        service::terminate(&state, &admin.0, id).await
    }
    .await;
    let message = match &result {
        Ok(s) if s.status == "failed" => {
            "Asked the host to end whatever the failed session left running (if it is connected; it also does so itself when it reconnects)."
        }
        _ => "Terminated: the host killed the session's processes.",
    };
    let (flash, code) = outcome(result, message, StatusCode::OK)?;
    sessions_page(&state, &user, flash, code).await
}

#[derive(Template)]
#[template(path = "console_play.html")]
struct PlayPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    id: String,
    hostname: String,
    reason: String,
    started: String,
    status: String,
    sha: String,
}

/// `GET /ui/console/{id}/recording`: the recording in asciinema-player.
pub async fn play(
    State(state): State<AppState>,
    user: WebUser,
    axum::extract::Path(id): axum::extract::Path<Uuid>,
) -> PageResult {
    let p = &user.principal;
    // A root shell's transcript: admins only, like the API that serves it.
    if !p.has_role(Role::Admin) {
        return Err(ApiError::Forbidden(
            "console recordings are for admins".into(),
        ));
    }
    let s = service::get(&state, p.tenant(), id).await?;
    let names = trusthub_fleet::host_names(&state, p.tenant()).await?;
    let page = PlayPage {
        assets: &ASSETS,
        user: Some(UserBar::from(&user)),
        id: id.to_string(),
        hostname: names.get(&s.agent_id).cloned().unwrap_or_default(),
        reason: s.reason,
        started: trusthub_platform::state::rfc3339(s.started_at),
        status: s.status,
        sha: s.recording_sha256.unwrap_or_default(),
    };
    let mut resp = render(page.render(), StatusCode::OK)?;
    resp.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(PLAYER_CSP),
    );
    Ok(resp)
}
