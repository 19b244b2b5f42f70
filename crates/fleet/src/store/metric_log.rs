//! The order in which metric points were stored (CONTRACT 26), for whoever forwards them:
//! one `metric_log` row per (agent, timestamp) a transaction stored points at, written in
//! the ingest transaction while forwarding is on. The points stay in `metric_points`; a
//! reader takes log rows after its position and reads the points' rows by that key.
//!
//! On PostgreSQL a row's id is taken when it is inserted, not when its transaction commits,
//! so a reader only takes rows of transactions older than every one still running
//! (`pg_snapshot_xmin`), in (txid, id) order: a late commit is never skipped. SQLite has one
//! writer; there txid is 0 and ids are in commit order.

use crate::store::metric_rows;
use sqlx::types::Json;
use std::collections::{BTreeMap, BTreeSet};
use trusthub_store::{Exec, Handle, StoreResult, on};
use uuid::Uuid;

/// A place in the log: everything up to and including (txid, id) was taken.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct LogPosition {
    /// The transaction id (0 on SQLite).
    pub txid: i64,
    /// The row id.
    pub id: i64,
}

/// One log row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub struct LogEntry {
    /// The transaction id (0 on SQLite).
    pub txid: i64,
    /// The row id.
    pub id: i64,
    /// The agent's number (`agents.seq`).
    pub agent_seq: i64,
    /// The points' timestamp, unix milliseconds.
    pub ts: i64,
    /// When they were stored, unix milliseconds.
    pub stored_at: i64,
}

impl LogEntry {
    /// Its place in the log.
    pub fn position(&self) -> LogPosition {
        LogPosition {
            txid: self.txid,
            id: self.id,
        }
    }
}

/// Appends the keys of newly stored points, in the storing transaction. On SQLite, answers
/// the ids the rows took (`first..=last`: one writer, so they are consecutive and in commit
/// order); on PostgreSQL nothing (ids there are not in commit order).
pub(crate) async fn append(
    ex: &mut impl Exec,
    keys: &BTreeSet<(i64, i64)>,
    stored_at: i64,
) -> StoreResult<Option<(i64, i64)>> {
    let keys: Vec<&(i64, i64)> = keys.iter().collect();
    let mut ids: Option<(i64, i64)> = None;
    let mut taken = 0i64;
    const INSERT: &str = "INSERT INTO metric_log (agent_seq, ts, stored_at) ";
    for chunk in keys.chunks(4_000) {
        match ex.handle() {
            Handle::Postgres(c) => {
                let mut qb = sqlx::QueryBuilder::<sqlx::Postgres>::new(INSERT);
                qb.push_values(chunk, |mut b, (agent, ts)| {
                    b.push_bind(*agent).push_bind(*ts).push_bind(stored_at);
                });
                qb.build().execute(&mut *c).await?;
            }
            Handle::Sqlite(c) => {
                let mut qb = sqlx::QueryBuilder::<sqlx::Sqlite>::new(INSERT);
                qb.push_values(chunk, |mut b, (agent, ts)| {
                    b.push_bind(*agent).push_bind(*ts).push_bind(stored_at);
                });
                // One statement's rows take consecutive ids (AUTOINCREMENT: each one above
                // every id there ever was), the last of them `last_insert_rowid` — no row
                // sent back per id.
                let done = qb.build().execute(&mut *c).await?;
                let (n, last) = (done.rows_affected() as i64, done.last_insert_rowid());
                if n > 0 {
                    taken += n;
                    ids = Some(match ids {
                        None => (last - n + 1, last),
                        Some((lo, _)) => (lo, last),
                    });
                }
            }
        }
    }
    // Consecutive ids or nothing: a reader that cannot trust the range reads the log.
    Ok(ids.filter(|(lo, hi)| hi - lo + 1 == taken))
}

/// Points one transaction stored, handed to forwarding after its commit so that it need not
/// read them back (SQLite): they are the points of log rows `first_id..=last_id`.
#[derive(Debug)]
pub struct Committed {
    /// The first log row of the transaction.
    pub first_id: i64,
    /// Its last log row.
    pub last_id: i64,
    /// When they were stored, unix milliseconds.
    pub stored_at: i64,
    /// The new points.
    pub points: Vec<StoredPoint>,
    /// Who the agents of the points were as the transaction stored them (read there anyway,
    /// to check each batch's agent still stands): forwarding labels the points with them
    /// rather than reading the agents again.
    pub agents: Vec<AgentLabels>,
}

