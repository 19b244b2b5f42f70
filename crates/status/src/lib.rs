//! Public status (CONTRACT 32): status pages made of groups of the tenant's apps, with
//! their states, 90 days of daily uptime, incidents and their updates, and the
//! maintenance their apps' windows schedule; public as HTML (no script), JSON and an Atom
//! feed; `incident.created` and `incident.updated` to subscribed webhooks and channels.
//!
//! What it offers: [`capability`] (routes, pages), [`rules`] (the pure status rules),
//! [`service::public`] (the public view, which the benchmark reads) and [`badge`] (the
//! public app badges: status, uptime, latency).
//!
//! Invariant: a public page shows only names, states, uptime and incident texts — never a
//! host, an address, a probe's error or an id other than its slug and its incidents'. It
//! reads other capabilities only through their `lib.rs`: monitors (apps, their timeline and
//! maintenance windows), slo (the uptime arithmetic), alerts (notices), identity (callers).

pub mod badge;
pub mod routes;
pub mod rules;
pub mod service;
mod store;
pub mod web;

use trusthub_platform::{error, extract, openapi, state};

use trusthub_platform::AppState;
use utoipa_axum::router::OpenApiRouter;

/// The API routes, relative to `/api/v1`.
pub fn api() -> OpenApiRouter<AppState> {
    routes::router()
}

/// This capability, as the composition root mounts it.
pub fn capability() -> trusthub_platform::capability::Capability {
    trusthub_platform::capability::Capability::new("status", api, web::pages)
        .install(|cx| {
            cx.parts.insert(service::PublicCache::default());
            Ok(())
        })
        .names(
            "status_page",
            "status page",
            Some("/ui/status-pages/{id}"),
            |state, tenant, ids| {
                Box::pin(async move {
                    let mut c = state.db.conn().await?;
                    let pages = store::pages(&mut c, tenant).await?;
                    Ok(trusthub_platform::names::only(
                        pages.into_iter().map(|p| (p.id, p.title)),
                        ids,
                    ))
                })
            },
        )
}
