//! What agents report: ingest de-duplication, metric series and points, inventory
//! snapshots (latest plus history) and process lists. Everything of one batch is written in
//! the caller's transaction.

use crate::store::metric_rows::{self, Sample, Stat};
use sqlx::types::Json;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use time::OffsetDateTime;
use trusthub_core::agent::MetricSample;
use trusthub_store::{Exec, Handle, StoreResult, TenantId, on};
use uuid::Uuid;

mod inventory;
mod points;
mod reads;
mod rollups;
mod series;

pub use inventory::*;
pub use points::*;
pub use reads::*;
pub use rollups::*;
pub use series::*;

/// Remembers several batch ids at once; returns those that were new.
pub async fn claim_batches(
    ex: &mut impl Exec,
    batches: &[(Uuid, Uuid)],
    now: OffsetDateTime,
) -> StoreResult<std::collections::HashSet<(Uuid, Uuid)>> {
    if batches.is_empty() {
        return Ok(Default::default());
    }
    let rows: Vec<(Uuid, Uuid)> = match ex.handle() {
        Handle::Postgres(c) => {
            let mut qb = sqlx::QueryBuilder::<sqlx::Postgres>::new(
                "INSERT INTO ingest_batches (agent_id, batch_id, received_at) ",
            );
            qb.push_values(batches, |mut b, (a, id)| {
                b.push_bind(*a).push_bind(*id).push_bind(now);
            });
            qb.push(" ON CONFLICT DO NOTHING RETURNING agent_id, batch_id");
            qb.build_query_as().fetch_all(&mut *c).await?
        }
        Handle::Sqlite(c) => {
            let mut qb = sqlx::QueryBuilder::<sqlx::Sqlite>::new(
                "INSERT INTO ingest_batches (agent_id, batch_id, received_at) ",
            );
            qb.push_values(batches, |mut b, (a, id)| {
                b.push_bind(*a).push_bind(*id).push_bind(now);
            });
            qb.push(" ON CONFLICT DO NOTHING RETURNING agent_id, batch_id");
            qb.build_query_as().fetch_all(&mut *c).await?
        }
    };
    Ok(rows.into_iter().collect())
}

/// Forgets batch ids received before `before`.
pub async fn purge_batches(ex: &mut impl Exec, before: OffsetDateTime) -> StoreResult<u64> {
    Ok(
        on!(ex, c => sqlx::query("DELETE FROM ingest_batches WHERE received_at < $1")
        .bind(before).execute(&mut *c).await?.rows_affected()),
    )
}

/// Unix milliseconds of a timestamp.
pub fn unix_ms(t: OffsetDateTime) -> i64 {
    (t.unix_timestamp_nanos() / 1_000_000) as i64
}

fn labels_key(labels: &BTreeMap<String, String>) -> String {
    serde_json::to_string(labels).unwrap_or_else(|_| "{}".into())
}

#[cfg(test)]
mod tests;
