//! Users and invitations (owner), and the public pages an invitation or a password-reset
//! mail links to. Changes go through the API's own handlers (same rules: the last owner
//! stays, removed users lose their sessions and tokens, everything audited).

use super::{ASSETS, Assets, Flash, WebUser, form_error, html, parse_form};
use super::{Act, NoFields};
use super::{UserBar, allowed};
use crate::auth::Owner;
use crate::error::ApiError;
use crate::extract::Meta;
use crate::service::{auth, invitations, users};
use crate::state::AppState;
use askama::Template;
use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use trusthub_core::Role;
use trusthub_platform::page::{PageResult, render};

/// One user.
#[derive(Debug)]
struct UserRow {
    id: String,
    email: String,
    role: String,
    totp: bool,
    me: bool,
    since: String,
}

/// One pending invitation.
#[derive(Debug)]
struct InviteRow {
    id: String,
    email: String,
    role: String,
    expires: String,
}

#[derive(Template)]
#[template(path = "users.html")]
struct UsersPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    csrf: String,
    users: Vec<UserRow>,
    invites: Vec<InviteRow>,
    roles: [&'static str; 4],
    invite_link: Option<String>,
    flash: Flash,
}

async fn page(
    state: &AppState,
    user: &WebUser,
    invite_link: Option<String>,
    flash: Flash,
    status: StatusCode,
) -> PageResult {
    allowed(user, Role::Owner)?;
    let p = &user.principal;
    let list = users::list(state, &Owner::of(p)?).await?;
    let pending = invitations::list(state, &Owner::of(p)?).await?;
    let page = UsersPage {
        assets: &ASSETS,
        user: Some(UserBar::from(user)),
        csrf: user.csrf.clone(),
        users: list
            .into_iter()
            .map(|u| UserRow {
                id: u.id.to_string(),
                me: u.id == p.user.id,
                email: u.email,
                role: u.role.to_string(),
                totp: u.totp_enabled,
                since: u.created_at.date().to_string(),
            })
            .collect(),
        invites: pending
            .into_iter()
            .map(|i| InviteRow {
                id: i.id.to_string(),
                email: i.email,
                role: i.role.to_string(),
                expires: i.expires_at.date().to_string(),
            })
            .collect(),
        roles: ["viewer", "operator", "admin", "owner"],
        invite_link,
        flash,
    };
    render(page.render(), status)
}

async fn refused(state: &AppState, user: &WebUser, e: ApiError) -> PageResult {
    let (status, m) = form_error(e)?;
    page(state, user, None, Flash::error(m), status).await
}

/// `GET /ui/users` (owner).
pub async fn list(State(state): State<AppState>, user: WebUser) -> PageResult {
    page(&state, &user, None, Flash::default(), StatusCode::OK).await
}

/// A role change.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleForm {
    role: String,
}

/// `POST /ui/users/{id}/role` (owner).
pub async fn change_role(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path(id): axum::extract::Path<uuid::Uuid>,
    Act { by, user, form: f }: Act<Owner, RoleForm>,
) -> PageResult {
    let req = users::RoleChange { role: f.role };
    match users::change_role(&state, &meta, &by, id, req).await {
        Ok(u) => {
            page(
                &state,
                &user,
                None,
                Flash::notice(format!("{} is now {}.", u.email, u.role)),
                StatusCode::OK,
            )
            .await
        }
        Err(e) => refused(&state, &user, e).await,
    }
}

/// `POST /ui/users/{id}/remove` (owner).
pub async fn remove(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path(id): axum::extract::Path<uuid::Uuid>,
    Act { by, user, .. }: Act<Owner, NoFields>,
) -> PageResult {
    match users::delete(&state, &meta, &by, id).await {
        Ok(_) => Ok(Redirect::to("/ui/users").into_response()),
        Err(e) => refused(&state, &user, e).await,
    }
}

/// A new invitation.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InviteForm {
    email: String,
    role: String,
}

