//! Restarting an app (admin, with a TOTP code typed into the form), the action's result as it
//! arrives (the page polls a fragment until the action is final), and the transparency log.

use super::{ASSETS, Assets, WebUser};
use super::{UserBar, ago};
use crate::auth::Viewer;
use crate::error::ApiResult;
use crate::service::actions::{self as api, ActionView, LogQuery};
use crate::state::{AppState, now};
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use trusthub_platform::page::{PageResult, render};

/// What the page shows of an action.
#[derive(Debug)]
struct ActionFacts {
    jti: String,
    act: String,
    status: String,
    done: bool,
    exit_code: String,
    stdout: String,
    stderr: String,
    refused: String,
    reason: String,
    requested: String,
    finished: String,
    app: String,
    agent: String,
}

impl From<ActionView> for ActionFacts {
    fn from(a: ActionView) -> Self {
        let now = now();
        ActionFacts {
            done: a.status != "dispatched",
            jti: a.jti,
            act: a.act,
            status: a.status,
            exit_code: a.exit_code.map(|c| c.to_string()).unwrap_or_default(),
            stdout: a.stdout.unwrap_or_default(),
            stderr: a.stderr.unwrap_or_default(),
            refused: a.refused_reason.unwrap_or_default(),
            reason: a.reason,
            requested: ago(Some(a.created_at), now),
            finished: ago(a.finished_at, now),
            app: a.app_id.map(|i| i.to_string()).unwrap_or_default(),
            agent: a.agent_id.to_string(),
        }
    }
}

#[derive(Template)]
#[template(path = "action.html")]
struct ActionPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    a: ActionFacts,
}

#[derive(Template)]
#[template(path = "action_live.html")]
struct ActionLive {
    a: ActionFacts,
}

async fn load(state: &AppState, user: &WebUser, jti: String) -> ApiResult<ActionFacts> {
    let a = api::get_action(state, &Viewer::of(&user.principal)?, jti).await?;
    Ok(a.into())
}

/// `GET /ui/actions/{jti}`: the action, updating itself until it is final.
pub async fn action(
    State(state): State<AppState>,
    user: WebUser,
    axum::extract::Path(jti): axum::extract::Path<String>,
) -> PageResult {
    match load(&state, &user, jti).await {
        Ok(a) => render(
            ActionPage {
                assets: &ASSETS,
                user: Some(UserBar::from(&user)),
                a,
            }
            .render(),
            StatusCode::OK,
        ),
        Err(e) => Err(e),
    }
}

/// `GET /ui/actions/{jti}/live`: the part of the action page that changes (htmx).
pub async fn action_live(
    State(state): State<AppState>,
    user: WebUser,
    axum::extract::Path(jti): axum::extract::Path<String>,
) -> PageResult {
    match load(&state, &user, jti).await {
        Ok(a) => render(ActionLive { a }.render(), StatusCode::OK),
        Err(e) => Err(e),
    }
}

// ---------------------------------------------------------------- transparency log

/// One log entry.
#[derive(Debug)]
struct EntryRow {
    seq: i64,
    kind: String,
    subject: String,
    payload: String,
    hash: String,
    at: String,
}

#[derive(Template)]
#[template(path = "transparency.html")]
struct TransparencyPage<'a> {
    assets: &'a Assets,
    user: Option<UserBar>,
    seq: i64,
    hash: String,
    signature: String,
    public_key: String,
    entries: Vec<EntryRow>,
    older: Option<i64>,
    hub: String,
}

/// Which page of the log.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogPage {
    /// Show the entries up to this seq (default: the head).
    before: Option<i64>,
}

/// Entries per page.
const PAGE: i64 = 50;

/// `GET /ui/transparency`: the signed head, the newest entries (newest first) and how to
/// verify the whole chain.
pub async fn transparency(
    State(state): State<AppState>,
    user: WebUser,
    axum::extract::Query(q): axum::extract::Query<LogPage>,
) -> PageResult {
    let p = &user.principal;
    let head = api::transparency_head(&state, &Viewer::of(p)?).await?;
    let upto = q.before.map_or(head.seq, |b| b.min(head.seq)).max(0);
    let from = (upto - PAGE).max(0);
    let list = api::transparency_log(
        &state,
        &Viewer::of(p)?,
        LogQuery {
            since_seq: Some(from),
            limit: Some(PAGE.max(1)),
        },
    )
    .await?;
    let mut entries: Vec<EntryRow> = list
        .into_iter()
        .filter(|e| e.seq <= upto)
        .map(|e| EntryRow {
            seq: e.seq,
            kind: e.kind,
            subject: e.subject_ref,
            payload: e.payload.to_string(),
            hash: e.entry_hash,
            at: e.created_at,
        })
        .collect();
    entries.reverse();
    let page = TransparencyPage {
        assets: &ASSETS,
        user: Some(UserBar::from(&user)),
        seq: head.seq,
        hash: head.entry_hash,
        signature: head.signature,
        public_key: head.public_key_hex,
        older: (from > 0).then_some(from),
        entries,
        hub: state.public_url.clone(),
    };
    render(page.render(), StatusCode::OK)
}
