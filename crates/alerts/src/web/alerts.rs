//! The alerts page: open and resolved alerts, resolving one.

use super::*;
use crate::auth::Operator;
use crate::error::ApiResult;
use crate::extract::Meta;
use crate::state::{AppState, now};
use crate::store::alerts;
use askama::Template;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use trusthub_core::Role;
use trusthub_identity::Act;
use trusthub_platform::page::NoFields;

/// One alert row.
#[derive(Debug)]
struct AlertRow {
    id: String,
    severity: String,
    mark: &'static str,
    title: String,
    category: String,
    host: String,
    raised: String,
    resolved: bool,
    /// The query of the alert's "explain" link (its title and detail, its host).
    explain: String,
}

#[derive(Template)]
#[template(path = "alerts.html")]
struct AlertsPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    alerts: Vec<AlertRow>,
    severity: String,
    state: String,
    tag: String,
    can_resolve: bool,
    csrf: String,
}

/// The alert filters.
#[derive(Debug, Deserialize)]
pub struct AlertFilter {
    #[serde(default)]
    severity: String,
    #[serde(default)]
    state: String,
    #[serde(default)]
    tag: String,
}

/// `GET /ui/alerts`: filter by severity, state and agent tag; operators resolve.
pub async fn alerts(
    State(state): State<AppState>,
    user: WebUser,
    Query(f): Query<AlertFilter>,
) -> Response {
    let severity = match f.severity.as_str() {
        "critical" | "warning" | "info" => f.severity.clone(),
        _ => String::new(),
    };
    let which = match f.state.as_str() {
        "resolved" | "all" => f.state.clone(),
        _ => "open".to_owned(),
    };
    let tag = f.tag.trim().to_owned();
    let listed: ApiResult<Vec<crate::alerting::AlertView>> = async {
        let mut c = state.db.conn().await?;
        let rows = alerts::list(
            &mut c,
            user.principal.tenant(),
            &alerts::Filter {
                severity: (!severity.is_empty()).then_some(severity.as_str()),
                is_resolved: match which.as_str() {
                    "open" => Some(false),
                    "resolved" => Some(true),
                    _ => None,
                },
                tag: (!tag.is_empty()).then_some(tag.as_str()),
                before: None,
                limit: 200,
            },
        )
        .await?;
        Ok(rows.into_iter().map(Into::into).collect())
    }
    .await;
    let now = now();
    match listed {
        Ok(list) => html(
            AlertsPage {
                assets: &ASSETS,
                user: Some(UserBar::from(&user)),
                alerts: list
                    .into_iter()
                    .map(|a| AlertRow {
                        explain: serde_urlencoded::to_string([
                            (
                                "log",
                                match &a.detail {
                                    Some(d) => format!("{}: {d}", a.title),
                                    None => a.title.clone(),
                                },
                            ),
                            (
                                "agent_id",
                                a.agent
                                    .as_ref()
                                    .map(|g| g.id.to_string())
                                    .unwrap_or_default(),
                            ),
                        ])
                        .unwrap_or_default(),
                        id: a.id.to_string(),
                        mark: match a.severity.as_str() {
                            "critical" => "✕",
                            "warning" => "▲",
                            _ => "●",
                        },
                        severity: a.severity,
                        title: a.title,
                        category: a.category,
                        host: a.agent.map(|g| g.hostname).unwrap_or_default(),
                        raised: ago(Some(a.created_at), now),
                        resolved: a.is_resolved,
                    })
                    .collect(),
                severity,
                state: which,
                tag,
                can_resolve: user.principal.has_role(Role::Operator),
                csrf: user.csrf.clone(),
            }
            .render(),
            StatusCode::OK,
        ),
        Err(e) => e.into_response(),
    }
}

#[derive(Template)]
#[template(path = "alert.html")]
struct AlertPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    a: crate::alerting::AlertView,
    mark: &'static str,
    raised: String,
    resolved: String,
    can_resolve: bool,
    csrf: String,
}

/// `GET /ui/alerts/{id}`: one alert — what, where, since when, why; operators resolve it.
/// Notifications link here.
pub async fn alert(
    State(state): State<AppState>,
    user: WebUser,
    axum::extract::Path(id): axum::extract::Path<uuid::Uuid>,
) -> Response {
    let viewer = match crate::auth::Viewer::of(&user.principal) {
        Ok(v) => v,
        Err(e) => return e.into_response(),
    };
    let now = now();
    match crate::service::alerts::get_alert(&state, &viewer, id).await {
        Ok(a) => html(
            AlertPage {
                assets: &ASSETS,
                user: Some(UserBar::from(&user)),
                mark: match a.severity.as_str() {
                    "critical" => "✕",
                    "warning" => "▲",
                    _ => "●",
                },
                raised: ago(Some(a.created_at), now),
                resolved: ago(a.resolved_at, now),
                can_resolve: user.principal.has_role(Role::Operator),
                csrf: user.csrf.clone(),
                a,
            }
            .render(),
            StatusCode::OK,
        ),
        Err(e) => e.into_response(),
    }
}

/// `POST /ui/alerts/{id}/resolve` (operator, CSRF token): as the API's resolve.
pub async fn resolve_alert(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path(id): axum::extract::Path<uuid::Uuid>,
    Act { user, .. }: Act<Operator, NoFields>,
) -> Response {
    match crate::service::alerts::resolve(&state, &meta, &user.principal, id).await {
        Ok(_) => Redirect::to("/ui/alerts").into_response(),
        Err(e) => e.into_response(),
    }
}
