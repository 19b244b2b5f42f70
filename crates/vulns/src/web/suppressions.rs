//! CVE suppressions (SPEC 2.5, CONTRACT 15): the list with delete, and the form (also posted
//! from a finding's row) — through the API's own functions.

use super::{ASSETS, Assets, Flash, WebUser};
use super::{UserBar, ago};
use crate::auth::Operator;
use crate::auth::Viewer;
use crate::extract::Meta;
use crate::service::suppressions::{self as api, NewSuppression};
use crate::state::{AppState, now};
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use trusthub_core::Role;
use trusthub_identity::Act;
use trusthub_platform::page::NoFields;
use trusthub_platform::page::{PageResult, render};

#[derive(Debug)]
struct Row {
    id: String,
    package: String,
    ecosystem: String,
    range: String,
    vuln: String,
    reason: String,
    until: String,
    active: bool,
    findings: i64,
    by: String,
    created: String,
}

/// The form, kept when it is refused.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuppressForm {
    #[serde(default)]
    package_name: String,
    #[serde(default)]
    ecosystem: String,
    #[serde(default)]
    version_range: String,
    #[serde(default)]
    vuln_id: String,
    #[serde(default)]
    reason: String,
    #[serde(default)]
    expires_at: String,
}

#[derive(Template)]
#[template(path = "suppressions.html")]
struct Page<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    csrf: String,
    can_edit: bool,
    rows: Vec<Row>,
    form: SuppressForm,
    flash: Flash,
}

async fn page(
    state: &AppState,
    user: &WebUser,
    form: SuppressForm,
    flash: Flash,
    status: StatusCode,
) -> PageResult {
    let list = api::list(state, &Viewer::of(&user.principal)?).await?;
    let now = now();
    let page = Page {
        assets: &ASSETS,
        user: Some(UserBar::from(user)),
        csrf: user.csrf.clone(),
        can_edit: user.principal.has_role(Role::Operator),
        rows: list
            .into_iter()
            .map(|s| Row {
                id: s.id.to_string(),
                package: s.package_name,
                ecosystem: s.ecosystem,
                range: s.version_range,
                vuln: s.vuln_id.unwrap_or_default(),
                reason: s.reason,
                until: s.expires_at.date().to_string(),
                active: s.active,
                findings: s.findings,
                by: s.created_by,
                created: ago(Some(s.created_at), now),
            })
            .collect(),
        form,
        flash,
    };
    render(page.render(), status)
}

/// `GET /ui/cve-suppressions`.
pub async fn list(State(state): State<AppState>, user: WebUser) -> PageResult {
    let form = SuppressForm {
        expires_at: super::vulns::default_expiry(now()),
        ..Default::default()
    };
    page(&state, &user, form, Flash::default(), StatusCode::OK).await
}

/// `POST /ui/cve-suppressions` (operator): from the form or a finding's row.
pub async fn create(
    State(state): State<AppState>,
    meta: Meta,
    Act { user, form: f, .. }: Act<Operator, SuppressForm>,
) -> PageResult {
    let req = NewSuppression {
        package_name: f.package_name.clone(),
        ecosystem: f.ecosystem.clone(),
        version_range: f.version_range.clone(),
        reason: f.reason.clone(),
        expires_at: f.expires_at.clone(),
        vuln_id: Some(f.vuln_id.trim().to_owned()).filter(|v| !v.is_empty()),
    };
    let result = api::create(&state, &meta, &user.principal, &req).await;
    let ok = result.is_ok();
    match super::outcome(
        result,
        "Suppressed: its findings show as suppressed until the date.",
        StatusCode::OK,
    ) {
        Ok((flash, status)) => {
            let form = if ok {
                SuppressForm {
                    expires_at: super::vulns::default_expiry(now()),
                    ..Default::default()
                }
            } else {
                f
            };
            page(&state, &user, form, flash, status).await
        }
        Err(e) => Err(e),
    }
}

/// `POST /ui/cve-suppressions/{id}/delete` (operator).
pub async fn delete(
    State(state): State<AppState>,
    meta: Meta,
    axum::extract::Path(id): axum::extract::Path<uuid::Uuid>,
    Act { user, .. }: Act<Operator, NoFields>,
) -> PageResult {
    let result = api::delete(&state, &meta, &user.principal, id).await;
    match super::outcome(
        result,
        "Deleted: its findings are open again.",
        StatusCode::OK,
    ) {
        Ok((flash, status)) => {
            let form = SuppressForm {
                expires_at: super::vulns::default_expiry(now()),
                ..Default::default()
            };
            page(&state, &user, form, flash, status).await
        }
        Err(e) => Err(e),
    }
}
