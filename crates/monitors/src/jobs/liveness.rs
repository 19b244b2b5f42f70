//! The liveness check of tracked apps (SPEC 3.1), once per cluster every
//! `TRUSTHUB_LIVENESS_INTERVAL_SECS`.

use crate::alerting::{self};
use crate::state::AppState;
use crate::store::apps::{self, LivenessRow, LivenessUpdate};
use std::collections::HashMap;
use time::OffsetDateTime;
use trusthub_alerts as alerts;
use trusthub_core::alerting::{self as rules_core};
use trusthub_core::apps::{AppKind, ObservedMap, observe};
use trusthub_core::liveness::{self, Expected, Observed, State};
use trusthub_store::{StoreResult, TenantId};
use uuid::Uuid;

/// The lease and log name of this job.
pub const JOB: &str = "liveness";

/// One scheduled run at `now`.
pub async fn tick(state: &AppState, now: OffsetDateTime) -> StoreResult<()> {
    liveness_tick(state, now).await.map(|_| ())
}

/// Seconds between ticks.
pub fn interval(s: &trusthub_platform::settings::Settings) -> u64 {
    crate::settings::of(s).liveness_interval_secs.max(1)
}

/// What a liveness tick did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LivenessReport {
    /// Apps looked at.
    pub apps: usize,
    /// Apps whose state changed (rows written).
    pub changed: usize,
    /// `app.state_mismatch` signals.
    pub mismatches: usize,
    /// Alerts raised.
    pub raised: usize,
    /// Alerts resolved.
    pub resolved: usize,
}

fn parse_observed(s: Option<&str>) -> Option<Observed> {
    match s? {
        "running" => Some(Observed::Running),
        "stopped" => Some(Observed::Stopped),
        "unknown" => Some(Observed::Unknown),
        _ => None,
    }
}

fn observed_name(o: Observed) -> &'static str {
    match o {
        Observed::Running => "running",
        Observed::Stopped => "stopped",
        Observed::Unknown => "unknown",
    }
}

/// The observed state of one app at `now`.
fn observed_of(
    app: &LivenessRow,
    live: Option<&(bool, ObservedMap)>,
    now: OffsetDateTime,
) -> Observed {
    let Some(kind) = AppKind::parse(&app.app_type) else {
        return Observed::Unknown;
    };
    if kind.is_check() {
        // Fresh while within three check intervals (and at least three minutes).
        let window = app.interval_seconds.unwrap_or(60).max(60) * 3;
        return match (app.last_check_at, app.last_check_ok) {
            (Some(at), Some(ok)) if now - at <= time::Duration::seconds(window) => {
                if ok {
                    Observed::Running
                } else {
                    Observed::Stopped
                }
            }
            _ => Observed::Unknown,
        };
    }
    match live {
        Some((fresh, map)) => observe(kind, &app.identifier, map, *fresh),
        None => Observed::Unknown,
    }
}

