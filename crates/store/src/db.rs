//! The [`Db`] handle over SQLite or PostgreSQL, and the connection/transaction wrappers that
//! repository functions run on.

use crate::error::{StoreError, StoreResult};
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{PgConnection, PgPool, Postgres, Sqlite, SqliteConnection, SqlitePool, Transaction};
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Which engine a [`Db`] talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The embedded default: one file in the data dir, one hub process.
    Sqlite,
    /// For several hub processes and large fleets.
    Postgres,
}

/// Pool sizing.
#[derive(Debug, Clone)]
pub struct DbOptions {
    /// Connections of the PostgreSQL pool, or of the SQLite read pool.
    pub max_connections: u32,
    /// How long a request waits for a connection before failing.
    pub acquire_timeout: Duration,
    /// SQLite only: checkpoint the WAL from a background connection every 200 ms instead of
    /// in the writer's commits (a commit that triggers an automatic checkpoint copies pages to
    /// the database file and stalls every write queued behind it). For the long-running hub.
    pub background_checkpoint: bool,
    /// SQLite with `background_checkpoint`: WAL frames (4 KiB pages) from which the writer
    /// finishes a checkpoint the background one has caught up with, so that the WAL file
    /// starts over (before its next write transaction, [`Db::begin`]).
    pub wal_restart_frames: i64,
}

impl Default for DbOptions {
    fn default() -> Self {
        DbOptions {
            max_connections: 10,
            acquire_timeout: Duration::from_secs(30),
            background_checkpoint: false,
            wal_restart_frames: WAL_RESTART_FRAMES,
        }
    }
}

/// The default [`DbOptions::wal_restart_frames`]: 256 MiB of 4 KiB frames. Each restart
/// stalls the ingest writer for the finishing checkpoint (24–52 ms measured under the ingest
/// benchmark's full load, where it happens every 3 s; at 64 MiB it happened every 1.5 s and
/// cost more p99 than it saved). Under lighter load the background checkpoint catches up while
/// the writer idles and the WAL starts over by itself. bench/RESULTS.md has the runs.
pub const WAL_RESTART_FRAMES: i64 = 65_536;

/// Period of the background checkpoint. Each pass first syncs the WAL, and writing back what
/// a whole second of sustained ingest had appended (about 100 MB) stalled the writer's own WAL
/// appends for up to 140 ms; at 200 ms the longest group commit under the same load fell to
/// 48 ms (bench/RESULTS.md).
const CHECKPOINT_EVERY: Duration = Duration::from_millis(200);

/// Pause between two passes of the background checkpoint while it chases a large WAL's end.
const CHASE_PAUSE: Duration = Duration::from_millis(10);
/// A chasing pass this short has caught up closely enough for the writer to finish.
const CHASE_DONE: Duration = Duration::from_millis(20);
/// Prepared statements SQLite's one writer keeps (sqlx's default is 100).
const WRITER_STATEMENTS: usize = 1024;

/// Once the background checkpoint has caught up closely with the end of a large WAL
/// ([`DbOptions::wal_restart_frames`]), checkpoints what is left from the writer connection,
/// before the next write transaction, which then starts the WAL file over. Under sustained
/// writes the background checkpoint alone never reaches the end of the log, and the file grew
/// without bound (1.5 GB in 15 s of the ingest benchmark). A failure only delays the restart.
async fn finish_checkpoint(write: &SqlitePool) {
    let started = std::time::Instant::now();
    match sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
        .execute(write)
        .await
    {
        Ok(_) => tracing::debug!(
            ms = started.elapsed().as_millis() as u64,
            "WAL checkpoint finished by the writer"
        ),
        Err(e) => tracing::warn!(error = %e, "finishing the WAL checkpoint failed"),
    }
}

/// The database. Cheap to clone.
///
/// SQLite gets two pools: many readers, and exactly one writer connection, so writes of this
/// process queue in order instead of failing with `SQLITE_BUSY` (WAL lets readers go on).
#[derive(Debug, Clone)]
pub enum Db {
    /// SQLite with a read pool and a single-connection write pool.
    Sqlite {
        /// Readers.
        read: SqlitePool,
        /// The one writer.
        write: SqlitePool,
        /// Set when the background checkpoint has caught up closely with the end of a large
        /// WAL; the next [`Db::begin`] finishes it (see `finish_checkpoint`).
        checkpointed: Arc<AtomicBool>,
    },
    /// PostgreSQL.
    Postgres(PgPool),
}

