//! One webhook endpoint (admin): edit, delete, send a test, the delivery log with status and
//! attempts, redeliver. Through the API's own handlers.

use super::{ASSETS, Assets, Flash, WebUser, form_error};
use super::{UserBar, ago};
use crate::auth::Admin;
use crate::error::ApiError;
use crate::extract::Meta;
use crate::service::webhooks as service;
use crate::service::webhooks::{AgentFilter, DeliveryQuery, WebhookPatch};
use crate::state::{AppState, now};
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect};
use trusthub_identity::Act;
use trusthub_platform::page::NoFields;
use trusthub_platform::page::{PageResult, render};
use uuid::Uuid;

/// One delivery.
#[derive(Debug)]
struct DeliveryRow {
    id: String,
    event: String,
    status: String,
    attempts: i64,
    last: String,
    next: String,
    code: String,
    error: String,
    created: String,
}

#[derive(Template)]
#[template(path = "webhook.html")]
struct WebhookPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    csrf: String,
    id: String,
    url: String,
    hint: String,
    severities: Vec<(&'static str, bool)>,
    events: Vec<(&'static str, bool)>,
    tag: String,
    deliveries: Vec<DeliveryRow>,
    flash: Flash,
}

async fn page(
    state: &AppState,
    user: &WebUser,
    id: Uuid,
    flash: Flash,
    status: StatusCode,
) -> PageResult {
    let admin = Admin::of(&user.principal)?;
    let w = service::get(state, &admin, id).await?;
    let list = service::deliveries(state, &admin, id, DeliveryQuery { limit: Some(100) }).await?;
    let now = now();
    let page = WebhookPage {
        assets: &ASSETS,
        user: Some(UserBar::from(user)),
        csrf: user.csrf.clone(),
        id: w.id.to_string(),
        severities: ["info", "warning", "critical"]
            .into_iter()
            .map(|s| (s, s == w.min_severity))
            .collect(),
        events: crate::alerting::EVENTS
            .iter()
            .map(|e| (*e, w.events.iter().any(|x| x == e)))
            .collect(),
        url: w.url,
        hint: w.secret_hint,
        tag: w.agent_filter.map(|f| f.tag).unwrap_or_default(),
        deliveries: list
            .into_iter()
            .map(|d| DeliveryRow {
                id: d.id.to_string(),
                event: d.event,
                status: d.status,
                attempts: d.attempts,
                last: ago(d.last_attempt_at, now),
                next: match d.next_attempt_at {
                    Some(t) if t > now => {
                        format!("in {} s", (t - now).whole_seconds())
                    }
                    Some(_) => "due".into(),
                    None => "—".into(),
                },
                code: d
                    .last_status_code
                    .map(|c| c.to_string())
                    .unwrap_or_else(|| "—".into()),
                error: d.last_error.unwrap_or_default(),
                created: ago(Some(d.created_at), now),
            })
            .collect(),
        flash,
    };
    render(page.render(), status)
}

async fn refused(state: &AppState, user: &WebUser, id: Uuid, e: ApiError) -> PageResult {
    let (status, m) = form_error(e)?;
    page(state, user, id, Flash::error(m), status).await
}

/// `GET /ui/webhooks/{id}` (admin).
pub async fn show(
    State(state): State<AppState>,
    user: WebUser,
    axum::extract::Path(id): axum::extract::Path<Uuid>,
) -> PageResult {
    page(&state, &user, id, Flash::default(), StatusCode::OK).await
}

/// `POST /ui/webhooks/{id}` (admin): the change, checked like at creation.
pub async fn update(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path(id): axum::extract::Path<Uuid>,
    Act {
        by: admin,
        user,
        form,
    }: Act<Admin, super::FormPairs>,
) -> PageResult {
    let form = form.only(&["url", "secret", "events", "min_severity", "tag"])?;
    let (tag, secret) = (form.get("tag"), form.get("secret"));
    let patch = WebhookPatch {
        url: Some(form.get("url")),
        secret: (!secret.is_empty()).then_some(secret),
        events: Some(form.all("events")),
        min_severity: Some(form.get("min_severity")),
        agent_filter: Some((!tag.is_empty()).then_some(AgentFilter { tag })),
    };
    match service::update(&state, &meta, &admin, id, patch).await {
        Ok(_) => page(&state, &user, id, Flash::notice("Saved."), StatusCode::OK).await,
        Err(e) => refused(&state, &user, id, e).await,
    }
}

/// `POST /ui/webhooks/{id}/delete` (admin).
pub async fn delete(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path(id): axum::extract::Path<Uuid>,
    Act {
        by: admin, user, ..
    }: Act<Admin, NoFields>,
) -> PageResult {
    match service::delete(&state, &meta, &admin, id).await {
        Ok(_) => Ok(Redirect::to("/ui/webhooks").into_response()),
        Err(e) => refused(&state, &user, id, e).await,
    }
}

/// `POST /ui/webhooks/{id}/test` (admin): a signed `webhook.test` delivery, queued now.
pub async fn test(
    State(state): State<AppState>,
    axum::extract::Path(id): axum::extract::Path<Uuid>,
    Act {
        by: admin, user, ..
    }: Act<Admin, NoFields>,
) -> PageResult {
    match super::outcome(
        service::ping(&state, &admin, id).await,
        "A test delivery is queued; its result appears below.",
        StatusCode::ACCEPTED,
    ) {
        Ok((flash, status)) => page(&state, &user, id, flash, status).await,
        Err(e) => Err(e),
    }
}

/// `POST /ui/webhooks/{id}/deliveries/{delivery}/redeliver` (admin).
pub async fn redeliver(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path((id, delivery)): axum::extract::Path<(Uuid, Uuid)>,
    Act {
        by: admin, user, ..
    }: Act<Admin, NoFields>,
) -> PageResult {
    match super::outcome(
        service::redeliver(&state, &meta, &admin, id, delivery).await,
        "Queued again, with the same delivery id.",
        StatusCode::ACCEPTED,
    ) {
        Ok((flash, status)) => page(&state, &user, id, flash, status).await,
        Err(e) => Err(e),
    }
}
