//! The fleet (SPEC 2.2, 3.1, 4, 5; CONTRACT 5, 11): agents and their enrolment and
//! registration, signed ingest of metrics and inventory, the agent WebSocket, signed action
//! tokens (EATs) and their records, and the transparency log.
//!
//! What it offers other capabilities:
//! - [`agent_auth::AgentAuth`]: an agent's credential on the API;
//! - [`actions::dispatch`]: sends a signed action to an agent (app restarts, later
//!   patches);
//! - [`Agent`], [`agent`], [`agents`], [`latest_inventory`], [`inventories`],
//!   [`inventory`], [`processes`]: hosts, their typed inventory and process list for the
//!   capabilities built on them (apps, vulnerabilities); [`agent_rows`] (each agent as a
//!   row shows it, with its newest CPU kept by ingest), [`cpu_minutes`], [`window_sums`],
//!   [`metric_names`], [`metric_known`] and [`unix_ms`]: metric reads for the overview and the
//!   alert rules; [`append_log`] writes the transparency log, [`log_of_subject`] reads one
//!   subject's entries; [`agent_ws::ActionHooks`]: how a capability follows the results of
//!   the actions it sent;
//!   [`maintenance`] is what the composition root runs at start and on its retention tick;
//! - [`host_names`]: host names of a tenant's agents, the lookup other capabilities are
//!   given instead of this crate's tables; [`host_keys`]: what a cloud resource is matched
//!   to a host by; [`sockets`]: each host's listening sockets and connections (topology); [`install_command`]: a single-use enrollment token and its install line;
//! - [`api`], [`web::pages`], [`connections::refresh_connections`], [`routing::listen`]: what
//!   the composition root mounts and starts.
//!
//! Invariant: nothing an agent sends is stored unless it verifies with the key the agent
//! registered; an action reaches an agent only as a token the hub signed, recorded in the
//! transparency log before it leaves.

pub mod admin;
pub mod agent_auth;
pub mod agent_ws;
pub mod connections;
pub mod ingest;
pub mod ranges;
pub mod routes;
pub mod routing;
pub mod service;
pub mod settings;
mod store;
pub mod web;

/// Signed actions to agents (SPEC 5), as other capabilities ask for them: prepare one for a
/// host, dispatch it over the host's WebSocket, and read its log.
pub mod actions {
    pub use crate::service::actions::{
        ActionRequest, Dispatched, EatKey, LogEntryView, Prepared, Requester, dispatch,
        dispatch_as, prepare, reachable,
    };
}

use trusthub_identity::auth;
use trusthub_platform::{error, extract, openapi, ratelimit, state};

use std::collections::HashMap;
use trusthub_platform::AppState;
use trusthub_store::{StoreResult, TenantId};
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

/// The API routes, relative to `/api/v1`.
pub fn api() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(routes::agents::router())
        .merge(routes::actions::router())
}

/// Asks `agent` to push a batch now, over its WebSocket when it holds one with this process
/// (CONTRACT 33: a requested compliance run reaches the host at once, not at its next push);
/// whether it was told. An agent connected elsewhere learns at its next push.
pub fn ask_to_push(state: &AppState, agent: Uuid) -> bool {
    state
        .part::<agent_ws::Connections>()
        .send(agent, serde_json::json!({"type": "push"}).to_string())
}

/// The host name of each of `tenant`'s agents.
pub async fn host_names(state: &AppState, tenant: TenantId) -> StoreResult<HashMap<Uuid, String>> {
    let mut c = state.db.conn().await?;
    Ok(store::agents::list(&mut c, tenant)
        .await?
        .into_iter()
        .map(|a| (a.id, a.hostname))
        .collect())
}

/// The agent binaries the hub serves for `install.sh`, and the hosts table the overview shows.
pub use service::download::AgentDownload;
pub use service::hosts::{AgentRow, CpuMinutes, agent_rows, cpu_minutes};
pub use store::actions::{append_log, append_logs, log_of_subject};
pub use store::agents::{Agent, get as agent, ingest_intervals, list as agents};
pub use store::telemetry::{SeriesWindow, metric_known, metric_names, unix_ms, window_sums};

