//! Logical, portable backups (CONTRACT 31): a `.tar.gz` holding `manifest.json` and one JSON
//! Lines file per table (`tables/<name>.jsonl`, a JSON object per row), read in one
//! consistent snapshot (SQLite's read transaction, PostgreSQL's `REPEATABLE READ`) while the
//! hub keeps writing. Values are engine-neutral: numbers, strings (UUIDs in their text form,
//! timestamps in RFC 3339, JSON documents as their text), `true`/`false`, and binary values
//! as `{"$b64": "..."}`; a restore converts each to the target column's type, so a SQLite
//! hub's backup restores into PostgreSQL and back. Memory stays flat: rows stream to
//! temporary files and from the archive, a batch at a time.

use crate::{Backend, Db, Exec as _, StoreError, StoreResult};
use futures_util::TryStreamExt as _;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};
use sqlx::{Column as _, Row as _, TypeInfo as _, ValueRef as _};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead as _, Read as _, Write as _};
use std::path::{Path, PathBuf};

/// The archive format's version.
pub const FORMAT: i64 = 1;

/// `manifest.json`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The archive format ([`FORMAT`]).
    pub schema_version: i64,
    /// When the snapshot was taken (RFC 3339).
    pub created_at: String,
    /// `sqlite` or `postgres`: where it came from.
    pub engine: String,
    /// The newest migration of the database backed up.
    pub migration: i64,
    /// Each table, in the order a restore inserts them (a table after those it refers to).
    pub tables: BTreeMap<String, TableEntry>,
    /// The tables' restore order.
    pub order: Vec<String>,
    /// The first 16 hex characters of the SHA-256 of the hub key the sealed values need.
    pub key_fingerprint: Option<String>,
    /// Whether `key.txt` (the hub key) is in the archive.
    pub includes_key: bool,
}

/// One table in the manifest.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TableEntry {
    /// Rows.
    pub rows: u64,
    /// SHA-256 (hex) of its JSON Lines file.
    pub sha256: String,
}

fn fail(m: impl Into<String>) -> StoreError {
    StoreError::Backup(m.into())
}

fn io(what: &Path, e: std::io::Error) -> StoreError {
    fail(format!("{}: {e}", what.display()))
}

const B64: &str = "$b64";

fn bytes(b: &[u8]) -> Value {
    let mut m = Map::new();
    m.insert(B64.into(), Value::String(data_encoding::BASE64.encode(b)));
    Value::Object(m)
}

/// The tables to back up, parents before children (alphabetical among equals).
async fn tables_in_order(c: &mut crate::Conn) -> StoreResult<Vec<String>> {
    let (names, edges): (Vec<String>, Vec<(String, String)>) = match c {
        crate::Conn::Sqlite(c) => {
            let names: Vec<String> = sqlx::query_scalar(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' \
                 AND name <> '_sqlx_migrations' ORDER BY name",
            )
            .fetch_all(&mut **c)
            .await?;
            let mut edges = Vec::new();
            for t in &names {
                let parents: Vec<String> =
                    sqlx::query_scalar("SELECT \"table\" FROM pragma_foreign_key_list($1)")
                        .bind(t)
                        .fetch_all(&mut **c)
                        .await?;
                edges.extend(parents.into_iter().map(|p| (t.clone(), p)));
            }
            (names, edges)
        }
        crate::Conn::Postgres(c) => {
            let names: Vec<String> = sqlx::query_scalar(
                "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema() \
                 AND tablename <> '_sqlx_migrations' ORDER BY tablename",
            )
            .fetch_all(&mut **c)
            .await?;
            let edges: Vec<(String, String)> = sqlx::query_as(
                "SELECT conrelid::regclass::text, confrelid::regclass::text FROM pg_constraint \
                 WHERE contype = 'f' AND connamespace = current_schema()::regnamespace",
            )
            .fetch_all(&mut **c)
            .await?;
            (names, edges)
        }
    };
    let mut placed: Vec<String> = Vec::new();
    let mut left: BTreeSet<String> = names.into_iter().collect();
    while !left.is_empty() {
        let ready: Vec<String> = left
            .iter()
            .filter(|t| {
                edges
                    .iter()
                    .filter(|(child, parent)| child == *t && parent != *t)
                    .all(|(_, parent)| !left.contains(parent))
            })
            .cloned()
            .collect();
        // A cycle (none in this schema) is placed as it is rather than looping.
        let next = if ready.is_empty() {
            left.iter().take(1).cloned().collect()
        } else {
            ready
        };
        for t in next {
            left.remove(&t);
            placed.push(t);
        }
    }
    Ok(placed)
}

