//! The pure rules of auto-patch (CONTRACT 19): which manager patches an ecosystem, what is a
//! kernel package, the target version (Dependabot's "minimum secure version" on the
//! installed major line), and the per-host plan with its filters and cap.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashSet};
use trusthub_vulns::patching::HostFinding;
use trusthub_vulns::rules::version::Scheme;

/// At most this many packages per host per cycle.
pub const MAX_PACKAGES_PER_CYCLE: usize = 25;

/// The two things a host can have patched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Category {
    /// Distribution packages (apt, dnf, apk, zypper).
    OsPackages,
    /// Application dependencies of a lockfile (npm, pip, composer, bundler, go).
    AppDeps,
}

impl Category {
    /// `os_packages` or `app_deps`.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::OsPackages => "os_packages",
            Category::AppDeps => "app_deps",
        }
    }
}

/// The category and manager that patch a finding of `ecosystem` (an OSV name: `Debian:12`,
/// `npm`, ...); `None` for ecosystems nothing here patches.
pub fn manager_of(ecosystem: &str) -> Option<(Category, &'static str)> {
    let base = ecosystem.split(':').next().unwrap_or_default();
    Some(match base {
        "Debian" | "Ubuntu" => (Category::OsPackages, "apt"),
        "Red Hat" | "AlmaLinux" | "Rocky Linux" | "Fedora" | "CentOS" | "Oracle Linux" => {
            (Category::OsPackages, "dnf")
        }
        "Alpine" => (Category::OsPackages, "apk"),
        "SUSE" | "openSUSE" => (Category::OsPackages, "zypper"),
        "npm" => (Category::AppDeps, "npm"),
        "PyPI" | "pip" => (Category::AppDeps, "pip"),
        "Packagist" | "composer" => (Category::AppDeps, "composer"),
        "RubyGems" => (Category::AppDeps, "bundler"),
        "Go" => (Category::AppDeps, "go"),
        _ => return None,
    })
}

/// Whether a binary package of `manager` is a kernel package, never auto-patched: apt's
/// `APT::VersionedKernelPackages` patterns, dnf's `installonlypkgs`, apk's kernel flavours,
/// zypper's `kernel-*`.
pub fn is_kernel(manager: &str, name: &str) -> bool {
    match manager {
        "apt" => [
            "linux-image-",
            "linux-headers-",
            "linux-modules-",
            "linux-kbuild-",
            "linux-signed-",
        ]
        .iter()
        .any(|p| name.starts_with(p)),
        "dnf" | "zypper" => name == "kernel" || name.starts_with("kernel-"),
        "apk" => {
            let flavours = [
                "linux-lts",
                "linux-virt",
                "linux-edge",
                "linux-rpi",
                "linux-stable",
            ];
            flavours
                .iter()
                .any(|f| name == *f || name.starts_with(&format!("{f}-")))
        }
        _ => false,
    }
}

/// Whether a finding is a kernel finding: its source is Debian's `linux` (or a signed
/// variant), or a binary it would upgrade is a kernel package.
pub fn is_kernel_finding(manager: &str, f: &HostFinding) -> bool {
    (manager == "apt" && (f.package == "linux" || f.package.starts_with("linux-signed")))
        || is_kernel(manager, &f.package)
        || f.binaries.iter().any(|(b, _)| is_kernel(manager, b))
}

/// The major line of a version: its first run of digits after an epoch (`1:`) and a `v`.
pub fn major(version: &str) -> Option<&str> {
    let v = match version.split_once(':') {
        Some((epoch, rest)) if epoch.bytes().all(|b| b.is_ascii_digit()) => rest,
        _ => version,
    };
    let v = v.trim_start_matches(['v', 'V']);
    let end = v.bytes().take_while(u8::is_ascii_digit).count();
    (end > 0).then(|| &v[..end])
}

/// The lowest version in `fixes` above `installed`, on the installed major line where one
/// is; `None` when no fix is above it.
pub fn lowest_fix(scheme: Scheme, installed: &str, fixes: &[String]) -> Option<String> {
    let above: Vec<&String> = fixes
        .iter()
        .filter(|f| scheme.compare(f, installed) == Ok(Ordering::Greater))
        .collect();
    let line = major(installed);
    let same: Vec<&&String> = above.iter().filter(|f| major(f) == line).collect();
    let pool: Vec<&String> = if same.is_empty() {
        above
    } else {
        same.into_iter().copied().collect()
    };
    pool.into_iter()
        .min_by(|a, b| scheme.compare(a, b).unwrap_or(Ordering::Equal))
        .cloned()
}

