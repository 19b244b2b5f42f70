//! LLM observability (SPEC 2.9, 2.10): traces and spans from the SDK and OTLP, teams, token
//! prices and costs, and signed evidence packs anyone can verify offline.
//!
//! What it offers:
//! - [`api`] and [`web::pages`]: its API and dashboard pages, mounted by the composition root;
//! - [`evidence::EvidenceKey`]: the signing key, a part of the state the root installs;
//! - [`base_prices`]: the price table the root loads at start;
//! - [`evidence::purge`]: the retention job's step for expired packs;
//! - [`explain`]: the built-in explanations of common log lines (English, German) and the
//!   redaction a line goes through before it may reach a language model.
//!
//! Invariant: an evidence pack is signed over its canonical bytes, so anyone can verify it
//! offline; a log line passes redaction before it may reach a language model.

pub mod evidence;
pub mod explain;
pub mod otlp;
pub mod routes;
pub mod service;
pub mod settings;
mod store;
pub mod web;

/// The model prices the hub starts with (built in, or from `TRUSTHUB_AI_PRICES_FILE`).
pub use service::ai::base_prices;

use trusthub_identity::auth;
use trusthub_platform::{error, extract, openapi, state};

use trusthub_platform::AppState;
use utoipa_axum::router::OpenApiRouter;

/// The API routes, relative to `/api/v1`.
pub fn api() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(routes::ai::router())
        .merge(routes::evidence::router())
        .merge(routes::explain::router())
}

/// This capability, as the composition root mounts, schedules and starts it.
pub fn capability() -> trusthub_platform::capability::Capability {
    trusthub_platform::capability::Capability::new("llm", api, web::pages)
        .settings::<settings::Settings>()
        // Evidence packs past their retention.
        .purge(|state, tx, now| Box::pin(evidence::purge(state, tx, now)))
        .install(|cx| {
        let min = evidence::MIN_RETENTION_DAYS;
        if crate::settings::of(cx.settings).evidence_retention_days < min {
            return Err(format!(
                "--evidence-retention-days must be at least {min} (SPEC 8: packs are kept at least 12 months)"
            ));
        }
        // The packs' folder, only the hub's user may read (mode 700).
        let dir = crate::settings::of(cx.settings).evidence_dir(&cx.settings.db.data_dir);
        if !dir.exists() {
            use std::os::unix::fs::PermissionsExt;
            std::fs::create_dir_all(&dir)
                .and_then(|()| {
                    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
                })
                .map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        cx.parts
            .insert(base_prices(crate::settings::of(cx.settings).ai_prices_file.as_deref())?);
        Ok(())
    })
}
