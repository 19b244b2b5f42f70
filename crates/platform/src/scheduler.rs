//! The one scheduler of cluster-wide periodic jobs: every tick first takes the job's lease in
//! the database (CONTRACT 11), so with several hub processes on PostgreSQL only the holder
//! runs it, and another takes over when the holder stops renewing.

use crate::state::{AppState, now};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use time::OffsetDateTime;
use trusthub_store::{StoreResult, leases};

/// One run of a job at an instant.
pub type Tick = fn(
    AppState,
    OffsetDateTime,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = StoreResult<()>> + Send>>;

/// The jobs an event may run at once, by name: [`nudge`] wakes a job's loop in this process
/// (its lease still decides whether it ticks). The composition root installs one as a part.
#[derive(Debug, Default)]
pub struct Nudges(Mutex<HashMap<&'static str, Arc<tokio::sync::Notify>>>);

impl Nudges {
    fn of(&self, name: &'static str) -> Option<Arc<tokio::sync::Notify>> {
        let mut m = self.0.lock().ok()?;
        Some(m.entry(name).or_default().clone())
    }
}

/// Runs the job `name` now rather than at its next interval (an advisory import wakes the
/// vulnerability scan), unless `TRUSTHUB_JOB_NUDGES` is off.
pub fn nudge(state: &AppState, name: &'static str) {
    if state.settings.job_nudges != "on" {
        return;
    }
    if let Some(n) = state.parts.get::<Nudges>().and_then(|n| n.of(name)) {
        n.notify_one();
    }
}

/// Runs `tick` every `every_secs`, the first time `first_secs` after now, and whenever the job
/// is nudged ([`nudge`]), while this process holds the lease `name`.
pub async fn periodic(
    state: AppState,
    name: &'static str,
    first_secs: u64,
    every_secs: u64,
    tick: Tick,
) {
    let every = Duration::from_secs(every_secs);
    let first = Duration::from_secs(first_secs);
    let mut timer = tokio::time::interval_at(tokio::time::Instant::now() + first, every);
    timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let nudged = state
        .parts
        .get::<Nudges>()
        .and_then(|n| n.of(name))
        .unwrap_or_default();
    loop {
        tokio::select! {
            _ = timer.tick() => {}
            _ = nudged.notified() => {}
        }
        let now = now();
        let lease_until = now + time::Duration::seconds(every_secs as i64 * 3 + 5);
        let held = async {
            let mut tx = state.db.begin().await?;
            let held = leases::acquire(&mut tx, name, &state.instance, now, lease_until).await?;
            tx.commit().await?;
            Ok::<_, trusthub_store::StoreError>(held)
        }
        .await;
        match held {
            Ok(true) => {
                if let Err(e) = tick(state.clone(), now).await {
                    tracing::warn!(worker = name, error = %e, "periodic work failed; next tick retries");
                }
            }
            Ok(false) => tracing::debug!(worker = name, "another hub process holds the lease"),
            Err(e) => tracing::warn!(worker = name, error = %e, "cannot take the lease"),
        }
    }
}
