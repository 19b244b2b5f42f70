//! What the API and the page show of forwarding: each receiver's lag (from the database,
//! the same in every process) and this process's figures.

use crate::sender::RemoteWrite;
use crate::store;
use serde::Serialize;
use std::sync::atomic::Ordering;
use trusthub_fleet::metric_log;
use trusthub_platform::AppState;
use trusthub_store::StoreResult;
use utoipa::ToSchema;

/// Forwarding to remote-write receivers (CONTRACT 26).
#[derive(Debug, Serialize, ToSchema)]
pub struct Status {
    /// Whether `TRUSTHUB_REMOTE_WRITE_URL` names any receiver.
    pub enabled: bool,
    /// Each receiver, in the order configured.
    pub receivers: Vec<ReceiverStatus>,
}

/// One receiver.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReceiverStatus {
    /// Its URL, never with userinfo.
    pub url: String,
    /// Wall-clock age in seconds of the oldest stored sample it has not accepted yet (0 when
    /// none), read from the database.
    pub lag_seconds: f64,
    /// Whether this hub process is the one sending to it (with several processes on
    /// PostgreSQL, one holds each receiver's lease).
    pub sending: bool,
    /// Samples it accepted, from this process since it started.
    pub samples_sent: u64,
    /// Samples of failed requests sent again (5xx, 429, network errors), from this process.
    pub samples_retried: u64,
    /// Samples of requests it refused for good (another 4xx), from this process.
    pub samples_dropped: u64,
    /// When it last accepted a request from this process (RFC 3339).
    pub last_sent_at: Option<String>,
    /// When its stored position last moved, by any process (RFC 3339).
    pub position_updated_at: Option<String>,
    /// The last failure this process saw, cleared by the next success.
    pub last_error: Option<String>,
}

fn rfc3339_ms(ms: i64) -> Option<String> {
    (ms > 0)
        .then(|| time::OffsetDateTime::from_unix_timestamp(ms.div_euclid(1000)).ok())
        .flatten()
        .map(trusthub_platform::state::rfc3339)
}

/// The status of every receiver.
pub async fn status(state: &AppState) -> StoreResult<Status> {
    let rw = state.part::<RemoteWrite>();
    let mut c = state.db.conn().await?;
    let positions = store::all(&mut c).await?;
    let now = (time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64;
    let mut receivers = Vec::with_capacity(rw.receivers.len());
    for r in &rw.receivers {
        let stored = positions.iter().find(|p| p.url == r.label);
        let pos = stored.map(|s| s.position).unwrap_or_default();
        let lag = metric_log::oldest_after(&mut c, pos)
            .await?
            .map(|at| (now - at).max(0))
            .unwrap_or(0);
        let f = &r.figures;
        receivers.push(ReceiverStatus {
            url: r.label.clone(),
            lag_seconds: lag as f64 / 1000.0,
            sending: f.sending.load(Ordering::Relaxed),
            samples_sent: f.sent.load(Ordering::Relaxed),
            samples_retried: f.retried.load(Ordering::Relaxed),
            samples_dropped: f.dropped.load(Ordering::Relaxed),
            last_sent_at: rfc3339_ms(f.last_sent_at.load(Ordering::Relaxed)),
            position_updated_at: stored.and_then(|s| rfc3339_ms(s.updated_at)),
            last_error: f.last_error(),
        });
    }
    Ok(Status {
        enabled: rw.enabled(),
        receivers,
    })
}
