//! Monitors (SPEC 3.1, 2.4; CONTRACT 7, 10, 16): tracked apps and URL checks with their
//! liveness, app restarts through the fleet's signed actions, alert rules on agents' metrics,
//! and each app's availability timeline and maintenance windows.
//!
//! What it offers other capabilities:
//! - [`on_agent_reports`], [`http_checks_of_agents`], [`on_alert_resolved`]: its side of the
//!   fleet's and alerts' typed events;
//! - [`SloLines`]: the lookup the SLO capability gives the apps page;
//! - [`App`], [`app`], [`app_names`], [`timeline`]: apps, their timeline and maintenance
//!   windows, for SLOs, evidence packs and status pages; [`app_by_badge`], [`mean_latency`]
//!   for the public app badges;
//! - [`api`], [`web::pages`], [`jobs`]: what the composition root mounts and schedules.
//!
//! Invariant: an app's liveness changes only through counted results (CONTRACT 27), each
//! verdict a span of its timeline; a check the hub runs never calls an address the outbound
//! policy refuses.

pub mod checks;
pub mod jobs;
pub mod probe;
pub mod routes;
pub mod service;
pub mod settings;
mod store;
pub mod web;

use trusthub_alerts::alerting;
use trusthub_identity::auth;
use trusthub_platform::{error, extract, openapi, outbound, ratelimit, state};

use trusthub_platform::AppState;
use utoipa_axum::router::OpenApiRouter;

/// The API routes, relative to `/api/v1`.
pub fn api() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(routes::apps::router())
        .merge(routes::push::router())
        .merge(routes::restart::router())
        .merge(routes::rules::router())
}

pub use store::apps::{App, get as app, list as apps, state_counts};

/// The app whose public badge token is `token` (CONTRACT 32), and an app's mean check
/// latency since a time: what the public badge draws.
pub use store::apps::{by_badge_token as app_by_badge, mean_latency};
pub use store::timeline;

pub use service::events::{
    SLO_LINES_SHOWN, SloLine, SloLines, SloList, http_checks_of_agents, on_agent_reports,
    on_alert_resolved,
};

/// The apps table below the services: what the liveness benchmark drives directly.
pub mod raw {
    pub use crate::store::apps;
}

/// The name of each of `tenant`'s apps.
pub async fn app_names(
    ex: &mut impl trusthub_store::Exec,
    tenant: trusthub_store::TenantId,
) -> trusthub_store::StoreResult<std::collections::HashMap<uuid::Uuid, String>> {
    store::apps::names(ex, tenant).await
}

/// This capability, as the composition root mounts, schedules and starts it.
pub fn capability() -> trusthub_platform::capability::Capability {
    trusthub_platform::capability::Capability::new("monitors", api, web::pages)
        .settings::<settings::Settings>()
        // Check results past `TRUSTHUB_APP_CHECK_RETENTION_DAYS`.
        .purge(|state, tx, now| {
            let days = crate::settings::of(&state.settings)
                .app_check_retention_days
                .max(1);
            Box::pin(async move {
                store::apps::purge_checks(tx, now - time::Duration::days(days)).await?;
                Ok(())
            })
        })
        .install(|cx| {
            cx.parts.insert(service::push::Pings::default());
            let hooks = cx.parts.entry::<trusthub_fleet::ingest::Hooks>();
            hooks.apps = trusthub_fleet::ingest::AppReports(|tx, agent, observed, checks, now| {
                Box::pin(on_agent_reports(tx, agent, observed, checks, now))
            });
            hooks.http_checks = trusthub_fleet::ingest::HttpChecks(|c, agents| {
                Box::pin(http_checks_of_agents(c, agents))
            });
            cx.parts
                .entry::<trusthub_alerts::alerting::ResolveHooks>()
                .0
                .push(|tx, tenant, alert| Box::pin(on_alert_resolved(tx, tenant, alert)));
            Ok(())
        })
        .names(
            "app",
            "app",
            Some("/ui/apps#app-{id}"),
            |state, tenant, ids| {
                // One key lookup per id a page names, not every app of the tenant.
                Box::pin(async move {
                    let mut c = state.db.conn().await?;
                    let mut names = std::collections::HashMap::new();
                    for id in ids {
                        if let Some(a) = store::apps::get(&mut c, tenant, *id).await? {
                            names.insert(*id, a.name);
                        }
                    }
                    Ok(names)
                })
            },
        )
        .names(
            "alert_rule",
            "rule",
            Some("/ui/rules/{id}"),
            |state, tenant, ids| {
                Box::pin(async move {
                    let mut c = state.db.conn().await?;
                    let rules = store::rules::list(&mut c, tenant).await?;
                    Ok(trusthub_platform::names::only(
                        rules.into_iter().map(|r| (r.id, r.name)),
                        ids,
                    ))
                })
            },
        )
        .job(
            jobs::liveness::JOB,
            jobs::liveness::interval,
            |state, now| Box::pin(async move { jobs::liveness::tick(&state, now).await }),
        )
        .job(jobs::probes::JOB, jobs::probes::interval, |state, now| {
            Box::pin(async move { jobs::probes::tick(&state, now).await })
        })
        .job(jobs::rules::JOB, jobs::rules::interval, |state, now| {
            Box::pin(async move { jobs::rules::tick(&state, now).await })
        })
}