/// The version that fixes every advisory in `advisories` (each with its fixes) at
/// `installed`: the highest of each one's lowest fix; `None` when one has no fix above it.
pub fn target_version(scheme: Scheme, installed: &str, advisories: &[&[String]]) -> Option<String> {
    let mut target: Option<String> = None;
    for fixes in advisories {
        let fix = lowest_fix(scheme, installed, fixes)?;
        target = match target {
            Some(t) if scheme.compare(&t, &fix) != Ok(Ordering::Less) => Some(t),
            _ => Some(fix),
        };
    }
    target
}

/// A package version change in an attempt.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Change {
    /// The package the manager installs (the binary package for OS packages).
    pub name: String,
    /// The installed version.
    pub from: String,
    /// The target.
    pub to: String,
    /// The advisories it fixes.
    pub vuln_ids: Vec<String>,
    /// The source package, when it differs from `name`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub source: Option<String>,
}

/// One signed action the plan sends: a package (OS) or a project's packages (dependencies).
#[derive(Debug, Clone, PartialEq)]
pub struct Dispatch {
    /// Its category.
    pub category: Category,
    /// `apt`, `npm`, ...
    pub manager: &'static str,
    /// The OSV ecosystem.
    pub ecosystem: String,
    /// The lockfile's folder; `""` for OS packages.
    pub project_path: String,
    /// What it installs.
    pub packages: Vec<Change>,
    /// The worst severity among the advisories, and its rank.
    pub severity: String,
    /// Its rank.
    pub severity_rank: i64,
    /// What identifies the packages and advisories (the no-retry rule).
    pub key: String,
    /// The advisory ids, sorted.
    pub advisories: Vec<String>,
}

/// Why a finding was not patched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip {
    /// The package.
    pub package: String,
    /// Its OSV ecosystem.
    pub ecosystem: String,
    /// The advisories.
    pub vuln_ids: Vec<String>,
    /// `suppressed`, `acknowledged`, `kernel`, `no_fix` or `cap`.
    pub reason: &'static str,
    /// The suppression, when suppressed.
    pub suppression: Option<(uuid::Uuid, String)>,
}

/// A host's plan for one cycle.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Plan {
    /// What is sent.
    pub dispatch: Vec<Dispatch>,
    /// What is not, and why.
    pub skipped: Vec<Skip>,
}

/// What a host's settings open.
#[derive(Debug, Clone, Copy)]
pub struct Scope {
    /// OS packages on.
    pub os_packages: bool,
    /// Application dependencies on.
    pub app_deps: bool,
    /// The lowest severity rank patched (CRITICAL 4, HIGH 3).
    pub min_rank: i64,
}

