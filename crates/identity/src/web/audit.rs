//! The audit log page.

use super::*;
use crate::error::ApiResult;
use crate::state::AppState;
use askama::Template;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use std::collections::HashMap;
use trusthub_platform::error::ApiError;
use trusthub_platform::names::{self, Named};
use trusthub_store::audit;

/// A reference (actor or subject) read for people: its name and page when known, the raw
/// reference always (as the title, and as the text when there is no name).
#[derive(Debug)]
struct Ref {
    raw: String,
    name: Option<String>,
    link: Option<String>,
}

impl Ref {
    fn new(raw: String, names: &HashMap<String, Named>) -> Ref {
        let named = names.get(&raw);
        Ref {
            name: named.map(|n| n.name.clone()),
            link: named.and_then(|n| n.link.clone()),
            raw,
        }
    }
}

/// One audit row.
#[derive(Debug)]
struct AuditRow {
    at: String,
    event: String,
    actor: Ref,
    subject: Ref,
    ip: String,
}

#[derive(Template)]
#[template(path = "audit.html")]
struct AuditPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    entries: Vec<AuditRow>,
    /// The filter shown in the form.
    event: String,
    since: String,
    /// Event types on this page, offered in the filter.
    event_types: Vec<String>,
    /// The link to the next (older) page, when this one is full.
    older: Option<String>,
}

/// The page's filter: an event type, a first day, and paging.
#[derive(Debug, Deserialize)]
pub struct AuditFilter {
    #[serde(default)]
    event: String,
    /// `YYYY-MM-DD`: rows from that day (UTC) on.
    #[serde(default)]
    since: String,
    before: Option<i64>,
}

const PAGE: i64 = 200;

/// `GET /ui/audit`: the tenant's audit rows, newest first, 200 a page, filtered by event type
/// and first day; actors and subjects by name, linking to their pages.
pub async fn audit_log(
    State(state): State<AppState>,
    user: WebUser,
    Query(f): Query<AuditFilter>,
) -> Response {
    if let Err(e) = allowed(&user, trusthub_core::Role::Admin) {
        return e.into_response();
    }
    let since = match f.since.trim() {
        "" => None,
        day => match time::Date::parse(
            day,
            time::macros::format_description!("[year]-[month]-[day]"),
        ) {
            Ok(d) => Some(d.midnight().assume_utc()),
            Err(_) => {
                return ApiError::BadRequest(format!("since: {day:?} is not a date (YYYY-MM-DD)"))
                    .into_response();
            }
        },
    };
    let event = f.event.trim().to_owned();
    let rows: ApiResult<Vec<trusthub_store::audit::Entry>> = async {
        let mut c = state.db.conn().await?;
        Ok(audit::list(
            &mut c,
            user.principal.tenant(),
            &audit::Filter {
                event_type: (!event.is_empty()).then(|| event.clone()),
                since,
                before_id: f.before,
                limit: PAGE,
            },
        )
        .await?)
    }
    .await;
    let rows = match rows {
        Ok(rows) => rows,
        Err(e) => return e.into_response(),
    };
    let names = names::resolve(
        &state,
        user.principal.tenant(),
        rows.iter()
            .flat_map(|e| [e.actor.as_str(), e.subject.as_str()]),
    )
    .await;
    let older = (rows.len() as i64 == PAGE)
        .then(|| rows.last().map(|e| e.id))
        .flatten()
        .map(|id| {
            let mut q = form_urlencoded(&[("event", &event), ("since", f.since.trim())]);
            q.push_str(&format!("&before={id}"));
            format!("/ui/audit?{q}")
        });
    let mut event_types: Vec<String> = rows.iter().map(|e| e.event_type.clone()).collect();
    event_types.sort_unstable();
    event_types.dedup();
    html(
        AuditPage {
            assets: &ASSETS,
            user: Some(UserBar::from(&user)),
            entries: rows
                .into_iter()
                .map(|e| AuditRow {
                    at: trusthub_platform::state::rfc3339(e.created_at),
                    event: e.event_type,
                    actor: Ref::new(e.actor, &names),
                    subject: Ref::new(e.subject, &names),
                    ip: e.ip.unwrap_or_default(),
                })
                .collect(),
            event,
            since: f.since.trim().to_owned(),
            event_types,
            older,
        }
        .render(),
        StatusCode::OK,
    )
}

fn form_urlencoded(pairs: &[(&str, &str)]) -> String {
    serde_urlencoded::to_string(pairs).unwrap_or_default()
}
