//! Pings counted together: a ping waits up to [`WINDOW`] for the others arriving meanwhile,
//! and the batch is counted in one transaction — its monitors read at once, the verdicts
//! worked out in memory in the order the pings came, then one statement each for the
//! results, the app rows and the timeline. Only what changes a monitor's state (an alert
//! opening or resolving) writes on its own, inside the same transaction. Every ping is
//! answered after the commit, so an answered ping is stored.

use super::PushAnswer;
use crate::alerting::Notifier;
use crate::checks::{Verdict, alert, span_tolerance};
use crate::error::{ApiError, ApiResult, RateInfo};
use crate::state::AppState;
use crate::store::apps::{self, App, CheckResult};
use crate::store::timeline;
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;
use time::OffsetDateTime;
use tokio::sync::oneshot;
use trusthub_store::StoreResult;
use uuid::Uuid;

/// How long the first ping of a batch waits for others.
pub const WINDOW: Duration = Duration::from_millis(200);

/// One ping as the route read it.
#[derive(Debug)]
pub(crate) struct Ping {
    /// The token's hash.
    pub hash: String,
    /// `status=up` (or none).
    pub up: bool,
    /// What the job said.
    pub msg: Option<String>,
    /// The run's duration the job gave.
    pub ping_ms: Option<i64>,
    /// A run's start, not its end.
    pub start: bool,
    /// When it came.
    pub now: OffsetDateTime,
}

type Reply = oneshot::Sender<ApiResult<PushAnswer>>;

/// The pings waiting for their batch, and the lock that lets one batch at a time be counted
/// (a part of the hub's state).
#[derive(Debug, Default)]
pub struct Pings {
    waiting: Mutex<Vec<(Ping, Reply)>>,
    counting: tokio::sync::Mutex<()>,
}

/// Times a batch is tried when the database gives it up for another transaction (a
/// deadlock with the probes job recording a late ping, say).
const TRIES: usize = 3;

/// Counts `ping` with the others of its batch; answers once the batch is stored.
pub(crate) async fn submit(state: &AppState, ping: Ping) -> ApiResult<PushAnswer> {
    let (reply, answer) = oneshot::channel();
    let first = {
        let mut waiting = state
            .part::<Pings>()
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        waiting.push((ping, reply));
        waiting.len() == 1
    };
    if first {
        // Its own task: a caller that hangs up does not take the batch with it.
        let state = state.clone();
        tokio::spawn(async move {
            tokio::time::sleep(WINDOW).await;
            flush(&state).await;
        });
    }
    answer
        .await
        .unwrap_or_else(|_| Err(ApiError::Internal("the ping's batch was lost".into())))
}

async fn flush(state: &AppState) {
    // While one batch is counted the next gathers (bigger, and never beside it).
    let _one = state.part::<Pings>().counting.lock().await;
    let batch = std::mem::take(
        &mut *state
            .part::<Pings>()
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner),
    );
    let (pings, replies): (Vec<Ping>, Vec<Reply>) = batch.into_iter().unzip();
    let mut counted = count(state, &pings).await;
    for _ in 1..TRIES {
        match &counted {
            Err(e) if e.is_transient() => counted = count(state, &pings).await,
            _ => break,
        }
    }
    match counted {
        Ok(answers) => {
            for (reply, answer) in replies.into_iter().zip(answers) {
                let _ = reply.send(answer);
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, pings = pings.len(), "cannot count push pings");
            for reply in replies {
                let _ = reply.send(Err(ApiError::Internal(e.to_string())));
            }
        }
    }
}

/// An app's last timeline span as the batch leaves it.
#[derive(Debug, Clone, Copy)]
struct Span {
    /// `None` until stored.
    id: Option<i64>,
    start: OffsetDateTime,
    end: OffsetDateTime,
    down: bool,
    changed: bool,
}

/// What the batch writes at its end.
#[derive(Default)]
struct Writes {
    results: Vec<CheckResult>,
    apps: Vec<Uuid>,
    /// Spans left behind by a newer one, in order.
    spans: Vec<(Uuid, Span)>,
}

/// Counts a batch in one transaction: each ping's answer, in order.
async fn count(state: &AppState, pings: &[Ping]) -> StoreResult<Vec<ApiResult<PushAnswer>>> {
    let mut tx = state.db.begin().await?;
    let mut hashes: Vec<&str> = pings.iter().map(|p| p.hash.as_str()).collect();
    hashes.sort_unstable();
    hashes.dedup();
    let mut by_hash: HashMap<String, App> = apps::by_push_tokens(&mut tx, &hashes)
        .await?
        .into_iter()
        .collect();
    let ids: Vec<Uuid> = by_hash.values().map(|a| a.id).collect();
    let from = pings.iter().map(|p| p.now).min();
    let to = pings.iter().map(|p| p.now).max();
    let windows = match (from, to) {
        // A ping counts at most a minute after it came.
        (Some(from), Some(to)) if !ids.is_empty() => {
            timeline::maintenance_of_apps(&mut tx, &ids, from, to + time::Duration::seconds(61))
                .await?
        }
        _ => Vec::new(),
    };
    let mut spans: HashMap<Uuid, Span> = timeline::last_spans_of_apps(&mut tx, &ids)
        .await?
        .into_iter()
        .map(|s| {
            let span = Span {
                id: Some(s.id),
                start: s.start_at,
                end: s.end_at,
                down: s.down,
                changed: false,
            };
            (s.app_id, span)
        })
        .collect();
    let mut notifier = Notifier::default();
    let mut writes = Writes::default();
    let mut answers = Vec::with_capacity(pings.len());
    for p in pings {
        let Some(app) = by_hash.get_mut(&p.hash) else {
            answers.push(Err(ApiError::NotFound("push monitor")));
            continue;
        };
        let answer = one(
            &mut tx,
            &mut notifier,
            app,
            &mut spans,
            &mut writes,
            p,
            &windows,
        )
        .await?;
        answers.push(answer);
    }
    let touched: Vec<&App> = {
        let mut seen = std::collections::HashSet::new();
        writes.apps.retain(|id| seen.insert(*id));
        let by_id: HashMap<Uuid, &App> = by_hash.values().map(|a| (a.id, a)).collect();
        writes
            .apps
            .iter()
            .filter_map(|id| by_id.get(id).copied())
            .collect()
    };
    apps::save_checks(&mut tx, &writes.results, &touched).await?;
    // The spans: the ones left behind first (older ids), then each app's last.
    let mut ends = Vec::new();
    let mut new = Vec::new();
    let last = spans.into_iter().filter(|(_, s)| s.changed);
    for (app, s) in writes.spans.into_iter().chain(last) {
        match s.id {
            Some(id) => ends.push((id, s.end)),
            None => new.push((app, s.start, s.end, s.down)),
        }
    }
    timeline::save_spans(&mut tx, &ends, &new).await?;
    tx.commit().await?;
    Ok(answers)
}