/// One liveness check of every tracked app (SPEC 3.1), in one transaction: changed states
/// are written, the third consecutive mismatch raises a warning alert (once per incident),
/// and an app that matches again resolves its alert.
pub async fn liveness_tick(state: &AppState, now: OffsetDateTime) -> StoreResult<LivenessReport> {
    let (all, lives, last_spans, quiet) = {
        let mut c = state.db.conn().await?;
        (
            apps::liveness_rows(&mut c).await?,
            {
                let intervals = trusthub_fleet::ingest_intervals(&mut c).await?;
                apps::live_of_tracked_agents(&mut c, &intervals).await?
            },
            crate::store::timeline::last_spans(&mut c).await?,
            crate::store::timeline::in_maintenance(&mut c, now).await?,
        )
    };
    let last_spans: HashMap<Uuid, crate::store::timeline::Span> =
        last_spans.into_iter().map(|s| (s.app_id, s)).collect();
    // A verdict covers the time since the app's previous check when that check was recent
    // enough (two intervals and a half minute); the first one, or one after a gap, starts a
    // span at this check (the time before it had no verdict).
    let tolerance = time::Duration::seconds(
        crate::settings::of(&state.settings)
            .liveness_interval_secs
            .max(1) as i64
            * 2
            + 30,
    );
    let mut timeline: Vec<(Uuid, Option<i64>, OffsetDateTime, bool)> = Vec::new();
    let live: HashMap<Uuid, (bool, ObservedMap)> = lives
        .into_iter()
        .map(|l| {
            let fresh = now - l.received_at
                <= time::Duration::seconds(l.ingest_interval_secs.max(1) * 3 + 5);
            (l.agent_id, (fresh, l.observed.0))
        })
        .collect();
    let mut report = LivenessReport {
        apps: all.len(),
        ..Default::default()
    };
    let mut updates = Vec::new();
    let mut raise = Vec::new();
    let mut resolve = Vec::new();
    for app in &all {
        if AppKind::parse(&app.app_type).is_some_and(AppKind::is_check) {
            // A check counts its results as they arrive (crate::checks); here an agent's
            // check that stopped reporting only turns unknown.
            if observed_of(app, None, now) == Observed::Unknown
                && app.observed_state.as_deref() != Some("unknown")
            {
                updates.push(LivenessUpdate {
                    id: app.id,
                    consecutive_mismatch: app.consecutive_mismatch,
                    consecutive_unknown: app.consecutive_unknown.saturating_add(1),
                    observed_state: "unknown",
                    last_state_change: Some(now),
                    alerting: app.alerting,
                });
            }
            continue;
        }
        let prev = State {
            consecutive_mismatch: app.consecutive_mismatch.clamp(0, u32::MAX.into()) as u32,
            consecutive_unknown: app.consecutive_unknown.clamp(0, u32::MAX.into()) as u32,
            // Only a change sets it; `None` keeps the stored time.
            last_state_change: None,
            last_observed: parse_observed(app.observed_state.as_deref()),
            alerting: app.alerting,
        };
        let expected = if app.expected_state == "stopped" {
            Expected::Stopped
        } else {
            Expected::Running
        };
        let observed = observed_of(app, live.get(&app.agent_id), now);
        // The SLO timeline (CONTRACT 16): matches or differs; unknown leaves a gap.
        if observed != Observed::Unknown {
            let down = !matches!(
                (expected, observed),
                (Expected::Running, Observed::Running) | (Expected::Stopped, Observed::Stopped)
            );
            match last_spans.get(&app.id) {
                Some(l) if now - l.end_at <= tolerance && now >= l.end_at => {
                    if l.down == down {
                        timeline.push((app.id, Some(l.id), l.end_at, down));
                    } else {
                        timeline.push((app.id, None, l.end_at, down));
                    }
                }
                _ => timeline.push((app.id, None, now, down)),
            }
        }
        let d = liveness::check(&prev, expected, observed, now);
        if d.mismatch_signal {
            report.mismatches += 1;
            tracing::info!(signal = "app.state_mismatch", app_id = %app.id, observed = observed_name(observed),
                expected = %app.expected_state, consecutive = d.state.consecutive_mismatch, "app state mismatch");
        }
        if d.state != prev {
            updates.push(LivenessUpdate {
                id: app.id,
                consecutive_mismatch: d.state.consecutive_mismatch.into(),
                consecutive_unknown: d.state.consecutive_unknown.into(),
                observed_state: observed_name(observed),
                last_state_change: d.state.last_state_change,
                alerting: d.state.alerting,
            });
        }
        // No liveness alert during a maintenance window (CONTRACT 16).
        if d.raise_alert && !quiet.contains(&app.id) {
            raise.push((app.id, observed, d.state.consecutive_mismatch));
        }
        if d.resolve_alert {
            resolve.push((app.id, observed));
        }
    }
    report.changed = updates.len();
    if updates.is_empty() && timeline.is_empty() {
        return Ok(report);
    }
    let mut tx = state.db.begin().await?;
    let mut notifier = alerting::Notifier::default();
    for (app, extend, start, down) in timeline {
        match extend {
            Some(id) => crate::store::timeline::extend(&mut tx, id, now).await?,
            None => crate::store::timeline::append(&mut tx, app, start, now, down).await?,
        }
    }
    if !updates.is_empty() {
        apps::save_liveness(&mut tx, &updates, now).await?;
    }
    let ids: Vec<Uuid> = raise
        .iter()
        .map(|r| r.0)
        .chain(resolve.iter().map(|r| r.0))
        .collect();
    let full: HashMap<Uuid, crate::store::apps::App> = apps::by_ids(&mut tx, &ids)
        .await?
        .into_iter()
        .map(|a| (a.id, a))
        .collect();
    for (id, observed, n) in raise {
        let Some(app) = full.get(&id) else { continue };
        let tenant = TenantId(app.tenant_id);
        let fingerprint = rules_core::liveness_fingerprint(&app.id.to_string());
        let title = format!(
            "{} is {}, expected {}",
            app.name,
            observed_name(observed),
            app.expected_state
        );
        let detail = format!(
            "{} `{}` observed {} on {n} consecutive checks",
            app.app_type,
            app.identifier,
            observed_name(observed)
        );
        let alert = crate::checks::warning(app, "liveness", &title, &detail, &fingerprint);
        let raised = notifier.raise(&mut tx, tenant, &alert, now).await?;
        report.raised += usize::from(raised.is_some());
    }
    for (id, observed) in resolve {
        let Some(app) = full.get(&id) else { continue };
        let tenant = TenantId(app.tenant_id);
        let fingerprint = rules_core::liveness_fingerprint(&app.id.to_string());
        if let Some(open) = alerts::open_by_fingerprint(&mut tx, tenant, &fingerprint).await? {
            let why = format!(
                "resolved itself: {} is {} again, as expected",
                app.name,
                observed_name(observed)
            );
            let done = notifier
                .resolve(&mut tx, tenant, open.id, "liveness", &why, now)
                .await?;
            report.resolved += usize::from(done.is_some());
        }
    }
    tx.commit().await?;
    Ok(report)
}
