//! The enrolment page: tokens and the install command.

use super::*;
use crate::auth::Admin;
use crate::error::ApiError;
use crate::extract::Meta;
use crate::state::AppState;
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use trusthub_core::Role;
use trusthub_identity::Act;

/// A just-made token's install commands.
#[derive(Debug)]
struct CreatedEnrollment {
    /// `curl … /install.sh | sh -s -- --enroll <token>`.
    command: String,
    /// The same with the agent binary already on the host.
    manual: String,
    expires: String,
}

#[derive(Template)]
#[template(path = "enroll.html")]
struct EnrollPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    created: Option<CreatedEnrollment>,
    error: Option<String>,
    csrf: String,
    /// Set when no public URL is configured: the address the commands use instead.
    unset_public_url: Option<String>,
}

fn enroll_page(
    state: &AppState,
    user: &WebUser,
    created: Option<CreatedEnrollment>,
    error: Option<String>,
    status: StatusCode,
) -> Response {
    html(
        EnrollPage {
            assets: &ASSETS,
            user: Some(UserBar::from(user)),
            created,
            error,
            csrf: user.csrf.clone(),
            unset_public_url: state
                .settings
                .public_url
                .is_none()
                .then(|| state.public_url.clone()),
        }
        .render(),
        status,
    )
}

/// `GET /ui/enroll` (admin).
pub async fn enroll(State(state): State<AppState>, user: WebUser) -> Response {
    if let Err(e) = allowed(&user, Role::Admin) {
        return e.into_response();
    }
    enroll_page(&state, &user, None, None, StatusCode::OK)
}

/// The enrolment form.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnrollForm {
    #[serde(default)]
    tags: String,
}

/// `POST /ui/enroll` (admin, CSRF token): a token as through the API, and the one-line
/// install command for the new host with it filled in.
pub async fn create_enrollment(
    State(state): State<AppState>,
    meta: Meta,
    Act { user, form, .. }: Act<Admin, EnrollForm>,
) -> Response {
    let req = crate::service::agents::enrollment::NewEnrollmentToken {
        expires_at: None,
        tags: form.tags.split_whitespace().map(str::to_owned).collect(),
        single_use: false,
    };
    match crate::service::agents::enrollment::new_enrollment_token(
        &state,
        &meta,
        &user.principal,
        req,
    )
    .await
    {
        Ok(created) => {
            let hub = state.public_url.trim_end_matches('/');
            let manual = format!(
                "trusthub-agent enroll --hub {hub} --enroll {} --state-dir /var/lib/trusthub-agent && \
                 trusthub-agent install --state-dir /var/lib/trusthub-agent && \
                 systemctl daemon-reload && systemctl enable --now trusthub-agent",
                created.token
            );
            enroll_page(
                &state,
                &user,
                Some(CreatedEnrollment {
                    command: super::install::one_liner(hub, &created.token),
                    manual,
                    expires: trusthub_platform::state::rfc3339(created.expires_at),
                }),
                None,
                StatusCode::CREATED,
            )
        }
        Err(ApiError::Validation(errors)) => enroll_page(
            &state,
            &user,
            None,
            Some(refusal(&errors)),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        Err(e) => e.into_response(),
    }
}
