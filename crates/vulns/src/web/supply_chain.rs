//! Supply chain (SPEC 2.7, CONTRACT 15): the maintainer changes of the tenant's npm
//! dependencies — through the API's own handler.

use super::{ASSETS, Assets, WebUser, html};
use super::{UserBar, ago};
use crate::auth::Viewer;
use crate::service::supply_chain::{self as api, ChangesQuery};
use crate::state::{AppState, now};
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

#[derive(Debug)]
struct Row {
    package: String,
    now: String,
    added: String,
    before: String,
    latest: String,
    deprecated: String,
    hosts: Vec<(String, String)>,
    seen: String,
}

#[derive(Template)]
#[template(path = "supply_chain.html")]
struct Page<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    days: i64,
    rows: Vec<Row>,
}

/// The window, as the form sends it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Days {
    #[serde(default)]
    days: Option<i64>,
}

/// `GET /ui/supply-chain`.
pub async fn changes(
    State(state): State<AppState>,
    user: WebUser,
    axum::extract::Query(q): axum::extract::Query<Days>,
) -> Response {
    let days = q.days.unwrap_or(7);
    let list = match async {
        let by = Viewer::of(&user.principal)?;
        api::maintainer_changes(&state, &by, ChangesQuery { days: Some(days) }).await
    }
    .await
    {
        Ok(l) => l,
        Err(e) => return e.into_response(),
    };
    let now = now();
    let page = Page {
        assets: &ASSETS,
        user: Some(UserBar::from(&user)),
        days,
        rows: list
            .into_iter()
            .map(|c| Row {
                added: c
                    .maintainers
                    .iter()
                    .filter(|m| !c.previous_maintainers.contains(m))
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", "),
                now: c.maintainers.join(", "),
                before: c.previous_maintainers.join(", "),
                latest: c.latest_version.unwrap_or_default(),
                deprecated: c.deprecation_message.unwrap_or_default(),
                hosts: c
                    .agents
                    .into_iter()
                    .map(|a| (a.agent_id.to_string(), a.hostname))
                    .collect(),
                seen: ago(Some(c.seen_at), now),
                package: c.package_name,
            })
            .collect(),
    };
    html(page.render(), StatusCode::OK)
}
