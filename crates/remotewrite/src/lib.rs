//! Metrics past one machine (CONTRACT 26): every sample the hub stores is forwarded to
//! Prometheus remote-write 1.0 receivers (VictoriaMetrics, Prometheus, Mimir, Thanos).
//!
//! - [`wire`]: series named and labelled as the contract says, the protobuf `WriteRequest`
//!   written by hand (labels encoded once per series) and compressed with snappy's block
//!   format, the headers a receiver expects.
//! - [`sender`]: one loop per receiver reading the fleet's metric log after the receiver's
//!   stored position; at least once, retries with backoff, figures for `//metrics`.
//! - [`query`]: ranges read back from a Prometheus-compatible query API
//!   (`TRUSTHUB_METRICS_QUERY_URL`) for the agent metrics API and the charts.
//! - `GET /remote-write` and the "Metrics storage" page: each receiver's lag and counts.
//!
//! Architecture invariant: it reads stored points only through `trusthub_fleet`'s lib
//! (`metric_log`); its own table is `remote_write_positions`.

pub mod query;
pub mod routes;
pub mod sender;
pub mod service;
pub mod settings;
mod store;
pub mod web;
pub mod wire;

pub use query::MetricsStore;
pub use sender::RemoteWrite;
pub use wire::{HEADERS, Series, encode, metric_name, tag_label};

/// The API routes, relative to `/api/v1`.
pub fn api() -> utoipa_axum::router::OpenApiRouter<trusthub_platform::AppState> {
    routes::router()
}

/// This capability, as the composition root mounts it: its routes, its page and the
/// forwarding task every hub process runs (each receiver sent to by the lease holder).
pub fn capability() -> trusthub_platform::capability::Capability {
    trusthub_platform::capability::Capability::new("remotewrite", api, web::pages)
        .settings::<settings::Settings>()
        .install(|cx| {
            let s = settings::of(cx.settings);
            let remote_write =
                RemoteWrite::from_settings(&s.remote_write_urls, s.remote_write_bearer.as_deref())?;
            let store = MetricsStore::from_settings(s.metrics_query_url.as_deref())?;
            cx.parts.entry::<trusthub_fleet::ingest::Forward>().0 = remote_write.handoff();
            cx.parts
                .insert(trusthub_fleet::ranges::MetricRanges(
                    store.enabled().then_some(query::ranges as _),
                ))
                .insert(remote_write)
                .insert(store);
            Ok(())
        })
        .task(sender::task)
}
