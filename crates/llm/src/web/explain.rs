//! The "explain" page: a log line (from the explain buttons beside alerts, honeypot touches
//! and console output, or pasted) explained through the same service as `/ai/explain`.

use crate::service::explain::{self as service, Explained};
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use trusthub_identity::auth::Viewer;
use trusthub_identity::{UserBar, WebUser};
use trusthub_platform::AppState;
use trusthub_platform::error::ApiError;
use trusthub_platform::page::{ASSETS, Assets, PageResult, render};
use uuid::Uuid;

/// The page's fields (empty values mean none, as forms send them).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExplainForm {
    #[serde(default)]
    log: Option<String>,
    #[serde(default)]
    agent_id: Option<String>,
    #[serde(default)]
    lang: Option<String>,
}

#[derive(Template)]
#[template(path = "explain.html")]
struct ExplainPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    log: String,
    agent_id: String,
    lang: String,
    hostname: String,
    answer: Option<Explained>,
    error: Option<String>,
}

/// `GET /ui/explain[?log=&agent_id=&lang=]`.
pub async fn explain(
    State(state): State<AppState>,
    user: WebUser,
    axum::extract::Query(q): axum::extract::Query<ExplainForm>,
) -> PageResult {
    let p = &user.principal;
    Viewer::of(p)?;
    let some = |v: &Option<String>| v.clone().filter(|s| !s.trim().is_empty());
    let agent_id = match some(&q.agent_id) {
        None => None,
        Some(a) => Some(
            Uuid::parse_str(&a)
                .map_err(|_| ApiError::invalid("agent_id", "must be an agent id"))?,
        ),
    };
    let lang = some(&q.lang).unwrap_or_else(|| "en".into());
    let log = some(&q.log).unwrap_or_default();
    let hostname = match agent_id {
        Some(id) => trusthub_fleet::host_names(&state, p.tenant())
            .await?
            .remove(&id)
            .ok_or(ApiError::NotFound("agent"))?,
        None => String::new(),
    };
    let (answer, error) = if log.is_empty() {
        (None, None)
    } else {
        match service::explain(&state, p, &log, agent_id, Some(&lang)).await {
            Ok(a) => (Some(a), None),
            Err(ApiError::Validation(errors)) => (
                None,
                Some(
                    errors
                        .iter()
                        .map(|e| format!("{}: {}", e.field, e.message))
                        .collect::<Vec<_>>()
                        .join("; "),
                ),
            ),
            Err(e) => return Err(e),
        }
    };
    let page = ExplainPage {
        assets: &ASSETS,
        user: Some(UserBar::from(&user)),
        log,
        agent_id: agent_id.map(|a| a.to_string()).unwrap_or_default(),
        lang,
        hostname,
        answer,
        error,
    };
    let code = if page.error.is_some() {
        StatusCode::UNPROCESSABLE_ENTITY
    } else {
        StatusCode::OK
    };
    render(page.render(), code)
}