/// A SQLite row as JSON, by each value's storage class.
fn sqlite_row(row: &sqlx::sqlite::SqliteRow) -> StoreResult<Map<String, Value>> {
    let mut m = Map::new();
    for (i, col) in row.columns().iter().enumerate() {
        let raw = row.try_get_raw(i)?;
        let v = if raw.is_null() {
            Value::Null
        } else {
            match raw.type_info().name() {
                "INTEGER" => Value::from(row.try_get::<i64, _>(i)?),
                "REAL" => Value::from(row.try_get::<f64, _>(i)?),
                "BLOB" => bytes(&row.try_get::<Vec<u8>, _>(i)?),
                _ => Value::String(row.try_get::<String, _>(i)?),
            }
        };
        m.insert(col.name().to_owned(), v);
    }
    Ok(m)
}

/// A PostgreSQL row as JSON, by each column's type.
fn pg_row(row: &sqlx::postgres::PgRow) -> StoreResult<Map<String, Value>> {
    let mut m = Map::new();
    for (i, col) in row.columns().iter().enumerate() {
        let ty = col.type_info().name().to_owned();
        let v = match ty.as_str() {
            "UUID" => row
                .try_get::<Option<uuid::Uuid>, _>(i)?
                .map(|u| Value::String(u.to_string())),
            "TIMESTAMPTZ" => row
                .try_get::<Option<time::OffsetDateTime>, _>(i)?
                .map(|t| {
                    t.format(&time::format_description::well_known::Rfc3339)
                        .map(Value::String)
                        .map_err(|e| fail(e.to_string()))
                })
                .transpose()?,
            "BOOL" => row.try_get::<Option<bool>, _>(i)?.map(Value::from),
            "INT8" => row.try_get::<Option<i64>, _>(i)?.map(Value::from),
            "INT4" => row.try_get::<Option<i32>, _>(i)?.map(Value::from),
            "INT2" => row.try_get::<Option<i16>, _>(i)?.map(Value::from),
            "FLOAT8" => row.try_get::<Option<f64>, _>(i)?.map(Value::from),
            "FLOAT4" => row.try_get::<Option<f32>, _>(i)?.map(Value::from),
            "BYTEA" => row.try_get::<Option<Vec<u8>>, _>(i)?.map(|b| bytes(&b)),
            "JSON" | "JSONB" => row
                .try_get::<Option<sqlx::types::Json<Value>>, _>(i)?
                .map(|j| Value::String(j.0.to_string())),
            "TEXT" | "VARCHAR" | "NAME" | "BPCHAR" => {
                row.try_get::<Option<String>, _>(i)?.map(Value::String)
            }
            other => {
                return Err(fail(format!(
                    "column {} has type {other}, which backups do not carry",
                    col.name()
                )));
            }
        };
        m.insert(col.name().to_owned(), v.unwrap_or(Value::Null));
    }
    Ok(m)
}

/// One table's file being written: its rows, its hash.
struct TableFile {
    path: PathBuf,
    out: std::io::BufWriter<std::fs::File>,
    hash: Sha256,
    rows: u64,
}

impl TableFile {
    fn create(path: PathBuf) -> StoreResult<TableFile> {
        let f = std::fs::File::create(&path).map_err(|e| io(&path, e))?;
        Ok(TableFile {
            out: std::io::BufWriter::new(f),
            path,
            hash: Sha256::new(),
            rows: 0,
        })
    }

