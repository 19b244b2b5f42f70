//! Advisory data import (CONTRACT 15): OSV JSON records from a folder (the OSV bucket's
//! `<Ecosystem>/<ID>.json` or a flat folder), a zip (`all.zip` of one ecosystem, or a zip of
//! such zips and folders) or a tar.gz, stored per id and `modified` (an older or equal
//! `modified` changes nothing; `withdrawn` records are kept and stop matching). Reading runs on
//! a blocking thread and hands batches to the writer, so an import of the whole OSV database
//! never holds it in memory.

use crate::archive::{ArchiveError, Limits, Reader};
use crate::rules::osv::{Record, Severity};
use crate::store::osv::{Advisory, Stored};
use serde::Serialize;
use std::path::Path;
use time::OffsetDateTime;
use trusthub_store::{Db, StoreError};
use utoipa::ToSchema;

/// Records per hand-over to the writer, and the bytes one hand-over may hold.
const BATCH: usize = 500;
const BATCH_BYTES: usize = 4 * 1024 * 1024;
/// How many problems an answer lists by name (the count is always complete).
const LISTED: usize = 1000;

/// What an import did. An import is all or nothing (CONTRACT 18): this is the answer of one
/// that stored everything it read.
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
    /// Records stored that the hub cannot evaluate in full (an ecosystem without a version
    /// order it knows, a range it cannot read), each `file: why` (at most 1,000 listed).
    pub skipped: Vec<String>,
    /// How many records were stored with something the hub cannot evaluate.
    pub skipped_count: u64,
}

/// SPEC's ecosystem spellings (`pip`, `composer`) accepted for OSV's.
pub fn canonical_ecosystem(e: &str) -> String {
    crate::rules::scan::app_ecosystem(e)
        .map(str::to_owned)
        .unwrap_or_else(|| e.to_owned())
}

/// Files read and parsed: name, and the record or why it is not one.
type Batch = Vec<(String, Result<Parsed, String>)>;

/// What the reader thread hands the writer: batches, then how the read ended.
enum Msg {
    Batch(Batch),
    Done(Result<(), ArchiveError>),
}

/// Parses files and hands them to the writer in batches bounded in count and bytes (on the
/// blocking reader thread, so parsing runs beside the database writes; the channel holds two,
/// so at most a few batches are in memory).
struct Batcher {
    tx: tokio::sync::mpsc::Sender<Msg>,
    batch: Batch,
    bytes: usize,
    scope: String,
    now: OffsetDateTime,
}

impl Batcher {
    fn new(tx: tokio::sync::mpsc::Sender<Msg>, scope: String, now: OffsetDateTime) -> Batcher {
        Batcher {
            tx,
            batch: Vec::new(),
            bytes: 0,
            scope,
            now,
        }
    }
    fn push(&mut self, name: String, bytes: Vec<u8>) -> Result<(), ArchiveError> {
        self.bytes += bytes.len();
        let parsed = advisory(&self.scope, &bytes, self.now);
        self.batch.push((name, parsed));
        if self.batch.len() >= BATCH || self.bytes >= BATCH_BYTES {
            self.flush()?;
        }
        Ok(())
    }
    fn flush(&mut self) -> Result<(), ArchiveError> {
        self.bytes = 0;
        if self.batch.is_empty() {
            return Ok(());
        }
        self.tx
            .blocking_send(Msg::Batch(std::mem::take(&mut self.batch)))
            .map_err(|_| ArchiveError::Io("import stopped".to_owned()))
    }
    /// Flushes and tells the writer how the read ended.
    fn finish(mut self, read: Result<(), ArchiveError>) {
        let end = read.and_then(|()| self.flush());
        let _ = self.tx.blocking_send(Msg::Done(end));
    }
}

/// A record as stored: its row, its package index `(ecosystem, name)`, and what of it the
/// hub cannot evaluate.
type Parsed = (Advisory, Vec<(String, String)>, Vec<String>);

