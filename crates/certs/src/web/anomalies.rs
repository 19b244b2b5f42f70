//! Integrity anomalies (CONTRACT 14): the open ones (or all), with what was seen, and resolve
//! for operators — through the API's own handlers.

use super::{ASSETS, Assets, Flash, WebUser};
use super::{UserBar, ago};
use crate::auth::{Operator, Viewer};
use crate::extract::Meta;
use crate::service::anomalies::{self as api, AnomalyQuery};
use crate::state::{AppState, now};
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use trusthub_core::Role;
use trusthub_identity::Act;
use trusthub_platform::page::NoFields;
use trusthub_platform::page::{PageResult, render};

/// One anomaly.
#[derive(Debug)]
struct Row {
    id: String,
    kind: String,
    agent: String,
    host: String,
    detail: String,
    evidence: String,
    at: String,
    resolved: String,
}

#[derive(Template)]
#[template(path = "anomalies.html")]
struct Page<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    csrf: String,
    can_resolve: bool,
    all: bool,
    rows: Vec<Row>,
    flash: Flash,
}

/// Open only, or all.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Which {
    #[serde(default)]
    all: Option<String>,
}

async fn page(
    state: &AppState,
    user: &WebUser,
    all: bool,
    flash: Flash,
    status: StatusCode,
) -> PageResult {
    let p = &user.principal;
    let list = api::list(
        state,
        &Viewer::of(p)?,
        AnomalyQuery {
            include_resolved: Some(if all { "1" } else { "0" }.into()),
        },
    )
    .await?;
    let hosts = (state.part::<crate::HostNames>().0)(state, p.tenant()).await?;
    let now = now();
    let page = Page {
        assets: &ASSETS,
        user: Some(UserBar::from(user)),
        csrf: user.csrf.clone(),
        can_resolve: p.has_role(Role::Operator),
        all,
        rows: list
            .into_iter()
            .map(|a| Row {
                id: a.id.to_string(),
                host: a
                    .agent_id
                    .and_then(|id| hosts.get(&id).cloned())
                    .unwrap_or_else(|| "(deleted agent)".into()),
                agent: a.agent_id.map(|i| i.to_string()).unwrap_or_default(),
                kind: a.kind,
                detail: a.detail,
                evidence: a.evidence.to_string(),
                at: ago(Some(a.created_at), now),
                resolved: match a.resolved_at {
                    Some(t) => format!("resolved {}", ago(Some(t), now)),
                    None => String::new(),
                },
            })
            .collect(),
        flash,
    };
    render(page.render(), status)
}

/// `GET /ui/anomalies`.
pub async fn list(
    State(state): State<AppState>,
    user: WebUser,
    axum::extract::Query(w): axum::extract::Query<Which>,
) -> PageResult {
    let all = w.all.as_deref() == Some("1");
    page(&state, &user, all, Flash::default(), StatusCode::OK).await
}

/// `POST /ui/anomalies/{id}/resolve` (operator).
pub async fn resolve(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path(id): axum::extract::Path<uuid::Uuid>,
    Act { by, user, .. }: Act<Operator, NoFields>,
) -> PageResult {
    match super::outcome(
        api::resolve(&state, &meta, &by, id).await,
        "Resolved; its alert is resolved too.",
        StatusCode::OK,
    ) {
        Ok((flash, status)) => page(&state, &user, false, flash, status).await,
        Err(e) => Err(e),
    }
}
