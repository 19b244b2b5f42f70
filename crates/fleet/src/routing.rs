//! Getting a frame to an agent's WebSocket wherever it is connected (CONTRACT 11: several
//! hub processes on one PostgreSQL database). The process holding the socket is recorded in
//! `agent_connections`; a frame for an agent connected elsewhere goes out as a PostgreSQL
//! `NOTIFY` naming that process, and only that process forwards it, so it arrives once.

use crate::state::AppState;
use crate::store::actions;
use serde::{Deserialize, Serialize};
use trusthub_store::{Db, StoreResult};
use uuid::Uuid;

/// The `NOTIFY` channel.
pub const CHANNEL: &str = "trusthub_agent_frames";

#[derive(Debug, Serialize, Deserialize)]
struct Routed {
    instance: String,
    agent_id: Uuid,
    frame: String,
}

/// Sends `frame` to the agent: here if it is connected here, else through the process that
/// holds its socket. False when no process does.
pub async fn deliver(state: &AppState, agent_id: Uuid, frame: String) -> StoreResult<bool> {
    if state
        .part::<crate::agent_ws::Connections>()
        .send(agent_id, frame.clone())
    {
        return Ok(true);
    }
    if !matches!(state.db, Db::Postgres(_)) {
        return Ok(false);
    }
    let mut c = state.db.conn().await?;
    let Some(instance) = actions::connected_instance(&mut c, agent_id).await? else {
        return Ok(false);
    };
    if instance == state.instance {
        return Ok(false);
    }
    let payload = serde_json::to_string(&Routed {
        instance,
        agent_id,
        frame,
    })
    .unwrap_or_default();
    trusthub_platform::notify::publish(&state.db, CHANNEL, &payload).await?;
    Ok(true)
}

/// On PostgreSQL, forwards frames routed to this process until the task is aborted.
pub async fn listen(state: AppState) {
    trusthub_platform::notify::listen(state, CHANNEL, |state, payload| {
        Box::pin(async move {
            let Ok(r) = serde_json::from_str::<Routed>(&payload) else {
                return;
            };
            if r.instance == state.instance
                && !state
                    .part::<crate::agent_ws::Connections>()
                    .send(r.agent_id, r.frame)
            {
                tracing::warn!(agent_id = %r.agent_id, "a frame routed here found no socket");
            }
        })
    })
    .await;
}
