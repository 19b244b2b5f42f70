//! `trusthub cve …`: findings, coverage, suppressions and advisory imports.

use super::*;

/// `trusthub cve ls|get|ack` (and `import`, which takes a folder or archive).
#[derive(Debug, clap::Subcommand)]
pub enum CveRemote {
    /// Findings, worst first; `--fail-on HIGH` exits 1 when an open one is at or above it.
    Ls {
        /// At least this severity: CRITICAL, HIGH, MEDIUM, LOW.
        #[arg(long)]
        severity: Option<String>,
        /// open, suppressed, acknowledged, fixed, unfixed.
        #[arg(long)]
        status: Option<String>,
        /// Exit 1 when an open finding at or above this severity exists (for CI gates).
        #[arg(long)]
        fail_on: Option<String>,
    },
    /// An advisory (by id or alias) with this tenant's findings of it.
    Get {
        /// `CVE-2021-23337`, `GHSA-…`, `DSA-…`.
        id: String,
    },
    /// Accept a package's vulnerabilities in a version range, for a reason, until a date
    /// (operator; at most a year ahead).
    Suppress {
        /// The package (for an OS package, its source or one of its binaries).
        #[arg(long)]
        package: String,
        /// npm, PyPI, Debian, …
        #[arg(long)]
        ecosystem: String,
        /// In the ecosystem's own syntax (`>=4.0.0 <4.17.21`, `~=1.4`, `<< 3.0.11-1`).
        #[arg(long, allow_hyphen_values = true)]
        range: String,
        /// Only this vulnerability (its id or any alias); all when absent.
        #[arg(long)]
        vuln: Option<String>,
        /// Why it is accepted.
        #[arg(long)]
        reason: String,
        /// The last day it applies (YYYY-MM-DD).
        #[arg(long)]
        until: String,
    },
    /// Update every application dependency with a known fix on every host (admin; asks for a
    /// TOTP code): one signed action per host per project and ecosystem, 25 at a time.
    /// `--dry-run` prints the plan and sends nothing.
    UpdateAll {
        /// Print what would be sent; send nothing (no TOTP code needed).
        #[arg(long)]
        dry_run: bool,
        /// Only this host (repeatable).
        #[arg(long = "agent")]
        agents: Vec<String>,
        /// Only this ecosystem: npm, pip, composer, RubyGems, Go (repeatable).
        #[arg(long = "ecosystem")]
        ecosystems: Vec<String>,
        /// The TOTP code; asked for when not given.
        #[arg(long)]
        totp: Option<String>,
    },
    /// Acknowledge a finding with a reason (operator).
    Ack {
        /// Finding id.
        id: String,
        /// Why it is accepted.
        #[arg(long)]
        reason: String,
    },
    /// Where each host's packages were read (lockfiles, installed trees, binaries, the OS
    /// package database) and what its last scan could check of each.
    Coverage {
        /// One host (its id).
        #[arg(long)]
        agent: Option<String>,
        /// covered or not_covered.
        #[arg(long)]
        status: Option<String>,
    },
}

pub(crate) const COVERAGE: &[Column] = &[
    ("host", "/hostname"),
    ("source", "/source"),
    ("kind", "/source_kind"),
    ("format", "/format"),
    ("packages", "/packages"),
    ("status", "/status"),
    ("reason", "/reason"),
];

pub(crate) const FINDINGS: &[Column] = &[
    ("id", "/id"),
    ("severity", "/severity"),
    ("vuln", "/vuln_id"),
    ("host", "/hostname"),
    ("package", "/package"),
    ("installed", "/installed_version"),
    ("fixed in", "/fixed_versions"),
    ("source", "/source"),
    ("status", "/status"),
];

/// The rank of a severity word (CRITICAL 4 … LOW 1), for `--fail-on`.
pub(crate) fn rank(s: &str) -> Option<u8> {
    match s.to_ascii_uppercase().as_str() {
        "CRITICAL" => Some(4),
        "HIGH" => Some(3),
        "MEDIUM" | "MODERATE" => Some(2),
        "LOW" => Some(1),
        _ => None,
    }
}

