//! Advisory data import (CONTRACT 15): OSV JSON records from a folder (the OSV bucket's
//! `<Ecosystem>/<ID>.json` or a flat folder), a zip (`all.zip` of one ecosystem, or a zip of
//! such zips and folders) or a tar.gz, stored per id and `modified` (an older or equal
//! `modified` changes nothing; `withdrawn` records are kept and stop matching). Reading runs on
//! a blocking thread and hands batches to the writer, so an import of the whole OSV database
//! never holds it in memory.

use serde::Serialize;
use std::io::Read;
use std::path::Path;
use time::OffsetDateTime;
use trusthub_core::osv::{Record, Severity};
use trusthub_store::osv::{Advisory, Stored};
use trusthub_store::{Db, StoreError};
use utoipa::ToSchema;

/// The largest OSV record read (a record is a few KiB; a bigger one is an error, not a bomb).
const MAX_RECORD_BYTES: u64 = 16 * 1024 * 1024;
/// The largest nested archive read into memory (an ecosystem's `all.zip`).
const MAX_NESTED_BYTES: u64 = 2 * 1024 * 1024 * 1024;
/// Records per transaction.
const BATCH: usize = 500;

/// What an import did.
#[derive(Debug, Clone, Default, Serialize, ToSchema, PartialEq, Eq)]
pub struct ImportReport {
    /// JSON files read.
    pub files: u64,
    /// New advisories.
    pub inserted: u64,
    /// Advisories replaced by a newer `modified`.
    pub updated: u64,
    /// Advisories already stored as new or newer.
    pub unchanged: u64,
    /// Of the inserted and updated, how many are withdrawn (they match nothing).
    pub withdrawn: u64,
    /// Files that are not OSV records, with why (at most 100 listed).
    pub errors: Vec<String>,
    /// How many files were refused in all.
    pub error_count: u64,
}

impl ImportReport {
    fn error(&mut self, file: &str, why: impl std::fmt::Display) {
        self.error_count += 1;
        if self.errors.len() < 100 {
            self.errors.push(format!("{file}: {why}"));
        }
    }
}

/// SPEC's ecosystem spellings (`pip`, `composer`) accepted for OSV's.
pub fn canonical_ecosystem(e: &str) -> String {
    trusthub_core::scan::app_ecosystem(e)
        .map(str::to_owned)
        .unwrap_or_else(|| e.to_owned())
}

type Batch = Vec<(String, Vec<u8>)>;

/// Hands files to the writer in batches (from the blocking reader thread).
struct Batcher {
    tx: tokio::sync::mpsc::Sender<Batch>,
    batch: Batch,
}

impl Batcher {
    fn push(&mut self, name: String, bytes: Vec<u8>) -> Result<(), String> {
        self.batch.push((name, bytes));
        if self.batch.len() >= BATCH {
            self.flush()?;
        }
        Ok(())
    }
    fn flush(&mut self) -> Result<(), String> {
        if self.batch.is_empty() {
            return Ok(());
        }
        self.tx
            .blocking_send(std::mem::take(&mut self.batch))
            .map_err(|_| "import stopped".to_owned())
    }
}

/// Reads every JSON file under `source` (a folder, `.zip`, `.tar.gz`/`.tgz`), in batches.
fn read_source(source: &Path, out: &mut Batcher) -> Result<(), String> {
    let mut emit = |name: String, bytes: Vec<u8>| out.push(name, bytes);
    let name = source.to_string_lossy().to_string();
    let meta = std::fs::metadata(source).map_err(|e| format!("{name}: {e}"))?;
    if meta.is_dir() {
        walk(source, &mut emit)?;
    } else if name.ends_with(".zip") {
        let f = std::fs::File::open(source).map_err(|e| format!("{name}: {e}"))?;
        read_zip(std::io::BufReader::new(f), &name, &mut emit)?;
    } else if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
        let f = std::fs::File::open(source).map_err(|e| format!("{name}: {e}"))?;
        read_tar_gz(f, &name, &mut emit)?;
    } else if name.ends_with(".json") {
        emit(
            name.clone(),
            std::fs::read(source).map_err(|e| format!("{name}: {e}"))?,
        )?;
    } else {
        return Err(format!(
            "{name}: expected a folder, a .zip, a .tar.gz or a .json file"
        ));
    }
    out.flush()
}

type Emit<'a> = dyn FnMut(String, Vec<u8>) -> Result<(), String> + 'a;

