//! The hub's own checks (CONTRACT 27): every second, the http, tcp and tls monitors without
//! an agent whose next check is due are probed concurrently, and each result is counted at
//! once ([`crate::checks::record`]): a dead URL checked every 30 s with two retries alerts
//! on its third failure, 60 s after the first.

use crate::alerting::Notifier;
use crate::state::AppState;
use crate::store::apps;
use std::collections::HashSet;
use time::OffsetDateTime;
use trusthub_platform::outbound::Policy;
use trusthub_store::StoreResult;

/// The lease and log name of this job.
pub const JOB: &str = "probes";

/// Most checks one tick starts.
const BATCH: i64 = 256;

/// Seconds between ticks (`TRUSTHUB_PROBE_TICK_SECS`, 1: due checks start within a second).
pub fn interval(s: &trusthub_platform::settings::Settings) -> u64 {
    crate::settings::of(s).probe_tick_secs.max(1)
}

/// One scheduled run at `now`.
pub async fn tick(state: &AppState, now: OffsetDateTime) -> StoreResult<()> {
    probe_tick(state, now).await.map(|_| ())
}

/// What a tick did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ProbeReport {
    /// Checks run.
    pub probed: usize,
    /// Of which failed.
    pub failed: usize,
    /// Alerts raised.
    pub raised: usize,
    /// Alerts resolved.
    pub resolved: usize,
}

/// Runs every hub check due at `now` and records the results (the instant recorded is
/// `now`; the probes themselves run when called).
pub async fn probe_tick(state: &AppState, now: OffsetDateTime) -> StoreResult<ProbeReport> {
    let due = {
        let mut c = state.db.conn().await?;
        apps::due_checks(&mut c, now, BATCH).await?
    };
    let mut report = ProbeReport::default();
    if due.is_empty() {
        return Ok(report);
    }
    let policy = Policy::of(&state.settings);
    let client = match policy.client().build() {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(error = %e, "cannot build the probe client");
            return Ok(report);
        }
    };
    // Each tenant's private networks (CONTRACT 33): a tenant whose owner narrowed them gets
    // its own policy and a client whose resolver knows it.
    let mut tenants: std::collections::HashMap<uuid::Uuid, (Policy, Option<reqwest::Client>)> =
        std::collections::HashMap::new();
    {
        let mut c = state.db.conn().await?;
        for app in &due {
            if tenants.contains_key(&app.tenant_id) {
                continue;
            }
            let tenant = trusthub_store::TenantId(app.tenant_id);
            let own = Policy::of_tenant(&state.settings, &mut c, tenant).await?;
            let own_client = match own.is_narrowed() {
                true => own.client().build().ok(),
                false => None,
            };
            tenants.insert(app.tenant_id, (own, own_client));
        }
    }
    // A narrowed tenant whose client could not be built is probed next tick.
    let (probed_apps, probes): (Vec<&apps::App>, Vec<_>) = due
        .iter()
        .filter_map(|app| {
            let (policy, own) = tenants.get(&app.tenant_id)?;
            let client = match (policy.is_narrowed(), own) {
                (false, _) => &client,
                (true, Some(c)) => c,
                (true, None) => return None,
            };
            Some((app, crate::probe::run(policy, client, app, now)))
        })
        .unzip();
    let results = futures_util::future::join_all(probes).await;
    let quiet: HashSet<uuid::Uuid> = {
        let mut c = state.db.conn().await?;
        crate::store::timeline::in_maintenance(&mut c, now)
            .await?
            .into_iter()
            .collect()
    };
    let mut tx = state.db.begin().await?;
    let mut notifier = Notifier::default();
    for (app, probed) in probed_apps.into_iter().zip(results) {
        let every = time::Duration::seconds(app.interval_seconds.unwrap_or(60).max(1));
        report.probed += 1;
        report.failed += usize::from(!probed.result.ok);
        let done = crate::checks::record(
            &mut tx,
            &mut notifier,
            app,
            &probed.result,
            Some(now + every),
            probed.tls_expires_at,
            quiet.contains(&app.id),
            now,
        )
        .await?;
        report.raised += usize::from(done.raised);
        report.resolved += usize::from(done.resolved);
    }
    tx.commit().await?;
    Ok(report)
}
