//! Agent connections: every 30 s this process marks its agent sockets fresh and expires
//! actions whose token ran out without a result (runs in every process).

use crate::state::{AppState, now};
use std::time::Duration;

/// Every 30 s: marks this process's agent sockets fresh and expires actions whose token
/// ran out without a result.
pub async fn refresh_connections(state: AppState) {
    let mut timer = tokio::time::interval(Duration::from_secs(30));
    loop {
        timer.tick().await;
        let now = now();
        let r = async {
            let mut tx = state.db.begin().await?;
            crate::store::actions::touch_instance(&mut tx, &state.instance, now).await?;
            crate::store::actions::expire_due(&mut tx, now).await?;
            tx.commit().await
        }
        .await;
        if let Err(e) = r {
            tracing::warn!(error = %e, "cannot refresh agent connections");
        }
    }
}
