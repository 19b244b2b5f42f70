//! Messages between the hub processes that share one PostgreSQL database (CONTRACT 11):
//! `NOTIFY` on a channel, each message naming the process it is for. PostgreSQL delivers a
//! channel's notifications in commit order, so one sender's messages, sent one after the
//! other, arrive in order. A payload stays under PostgreSQL's 8000-byte limit.

use crate::AppState;
use trusthub_store::{Db, StoreResult};

/// The largest payload PostgreSQL takes, with room to spare.
pub const MAX_PAYLOAD: usize = 7900;

/// Sends `payload` on `channel` (a no-op on SQLite, where there is one process).
pub async fn publish(db: &Db, channel: &str, payload: &str) -> StoreResult<()> {
    let Db::Postgres(pool) = db else {
        return Ok(());
    };
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(channel)
        .bind(payload)
        .execute(pool)
        .await?;
    Ok(())
}

/// Hands every payload on `channel` to `on`, one at a time and in order, until the task is
/// aborted; reconnects when the listener is lost. Returns at once on SQLite.
pub async fn listen<F>(state: AppState, channel: &'static str, mut on: F)
where
    F: FnMut(AppState, String) -> crate::BoxFuture<'static, ()> + Send,
{
    let Db::Postgres(pool) = &state.db else {
        return;
    };
    loop {
        let mut listener = match sqlx::postgres::PgListener::connect_with(pool).await {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(error = %e, channel, "cannot listen; retrying");
                tokio::time::sleep(std::time::Duration::from_secs(2)).await;
                continue;
            }
        };
        if let Err(e) = listener.listen(channel).await {
            tracing::warn!(error = %e, channel, "cannot listen; retrying");
            tokio::time::sleep(std::time::Duration::from_secs(2)).await;
            continue;
        }
        loop {
            match listener.recv().await {
                Ok(n) => on(state.clone(), n.payload().to_owned()).await,
                Err(e) => {
                    tracing::warn!(error = %e, channel, "listener lost; reconnecting");
                    break;
                }
            }
        }
    }
}
