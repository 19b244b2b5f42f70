//! The alert rules page.

use super::*;
use crate::auth::Operator;
use crate::error::{ApiError, ApiResult};
use crate::extract::Meta;
use crate::state::{AppState, now};
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use trusthub_core::Role;
use trusthub_identity::Act;
use trusthub_platform::page::NoFields;

/// One rule.
#[derive(Debug)]
struct RuleRow {
    id: String,
    name: String,
    metric: String,
    operator: String,
    threshold: String,
    window: String,
    group_by: String,
    severity: String,
    evaluated: String,
    seen: bool,
}

#[derive(Template)]
#[template(path = "rules.html")]
struct RulesPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    rules: Vec<RuleRow>,
    metrics: Vec<String>,
    error: Option<String>,
    can_edit: bool,
    csrf: String,
}

async fn rules_page(
    state: &AppState,
    user: &WebUser,
    error: Option<String>,
    status: StatusCode,
) -> Response {
    let page: ApiResult<RulesPage> = async {
        let tenant = user.principal.tenant();
        let now = now();
        let mut c = state.db.conn().await?;
        let metrics = trusthub_fleet::metric_names(&mut c, tenant).await?;
        let mut rows = Vec::new();
        for r in crate::store::rules::list(&mut c, tenant).await? {
            rows.push(RuleRow {
                id: r.id.to_string(),
                seen: metrics.contains(&r.metric),
                name: r.name,
                metric: r.metric,
                operator: r.operator,
                threshold: chart::short(r.threshold),
                window: r.window_spec,
                group_by: r.group_by.0.join(", "),
                severity: r.severity,
                evaluated: match r.last_evaluated_at {
                    Some(_) => format!(
                        "{}: {} of {} groups firing",
                        ago(r.last_evaluated_at, now),
                        r.last_firing.unwrap_or(0),
                        r.last_groups.unwrap_or(0)
                    ),
                    None => "not yet".into(),
                },
            });
        }
        Ok(RulesPage {
            assets: &ASSETS,
            user: Some(UserBar::from(user)),
            rules: rows,
            metrics,
            error,
            can_edit: user.principal.has_role(Role::Operator),
            csrf: user.csrf.clone(),
        })
    }
    .await;
    match page {
        Ok(p) => html(p.render(), status),
        Err(e) => e.into_response(),
    }
}

/// `GET /ui/rules`: rules with their last evaluation; operators create and delete, with the
/// metric names the fleet sends offered as choices.
pub async fn rules(State(state): State<AppState>, user: WebUser) -> Response {
    rules_page(&state, &user, None, StatusCode::OK).await
}

/// A new rule.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleForm {
    name: String,
    metric: String,
    operator: String,
    threshold: String,
    window: String,
    severity: String,
    #[serde(default)]
    per_agent: Option<String>,
}

/// `POST /ui/rules` (operator, CSRF token): created as through the API.
pub async fn create_rule(
    State(state): State<AppState>,
    meta: Meta,
    Act { user, form, .. }: Act<Operator, RuleForm>,
) -> Response {
    let Ok(threshold) = form.threshold.trim().parse::<f64>() else {
        return rules_page(
            &state,
            &user,
            Some("threshold: must be a number".into()),
            StatusCode::UNPROCESSABLE_ENTITY,
        )
        .await;
    };
    let req = crate::service::rules::NewRule {
        name: form.name,
        metric: form.metric,
        operator: form.operator,
        threshold,
        window: form.window,
        severity: Some(form.severity),
        group_by: if form.per_agent.is_some() {
            vec!["agent_id".into()]
        } else {
            Vec::new()
        },
        webhook_url: None,
    };
    match crate::service::rules::create_rule(&state, &meta, &user.principal, &req).await {
        Ok(_) => Redirect::to("/ui/rules").into_response(),
        Err(ApiError::Validation(errors)) => {
            rules_page(
                &state,
                &user,
                Some(refusal(&errors)),
                StatusCode::UNPROCESSABLE_ENTITY,
            )
            .await
        }
        Err(e) => e.into_response(),
    }
}

/// `POST /ui/rules/{id}/delete` (operator, CSRF token).
pub async fn delete_rule(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path(id): axum::extract::Path<uuid::Uuid>,
    Act { user, .. }: Act<Operator, NoFields>,
) -> Response {
    match crate::service::rules::delete_rule(&state, &meta, &user.principal, id).await {
        Ok(_) => Redirect::to("/ui/rules").into_response(),
        Err(e) => e.into_response(),
    }
}
