//! The webhooks page: endpoints and creating one.

use super::*;
use crate::auth::Admin;
use crate::error::{ApiError, ApiResult};
use crate::extract::Meta;
use crate::state::{AppState, now};
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use trusthub_core::Role;
use trusthub_identity::Act;

/// One endpoint row (never the secret).
#[derive(Debug)]
struct HookRow {
    id: String,
    url: String,
    events: String,
    min_severity: String,
    tag: String,
    hint: String,
    cooldown: String,
}

/// The once-shown secret of a just-created endpoint.
#[derive(Debug)]
struct CreatedHook {
    secret: String,
}

#[derive(Template)]
#[template(path = "webhooks.html")]
struct WebhooksPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    hooks: Vec<HookRow>,
    created: Option<CreatedHook>,
    error: Option<String>,
    can_edit: bool,
    csrf: String,
}

async fn webhooks_page(
    state: &AppState,
    user: &WebUser,
    created: Option<CreatedHook>,
    error: Option<String>,
    status: StatusCode,
) -> Response {
    if let Err(refused) = allowed(user, Role::Admin) {
        return refused.into_response();
    }
    let listed: ApiResult<Vec<crate::store::webhooks::Webhook>> = async {
        let mut c = state.db.conn().await?;
        Ok(crate::store::webhooks::list(&mut c, user.principal.tenant()).await?)
    }
    .await;
    let now = now();
    match listed {
        Ok(list) => html(
            WebhooksPage {
                assets: &ASSETS,
                user: Some(UserBar::from(user)),
                hooks: list
                    .into_iter()
                    .map(|w| HookRow {
                        id: w.id.to_string(),
                        url: w.url,
                        events: w.events.0.join(", "),
                        min_severity: w.min_severity,
                        tag: w.agent_filter_tag.unwrap_or_default(),
                        hint: w.secret_hint,
                        cooldown: match w.cooldown_until {
                            Some(t) if t > now => {
                                format!(
                                    "resting {} min more",
                                    ((t - now).whole_seconds() + 59) / 60
                                )
                            }
                            _ => "—".into(),
                        },
                    })
                    .collect(),
                created,
                error,
                can_edit: true,
                csrf: user.csrf.clone(),
            }
            .render(),
            status,
        ),
        Err(e) => e.into_response(),
    }
}

/// `GET /ui/webhooks` (admin).
pub async fn webhooks(State(state): State<AppState>, user: WebUser) -> Response {
    webhooks_page(&state, &user, None, None, StatusCode::OK).await
}

/// The new-webhook form.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookForm {
    url: String,
    #[serde(default)]
    min_severity: String,
    #[serde(default)]
    tag: String,
}

/// `POST /ui/webhooks` (admin, CSRF token): created as through the API; the secret is
/// shown in this answer only.
pub async fn create_webhook(
    State(state): State<AppState>,
    meta: Meta,
    Act { user, form, .. }: Act<Admin, HookForm>,
) -> Response {
    let req = crate::service::webhooks::NewWebhookRequest {
        url: form.url.clone(),
        secret: None,
        events: None,
        min_severity: (!form.min_severity.is_empty()).then(|| form.min_severity.clone()),
        agent_filter: (!form.tag.trim().is_empty()).then(|| {
            crate::service::webhooks::AgentFilter {
                tag: form.tag.trim().to_owned(),
            }
        }),
    };
    match crate::service::webhooks::create(&state, &meta, &user.principal, &req).await {
        Ok(created) => {
            webhooks_page(
                &state,
                &user,
                Some(CreatedHook {
                    secret: created.secret,
                }),
                None,
                StatusCode::CREATED,
            )
            .await
        }
        Err(ApiError::Validation(errors)) => {
            webhooks_page(
                &state,
                &user,
                None,
                Some(refusal(&errors)),
                StatusCode::UNPROCESSABLE_ENTITY,
            )
            .await
        }
        Err(e) => e.into_response(),
    }
}
