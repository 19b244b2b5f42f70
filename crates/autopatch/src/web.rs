//! The auto-patch page of a host (CONTRACT 17, 19): its settings (turning on asks for a TOTP
//! code), the reboot-required state, the attempts and what the host answered, a run now, and
//! the attestation chain as a timeline — through the same services as the API.

use crate::service::{self, SettingsPatch};
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use serde::Deserialize;
use trusthub_core::Role;
use trusthub_identity::Act;
use trusthub_identity::auth::purpose::AgentAutoPatch;
use trusthub_identity::auth::{Admin, TotpOffer, TotpProof, Viewer};
use trusthub_identity::{UserBar, WebUser};
use trusthub_platform::AppState;
use trusthub_platform::error::ApiError;
use trusthub_platform::extract::Meta;
use trusthub_platform::page::{ASSETS, Assets, Flash, ago, outcome};
use trusthub_platform::page::{PageResult, render};
use uuid::Uuid;

/// The pages (merged at the root by the composition root, which adds the page layers).
pub fn pages() -> axum::Router<AppState> {
    axum::Router::new()
        .route("/ui/agents/{id}/auto-patch", get(show).post(save))
        .route("/ui/agents/{id}/auto-patch/run", post(run))
        .route(
            "/ui/agents/{id}/emergency",
            get(emergency_form).post(emergency),
        )
        .route(
            "/ui/vulnerabilities/update-all",
            get(update_all_plan).post(update_all_send),
        )
}

/// One attempt as a table row.
struct Row {
    nonce: String,
    when: String,
    packages: String,
    status: String,
    class: &'static str,
    note: String,
}

/// One step of the chain's timeline.
struct Step {
    when: String,
    what: String,
    class: &'static str,
}

#[derive(Template)]
#[template(path = "auto_patch.html")]
struct Page<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    csrf: String,
    can_edit: bool,
    totp_enabled: bool,
    agent_id: String,
    hostname: String,
    os_packages: bool,
    app_deps: bool,
    min_severity: String,
    enabled: String,
    last_run: String,
    reboot: String,
    rows: Vec<Row>,
    chains: Vec<(String, Vec<Step>)>,
    flash: Flash,
}

fn status_class(s: &str) -> &'static str {
    match s {
        "applied" => "online",
        "rolled_back" => "critical",
        "expired" => "unknown",
        _ => "warning",
    }
}