    fn row(&mut self, m: Map<String, Value>) -> StoreResult<()> {
        let mut line = serde_json::to_vec(&Value::Object(m)).map_err(|e| fail(e.to_string()))?;
        line.push(b'\n');
        self.hash.update(&line);
        self.rows += 1;
        self.out.write_all(&line).map_err(|e| io(&self.path, e))
    }

    fn finish(mut self) -> StoreResult<(PathBuf, TableEntry)> {
        self.out.flush().map_err(|e| io(&self.path, e))?;
        let sha256 = data_encoding::HEXLOWER.encode(&self.hash.finalize());
        Ok((
            self.path,
            TableEntry {
                rows: self.rows,
                sha256,
            },
        ))
    }
}

/// What goes with a backup besides the tables.
#[derive(Debug, Clone, Default)]
pub struct KeyInfo {
    /// The hub key's fingerprint ([`key_fingerprint`]).
    pub fingerprint: Option<String>,
    /// The hub key itself (hex), only when it is to be included.
    pub include: Option<String>,
}

/// The fingerprint a manifest records for a hub key (hex): the first 16 hex characters of
/// the SHA-256 of its 32 bytes.
pub fn key_fingerprint(key_hex: &str) -> Option<String> {
    let bytes = data_encoding::HEXLOWER_PERMISSIVE
        .decode(key_hex.trim().as_bytes())
        .ok()?;
    Some(data_encoding::HEXLOWER.encode(&Sha256::digest(&bytes))[..16].to_owned())
}

/// Backs `db` up into `out` (a `.tar.gz`), in one consistent snapshot, while it keeps
/// serving. The manifest it wrote.
pub async fn backup(db: &Db, out: &Path, key: &KeyInfo) -> StoreResult<Manifest> {
    let schema = db.schema().await?;
    let migration = schema
        .database
        .ok_or_else(|| fail("the database has no schema yet: nothing to back up"))?;
    let dir = out.with_extension("parts");
    std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
    let result = snapshot(db, &dir).await;
    let archive = match result {
        Ok((order, files, created_at)) => {
            let manifest = Manifest {
                schema_version: FORMAT,
                created_at,
                engine: match db.backend() {
                    Backend::Sqlite => "sqlite".into(),
                    Backend::Postgres => "postgres".into(),
                },
                migration,
                tables: files
                    .iter()
                    .map(|(t, _, e)| (t.clone(), e.clone()))
                    .collect(),
                order,
                key_fingerprint: key.fingerprint.clone(),
                includes_key: key.include.is_some(),
            };
            write_archive(out, &manifest, &files, key.include.as_deref()).map(|()| manifest)
        }
        Err(e) => Err(e),
    };
    let _ = std::fs::remove_dir_all(&dir);
    archive
}

type Files = Vec<(String, PathBuf, TableEntry)>;

/// Every table to its file, in one read transaction; the order, the files and the instant.
async fn snapshot(db: &Db, dir: &Path) -> StoreResult<(Vec<String>, Files, String)> {
    let mut c = db.conn().await?;
    let begin = match db.backend() {
        Backend::Sqlite => "BEGIN",
        Backend::Postgres => "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
    };
    crate::on!(&mut c, c => sqlx::query(begin).execute(&mut *c).await?.rows_affected());
    let created_at = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .map_err(|e| fail(e.to_string()))?;
    let order = tables_in_order(&mut c).await?;
    let mut files = Vec::new();
    for t in &order {
        let mut file = TableFile::create(dir.join(format!("{t}.jsonl")))?;
        let sql = format!("SELECT * FROM \"{t}\"");
        match &mut c {
            crate::Conn::Sqlite(c) => {
                let mut rows = sqlx::query(sqlx::AssertSqlSafe(sql)).fetch(&mut **c);
                while let Some(r) = rows.try_next().await? {
                    file.row(sqlite_row(&r)?)?;
                }
            }
            crate::Conn::Postgres(c) => {
                let mut rows = sqlx::query(sqlx::AssertSqlSafe(sql)).fetch(&mut **c);
                while let Some(r) = rows.try_next().await? {
                    file.row(pg_row(&r)?)?;
                }
            }
        }
        let (path, entry) = file.finish()?;
        files.push((t.clone(), path, entry));
    }
    crate::on!(&mut c, c => sqlx::query("COMMIT").execute(&mut *c).await?.rows_affected());
    Ok((order, files, created_at))
}