/// Where the ingest writer hands what a transaction stored, after the commit. It must not
/// block (a full queue drops: the log stays the truth and is read instead).
pub type Handoff = std::sync::Arc<dyn Fn(std::sync::Arc<Committed>) + Send + Sync>;

/// Up to `limit` committed rows after `after`, in log order.
pub async fn read_after(
    ex: &mut impl Exec,
    after: LogPosition,
    limit: i64,
) -> StoreResult<Vec<LogEntry>> {
    read_between(ex, after, None, limit).await
}

/// Like [`read_after`], stopping before row `before` (SQLite, where ids are the order: the
/// rows ahead of points already handed over in memory).
pub async fn read_between(
    ex: &mut impl Exec,
    after: LogPosition,
    before: Option<i64>,
    limit: i64,
) -> StoreResult<Vec<LogEntry>> {
    Ok(match ex.handle() {
        Handle::Postgres(c) => {
            sqlx::query_as(
                "SELECT txid, id, agent_seq, ts, stored_at FROM metric_log \
                 WHERE (txid, id) > ($1, $2) \
                 AND txid < pg_snapshot_xmin(pg_current_snapshot())::text::bigint \
                 ORDER BY txid, id LIMIT $3",
            )
            .bind(after.txid)
            .bind(after.id)
            .bind(limit)
            .fetch_all(&mut *c)
            .await?
        }
        // txid is always 0 here: the id alone is the order (and a search of the row id).
        Handle::Sqlite(c) => {
            sqlx::query_as(
                "SELECT txid, id, agent_seq, ts, stored_at FROM metric_log \
                 WHERE id > $1 AND id < $2 ORDER BY id LIMIT $3",
            )
            .bind(after.id)
            .bind(before.unwrap_or(i64::MAX))
            .bind(limit)
            .fetch_all(&mut *c)
            .await?
        }
    })
}

/// When the oldest row after `after` was stored (unix milliseconds), if there is one.
pub async fn oldest_after(ex: &mut impl Exec, after: LogPosition) -> StoreResult<Option<i64>> {
    Ok(match ex.handle() {
        Handle::Postgres(c) => {
            sqlx::query_scalar("SELECT MIN(stored_at) FROM metric_log WHERE (txid, id) > ($1, $2)")
                .bind(after.txid)
                .bind(after.id)
                .fetch_one(&mut *c)
                .await?
        }
        Handle::Sqlite(c) => {
            sqlx::query_scalar("SELECT MIN(stored_at) FROM metric_log WHERE id > $1")
                .bind(after.id)
                .fetch_one(&mut *c)
                .await?
        }
    })
}

/// Forgets rows up to and including `through` (every reader has taken them).
pub async fn prune_through(ex: &mut impl Exec, through: LogPosition) -> StoreResult<u64> {
    Ok(match ex.handle() {
        Handle::Postgres(c) => sqlx::query("DELETE FROM metric_log WHERE (txid, id) <= ($1, $2)")
            .bind(through.txid)
            .bind(through.id)
            .execute(&mut *c)
            .await?
            .rows_affected(),
        Handle::Sqlite(c) => sqlx::query("DELETE FROM metric_log WHERE id <= $1")
            .bind(through.id)
            .execute(&mut *c)
            .await?
            .rows_affected(),
    })
}

/// Forgets rows naming points older than `ts_ms` (forwarding is off in this process and the
/// raw retention removes those points).
pub async fn forget_before(ex: &mut impl Exec, ts_ms: i64) -> StoreResult<u64> {
    Ok(
        on!(ex, c => sqlx::query("DELETE FROM metric_log WHERE ts < $1").bind(ts_ms).execute(&mut *c).await?.rows_affected()),
    )
}

/// The oldest point timestamp the log still names: raw points from there on must be kept
/// until the log is read.
pub async fn oldest_ts(ex: &mut impl Exec) -> StoreResult<Option<i64>> {
    Ok(
        on!(ex, c => sqlx::query_scalar("SELECT MIN(ts) FROM metric_log")
            .fetch_one(&mut *c).await?),
    )
}

/// One stored point: agent number, series id, unix milliseconds, value.
pub type StoredPoint = (i64, i64, i64, f64);

/// The points stored at each (agent number, timestamp).
pub async fn points_at(ex: &mut impl Exec, keys: &[(i64, i64)]) -> StoreResult<Vec<StoredPoint>> {
    let mut out = Vec::new();
    for (agent, ts, text) in metric_rows::read(ex, metric_rows::POINTS, keys, false).await? {
        out.extend(
            metric_rows::samples(&text)?
                .into_iter()
                .map(|(series, value)| (agent, series, ts, value)),
        );
    }
    Ok(out)
}

