//! What a host's inventory asks of the advisory data (CONTRACT 15): the packages to look up,
//! in OSV's ecosystem names, and which advisories affect them. OS packages are looked up by
//! their **source** package and version in the host's release (`Debian:12`, `Ubuntu:22.04`,
//! `Alpine:v3.19`), as distributions write their advisories with the fixed versions of their
//! own (backported) builds — never against upstream ranges; application dependencies by
//! their lockfile's ecosystem. What cannot be looked up is said, not silently skipped.

use crate::rules::osv::{Record, Severity, Verdict};
use trusthub_core::inventory::{Inventory, Os};

/// One package of a host to look up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// OSV ecosystem (`Debian:12`, `npm`, …).
    pub ecosystem: String,
    /// The package as installed (binary package, dependency name).
    pub package: String,
    /// The name advisories use (the source package for OS packages), normalized.
    pub lookup: String,
    /// The version to compare (the source version for OS packages).
    pub version: String,
    /// The installed version as reported.
    pub installed_version: String,
    /// The project (lockfile folder) of an application dependency.
    pub project_path: Option<String>,
    /// Its source: an index into [`Plan::sources`].
    pub source: usize,
}

/// The OSV ecosystem of a host's OS release (`os.id`, `os.version` of os-release), or why
/// there is none.
pub fn os_ecosystem(os: Option<&Os>) -> Result<String, String> {
    let id = os
        .and_then(|o| o.id.as_deref())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let version = os.and_then(|o| o.version.as_deref()).unwrap_or_default();
    let major = version.split('.').next().unwrap_or_default();
    let major_minor = version.split('.').take(2).collect::<Vec<_>>().join(".");
    match id.as_str() {
        "" => Err("the agent reported no os.id (an older agent, or no /etc/os-release)".into()),
        _ if version.is_empty() => {
            Err(format!("{id} without a release number (testing/unstable?)"))
        }
        "debian" => Ok(format!("Debian:{major}")),
        "ubuntu" => Ok(format!("Ubuntu:{major_minor}")),
        "alpine" => Ok(format!("Alpine:v{major_minor}")),
        "almalinux" => Ok(format!("AlmaLinux:{major}")),
        "rocky" => Ok(format!("Rocky Linux:{major}")),
        other => Err(format!(
            "{other} {version}: no advisory source is mapped for it"
        )),
    }
}

/// A lockfile ecosystem in OSV's name (`pip` → `PyPI`, …).
pub fn app_ecosystem(e: &str) -> Option<&'static str> {
    Some(match e.to_ascii_lowercase().as_str() {
        "npm" => "npm",
        "pip" | "pypi" => "PyPI",
        "rubygems" | "gem" => "RubyGems",
        "go" | "golang" => "Go",
        "composer" | "packagist" => "Packagist",
        _ => return None,
    })
}

/// The name as advisories index it: PyPI names by PEP 503 (lowercase, runs of `-_.` as one
/// `-`), npm lowercase; others as they are.
pub fn normalize_name(ecosystem: &str, name: &str) -> String {
    match ecosystem {
        "PyPI" => {
            let mut out = String::with_capacity(name.len());
            let mut dash = false;
            for c in name.chars() {
                if matches!(c, '-' | '_' | '.') {
                    dash = true;
                } else {
                    if dash && !out.is_empty() {
                        out.push('-');
                    }
                    dash = false;
                    out.push(c.to_ascii_lowercase());
                }
            }
            out
        }
        "npm" => name.to_ascii_lowercase(),
        _ => name.to_owned(),
    }
}

