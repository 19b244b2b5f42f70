//! The emergency console (CONTRACT 22; SPEC 1.1, 4.8, 6.4): an admin opens a shell on a host
//! through the agent's WebSocket, TOTP-gated and rate-limited; every output chunk is written
//! to an asciicast v2 recording before it is forwarded (strict recording); another admin can
//! terminate it; idle and maximum durations end it.
//!
//! What it offers: [`service::on_agent_frame`] (the fleet's `ConsoleFrames` event) and
//! [`service::on_open_result`] (an action hook for `console_open`), installed by the
//! composition root; [`live::Live`] (the part holding live sessions) and [`bus::Browsers`]
//! (browser sockets for sessions another hub process owns); [`capability`] (with the task
//! that carries sessions between hub processes, [`bus::listen`]).
//!
//! Architecture invariant: it reads other capabilities only through their `lib.rs` (fleet
//! for hosts, dispatch and frame routing; identity for the caller).

pub mod bus;
pub mod live;
pub mod routes;
pub mod service;
pub mod settings;
mod store;
pub mod web;

use trusthub_platform::AppState;
use utoipa_axum::router::OpenApiRouter;

/// The API routes, relative to `/api/v1`.
pub fn api() -> OpenApiRouter<AppState> {
    routes::router()
}

/// This capability, as the composition root mounts it.
pub fn capability() -> trusthub_platform::capability::Capability {
    trusthub_platform::capability::Capability::new("console", api, web::pages)
        .settings::<settings::Settings>()
        .install(|cx| {
            cx.parts
                .insert(live::Live::default())
                .insert(bus::Browsers::default())
                .insert(trusthub_fleet::agent_ws::ConsoleFrames(
                    |state, agent, tenant, frame| {
                        Box::pin(service::on_agent_frame(state, agent, tenant, frame))
                    },
                ));
            cx.parts
                .entry::<trusthub_fleet::agent_ws::ActionHooks>()
                .0
                .push(("console_open", |state, tx, result, now| {
                    Box::pin(service::on_open_result(state, tx, result, now))
                }));
            Ok(())
        })
        .task(|state| Box::pin(bus::listen(state, service::on_bus)))
}
