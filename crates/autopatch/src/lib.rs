//! Auto-patch (CONTRACT 19; SPEC 2.8, 3.5, 3.6, 4.3, 6.3, 6.5): per-host settings turned on
//! with TOTP, the worker that turns a host's open findings into signed `install_package` and
//! `update_packages` actions (known fix, severity, not acknowledged, not suppressed, never a
//! kernel, 25 packages per host per cycle), the attempts and what the hosts answered, and the
//! attestation chain in the transparency log.
//!
//! Architecture invariant: it reads findings only through `trusthub_vulns::patching`, sends
//! actions only through `trusthub_fleet`'s dispatch, and learns their results through the
//! fleet's [`trusthub_fleet::agent_ws::ActionHooks`] ([`action_hooks`]); it never reads
//! another capability's tables.

pub mod emergency;
pub mod routes;
pub mod rules;
pub mod service;
pub mod settings;
mod store;
pub mod update_all;
pub mod web;

use trusthub_platform::AppState;
use utoipa_axum::router::OpenApiRouter;

/// The API routes, relative to `/api/v1`.
pub fn api() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(routes::auto_patch::router())
        .merge(routes::attestations::router())
        .merge(routes::emergency::router())
        .merge(routes::update_all::router())
}

/// The worker's lease.
pub const JOB: &str = "auto_patch";

/// This capability, as the composition root mounts, schedules and starts it.
pub fn capability() -> trusthub_platform::capability::Capability {
    trusthub_platform::capability::Capability::new("auto-patch", api, web::pages)
        .settings::<settings::Settings>()
        .job_after(
            JOB,
            |s| settings::of(s).autopatch_warmup_secs.max(1),
            |s| settings::of(s).autopatch_cycle_secs.max(1),
            |state, now| Box::pin(async move { service::cycle(&state, now).await.map(|_| ()) }),
        )
        .install(|cx| {
            cx.parts
                .entry::<trusthub_fleet::agent_ws::ActionHooks>()
                .0
                .extend(action_hooks());
            Ok(())
        })
}

/// The results this capability follows: its two action kinds.
pub fn action_hooks() -> Vec<(&'static str, trusthub_fleet::agent_ws::ActionHook)> {
    fn hook<'a>(
        state: &'a AppState,
        tx: &'a mut trusthub_store::Tx,
        r: &'a trusthub_fleet::agent_ws::ActionResult,
        now: time::OffsetDateTime,
    ) -> trusthub_platform::BoxFuture<'a, trusthub_store::StoreResult<()>> {
        Box::pin(service::on_result(state, tx, r, now))
    }
    vec![("install_package", hook), ("update_packages", hook)]
}

/// The tenant's attempts rolled back since an instant, as `(nonce, agent, "name from -> to, …")`
/// (the Trust Score reads them).
pub async fn rolled_back_since(
    ex: &mut impl trusthub_store::Exec,
    tenant: trusthub_store::TenantId,
    since: time::OffsetDateTime,
) -> trusthub_store::StoreResult<Vec<(String, uuid::Uuid, String)>> {
    Ok(store::rolled_back_since(ex, tenant, since)
        .await?
        .into_iter()
        .map(|(nonce, agent, packages)| {
            let changes: Vec<rules::Change> = serde_json::from_str(&packages).unwrap_or_default();
            let text = changes
                .iter()
                .map(|c| format!("{} {} -> {}", c.name, c.from, c.to))
                .collect::<Vec<_>>()
                .join(", ");
            (nonce, agent, text)
        })
        .collect())
}

/// The settings table below the services (the auto-patch benchmark turns hosts on directly).
pub mod raw {
    pub use crate::store::{Settings, put};
}