/// Where the schema stands ([`Db::schema`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schema {
    /// The newest migration this binary has.
    pub binary: i64,
    /// The newest migration the database applied; `None` for an empty database.
    pub database: Option<i64>,
}

impl Schema {
    /// Every migration this binary has is applied.
    pub fn current(&self) -> bool {
        self.database == Some(self.binary)
    }
}

/// Pool figures for `/metrics`.
#[derive(Debug, Clone, Copy)]
pub struct PoolStats {
    /// Open connections.
    pub size: u32,
    /// Of those, idle.
    pub idle: u32,
    /// Configured maximum.
    pub max: u32,
}

impl Db {
    /// Connects to `sqlite://path` (created when missing) or `postgres://...`.
    pub async fn connect(url: &str, opts: &DbOptions) -> StoreResult<Db> {
        if url.starts_with("sqlite:") {
            let base = SqliteConnectOptions::from_str(url)?
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal)
                .busy_timeout(Duration::from_secs(15))
                .foreign_keys(true);
            let checkpointed = Arc::new(AtomicBool::new(false));
            // The one writer keeps the pages it touches (64 MiB instead of SQLite's 2 MiB
            // default, which sustained ingest thrashes) and its statement journals in memory.
            // Its statements with one row of values per batch or agent of a group differ in
            // text from group to group (1 to 64 rows): sqlx's default cache of 100 statements
            // dropped and prepared them again at nearly every group (2.2 % of the hub's CPU
            // under load, bench/RESULTS.md 2026-12-01); 1,024 keeps every size prepared.
            let write_opts = base
                .clone()
                .pragma("cache_size", "-65536")
                .pragma("temp_store", "memory")
                .statement_cache_capacity(WRITER_STATEMENTS);
            let write_opts = if opts.background_checkpoint {
                write_opts.pragma("wal_autocheckpoint", "0")
            } else {
                write_opts
            };
            // Kept open for the life of the process (sqlx would otherwise reopen it after 10
            // idle minutes and every 30 minutes under load, dropping the page cache above).
            // No ping before handing out a connection (sqlx's default): a file cannot hang up,
            // and the ping is a round trip through the connection's worker thread on every
            // acquire (three per ingest request; bench/RESULTS.md 2026-11-28).
            let write = SqlitePoolOptions::new()
                .test_before_acquire(false)
                .max_connections(1)
                .acquire_timeout(opts.acquire_timeout)
                .idle_timeout(None)
                .max_lifetime(None)
                .connect_with(write_opts)
                .await?;
            if opts.background_checkpoint {
                let checkpointer = SqlitePoolOptions::new()
                    .max_connections(1)
                    .connect_with(base.clone())
                    .await?;
                let watched = write.clone();
                let done = checkpointed.clone();
                let restart_frames = opts.wal_restart_frames;
                let page_size: i64 = sqlx::query_scalar("PRAGMA page_size")
                    .fetch_one(&checkpointer)
                    .await?;
                let prefetch = crate::prefetch::WalPrefetch::start(
                    base.get_filename().to_owned(),
                    page_size.max(512) as u64,
                    restart_frames.max(0) as u64,
                );
                tokio::spawn(async move {
                    let mut tick = tokio::time::interval(CHECKPOINT_EVERY);
                    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                    let mut chasing = false;
                    while !watched.is_closed() {
                        if chasing {
                            tokio::time::sleep(CHASE_PAUSE).await;
                        } else {
                            tick.tick().await;
                        }
                        let started = std::time::Instant::now();
                        // PASSIVE: copies what it can without waiting for readers or the writer.
                        match sqlx::query_as::<_, (i64, i64, i64)>("PRAGMA wal_checkpoint(PASSIVE)")
                            .fetch_one(&checkpointer)
                            .await
                        {
                            // A large WAL: chase its end with passes back to back, each
                            // copying what the writer added during the one before, until one
                            // is short; then the writer finishes what little is left.
                            Ok((0, log, copied)) if log >= restart_frames => {
                                let caught_up = copied == log && started.elapsed() < CHASE_DONE;
                                if let Some(p) = &prefetch {
                                    // The writer starts the log over next.
                                    p.frames(if caught_up { 0 } else { log });
                                }
                                if caught_up {
                                    done.store(true, Ordering::Release);
                                }
                                chasing = !caught_up;
                            }
                            Ok((_, log, _)) => {
                                if let Some(p) = &prefetch {
                                    p.frames(log);
                                }
                                chasing = false;
                            }
                            Err(e) => {
                                tracing::warn!(error = %e, "WAL checkpoint failed");
                                chasing = false;
                            }
                        }
                    }
                    checkpointer.close().await;
                });
            }
            let read = SqlitePoolOptions::new()
                .test_before_acquire(false)
                .max_connections(opts.max_connections.max(1))
                .acquire_timeout(opts.acquire_timeout)
                .connect_with(base.read_only(true))
                .await?;
            Ok(Db::Sqlite {
                read,
                write,
                checkpointed,
            })
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            let pg = PgConnectOptions::from_str(url)?;
            let pool = PgPoolOptions::new()
                .max_connections(opts.max_connections.max(2))
                .acquire_timeout(opts.acquire_timeout)
                .connect_with(pg)
                .await?;
            Ok(Db::Postgres(pool))
        } else {
            Err(StoreError::UnsupportedUrl)
        }
    }

    /// The migrations this binary has for this engine.
    fn migrator(&self) -> sqlx::migrate::Migrator {
        match self {
            Db::Sqlite { .. } => sqlx::migrate!("./migrations/sqlite"),
            Db::Postgres(_) => sqlx::migrate!("./migrations/postgres"),
        }
    }

    /// Where the schema stands: the newest migration this binary has, and the newest the
    /// database applied (`None` for an empty database).
    pub async fn schema(&self) -> StoreResult<Schema> {
        let binary = self.migrator().iter().map(|m| m.version).max().unwrap_or(0);
        let mut c = self.conn().await?;
        // No table yet (an empty database) reads as no migration applied.
        let database = crate::on!(&mut c, c => sqlx::query_scalar::<_, Option<i64>>(
            "SELECT MAX(version) FROM _sqlx_migrations WHERE success")
            .fetch_one(&mut *c).await.ok().flatten());
        Ok(Schema { binary, database })
    }

    /// Brings the schema up to date. Safe when several processes start at once: sqlx takes an
    /// advisory lock on PostgreSQL, and SQLite has one writer. A database written by a newer
    /// Trusthub is refused, naming both versions.
    pub async fn migrate(&self) -> StoreResult<()> {
        let s = self.schema().await?;
        if let Some(database) = s.database
            && database > s.binary
        {
            return Err(StoreError::NewerSchema {
                database,
                binary: s.binary,
            });
        }
        match self {
            Db::Sqlite { write, .. } => sqlx::migrate!("./migrations/sqlite").run(write).await?,
            Db::Postgres(pool) => sqlx::migrate!("./migrations/postgres").run(pool).await?,
        }
        Ok(())
    }

    /// The migrations this binary has that the database has not applied, oldest first:
    /// version and description.
    pub async fn pending(&self) -> StoreResult<Vec<(i64, String)>> {
        let applied = self.schema().await?.database.unwrap_or(0);
        Ok(self
            .migrator()
            .iter()
            .filter(|m| m.version > applied && !m.migration_type.is_down_migration())
            .map(|m| (m.version, m.description.to_string()))
            .collect())
    }

    /// Brings an empty or older schema to migration `version` exactly (a restore's first
    /// step: the backup's rows go into the schema they were read from).
    pub async fn migrate_to(&self, version: i64) -> StoreResult<()> {
        match self {
            Db::Sqlite { write, .. } => self.migrator().run_to(version, write).await?,
            Db::Postgres(pool) => self.migrator().run_to(version, pool).await?,
        }
        Ok(())
    }

    /// Which engine this is.
    pub fn backend(&self) -> Backend {
        match self {
            Db::Sqlite { .. } => Backend::Sqlite,
            Db::Postgres(_) => Backend::Postgres,
        }
    }

    /// Whether the PostgreSQL server cleans up after updates by itself (`autovacuum`); always
    /// true on SQLite, which reuses the pages rows leave. The hub updates some rows in place
    /// (rollups, agents), which without it grow the database without bound and leave the
    /// planner without statistics.
    pub async fn autovacuum(&self) -> StoreResult<bool> {
        Ok(match self {
            Db::Sqlite { .. } => true,
            Db::Postgres(pool) => {
                let on: String = sqlx::query_scalar("SELECT current_setting('autovacuum')")
                    .fetch_one(pool)
                    .await?;
                on != "off"
            }
        })
    }

    /// A connection for reads.
    pub async fn conn(&self) -> StoreResult<Conn> {
        Ok(match self {
            Db::Sqlite { read, .. } => Conn::Sqlite(read.acquire().await?),
            Db::Postgres(pool) => Conn::Postgres(pool.acquire().await?),
        })
    }

    /// A transaction for writes; nothing is kept unless [`Tx::commit`] is called.
    pub async fn begin(&self) -> StoreResult<Tx> {
        Ok(match self {
            Db::Sqlite {
                write,
                checkpointed,
                ..
            } => {
                if checkpointed.swap(false, Ordering::AcqRel) {
                    finish_checkpoint(write).await;
                }
                // IMMEDIATE: the write lock is taken at BEGIN, where the busy timeout waits for
                // another process (an admin command next to a running hub); a deferred
                // transaction that reads first fails at once with SQLITE_BUSY when it must
                // upgrade after someone else wrote.
                Tx::Sqlite(write.begin_with("BEGIN IMMEDIATE").await?)
            }
            Db::Postgres(pool) => Tx::Postgres(pool.begin().await?),
        })
    }

    /// A read-only transaction that sees one snapshot of the database for all its reads
    /// (SQLite: a deferred transaction on a reader, which WAL keeps stable without blocking
    /// the writer; PostgreSQL: `REPEATABLE READ READ ONLY`). Drop it when done.
    pub async fn snapshot(&self) -> StoreResult<Tx> {
        Ok(match self {
            Db::Sqlite { read, .. } => Tx::Sqlite(read.begin().await?),
            Db::Postgres(pool) => {
                let mut t = pool.begin().await?;
                sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                    .execute(&mut *t)
                    .await?;
                Tx::Postgres(t)
            }
        })
    }

    /// Checks the database answers.
    pub async fn ping(&self) -> StoreResult<()> {
        let mut c = self.conn().await?;
        crate::on!(&mut c, c => sqlx::query("SELECT 1").execute(&mut *c).await?.rows_affected());
        Ok(())
    }

    /// Pool figures (for SQLite, the read pool plus the writer).
    pub fn pool_stats(&self) -> PoolStats {
        match self {
            Db::Sqlite { read, write, .. } => PoolStats {
                size: read.size() + write.size(),
                idle: (read.num_idle() + write.num_idle()) as u32,
                max: read.options().get_max_connections() + 1,
            },
            Db::Postgres(pool) => PoolStats {
                size: pool.size(),
                idle: pool.num_idle() as u32,
                max: pool.options().get_max_connections(),
            },
        }
    }

    /// Closes every connection.
    pub async fn close(&self) {
        match self {
            Db::Sqlite { read, write, .. } => {
                read.close().await;
                write.close().await;
            }
            Db::Postgres(pool) => pool.close().await,
        }
    }
}