/// Counts one ping of `app` (kept in memory as the batch leaves it).
async fn one(
    tx: &mut trusthub_store::Tx,
    notifier: &mut Notifier,
    app: &mut App,
    spans: &mut HashMap<Uuid, Span>,
    writes: &mut Writes,
    p: &Ping,
    windows: &[(Uuid, OffsetDateTime, OffsetDateTime)],
) -> StoreResult<ApiResult<PushAnswer>> {
    let now = p.now;
    let every = time::Duration::seconds(
        app.interval_seconds.unwrap_or(60) + app.grace_seconds.unwrap_or(0),
    );
    let answer = |recorded: &str, next_deadline| PushAnswer {
        recorded: recorded.into(),
        next_deadline,
    };
    if p.start {
        app.push_started_at = Some(now);
        writes.apps.push(app.id);
        return Ok(Ok(answer(
            "started",
            app.next_check_at.unwrap_or(now + every),
        )));
    }
    let latency_ms = p.ping_ms.or_else(|| {
        app.push_started_at
            .filter(|s| *s <= now)
            .map(|s| i64::try_from((now - s).whole_milliseconds()).unwrap_or(i64::MAX))
    });
    let recorded = if p.up { "up" } else { "down" };
    // Results are kept to the second: a ping in the second of the previous result is the
    // same heartbeat when it says the same, else it is counted a second later (at most a
    // minute ahead: past that, the pinger is told to slow down).
    let mut at = now;
    if let Some(last) = app.last_check_at.filter(|l| *l >= now) {
        if app.last_check_ok == Some(p.up) && p.msg.is_none() && latency_ms.is_none() {
            return Ok(Ok(answer(
                recorded,
                app.next_check_at.unwrap_or(now + every),
            )));
        }
        at = last + time::Duration::seconds(1);
        if at > now + time::Duration::seconds(60) {
            return Ok(Err(ApiError::RateLimited(RateInfo {
                limit: 60,
                remaining: 0,
                reset_secs: 60,
            })));
        }
    }
    let result = CheckResult {
        app_id: app.id,
        checked_at: at,
        ok: p.up,
        status_code: None,
        latency_ms,
        error: (!p.up).then(|| match &p.msg {
            Some(m) => format!("the job reported down: {m}"),
            None => "the job reported down".to_owned(),
        }),
    };
    let quiet = windows
        .iter()
        .any(|(id, s, e)| *id == app.id && *s <= at && at < *e);
    let v = Verdict::of(app, p.up, quiet);
    if v.known() {
        timeline_step(app, spans, writes, at, v.mismatch);
    }
    if v.raise || v.resolve {
        // Rare: the alert is written now, from the app as it stood before this ping.
        alert(tx, notifier, app, &result, &v, now).await?;
    }
    app.last_check_at = Some(at);
    app.last_checked_at = Some(at);
    app.last_check_ok = Some(p.up);
    app.last_check_status = None;
    app.last_check_latency_ms = latency_ms;
    app.last_check_error = result.error.clone();
    app.consecutive_failures = v.after.failures;
    app.consecutive_successes = v.after.successes;
    app.observed_state = Some(v.state().to_owned());
    if v.changed {
        app.last_state_change = Some(at);
    }
    app.alerting = v.alerting;
    app.next_check_at = Some(at + every);
    app.push_started_at = None;
    writes.apps.push(app.id);
    writes.results.push(result);
    Ok(Ok(answer(recorded, at + every)))
}

/// The SLO timeline's step for a verdict at `at` (as [`crate::checks::record`] takes it):
/// the last span extended, or a new one after it.
fn timeline_step(
    app: &App,
    spans: &mut HashMap<Uuid, Span>,
    writes: &mut Writes,
    at: OffsetDateTime,
    down: bool,
) {
    let fresh = |start| Span {
        id: None,
        start,
        end: at,
        down,
        changed: true,
    };
    let next = match spans.get_mut(&app.id) {
        Some(l) if at >= l.end && at - l.end <= span_tolerance(app) => {
            if l.down == down {
                l.end = at;
                l.changed = true;
                return;
            }
            fresh(l.end)
        }
        Some(l) if at < l.end => return,
        _ => fresh(at),
    };
    if let Some(old) = spans.insert(app.id, next)
        && old.changed
    {
        writes.spans.push((app.id, old));
    }
}
