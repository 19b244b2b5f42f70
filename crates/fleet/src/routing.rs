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
    let Db::Postgres(pool) = &state.db else {
        return Ok(false);
    };
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
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(CHANNEL)
        .bind(payload)
        .execute(pool)
        .await?;
    Ok(true)
}

/// On PostgreSQL, forwards frames routed to this process until the task is aborted.
pub async fn listen(state: AppState) {
    let Db::Postgres(pool) = &state.db else {
        return;
    };
    loop {
        let mut listener = match sqlx::postgres::PgListener::connect_with(pool).await {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for routed agent frames; retrying");
                tokio::time::sleep(std::time::Duration::from_secs(2)).await;
                continue;
            }
        };
        if let Err(e) = listener.listen(CHANNEL).await {
            tracing::warn!(error = %e, "cannot listen for routed agent frames; retrying");
            tokio::time::sleep(std::time::Duration::from_secs(2)).await;
            continue;
        }
        loop {
            match listener.recv().await {
                Ok(n) => {
                    let Ok(r) = serde_json::from_str::<Routed>(n.payload()) else {
                        continue;
                    };
                    if r.instance == state.instance
                        && !state
                            .part::<crate::agent_ws::Connections>()
                            .send(r.agent_id, r.frame)
                    {
                        tracing::warn!(agent_id = %r.agent_id, "a frame routed here found no socket");
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "routed-frame listener lost; reconnecting");
                    break;
                }
            }
        }
    }
}