fn walk(dir: &Path, emit: &mut Emit<'_>) -> Result<(), String> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.to_string_lossy().to_string();
        if path.is_dir() {
            walk(&path, emit)?;
        } else if name.ends_with(".json") {
            emit(
                name.clone(),
                std::fs::read(&path).map_err(|e| format!("{name}: {e}"))?,
            )?;
        } else if name.ends_with(".zip") {
            let f = std::fs::File::open(&path).map_err(|e| format!("{name}: {e}"))?;
            read_zip(std::io::BufReader::new(f), &name, emit)?;
        }
    }
    Ok(())
}

/// The JSON records of a zip, and those of the zips inside it.
pub fn read_zip<R: Read + std::io::Seek>(
    reader: R,
    label: &str,
    emit: &mut Emit<'_>,
) -> Result<(), String> {
    let mut zip = zip::ZipArchive::new(reader).map_err(|e| format!("{label}: not a zip: {e}"))?;
    for i in 0..zip.len() {
        let mut entry = zip
            .by_index(i)
            .map_err(|e| format!("{label}: entry {i}: {e}"))?;
        if entry.is_dir() {
            continue;
        }
        let name = format!(
            "{label}!{}",
            entry
                .name()
                .map_err(|e| format!("{label}: entry {i}: {e}"))?
        );
        let limit = if name.ends_with(".json") {
            MAX_RECORD_BYTES
        } else if name.ends_with(".zip") {
            MAX_NESTED_BYTES
        } else {
            continue;
        };
        if entry.size() > limit {
            return Err(format!("{name}: larger than {limit} bytes"));
        }
        let mut bytes = Vec::with_capacity(entry.size() as usize);
        (&mut entry)
            .take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("{name}: {e}"))?;
        if bytes.len() as u64 > limit {
            return Err(format!("{name}: larger than {limit} bytes"));
        }
        drop(entry);
        if name.ends_with(".zip") {
            read_zip(std::io::Cursor::new(bytes), &name, emit)?;
        } else {
            emit(name, bytes)?;
        }
    }
    Ok(())
}

fn read_tar_gz<R: Read>(reader: R, label: &str, emit: &mut Emit<'_>) -> Result<(), String> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(reader));
    for entry in archive
        .entries()
        .map_err(|e| format!("{label}: not a tar.gz: {e}"))?
    {
        let mut entry = entry.map_err(|e| format!("{label}: {e}"))?;
        let path = entry
            .path()
            .map(|p| p.to_string_lossy().to_string())
            .unwrap_or_default();
        let name = format!("{label}!{path}");
        let limit = if path.ends_with(".json") {
            MAX_RECORD_BYTES
        } else if path.ends_with(".zip") {
            MAX_NESTED_BYTES
        } else {
            continue;
        };
        let mut bytes = Vec::new();
        (&mut entry)
            .take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("{name}: {e}"))?;
        if bytes.len() as u64 > limit {
            return Err(format!("{name}: larger than {limit} bytes"));
        }
        if path.ends_with(".zip") {
            read_zip(std::io::Cursor::new(bytes), &name, emit)?;
        } else {
            emit(name, bytes)?;
        }
    }
    Ok(())
}

/// The row and package index of one OSV record.
fn advisory(
    scope: &str,
    bytes: &[u8],
    now: OffsetDateTime,
) -> Result<(Advisory, Vec<(String, String)>), String> {
    let record: Record = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    if record.id.trim().is_empty() {
        return Err("no id".into());
    }
    let modified = OffsetDateTime::parse(
        &record.modified,
        &time::format_description::well_known::Rfc3339,
    )
    .map_err(|e| format!("modified `{}`: {e}", record.modified))?;
    // The advisory's severity: the worst over its package entries.
    let (severity, score) = if record.affected.is_empty() {
        record.severity_for(None)
    } else {
        record
            .affected
            .iter()
            .map(|a| record.severity_for(Some(a)))
            .max_by(|a, b| {
                a.0.cmp(&b.0)
                    .then(a.1.unwrap_or(0.0).total_cmp(&b.1.unwrap_or(0.0)))
            })
            .unwrap_or((Severity::Unknown, None))
    };
    let mut packages: Vec<(String, String)> = record
        .affected
        .iter()
        .filter_map(|a| a.package.as_ref())
        .map(|p| {
            let eco = canonical_ecosystem(&p.ecosystem);
            let name = trusthub_core::scan::normalize_name(&eco, &p.name);
            (eco, name)
        })
        .collect();
    packages.sort();
    packages.dedup();
    let summary = record
        .summary
        .clone()
        .filter(|s| !s.trim().is_empty())
        .or_else(|| {
            record
                .details
                .as_deref()
                .and_then(|d| d.lines().find(|l| !l.trim().is_empty()))
                .map(str::to_owned)
        })
        .unwrap_or_default()
        .chars()
        .take(500)
        .collect();
    Ok((
        Advisory {
            scope: scope.to_owned(),
            id: record.id.clone(),
            modified,
            withdrawn: record.withdrawn.is_some(),
            aliases: serde_json::to_string(&record.aliases).unwrap_or_else(|_| "[]".into()),
            summary,
            severity: severity.as_str().to_owned(),
            cvss_score: score,
            record: String::from_utf8_lossy(bytes).into_owned(),
            imported_at: now,
        },
        packages,
    ))
}