/// One place a host's packages were read from (CONTRACT 29) and what the scan could check
/// of it: a lockfile, an installed tree, a binary, or the OS package database.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SourceCoverage {
    /// The lockfile path, the installed tree's root, the binary, or the package database.
    pub source: String,
    /// `lockfile`, `installed` or `binary` (the OS package database is `installed`).
    pub source_kind: String,
    /// Its format (`package-lock`, `go-binary`, …; `dpkg`, `rpm`, `apk` for OS packages).
    pub format: String,
    /// The OSV ecosystem its packages are looked up in (`""` when it has none).
    pub ecosystem: String,
    /// Packages read from it.
    pub packages: i64,
    /// `covered` or `not_covered`.
    pub status: String,
    /// Why it is not (or not wholly) covered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl SourceCoverage {
    /// Marks the source as not covered for `why` (reasons are kept in order, at most ten
    /// written out).
    pub fn not_covered(&mut self, why: &str) {
        self.status = "not_covered".into();
        let reason = self.reason.get_or_insert_with(String::new);
        let listed = if reason.is_empty() {
            0
        } else {
            reason.matches("; ").count() + 1
        };
        if reason.split("; ").any(|r| r == why) {
            return;
        }
        match listed {
            0 => reason.push_str(why),
            1..10 => {
                reason.push_str("; ");
                reason.push_str(why);
            }
            10 => reason.push_str("; and more"),
            _ => {}
        }
    }
}

/// What a host's inventory asks of the advisory data: the packages to look up, each
/// source they came from, and what cannot be looked up at all (for the host's notes).
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// The packages.
    pub targets: Vec<Target>,
    /// Their sources (a target's `source` indexes this).
    pub sources: Vec<SourceCoverage>,
    /// Why parts of the host cannot be checked, as sentences.
    pub not_covered: Vec<String>,
}

/// Where an OS package manager keeps what is installed.
fn package_database(manager: &str) -> String {
    match manager {
        "dpkg" => "/var/lib/dpkg/status".into(),
        "apk" => "/lib/apk/db/installed".into(),
        "rpm" => "/var/lib/rpm".into(),
        "pacman" => "/var/lib/pacman/local".into(),
        other => format!("{other} packages"),
    }
}

