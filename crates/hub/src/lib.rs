//! The Trusthub hub as a library: the HTTP API, authorization, and the server around them.
//!
//! `trusthub serve` (crate `trusthub`) builds a [`Server`] from [`Settings`] and runs it;
//! tests do the same on port 0. See the project's ARCHITECTURE.md for the map.
//!
//! Invariant: it composes, it decides nothing a capability owns — every route, page, job and
//! hook comes from a capability's `lib.rs` (never its `routes` or `web`), and every route is
//! in the OpenAPI document with its errors and security (CONTRACT 13).

pub use trusthub_alerts::alerting;
pub use trusthub_certs::ca;
pub use trusthub_fleet::{agent_auth, agent_ws, ingest, routing};
pub use trusthub_identity::{admin, auth, passwords, views};
pub use trusthub_llm::evidence;
pub use trusthub_platform::{
    archive, conn, error, extract, mail, metrics, middleware, openapi, outbound, ratelimit,
    settings, state, tls,
};
pub use trusthub_vulns::cve;

pub mod routes;
pub mod server;
pub mod web;
pub mod workers;

pub use server::{Server, StartError};
pub use settings::{DbSettings, Settings};

/// Each capability's own settings struct, for code that builds [`Settings`] itself (tests,
/// benchmarks): `settings.sections.edit(|v: &mut sections::Vulns| v.osv_url = …)`. The
/// command line reads them all ([`ServeSettings`]).
pub mod sections {
    pub use trusthub_alerts::settings::Settings as Alerts;
    pub use trusthub_autopatch::settings::Settings as Autopatch;
    pub use trusthub_cloud::settings::Settings as Cloud;
    pub use trusthub_console::settings::Settings as Console;
    pub use trusthub_fleet::settings::Settings as Fleet;
    pub use trusthub_identity::settings::Settings as Identity;
    pub use trusthub_llm::settings::Settings as Llm;
    pub use trusthub_monitors::settings::Settings as Monitors;
    pub use trusthub_remotewrite::settings::Settings as RemoteWrite;
    pub use trusthub_slo::settings::Settings as Slo;
    pub use trusthub_topology::settings::Settings as Topology;
    pub use trusthub_vulns::settings::Settings as Vulns;
}

/// `trusthub serve`'s settings on the command line: the hub's own ([`Settings`]) and every
/// capability's (`Capability::settings`), flags and environment variables in one list.
#[derive(Debug, Clone)]
pub struct ServeSettings(pub Settings);

impl clap::FromArgMatches for ServeSettings {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let mut settings = Settings::from_arg_matches(matches)?;
        for of in capabilities().iter().flat_map(|c| &c.settings) {
            (of.read)(&mut settings.sections, matches)?;
        }
        Ok(ServeSettings(settings))
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = ServeSettings::from_arg_matches(matches)?;
        Ok(())
    }
}

impl clap::Args for ServeSettings {
    fn augment_args(command: clap::Command) -> clap::Command {
        capabilities()
            .iter()
            .flat_map(|c| &c.settings)
            .fold(Settings::augment_args(command), |cmd, of| (of.augment)(cmd))
    }

    fn augment_args_for_update(command: clap::Command) -> clap::Command {
        ServeSettings::augment_args(command)
    }
}
pub use state::AppState;

use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderName, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use error::ApiError;
use std::sync::Arc;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

/// Every capability the hub serves, in the order their routes are assembled: a new capability
/// is one line here (its crate says what it mounts, schedules and starts).
pub fn capabilities() -> Vec<trusthub_platform::capability::Capability> {
    vec![
        trusthub_identity::capability(),
        trusthub_llm::capability(),
        trusthub_alerts::capability(),
        trusthub_certs::capability(),
        trusthub_fleet::capability(),
        trusthub_monitors::capability(),
        trusthub_slo::capability(),
        trusthub_vulns::capability(),
        trusthub_autopatch::capability(),
        trusthub_drift::capability(),
        trusthub_cloud::capability(),
        trusthub_topology::capability(),
        trusthub_status::capability(),
        trusthub_compliance::capability(),
        trusthub_trust::capability(),
        trusthub_console::capability(),
        trusthub_remotewrite::capability(),
    ]
}

/// The whole HTTP surface: `/api/v1/...`, `//metrics`, with every layer.
pub fn router(state: AppState, extra: OpenApiRouter<AppState>) -> Router {
    let api = routes::api()
        .merge(extra)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            middleware::general_limit,
        ));
    // The OSV-compatible API lives at the root, where OSV clients expect it (CONTRACT 15).
    let osv = trusthub_vulns::osv_api().layer(axum::middleware::from_fn_with_state(
        state.clone(),
        middleware::general_limit,
    ));
    let (api_router, mut doc) = OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .nest("/api/v1", api)
        .merge(osv)
        .split_for_parts();
    openapi::finish(&mut doc);
    let doc_json: Arc<str> = doc.to_pretty_json().unwrap_or_default().into();
    let request_id = HeaderName::from_static("x-request-id");
    api_router
        .route(
            "/api/v1/openapi.json",
            get(move || {
                let doc = doc_json.clone();
                async move { ([(header::CONTENT_TYPE, "application/json")], doc.to_string()) }
            }),
        )
        .route("/metrics", get(metrics))
        .route("/ready", get(routes::health::ready))
        .merge(web::router(state.clone()))
        .fallback(not_found)
        .route_layer(axum::middleware::from_fn(middleware::label_route))
        .layer(CatchPanicLayer::new())
        .layer(axum::middleware::from_fn(conn::body_deadline))
        .layer(DefaultBodyLimit::max(state.settings.body_limit_bytes))
        .layer(axum::middleware::from_fn_with_state(state.clone(), middleware::track))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            middleware::client_cert_headers,
        ))
        .layer(axum::middleware::from_fn(middleware::problem_details))
        .layer(TraceLayer::new_for_http().make_span_with(|req: &axum::http::Request<_>| {
            let id = req.headers().get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or("-");
            tracing::info_span!("request", method = %req.method(), uri = %req.uri().path(), request_id = %id)
        }))
        .layer(PropagateRequestIdLayer::new(request_id.clone()))
        .layer(SetRequestIdLayer::new(request_id, MakeRequestUuid))
        .layer(axum::middleware::from_fn(middleware::sanitize_request_id))
        .with_state(state)
}

/// An address nothing answers: a problem for API clients, a page for a browser (a request
/// outside `/api` that accepts HTML).
async fn not_found(
    headers: axum::http::HeaderMap,
    uri: axum::http::Uri,
) -> axum::response::Response {
    let browser = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("text/html"));
    if browser && !uri.path().starts_with("/api/") {
        return trusthub_platform::page::not_found_page();
    }
    ApiError::NotFound("route").into_response()
}

/// Prometheus exposition (SPEC 4.11), outside `/api/v1` and without credentials, as
/// scrapers expect; it shows figures, never tenant data.
async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    let backend = match state.db.backend() {
        trusthub_store::Backend::Sqlite => "sqlite",
        trusthub_store::Backend::Postgres => "postgres",
    };
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        state.metrics.render(
            state.db.pool_stats(),
            backend,
            state.part::<crate::ingest::Ingest>().repeated_points(),
            state.part::<crate::ingest::Ingest>().arriving_now(),
        ) + &state
            .part::<trusthub_remotewrite::RemoteWrite>()
            .exposition(),
    )
}