/// The row and package index of one OSV record.
fn advisory(scope: &str, bytes: &[u8], now: OffsetDateTime) -> Result<Parsed, String> {
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
            let name = crate::rules::scan::normalize_name(&eco, &p.name);
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
        record.unusable(),
    ))
}

/// Stores batches of files as they come, all in one transaction that commits only when the
/// read ended well and every record was an OSV record.
async fn store(
    db: &Db,
    mut rx: tokio::sync::mpsc::Receiver<Msg>,
) -> Result<ImportReport, ImportError> {
    let mut report = ImportReport::default();
    let mut bad: Vec<(String, String)> = Vec::new();
    let mut bad_count: u64 = 0;
    let mut tx = db.begin().await?;
    let ended = loop {
        match rx.recv().await {
            Some(Msg::Batch(batch)) => {
                for (name, parsed) in batch {
                    report.files += 1;
                    match parsed {
                        // After the first bad record nothing more is written: it all goes.
                        Ok(_) if bad_count > 0 => {}
                        Ok((a, packages, unusable)) => {
                            match crate::store::osv::upsert(&mut tx, &a, &packages).await? {
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
                            if !unusable.is_empty() {
                                report.skipped_count += 1;
                                if report.skipped.len() < LISTED {
                                    report
                                        .skipped
                                        .push(format!("{name}: {}", unusable.join("; ")));
                                }
                            }
                        }
                        Err(why) => {
                            bad_count += 1;
                            if bad.len() < LISTED {
                                bad.push((name, why));
                            }
                        }
                    }
                }
            }
            Some(Msg::Done(read)) => break read,
            None => break Err(ArchiveError::Io("the import's reader stopped".into())),
        }
    };
    // Dropping the transaction rolls it back.
    ended.map_err(ImportError::Archive)?;
    if bad_count > 0 {
        drop(tx);
        return Err(ImportError::Records {
            count: bad_count,
            files: report.files,
            errors: bad,
        });
    }
    tx.commit().await?;
    Ok(report)
}

/// Why an import stored nothing.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The source: not found, not an archive, nested too deep, over a bound.
    #[error(transparent)]
    Archive(#[from] ArchiveError),
    /// Files that are not OSV records (422), each `(file, why)`; `count` of `files` in all.
    #[error("{count} of {files} files are not OSV records; nothing was imported")]
    Records {
        /// Bad records in all.
        count: u64,
        /// Files read.
        files: u64,
        /// The first ones, named.
        errors: Vec<(String, String)>,
    },
    /// The database.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ImportError {
    /// A short word for the audit row and logs.
    pub fn kind(&self) -> &'static str {
        match self {
            ImportError::Archive(ArchiveError::TooLarge(_)) => "too_large",
            ImportError::Archive(ArchiveError::Nested(_)) => "nested_archive",
            ImportError::Archive(ArchiveError::Malformed(_)) => "malformed",
            ImportError::Archive(ArchiveError::Io(_)) => "unreadable",
            ImportError::Records { .. } => "invalid_records",
            ImportError::Store(_) => "database",
        }
    }

    /// The message for a person (the CLI prints it; the API's problem says the same).
    pub fn message(&self) -> String {
        match self {
            ImportError::Records { errors, .. } => {
                let mut m = self.to_string();
                for (file, why) in errors {
                    m.push_str(&format!("\n  {file}: {why}"));
                }
                m
            }
            other => other.to_string(),
        }
    }
}

impl From<ImportError> for crate::error::ApiError {
    fn from(e: ImportError) -> Self {
        use crate::error::{ApiError, FieldError};
        match e {
            ImportError::Archive(ArchiveError::TooLarge(m)) => ApiError::TooLarge(m),
            ImportError::Archive(ArchiveError::Nested(entry)) => {
                let message = ArchiveError::Nested(entry.clone()).to_string();
                ApiError::Validation(vec![FieldError::new(entry, message)])
            }
            ImportError::Archive(ArchiveError::Malformed(m) | ArchiveError::Io(m)) => {
                ApiError::BadRequest(m)
            }
            ImportError::Records { errors, .. } => ApiError::Validation(
                errors
                    .into_iter()
                    .map(|(field, message)| FieldError::new(field, message))
                    .collect(),
            ),
            ImportError::Store(s) => s.into(),
        }
    }
}

