//! Trusthub persistence: one schema on SQLite (the embedded default) and PostgreSQL.
//!
//! [`Db`] picks the engine from the URL scheme; both run the same migrations (one folder per
//! engine under `migrations/`) and the same SQL. Repository functions live in one module per
//! aggregate and take a [`TenantId`] wherever a record belongs to a tenant, so no query path
//! can forget the tenant. They run on anything that implements [`Exec`]: a pooled connection
//! for reads ([`Db::conn`]) or a transaction for writes ([`Db::begin`]).

mod db;
mod error;
mod prefetch;

pub mod audit;
pub mod backup;
pub mod leases;
pub mod meta;
pub mod networks;
pub mod rate_limits;

pub use db::{Backend, Conn, Db, DbOptions, Exec, Handle, PoolStats, Schema, Tx};
pub use error::{StoreError, StoreResult};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The id of a tenant; repository functions take it to scope every query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TenantId(pub Uuid);

impl std::fmt::Display for TenantId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// Runs `$body` with `$c` bound to the engine's own connection type, so the same SQL text is
/// compiled once per engine.
#[macro_export]
macro_rules! on {
    ($ex:expr, $c:ident => $body:expr) => {
        match $crate::Exec::handle($ex) {
            $crate::Handle::Sqlite($c) => $body,
            $crate::Handle::Postgres($c) => $body,
        }
    };
}

/// Deletes the rows of `table` whose `time` is before `before`, found through an index that
/// starts with `key` and goes on with `time`, one key at a time for each value `keys` (a
/// `SELECT` of one column) gives: the table is never scanned, so a purge that finds little
/// costs little however much the table holds. (Asked for by time alone, SQLite and PostgreSQL
/// both read the whole table, and SQLite holds its one writer while it does.) Rows must not
/// outlive their key (a foreign key that cascades).
pub async fn purge_by_key(
    ex: &mut impl Exec,
    table: &str,
    key: &str,
    keys: &str,
    time: &str,
    before: i64,
) -> StoreResult<u64> {
    let sql = match ex.handle() {
        Handle::Sqlite(_) => {
            format!("DELETE FROM {table} WHERE {key} IN ({keys}) AND {time} < $1")
        }
        Handle::Postgres(_) => {
            format!("DELETE FROM {table} WHERE {key} = ANY(ARRAY({keys})) AND {time} < $1")
        }
    };
    Ok(
        on!(ex, c => sqlx::query(sqlx::AssertSqlSafe(sql)).bind(before).execute(&mut *c).await?.rows_affected()),
    )
}

/// The `VALUES` list of a multi-row insert: `rows` tuples of `cols` numbered placeholders,
/// `($1, $2), ($3, $4)` — the same text on both engines.
pub fn values(rows: usize, cols: usize) -> String {
    let mut sql = String::with_capacity(rows * cols * 5);
    for r in 0..rows {
        if r > 0 {
            sql.push_str(", ");
        }
        sql.push('(');
        for c in 0..cols {
            if c > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&format!("${}", r * cols + c + 1));
        }
        sql.push(')');
    }
    sql
}

/// Most rows one multi-row insert carries (SQLite allows 32,766 parameters; PostgreSQL 65,535).
pub const ROWS_PER_INSERT: usize = 100;

#[cfg(test)]
mod values_tests {
    #[test]
    fn placeholders_are_numbered_row_by_row() {
        assert_eq!(super::values(2, 3), "($1, $2, $3), ($4, $5, $6)");
        assert_eq!(super::values(1, 1), "($1)");
        assert_eq!(super::values(0, 4), "");
    }
}
