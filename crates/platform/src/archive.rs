//! The one archive reader of every upload and import (CONTRACT 18): a folder, a `.zip`, a
//! `.tar.gz` or a `.json` file, read as a stream with every size bounded while it is read.
//!
//! - A nested archive is read one level deep (an ecosystem's `all.zip` inside an upload or a
//!   tarball); an archive inside that is refused, naming the entry ([`ArchiveError::Nested`]).
//! - Decompressed bytes are counted as they come out of the decompressor, against the whole
//!   read's budget ([`Limits::total_bytes`]) and each record's ([`Limits::record_bytes`]); the
//!   first byte over a bound stops the read ([`ArchiveError::TooLarge`]). An entry that yields
//!   more bytes than its header declares is a malformed archive.
//! - Nothing is held in memory but the record being handed on: an uploaded body and a nested
//!   archive are spooled to a temporary file (mode 600, removed when dropped), which the zip
//!   reader seeks in.
//! - Each record's JSON passes [`trusthub_core::json_guard`] (depth, value count, duplicate
//!   keys) before anyone parses it.

use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use trusthub_core::json_guard;

/// The bounds of one read.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Decompressed bytes in all (`TRUSTHUB_IMPORT_MAX_BYTES`, default 4 GiB).
    pub total_bytes: u64,
    /// Bytes of one JSON record (64 MiB).
    pub record_bytes: u64,
    /// Values in one JSON record (containers, strings, numbers and literals): the bound on
    /// the structure a record parses into, which its byte size alone does not give.
    pub record_values: u64,
}

/// The default bound of all decompressed bytes of one read.
pub const DEFAULT_TOTAL_BYTES: u64 = 4 * 1024 * 1024 * 1024;
/// The bound of one JSON record.
pub const RECORD_BYTES: u64 = 64 * 1024 * 1024;
/// The bound of values in one record (real OSV records hold at most a few tens of thousands).
pub const RECORD_VALUES: u64 = 500_000;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            total_bytes: DEFAULT_TOTAL_BYTES,
            record_bytes: RECORD_BYTES,
            record_values: RECORD_VALUES,
        }
    }
}

impl Limits {
    /// The default bounds with `total_bytes` from the settings.
    pub fn with_total(total_bytes: u64) -> Limits {
        Limits {
            total_bytes,
            ..Limits::default()
        }
    }
}

/// Why a read stopped.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// A bound was passed (413).
    #[error("{0}")]
    TooLarge(String),
    /// An archive nested deeper than one level (422 naming the entry).
    #[error(
        "{0}: an archive nested more than one level deep (only an all.zip inside the upload is read)"
    )]
    Nested(String),
    /// Not an archive, a damaged one, or an entry larger than its header says (400).
    #[error("{0}")]
    Malformed(String),
    /// The source cannot be read, or its consumer stopped (the consumer's message).
    #[error("{0}")]
    Io(String),
}

/// A temporary file removed when dropped, created with mode 600.
#[derive(Debug)]
pub struct TempFile {
    path: PathBuf,
    file: std::fs::File,
}