/// The raw write path of metric samples, below the ingest pipeline: what the ingest
/// benchmark measures as its ceiling.
pub mod raw {
    pub use crate::store::agents::{Registration, insert as insert_agent};
    pub use crate::store::telemetry::{Inserted, SeriesCache, insert_inventory, insert_samples};
}

/// The order in which metric points were stored, for forwarding them (CONTRACT 26).
pub mod metric_log {
    pub use crate::store::metric_log::{
        AgentLabels, Committed, Handoff, LogEntry, LogPosition, SeriesInfo, StoredPoint,
        agent_labels, forget_before, oldest_after, oldest_ts, points_at, prune_through, read_after,
        read_between, series_info,
    };
}

async fn purge(
    state: &AppState,
    tx: &mut trusthub_store::Tx,
    now: OffsetDateTime,
) -> trusthub_store::StoreResult<()> {
    let ms = unix_ms(now);
    let mut raw_before = ms
        - crate::settings::of(&state.settings)
            .metrics_raw_retention_hours
            .max(1)
            * 3_600_000;
    if state.part::<ingest::Forward>().0.is_some() {
        // Points a receiver has not accepted yet are kept past the raw retention.
        if let Some(ts) = store::metric_log::oldest_ts(tx).await? {
            raw_before = raw_before.min(ts);
        }
    } else {
        // Forwarding is off here: log rows whose points the raw retention removes go with
        // them (a process with forwarding on keeps what it has not sent; every hub process
        // of one database should have the same receivers).
        store::metric_log::forget_before(tx, raw_before).await?;
    }
    store::telemetry::purge_points(
        tx,
        raw_before,
        ms - crate::settings::of(&state.settings)
            .metrics_minute_retention_days
            .max(1)
            * 86_400_000,
    )
    .await?;
    store::telemetry::purge_batches(
        tx,
        now - time::Duration::seconds(trusthub_core::agent::DEDUPE_WINDOW_SECS),
    )
    .await?;
    Ok(())
}

/// The retention deletes the housekeeping runs, for tests that age data by hand.
pub mod maintenance {
    pub use crate::store::telemetry::{purge_batches, purge_points};
}

use time::OffsetDateTime;
use trusthub_core::inventory::{Inventory, Process};
use trusthub_store::{Exec, StoreError};

/// An agent's inventory snapshot, read through the hub's types.
#[derive(Debug, Clone)]
pub struct InventoryRecord {
    /// When the agent collected it.
    pub collected_at: OffsetDateTime,
    /// When the hub stored it.
    pub received_at: OffsetDateTime,
    /// What it says.
    pub inventory: Inventory,
}

fn read_inventory(snapshot: &serde_json::Value) -> StoreResult<Inventory> {
    // Validated at ingest; a row that no longer reads is corrupt, not empty.
    Inventory::parse(snapshot).map_err(|_| StoreError::Corrupt("inventory_snapshots.snapshot"))
}

/// The latest inventory of a tenant's agent (`None` before the first).
pub async fn latest_inventory(
    ex: &mut impl Exec,
    tenant: TenantId,
    agent: Uuid,
) -> StoreResult<Option<InventoryRecord>> {
    let Some(s) = store::telemetry::latest_inventory(ex, tenant, agent).await? else {
        return Ok(None);
    };
    Ok(Some(InventoryRecord {
        collected_at: s.collected_at,
        received_at: s.received_at,
        inventory: read_inventory(&s.snapshot.0)?,
    }))
}

/// The patching state of each of a tenant's agents from its latest inventory (agents without
/// one, or whose inventory says nothing of patching, are absent), in one read.
pub async fn patching_states(
    ex: &mut impl Exec,
    tenant: TenantId,
) -> StoreResult<HashMap<Uuid, trusthub_core::inventory::Patching>> {
    let mut out = HashMap::new();
    for (agent, patching) in store::telemetry::latest_patching(ex, tenant).await? {
        let Some(text) = patching.filter(|t| t != "null") else {
            continue;
        };
        let p = serde_json::from_str(&text)
            .map_err(|_| StoreError::Corrupt("inventory_snapshots.snapshot (patching)"))?;
        out.insert(agent, p);
    }
    Ok(out)
}