fn write_archive(
    out: &Path,
    manifest: &Manifest,
    files: &Files,
    key: Option<&str>,
) -> StoreResult<()> {
    let tmp = out.with_extension("partial");
    let f = std::fs::File::create(&tmp).map_err(|e| io(&tmp, e))?;
    let gz = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
    let mut tar = tar::Builder::new(gz);
    let add = |tar: &mut tar::Builder<_>, name: &str, data: &[u8], mode: u32| {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(mode);
        h.set_cksum();
        tar.append_data(&mut h, name, data).map_err(|e| io(out, e))
    };
    let json = serde_json::to_vec_pretty(manifest).map_err(|e| fail(e.to_string()))?;
    add(&mut tar, "manifest.json", &json, 0o600)?;
    if let Some(k) = key {
        add(
            &mut tar,
            "key.txt",
            format!("{}\n", k.trim()).as_bytes(),
            0o600,
        )?;
    }
    for (t, path, _) in files {
        let mut f = std::fs::File::open(path).map_err(|e| io(path, e))?;
        tar.append_file(format!("tables/{t}.jsonl"), &mut f)
            .map_err(|e| io(out, e))?;
    }
    let gz = tar.into_inner().map_err(|e| io(out, e))?;
    let f = gz.finish().map_err(|e| io(out, e))?;
    f.sync_all().map_err(|e| io(out, e))?;
    std::fs::rename(&tmp, out).map_err(|e| io(out, e))?;
    // Owner-only: the archive holds password hashes and sealed secrets (and maybe the key).
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(out, std::fs::Permissions::from_mode(0o600)).map_err(|e| io(out, e))
}

/// Walks an archive: the manifest first, then each member to `each(name, reader)`.
fn walk(
    file: &Path,
    mut each: impl FnMut(&Manifest, &str, &mut dyn std::io::Read) -> StoreResult<()>,
) -> StoreResult<Manifest> {
    let f = std::fs::File::open(file).map_err(|e| io(file, e))?;
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(f));
    let mut manifest: Option<Manifest> = None;
    for entry in tar.entries().map_err(|e| io(file, e))? {
        let mut entry = entry.map_err(|e| io(file, e))?;
        let name = entry
            .path()
            .map_err(|e| io(file, e))?
            .to_string_lossy()
            .into_owned();
        match &manifest {
            None if name == "manifest.json" => {
                let mut text = String::new();
                entry
                    .by_ref()
                    .take(16 << 20)
                    .read_to_string(&mut text)
                    .map_err(|e| io(file, e))?;
                let m: Manifest =
                    serde_json::from_str(&text).map_err(|e| fail(format!("manifest.json: {e}")))?;
                if m.schema_version != FORMAT {
                    return Err(fail(format!(
                        "manifest.json: archive format {} (this Trusthub reads {FORMAT})",
                        m.schema_version
                    )));
                }
                manifest = Some(m);
            }
            None => {
                return Err(fail(format!(
                    "{name}: the archive must open with manifest.json"
                )));
            }
            Some(m) => each(m, &name, &mut entry)?,
        }
    }
    manifest.ok_or_else(|| fail("no manifest.json: not a Trusthub backup"))
}