/// `trusthub cve ls|get|ack`.
pub async fn cve(cmd: CveRemote, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    match cmd {
        CveRemote::Ls {
            severity,
            status,
            fail_on,
        } => {
            let gate = match fail_on.as_deref().map(|f| (f, rank(f))) {
                None => None,
                Some((_, Some(r))) => Some(r),
                Some((f, None)) => {
                    return Err(Failure {
                        code: 2,
                        message: format!("--fail-on {f}: use CRITICAL, HIGH, MEDIUM or LOW"),
                    });
                }
            };
            // Every page, so the gate sees every finding.
            let mut items: Vec<Value> = Vec::new();
            let mut cursor: Option<String> = None;
            loop {
                let path = with_query(
                    "/inventory/cves",
                    &[
                        ("limit", Some("500".to_owned())),
                        ("severity", severity.clone()),
                        ("status", status.clone()),
                        ("cursor", cursor.clone()),
                    ],
                );
                let page = c.get(&path).await?;
                items.extend(page["items"].as_array().cloned().unwrap_or_default());
                match page["next_cursor"].as_str() {
                    Some(next) => cursor = Some(next.to_owned()),
                    None => break,
                }
            }
            let all = Value::Array(items);
            print(&all, FINDINGS, g.output)?;
            if let Some(gate) = gate {
                let failing = all
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|f| f["status"] == "open")
                    .filter(|f| {
                        f["severity"]
                            .as_str()
                            .and_then(rank)
                            .is_some_and(|r| r >= gate)
                    })
                    .count();
                if failing > 0 {
                    return Err(Failure::error(format!(
                        "{failing} open finding{} at or above {}",
                        if failing == 1 { "" } else { "s" },
                        fail_on.unwrap_or_default().to_ascii_uppercase()
                    )));
                }
            }
            Ok(())
        }
        CveRemote::Get { id: v } => {
            let advisory = c.get(&format!("/cves/{}", encode(v.trim()))).await?;
            match g.output {
                Format::Table => {
                    println!(
                        "{}  {}  {}\n{}\n",
                        advisory["id"].as_str().unwrap_or_default(),
                        advisory["severity"].as_str().unwrap_or_default(),
                        advisory["aliases"]
                            .as_array()
                            .map(|a| a
                                .iter()
                                .filter_map(Value::as_str)
                                .collect::<Vec<_>>()
                                .join(" "))
                            .unwrap_or_default(),
                        advisory["summary"].as_str().unwrap_or_default()
                    );
                    print(&advisory["findings"], FINDINGS, g.output)
                }
                other => print(&advisory, FINDINGS, other),
            }
        }
        CveRemote::Suppress {
            package,
            ecosystem,
            range,
            vuln,
            reason,
            until,
        } => {
            let mut body = json!({"package_name": package, "ecosystem": ecosystem,
                "version_range": range, "reason": reason, "expires_at": until});
            if let Some(v) = vuln {
                body["vuln_id"] = json!(v);
            }
            let v = c.json(Method::POST, "/cve-suppressions", &body).await?;
            print(
                &v,
                &[
                    ("id", "/id"),
                    ("package", "/package_name"),
                    ("ecosystem", "/ecosystem"),
                    ("range", "/version_range"),
                    ("findings", "/findings"),
                    ("until", "/expires_at"),
                ],
                g.output,
            )
        }
        CveRemote::UpdateAll {
            dry_run,
            agents,
            ecosystems,
            totp,
        } => {
            let mut body = json!({"dry_run": dry_run});
            if !agents.is_empty() {
                let ids: Result<Vec<String>, Failure> = agents.iter().map(|a| id(a)).collect();
                body["agent_ids"] = json!(ids?);
            }
            if !ecosystems.is_empty() {
                body["ecosystems"] = json!(ecosystems);
            }
            let v = if dry_run {
                c.json(Method::POST, "/cve/auto-update-all", &body).await?
            } else {
                with_totp(
                    &c,
                    Method::POST,
                    "/cve/auto-update-all",
                    Some(&body),
                    totp,
                    "auto_update_all",
                )
                .await?
            };
            if matches!(g.output, Format::Json | Format::Yaml) {
                return print(&v, &[], g.output);
            }
            // A row per package, then what was skipped and why.
            let mut rows = Vec::new();
            for a in v["dispatched"].as_array().into_iter().flatten() {
                for p in a["packages"].as_array().into_iter().flatten() {
                    rows.push(json!({"host": a["hostname"], "project": a["project_path"],
                        "ecosystem": a["ecosystem"], "package": p["name"], "from": p["from"],
                        "to": p["to"], "action": a["eat_nonce"]}));
                }
            }
            let skipped = v["skipped"].as_array().cloned().unwrap_or_default();
            eprintln!(
                "{} {} action(s); {} skipped{}",
                if dry_run { "would send" } else { "sent" },
                v["dispatched"].as_array().map_or(0, Vec::len),
                skipped.len(),
                if v["capped"] == true {
                    "; more are due: run it again"
                } else {
                    ""
                }
            );
            print(
                &Value::Array(rows),
                &[
                    ("host", "/host"),
                    ("project", "/project"),
                    ("ecosystem", "/ecosystem"),
                    ("package", "/package"),
                    ("from", "/from"),
                    ("to", "/to"),
                    ("action", "/action"),
                ],
                g.output,
            )?;
            if !skipped.is_empty() {
                eprintln!("skipped:");
                for s in skipped {
                    eprintln!(
                        "  {} {} ({}): {}",
                        s["package"].as_str().unwrap_or_default(),
                        s["vuln_ids"]
                            .as_array()
                            .map(|v| v
                                .iter()
                                .filter_map(Value::as_str)
                                .collect::<Vec<_>>()
                                .join(","))
                            .unwrap_or_default(),
                        s["ecosystem"].as_str().unwrap_or_default(),
                        s["reason"].as_str().unwrap_or_default()
                    );
                }
            }
            Ok(())
        }
        CveRemote::Ack { id: f, reason } => {
            let v = c
                .json(
                    Method::POST,
                    &format!("/cve-findings/{}/acknowledge", id(&f)?),
                    &json!({"reason": reason}),
                )
                .await?;
            print(&v, FINDINGS, g.output)
        }
        CveRemote::Coverage { agent, status } => {
            let agent = agent.as_deref().map(id).transpose()?;
            let path = with_query(
                "/inventory/cves/coverage",
                &[("agent_id", agent), ("status", status)],
            );
            print(&c.get(&path).await?, COVERAGE, g.output)
        }
    }
}