/// A pooled connection.
#[derive(Debug)]
pub enum Conn {
    /// SQLite reader.
    Sqlite(PoolConnection<Sqlite>),
    /// PostgreSQL.
    Postgres(PoolConnection<Postgres>),
}

/// A write transaction.
#[derive(Debug)]
pub enum Tx {
    /// On the SQLite writer.
    Sqlite(Transaction<'static, Sqlite>),
    /// On PostgreSQL.
    Postgres(Transaction<'static, Postgres>),
}

impl Tx {
    /// Makes every write of the transaction durable.
    pub async fn commit(self) -> StoreResult<()> {
        match self {
            Tx::Sqlite(t) => t.commit().await?,
            Tx::Postgres(t) => t.commit().await?,
        }
        Ok(())
    }
}

/// The engine's own connection, borrowed for one statement or several.
#[derive(Debug)]
pub enum Handle<'a> {
    /// SQLite.
    Sqlite(&'a mut SqliteConnection),
    /// PostgreSQL.
    Postgres(&'a mut PgConnection),
}

/// Something repository functions can run SQL on.
pub trait Exec: Send {
    /// The engine's connection.
    fn handle(&mut self) -> Handle<'_>;
}

impl Exec for Conn {
    fn handle(&mut self) -> Handle<'_> {
        match self {
            Conn::Sqlite(c) => Handle::Sqlite(c),
            Conn::Postgres(c) => Handle::Postgres(c),
        }
    }
}

impl Exec for Tx {
    fn handle(&mut self) -> Handle<'_> {
        match self {
            Tx::Sqlite(t) => Handle::Sqlite(t),
            Tx::Postgres(t) => Handle::Postgres(t),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sustained writes with a small restart threshold: the WAL file starts over (its size stays
    /// near the threshold plus what is written during the background checkpoint's period)
    /// instead of growing with everything written through it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_large_wal_starts_over_under_sustained_writes()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = std::env::temp_dir().join(format!("th-wal-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir)?;
        let opts = DbOptions {
            background_checkpoint: true,
            // 1 MiB.
            wal_restart_frames: 256,
            ..DbOptions::default()
        };
        let db = Db::connect(&format!("sqlite://{}/t.db", dir.display()), &opts).await?;
        let Db::Sqlite { write, .. } = &db else {
            unreachable!("a sqlite: URL")
        };
        sqlx::query("CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB NOT NULL)")
            .execute(write)
            .await?;
        let body = vec![7u8; 16 * 1024];
        let mut written = 0usize;
        let deadline = std::time::Instant::now() + Duration::from_secs(4);
        while std::time::Instant::now() < deadline {
            // Through `Db::begin`, which finishes the checkpoint when it is due.
            let mut tx = db.begin().await?;
            let Handle::Sqlite(c) = tx.handle() else {
                unreachable!("a sqlite: URL")
            };
            sqlx::query("INSERT INTO t (body) VALUES ($1)")
                .bind(&body)
                .execute(c)
                .await?;
            tx.commit().await?;
            written += body.len();
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let wal = std::fs::metadata(dir.join("t.db-wal"))?.len() as usize;
        db.close().await;
        std::fs::remove_dir_all(&dir)?;
        assert!(written > 8 << 20, "only {written} bytes written");
        assert!(
            wal * 2 < written,
            "WAL grew to {wal} bytes for {written} written"
        );
        Ok(())
    }

    /// A database is migrated forward, reports where its schema stands, and one written by
    /// a newer Trusthub is refused, naming both versions (CONTRACT 31).
    #[tokio::test]
    async fn a_newer_schema_is_refused_naming_both_versions()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = std::env::temp_dir().join(format!("th-schema-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir)?;
        let url = format!("sqlite://{}/s.db", dir.display());
        let db = Db::connect(&url, &DbOptions::default()).await?;
        let empty = db.schema().await?;
        assert_eq!(empty.database, None);
        assert!(!empty.current());
        db.migrate().await?;
        let s = db.schema().await?;
        assert!(s.current(), "{s:?}");
        assert!(s.binary >= 42, "{s:?}");
        let newer = s.binary + 1;
        let Db::Sqlite { write, .. } = &db else {
            unreachable!("a sqlite: URL")
        };
        sqlx::query(
            "INSERT INTO _sqlx_migrations (version, description, installed_on, success, checksum, execution_time) \
             VALUES ($1, 'from the future', '2030-01-01T00:00:00Z', 1, x'00', 0)",
        )
        .bind(newer)
        .execute(write)
        .await?;
        match db.migrate().await {
            Err(StoreError::NewerSchema { database, binary }) => {
                assert_eq!((database, binary), (newer, s.binary));
            }
            other => panic!("expected NewerSchema, got {other:?}"),
        }
        let text = StoreError::NewerSchema {
            database: newer,
            binary: s.binary,
        }
        .to_string();
        assert!(
            text.contains(&newer.to_string()) && text.contains(&s.binary.to_string()),
            "{text}"
        );
        db.close().await;
        std::fs::remove_dir_all(&dir)?;
        Ok(())
    }

    /// Migrations 0009 and 0010 move metric points and rollups to agent-first keys (the
    /// agent's UUID, then its number `agents.seq`): every row is carried over under its
    /// series' agent, a new agent gets the next number, and deleting an agent still deletes
    /// its rows.
    #[tokio::test]
    async fn metric_rows_survive_the_moves_to_agent_first_keys()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = std::env::temp_dir().join(format!("th-mig-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir)?;
        let opts = SqliteConnectOptions::from_str(&format!("sqlite://{}/m.db", dir.display()))?
            .create_if_missing(true)
            .foreign_keys(false);
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(opts)
            .await?;
        let migrator = sqlx::migrate!("./migrations/sqlite");
        migrator.run_to(8, &pool).await?;
        // The columns agents have had since 0002.
        let insert_agent = async |id: uuid::Uuid| {
            sqlx::query(
                "INSERT INTO agents (id, tenant_id, machine_id, hostname, os, arch, agent_version, \
                 tags, signing_pubkey, token_hash, created_at, ingest_interval_secs, \
                 inventory_interval_secs, allowed_actions) \
                 VALUES ($1, $2, $3, 'h', 'o', 'a', 'v', '[]', '00', $3, '2026-11-23T00:00:00Z', 10, 100, '[]')",
            )
            .bind(id)
            .bind(uuid::Uuid::new_v4())
            .bind(id.to_string())
            .execute(&pool)
            .await
        };
        let (a, b) = (uuid::Uuid::new_v4(), uuid::Uuid::new_v4());
        for (i, agent) in [a, b].iter().enumerate() {
            insert_agent(*agent).await?;
            sqlx::query("INSERT INTO metric_series (id, agent_id, name, labels) VALUES ($1, $2, 'cpu', '{}')")
                .bind(i as i64 + 1)
                .bind(agent)
                .execute(&pool)
                .await?;
        }
        for ts in 0..100_i64 {
            sqlx::query("INSERT INTO metric_points (series_id, ts, value) VALUES (1, $1, 1.5), (2, $1, 2.5)")
                .bind(ts)
                .execute(&pool)
                .await?;
        }
        for table in ["metric_rollup_1m", "metric_rollup_1h"] {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "INSERT INTO {table} (series_id, bucket, count, sum, min, max) \
                 VALUES (1, 0, 100, 150, 1.5, 1.5), (2, 0, 100, 250, 2.5, 2.5)"
            )))
            .execute(&pool)
            .await?;
        }
        migrator.run(&pool).await?;
        // Migration 0025 rebuilds a table with foreign keys off and turns them back on, as the
        // hub always runs; this test's agents have no tenant rows, so it keeps them off.
        sqlx::query("PRAGMA foreign_keys = OFF")
            .execute(&pool)
            .await?;
        // Migration 0039: one row per agent and timestamp, its samples as JSON.
        let per_agent: Vec<(uuid::Uuid, i64, i64, f64)> = sqlx::query_as(
            "SELECT a.id, json_extract(p.points, '$[0][0]') AS series, COUNT(*), \
             SUM(json_extract(p.points, '$[0][1]')) FROM metric_points p \
             JOIN agents a ON a.seq = p.agent_seq GROUP BY a.id ORDER BY series",
        )
        .fetch_all(&pool)
        .await?;
        assert_eq!(per_agent, vec![(a, 1, 100, 150.0), (b, 2, 100, 250.0)]);
        let one: String = sqlx::query_scalar(
            "SELECT points FROM metric_points WHERE ts = 7 ORDER BY agent_seq LIMIT 1",
        )
        .fetch_one(&pool)
        .await?;
        assert_eq!(one, "[[1,1.5]]");
        for table in ["metric_rollup_1m", "metric_rollup_1h"] {
            let rows: Vec<(uuid::Uuid, i64, String)> =
                sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT a.id, r.bucket, r.stats FROM {table} r \
                         JOIN agents a ON a.seq = r.agent_seq ORDER BY r.stats"
                )))
                .fetch_all(&pool)
                .await?;
            assert_eq!(
                rows,
                vec![
                    (a, 0, "[[1,100,150,1.5,1.5]]".to_owned()),
                    (b, 0, "[[2,100,250,2.5,2.5]]".to_owned())
                ],
                "{table}"
            );
        }
        insert_agent(uuid::Uuid::new_v4()).await?;
        let seqs: Vec<i64> = sqlx::query_scalar("SELECT seq FROM agents ORDER BY seq")
            .fetch_all(&pool)
            .await?;
        assert_eq!(
            seqs,
            vec![1, 2, 3],
            "numbers carried over, the new agent got the next"
        );
        sqlx::query("PRAGMA foreign_keys = ON")
            .execute(&pool)
            .await?;
        sqlx::query("DELETE FROM agents WHERE id = $1")
            .bind(a)
            .execute(&pool)
            .await?;
        let left: (i64, i64, i64) = sqlx::query_as(
            "SELECT (SELECT COUNT(*) FROM metric_points), (SELECT COUNT(*) FROM metric_rollup_1m), \
             (SELECT COUNT(*) FROM metric_rollup_1h)",
        )
        .fetch_one(&pool)
        .await?;
        assert_eq!(left, (100, 1, 1), "the deleted agent's rows went with it");
        pool.close().await;
        std::fs::remove_dir_all(&dir)?;
        Ok(())
    }