/// Checks every member of an archive against its manifest (rows and SHA-256); the manifest.
pub fn verify(file: &Path) -> StoreResult<Manifest> {
    let mut seen = BTreeSet::new();
    let manifest = walk(file, |m, name, r| {
        if name == "key.txt" && m.includes_key {
            return Ok(());
        }
        let Some(t) = name
            .strip_prefix("tables/")
            .and_then(|n| n.strip_suffix(".jsonl"))
        else {
            return Err(fail(format!("{name}: not a member of a Trusthub backup")));
        };
        let Some(entry) = m.tables.get(t) else {
            return Err(fail(format!("{name}: a table the manifest does not list")));
        };
        let mut hash = Sha256::new();
        let mut rows = 0u64;
        let mut buf = std::io::BufReader::new(r);
        let mut line = Vec::new();
        loop {
            line.clear();
            let n = buf
                .read_until(b'\n', &mut line)
                .map_err(|e| fail(format!("{name}: {e}")))?;
            if n == 0 {
                break;
            }
            hash.update(&line);
            rows += 1;
        }
        let sha = data_encoding::HEXLOWER.encode(&hash.finalize());
        if sha != entry.sha256 || rows != entry.rows {
            return Err(fail(format!(
                "{name}: {rows} rows with SHA-256 {sha}, the manifest says {} rows with {}: the archive is damaged",
                entry.rows, entry.sha256
            )));
        }
        seen.insert(t.to_owned());
        Ok(())
    })?;
    if let Some(missing) = manifest.tables.keys().find(|t| !seen.contains(*t)) {
        return Err(fail(format!("tables/{missing}.jsonl is missing")));
    }
    Ok(manifest)
}

/// The hub key a backup carries (`--include-key`), if any.
pub fn key_of(file: &Path) -> StoreResult<Option<String>> {
    let mut key = None;
    walk(file, |_, name, r| {
        if name == "key.txt" {
            let mut s = String::new();
            r.take(256)
                .read_to_string(&mut s)
                .map_err(|e| fail(e.to_string()))?;
            key = Some(s.trim().to_owned());
        }
        Ok(())
    })?;
    Ok(key)
}

/// Each column's type in the target (PostgreSQL `data_type`, SQLite's declared type).
async fn column_types(db: &Db, table: &str) -> StoreResult<BTreeMap<String, String>> {
    let mut c = db.conn().await?;
    let rows: Vec<(String, String)> = match &mut c {
        crate::Conn::Sqlite(c) => {
            sqlx::query_as("SELECT name, upper(type) FROM pragma_table_info($1)")
                .bind(table)
                .fetch_all(&mut **c)
                .await?
        }
        crate::Conn::Postgres(c) => {
            sqlx::query_as(
                "SELECT column_name::text, data_type::text FROM information_schema.columns \
                 WHERE table_schema = current_schema() AND table_name = $1",
            )
            .bind(table)
            .fetch_all(&mut **c)
            .await?
        }
    };
    Ok(rows.into_iter().collect())
}

/// A value of the archive as the bytes it stands for (`{"$b64"}`, or a UUID's text).
fn as_bytes(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::Object(m) => m
            .get(B64)
            .and_then(Value::as_str)
            .and_then(|s| data_encoding::BASE64.decode(s.as_bytes()).ok()),
        Value::String(s) => uuid::Uuid::parse_str(s).ok().map(|u| u.as_bytes().to_vec()),
        _ => None,
    }
}

fn as_text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

