//! The apps capability's side of other capabilities' typed events: what an agent reported
//! (the fleet's ingest), the checks agents run, a resolved alert, and the SLO lines the apps
//! page takes from the SLO capability.

use crate::state::AppState;
use time::OffsetDateTime;
use uuid::Uuid;

/// A user resolved `alert`: the app's red marker goes with it (a persisting mismatch raises a
/// new one).
pub async fn on_alert_resolved(
    tx: &mut trusthub_store::Tx,
    tenant: trusthub_store::TenantId,
    alert: &crate::alerting::AlertView,
) -> trusthub_store::StoreResult<()> {
    if let Some(app) = alert.app_id {
        crate::store::apps::clear_alerting(tx, tenant, app).await?;
    }
    Ok(())
}

/// What an agent reported about its apps, recorded in the ingest batch's transaction (the
/// fleet's `AppReports` event): what runs on the host for the liveness check, and the
/// results of its http checks, each counted at once (CONTRACT 27).
pub async fn on_agent_reports(
    tx: &mut trusthub_store::Tx,
    agent_id: Uuid,
    observed: Option<&trusthub_core::apps::ObservedMap>,
    checks: &[trusthub_core::apps::CheckResult],
    now: OffsetDateTime,
) -> trusthub_store::StoreResult<()> {
    if let Some(observed) = observed {
        crate::store::apps::set_live(tx, agent_id, observed, now).await?;
    }
    if !checks.is_empty() {
        let mut mine: std::collections::HashMap<Uuid, crate::store::apps::App> =
            crate::store::apps::checks_of_agent(tx, agent_id)
                .await?
                .into_iter()
                .map(|a| (a.id, a))
                .collect();
        let quiet: std::collections::HashSet<Uuid> =
            crate::store::timeline::in_maintenance(tx, now)
                .await?
                .into_iter()
                .collect();
        let mut notifier = crate::alerting::Notifier::default();
        let mut results: Vec<&trusthub_core::apps::CheckResult> = checks.iter().collect();
        results.sort_by_key(|r| r.checked_at);
        for r in results {
            // Results for apps that are not this agent's checks are ignored.
            let Some(app) = mine.get(&r.app_id).cloned() else {
                continue;
            };
            let quiet = quiet.contains(&app.id);
            let done =
                crate::checks::record(tx, &mut notifier, &app, r, None, None, quiet, now).await?;
            // The next result of the same app counts from this one.
            if done.stored
                && let Some(fresh) = crate::store::apps::by_ids(tx, &[app.id]).await?.pop()
            {
                mine.insert(app.id, fresh);
            }
        }
    }
    Ok(())
}

/// The HTTP checks these agents run (the fleet's `HttpChecks` lookup, read on a reader after
/// each ingest group's commit).
pub async fn http_checks_of_agents(
    c: &mut trusthub_store::Conn,
    agents: &[Uuid],
) -> trusthub_store::StoreResult<Vec<(Uuid, trusthub_core::agent::HttpCheck)>> {
    crate::store::apps::http_checks_of_agents(c, agents).await
}

/// One SLO as the apps page lists it (given by the SLO capability through [`SloLines`]).
#[derive(Debug, Clone)]
pub struct SloLine {
    /// The app's id.
    pub app_id: String,
    /// Its name.
    pub app_name: String,
    /// The objective's state in words (`met`, `burning`, `not evaluated`).
    pub state: String,
    /// The state's style class.
    pub class: &'static str,
    /// The error budget left, as the page shows it (`–` before the first evaluation).
    pub budget_left: String,
    /// The whole error budget, likewise.
    pub budget: String,
    /// The availability over the objective's window, percent.
    pub uptime: String,
}

/// The SLOs the apps page shows: the least budget left first, at most [`SLO_LINES_SHOWN`].
#[derive(Debug, Clone, Default)]
pub struct SloList {
    /// The first lines.
    pub lines: Vec<SloLine>,
    /// How many SLOs the tenant has.
    pub total: usize,
}

/// How many SLO lines the apps page shows: the ones nearest their limit; every SLO is on its
/// app's SLO page (at 10,000 apps the whole list was 2.5 MB of the page).
pub const SLO_LINES_SHOWN: usize = 20;

/// The SLOs of a tenant for the apps page, given by the SLO capability (a part of the state).
#[derive(Debug)]
pub struct SloLines(pub SloLinesFn);

/// The signature of [`SloLines`].
pub type SloLinesFn =
    for<'a> fn(
        &'a AppState,
        trusthub_store::TenantId,
    ) -> trusthub_platform::BoxFuture<'a, trusthub_store::StoreResult<SloList>>;