/// The OSV records of `path` as the zip `POST /cve/sources/import` takes: a `.zip` as it is;
/// a folder's or a `.tar.gz`'s `.json` files, zipped here.
pub(crate) fn import_zip(path: &std::path::Path) -> Result<Vec<u8>, Failure> {
    use std::io::Read as _;
    let name = path.to_string_lossy().to_ascii_lowercase();
    if name.ends_with(".zip") {
        return std::fs::read(path).map_err(|e| Failure::error(format!("{}: {e}", path.display())));
    }
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    let mut add = |entry: &str, bytes: &[u8]| -> Result<(), Failure> {
        zip.start_file(entry, options)
            .and_then(|()| zip.write_all(bytes).map_err(zip::result::ZipError::Io))
            .map_err(|e| Failure::error(format!("{entry}: {e}")))
    };
    let mut files = 0usize;
    if path.is_dir() {
        let mut stack = vec![path.to_path_buf()];
        while let Some(dir) = stack.pop() {
            let entries = std::fs::read_dir(&dir)
                .map_err(|e| Failure::error(format!("{}: {e}", dir.display())))?;
            for e in entries {
                let p = e.map_err(|e| Failure::error(e.to_string()))?.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "json") {
                    let rel = p
                        .strip_prefix(path)
                        .unwrap_or(&p)
                        .to_string_lossy()
                        .into_owned();
                    let bytes = std::fs::read(&p)
                        .map_err(|e| Failure::error(format!("{}: {e}", p.display())))?;
                    add(&rel, &bytes)?;
                    files += 1;
                }
            }
        }
    } else if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
        let file = std::fs::File::open(path)
            .map_err(|e| Failure::error(format!("{}: {e}", path.display())))?;
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
        for entry in archive
            .entries()
            .map_err(|e| Failure::error(format!("{}: {e}", path.display())))?
        {
            let mut entry =
                entry.map_err(|e| Failure::error(format!("{}: {e}", path.display())))?;
            let rel = entry
                .path()
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default();
            if entry.header().entry_type().is_file() && rel.ends_with(".json") {
                let mut bytes = Vec::new();
                entry
                    .read_to_end(&mut bytes)
                    .map_err(|e| Failure::error(format!("{rel}: {e}")))?;
                add(&rel, &bytes)?;
                files += 1;
            }
        }
    } else {
        return Err(Failure {
            code: 2,
            message: format!(
                "{}: a folder, a .zip or a .tar.gz of OSV records",
                path.display()
            ),
        });
    }
    if files == 0 {
        return Err(Failure::error(format!(
            "{}: no .json records in it",
            path.display()
        )));
    }
    zip.finish()
        .map(|c| c.into_inner())
        .map_err(|e| Failure::error(e.to_string()))
}

/// `trusthub cve import <path>` with a context: the records uploaded to the hub (operator),
/// for this tenant.
pub async fn cve_import(path: &std::path::Path, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    let body = import_zip(path)?;
    // The hub answers once every record is stored: a spinner on a terminal meanwhile.
    let spinner =
        indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
    spinner.set_message(format!(
        "importing {} ({} bytes)",
        path.display(),
        body.len()
    ));
    spinner.enable_steady_tick(std::time::Duration::from_millis(120));
    let answer = c
        .send(
            c.request(Method::POST, "/cve/sources/import")
                .header("content-type", "application/zip")
                .body(body),
        )
        .await;
    spinner.finish_and_clear();
    let v = answer?;
    print(
        &v,
        &[
            ("files", "/files"),
            ("inserted", "/inserted"),
            ("updated", "/updated"),
            ("unchanged", "/unchanged"),
            ("withdrawn", "/withdrawn"),
            ("skipped", "/skipped_count"),
        ],
        g.output,
    )
}