/// Runs `read` on a blocking thread handing records to the writer, and stores them.
async fn import_with(
    db: &Db,
    scope: &str,
    now: OffsetDateTime,
    read: impl FnOnce(&mut Batcher) -> Result<(), ArchiveError> + Send + 'static,
) -> Result<ImportReport, ImportError> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Msg>(2);
    let scope_owned = scope.to_owned();
    let reader = tokio::task::spawn_blocking(move || {
        let mut out = Batcher::new(tx, scope_owned, now);
        let result = read(&mut out);
        out.finish(result);
    });
    let report = store(db, rx).await;
    // The reader ends by itself once the writer is gone (its sends fail).
    let _ = reader.await;
    report
}

/// Imports a folder, zip, tar.gz or JSON file on this machine into `scope` (`""`: hub-wide).
pub async fn import_path(
    db: &Db,
    scope: &str,
    source: &Path,
    limits: Limits,
    now: OffsetDateTime,
) -> Result<ImportReport, ImportError> {
    let path = source.to_owned();
    import_with(db, scope, now, move |out| {
        Reader::new(limits, |n, b| out.push(n, b)).source(&path)
    })
    .await
}

/// Imports a zip file (an upload spooled to disk, a pulled `all.zip`) into `scope`.
pub async fn import_zip_file(
    db: &Db,
    scope: &str,
    mut zip: crate::archive::TempFile,
    limits: Limits,
    now: OffsetDateTime,
) -> Result<ImportReport, ImportError> {
    import_with(db, scope, now, move |out| {
        let file = zip
            .rewound()
            .map_err(|e| ArchiveError::Io(format!("upload: {e}")))?;
        Reader::new(limits, |n, b| out.push(n, b)).zip(file, "upload", 0)
    })
    .await
}

/// Imports OSV files already read (name and bytes) into `scope`.
pub async fn import_files(
    db: &Db,
    scope: &str,
    files: Vec<(String, Vec<u8>)>,
    limits: Limits,
    now: OffsetDateTime,
) -> Result<ImportReport, ImportError> {
    import_with(db, scope, now, move |out| {
        for (name, bytes) in files {
            crate::archive::check_record(&name, &bytes, &limits)?;
            out.push(name, bytes)?;
        }
        Ok(())
    })
    .await
}

