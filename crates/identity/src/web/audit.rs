//! The audit log page.

use super::*;
use crate::error::ApiResult;
use crate::state::AppState;
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use trusthub_store::audit;

/// One audit row.
#[derive(Debug)]
struct AuditRow {
    at: String,
    event: String,
    actor: String,
    subject: String,
    ip: String,
}

#[derive(Template)]
#[template(path = "audit.html")]
struct AuditPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    entries: Vec<AuditRow>,
}

/// `GET /ui/audit`: the newest 200 audit rows of the tenant.
pub async fn audit_log(State(state): State<AppState>, user: WebUser) -> Response {
    let rows: ApiResult<Vec<trusthub_store::audit::Entry>> = async {
        let mut c = state.db.conn().await?;
        Ok(audit::list(
            &mut c,
            user.principal.tenant(),
            &audit::Filter {
                event_type: None,
                since: None,
                before_id: None,
                limit: 200,
            },
        )
        .await?)
    }
    .await;
    match rows {
        Ok(rows) => html(
            AuditPage {
                assets: &ASSETS,
                user: Some(UserBar::from(&user)),
                entries: rows
                    .into_iter()
                    .map(|e| AuditRow {
                        at: trusthub_platform::state::rfc3339(e.created_at),
                        event: e.event_type,
                        actor: e.actor,
                        subject: e.subject,
                        ip: e.ip.unwrap_or_default(),
                    })
                    .collect(),
            }
            .render(),
            StatusCode::OK,
        ),
        Err(e) => e.into_response(),
    }
}