async fn page(
    state: &AppState,
    user: &WebUser,
    agent: Uuid,
    flash: Flash,
    code: StatusCode,
) -> PageResult {
    let p = &user.principal;
    let viewer = Viewer::of(p)?;
    let settings = service::get_settings(state, &viewer, agent).await?;
    let now = trusthub_platform::state::now();
    let (hostname, inventory) = {
        let mut c = state.db.conn().await?;
        let host = trusthub_fleet::agent(&mut c, p.tenant(), agent)
            .await?
            .ok_or(ApiError::NotFound("agent"))?;
        (
            host.hostname,
            trusthub_fleet::latest_inventory(&mut c, p.tenant(), agent).await?,
        )
    };
    let reboot = match inventory.and_then(|i| i.inventory.patching) {
        Some(pt) if pt.reboot_required && pt.reboot_required_packages.is_empty() => "yes".into(),
        Some(pt) if pt.reboot_required => {
            format!("yes, for {}", pt.reboot_required_packages.join(", "))
        }
        Some(_) => "no".into(),
        None => "not reported".into(),
    };
    let names = trusthub_platform::names::resolve(
        state,
        p.tenant(),
        settings
            .enabled_by
            .map(|u| format!("user:{u}"))
            .iter()
            .map(String::as_str),
    )
    .await;
    let enabled = match (settings.enabled_by, settings.enabled_at) {
        (Some(by), Some(at)) => format!(
            "by {} {}",
            names
                .get(&format!("user:{by}"))
                .map_or(by.to_string(), |n| n.name.clone()),
            ago(Some(at), now)
        ),
        _ => "never".into(),
    };
    let rows = service::runs(state, &viewer, agent, 100)
        .await?
        .into_iter()
        .map(|a| Row {
            class: status_class(&a.status),
            nonce: a.eat_nonce,
            when: ago(Some(a.created_at), now),
            packages: a
                .packages
                .iter()
                .map(|c| {
                    format!(
                        "{} {} → {} ({})",
                        c.name,
                        c.from,
                        c.to,
                        c.vuln_ids.join(", ")
                    )
                })
                .collect::<Vec<_>>()
                .join("; "),
            status: a.status.replace('_', " "),
            note: a.note.unwrap_or_default(),
        })
        .collect();
    let chains = service::attestations(state, &viewer, Some(agent))
        .await?
        .into_iter()
        .map(|c| {
            let f = &c.flag_set;
            let head = format!(
                "#{} {} — turned on: OS packages {}, dependencies {}, {} and above",
                f.seq,
                f.created_at,
                f.payload["os_packages"],
                f.payload["app_deps"],
                f.payload["min_severity"].as_str().unwrap_or_default()
            );
            let mut steps = Vec::new();
            for a in c.attempts {
                let pp = &a.proposed.payload;
                steps.push(Step {
                    when: format!("#{} {}", a.proposed.seq, a.proposed.created_at),
                    what: format!(
                        "proposed {} → {} ({}, {})",
                        pp["package"].as_str().unwrap_or_default(),
                        pp["target_version"].as_str().unwrap_or_default(),
                        pp["cve_id"].as_str().unwrap_or_default(),
                        pp["severity"].as_str().unwrap_or_default()
                    ),
                    class: "warning",
                });
                if let Some(r) = a.result {
                    let applied = r.kind == service::kind::APPLIED;
                    steps.push(Step {
                        when: format!("#{} {}", r.seq, r.created_at),
                        what: format!(
                            "{} (exit code {}){}",
                            if applied { "applied" } else { "rolled back" },
                            r.payload["exit_code"],
                            r.payload["note"]
                                .as_str()
                                .map(|n| format!(": {n}"))
                                .unwrap_or_default()
                        ),
                        class: if applied { "online" } else { "critical" },
                    });
                }
            }
            (head, steps)
        })
        .collect();
    let page = Page {
        assets: &ASSETS,
        user: Some(UserBar::from(user)),
        csrf: user.csrf.clone(),
        can_edit: p.has_role(Role::Admin),
        totp_enabled: p.user.totp_enabled,
        agent_id: agent.to_string(),
        hostname,
        os_packages: settings.os_packages,
        app_deps: settings.app_deps,
        min_severity: settings.min_severity,
        enabled,
        last_run: ago(settings.last_run_at, now),
        reboot,
        rows,
        chains,
        flash,
    };
    render(page.render(), code)
}

/// `GET /ui/agents/{id}/auto-patch`.
pub async fn show(
    State(state): State<AppState>,
    user: WebUser,
    axum::extract::Path(id): axum::extract::Path<Uuid>,
) -> PageResult {
    page(&state, &user, id, Flash::default(), StatusCode::OK).await
}

/// The settings form (its CSRF token checked by [`Act`]): a flag is on when its checkbox is
/// sent; `code` is needed only when turning a flag on.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SettingsForm {
    #[serde(default)]
    os_packages: Option<String>,
    #[serde(default)]
    app_deps: Option<String>,
    min_severity: String,
    #[serde(default)]
    code: String,
}

/// `POST /ui/agents/{id}/auto-patch` (admin, CSRF; TOTP when turning on).
pub async fn save(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path(id): axum::extract::Path<Uuid>,
    Act { by, user, form: f }: Act<Admin, SettingsForm>,
) -> PageResult {
    let result = service::patch_settings(
        &state,
        &meta,
        &by,
        &TotpOffer::code(&f.code),
        id,
        SettingsPatch {
            os_packages: Some(f.os_packages.is_some()),
            app_deps: Some(f.app_deps.is_some()),
            min_severity: Some(f.min_severity),
        },
    )
    .await;
    let (flash, code) = outcome(result, "Saved.", StatusCode::OK)?;
    page(&state, &user, id, flash, code).await
}

/// The run-now form.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunForm {
    #[serde(default)]
    code: String,
}