/// A fresh single-use enrollment token made by `p` (audited) and the one-line install
/// command that uses it: `(token, expires_at, command)`.
pub async fn install_command(
    state: &AppState,
    meta: &extract::Meta,
    p: &auth::Principal,
) -> error::ApiResult<(String, time::OffsetDateTime, String)> {
    let created = service::agents::enrollment::new_enrollment_token(
        state,
        meta,
        p,
        service::agents::enrollment::NewEnrollmentToken {
            expires_at: None,
            tags: vec!["cloud".into()],
            single_use: true,
        },
    )
    .await?;
    let command = web::install::one_liner(&state.public_url, &created.token);
    Ok((created.token, created.expires_at, command))
}

/// A host as cloud discovery matches it (CONTRACT 23).
#[derive(Debug, Clone)]
pub struct HostKeys {
    /// The agent.
    pub agent_id: Uuid,
    /// Its host name.
    pub hostname: String,
    /// Every address of its interfaces (latest inventory).
    pub addrs: Vec<String>,
    /// Its cloud instance id, where the host could tell.
    pub instance_id: Option<String>,
}

/// A tenant's hosts with what a cloud resource is matched by.
pub async fn host_keys(ex: &mut impl Exec, tenant: TenantId) -> StoreResult<Vec<HostKeys>> {
    Ok(store::telemetry::host_keys(ex, tenant)
        .await?
        .into_iter()
        .map(|(agent_id, hostname, addrs, instance_id)| HostKeys {
            agent_id,
            hostname,
            addrs: addrs.0,
            instance_id,
        })
        .collect())
}

/// The sockets of each of a tenant's agents from its latest inventory (CONTRACT 24):
/// `(listening, connections)`; agents without an inventory are absent.
pub async fn sockets(
    ex: &mut impl Exec,
    tenant: TenantId,
) -> StoreResult<HashMap<Uuid, SocketLists>> {
    #[derive(serde::Deserialize)]
    struct Sockets {
        #[serde(default)]
        listening: Option<Vec<trusthub_core::inventory::Listening>>,
        #[serde(default)]
        connections: Option<Vec<trusthub_core::inventory::Connection>>,
    }
    let mut out = HashMap::new();
    for (agent, snapshot) in store::telemetry::latest_snapshots(ex, tenant).await? {
        let s = <Sockets as serde::Deserialize>::deserialize(&snapshot.0)
            .map_err(|_| StoreError::Corrupt("inventory_snapshots.snapshot"))?;
        out.insert(
            agent,
            (
                s.listening.unwrap_or_default(),
                s.connections.unwrap_or_default(),
            ),
        );
    }
    Ok(out)
}

/// An agent's listening sockets and established connections.
pub type SocketLists = (
    Vec<trusthub_core::inventory::Listening>,
    Vec<trusthub_core::inventory::Connection>,
);

/// Every agent with an inventory: `(tenant, agent, host name, latest snapshot id)`.
pub async fn inventories(ex: &mut impl Exec) -> StoreResult<Vec<(Uuid, Uuid, String, i64)>> {
    store::telemetry::agents_with_inventory(ex).await
}

/// One inventory snapshot by its id (from [`inventories`]).
pub async fn inventory(ex: &mut impl Exec, id: i64) -> StoreResult<Option<Inventory>> {
    match store::telemetry::snapshot(ex, id).await? {
        Some(v) => Ok(Some(read_inventory(&v)?)),
        None => Ok(None),
    }
}

