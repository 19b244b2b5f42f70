//! Identity: tenants, users, sessions, TOTP, API tokens, invitations and the audit log's
//! reading side (SPEC 2.1–2.3, CONTRACT 2–4).
//!
//! What it offers other capabilities:
//! - [`auth`]: who is calling — the role extractors ([`auth::Viewer`] … [`auth::Owner`]),
//!   [`auth::TotpProof`] for TOTP-gated actions and the one TOTP gate ([`auth::check_code`]);
//! - [`WebUser`], [`UserBar`] and [`allowed`]: the signed-in dashboard user, the bar pages
//!   show them in, and the one place a page checks a role;
//! - [`api`] and [`web::pages`]: its API and dashboard pages, mounted by the composition root;
//! - [`admin::bootstrap`]: the first owner on a fresh database.
//!
//! Invariant: a password, TOTP secret, session or API token is kept only hashed or sealed;
//! every request acts as one principal of one tenant, and a role is checked in one place (the
//! extractors, and [`allowed`] for pages).

pub mod admin;
pub mod auth;
pub mod passwords;
pub mod routes;
pub mod service;
pub mod settings;
mod store;
pub mod views;
pub mod web;

pub use web::{Act, UserBar, WebUser, allowed};

use trusthub_platform::{error, extract, openapi, ratelimit, state};

use trusthub_platform::AppState;
use utoipa_axum::router::OpenApiRouter;

/// Identity's API routes, relative to `/api/v1`.
pub fn api() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(routes::auth::router())
        .merge(routes::totp::router())
        .merge(routes::invitations::router())
        .merge(routes::api_tokens::router())
        .merge(routes::users::router())
        .merge(routes::me::router())
        .merge(routes::audit_log::router())
}

/// This capability, as the composition root mounts, schedules and starts it.
pub fn capability() -> trusthub_platform::capability::Capability {
    use trusthub_platform::names::only;
    trusthub_platform::capability::Capability::new("identity", api, web::pages)
        .settings::<settings::Settings>()
        // Expired sessions, and TOTP steps past the 10 minutes a code can be replayed in.
        .purge(|_, tx, now| {
            Box::pin(async move {
                store::sessions::purge_expired(tx, now).await?;
                store::totp::purge_steps(tx, now - time::Duration::minutes(10)).await?;
                Ok(())
            })
        })
        // Users are named by their email, without a link: the users page is the owner's.
        .names("user", "user", None, |state, tenant, ids| {
            Box::pin(async move {
                let mut c = state.db.conn().await?;
                let users = store::users::list(&mut c, tenant).await?;
                Ok(only(users.into_iter().map(|u| (u.id, u.email)), ids))
            })
        })
        .names("tenant", "tenant", None, |state, tenant, ids| {
            Box::pin(async move {
                let mut c = state.db.conn().await?;
                let mut names = std::collections::HashMap::new();
                // Only the caller's own tenant is named: another tenant's id stays an id.
                if ids.contains(&tenant.0)
                    && let Some(t) = store::tenants::get(&mut c, tenant).await?
                {
                    names.insert(tenant.0, format!("tenant {}", t.name));
                }
                Ok(names)
            })
        })
        .names("api_token", "token", Some("/ui/settings"), token_names)
        // An actor `user:<id> token:<id>` names its token `token`.
        .names("token", "token", Some("/ui/settings"), token_names)
}

fn token_names<'a>(
    state: &'a AppState,
    tenant: trusthub_store::TenantId,
    ids: &'a [uuid::Uuid],
) -> trusthub_platform::BoxFuture<
    'a,
    trusthub_store::StoreResult<std::collections::HashMap<uuid::Uuid, String>>,
> {
    Box::pin(async move {
        let mut c = state.db.conn().await?;
        let tokens = store::tokens::list(&mut c, tenant, None).await?;
        Ok(trusthub_platform::names::only(
            tokens.into_iter().map(|t| (t.id, t.name)),
            ids,
        ))
    })
}

pub use store::tenants::{Tenant, find_by_name as tenant_by_name, get as tenant};

/// The identity tables below the services: what benchmarks and tests set up directly.
pub mod raw {
    pub use crate::store::{tenants, tokens, users};
}
