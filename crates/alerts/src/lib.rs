//! Alerts and their notifications (SPEC 2.3, 3.2, 3.3, 6.1; CONTRACT 6, 7): raising and
//! resolving alerts with their webhook deliveries in the same transaction, the alert list,
//! webhook endpoints, and the deliverer that signs and retries.
//!
//! What it offers other capabilities:
//! - [`alerting::Notifier`]: raise or resolve an alert in the caller's transaction (every
//!   capability that alerts — liveness, rules, SLOs, vulnerabilities, anomalies — goes
//!   through it);
//! - [`alerting::ResolveHooks`]: a typed event for what another capability does when a user
//!   resolves an alert;
//! - [`NewAlert`], [`Alert`], [`open_by_fingerprint`], [`open_of_rule`], [`open_counts`]:
//!   what raisers read and write alongside the notifier; [`outbox`]: an alert rule's own
//!   `webhook_url` deliveries; [`raw`]: the tables below the services, for tests;
//! - [`host_changed`], [`host_removed`]: the fleet tells it a host's name and tags (what
//!   alerts show and webhooks route by), in the fleet's own transaction;
//! - [`api`], [`web::pages`], [`deliver::deliverer`]: routes, pages and the deliverer the
//!   composition root mounts and starts.
//!
//! Invariant: an alert and the deliveries it causes are written in one transaction (no alert
//! without its deliveries, no delivery of an alert rolled back); a delivery keeps its id across
//! attempts and is signed with the endpoint's current secret.

pub mod alerting;
pub mod channels;
pub mod deliver;
pub mod routes;
pub mod service;
pub mod settings;
mod store;
pub mod web;

use trusthub_identity::auth;
use trusthub_platform::{error, extract, openapi, outbound, state};

use trusthub_platform::AppState;
use utoipa_axum::router::OpenApiRouter;

/// The API routes, relative to `/api/v1`.
pub fn api() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(routes::alerts::router())
        .merge(routes::webhooks::router())
        .merge(routes::channels::router())
}

/// A host was registered, renamed or re-tagged (the fleet's event, in its transaction).
pub async fn host_changed(
    ex: &mut impl trusthub_store::Exec,
    tenant: trusthub_store::TenantId,
    agent: uuid::Uuid,
    hostname: &str,
    tags: &[String],
) -> trusthub_store::StoreResult<()> {
    store::hosts::upsert(ex, tenant, agent, hostname, tags).await
}

/// A host was deleted (the fleet's event, in its transaction).
pub async fn host_removed(
    ex: &mut impl trusthub_store::Exec,
    tenant: trusthub_store::TenantId,
    agent: uuid::Uuid,
) -> trusthub_store::StoreResult<()> {
    store::hosts::remove(ex, tenant, agent).await
}

/// This capability, as the composition root mounts, schedules and starts it.
pub fn capability() -> trusthub_platform::capability::Capability {
    use trusthub_platform::names::only;
    trusthub_platform::capability::Capability::new("alerts", api, web::pages)
        .settings::<settings::Settings>()
        .task(|state| Box::pin(deliver::deliverer(state)))
        .names(
            "alert",
            "alert",
            Some("/ui/alerts/{id}"),
            |state, tenant, ids| {
                Box::pin(async move {
                    let mut c = state.db.conn().await?;
                    let mut names = std::collections::HashMap::new();
                    for id in ids {
                        if let Some(a) = store::alerts::get(&mut c, tenant, *id).await? {
                            names.insert(*id, a.title);
                        }
                    }
                    Ok(names)
                })
            },
        )
        .names(
            "webhook",
            "webhook",
            Some("/ui/webhooks/{id}"),
            |state, tenant, ids| {
                Box::pin(async move {
                    let mut c = state.db.conn().await?;
                    let hooks = store::webhooks::list(&mut c, tenant).await?;
                    Ok(only(hooks.into_iter().map(|h| (h.id, h.url)), ids))
                })
            },
        )
        .names(
            "notification_channel",
            "channel",
            Some("/ui/notifications"),
            |state, tenant, ids| {
                Box::pin(async move {
                    let mut c = state.db.conn().await?;
                    let list = store::channels::list(&mut c, tenant).await?;
                    Ok(only(list.into_iter().map(|h| (h.id, h.name)), ids))
                })
            },
        )
}

pub use store::alerts::{Alert, NewAlert, open_by_fingerprint, open_counts, open_of_rule};

/// The delivery outbox, for an alert rule's own `webhook_url`.
pub mod outbox {
    pub use crate::store::webhooks::{NewDelivery, enqueue, status};
}

/// The webhook table below the services (tests read what is stored at rest).
pub mod raw {
    pub use crate::store::webhooks::list as webhooks;
}