/// `POST /ui/agents/{id}/auto-patch/run` (admin, CSRF, TOTP).
pub async fn run(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path(id): axum::extract::Path<Uuid>,
    Act { user, form: f, .. }: Act<Admin, RunForm>,
) -> PageResult {
    let result = async {
        let proof =
            TotpProof::<AgentAutoPatch>::from_code(&state, &meta, user.principal.clone(), &f.code)
                .await?;
        service::run_now(&state, &meta, &proof, id).await
    }
    .await;
    let notice = match &result {
        Ok(sent) if sent.is_empty() => "Ran: nothing to send now.".to_owned(),
        Ok(sent) => format!("Ran: {} action(s) sent.", sent.len()),
        Err(_) => String::new(),
    };
    let (flash, code) = outcome(result, &notice, StatusCode::OK)?;
    page(&state, &user, id, flash, code).await
}

#[derive(Template)]
#[template(path = "emergency.html")]
struct EmergencyPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    csrf: String,
    can_edit: bool,
    totp_enabled: bool,
    agent_id: String,
    hostname: String,
    action: String,
    target: String,
    reason: String,
    flash: Flash,
}

async fn emergency_page(
    state: &AppState,
    user: &WebUser,
    agent: Uuid,
    form: (String, String, String),
    flash: Flash,
    code: StatusCode,
) -> PageResult {
    let p = &user.principal;
    let hostname = async {
        let mut c = state.db.conn().await?;
        trusthub_fleet::agent(&mut c, p.tenant(), agent)
            .await?
            .ok_or(ApiError::NotFound("agent"))
            .map(|a| a.hostname)
    }
    .await;
    let hostname = hostname?;
    render(
        EmergencyPage {
            assets: &ASSETS,
            user: Some(UserBar::from(user)),
            csrf: user.csrf.clone(),
            can_edit: p.has_role(Role::Admin),
            totp_enabled: p.user.totp_enabled,
            agent_id: agent.to_string(),
            hostname,
            action: form.0,
            target: form.1,
            reason: form.2,
            flash,
        }
        .render(),
        code,
    )
}

/// `GET /ui/agents/{id}/emergency`: the emergency menu.
pub async fn emergency_form(
    State(state): State<AppState>,
    user: WebUser,
    axum::extract::Path(id): axum::extract::Path<Uuid>,
) -> PageResult {
    emergency_page(
        &state,
        &user,
        id,
        ("kill_process".into(), String::new(), String::new()),
        Flash::default(),
        StatusCode::OK,
    )
    .await
}

/// The emergency form (its CSRF token checked by [`Act`]).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmergencyForm {
    action: String,
    target: String,
    reason: String,
    code: String,
}

/// `POST /ui/agents/{id}/emergency` (admin, CSRF, TOTP): the answer is the action's page.
pub async fn emergency(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path(id): axum::extract::Path<Uuid>,
    Act { by, user, form: f }: Act<Admin, EmergencyForm>,
) -> PageResult {
    let result = crate::emergency::emergency(
        &state,
        &meta,
        &by,
        &TotpOffer::code(&f.code),
        id,
        crate::emergency::EmergencyRequest {
            action: f.action.clone(),
            target: f.target.clone(),
            reason: f.reason.clone(),
        },
    )
    .await;
    match result {
        Ok(d) => {
            Ok(axum::response::Redirect::to(&format!("/ui/actions/{}", d.jti)).into_response())
        }
        Err(e) => match trusthub_platform::page::form_error(e) {
            Ok((status, m)) => {
                emergency_page(
                    &state,
                    &user,
                    id,
                    (f.action, f.target, f.reason),
                    Flash::error(m),
                    status,
                )
                .await
            }
            Err(e) => Err(e),
        },
    }
}

/// One action of an update-all plan or answer.
struct UpdateRow {
    agent_id: Uuid,
    hostname: String,
    project: String,
    ecosystem: String,
    packages: String,
    nonce: String,
}

/// One skip of it.
struct SkipRow {
    hostname: String,
    package: String,
    ecosystem: String,
    why: String,
    advisories: String,
}

#[derive(Template)]
#[template(path = "update_all.html")]
struct UpdateAllPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    csrf: String,
    can_edit: bool,
    totp_enabled: bool,
    sent: bool,
    actions: Vec<UpdateRow>,
    skipped: Vec<SkipRow>,
    capped: bool,
    flash: Flash,
}