/// The packages of an inventory snapshot to look up with their sources, and what cannot be
/// looked up (with why): an OS release without advisory data mapping, a source the agent
/// could not read, a lockfile ecosystem the hub cannot order. Packages of a manager that
/// does not belong to the release are not looked up.
pub fn targets(inventory: &Inventory) -> Plan {
    let mut plan = Plan::default();
    let packages = inventory.packages();
    if !packages.is_empty() {
        let os = os_ecosystem(inventory.os.as_ref());
        let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
        for p in packages {
            *counts
                .entry(p.manager.as_deref().unwrap_or_default())
                .or_default() += 1;
        }
        let manager = match os
            .as_deref()
            .map(|e| e.split(':').next().unwrap_or_default())
        {
            Ok("Debian" | "Ubuntu") => "dpkg",
            Ok("Alpine") => "apk",
            Ok(_) => "rpm",
            // Without a release, the manager the agent saw most.
            Err(_) => counts
                .iter()
                .max_by_key(|(_, n)| **n)
                .map_or("", |(m, _)| *m),
        };
        let of_manager = packages
            .iter()
            .filter(|p| p.manager.as_deref() == Some(manager));
        let index = plan.sources.len();
        plan.sources.push(SourceCoverage {
            source: package_database(manager),
            source_kind: "installed".into(),
            format: manager.to_owned(),
            ecosystem: os.clone().unwrap_or_default(),
            packages: of_manager.clone().count() as i64,
            status: "covered".into(),
            reason: None,
        });
        match os {
            Ok(eco) => {
                for p in of_manager {
                    let (Some(name), Some(version)) = (p.name.as_deref(), p.version.as_deref())
                    else {
                        continue;
                    };
                    if name.is_empty() || version.is_empty() {
                        continue;
                    }
                    let source = p.source.as_deref().unwrap_or(name);
                    let source_version = p.source_version.as_deref().unwrap_or(version);
                    plan.targets.push(Target {
                        ecosystem: eco.clone(),
                        package: name.to_owned(),
                        lookup: source.to_owned(),
                        version: source_version.to_owned(),
                        installed_version: version.to_owned(),
                        project_path: None,
                        source: index,
                    });
                }
            }
            Err(why) => {
                plan.sources[index].not_covered(&why);
                plan.not_covered.push(format!("OS packages: {why}"));
            }
        }
    }
    let mut by_source: std::collections::HashMap<String, usize> = Default::default();
    for d in inventory.app_dependencies() {
        // The source (CONTRACT 29) when the agent names it; older agents name the project
        // and the lockfile.
        let source = d.source.clone().unwrap_or_else(|| {
            format!(
                "{}/{}",
                d.project_path.as_deref().unwrap_or_default(),
                d.lockfile.as_deref().unwrap_or_default()
            )
        });
        let raw = d.ecosystem.as_deref().unwrap_or_default();
        let eco = app_ecosystem(raw);
        let index = *by_source.entry(source.clone()).or_insert_with(|| {
            plan.sources.push(SourceCoverage {
                source: source.clone(),
                source_kind: d.source_kind.clone().unwrap_or_else(|| "lockfile".into()),
                format: d
                    .format
                    .clone()
                    .or_else(|| d.lockfile.clone())
                    .unwrap_or_default(),
                ecosystem: eco.unwrap_or(raw).to_owned(),
                packages: 0,
                status: "covered".into(),
                reason: None,
            });
            plan.sources.len() - 1
        });
        // A source the agent could not read (CONTRACT 18): not covered, with the reason,
        // never zero dependencies.
        if let Some(error) = &d.error {
            plan.sources[index].not_covered(&format!("cannot be read: {error}"));
            plan.not_covered
                .push(format!("{source}: cannot be read: {error}"));
            continue;
        }
        let (Some(name), Some(version)) = (d.name.as_deref(), d.version.as_deref()) else {
            continue;
        };
        plan.sources[index].packages += 1;
        // An unpinned requirement, a VCS or folder package: no version to match.
        if version.trim().is_empty() {
            plan.sources[index].not_covered(&format!("{name}: no pinned version"));
            continue;
        }
        match eco {
            Some(eco) if crate::rules::version::Scheme::of_ecosystem(eco).is_some() => {
                plan.targets.push(Target {
                    ecosystem: eco.to_owned(),
                    package: name.to_owned(),
                    lookup: normalize_name(eco, name),
                    version: version.to_owned(),
                    installed_version: version.to_owned(),
                    project_path: d.project_path.clone(),
                    source: index,
                });
            }
            other => {
                let why = format!("{}: version order not implemented", other.unwrap_or(raw));
                plan.sources[index].not_covered(&why);
                if !plan.not_covered.contains(&why) {
                    plan.not_covered.push(why);
                }
            }
        }
    }
    plan
}

/// One vulnerability affecting a target.
#[derive(Debug, Clone, PartialEq)]
pub struct Match {
    /// The advisory's id.
    pub vuln_id: String,
    /// Its other ids (and those of advisories merged into it).
    pub aliases: Vec<String>,
    /// Versions that fix it.
    pub fixed_versions: Vec<String>,
    /// Severity.
    pub severity: Severity,
    /// CVSS base score.
    pub cvss_score: Option<f64>,
    /// Summary.
    pub summary: String,
}

/// The advisories (already those naming the target's package) that affect `target`, each
/// vulnerability once: advisories sharing an id or alias (a GHSA and the PYSEC of the same
/// CVE) are one match, keeping the worst severity and every fixed version. Withdrawn
/// records and records of other ecosystems are skipped; an installed version the ecosystem
/// cannot read is the error. An advisory that names the package but cannot be evaluated is
/// added to `unevaluable` (`<id>: why`), never dropped (CONTRACT 18).
pub fn affecting(
    target: &Target,
    advisories: &[Record],
    unevaluable: &mut Vec<String>,
) -> Result<Vec<Match>, String> {
    let mut matches: Vec<Match> = Vec::new();
    for record in advisories {
        if record.withdrawn.is_some() {
            continue;
        }
        for entry in &record.affected {
            let Some(p) = &entry.package else { continue };
            let eco = app_ecosystem(&p.ecosystem)
                .map(str::to_owned)
                .unwrap_or_else(|| p.ecosystem.clone());
            let same_eco =
                eco == target.ecosystem || eco.starts_with(&format!("{}:", target.ecosystem));
            if !same_eco || normalize_name(&target.ecosystem, &p.name) != target.lookup {
                continue;
            }
            match entry.verdict(&target.version) {
                Verdict::Affected { fixed } => {
                    let (severity, cvss_score) = record.severity_for(Some(entry));
                    let m = Match {
                        vuln_id: record.id.clone(),
                        aliases: record.aliases.clone(),
                        fixed_versions: fixed,
                        severity,
                        cvss_score,
                        summary: record.summary.clone().unwrap_or_default(),
                    };
                    merge(&mut matches, m);
                }
                Verdict::NotAffected => {}
                Verdict::Unevaluable(why) => unevaluable.push(format!("{}: {why}", record.id)),
                Verdict::Unreadable(e) => return Err(e.to_string()),
            }
        }
    }
    matches.sort_by(|a, b| a.vuln_id.cmp(&b.vuln_id));
    Ok(matches)
}