    /// Migration 0025 rebuilds `apps` on SQLite so a check may have no agent: every app and
    /// what hangs off it (checks, timeline, SLOs) survive, the foreign keys still cascade,
    /// and an agentless row is accepted.
    #[tokio::test]
    async fn apps_survive_the_rebuild_for_agentless_checks()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = std::env::temp_dir().join(format!("th-mig-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir)?;
        let opts = SqliteConnectOptions::from_str(&format!("sqlite://{}/m.db", dir.display()))?
            .create_if_missing(true)
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(opts)
            .await?;
        let migrator = sqlx::migrate!("./migrations/sqlite");
        migrator.run_to(24, &pool).await?;
        let (tenant, agent, app) = (
            uuid::Uuid::new_v4(),
            uuid::Uuid::new_v4(),
            uuid::Uuid::new_v4(),
        );
        sqlx::query(
            "INSERT INTO tenants (id, name, created_at) VALUES ($1, 't', '2026-11-26T00:00:00Z')",
        )
        .bind(tenant)
        .execute(&pool)
        .await?;
        sqlx::query(
            "INSERT INTO agents (id, tenant_id, machine_id, hostname, os, arch, agent_version, \
             tags, signing_pubkey, token_hash, created_at, ingest_interval_secs, \
             inventory_interval_secs, allowed_actions) \
             VALUES ($1, $2, 'm', 'h', 'o', 'a', 'v', '[]', '00', 'x', '2026-11-26T00:00:00Z', 10, 100, '[]')",
        )
        .bind(agent)
        .bind(tenant)
        .execute(&pool)
        .await?;
        sqlx::query(
            "INSERT INTO apps (id, tenant_id, agent_id, name, app_type, identifier, expected_state, \
             endpoint, interval_seconds, observed_state, created_at) \
             VALUES ($1, $2, $3, 'api', 'http', 'http://x/', 'running', 'http://x/', 30, 'running', '2026-11-26T00:00:00Z')",
        )
        .bind(app)
        .bind(tenant)
        .bind(agent)
        .execute(&pool)
        .await?;
        sqlx::query("INSERT INTO app_checks (app_id, checked_at, ok) VALUES ($1, '2026-11-26T00:00:01Z', TRUE)")
            .bind(app)
            .execute(&pool)
            .await?;
        sqlx::query(
            "INSERT INTO app_timeline (app_id, start_s, end_s, down) VALUES ($1, 0, 60, FALSE)",
        )
        .bind(app)
        .execute(&pool)
        .await?;
        migrator.run(&pool).await?;
        let kept: (String, i64, i64, i64) = sqlx::query_as(
            "SELECT a.observed_state, a.retries, (SELECT COUNT(*) FROM app_checks), \
             (SELECT COUNT(*) FROM app_timeline) FROM apps a WHERE a.id = $1",
        )
        .bind(app)
        .fetch_one(&pool)
        .await?;
        assert_eq!(kept, ("running".into(), 2, 1, 1));
        let fk: Vec<(String,)> = sqlx::query_as("SELECT \"table\" FROM pragma_foreign_key_check")
            .fetch_all(&pool)
            .await?;
        assert!(fk.is_empty(), "{fk:?}");
        sqlx::query(
            "INSERT INTO apps (id, tenant_id, agent_id, name, app_type, identifier, expected_state, created_at) \
             VALUES ($1, $2, NULL, 'db', 'tcp', 'tcp://db:5432', 'running', '2026-11-26T00:00:00Z')",
        )
        .bind(uuid::Uuid::new_v4())
        .bind(tenant)
        .execute(&pool)
        .await?;
        sqlx::query("DELETE FROM apps WHERE id = $1")
            .bind(app)
            .execute(&pool)
            .await?;
        let left: (i64, i64) = sqlx::query_as(
            "SELECT (SELECT COUNT(*) FROM app_checks), (SELECT COUNT(*) FROM app_timeline)",
        )
        .fetch_one(&pool)
        .await?;
        assert_eq!(left, (0, 0), "deleting an app still deletes its rows");
        pool.close().await;
        std::fs::remove_dir_all(&dir)?;
        Ok(())
    }
}