/// `POST /ui/users/invitations` (owner): the invitation link is shown this once (and mailed
/// when SMTP is set).
pub async fn invite(
    State(state): State<AppState>,
    meta: Meta,
    Act { by, user, form: f }: Act<Owner, InviteForm>,
) -> PageResult {
    let req = invitations::NewInvitation {
        email: f.email,
        role: f.role,
    };
    match invitations::create(&state, &meta, &by, req).await {
        Ok(i) => {
            let link = format!("{}/invite?token={}", state.public_url, i.token);
            page(
                &state,
                &user,
                Some(link),
                Flash::notice(format!(
                    "{} is invited as {} until {}.",
                    i.email,
                    i.role,
                    i.expires_at.date()
                )),
                StatusCode::CREATED,
            )
            .await
        }
        Err(e) => refused(&state, &user, e).await,
    }
}

/// `POST /ui/users/invitations/{id}/revoke` (owner).
pub async fn revoke_invite(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path(id): axum::extract::Path<uuid::Uuid>,
    Act { by, user, .. }: Act<Owner, NoFields>,
) -> PageResult {
    match invitations::revoke(&state, &meta, &by, id).await {
        Ok(_) => Ok(Redirect::to("/ui/users").into_response()),
        Err(e) => refused(&state, &user, e).await,
    }
}

// ---------------------------------------------------------------- public token pages

#[derive(Template)]
#[template(path = "token_password.html")]
struct TokenPasswordPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    title: &'static str,
    intro: &'static str,
    action: &'static str,
    button: &'static str,
    token: String,
    error: Option<String>,
}

/// The token a mail links to.
#[derive(Debug, Deserialize)]
pub struct TokenQuery {
    #[serde(default)]
    token: String,
}

/// The token and the password chosen (no session: read strictly by [`parse_form`]).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenPasswordForm {
    token: String,
    password: String,
}

fn token_page(invite: bool, token: String, error: Option<String>, status: StatusCode) -> Response {
    let page = if invite {
        TokenPasswordPage {
            assets: &ASSETS,
            user: None,
            title: "Accept the invitation",
            intro: "Choose a password for your new Trusthub account. You are signed in right after.",
            action: "/invite",
            button: "Create my account",
            token,
            error,
        }
    } else {
        TokenPasswordPage {
            assets: &ASSETS,
            user: None,
            title: "Choose a new password",
            intro: "Every session of the account ends; sign in with the new password afterwards.",
            action: "/reset-password",
            button: "Set the password",
            token,
            error,
        }
    };
    html(page.render(), status)
}

/// `GET /invite?token=…` (no session needed).
pub async fn invite_form(Query(q): Query<TokenQuery>) -> Response {
    token_page(true, q.token, None, StatusCode::OK)
}

/// `GET /reset-password?token=…` (no session needed).
pub async fn reset_form(Query(q): Query<TokenQuery>) -> Response {
    token_page(false, q.token, None, StatusCode::OK)
}

fn token_refused(invite: bool, token: String, e: ApiError) -> Response {
    match form_error(e) {
        Ok((status, m)) => token_page(invite, token, Some(m), status),
        Err(e) => e.into_response(),
    }
}

/// `POST /invite`: the account is created and signed in (the session cookie of the API's
/// answer is kept), then the overview.
pub async fn accept_invite(
    State(state): State<AppState>,
    meta: Meta,
    body: axum::body::Bytes,
) -> PageResult {
    let f: TokenPasswordForm = parse_form(&body)?;
    let token = f.token.clone();
    let req = auth::TokenPassword {
        token: f.token,
        password: f.password,
    };
    match auth::accept_invite(&state, &meta, req).await {
        Ok(answer) => {
            let mut to = Redirect::to("/").into_response();
            for c in answer.headers().get_all(header::SET_COOKIE) {
                to.headers_mut().append(header::SET_COOKIE, c.clone());
            }
            Ok(to)
        }
        Err(e) => Ok(token_refused(true, token, e)),
    }
}

/// `POST /reset-password`: then the sign-in page.
pub async fn reset_password(
    State(state): State<AppState>,
    meta: Meta,
    body: axum::body::Bytes,
) -> PageResult {
    let f: TokenPasswordForm = parse_form(&body)?;
    let token = f.token.clone();
    let req = auth::TokenPassword {
        token: f.token,
        password: f.password,
    };
    match auth::reset_password(&state, &meta, req).await {
        Ok(_) => Ok(Redirect::to("/login?changed=password").into_response()),
        Err(e) => Ok(token_refused(false, token, e)),
    }
}
