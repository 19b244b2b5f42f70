//! The [`Db`] handle over SQLite or PostgreSQL, and the connection/transaction wrappers that
//! repository functions run on.

use crate::error::{StoreError, StoreResult};
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{PgConnection, PgPool, Postgres, Sqlite, SqliteConnection, SqlitePool, Transaction};
use std::str::FromStr;
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
    /// SQLite only: checkpoint the WAL from a background connection every second instead of
    /// in the writer's commits (a commit that triggers an automatic checkpoint copies pages to
    /// the database file and stalls every write queued behind it). For the long-running hub.
    pub background_checkpoint: bool,
}

impl Default for DbOptions {
    fn default() -> Self {
        DbOptions {
            max_connections: 10,
            acquire_timeout: Duration::from_secs(30),
            background_checkpoint: false,
        }
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
    },
    /// PostgreSQL.
    Postgres(PgPool),
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
            let write_opts = if opts.background_checkpoint {
                base.clone().pragma("wal_autocheckpoint", "0")
            } else {
                base.clone()
            };
            let write = SqlitePoolOptions::new()
                .max_connections(1)
                .acquire_timeout(opts.acquire_timeout)
                .connect_with(write_opts)
                .await?;
            if opts.background_checkpoint {
                let checkpointer = SqlitePoolOptions::new()
                    .max_connections(1)
                    .connect_with(base.clone())
                    .await?;
                let watched = write.clone();
                tokio::spawn(async move {
                    let mut tick = tokio::time::interval(Duration::from_secs(1));
                    while !watched.is_closed() {
                        tick.tick().await;
                        // PASSIVE: copies what it can without waiting for readers or the writer.
                        if let Err(e) = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
                            .execute(&checkpointer)
                            .await
                        {
                            tracing::warn!(error = %e, "WAL checkpoint failed");
                        }
                    }
                    checkpointer.close().await;
                });
            }
            let read = SqlitePoolOptions::new()
                .max_connections(opts.max_connections.max(1))
                .acquire_timeout(opts.acquire_timeout)
                .connect_with(base.read_only(true))
                .await?;
            Ok(Db::Sqlite { read, write })
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

    /// Brings the schema up to date. Safe when several processes start at once: sqlx takes an
    /// advisory lock on PostgreSQL, and SQLite has one writer.
    pub async fn migrate(&self) -> StoreResult<()> {
        match self {
            Db::Sqlite { write, .. } => sqlx::migrate!("./migrations/sqlite").run(write).await?,
            Db::Postgres(pool) => sqlx::migrate!("./migrations/postgres").run(pool).await?,
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
            Db::Sqlite { write, .. } => Tx::Sqlite(write.begin().await?),
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
            Db::Sqlite { read, write } => PoolStats {
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
            Db::Sqlite { read, write } => {
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