async fn update_all_page(
    state: &AppState,
    user: &WebUser,
    view: crate::update_all::UpdateAllView,
    flash: Flash,
    code: StatusCode,
) -> PageResult {
    let p = &user.principal;
    let names = trusthub_fleet::host_names(state, p.tenant())
        .await
        .unwrap_or_default();
    let why =
        |s: &crate::update_all::UpdateAllSkip| match (s.reason.as_str(), &s.suppression_reason) {
            ("suppressed", Some(r)) => format!("suppressed: {r}"),
            ("not_connected", _) => "not connected: nothing was sent".into(),
            ("no_fix", _) => "no fixed version".into(),
            ("cap", _) => "over the cap: next time".into(),
            (other, _) => other.to_owned(),
        };
    render(
        UpdateAllPage {
            assets: &ASSETS,
            user: Some(UserBar::from(user)),
            csrf: user.csrf.clone(),
            can_edit: p.has_role(Role::Admin),
            totp_enabled: p.user.totp_enabled,
            sent: !view.dry_run,
            actions: view
                .dispatched
                .iter()
                .map(|a| UpdateRow {
                    agent_id: a.agent_id,
                    hostname: a.hostname.clone(),
                    project: a.project_path.clone(),
                    ecosystem: a.ecosystem.clone(),
                    packages: a
                        .packages
                        .iter()
                        .map(|c| format!("{} {} → {}", c.name, c.from, c.to))
                        .collect::<Vec<_>>()
                        .join(", "),
                    nonce: a.eat_nonce.clone().unwrap_or_default(),
                })
                .collect(),
            skipped: view
                .skipped
                .iter()
                .map(|s| SkipRow {
                    hostname: names.get(&s.agent_id).cloned().unwrap_or_default(),
                    package: s.package.clone(),
                    ecosystem: s.ecosystem.clone(),
                    why: why(s),
                    advisories: s.vuln_ids.join(", "),
                })
                .collect(),
            capped: view.capped,
            flash,
        }
        .render(),
        code,
    )
}

/// `GET /ui/vulnerabilities/update-all`: the plan (a dry run), and the form that sends it.
pub async fn update_all_plan(
    State(state): State<AppState>,
    meta: Meta,
    user: WebUser,
) -> PageResult {
    let result = async {
        let admin = Admin::of(&user.principal)?;
        let req = crate::update_all::UpdateAllRequest {
            dry_run: true,
            ..Default::default()
        };
        crate::update_all::update_all(
            &state,
            &meta,
            &admin.0,
            &req,
            trusthub_platform::state::now(),
        )
        .await
    }
    .await;
    match result {
        Ok(view) => update_all_page(&state, &user, view, Flash::default(), StatusCode::OK).await,
        Err(e) => Err(e),
    }
}

/// The send form (its CSRF token checked by [`Act`]).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateAllForm {
    code: String,
}

/// `POST /ui/vulnerabilities/update-all` (admin, CSRF, TOTP `auto_update_all`): sends it and
/// shows what went.
pub async fn update_all_send(
    State(state): State<AppState>,
    meta: Meta,
    Act {
        by: admin,
        user,
        form: f,
    }: Act<Admin, UpdateAllForm>,
) -> PageResult {
    let now = trusthub_platform::state::now();
    let result = async {
        admin.0.may_change()?;
        TotpProof::<trusthub_identity::auth::purpose::AutoUpdateAll>::from_code(
            &state,
            &meta,
            admin.0.clone(),
            &f.code,
        )
        .await?;
        crate::update_all::update_all(
            &state,
            &meta,
            &admin.0,
            &crate::update_all::UpdateAllRequest::default(),
            now,
        )
        .await
    }
    .await;
    match result {
        Ok(view) => {
            let n = view.dispatched.len();
            update_all_page(
                &state,
                &user,
                view,
                Flash::notice(format!("Sent {n} action(s).")),
                StatusCode::OK,
            )
            .await
        }
        Err(e) => match trusthub_platform::page::form_error(e) {
            Ok((status, m)) => {
                // The plan again, with what went wrong.
                let req = crate::update_all::UpdateAllRequest {
                    dry_run: true,
                    ..Default::default()
                };
                match crate::update_all::update_all(&state, &meta, &user.principal, &req, now).await
                {
                    Ok(view) => update_all_page(&state, &user, view, Flash::error(m), status).await,
                    Err(e) => Err(e),
                }
            }
            Err(e) => Err(e),
        },
    }
}
