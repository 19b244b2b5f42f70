//! Vulnerability data sources (CONTRACT 15): per ecosystem, how many advisories are loaded and
//! how fresh they are — through the API's own handler.

use super::{ASSETS, Assets, WebUser, html};
use super::{UserBar, ago};
use crate::auth::Viewer;
use crate::service::cve as api;
use crate::state::{AppState, now};
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// One ecosystem.
#[derive(Debug)]
struct Row {
    ecosystem: String,
    advisories: i64,
    newest: String,
    newest_ago: String,
    imported: String,
}

/// One host's coverage.
#[derive(Debug)]
struct Host {
    agent: String,
    hostname: String,
    scanned: String,
    packages: i64,
    not_covered: Vec<String>,
    /// Sources of its packages.
    sources: usize,
    /// Those not (wholly) covered.
    sources_not_covered: usize,
}

#[derive(Template)]
#[template(path = "cve_sources.html")]
struct Page<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    rows: Vec<Row>,
    hosts: Vec<Host>,
    pull_url: String,
    pulls: Vec<(String, String, String, String)>,
}

/// `GET /ui/cve-sources`.
pub async fn sources(State(state): State<AppState>, user: WebUser) -> Response {
    let list = match async {
        let by = Viewer::of(&user.principal)?;
        api::sources(&state, &by).await
    }
    .await
    {
        Ok(l) => l,
        Err(e) => return e.into_response(),
    };
    let coverage = match async {
        let by = Viewer::of(&user.principal)?;
        api::coverage(&state, &by).await
    }
    .await
    {
        Ok(c) => c,
        Err(e) => return e.into_response(),
    };
    // A database error is an error page (503), never an empty list (CONTRACT 18).
    let pulls = match state.db.conn().await {
        Ok(mut c) => match crate::store::osv::pulls(&mut c).await {
            Ok(p) => p,
            Err(e) => return crate::error::ApiError::from(e).into_response(),
        },
        Err(e) => return crate::error::ApiError::from(e).into_response(),
    };
    let now = now();
    let page = Page {
        pull_url: crate::settings::of(&state.settings)
            .osv_url
            .clone()
            .unwrap_or_default(),
        pulls: pulls
            .into_iter()
            .map(|p| {
                (
                    p.ecosystem,
                    ago(Some(p.pulled_at), now),
                    p.high_water.unwrap_or_default(),
                    p.last_error.unwrap_or_default(),
                )
            })
            .collect(),
        hosts: coverage
            .into_iter()
            .map(|c| Host {
                agent: c.agent_id.to_string(),
                hostname: c.hostname,
                scanned: c
                    .scanned_at
                    .map(|t| ago(Some(t), now))
                    .unwrap_or_else(|| "not yet".into()),
                packages: c.packages,
                not_covered: c.not_covered,
                sources: c.sources.len(),
                sources_not_covered: c.sources.iter().filter(|s| s.status != "covered").count(),
            })
            .collect(),
        assets: &ASSETS,
        user: Some(UserBar::from(&user)),
        rows: list
            .into_iter()
            .map(|s| Row {
                ecosystem: s.ecosystem,
                advisories: s.advisories,
                newest: s
                    .newest_modified
                    .format(&time::format_description::well_known::Rfc3339)
                    .unwrap_or_default(),
                newest_ago: ago(Some(s.newest_modified), now),
                imported: ago(Some(s.imported_at), now),
            })
            .collect(),
    };
    html(page.render(), StatusCode::OK)
}
