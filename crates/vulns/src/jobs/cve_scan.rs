//! The vulnerability scan (CONTRACT 15), once per cluster: every tick scans the hosts that
//! are due — whose inventory changed since their last scan, that were never scanned, whose
//! last scan is older than `TRUSTHUB_CVE_SCAN_INTERVAL_SECS`, or that were scanned before the
//! latest advisory import.

use crate::state::AppState;
use time::OffsetDateTime;
use trusthub_store::StoreResult;

/// The lease and log name of this job.
pub const JOB: &str = "cve_scan";

/// One scheduled run at `now`.
pub async fn tick(state: &AppState, now: OffsetDateTime) -> StoreResult<()> {
    scan_due(state, now).await.map(|_| ())
}

/// Seconds between checks for hosts that are due (`TRUSTHUB_CVE_SCAN_CHECK_SECS`, 5).
pub fn interval(s: &trusthub_platform::settings::Settings) -> u64 {
    crate::settings::of(s).cve_scan_check_secs.max(1)
}

/// Scans every host that is due at `now`; how many were scanned.
pub async fn scan_due(state: &AppState, now: OffsetDateTime) -> StoreResult<usize> {
    let (hosts, last, generation) = {
        let mut c = state.db.conn().await?;
        (
            trusthub_fleet::inventories(&mut c).await?,
            crate::store::cve::last_scans(&mut c).await?,
            crate::store::osv::generation(&mut c).await?,
        )
    };
    let current = crate::store::cve::generation_key(&generation);
    let every = time::Duration::seconds(
        crate::settings::of(&state.settings)
            .cve_scan_interval_secs
            .max(1) as i64,
    );
    let mut index = None;
    let mut scanned = 0;
    for (tenant, agent, hostname, inventory_id) in hosts {
        let due = match last.get(&agent) {
            None => true,
            Some(scan) => {
                inventory_id > scan.inventory_id
                    || scan.scanned_at + every <= now
                    || scan.advisories != current
            }
        };
        if !due {
            continue;
        }
        // Fetched at the first host due; kept across passes until the data changes.
        if index.is_none() {
            index = Some(crate::cve::NameIndex::current(state, generation).await?);
        }
        let Some(names) = index.as_deref() else {
            continue;
        };
        let outcome = crate::cve::scan_agent(
            state,
            tenant,
            agent,
            &hostname,
            inventory_id,
            names,
            &generation,
            now,
        )
        .await?;
        tracing::debug!(%agent, packages = outcome.packages, findings = outcome.findings, new = outcome.new, "host scanned");
        scanned += 1;
    }
    Ok(scanned)
}
