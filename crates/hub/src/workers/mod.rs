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
//! Each capability names its jobs and tasks in its `capability()`; [`spawn`] starts those of
//! every capability the hub lists. To add a cluster-wide job: a file in the capability's
//! `jobs/` with `NAME`, `interval(settings)` and `tick(state, now)`, and a `.job(…)` line in
//! its `capability()`.

pub use trusthub_alerts::deliver;
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

/// Starts every capability's periodic jobs (through the [`scheduler`]) and its tasks; they
/// stop when the returned handles are aborted.
pub fn spawn(state: &AppState) -> Vec<tokio::task::JoinHandle<()>> {
    let mut handles = Vec::new();
    for c in crate::capabilities() {
        for job in &c.jobs {
            let every = (job.interval)(&state.settings);
            let first = job.first.map_or(every, |f| f(&state.settings));
            handles.push(tokio::spawn(periodic(
                state.clone(),
                job.name,
                first,
                every,
                job.tick,
            )));
        }
        for task in &c.tasks {
            handles.push(tokio::spawn(task(state.clone())));
        }
    }
    handles
}