fn as_i64(v: &Value) -> Option<i64> {
    match v {
        Value::Bool(b) => Some(i64::from(*b)),
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

fn bad(table: &str, col: &str, ty: &str, v: &Value) -> StoreError {
    fail(format!(
        "{table}.{col}: {} cannot become {ty}",
        v.to_string().chars().take(80).collect::<String>()
    ))
}

/// Binds `v` as the PostgreSQL type `ty`.
fn bind_pg<'q>(
    q: sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>,
    table: &str,
    col: &str,
    ty: &str,
    v: &Value,
) -> StoreResult<sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>> {
    let null = v.is_null();
    let err = || bad(table, col, ty, v);
    Ok(match ty {
        "uuid" => q.bind(if null {
            None
        } else {
            let b = as_bytes(v).ok_or_else(err)?;
            Some(uuid::Uuid::from_slice(&b).map_err(|_| err())?)
        }),
        "timestamp with time zone" => q.bind(if null {
            None
        } else {
            let s = v.as_str().ok_or_else(err)?;
            Some(
                time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
                    .map_err(|_| err())?,
            )
        }),
        "boolean" => q.bind(if null {
            None
        } else {
            Some(
                v.as_bool()
                    .or_else(|| as_i64(v).map(|n| n != 0))
                    .ok_or_else(err)?,
            )
        }),
        "bigint" => q.bind(if null {
            None
        } else {
            Some(as_i64(v).ok_or_else(err)?)
        }),
        "integer" => q.bind(if null {
            None
        } else {
            Some(i32::try_from(as_i64(v).ok_or_else(err)?).map_err(|_| err())?)
        }),
        "smallint" => q.bind(if null {
            None
        } else {
            Some(i16::try_from(as_i64(v).ok_or_else(err)?).map_err(|_| err())?)
        }),
        "double precision" | "real" => q.bind(if null {
            None
        } else {
            Some(v.as_f64().ok_or_else(err)?)
        }),
        "bytea" => q.bind(if null {
            None
        } else {
            Some(as_bytes(v).ok_or_else(err)?)
        }),
        "json" | "jsonb" => q.bind(if null {
            None
        } else {
            let doc = match v {
                Value::String(s) => serde_json::from_str(s).map_err(|_| err())?,
                other => other.clone(),
            };
            Some(sqlx::types::Json(doc))
        }),
        _ => q.bind(as_text(v)),
    })
}

/// Binds `v` as SQLite stores a value of the declared type `ty` (as this project writes it:
/// UUIDs as 16 bytes, timestamps as RFC 3339 text, booleans as 0/1).
fn bind_sqlite<'q>(
    q: sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments>,
    table: &str,
    col: &str,
    ty: &str,
    v: &Value,
) -> StoreResult<sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments>> {
    let err = || bad(table, col, ty, v);
    Ok(match (ty, v) {
        (_, Value::Null) => q.bind(None::<String>),
        ("BLOB", v) => q.bind(as_bytes(v).ok_or_else(err)?),
        ("INTEGER" | "BIGINT" | "BOOLEAN", v) => q.bind(as_i64(v).ok_or_else(err)?),
        ("REAL", v) => q.bind(v.as_f64().ok_or_else(err)?),
        (_, Value::Object(m)) if m.contains_key(B64) => q.bind(as_bytes(v).ok_or_else(err)?),
        (_, Value::Number(n)) if n.is_i64() => q.bind(n.as_i64()),
        (_, Value::Number(n)) => q.bind(n.as_f64()),
        (_, Value::Bool(b)) => q.bind(i64::from(*b)),
        (_, v) => q.bind(as_text(v)),
    })
}

/// Inserts `rows` (JSON objects) into `table` of `tx`.
async fn insert(
    tx: &mut crate::Tx,
    table: &str,
    types: &BTreeMap<String, String>,
    rows: &[Map<String, Value>],
) -> StoreResult<()> {
    let Some(first) = rows.first() else {
        return Ok(());
    };
    let cols: Vec<&String> = first.keys().collect();
    for c in &cols {
        if !types.contains_key(*c) {
            return Err(fail(format!(
                "{table}.{c}: the target has no such column (is it the same schema version?)"
            )));
        }
    }
    let list = cols
        .iter()
        .map(|c| format!("\"{c}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = format!(
        "INSERT INTO \"{table}\" ({list}) VALUES {}",
        crate::values(rows.len(), cols.len())
    );
    match tx.handle() {
        crate::Handle::Postgres(c) => {
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
            for r in rows {
                for col in &cols {
                    let v = r.get(*col).unwrap_or(&Value::Null);
                    q = bind_pg(q, table, col, &types[*col], v)?;
                }
            }
            q.execute(&mut *c).await?;
        }
        crate::Handle::Sqlite(c) => {
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
            for r in rows {
                for col in &cols {
                    let v = r.get(*col).unwrap_or(&Value::Null);
                    q = bind_sqlite(q, table, col, &types[*col], v)?;
                }
            }
            q.execute(&mut *c).await?;
        }
    }
    Ok(())
}

/// Whether any table of `db` holds a row: the first such, with its count.
async fn first_nonempty(db: &Db) -> StoreResult<Option<(String, i64)>> {
    let mut c = db.conn().await?;
    for t in tables_in_order(&mut c).await? {
        let sql = format!("SELECT COUNT(*) FROM \"{t}\"");
        let n: i64 = crate::on!(&mut c, c => sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).fetch_one(&mut *c).await?);
        if n > 0 {
            return Ok(Some((t, n)));
        }
    }
    Ok(None)
}