/// Stores batches of files as they come.
async fn store(
    db: &Db,
    scope: &str,
    mut rx: tokio::sync::mpsc::Receiver<Batch>,
    now: OffsetDateTime,
) -> Result<ImportReport, StoreError> {
    let mut report = ImportReport::default();
    while let Some(batch) = rx.recv().await {
        let mut tx = db.begin().await?;
        for (name, bytes) in batch {
            report.files += 1;
            match advisory(scope, &bytes, now) {
                Ok((a, packages)) => {
                    match trusthub_store::osv::upsert(&mut tx, &a, &packages).await? {
                        Stored::Inserted => {
                            report.inserted += 1;
                            report.withdrawn += u64::from(a.withdrawn);
                        }
                        Stored::Updated => {
                            report.updated += 1;
                            report.withdrawn += u64::from(a.withdrawn);
                        }
                        Stored::Unchanged => report.unchanged += 1,
                    }
                }
                Err(why) => report.error(&name, why),
            }
        }
        tx.commit().await?;
    }
    Ok(report)
}

/// Errors of an import.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The source cannot be read (not found, not an archive, too large).
    #[error("{0}")]
    Source(String),
    /// The database.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Imports a folder, zip or tar.gz on this machine into `scope` (`""`: hub-wide).
pub async fn import_path(
    db: &Db,
    scope: &str,
    source: &Path,
    now: OffsetDateTime,
) -> Result<ImportReport, ImportError> {
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    let path = source.to_owned();
    let reader = tokio::task::spawn_blocking(move || {
        read_source(
            &path,
            &mut Batcher {
                tx,
                batch: Vec::new(),
            },
        )
    });
    let report = store(db, scope, rx, now).await;
    let read = reader
        .await
        .map_err(|e| ImportError::Source(e.to_string()))?;
    let report = report?;
    read.map_err(ImportError::Source)?;
    Ok(report)
}

/// Imports a zip held in memory (the API's upload) into `scope`.
pub async fn import_zip(
    db: &Db,
    scope: &str,
    zip: axum::body::Bytes,
    now: OffsetDateTime,
) -> Result<ImportReport, ImportError> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Batch>(4);
    let reader = tokio::task::spawn_blocking(move || {
        let mut out = Batcher {
            tx,
            batch: Vec::new(),
        };
        read_zip(std::io::Cursor::new(zip), "upload", &mut |n, b| {
            out.push(n, b)
        })?;
        out.flush()
    });
    let report = store(db, scope, rx, now).await;
    let read = reader
        .await
        .map_err(|e| ImportError::Source(e.to_string()))?;
    read.map_err(ImportError::Source)?;
    Ok(report?)
}

/// Imports OSV files already read (name and bytes) into `scope`.
pub async fn import_files(
    db: &Db,
    scope: &str,
    files: Vec<(String, Vec<u8>)>,
    now: OffsetDateTime,
) -> Result<ImportReport, StoreError> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Batch>(files.len().div_ceil(BATCH).max(1));
    for chunk in files.chunks(BATCH) {
        // The channel holds every chunk: nothing waits.
        let _ = tx.try_send(chunk.to_vec());
    }
    drop(tx);
    store(db, scope, rx, now).await
}

/// The state of the advisory data (`osv::generation`).
pub type Generation = (Option<OffsetDateTime>, i64);

/// The package names advisories name, per name: `(scope, ecosystem)` pairs. Kept by the
/// process until the advisory data changes.
#[derive(Debug, Default)]
pub struct NameIndex(
    std::collections::HashMap<String, Vec<(String, String)>>,
    std::collections::HashSet<(String, String)>,
);