/// The process's advisory name index and the data state it was loaded at (a part of the
/// state).
#[derive(Debug, Default)]
pub struct CveIndex(pub std::sync::Mutex<Option<(Generation, std::sync::Arc<NameIndex>)>>);

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
        for (scope, eco, name) in crate::store::osv::package_names(&mut c).await? {
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
            let held = state
                .part::<crate::cve::CveIndex>()
                .0
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if let Some((g, index)) = held.as_ref()
                && *g == generation
            {
                return Ok(index.clone());
            }
        }
        let index = std::sync::Arc::new(NameIndex::load(&state.db).await?);
        *state
            .part::<crate::cve::CveIndex>()
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some((generation, index.clone()));
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
#[allow(clippy::too_many_arguments)]
pub async fn scan_agent(
    state: &crate::state::AppState,
    tenant: uuid::Uuid,
    agent: uuid::Uuid,
    hostname: &str,
    inventory_id: i64,
    index: &NameIndex,
    generation: &Generation,
    now: OffsetDateTime,
) -> Result<ScanOutcome, StoreError> {
    use crate::rules::scan;
    let t = trusthub_store::TenantId(tenant);
    let scope = tenant.to_string();
    let snapshot = {
        let mut c = state.db.conn().await?;
        match trusthub_fleet::latest_inventory(&mut c, t, agent).await? {
            Some(s) => s.inventory,
            None => return Ok(ScanOutcome::default()),
        }
    };
    // An inventory that says nothing about packages (an agent that could not read them)
    // must not mark every finding fixed: keep what the last scan found.
    if snapshot.packages.is_none() && snapshot.app_dependencies.is_none() {
        return Ok(ScanOutcome::default());
    }
    let scan::Plan {
        targets,
        mut not_covered,
        mut sources,
    } = scan::targets(&snapshot);
    // Ecosystems of this host without any advisory data: not checked, and said so.
    let mut uncovered: std::collections::BTreeMap<&str, usize> = Default::default();
    for t in &targets {
        if !index.covers(&scope, &t.ecosystem) {
            *uncovered.entry(t.ecosystem.as_str()).or_default() += 1;
        }
    }
    for source in &mut sources {
        if uncovered.contains_key(source.ecosystem.as_str()) {
            source.not_covered(&format!("no advisory data loaded for {}", source.ecosystem));
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
    let mut unevaluable: Vec<String> = Vec::new();
    {
        let mut c = state.db.conn().await?;
        for target in &targets {
            if !index.contains(&scope, &target.ecosystem, &target.lookup) {
                continue;
            }
            let key = (target.ecosystem.clone(), target.lookup.clone());
            if !cache.contains_key(&key) {
                let rows = crate::store::osv::for_package(
                    &mut c,
                    &scope,
                    &target.ecosystem,
                    &target.lookup,
                )
                .await?;
                let mut records = Vec::with_capacity(rows.len());
                for a in &rows {
                    match serde_json::from_str::<Record>(&a.record) {
                        Ok(r) => records.push(r),
                        // Stored before imports were checked: said, never dropped.
                        Err(e) => unevaluable.push(format!("{}: cannot be read: {e}", a.id)),
                    }
                }
                cache.insert(key.clone(), records);
            }
            let before = unevaluable.len();
            let result = scan::affecting(target, &cache[&key], &mut unevaluable);
            for note in unevaluable.iter_mut().skip(before) {
                sources[target.source].not_covered(&format!(
                    "{} {}: advisory {note}",
                    target.package, target.installed_version
                ));
                *note = format!("{} {}: advisory {note}", target.ecosystem, target.package);
            }
            match result {
                Ok(matches) => {
                    // An OS package is reported by its source package (what the advisory
                    // names, and what a suppression of `curl` means), with the binaries
                    // installed from it; a dependency by itself.
                    let os = target.ecosystem.contains(':');
                    // Findings of application dependencies name their source (CONTRACT
                    // 29); OS packages' are the package database, named by no finding.
                    let (source, source_kind) = if os {
                        (String::new(), String::new())
                    } else {
                        let s = &sources[target.source];
                        (s.source.clone(), s.source_kind.clone())
                    };
                    let (package, version, binaries) = if os {
                        (
                            target.lookup.clone(),
                            target.version.clone(),
                            vec![crate::store::cve::Binary {
                                name: target.package.clone(),
                                version: target.installed_version.clone(),
                            }],
                        )
                    } else {
                        (
                            target.package.clone(),
                            target.installed_version.clone(),
                            Vec::new(),
                        )
                    };
                    for m in matches {
                        seen.push(crate::store::cve::Seen {
                            ecosystem: target.ecosystem.clone(),
                            package: package.clone(),
                            binaries: serde_json::to_string(&binaries)
                                .unwrap_or_else(|_| "[]".into()),
                            project_path: target.project_path.clone().unwrap_or_default(),
                            source: source.clone(),
                            source_kind: source_kind.clone(),
                            vuln_id: m.vuln_id,
                            aliases: serde_json::to_string(&m.aliases)
                                .unwrap_or_else(|_| "[]".into()),
                            installed_version: version.clone(),
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
                    sources[target.source].not_covered(&format!(
                        "{} {}: {why}",
                        target.package, target.installed_version
                    ));
                    let note = format!("{} {}: {why}", target.ecosystem, target.package);
                    if not_covered.len() < 50 {
                        not_covered.push(note);
                    }
                }
            }
        }
    }
    // Advisories the scan could not evaluate are counted on the host's coverage, so a host
    // never looks clean because of them (CONTRACT 18).
    if !unevaluable.is_empty() {
        let n = unevaluable.len();
        not_covered.push(format!(
            "{n} advisor{} could not be evaluated",
            if n == 1 { "y" } else { "ies" }
        ));
        not_covered.extend(unevaluable.into_iter().take(49));
    }
    // The same package may be installed twice (two architectures), and one source package
    // gives several binaries: one row per key, naming every binary.
    seen.sort_by_key(|s| s.key());
    seen.dedup_by(|later, kept| {
        let same = later.key() == kept.key();
        if same {
            let mut all = crate::store::cve::binaries(&kept.binaries);
            all.extend(crate::store::cve::binaries(&later.binaries));
            all.sort();
            all.dedup();
            kept.binaries = serde_json::to_string(&all).unwrap_or_else(|_| "[]".into());
        }
        same
    });
    let min_rank = Severity::parse(&crate::settings::of(&state.settings).cve_alert_min_severity)
        .unwrap_or(Severity::High)
        .rank();
    let mut tx = state.db.begin().await?;
    let rules = Suppressions::load(&mut tx, t, now).await?;
    let new = crate::store::cve::record_scan(
        &mut tx,
        t,
        agent,
        &seen,
        inventory_id,
        &crate::store::cve::generation_key(generation),
        targets.len() as i64,
        &serde_json::to_string(&not_covered).unwrap_or_else(|_| "[]".into()),
        &serde_json::to_string(&sources).unwrap_or_else(|_| "[]".into()),
        now,
    )
    .await?;
    rules.apply(&mut tx, t, Some(agent)).await?;
    // Suppressed findings raise no alert.
    let alerting: Vec<&crate::store::cve::Seen> = new
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
                &trusthub_alerts::NewAlert {
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
    /// The package advisories name (the source package of OS packages).
    pub package: &'a str,
    /// JSON array of the binary packages installed from it (OS packages).
    pub binaries: &'a str,
    /// Advisory id.
    pub vuln_id: &'a str,
    /// JSON array of its aliases.
    pub aliases: &'a str,
    /// Installed version.
    pub installed_version: &'a str,
}

impl<'a> Finding<'a> {
    /// Of a scan's finding.
    pub fn of(s: &'a crate::store::cve::Seen) -> Finding<'a> {
        Finding {
            ecosystem: &s.ecosystem,
            package: &s.package,
            binaries: &s.binaries,
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
    range: crate::rules::version::range::Range,
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
        let rows = crate::store::cve::active_suppressions(ex, tenant, now).await?;
        Ok(Suppressions(
            rows.into_iter()
                .filter_map(|r| {
                    // Ranges were checked at creation; one the hub can no longer read applies
                    // to nothing rather than to everything.
                    let scheme = crate::rules::version::Scheme::of_ecosystem(&r.ecosystem)?;
                    let range =
                        crate::rules::version::range::Range::parse(scheme, &r.version_range)
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
        // The source package's name, or one of its binaries' (a suppression of `libcurl4`
        // covers the `curl` finding it is one of).
        let mut keys = vec![crate::rules::scan::normalize_name(base, f.package)];
        keys.extend(
            crate::store::cve::binaries(f.binaries)
                .iter()
                .map(|b| crate::rules::scan::normalize_name(base, &b.name)),
        );
        self.0
            .iter()
            .filter(|r| {
                ecosystem_covers(&r.ecosystem, f.ecosystem)
                    && keys.contains(&r.key)
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
        for c in crate::store::cve::candidates(&mut *ex, tenant, agent).await? {
            let want = self.matching(&Finding {
                ecosystem: &c.ecosystem,
                package: &c.package,
                binaries: &c.binaries,
                vuln_id: &c.vuln_id,
                aliases: &c.aliases,
                installed_version: &c.installed_version,
            });
            if want != c.suppression_id {
                crate::store::cve::set_suppression(&mut *ex, c.id, want).await?;
                changed += 1;
            }
        }
        Ok(changed)
    }
}