/// The plan for a host's unfixed `findings`: per package, the open advisories at or above the
/// minimum severity with a known fix, not acknowledged, not suppressed, never a kernel
/// package; worst first and at most [`MAX_PACKAGES_PER_CYCLE`] packages. `blocked` holds the
/// keys not to send again (in flight, or rolled back with the same advisories).
pub fn plan(findings: &[HostFinding], scope: Scope, blocked: &HashSet<String>) -> Plan {
    // Per (ecosystem, project, package): its findings.
    let mut groups: BTreeMap<(String, String, String), Vec<&HostFinding>> = BTreeMap::new();
    for f in findings {
        groups
            .entry((
                f.ecosystem.clone(),
                f.project_path.clone(),
                f.package.clone(),
            ))
            .or_default()
            .push(f);
    }
    let mut out = Plan::default();
    let mut candidates: Vec<Dispatch> = Vec::new();
    for ((ecosystem, project, package), fs) in groups {
        let Some((category, manager)) = manager_of(&ecosystem) else {
            continue;
        };
        let on = match category {
            Category::OsPackages => scope.os_packages,
            Category::AppDeps => scope.app_deps,
        };
        let Some(scheme) = Scheme::of_ecosystem(&ecosystem) else {
            continue;
        };
        let relevant: Vec<&&HostFinding> = fs
            .iter()
            .filter(|f| f.severity_rank >= scope.min_rank)
            .collect();
        if !on || relevant.is_empty() {
            continue;
        }
        let mut skip = |reason: &'static str, which: &[&&HostFinding]| {
            out.skipped.push(Skip {
                package: package.clone(),
                ecosystem: ecosystem.clone(),
                vuln_ids: which.iter().map(|f| f.vuln_id.clone()).collect(),
                reason,
                suppression: which.first().and_then(|f| f.suppression.clone()),
            });
        };
        // Suppressed ones are recorded per suppression, acknowledged ones together.
        let mut suppressed: BTreeMap<uuid::Uuid, Vec<&&HostFinding>> = BTreeMap::new();
        for f in relevant.iter().filter(|f| f.suppression.is_some()) {
            if let Some((id, _)) = &f.suppression {
                suppressed.entry(*id).or_default().push(f);
            }
        }
        for which in suppressed.values() {
            skip("suppressed", which);
        }
        let acked: Vec<&&HostFinding> = relevant
            .iter()
            .filter(|f| f.suppression.is_none() && f.acknowledged)
            .copied()
            .collect();
        if !acked.is_empty() {
            skip("acknowledged", &acked);
        }
        let open: Vec<&&HostFinding> = relevant
            .iter()
            .filter(|f| f.suppression.is_none() && !f.acknowledged)
            .copied()
            .collect();
        if open.is_empty() {
            continue;
        }
        if category == Category::OsPackages && fs.iter().any(|f| is_kernel_finding(manager, f)) {
            skip("kernel", &open);
            continue;
        }
        let installed = &open[0].installed_version;
        // The target fixes every open advisory of the package, whatever its severity.
        let all_open: Vec<&HostFinding> = fs
            .iter()
            .filter(|f| f.suppression.is_none() && !f.acknowledged)
            .copied()
            .collect();
        let fixes: Vec<&[String]> = all_open
            .iter()
            .filter(|f| !f.fixed_versions.is_empty())
            .map(|f| f.fixed_versions.as_slice())
            .collect();
        let no_fix: Vec<&&HostFinding> = open
            .iter()
            .filter(|f| lowest_fix(scheme, installed, &f.fixed_versions).is_none())
            .copied()
            .collect();
        if no_fix.len() == open.len() {
            skip("no_fix", &open);
            continue;
        }
        if !no_fix.is_empty() {
            skip("no_fix", &no_fix);
        }
        let fixable: Vec<&[String]> = fixes
            .into_iter()
            .filter(|f| lowest_fix(scheme, installed, f).is_some())
            .collect();
        let Some(to) = target_version(scheme, installed, &fixable) else {
            continue;
        };
        let mut vuln_ids: Vec<String> = open
            .iter()
            .filter(|f| lowest_fix(scheme, installed, &f.fixed_versions).is_some())
            .map(|f| f.vuln_id.clone())
            .collect();
        vuln_ids.sort();
        vuln_ids.dedup();
        let worst = open.iter().map(|f| f.severity_rank).max().unwrap_or(0);
        let severity = open
            .iter()
            .find(|f| f.severity_rank == worst)
            .map(|f| f.severity.clone())
            .unwrap_or_default();
        let changes: Vec<Change> = if open[0].binaries.is_empty() {
            vec![Change {
                name: package.clone(),
                from: installed.clone(),
                to: to.clone(),
                vuln_ids: vuln_ids.clone(),
                source: None,
            }]
        } else {
            open[0]
                .binaries
                .iter()
                .map(|(name, version)| Change {
                    name: name.clone(),
                    from: version.clone(),
                    to: to.clone(),
                    vuln_ids: vuln_ids.clone(),
                    source: (name != &package).then(|| package.clone()),
                })
                .collect()
        };
        let key = format!("{ecosystem}|{project}|{package}");
        let advisories = vuln_ids.join(",");
        let applied_already = changes
            .iter()
            .all(|c| blocked.contains(&format!("{key}|{advisories}|{}", c.from)));
        if blocked.contains(&format!("{key}|{advisories}"))
            || blocked.contains(&key)
            || applied_already
        {
            continue;
        }
        candidates.push(Dispatch {
            category,
            manager,
            ecosystem: ecosystem.clone(),
            project_path: project.clone(),
            packages: changes,
            severity,
            severity_rank: worst,
            key,
            advisories: vuln_ids,
        });
    }
    // Worst first; the cap counts packages (an OS source package counts once).
    candidates.sort_by(|a, b| {
        b.severity_rank
            .cmp(&a.severity_rank)
            .then_with(|| a.key.cmp(&b.key))
    });
    let mut kept: Vec<Dispatch> = Vec::new();
    for (i, d) in candidates.into_iter().enumerate() {
        if i < MAX_PACKAGES_PER_CYCLE {
            kept.push(d);
        } else {
            out.skipped.push(Skip {
                package: d.key.rsplit('|').next().unwrap_or_default().to_owned(),
                ecosystem: d.ecosystem.clone(),
                vuln_ids: d.advisories.clone(),
                reason: "cap",
                suppression: None,
            });
        }
    }
    // Dependencies of one project and ecosystem go in one action.
    let mut merged: Vec<Dispatch> = Vec::new();
    for d in kept {
        if d.category == Category::AppDeps
            && let Some(m) = merged.iter_mut().find(|m| {
                m.category == Category::AppDeps
                    && m.ecosystem == d.ecosystem
                    && m.project_path == d.project_path
            })
        {
            m.packages.extend(d.packages);
            m.advisories.extend(d.advisories);
            m.key = format!("{}+{}", m.key, d.key.rsplit('|').next().unwrap_or_default());
            continue;
        }
        merged.push(d);
    }
    out.dispatch = merged;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(
        eco: &str,
        package: &str,
        installed: &str,
        vuln: &str,
        fixes: &[&str],
        rank: i64,
    ) -> HostFinding {
        HostFinding {
            id: uuid::Uuid::new_v4(),
            tenant: trusthub_store::TenantId(uuid::Uuid::nil()),
            ecosystem: eco.into(),
            package: package.into(),
            binaries: Vec::new(),
            project_path: if eco.contains(':') {
                String::new()
            } else {
                "/srv/app".into()
            },
            vuln_id: vuln.into(),
            installed_version: installed.into(),
            fixed_versions: fixes.iter().map(|s| (*s).to_owned()).collect(),
            severity: ["UNKNOWN", "LOW", "MEDIUM", "HIGH", "CRITICAL"][rank as usize].into(),
            severity_rank: rank,
            acknowledged: false,
            suppression: None,
        }
    }

    const ALL: Scope = Scope {
        os_packages: true,
        app_deps: true,
        min_rank: 3,
    };

    #[test]
    fn the_target_is_the_minimum_secure_version_on_the_installed_major_line() {
        let s = Scheme::Npm;
        let f = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        // Fixed on 4.x and 5.x: the 4.x fix, not the newest.
        assert_eq!(
            lowest_fix(s, "4.17.15", &f(&["5.0.1", "4.17.21"])),
            Some("4.17.21".into())
        );
        // Only a new major fixes it: that one.
        assert_eq!(
            lowest_fix(s, "3.1.0", &f(&["4.0.0", "5.0.0"])),
            Some("4.0.0".into())
        );
        // Nothing above the installed version: no fix.
        assert_eq!(lowest_fix(s, "4.17.21", &f(&["4.17.21", "4.0.0"])), None);
        // Two advisories: the higher of their lowest fixes.
        let a = f(&["4.17.19"]);
        let b = f(&["4.17.21", "5.0.0"]);
        assert_eq!(
            target_version(s, "4.17.15", &[&a, &b]),
            Some("4.17.21".into())
        );
        // dpkg order, epochs and Debian revisions.
        let d = Scheme::Dpkg;
        assert_eq!(
            lowest_fix(d, "3.0.11-1~deb12u2", &f(&["3.0.11-1~deb12u3", "3.0.13-1"])),
            Some("3.0.11-1~deb12u3".into())
        );
        assert_eq!(major("1:2.3-4"), Some("2"));
        assert_eq!(major("v1.20.3"), Some("1"));
        assert_eq!(major("abc"), None);
    }

    #[test]
    fn kernels_are_never_patched_by_each_managers_rules() {
        for (m, n) in [
            ("apt", "linux-image-6.1.0-26-amd64"),
            ("apt", "linux-headers-amd64"),
            ("apt", "linux-modules-6.1.0-26-amd64"),
            ("dnf", "kernel"),
            ("dnf", "kernel-core"),
            ("dnf", "kernel-modules-extra"),
            ("apk", "linux-lts"),
            ("apk", "linux-virt"),
            ("zypper", "kernel-default"),
        ] {
            assert!(is_kernel(m, n), "{m} {n}");
        }
        for (m, n) in [
            ("apt", "linux-base"),
            ("apt", "openssl"),
            ("dnf", "kernelshark"),
            ("apk", "linux-pam"),
        ] {
            assert!(!is_kernel(m, n), "{m} {n}");
        }
        let mut f = finding(
            "Debian:12",
            "linux",
            "6.1.112-1",
            "DSA-1",
            &["6.1.115-1"],
            4,
        );
        f.binaries = vec![("linux-libc-dev".into(), "6.1.112-1".into())];
        let p = plan(&[f], ALL, &HashSet::new());
        assert!(p.dispatch.is_empty());
        assert_eq!(p.skipped[0].reason, "kernel");
    }

    #[test]
    fn the_plan_filters_by_severity_fix_acknowledgement_and_suppression_and_caps() {
        let mut suppressed = finding("npm", "lodash", "4.17.15", "GHSA-1", &["4.17.21"], 3);
        let sid = uuid::Uuid::new_v4();
        suppressed.suppression = Some((sid, "not reachable".into()));
        let mut acked = finding("npm", "minimist", "1.2.5", "GHSA-2", &["1.2.6"], 4);
        acked.acknowledged = true;
        let findings = vec![
            suppressed,
            acked,
            finding("npm", "express", "4.17.0", "GHSA-3", &["4.19.2"], 3),
            finding("npm", "qs", "6.5.2", "GHSA-4", &["6.5.3"], 2), // MEDIUM: below HIGH
            finding("npm", "ws", "7.4.0", "GHSA-5", &[], 4),        // no fix
            finding("PyPI", "jinja2", "3.1.2", "GHSA-6", &["3.1.3"], 4),
        ];
        let p = plan(&findings, ALL, &HashSet::new());
        let reasons: Vec<(&str, &str)> = p
            .skipped
            .iter()
            .map(|s| (s.package.as_str(), s.reason))
            .collect();
        assert!(reasons.contains(&("lodash", "suppressed")), "{reasons:?}");
        assert_eq!(
            p.skipped
                .iter()
                .find(|s| s.package == "lodash")
                .and_then(|s| s.suppression.clone()),
            Some((sid, "not reachable".into()))
        );
        assert!(reasons.contains(&("minimist", "acknowledged")));
        assert!(reasons.contains(&("ws", "no_fix")));
        assert!(
            !reasons.iter().any(|(p, _)| *p == "qs"),
            "below the minimum: out of scope"
        );
        // One action per project and ecosystem: express alone for npm, jinja2 for PyPI.
        assert_eq!(p.dispatch.len(), 2, "{:?}", p.dispatch);
        let npm = p.dispatch.iter().find(|d| d.manager == "npm").expect("npm");
        assert_eq!(npm.packages.len(), 1);
        assert_eq!(npm.packages[0].to, "4.19.2");
        // Only OS packages on: nothing of these.
        let os_only = Scope {
            app_deps: false,
            ..ALL
        };
        assert!(
            plan(&findings, os_only, &HashSet::new())
                .dispatch
                .is_empty()
        );
        // CRITICAL only: jinja2.
        let critical = Scope { min_rank: 4, ..ALL };
        let c = plan(&findings, critical, &HashSet::new());
        assert_eq!(c.dispatch.len(), 1);
        assert_eq!(c.dispatch[0].packages[0].name, "jinja2");
        // A rolled-back target is not sent again for the same advisories; an applied one
        // not while the installed version is the one it upgraded.
        let blocked: HashSet<String> = [format!("{}|{}", c.dispatch[0].key, "GHSA-6")].into();
        assert!(plan(&findings, critical, &blocked).dispatch.is_empty());
        let applied: HashSet<String> = [format!("{}|GHSA-6|3.1.2", c.dispatch[0].key)].into();
        assert!(plan(&findings, critical, &applied).dispatch.is_empty());
        let elsewhere: HashSet<String> = [format!("{}|GHSA-6|3.1.1", c.dispatch[0].key)].into();
        assert_eq!(plan(&findings, critical, &elsewhere).dispatch.len(), 1);
        // 30 OS packages: 25 sent, 5 skipped for the cap.
        let many: Vec<HostFinding> = (0..30)
            .map(|i| {
                finding(
                    "Debian:12",
                    &format!("pkg{i:02}"),
                    "1.0-1",
                    &format!("DSA-{i}"),
                    &["1.0-2"],
                    3,
                )
            })
            .collect();
        let m = plan(&many, ALL, &HashSet::new());
        assert_eq!(m.dispatch.len(), 25);
        assert_eq!(m.skipped.iter().filter(|s| s.reason == "cap").count(), 5);
    }

    #[test]
    fn os_packages_install_their_binaries_at_the_source_target() {
        let mut f = finding(
            "Debian:12",
            "openssl",
            "3.0.11-1~deb12u2",
            "DSA-5532-1",
            &["3.0.11-1~deb12u3"],
            4,
        );
        f.binaries = vec![
            ("libssl3".into(), "3.0.11-1~deb12u2".into()),
            ("openssl".into(), "3.0.11-1~deb12u2".into()),
        ];
        let p = plan(&[f], ALL, &HashSet::new());
        assert_eq!(p.dispatch.len(), 1);
        let d = &p.dispatch[0];
        assert_eq!(d.manager, "apt");
        assert_eq!(
            d.packages
                .iter()
                .map(|c| (c.name.as_str(), c.to.as_str(), c.source.as_deref()))
                .collect::<Vec<_>>(),
            vec![
                ("libssl3", "3.0.11-1~deb12u3", Some("openssl")),
                ("openssl", "3.0.11-1~deb12u3", None)
            ]
        );
    }
}