impl NameIndex {
    /// Loads it.
    pub async fn load(db: &Db) -> Result<NameIndex, StoreError> {
        let mut c = db.conn().await?;
        let mut map: std::collections::HashMap<String, Vec<(String, String)>> = Default::default();
        let mut ecosystems = std::collections::HashSet::new();
        for (scope, eco, name) in trusthub_store::osv::package_names(&mut c).await? {
            ecosystems.insert((scope.clone(), eco.clone()));
            map.entry(name).or_default().push((scope, eco));
        }
        Ok(NameIndex(map, ecosystems))
    }

    /// The index for the advisory data at `generation` (see `osv::generation`): the one the
    /// process holds when it is still current, else loaded afresh and kept.
    pub async fn current(
        state: &crate::state::AppState,
        generation: Generation,
    ) -> Result<std::sync::Arc<NameIndex>, StoreError> {
        {
            let held = state.cve_index.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((g, index)) = held.as_ref()
                && *g == generation
            {
                return Ok(index.clone());
            }
        }
        let index = std::sync::Arc::new(NameIndex::load(&state.db).await?);
        *state.cve_index.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((generation, index.clone()));
        Ok(index)
    }

    /// Whether any advisory visible to `scope` is of `ecosystem` (or a variant of it): when
    /// none is, the scan says the ecosystem is not covered instead of "no vulnerabilities".
    pub fn covers(&self, scope: &str, ecosystem: &str) -> bool {
        self.1.iter().any(|(s, e)| {
            (s.is_empty() || s == scope)
                && (e == ecosystem
                    || e.strip_prefix(ecosystem)
                        .is_some_and(|r| r.starts_with(':')))
        })
    }

    /// Whether an advisory visible to `scope` names `name` in `ecosystem` (or a variant of
    /// it such as `Ubuntu:22.04:LTS`).
    pub fn contains(&self, scope: &str, ecosystem: &str, name: &str) -> bool {
        self.0.get(name).is_some_and(|v| {
            v.iter().any(|(s, e)| {
                (s.is_empty() || s == scope)
                    && (e == ecosystem
                        || e.strip_prefix(ecosystem)
                            .is_some_and(|r| r.starts_with(':')))
            })
        })
    }
}

/// What one host's scan did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScanOutcome {
    /// Packages looked up.
    pub packages: usize,
    /// Findings of this scan.
    pub findings: usize,
    /// Of them, new ones (or back after a fix).
    pub new: usize,
    /// Whether an alert was raised.
    pub alerted: bool,
}