/// The self-reference of a table (`topology_zones.parent_id`), if it has one.
async fn self_reference(db: &Db, table: &str) -> StoreResult<Option<(String, String)>> {
    let mut c = db.conn().await?;
    let r: Option<(String, String)> = match &mut c {
        crate::Conn::Sqlite(c) => {
            sqlx::query_as(
                "SELECT \"from\", \"to\" FROM pragma_foreign_key_list($1) WHERE \"table\" = $1",
            )
            .bind(table)
            .fetch_optional(&mut **c)
            .await?
        }
        crate::Conn::Postgres(c) => {
            sqlx::query_as(
                "SELECT a.attname::text, b.attname::text FROM pg_constraint k \
             JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = k.conkey[1] \
             JOIN pg_attribute b ON b.attrelid = k.confrelid AND b.attnum = k.confkey[1] \
             WHERE k.contype = 'f' AND k.conrelid = $1::regclass AND k.confrelid = $1::regclass",
            )
            .bind(table)
            .fetch_optional(&mut **c)
            .await?
        }
    };
    Ok(r)
}

/// Restores an archive into `db`, which must be empty (no row in any table): checked
/// first, the schema brought to the backup's migration, each table inserted in the
/// manifest's order (a batch at a time; a table referring to itself parents first), the
/// serial counters moved past the restored ids, then the schema migrated to this release.
/// Every table's row count is compared with the manifest at the end.
pub async fn restore(db: &Db, from: &Path) -> StoreResult<Manifest> {
    let manifest = verify(from)?;
    let schema = db.schema().await?;
    if manifest.migration > schema.binary {
        return Err(StoreError::NewerSchema {
            database: manifest.migration,
            binary: schema.binary,
        });
    }
    if schema.database.is_some()
        && let Some((t, n)) = first_nonempty(db).await?
    {
        return Err(fail(format!(
            "the target database is not empty (table {t} has {n} rows): restore into a new, empty database"
        )));
    }
    if schema.database.is_some_and(|v| v > manifest.migration) {
        return Err(fail(format!(
            "the target database is at schema {} and the backup at {}: restore into a new, empty database",
            schema.database.unwrap_or_default(),
            manifest.migration
        )));
    }
    db.migrate_to(manifest.migration).await?;
    let mut types = BTreeMap::new();
    let mut selfrefs = BTreeMap::new();
    for t in &manifest.order {
        types.insert(t.clone(), column_types(db, t).await?);
        if let Some(r) = self_reference(db, t).await? {
            selfrefs.insert(t.clone(), r);
        }
    }
    // The archive's members come in the manifest's order; each table in its transaction.
    let rt = tokio::runtime::Handle::current();
    let (tx_rows, mut rx_rows) =
        tokio::sync::mpsc::channel::<StoreResult<(String, Vec<Map<String, Value>>, bool)>>(4);
    let path = from.to_owned();
    let reader = tokio::task::spawn_blocking(move || {
        let sent = walk(&path, |_, name, r| {
            let Some(t) = name
                .strip_prefix("tables/")
                .and_then(|n| n.strip_suffix(".jsonl"))
            else {
                return Ok(());
            };
            let mut batch = Vec::new();
            for line in std::io::BufReader::new(r).lines() {
                let line = line.map_err(|e| fail(format!("{name}: {e}")))?;
                let row: Map<String, Value> =
                    serde_json::from_str(&line).map_err(|e| fail(format!("{name}: {e}")))?;
                batch.push(row);
                if batch.len() >= 500 {
                    let b = std::mem::take(&mut batch);
                    rt.block_on(tx_rows.send(Ok((t.to_owned(), b, false))))
                        .map_err(|_| fail("the restore stopped"))?;
                }
            }
            rt.block_on(tx_rows.send(Ok((t.to_owned(), batch, true))))
                .map_err(|_| fail("the restore stopped"))?;
            Ok(())
        });
        if let Err(e) = sent {
            let _ = rt.block_on(tx_rows.send(Err(e)));
        }
    });
    let mut tx = db.begin().await?;
    let mut held: BTreeMap<String, Vec<Map<String, Value>>> = BTreeMap::new();
    while let Some(msg) = rx_rows.recv().await {
        let (t, rows, last) = msg?;
        let Some(ty) = types.get(&t) else {
            return Err(fail(format!(
                "tables/{t}.jsonl: not a table of this schema"
            )));
        };
        if let Some((from_col, to_col)) = selfrefs.get(&t) {
            // Held until the table is whole, then inserted parents first.
            held.entry(t.clone()).or_default().extend(rows);
            if last {
                let mut left = held.remove(&t).unwrap_or_default();
                let mut done: BTreeSet<String> = BTreeSet::new();
                while !left.is_empty() {
                    let (ready, wait): (Vec<_>, Vec<_>) = left.into_iter().partition(|r| {
                        r.get(from_col)
                            .is_none_or(|p| p.is_null() || done.contains(&p.to_string()))
                    });
                    if ready.is_empty() {
                        return Err(fail(format!(
                            "{t}: rows refer to parents that are not there"
                        )));
                    }
                    for chunk in ready.chunks(200) {
                        insert(&mut tx, &t, ty, chunk).await?;
                    }
                    done.extend(
                        ready
                            .iter()
                            .filter_map(|r| r.get(to_col).map(|v| v.to_string())),
                    );
                    left = wait;
                }
            }
        } else {
            let cols = rows.first().map_or(1, |r| r.len().max(1));
            for chunk in rows.chunks((30_000 / cols).clamp(1, 500)) {
                insert(&mut tx, &t, ty, chunk).await?;
            }
        }
        if last {
            tx.commit().await?;
            tx = db.begin().await?;
        }
    }
    tx.commit().await?;
    reader.await.map_err(|e| fail(e.to_string()))?;
    if db.backend() == Backend::Postgres {
        reset_sequences(db).await?;
    }
    db.migrate().await?;
    for (t, entry) in &manifest.tables {
        let sql = format!("SELECT COUNT(*) FROM \"{t}\"");
        let mut c = db.conn().await?;
        let n: i64 = crate::on!(&mut c, c => sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).fetch_one(&mut *c).await?);
        if u64::try_from(n).unwrap_or_default() != entry.rows {
            return Err(fail(format!(
                "{t}: {n} rows after the restore, the manifest says {}",
                entry.rows
            )));
        }
    }
    Ok(manifest)
}

/// PostgreSQL's serial counters past the restored ids.
async fn reset_sequences(db: &Db) -> StoreResult<()> {
    let mut c = db.conn().await?;
    let crate::Conn::Postgres(pg) = &mut c else {
        return Ok(());
    };
    let serials: Vec<(String, String)> = sqlx::query_as(
        "SELECT table_name::text, column_name::text FROM information_schema.columns \
         WHERE table_schema = current_schema() AND (column_default LIKE 'nextval(%' OR is_identity = 'YES')",
    )
    .fetch_all(&mut **pg)
    .await?;
    for (t, col) in serials {
        let sql = format!(
            "SELECT setval(pg_get_serial_sequence('\"{t}\"', '{col}'), \
             COALESCE((SELECT MAX(\"{col}\") FROM \"{t}\"), 0) + 1, false)"
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(&mut **pg)
            .await?;
    }
    Ok(())
}
