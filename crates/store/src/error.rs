//! The store's one error type.

/// What can go wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A unique constraint refused the write; the string names the constraint or column.
    #[error("conflict: {0}")]
    Conflict(String),
    /// The URL names no supported engine.
    #[error("unsupported database URL (use sqlite://... or postgres://...)")]
    UnsupportedUrl,
    /// A value read from the database could not be understood.
    #[error("corrupt value in column {0}")]
    Corrupt(&'static str),
    /// The database was written by a newer Trusthub than this one (CONTRACT 31).
    #[error(
        "this database is at schema version {database}, newer than this Trusthub knows (up to {binary}): run the newer release, or restore a backup made before the upgrade"
    )]
    NewerSchema {
        /// The newest migration the database has applied.
        database: i64,
        /// The newest migration this binary has.
        binary: i64,
    },
    /// A backup or a restore cannot go on (the message says why and what to do).
    #[error("{0}")]
    Backup(String),
    /// Migrations failed.
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// Any other database error.
    #[error("database error: {0}")]
    Db(sqlx::Error),
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        if let sqlx::Error::Database(db) = &e
            && db.is_unique_violation()
        {
            return StoreError::Conflict(db.constraint().unwrap_or(db.message()).to_owned());
        }
        StoreError::Db(e)
    }
}

impl StoreError {
    /// The database gave up on the transaction for another's sake — a deadlock or a
    /// serialization failure on PostgreSQL, a busy database on SQLite — so the same
    /// transaction tried again may well succeed.
    pub fn is_transient(&self) -> bool {
        let StoreError::Db(sqlx::Error::Database(db)) = self else {
            return false;
        };
        matches!(
            db.code().as_deref(),
            Some("40P01" | "40001" | "5" | "6" | "517" | "262")
        )
    }
}

/// Result of store functions.
pub type StoreResult<T> = Result<T, StoreError>;
