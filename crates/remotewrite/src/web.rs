//! The "Metrics storage" page (admins): each receiver's lag and counts, through the same
//! service as `GET /remote-write`.

use crate::service;
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use trusthub_core::Role;
use trusthub_identity::{UserBar, WebUser, allowed};
use trusthub_platform::AppState;
use trusthub_platform::page::{ASSETS, Assets, html};

/// The pages.
pub fn pages() -> axum::Router<AppState> {
    axum::Router::new().route("/ui/remote-write", get(show))
}

struct Row {
    url: String,
    lag: String,
    sent: u64,
    retried: u64,
    dropped: u64,
    last_sent_at: String,
    sending: &'static str,
    last_error: String,
}

#[derive(Template)]
#[template(path = "remote_write.html")]
struct Page<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    enabled: bool,
    rows: Vec<Row>,
}

/// `GET /ui/remote-write`.
pub async fn show(State(state): State<AppState>, user: WebUser) -> Response {
    if let Err(e) = allowed(&user, Role::Admin) {
        return e.into_response();
    }
    match service::status(&state).await {
        Ok(s) => html(
            Page {
                assets: &ASSETS,
                user: Some(UserBar::from(&user)),
                enabled: s.enabled,
                rows: s
                    .receivers
                    .into_iter()
                    .map(|r| Row {
                        url: r.url,
                        lag: format!("{:.1} s", r.lag_seconds),
                        sent: r.samples_sent,
                        retried: r.samples_retried,
                        dropped: r.samples_dropped,
                        last_sent_at: r.last_sent_at.unwrap_or_else(|| "—".into()),
                        sending: if r.sending { "this one" } else { "another" },
                        last_error: r.last_error.unwrap_or_default(),
                    })
                    .collect(),
            }
            .render(),
            StatusCode::OK,
        ),
        Err(e) => trusthub_platform::error::ApiError::from(e).into_response(),
    }
}
