//! The shared state every handler can reach.

use crate::mail::Mailer;
use crate::metrics::Metrics;
use crate::ratelimit::RateLimiter;
use crate::settings::Settings;
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
    /// The hub's Ed25519 key for emergency action tokens (CONTRACT 5); agents pin its
    /// public half at registration.
    pub eat_key: ed25519_dalek::SigningKey,
    /// The hub's Ed25519 key for evidence packs (SPEC 2.10), published with its fingerprint
    /// at `GET /ai/evidence-key`.
    pub evidence_key: ed25519_dalek::SigningKey,
    /// The hub CA: agents' client certificates and the CRL.
    pub ca: crate::ca::HubCa,
    /// Proxies whose `X-Service-Client-*` headers are believed (`--trusted-proxy`).
    pub trusted_proxies: Vec<crate::tls::Cidr>,
    /// When each client certificate's `last_seen_at` was last written (at most once a
    /// minute per certificate, not once per request).
    pub cert_seen: std::sync::Mutex<std::collections::HashMap<String, std::time::Instant>>,
    /// The scan's advisory name index and the data state it was loaded at.
    pub cve_index: std::sync::Mutex<Option<(crate::cve::Generation, Arc<crate::cve::NameIndex>)>>,
    /// LLM prices for every tenant: shipped defaults with the operator's price file.
    pub prices: trusthub_core::ai::PriceTable,
    /// Commits ingest batches (grouped on SQLite).
    pub ingest: crate::ingest::Ingest,
    /// Agents whose WebSocket this process holds.
    pub connections: crate::agent_ws::Connections,
    /// This process's name in leases (periodic work runs in one process per cluster).
    pub instance: String,
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
