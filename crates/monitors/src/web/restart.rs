//! The restart form of an app (SPEC 3.1).

use super::{ASSETS, Assets, Flash, WebUser, form_error, html};
use super::{UserBar, allowed};
use crate::auth::Admin;
use crate::auth::{TotpProof, Viewer, purpose::AppRestart};
use crate::extract::Meta;
use crate::service::apps;
use crate::service::restart::{self as api, RestartRequest};
use crate::state::AppState;
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use trusthub_core::Role;
use trusthub_identity::Act;
use uuid::Uuid;

#[derive(Template)]
#[template(path = "restart.html")]
struct RestartPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    csrf: String,
    id: String,
    name: String,
    identifier: String,
    totp_enabled: bool,
    reason: String,
    flash: Flash,
}

async fn restart_page(
    state: &AppState,
    user: &WebUser,
    id: Uuid,
    reason: String,
    flash: Flash,
    status: StatusCode,
) -> Response {
    if let Err(e) = allowed(user, Role::Admin) {
        return e.into_response();
    }
    let p = &user.principal;
    match async {
        let by = Viewer::of(p)?;
        apps::get_app(state, &by, id).await
    }
    .await
    {
        Ok(a) => html(
            RestartPage {
                assets: &ASSETS,
                user: Some(UserBar::from(user)),
                csrf: user.csrf.clone(),
                id: a.id.to_string(),
                name: a.name,
                identifier: format!("{} {}", a.app_type, a.identifier),
                totp_enabled: p.user.totp_enabled,
                reason,
                flash,
            }
            .render(),
            status,
        ),
        Err(e) => e.into_response(),
    }
}

/// `GET /ui/apps/{id}/restart` (admin): the form asking why, and for a TOTP code.
pub async fn restart_form(
    State(state): State<AppState>,
    user: WebUser,
    axum::extract::Path(id): axum::extract::Path<Uuid>,
) -> Response {
    restart_page(
        &state,
        &user,
        id,
        String::new(),
        Flash::default(),
        StatusCode::OK,
    )
    .await
}

/// The restart form.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RestartForm {
    reason: String,
    code: String,
}

/// `POST /ui/apps/{id}/restart` (admin, CSRF, TOTP code): a signed action token goes to the
/// agent; the answer is the action's page.
pub async fn restart(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path(id): axum::extract::Path<Uuid>,
    Act { user, form: f, .. }: Act<Admin, RestartForm>,
) -> Response {
    let dispatched = async {
        // A restart that cannot work is refused before the code is spent.
        let app = api::restartable(&state, user.principal.tenant(), id).await?;
        let proof =
            TotpProof::<AppRestart>::from_code(&state, &meta, user.principal.clone(), &f.code)
                .await?;
        api::restart(
            &state,
            &meta,
            &proof,
            app,
            RestartRequest {
                reason: f.reason.clone(),
            },
        )
        .await
    }
    .await;
    match dispatched {
        Ok(d) => Redirect::to(&format!("/ui/actions/{}", d.jti)).into_response(),
        Err(e) => match form_error(e) {
            Ok((status, m)) => {
                restart_page(&state, &user, id, f.reason, Flash::error(m), status).await
            }
            Err(e) => e.into_response(),
        },
    }
}