/// The process list a tenant's agent last sent: when, and the processes.
pub async fn processes(
    ex: &mut impl Exec,
    tenant: TenantId,
    agent: Uuid,
) -> StoreResult<Option<(OffsetDateTime, Vec<Process>)>> {
    let Some((at, list)) = store::telemetry::processes(ex, tenant, agent).await? else {
        return Ok(None);
    };
    let list = serde_json::from_value(serde_json::Value::Array(list.0))
        .map_err(|_| StoreError::Corrupt("agent_processes.processes"))?;
    Ok(Some((at, list)))
}

/// This capability, as the composition root mounts, schedules and starts it.
pub fn capability() -> trusthub_platform::capability::Capability {
    trusthub_platform::capability::Capability::new("fleet", api, web::pages)
        .settings::<settings::Settings>()
        .install(|cx| {
            cx.parts
                .insert(agent_ws::Connections::default())
                .insert(service::hosts::CpuMinutes::default())
                .insert(AgentDownload::locate(cx.settings))
                .insert(trusthub_certs::HostNames(|state, tenant| {
                    Box::pin(host_names(state, tenant))
                }));
            cx.parts.entry::<agent_ws::ActionHooks>();
            cx.parts.entry::<ingest::Hooks>();
            Ok(())
        })
        // Raw points past `TRUSTHUB_METRICS_RAW_RETENTION_HOURS` (but not those a remote-write
        // receiver has yet to accept), minute rollups past their retention, batch ids past
        // the replay window.
        .purge(|state, tx, now| Box::pin(purge(state, tx, now)))
        // One process per SQLite database: connection marks left by a crash are stale.
        .on_start(|state| {
            Box::pin(async move {
                if state.db.backend() == trusthub_store::Backend::Sqlite
                    && let Ok(mut tx) = state.db.begin().await
                    && store::actions::clear_all_connections(&mut tx).await.is_ok()
                {
                    let _ = tx.commit().await;
                }
            })
        })
        // Agents see their sockets close; their connection marks go with this process.
        .on_stop(|state| {
            Box::pin(async move {
                state.part::<agent_ws::Connections>().close_all();
                if let Ok(mut tx) = state.db.begin().await
                    && store::actions::clear_instance(&mut tx, &state.instance)
                        .await
                        .is_ok()
                {
                    let _ = tx.commit().await;
                }
            })
        })
        // The ingest writer, once every capability set its side of the ingest events.
        .install_last(|cx| {
            let hooks = cx.parts.entry::<ingest::Hooks>().clone();
            let forward = cx.parts.entry::<ingest::Forward>().0.clone();
            let writer = ingest::Ingest::new(cx.db.clone(), Default::default(), hooks, forward);
            cx.parts.insert(writer);
            Ok(())
        })
        .names(
            "enrollment_token",
            "enrollment token",
            Some("/ui/enroll"),
            |state, tenant, ids| {
                Box::pin(async move {
                    let mut c = state.db.conn().await?;
                    let now = trusthub_platform::state::now();
                    let tokens = store::agents::list_enrollment_tokens(&mut c, tenant, now).await?;
                    Ok(trusthub_platform::names::only(
                        tokens.into_iter().map(|t| {
                            let tags = t.tags.0.join(" ");
                            let name = if tags.is_empty() {
                                "an enrollment token".to_owned()
                            } else {
                                format!("an enrollment token for {tags}")
                            };
                            (t.id, name)
                        }),
                        ids,
                    ))
                })
            },
        )
        .names(
            "agent",
            "agent",
            Some("/ui/agents/{id}"),
            |state, tenant, ids| {
                // One key lookup per id a page names (a handful), not the tenant's whole
                // fleet: the overview asks every 15 s.
                Box::pin(async move {
                    let mut c = state.db.conn().await?;
                    let mut names = HashMap::new();
                    for id in ids {
                        if let Some(a) = store::agents::get(&mut c, tenant, *id).await? {
                            names.insert(*id, a.hostname);
                        }
                    }
                    Ok(names)
                })
            },
        )
        .task(|state| Box::pin(routing::listen(state)))
        .task(|state| Box::pin(connections::refresh_connections(state)))
}