/// Scans one host's latest inventory against the advisories the tenant sees, records the
/// findings (new, still there, fixed) and raises one alert for the new ones at or above
/// `TRUSTHUB_CVE_ALERT_MIN_SEVERITY`.
pub async fn scan_agent(
    state: &crate::state::AppState,
    tenant: uuid::Uuid,
    agent: uuid::Uuid,
    hostname: &str,
    inventory_id: i64,
    index: &NameIndex,
    now: OffsetDateTime,
) -> Result<ScanOutcome, StoreError> {
    use trusthub_core::scan;
    let t = trusthub_store::TenantId(tenant);
    let scope = tenant.to_string();
    let snapshot = {
        let mut c = state.db.conn().await?;
        match trusthub_store::telemetry::latest_inventory(&mut c, t, agent).await? {
            Some(s) => s.snapshot.0,
            None => return Ok(ScanOutcome::default()),
        }
    };
    // An inventory that says nothing about packages (an agent that could not read them)
    // must not mark every finding fixed: keep what the last scan found.
    if snapshot.get("packages").is_none() && snapshot.get("app_dependencies").is_none() {
        return Ok(ScanOutcome::default());
    }
    let (targets, mut not_covered) = scan::targets(&snapshot);
    // Ecosystems of this host without any advisory data: not checked, and said so.
    let mut uncovered: std::collections::BTreeMap<&str, usize> = Default::default();
    for t in &targets {
        if !index.covers(&scope, &t.ecosystem) {
            *uncovered.entry(t.ecosystem.as_str()).or_default() += 1;
        }
    }
    for (eco, n) in &uncovered {
        not_covered.push(format!(
            "{eco}: no advisory data loaded ({n} package{} not checked)",
            if *n == 1 { "" } else { "s" }
        ));
    }
    let mut cache: std::collections::HashMap<(String, String), Vec<Record>> = Default::default();
    let mut seen = Vec::new();
    {
        let mut c = state.db.conn().await?;
        for target in &targets {
            if !index.contains(&scope, &target.ecosystem, &target.lookup) {
                continue;
            }
            let key = (target.ecosystem.clone(), target.lookup.clone());
            if !cache.contains_key(&key) {
                let rows = trusthub_store::osv::for_package(
                    &mut c,
                    &scope,
                    &target.ecosystem,
                    &target.lookup,
                )
                .await?;
                let records = rows
                    .iter()
                    .filter_map(|a| serde_json::from_str::<Record>(&a.record).ok())
                    .collect();
                cache.insert(key.clone(), records);
            }
            match scan::affecting(target, &cache[&key]) {
                Ok(matches) => {
                    for m in matches {
                        seen.push(trusthub_store::cve::Seen {
                            ecosystem: target.ecosystem.clone(),
                            package: target.package.clone(),
                            project_path: target.project_path.clone().unwrap_or_default(),
                            vuln_id: m.vuln_id,
                            aliases: serde_json::to_string(&m.aliases)
                                .unwrap_or_else(|_| "[]".into()),
                            installed_version: target.installed_version.clone(),
                            fixed_versions: serde_json::to_string(&m.fixed_versions)
                                .unwrap_or_else(|_| "[]".into()),
                            severity: m.severity.as_str().to_owned(),
                            severity_rank: m.severity.rank(),
                            cvss_score: m.cvss_score,
                            summary: m.summary,
                        });
                    }
                }
                Err(why) => {
                    let note = format!("{} {}: {why}", target.ecosystem, target.package);
                    if not_covered.len() < 50 {
                        not_covered.push(note);
                    }
                }
            }
        }
    }
    // The same package may be installed twice (two projects, two architectures): one row
    // per key.
    seen.sort_by(|a, b| {
        (&a.ecosystem, &a.package, &a.project_path, &a.vuln_id).cmp(&(
            &b.ecosystem,
            &b.package,
            &b.project_path,
            &b.vuln_id,
        ))
    });
    seen.dedup_by(|a, b| {
        (&a.ecosystem, &a.package, &a.project_path, &a.vuln_id)
            == (&b.ecosystem, &b.package, &b.project_path, &b.vuln_id)
    });
    let min_rank = Severity::parse(&state.settings.cve_alert_min_severity)
        .unwrap_or(Severity::High)
        .rank();
    let mut tx = state.db.begin().await?;
    let rules = Suppressions::load(&mut tx, t, now).await?;
    let new = trusthub_store::cve::record_scan(
        &mut tx,
        t,
        agent,
        &seen,
        inventory_id,
        targets.len() as i64,
        &serde_json::to_string(&not_covered).unwrap_or_else(|_| "[]".into()),
        now,
    )
    .await?;
    rules.apply(&mut tx, t, Some(agent)).await?;
    // Suppressed findings raise no alert.
    let alerting: Vec<&trusthub_store::cve::Seen> = new
        .iter()
        .filter(|s| s.severity_rank >= min_rank && rules.matching(&Finding::of(s)).is_none())
        .collect();
    if !alerting.is_empty() {
        let worst = alerting.iter().map(|s| s.severity_rank).max().unwrap_or(0);
        let severity = if worst >= Severity::Critical.rank() {
            trusthub_core::alerting::Severity::Critical
        } else {
            trusthub_core::alerting::Severity::Warning
        };
        let mut ids: Vec<String> = alerting
            .iter()
            .map(|s| format!("{} ({} {})", s.vuln_id, s.package, s.installed_version))
            .collect();
        ids.truncate(20);
        let title = format!(
            "{} new {} on {hostname}",
            alerting.len(),
            if alerting.len() == 1 {
                "vulnerability"
            } else {
                "vulnerabilities"
            }
        );
        let detail = ids.join(", ");
        crate::alerting::Notifier::default()
            .raise(
                &mut tx,
                t,
                &trusthub_store::alerts::NewAlert {
                    severity: severity.as_str(),
                    severity_rank: severity.rank(),
                    category: "vulnerability",
                    title: &title,
                    detail: Some(&detail),
                    source: trusthub_core::alerting::source::CVE,
                    fingerprint: &format!("cve:{agent}:{}", now.unix_timestamp_nanos()),
                    agent_id: Some(agent),
                    app_id: None,
                    rule_id: None,
                },
                now,
            )
            .await?;
    }
    tx.commit().await?;
    Ok(ScanOutcome {
        packages: targets.len(),
        findings: seen.len(),
        new: new.len(),
        alerted: !alerting.is_empty(),
    })
}

