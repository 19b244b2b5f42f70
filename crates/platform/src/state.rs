//! The shared state every handler can reach.

use crate::mail::Mailer;
use crate::metrics::Metrics;
use crate::ratelimit::RateLimiter;
use crate::settings::Settings;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;
use time::OffsetDateTime;
use trusthub_core::secret::SealingKey;
use trusthub_store::Db;

/// Everything a request may need, behind one `Arc`.
#[derive(Debug)]
pub struct App {
    /// The database.
    pub db: Db,
    /// The settings the hub was started with.
    pub settings: Settings,
    /// Seals secrets at rest (TOTP secrets here; more later).
    pub key: SealingKey,
    /// SMTP, when configured.
    pub mailer: Option<Mailer>,
    /// SPEC section 8 limits.
    pub limiter: RateLimiter,
    /// Request figures.
    pub metrics: Metrics,
    /// Base URL for links in mail.
    pub public_url: String,
    /// Proxies whose `X-Service-Client-*` headers are believed (`--trusted-proxy`).
    pub trusted_proxies: Vec<crate::tls::Cidr>,
    /// The CA (DER) that client certificates forwarded by a trusted proxy must chain to.
    pub client_ca: Vec<u8>,
    /// Each capability's own state (its keys, caches, connections), put here by the
    /// composition root and read with [`App::part`].
    pub parts: Parts,
    /// This process's name in leases (periodic work runs in one process per cluster).
    pub instance: String,
}

impl App {
    /// The part of type `T` a capability keeps here. The composition root installs every
    /// capability's parts before the first request, so a missing one is a wiring mistake
    /// found by the first test that starts a hub.
    #[allow(clippy::expect_used)]
    pub fn part<T: Any + Send + Sync>(&self) -> &T {
        self.parts
            .get::<T>()
            .expect("the composition root installs every capability's part")
    }
}

/// Capabilities' state, one value per type.
#[derive(Default)]
pub struct Parts(HashMap<TypeId, Box<dyn Any + Send + Sync>>);

impl std::fmt::Debug for Parts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Parts({} values)", self.0.len())
    }
}

impl Parts {
    /// Adds (or replaces) the value of type `T`.
    pub fn insert<T: Any + Send + Sync>(&mut self, value: T) -> &mut Self {
        self.0.insert(TypeId::of::<T>(), Box::new(value));
        self
    }

    /// The value of type `T`, if installed.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.0
            .get(&TypeId::of::<T>())
            .and_then(|v| v.downcast_ref())
    }

    /// The value of type `T`, installed with its default first when absent: how
    /// capabilities add their hooks to another's typed event at start.
    pub fn entry<T: Any + Send + Sync + Default>(&mut self) -> &mut T {
        self.0
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Box::new(T::default()))
            .downcast_mut()
            .expect("a part is stored under its own type")
    }
}

/// Cheap-to-clone handle on [`App`], the axum state.
#[derive(Debug, Clone)]
pub struct AppState(pub Arc<App>);

impl std::ops::Deref for AppState {
    type Target = App;
    fn deref(&self) -> &App {
        &self.0
    }
}

/// The current time, in whole seconds (the precision every stored timestamp has, so values
/// compare and round-trip the same on SQLite and PostgreSQL).
pub fn now() -> OffsetDateTime {
    let t = OffsetDateTime::now_utc();
    t.replace_nanosecond(0).unwrap_or(t)
}

/// `t` as RFC 3339 (`2026-11-26T14:00:00Z`), or empty in the impossible case it cannot be
/// written.
pub fn rfc3339(t: OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}