impl TempFile {
    /// A new empty file in the system's temporary folder.
    pub fn new(hint: &str) -> std::io::Result<TempFile> {
        let path = std::env::temp_dir().join(format!(
            "trusthub-{hint}-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        let mut options = std::fs::OpenOptions::new();
        options.read(true).write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let file = options.open(&path)?;
        Ok(TempFile { path, file })
    }

    /// The file, rewound to its start.
    pub fn rewound(&mut self) -> std::io::Result<&mut std::fs::File> {
        self.file.flush()?;
        self.file.rewind()?;
        Ok(&mut self.file)
    }

    /// The file for writing.
    pub fn file(&mut self) -> &mut std::fs::File {
        &mut self.file
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Writes an HTTP body to a temporary file, refusing it at the first byte past `max`.
pub async fn spool_body(
    body: axum::body::Body,
    max: u64,
) -> Result<TempFile, crate::error::ApiError> {
    use crate::error::ApiError;
    use futures_util::StreamExt;
    let internal = |e: std::io::Error| ApiError::Internal(format!("spooling an upload: {e}"));
    let mut tmp = TempFile::new("upload").map_err(internal)?;
    let mut stream = body.into_data_stream();
    let mut written: u64 = 0;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk
            .map_err(|e| ApiError::BadRequest(format!("the upload could not be read: {e}")))?;
        written += chunk.len() as u64;
        if written > max {
            return Err(ApiError::TooLarge(format!(
                "the upload is larger than {max} bytes"
            )));
        }
        tmp.file().write_all(&chunk).map_err(internal)?;
    }
    Ok(tmp)
}

/// One read of a source, with its budget.
/// `emit` receives each JSON record: its name (`upload!PyPI/all.zip!GHSA-x.json`) and bytes.
pub struct Reader<F> {
    limits: Limits,
    used: u64,
    emit: F,
}

impl<F: FnMut(String, Vec<u8>) -> Result<(), ArchiveError>> Reader<F> {
    /// A reader handing records to `emit`.
    pub fn new(limits: Limits, emit: F) -> Reader<F> {
        Reader {
            limits,
            used: 0,
            emit,
        }
    }

    /// Decompressed bytes read so far.
    pub fn bytes_read(&self) -> u64 {
        self.used
    }

    /// Reads a folder (recursively; symbolic links are not followed), a `.zip`, a
    /// `.tar.gz`/`.tgz` or one `.json` file.
    pub fn source(&mut self, source: &Path) -> Result<(), ArchiveError> {
        let name = source.to_string_lossy().to_string();
        let meta =
            std::fs::metadata(source).map_err(|e| ArchiveError::Io(format!("{name}: {e}")))?;
        if meta.is_dir() {
            self.walk(source)
        } else if name.ends_with(".zip") {
            let f = open(source)?;
            self.zip(f, &name, 0)
        } else if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
            let f = open(source)?;
            self.tar_gz(f, &name)
        } else if name.ends_with(".json") {
            let f = open(source)?;
            let bytes = self.record(f, &name, Some(meta.len()))?;
            (self.emit)(name, bytes)
        } else {
            Err(ArchiveError::Io(format!(
                "{name}: expected a folder, a .zip, a .tar.gz or a .json file"
            )))
        }
    }

    fn walk(&mut self, dir: &Path) -> Result<(), ArchiveError> {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .map_err(|e| ArchiveError::Io(format!("{}: {e}", dir.display())))?
            .filter_map(Result::ok)
            .collect();
        entries.sort_by_key(|e| e.path());
        for entry in entries {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let name = path.to_string_lossy().to_string();
            if kind.is_dir() {
                self.walk(&path)?;
            } else if !kind.is_file() {
                continue;
            } else if name.ends_with(".json") {
                let f = open(&path)?;
                let len = f.metadata().ok().map(|m| m.len());
                let bytes = self.record(f, &name, len)?;
                (self.emit)(name, bytes)?;
            } else if name.ends_with(".zip") {
                let f = open(&path)?;
                self.zip(f, &name, 0)?;
            }
        }
        Ok(())
    }

    /// The records of a zip; `depth` 0 is a zip given to the reader, 1 a zip inside one.
    pub fn zip<R: Read + Seek>(
        &mut self,
        reader: R,
        label: &str,
        depth: u8,
    ) -> Result<(), ArchiveError> {
        let mut zip = zip::ZipArchive::new(std::io::BufReader::new(reader))
            .map_err(|e| ArchiveError::Malformed(format!("{label}: not a zip: {e}")))?;
        for i in 0..zip.len() {
            let entry = zip
                .by_index(i)
                .map_err(|e| ArchiveError::Malformed(format!("{label}: entry {i}: {e}")))?;
            if entry.is_dir() {
                continue;
            }
            let inner = entry
                .name()
                .map(|n| n.into_owned())
                .map_err(|e| e.to_string())
                .map_err(|e| ArchiveError::Malformed(format!("{label}: entry {i}: {e}")))?;
            let name = format!("{label}!{inner}");
            let declared = Some(entry.size());
            if inner.ends_with(".json") {
                let bytes = self.record(entry, &name, declared)?;
                (self.emit)(name, bytes)?;
            } else if is_archive(&inner) {
                if depth >= 1 {
                    return Err(nested(&name));
                }
                let mut tmp = self.spool(entry, &name, declared)?;
                let file = tmp
                    .rewound()
                    .map_err(|e| ArchiveError::Io(format!("{name}: {e}")))?;
                if inner.ends_with(".zip") {
                    self.zip(file, &name, depth + 1)?;
                } else {
                    // A tarball inside a zip: no deeper archive may follow.
                    return Err(nested(&name));
                }
            }
        }
        Ok(())
    }

    /// The records of a gzip-compressed tarball (one level of zips inside it).
    pub fn tar_gz<R: Read>(&mut self, reader: R, label: &str) -> Result<(), ArchiveError> {
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(reader));
        let entries = archive
            .entries()
            .map_err(|e| ArchiveError::Malformed(format!("{label}: not a tar.gz: {e}")))?;
        for entry in entries {
            let entry = entry.map_err(|e| ArchiveError::Malformed(format!("{label}: {e}")))?;
            if !entry.header().entry_type().is_file() {
                continue;
            }
            let path = entry
                .path()
                .map(|p| p.to_string_lossy().to_string())
                .unwrap_or_default();
            let name = format!("{label}!{path}");
            let declared = entry.header().size().ok();
            if path.ends_with(".json") {
                let bytes = self.record(entry, &name, declared)?;
                (self.emit)(name, bytes)?;
            } else if path.ends_with(".zip") {
                let mut tmp = self.spool(entry, &name, declared)?;
                let file = tmp
                    .rewound()
                    .map_err(|e| ArchiveError::Io(format!("{name}: {e}")))?;
                self.zip(file, &name, 1)?;
            } else if is_archive(&path) {
                return Err(nested(&name));
            }
        }
        Ok(())
    }

    /// Counts `n` more decompressed bytes against the whole read.
    fn spend(&mut self, n: u64, name: &str) -> Result<(), ArchiveError> {
        self.used += n;
        if self.used > self.limits.total_bytes {
            return Err(ArchiveError::TooLarge(format!(
                "{name}: the import decompresses to more than {} bytes (TRUSTHUB_IMPORT_MAX_BYTES)",
                self.limits.total_bytes
            )));
        }
        Ok(())
    }

    /// Copies `from` through a fixed buffer into `to`, counting and bounding as it goes.
    fn copy(
        &mut self,
        mut from: impl Read,
        to: &mut dyn Write,
        name: &str,
        declared: Option<u64>,
        limit: u64,
        what: &str,
    ) -> Result<u64, ArchiveError> {
        let mut buf = vec![0u8; 64 * 1024];
        let mut total: u64 = 0;
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(ArchiveError::Malformed(format!("{name}: {e}"))),
            };
            total += n as u64;
            if declared.is_some_and(|d| total > d) {
                return Err(ArchiveError::Malformed(format!(
                    "{name}: the entry holds more bytes than its header declares ({})",
                    declared.unwrap_or_default()
                )));
            }
            if total > limit {
                return Err(ArchiveError::TooLarge(format!(
                    "{name}: {what} larger than {limit} bytes"
                )));
            }
            self.spend(n as u64, name)?;
            to.write_all(&buf[..n])
                .map_err(|e| ArchiveError::Io(format!("{name}: {e}")))?;
        }
        Ok(total)
    }

    /// One JSON record, bounded and checked by the JSON guard.
    fn record(
        &mut self,
        from: impl Read,
        name: &str,
        declared: Option<u64>,
    ) -> Result<Vec<u8>, ArchiveError> {
        if declared.is_some_and(|d| d > self.limits.record_bytes) {
            return Err(ArchiveError::TooLarge(format!(
                "{name}: a record larger than {} bytes",
                self.limits.record_bytes
            )));
        }
        let mut bytes = Vec::with_capacity(declared.unwrap_or(0).min(1 << 20) as usize);
        let limit = self.limits.record_bytes;
        self.copy(from, &mut bytes, name, declared, limit, "a record")?;
        check_record(name, &bytes, &self.limits)?;
        Ok(bytes)
    }

    /// A nested archive, spooled to a temporary file.
    fn spool(
        &mut self,
        from: impl Read,
        name: &str,
        declared: Option<u64>,
    ) -> Result<TempFile, ArchiveError> {
        let mut tmp =
            TempFile::new("nested").map_err(|e| ArchiveError::Io(format!("{name}: {e}")))?;
        let limit = self.limits.total_bytes;
        self.copy(from, tmp.file(), name, declared, limit, "an archive")?;
        Ok(tmp)
    }
}

