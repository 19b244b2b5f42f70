//! Each receiver's position in the metric log (`remote_write_positions`), keyed by its URL
//! without userinfo.

use trusthub_fleet::metric_log::LogPosition;
use trusthub_store::{Exec, StoreResult, on};

/// A receiver's stored position.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    /// The receiver's URL without userinfo.
    pub url: String,
    /// Everything up to here was accepted.
    pub position: LogPosition,
    /// When it last moved (unix milliseconds).
    pub updated_at: i64,
}

/// The position of a receiver, if it has one.
pub async fn position(ex: &mut impl Exec, url: &str) -> StoreResult<Option<LogPosition>> {
    let row: Option<(i64, i64)> = on!(ex, c => sqlx::query_as(
        "SELECT txid, log_id FROM remote_write_positions WHERE url = $1")
        .bind(url).fetch_optional(&mut *c).await?);
    Ok(row.map(|(txid, id)| LogPosition { txid, id }))
}

/// Every stored position.
pub async fn all(ex: &mut impl Exec) -> StoreResult<Vec<Stored>> {
    let rows: Vec<(String, i64, i64, i64)> = on!(ex, c => sqlx::query_as(
        "SELECT url, txid, log_id, updated_at FROM remote_write_positions ORDER BY url")
        .fetch_all(&mut *c).await?);
    Ok(rows
        .into_iter()
        .map(|(url, txid, id, updated_at)| Stored {
            url,
            position: LogPosition { txid, id },
            updated_at,
        })
        .collect())
}

/// Moves a receiver's position forward (never back: a process that lost its lease while
/// sending cannot undo the one that took over).
pub async fn save(ex: &mut impl Exec, url: &str, to: LogPosition, now_ms: i64) -> StoreResult<()> {
    on!(ex, c => sqlx::query(
        "INSERT INTO remote_write_positions (url, txid, log_id, updated_at) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (url) DO UPDATE SET txid = excluded.txid, log_id = excluded.log_id, updated_at = excluded.updated_at \
         WHERE (remote_write_positions.txid, remote_write_positions.log_id) < (excluded.txid, excluded.log_id)")
        .bind(url).bind(to.txid).bind(to.id).bind(now_ms).execute(&mut *c).await?.rows_affected());
    Ok(())
}
