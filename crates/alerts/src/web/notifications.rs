//! The notifications page: channels (Slack, Discord, Teams, Telegram, ntfy, e-mail,
//! PagerDuty), adding one, a test message, deleting one. Everything goes through the same
//! services as the API (`routes::channels::*_by`).

use super::*;
use crate::auth::{Admin, Viewer};
use crate::extract::Meta;
use crate::service::channels::{self, NewChannel};
use crate::state::{AppState, now};
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use serde_json::{Value, json};
use trusthub_core::Role;
use trusthub_identity::Act;
use trusthub_platform::page::NoFields;

/// One channel row (secrets masked).
#[derive(Debug)]
struct ChannelRow {
    id: String,
    name: String,
    kind: String,
    target: String,
    min_severity: String,
    last: String,
}

#[derive(Template)]
#[template(path = "notifications.html")]
struct NotificationsPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    channels: Vec<ChannelRow>,
    notice: Option<String>,
    error: Option<String>,
    /// A signing secret the hub generated, shown this once.
    secret: Option<String>,
    can_edit: bool,
    csrf: String,
}

/// Where a channel sends, as masked as its config.
fn target(kind: &str, c: &Value) -> String {
    let s = |k: &str| c[k].as_str().unwrap_or_default().to_owned();
    match kind {
        "telegram" => format!("chat {} via {}", s("chat_id"), s("bot_token")),
        "ntfy" => format!("{}/{}", s("url"), s("topic")),
        "email" => c["to"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default(),
        "pagerduty" => format!("routing key {}", s("routing_key")),
        _ => s("url"),
    }
}

async fn page(
    state: &AppState,
    user: &WebUser,
    notice: Option<String>,
    error: Option<String>,
    secret: Option<String>,
    status: StatusCode,
) -> Response {
    let viewer = match Viewer::of(&user.principal) {
        Ok(v) => v,
        Err(e) => return e.into_response(),
    };
    let can_edit = user.principal.has_role(Role::Admin);
    let listed = channels::list(state, &viewer).await;
    let admin = Admin::of(&user.principal).ok();
    let now = now();
    let mut rows = Vec::new();
    match listed {
        Ok(list) => {
            for c in list {
                let last = match &admin {
                    Some(a) => match channels::deliveries(state, a, c.id, Some(1)).await {
                        Ok(d) => d
                            .first()
                            .map(|d| {
                                let when = ago(d.last_attempt_at.or(Some(d.created_at)), now);
                                match &d.last_error {
                                    Some(e) => format!("{} {when}: {e}", d.status),
                                    None => format!("{} {when}", d.status),
                                }
                            })
                            .unwrap_or_else(|| "none yet".into()),
                        Err(e) => return e.into_response(),
                    },
                    None => String::new(),
                };
                rows.push(ChannelRow {
                    id: c.id.to_string(),
                    target: target(&c.kind, &c.config),
                    name: c.name,
                    kind: c.kind,
                    min_severity: c.min_severity,
                    last,
                });
            }
        }
        Err(e) => return e.into_response(),
    }
    html(
        NotificationsPage {
            assets: &ASSETS,
            user: Some(UserBar::from(user)),
            channels: rows,
            notice,
            error,
            secret,
            can_edit,
            csrf: user.csrf.clone(),
        }
        .render(),
        status,
    )
}

/// `GET /ui/notifications`.
pub async fn notifications(State(state): State<AppState>, user: WebUser) -> Response {
    page(&state, &user, None, None, None, StatusCode::OK).await
}

/// The new-channel form: the fields of every kind; those of the chosen kind are used.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelForm {
    name: String,
    kind: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    bot_token: String,
    #[serde(default)]
    chat_id: String,
    #[serde(default)]
    topic: String,
    #[serde(default)]
    token: String,
    #[serde(default)]
    to: String,
    #[serde(default)]
    routing_key: String,
    #[serde(default)]
    min_severity: String,
}

/// `POST /ui/notifications` (admin, CSRF token).
pub async fn create(
    State(state): State<AppState>,
    meta: Meta,
    Act {
        by: admin,
        user,
        form: f,
    }: Act<Admin, ChannelForm>,
) -> Response {
    let t = |s: &str| s.trim().to_owned();
    let config = match f.kind.as_str() {
        "telegram" => json!({"bot_token": t(&f.bot_token), "chat_id": t(&f.chat_id)}),
        "ntfy" if f.token.trim().is_empty() => json!({"url": t(&f.url), "topic": t(&f.topic)}),
        "ntfy" => json!({"url": t(&f.url), "topic": t(&f.topic), "token": t(&f.token)}),
        "email" => {
            json!({"to": f.to.split(',').map(str::trim).filter(|s| !s.is_empty()).collect::<Vec<_>>()})
        }
        "pagerduty" => json!({"routing_key": t(&f.routing_key)}),
        _ => json!({"url": t(&f.url)}),
    };
    let req = NewChannel {
        name: f.name,
        kind: f.kind,
        config,
        events: None,
        min_severity: Some(f.min_severity).filter(|s| !s.is_empty()),
        agent_filter: None,
    };
    match channels::create(&state, &meta, &admin, req).await {
        Ok(c) => {
            let notice = format!("Channel “{}” added. Send a test to see it arrive.", c.name);
            let secret = c.secret.clone();
            page(
                &state,
                &user,
                Some(notice),
                None,
                secret,
                StatusCode::CREATED,
            )
            .await
        }
        Err(e) => match form_error(e) {
            Ok((status, m)) => page(&state, &user, None, Some(m), None, status).await,
            Err(e) => e.into_response(),
        },
    }
}

/// `POST /ui/notifications/{id}/test` (admin, CSRF token).
pub async fn test(
    State(state): State<AppState>,
    axum::extract::Path(id): axum::extract::Path<uuid::Uuid>,
    Act {
        by: admin, user, ..
    }: Act<Admin, NoFields>,
) -> Response {
    match channels::test(&state, &admin, id).await {
        Ok(_) => {
            let notice = "Test message queued; its outcome shows under Last delivery.".to_owned();
            page(&state, &user, Some(notice), None, None, StatusCode::OK).await
        }
        Err(e) => e.into_response(),
    }
}

/// `POST /ui/notifications/{id}/delete` (admin, CSRF token).
pub async fn delete(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path(id): axum::extract::Path<uuid::Uuid>,
    Act { by: admin, .. }: Act<Admin, NoFields>,
) -> Response {
    match channels::delete(&state, &meta, &admin, id).await {
        Ok(()) => Redirect::to("/ui/notifications").into_response(),
        Err(e) => e.into_response(),
    }
}