/// Whether one JSON record, however it arrived (an archive entry, a file, a pulled record),
/// may be parsed at all: its size and value count within `limits` (413), its depth and keys
/// sound (400).
pub fn check_record(name: &str, bytes: &[u8], limits: &Limits) -> Result<(), ArchiveError> {
    if bytes.len() as u64 > limits.record_bytes {
        return Err(ArchiveError::TooLarge(format!(
            "{name}: a record larger than {} bytes",
            limits.record_bytes
        )));
    }
    match json_guard::check(bytes, limits.record_values) {
        Ok(()) => Ok(()),
        Err(e @ json_guard::GuardError::TooManyValues(_)) => {
            Err(ArchiveError::TooLarge(format!("{name}: {e}")))
        }
        Err(e) => Err(ArchiveError::Malformed(format!("{name}: {e}"))),
    }
}

fn open(path: &Path) -> Result<std::fs::File, ArchiveError> {
    std::fs::File::open(path).map_err(|e| ArchiveError::Io(format!("{}: {e}", path.display())))
}

fn is_archive(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    [".zip", ".tar", ".tar.gz", ".tgz", ".gz", ".jar"]
        .iter()
        .any(|ext| lower.ends_with(ext))
}

fn nested(name: &str) -> ArchiveError {
    ArchiveError::Nested(name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut out = Cursor::new(Vec::new());
        let mut w = zip::ZipWriter::new(&mut out);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        for (name, bytes) in entries {
            w.start_file(*name, opts).expect("start");
            w.write_all(bytes).expect("write");
        }
        w.finish().expect("finish");
        out.into_inner()
    }

    fn read(bytes: Vec<u8>, limits: Limits) -> Result<Vec<String>, ArchiveError> {
        let mut names = Vec::new();
        let mut emit = |n: String, _b: Vec<u8>| {
            names.push(n);
            Ok(())
        };
        Reader::new(limits, &mut emit).zip(Cursor::new(bytes), "upload", 0)?;
        Ok(names)
    }

    #[test]
    fn one_level_of_nesting_is_read() {
        let inner = zip_of(&[("A-1.json", b"{}"), ("A-2.json", b"{}")]);
        let outer = zip_of(&[("PyPI/all.zip", &inner), ("B-1.json", b"{}")]);
        let names = read(outer, Limits::default()).expect("read");
        assert_eq!(
            names,
            [
                "upload!PyPI/all.zip!A-1.json",
                "upload!PyPI/all.zip!A-2.json",
                "upload!B-1.json"
            ]
        );
    }

    #[test]
    fn deeper_nesting_is_refused_naming_the_entry() {
        let mut z = zip_of(&[("x.json", b"{}")]);
        for level in 0..50 {
            z = zip_of(&[(&format!("l{level}.zip"), &z)]);
        }
        match read(z, Limits::default()) {
            Err(ArchiveError::Nested(entry)) => assert_eq!(entry, "upload!l49.zip!l48.zip"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_bomb_stops_at_the_record_bound() {
        let big = vec![b' '; 3 * 1024 * 1024];
        let z = zip_of(&[("big.json", &big)]);
        assert!(z.len() < 64 * 1024, "compresses well: {}", z.len());
        let limits = Limits {
            record_bytes: 1024 * 1024,
            ..Limits::default()
        };
        assert!(matches!(
            read(z.clone(), limits),
            Err(ArchiveError::TooLarge(_))
        ));
        let total = Limits {
            total_bytes: 1024 * 1024,
            ..Limits::default()
        };
        assert!(matches!(read(z, total), Err(ArchiveError::TooLarge(_))));
    }

    use trusthub_core::rng::Xorshift as Rng;

    /// Generated hostile archives (nesting, decompression ratio, damaged bytes, deep JSON,
    /// many values, duplicate keys): the reader never panics, answers each with the class
    /// of refusal it deserves, and never decompresses more than its bound (the memory it can
    /// hold is one record and a 64 KiB buffer).
    #[test]
    fn generated_hostile_archives_are_refused_within_bounds() {
        let mut rng = Rng(0x5eed_cafe_f00d_d00d);
        let limits = Limits {
            total_bytes: 4 * 1024 * 1024,
            record_bytes: 1024 * 1024,
            record_values: 10_000,
        };
        let ok = br#"{"id": "A", "modified": "2024-01-01T00:00:00Z"}"#;
        for case in 0..120 {
            let kind = case % 6;
            let bytes = match kind {
                0 => {
                    let mut z = zip_of(&[("a.json", ok)]);
                    for l in 0..2 + rng.below(30) {
                        z = zip_of(&[(&format!("l{l}.zip"), &z)]);
                    }
                    z
                }
                1 => {
                    let size = limits.record_bytes + 1 + rng.below(4 * 1024 * 1024);
                    zip_of(&[("big.json", &vec![b' '; size as usize])])
                }
                2 => {
                    let mut z = zip_of(&[("a.json", ok), ("b.json", ok)]);
                    for _ in 0..1 + rng.below(8) {
                        let at = rng.below(z.len() as u64) as usize;
                        z[at] ^= 1 << rng.below(8);
                    }
                    z
                }
                3 => {
                    let d = 129 + rng.below(5000) as usize;
                    let text = format!("{}{}", "[".repeat(d), "]".repeat(d));
                    zip_of(&[("deep.json", text.as_bytes())])
                }
                4 => {
                    let n = 10_001 + rng.below(50_000) as usize;
                    let text = format!("[{}]", vec!["{}"; n].join(","));
                    zip_of(&[("many.json", text.as_bytes())])
                }
                _ => {
                    let key = format!("k{}", rng.below(100));
                    let text = format!("{{\"{key}\": 1, \"x\": 2, \"{key}\": 3}}");
                    zip_of(&[("dup.json", text.as_bytes())])
                }
            };
            let mut read = 0u64;
            let mut emit = |_n: String, b: Vec<u8>| {
                read += b.len() as u64;
                Ok(())
            };
            let mut reader = Reader::new(limits, &mut emit);
            let result = reader.zip(Cursor::new(bytes), "upload", 0);
            let decompressed = reader.bytes_read();
            assert!(
                decompressed <= limits.total_bytes + 64 * 1024,
                "case {case}: {decompressed} bytes decompressed"
            );
            match (kind, &result) {
                (0, Err(ArchiveError::Nested(_))) | (0, Ok(())) => {}
                (1 | 4, Err(ArchiveError::TooLarge(_))) => {}
                (3 | 5, Err(ArchiveError::Malformed(_))) => {}
                // A damaged archive may still read (a flipped bit in a name), or not.
                (2, _) => {}
                other => panic!("case {case}: {other:?}"),
            }
            assert!(read <= limits.total_bytes);
        }
    }

    /// The same idea for JSON bodies (ingest included): every generated hostile body is a
    /// 400 or a 422, never a panic.
    #[test]
    fn generated_hostile_json_bodies_are_refused() {
        use crate::error::ApiError;
        let mut rng = Rng(0xdead_beef_1234_5678);
        for case in 0..200 {
            let body = match case % 4 {
                0 => {
                    let d = 129 + rng.below(100_000) as usize;
                    format!("{{\"metrics\": {}{}}}", "[".repeat(d), "]".repeat(d))
                }
                1 => format!(
                    r#"{{"batch_id": "{}", "sent_at": "2026-01-01T00:00:00Z", "batch_id": "x"}}"#,
                    uuid::Uuid::new_v4()
                ),
                2 => {
                    let typo =
                        ["metircs", "inventroy", "lables", "statuscode"][rng.below(4) as usize];
                    format!(
                        r#"{{"batch_id": "{}", "sent_at": "2026-01-01T00:00:00Z", "{typo}": []}}"#,
                        uuid::Uuid::new_v4()
                    )
                }
                _ => {
                    let mut b: Vec<u8> =
                        br#"{"batch_id": "x", "metrics": [{"name": "a"}]}"#.to_vec();
                    let at = rng.below(b.len() as u64) as usize;
                    b[at] = (rng.below(94) + 32) as u8;
                    String::from_utf8_lossy(&b).into_owned()
                }
            };
            match crate::extract::parse_json::<trusthub_core::agent::Batch>(body.as_bytes()) {
                Err(ApiError::BadRequest(_) | ApiError::Validation(_)) => {}
                other => panic!("case {case}: {body:.200}: {other:?}"),
            }
        }
    }

    #[test]
    fn not_a_zip_is_malformed() {
        assert!(matches!(
            read(b"PK\x03\x04 nothing".to_vec(), Limits::default()),
            Err(ArchiveError::Malformed(_))
        ));
    }
}
