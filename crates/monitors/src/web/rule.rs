//! One alert rule: its settings, edited in place (operator) through the API's own handler.

use super::UserBar;
use super::{ASSETS, Assets, Flash, WebUser, form_error};
use crate::auth::{Operator, Viewer};
use crate::error::ApiError;
use crate::extract::Meta;
use crate::service::rules::{self as api, RulePatch};
use crate::state::AppState;
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use trusthub_core::Role;
use trusthub_identity::Act;
use trusthub_platform::page::{PageResult, render};
use uuid::Uuid;

#[derive(Template)]
#[template(path = "rule.html")]
struct RulePage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    csrf: String,
    can_edit: bool,
    id: String,
    name: String,
    metric: String,
    operators: Vec<(&'static str, bool)>,
    threshold: String,
    window: String,
    severities: Vec<(&'static str, bool)>,
    per_agent: bool,
    metrics: Vec<String>,
    flash: Flash,
}

async fn page(
    state: &AppState,
    user: &WebUser,
    id: Uuid,
    flash: Flash,
    status: StatusCode,
) -> PageResult {
    let p = &user.principal;
    let r = api::get_rule(state, &Viewer::of(p)?, id).await?;
    let metrics = {
        let mut c = state.db.conn().await?;
        trusthub_fleet::metric_names(&mut c, p.tenant()).await?
    };
    let page = RulePage {
        assets: &ASSETS,
        user: Some(UserBar::from(user)),
        csrf: user.csrf.clone(),
        can_edit: p.has_role(Role::Operator),
        id: r.id.to_string(),
        operators: [">", ">=", "<", "<=", "==", "!="]
            .into_iter()
            .map(|o| (o, o == r.operator))
            .collect(),
        severities: ["info", "warning", "critical"]
            .into_iter()
            .map(|s| (s, s == r.severity))
            .collect(),
        per_agent: r.group_by.iter().any(|g| g == "agent_id"),
        threshold: super::chart::short(r.threshold),
        name: r.name,
        metric: r.metric,
        window: r.window,
        metrics,
        flash,
    };
    render(page.render(), status)
}

/// `GET /ui/rules/{id}`.
pub async fn show(
    State(state): State<AppState>,
    user: WebUser,
    axum::extract::Path(id): axum::extract::Path<Uuid>,
) -> PageResult {
    page(&state, &user, id, Flash::default(), StatusCode::OK).await
}

/// The edit form.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditForm {
    name: String,
    metric: String,
    operator: String,
    threshold: String,
    window: String,
    severity: String,
    #[serde(default)]
    per_agent: Option<String>,
}

/// `POST /ui/rules/{id}` (operator): the new settings, checked like at creation; open
/// alerts of the rule stay until the next evaluation decides.
pub async fn update(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path(id): axum::extract::Path<Uuid>,
    Act { by, user, form: f }: Act<Operator, EditForm>,
) -> PageResult {
    let refused = |e: ApiError| async {
        match form_error(e) {
            Ok((status, m)) => page(&state, &user, id, Flash::error(m), status).await,
            Err(e) => Err(e),
        }
    };
    let Ok(threshold) = f.threshold.trim().parse::<f64>() else {
        return refused(ApiError::invalid("threshold", "must be a number")).await;
    };
    let patch = RulePatch {
        name: Some(f.name),
        metric: Some(f.metric),
        operator: Some(f.operator),
        threshold: Some(threshold),
        window: Some(f.window),
        severity: Some(f.severity),
        group_by: Some(if f.per_agent.is_some() {
            vec!["agent_id".into()]
        } else {
            Vec::new()
        }),
        webhook_url: None,
    };
    match api::update_rule(&state, &meta, &by, id, patch).await {
        Ok(_) => page(&state, &user, id, Flash::notice("Saved."), StatusCode::OK).await,
        Err(e) => refused(e).await,
    }
}