/// Adds `m`, merging it into a match that shares an id or alias.
fn merge(matches: &mut Vec<Match>, m: Match) {
    let ids = |x: &Match| {
        std::iter::once(x.vuln_id.clone())
            .chain(x.aliases.iter().cloned())
            .collect::<std::collections::HashSet<_>>()
    };
    let mine = ids(&m);
    let Some(same) = matches.iter_mut().find(|x| !ids(x).is_disjoint(&mine)) else {
        matches.push(m);
        return;
    };
    // Keep the id that sorts first (stable whichever record came first), all other ids as
    // aliases, the worst severity, every fix.
    let mut all: Vec<String> = ids(same).union(&mine).cloned().collect();
    all.sort();
    let keep = if same.vuln_id <= m.vuln_id {
        same.vuln_id.clone()
    } else {
        m.vuln_id.clone()
    };
    if (m.severity, m.cvss_score.unwrap_or(0.0)) > (same.severity, same.cvss_score.unwrap_or(0.0)) {
        same.severity = m.severity;
        same.cvss_score = m.cvss_score;
    }
    if same.summary.is_empty() {
        same.summary = m.summary.clone();
    }
    for f in m.fixed_versions {
        if !same.fixed_versions.contains(&f) {
            same.fixed_versions.push(f);
        }
    }
    all.retain(|i| *i != keep);
    same.vuln_id = keep;
    same.aliases = all;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn inventory(mut v: Value) -> Inventory {
        v["collected_at"] = json!("2026-11-26T10:00:00Z");
        Inventory::parse(&v).expect("inventory")
    }

    fn os(v: Value) -> Option<Os> {
        Some(serde_json::from_value(v).expect("os"))
    }

    fn record(v: Value) -> Record {
        serde_json::from_value(v).expect("record")
    }

    #[test]
    fn a_lockfile_the_agent_could_not_read_is_not_covered() {
        let inv = json!({"app_dependencies": [
            {"project_path": "/srv/app", "lockfile": "package-lock.json", "error": "not valid JSON: EOF"},
            {"project_path": "/srv/b", "lockfile": "package-lock.json", "ecosystem": "npm", "name": "lodash", "version": "4.17.20"},
            {"project_path": "/srv/docs", "source": "/srv/docs/requirements.txt", "format": "requirements",
             "ecosystem": "pip", "name": "sphinx", "version": ""},
            {"project_path": "/srv/tool", "source": "/srv/tool/go.mod", "format": "go-mod", "source_kind": "lockfile"}
        ]});
        let plan = targets(&inventory(inv));
        assert_eq!(plan.targets.len(), 1);
        assert!(
            plan.not_covered
                .iter()
                .any(|n| n.contains("/srv/app/package-lock.json") && n.contains("not valid JSON")),
            "{:?}",
            plan.not_covered
        );
        assert_eq!(plan.sources.len(), 4, "{:?}", plan.sources);
        // A source without any package is listed, covered.
        assert_eq!(
            (plan.sources[3].packages, plan.sources[3].status.as_str()),
            (0, "covered")
        );
        // An unpinned requirement is counted and cannot be checked.
        assert_eq!(plan.sources[2].packages, 1);
        assert_eq!(plan.sources[2].status, "not_covered");
        assert_eq!(
            plan.sources[2].reason.as_deref(),
            Some("sphinx: no pinned version")
        );
        assert_eq!(plan.sources[0].source, "/srv/app/package-lock.json");
        assert_eq!(plan.sources[0].status, "not_covered");
        assert_eq!(plan.sources[0].packages, 0);
        assert!(
            plan.sources[0]
                .reason
                .as_deref()
                .unwrap_or_default()
                .contains("not valid JSON")
        );
        assert_eq!(plan.sources[1].status, "covered");
        assert_eq!(plan.sources[1].packages, 1);
        assert_eq!(plan.targets[0].source, 1);
    }

    #[test]
    fn os_packages_are_looked_up_by_source_in_the_release() {
        let inv = json!({
            "os": {"id": "debian", "version": "12"},
            "packages": [
                {"manager": "dpkg", "name": "libssl3", "version": "3.0.15-1~deb12u1+b1",
                 "source": "openssl", "source_version": "3.0.15-1~deb12u1"},
                {"manager": "dpkg", "name": "curl", "version": "7.88.1-10+deb12u8"},
                {"manager": "apk", "name": "stray", "version": "1.0-r0"},
            ],
            "app_dependencies": [
                {"project_path": "/srv/app", "ecosystem": "pip", "name": "Jinja2", "version": "3.1.2"},
                {"project_path": "/srv/app", "ecosystem": "composer", "name": "monolog/monolog", "version": "3.5.0"},
                {"project_path": "/srv/web", "ecosystem": "npm", "name": "lodash", "version": "4.17.20"},
                {"project_path": "/srv/rs", "ecosystem": "cargo", "name": "serde", "version": "1.0.0"},
            ],
        });
        let plan = targets(&inventory(inv));
        let (targets, not_covered) = (&plan.targets, &plan.not_covered);
        assert_eq!(targets.len(), 5, "{targets:?}");
        assert_eq!(
            targets[0],
            Target {
                ecosystem: "Debian:12".into(),
                package: "libssl3".into(),
                lookup: "openssl".into(),
                version: "3.0.15-1~deb12u1".into(),
                installed_version: "3.0.15-1~deb12u1+b1".into(),
                project_path: None,
                source: 0,
            }
        );
        // The package database, then one source per project (named by the project and
        // lockfile when an older agent does not name it): the cargo one cannot be ordered.
        let sources: Vec<_> = plan
            .sources
            .iter()
            .map(|s| {
                (
                    s.source.as_str(),
                    s.format.as_str(),
                    s.packages,
                    s.status.as_str(),
                )
            })
            .collect();
        assert_eq!(
            sources,
            [
                ("/var/lib/dpkg/status", "dpkg", 2, "covered"),
                ("/srv/app/", "", 2, "covered"),
                ("/srv/web/", "", 1, "covered"),
                ("/srv/rs/", "", 1, "not_covered"),
            ]
        );
        assert_eq!(targets[2].ecosystem, "PyPI");
        assert_eq!(targets[2].lookup, "jinja2");
        assert_eq!(targets[3].ecosystem, "Packagist");
        assert_eq!(*not_covered, ["cargo: version order not implemented"]);
        let none = super::targets(&inventory(
            json!({"os": {"id": "arch"}, "packages": [{"manager": "pacman", "name": "x", "version": "1"}]}),
        ));
        assert_eq!(none.not_covered.len(), 1, "{:?}", none.not_covered);
        assert_eq!(none.sources[0].status, "not_covered");
        assert_eq!(none.sources[0].source, "/var/lib/pacman/local");
        assert_eq!(none.sources[0].packages, 1);
        assert_eq!(
            os_ecosystem(os(json!({"id": "alpine", "version": "3.19.1"})).as_ref()),
            Ok("Alpine:v3.19".into())
        );
        assert_eq!(
            os_ecosystem(os(json!({"id": "ubuntu", "version": "22.04"})).as_ref()),
            Ok("Ubuntu:22.04".into())
        );
        assert_eq!(
            normalize_name("PyPI", "Zope.Interface__x"),
            "zope-interface-x"
        );
    }

    #[test]
    fn a_backported_fix_is_not_a_finding_and_aliases_are_one_vulnerability() {
        let t = Target {
            ecosystem: "Debian:12".into(),
            package: "libssl3".into(),
            lookup: "openssl".into(),
            version: "3.0.15-1~deb12u1".into(),
            installed_version: "3.0.15-1~deb12u1".into(),
            project_path: None,
            source: 0,
        };
        // Upstream would call 3.0.15 vulnerable before 3.0.16; Debian fixed it in its own
        // build 3.0.15-1~deb12u1.
        let dsa = record(
            json!({"id": "DSA-1", "modified": "2024-01-01T00:00:00Z", "aliases": ["CVE-2024-1"],
            "affected": [{"package": {"ecosystem": "Debian:12", "name": "openssl"},
                "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": "3.0.15-1~deb12u1"}]}]}]}),
        );
        assert_eq!(affecting(&t, &[dsa], &mut vec![]), Ok(vec![]));
        let older = Target {
            version: "3.0.14-1~deb12u2".into(),
            ..t.clone()
        };
        let a = record(
            json!({"id": "DEBIAN-CVE-2024-2", "modified": "2024-01-01T00:00:00Z",
            "aliases": ["CVE-2024-2"], "summary": "one",
            "affected": [{"package": {"ecosystem": "Debian:12", "name": "openssl"},
                "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": "3.0.15-1~deb12u1"}]}]}]}),
        );
        let b = record(
            json!({"id": "DSA-5000-1", "modified": "2024-01-01T00:00:00Z",
            "aliases": ["CVE-2024-2", "CVE-2024-3"],
            "severity": [{"type": "CVSS_V3", "score": "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H"}],
            "affected": [{"package": {"ecosystem": "Debian:12", "name": "openssl"},
                "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": "3.0.15-1"}]}]}]}),
        );
        let other_release = record(json!({"id": "DSA-9", "modified": "2024-01-01T00:00:00Z",
            "affected": [{"package": {"ecosystem": "Debian:11", "name": "openssl"},
                "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}]}]}]}));
        let found = affecting(&older, &[a, b, other_release], &mut vec![]).expect("readable");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].vuln_id, "DEBIAN-CVE-2024-2");
        assert_eq!(found[0].aliases, ["CVE-2024-2", "CVE-2024-3", "DSA-5000-1"]);
        assert_eq!(found[0].severity, Severity::Critical);
        assert_eq!(found[0].fixed_versions, ["3.0.15-1~deb12u1", "3.0.15-1"]);
        assert_eq!(found[0].summary, "one");
    }

    #[test]
    fn ubuntu_ecosystems_with_a_suffix_match_the_release() {
        let t = Target {
            ecosystem: "Ubuntu:22.04".into(),
            package: "curl".into(),
            lookup: "curl".into(),
            version: "7.81.0-1ubuntu1.14".into(),
            installed_version: "7.81.0-1ubuntu1.14".into(),
            project_path: None,
            source: 0,
        };
        let usn = record(json!({"id": "USN-1", "modified": "2024-01-01T00:00:00Z",
            "affected": [{"package": {"ecosystem": "Ubuntu:22.04:LTS", "name": "curl"},
                "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": "7.81.0-1ubuntu1.15"}]}]}]}));
        assert_eq!(affecting(&t, &[usn], &mut vec![]).expect("ok").len(), 1);
        let bad = Target {
            version: "not a version!".into(),
            ..t
        };
        let usn = record(json!({"id": "USN-2", "modified": "2024-01-01T00:00:00Z",
            "affected": [{"package": {"ecosystem": "Ubuntu:22.04:LTS", "name": "curl"},
                "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": "1"}]}]}]}));
        assert!(affecting(&bad, &[usn], &mut vec![]).is_err());
    }
}