/// What a series is: its metric name and own labels.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesInfo {
    /// The series id.
    pub id: i64,
    /// The metric name as stored.
    pub name: String,
    /// Its own labels.
    pub labels: BTreeMap<String, String>,
}

/// The series of these ids (ids of deleted agents' series are absent).
pub async fn series_info(ex: &mut impl Exec, ids: &[i64]) -> StoreResult<Vec<SeriesInfo>> {
    let mut out = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(4_000) {
        let rows: Vec<(i64, String, String)> = on!(ex, c => {
            let mut qb = sqlx::QueryBuilder::new("SELECT id, name, labels FROM metric_series WHERE id IN (");
            let mut list = qb.separated(", ");
            for id in chunk {
                list.push_bind(*id);
            }
            qb.push(")");
            qb.build_query_as().fetch_all(&mut *c).await?
        });
        for (id, name, labels) in rows {
            out.push(SeriesInfo {
                id,
                name,
                labels: serde_json::from_str(&labels).unwrap_or_default(),
            });
        }
    }
    Ok(out)
}

/// Who an agent is, for labelling its series.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct AgentLabels {
    /// The agent's number.
    pub seq: i64,
    /// Its id.
    pub id: Uuid,
    /// Its tenant.
    pub tenant_id: Uuid,
    /// Its host name.
    pub hostname: String,
    /// Its tags.
    pub tags: Json<Vec<String>>,
}

/// The agents of these numbers (deleted ones are absent).
pub async fn agent_labels(ex: &mut impl Exec, seqs: &[i64]) -> StoreResult<Vec<AgentLabels>> {
    let mut out = Vec::with_capacity(seqs.len());
    for chunk in seqs.chunks(4_000) {
        let rows: Vec<AgentLabels> = on!(ex, c => {
            let mut qb = sqlx::QueryBuilder::new("SELECT seq, id, tenant_id, hostname, tags FROM agents WHERE seq IN (");
            let mut list = qb.separated(", ");
            for s in chunk {
                list.push_bind(*s);
            }
            qb.push(")");
            qb.build_query_as().fetch_all(&mut *c).await?
        });
        out.extend(rows);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use trusthub_store::{Db, DbOptions};

    /// On SQLite the ingest writer hands points over by the log ids `append` answers: they
    /// must be the ids the rows took, whatever the number of statements, and keep growing
    /// after everything was pruned.
    #[tokio::test]
    async fn sqlite_append_answers_the_ids_its_rows_took() {
        let dir = std::env::temp_dir().join(format!("trusthub-metric-log-{}", Uuid::new_v4()));
        std::fs::create_dir_all(&dir).expect("dir");
        let url = format!("sqlite://{}", dir.join("t.db").display());
        let db = Db::connect(&url, &DbOptions::default()).await.expect("db");
        db.migrate().await.expect("migrate");
        let mut last_id = 0;
        for n in [1i64, 3, 4_000, 4_001, 9_000] {
            let keys: BTreeSet<(i64, i64)> = (0..n).map(|i| (i % 7, 1_000 + i)).collect();
            let mut tx = db.begin().await.expect("begin");
            let (first, last) = append(&mut tx, &keys, 5)
                .await
                .expect("append")
                .expect("ids on SQLite");
            tx.commit().await.expect("commit");
            assert_eq!((first, last - first + 1), (last_id + 1, n), "{n} rows");
            let mut c = db.conn().await.expect("conn");
            let rows = read_after(
                &mut c,
                LogPosition {
                    txid: 0,
                    id: first - 1,
                },
                100_000,
            )
            .await
            .expect("read");
            let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
            assert_eq!(ids, (first..=last).collect::<Vec<_>>());
            let got: Vec<(i64, i64)> = rows.iter().map(|r| (r.agent_seq, r.ts)).collect();
            assert_eq!(got, keys.iter().copied().collect::<Vec<_>>());
            last_id = last;
        }
        let mut tx = db.begin().await.expect("begin");
        prune_through(
            &mut tx,
            LogPosition {
                txid: 0,
                id: last_id,
            },
        )
        .await
        .expect("prune");
        let next = append(&mut tx, &BTreeSet::from([(1, 2)]), 5)
            .await
            .expect("append");
        tx.commit().await.expect("commit");
        assert_eq!(
            next,
            Some((last_id + 1, last_id + 1)),
            "ids are never reused"
        );
        db.close().await;
        let _ = std::fs::remove_dir_all(&dir);
    }
}
