//! Periodic work, one job per file: the liveness check of tracked apps (SPEC 3.1,
//! [`liveness`]), alert-rule evaluation (CONTRACT 10, [`rules`]), the webhook deliverer
//! (SPEC 3.3; CONTRACT 6, [`deliver`]), the vulnerability scan (CONTRACT 15, [`cve_scan`]),
//! SLO burn alerts (CONTRACT 16, [`slo`]), the daily OSV pull ([`osv_pull`]), npm maintainer tracking (CONTRACT 15,
//! [`supply_chain`]) and the agent-connection refresh
//! ([`connections`]).
//!
//! Cluster-wide jobs run through the one [`scheduler`], which takes the job's lease in the
//! database before each tick (CONTRACT 11): with several hub processes on PostgreSQL only the
//! holder ticks. The deliverer and the connection refresh run in every process.
//!
//! To add a cluster-wide job: a file with `NAME`, `interval(settings)` and
//! `tick(state, now)`, and a line in [`spawn`].

pub use trusthub_alerts::deliver;
use trusthub_fleet::connections;
pub use trusthub_monitors::jobs::liveness;
pub use trusthub_monitors::jobs::rules;
pub use trusthub_platform::scheduler;
pub use trusthub_slo::jobs::slo;
pub use trusthub_vulns::jobs::cve_scan;
pub use trusthub_vulns::jobs::osv_pull;
pub use trusthub_vulns::jobs::supply_chain;

pub use deliver::deliver_due;
pub use liveness::{LivenessReport, liveness_tick};
pub use rules::{RulesReport, evaluate_rules};

use crate::state::AppState;
use scheduler::periodic;

/// Starts the periodic workers; they stop when the returned handles are aborted.
pub fn spawn(state: &AppState) -> Vec<tokio::task::JoinHandle<()>> {
    let s = &state.settings;
    vec![
        tokio::spawn(periodic(
            state.clone(),
            liveness::NAME,
            liveness::interval(s),
            |st, now| Box::pin(async move { liveness::tick(&st, now).await }),
        )),
        tokio::spawn(periodic(
            state.clone(),
            rules::NAME,
            rules::interval(s),
            |st, now| Box::pin(async move { rules::tick(&st, now).await }),
        )),
        tokio::spawn(periodic(
            state.clone(),
            cve_scan::NAME,
            cve_scan::interval(s),
            |st, now| Box::pin(async move { cve_scan::tick(&st, now).await }),
        )),
        tokio::spawn(periodic(
            state.clone(),
            slo::NAME,
            slo::interval(s),
            |st, now| Box::pin(async move { slo::tick(&st, now).await }),
        )),
        tokio::spawn(periodic(
            state.clone(),
            osv_pull::NAME,
            osv_pull::interval(s),
            |st, now| Box::pin(async move { osv_pull::tick(&st, now).await }),
        )),
        tokio::spawn(periodic(
            state.clone(),
            supply_chain::NAME,
            supply_chain::interval(s),
            |st, now| Box::pin(async move { supply_chain::tick(&st, now).await }),
        )),
        tokio::spawn(deliver::deliverer(state.clone())),
        tokio::spawn(crate::routing::listen(state.clone())),
        tokio::spawn(connections::refresh_connections(state.clone())),
    ]
}
