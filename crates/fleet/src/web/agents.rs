//! The hosts page.

use super::*;
use crate::service::hosts::{AgentRow, agent_rows};
use crate::state::AppState;
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

#[derive(Template)]
#[template(path = "agents.html")]
struct AgentsPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    agents: Vec<AgentRow>,
}

/// `GET /ui/agents`.
pub async fn agents(State(state): State<AppState>, user: WebUser) -> Response {
    match agent_rows(&state, &user).await {
        Ok(agents) => html(
            AgentsPage {
                assets: &ASSETS,
                user: Some(UserBar::from(&user)),
                agents,
            }
            .render(),
            StatusCode::OK,
        ),
        Err(e) => e.into_response(),
    }
}