// ---- suppressions ------------------------------------------------------------------------------

/// What a suppression is compared with.
pub struct Finding<'a> {
    /// OSV ecosystem (`npm`, `Debian:12`).
    pub ecosystem: &'a str,
    /// Package as installed.
    pub package: &'a str,
    /// Advisory id.
    pub vuln_id: &'a str,
    /// JSON array of its aliases.
    pub aliases: &'a str,
    /// Installed version.
    pub installed_version: &'a str,
}

impl<'a> Finding<'a> {
    /// Of a scan's finding.
    pub fn of(s: &'a trusthub_store::cve::Seen) -> Finding<'a> {
        Finding {
            ecosystem: &s.ecosystem,
            package: &s.package,
            vuln_id: &s.vuln_id,
            aliases: &s.aliases,
            installed_version: &s.installed_version,
        }
    }
}

/// Whether a suppression's ecosystem covers a finding's: the same, or the suppression names
/// a distribution without a release (`Debian` covers `Debian:12`).
pub fn ecosystem_covers(suppression: &str, finding: &str) -> bool {
    suppression == finding
        || (!suppression.contains(':')
            && finding
                .strip_prefix(suppression)
                .is_some_and(|r| r.starts_with(':')))
}

struct Rule {
    id: uuid::Uuid,
    ecosystem: String,
    key: String,
    range: trusthub_core::version::range::Range,
    vuln_id: Option<String>,
    expires_at: OffsetDateTime,
}

/// A tenant's suppressions in force at one instant, ready to match findings.
pub struct Suppressions(Vec<Rule>);

impl Suppressions {
    /// The tenant's suppressions that have not expired at `now`.
    pub async fn load(
        ex: &mut impl trusthub_store::Exec,
        tenant: trusthub_store::TenantId,
        now: OffsetDateTime,
    ) -> Result<Suppressions, StoreError> {
        let rows = trusthub_store::cve::active_suppressions(ex, tenant, now).await?;
        Ok(Suppressions(
            rows.into_iter()
                .filter_map(|r| {
                    // Ranges were checked at creation; one the hub can no longer read applies
                    // to nothing rather than to everything.
                    let scheme = trusthub_core::version::Scheme::of_ecosystem(&r.ecosystem)?;
                    let range =
                        trusthub_core::version::range::Range::parse(scheme, &r.version_range)
                            .ok()?;
                    Some(Rule {
                        id: r.id,
                        ecosystem: r.ecosystem,
                        key: r.package_key,
                        range,
                        vuln_id: r.vuln_id,
                        expires_at: r.expires_at,
                    })
                })
                .collect(),
        ))
    }

    /// The suppression that applies to `f` (of those matching, the one expiring last).
    pub fn matching(&self, f: &Finding<'_>) -> Option<uuid::Uuid> {
        let base = f.ecosystem.split(':').next().unwrap_or_default();
        let key = trusthub_core::scan::normalize_name(base, f.package);
        self.0
            .iter()
            .filter(|r| {
                ecosystem_covers(&r.ecosystem, f.ecosystem)
                    && r.key == key
                    && r.vuln_id.as_deref().is_none_or(|v| {
                        v.eq_ignore_ascii_case(f.vuln_id)
                            || serde_json::from_str::<Vec<String>>(f.aliases)
                                .unwrap_or_default()
                                .iter()
                                .any(|a| a.eq_ignore_ascii_case(v))
                    })
                    && r.range.contains(f.installed_version).unwrap_or(false)
            })
            .max_by_key(|r| (r.expires_at, r.id))
            .map(|r| r.id)
    }

    /// Records for the tenant's unfixed findings (of one host when `agent` is given) which
    /// suppression applies; how many changed.
    pub async fn apply(
        &self,
        ex: &mut impl trusthub_store::Exec,
        tenant: trusthub_store::TenantId,
        agent: Option<uuid::Uuid>,
    ) -> Result<usize, StoreError> {
        let mut changed = 0;
        for c in trusthub_store::cve::candidates(&mut *ex, tenant, agent).await? {
            let want = self.matching(&Finding {
                ecosystem: &c.ecosystem,
                package: &c.package,
                vuln_id: &c.vuln_id,
                aliases: &c.aliases,
                installed_version: &c.installed_version,
            });
            if want != c.suppression_id {
                trusthub_store::cve::set_suppression(&mut *ex, c.id, want).await?;
                changed += 1;
            }
        }
        Ok(changed)
    }
}
