//! OSV records (schema 1.7) and the question every scan asks of them: is this version of this
//! package affected? `affected[].versions` lists exact versions; `ranges` of type `SEMVER`
//! (SemVer 2.0 precedence, a leading `v` ignored) and `ECOSYSTEM` (the ecosystem's own order,
//! [`crate::rules::version::Scheme`]) are evaluated with every event kind (`introduced`, `fixed`,
//! `last_affected`, `limit`) as the OSV specification's algorithm does; `GIT` ranges name
//! commits, which agents do not report, and never match. Severity comes from a CVSS v3.x
//! vector (base score computed here) or, failing that, the record's own severity label.

use crate::rules::version::{Invalid, Scheme};
use serde::Deserialize;
use std::cmp::Ordering;

/// One OSV record (the fields the hub uses; others are ignored).
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Record {
    /// Id (`GHSA-…`, `CVE-…`, `DSA-…`, `PYSEC-…`).
    pub id: String,
    /// RFC 3339 time of the last change.
    pub modified: String,
    /// RFC 3339 time of publication.
    #[serde(default)]
    pub published: Option<String>,
    /// Set when the record was withdrawn: it matches nothing any more.
    #[serde(default)]
    pub withdrawn: Option<String>,
    /// Other ids of the same vulnerability.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// One line.
    #[serde(default)]
    pub summary: Option<String>,
    /// Markdown.
    #[serde(default)]
    pub details: Option<String>,
    /// Record-level severities.
    #[serde(default)]
    pub severity: Vec<SeverityEntry>,
    /// What is affected.
    #[serde(default)]
    pub affected: Vec<Affected>,
    /// Free-form data of the database (GitHub writes `severity` there).
    #[serde(default)]
    pub database_specific: Option<serde_json::Value>,
}

/// A severity vector.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct SeverityEntry {
    /// `CVSS_V2`, `CVSS_V3`, `CVSS_V4`, `Ubuntu`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The vector or label.
    pub score: String,
}

/// A package and the versions of it that are affected.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Affected {
    /// The package.
    #[serde(default)]
    pub package: Option<Package>,
    /// Ranges of versions.
    #[serde(default)]
    pub ranges: Vec<Range>,
    /// Exact affected versions.
    #[serde(default)]
    pub versions: Vec<String>,
    /// Package-level severities.
    #[serde(default)]
    pub severity: Vec<SeverityEntry>,
    /// Free-form data of the ecosystem (Ubuntu, Debian write `urgency`/`severity` there).
    #[serde(default)]
    pub ecosystem_specific: Option<serde_json::Value>,
    /// Free-form data of the database.
    #[serde(default)]
    pub database_specific: Option<serde_json::Value>,
}

/// A package in an ecosystem.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Package {
    /// OSV ecosystem (`npm`, `Debian:12`, …).
    pub ecosystem: String,
    /// Name in that ecosystem (a source package for Debian and Ubuntu).
    pub name: String,
    /// Package URL.
    #[serde(default)]
    pub purl: Option<String>,
}

/// A range of affected versions.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Range {
    /// `SEMVER`, `ECOSYSTEM` or `GIT`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The events.
    #[serde(default)]
    pub events: Vec<Event>,
}

/// One event of a range (exactly one field set).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct Event {
    /// Versions from here are affected (`"0"`: from the beginning).
    #[serde(default)]
    pub introduced: Option<String>,
    /// Versions from here are not.
    #[serde(default)]
    pub fixed: Option<String>,
    /// Versions after this are not.
    #[serde(default)]
    pub last_affected: Option<String>,
    /// Versions from here are not considered at all.
    #[serde(default)]
    pub limit: Option<String>,
}

impl Event {
    fn version(&self) -> Option<&str> {
        self.introduced
            .as_deref()
            .or(self.fixed.as_deref())
            .or(self.last_affected.as_deref())
            .or(self.limit.as_deref())
    }
    /// Order among events of the same version: a fix ends a range the same version began.
    fn rank(&self) -> u8 {
        if self.introduced.is_some() {
            0
        } else if self.last_affected.is_some() {
            1
        } else if self.fixed.is_some() {
            2
        } else {
            3
        }
    }
}

/// How a range orders versions.
#[derive(Debug, Clone, Copy)]
enum Order {
    Semver,
    Ecosystem(Scheme),
}

impl Order {
    fn cmp(self, a: &str, b: &str) -> Result<Ordering, Invalid> {
        match self {
            Order::Semver => {
                let strip = |v: &str| v.strip_prefix('v').unwrap_or(v).to_owned();
                crate::rules::version::npm::compare(&strip(a), &strip(b))
            }
            Order::Ecosystem(s) => s.compare(a, b),
        }
    }
}

/// The answer for one version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Affected; with the versions that fix it (from the matching ranges), for patching.
    Affected {
        /// `fixed` events of the ranges that matched.
        fixed: Vec<String>,
    },
    /// Not affected.
    NotAffected,
    /// A version the ecosystem's order cannot read (reported, never silently "not affected").
    Unreadable(Invalid),
    /// Not found affected, but a range of the record could not be evaluated (a version of
    /// the record its ecosystem's order cannot read, or an ecosystem without an order): the
    /// advisory is counted as not evaluated, never taken as "not affected" (CONTRACT 18).
    Unevaluable(String),
}

impl Affected {
    /// Whether `version` of this package is affected (ranges of `ecosystem`'s order).
    pub fn verdict(&self, version: &str) -> Verdict {
        let ecosystem = self
            .package
            .as_ref()
            .map(|p| p.ecosystem.as_str())
            .unwrap_or("");
        let mut fixed = Vec::new();
        // `versions` are equal in the ecosystem's order (`v2.11.6` and `2.11.6.0` are
        // PyPI's `2.11.6`), never by spelling alone.
        let scheme = Scheme::of_ecosystem(ecosystem);
        let mut hit = self.versions.iter().any(|v| {
            v == version || scheme.is_some_and(|s| s.compare(v, version) == Ok(Ordering::Equal))
        });
        let mut unreadable = None;
        let mut unevaluable = None;
        for range in &self.ranges {
            let order = match range.kind.as_str() {
                "SEMVER" => Order::Semver,
                "ECOSYSTEM" => match Scheme::of_ecosystem(ecosystem) {
                    Some(s) => Order::Ecosystem(s),
                    None => {
                        unevaluable = Some(format!(
                            "ecosystem `{ecosystem}` has no version order the hub knows"
                        ));
                        continue;
                    }
                },
                _ => continue,
            };
            match in_range(order, &range.events, version) {
                Ok(true) => {
                    hit = true;
                    fixed.extend(range.events.iter().filter_map(|e| e.fixed.clone()));
                }
                Ok(false) => {}
                Err(e) if e.version == version => unreadable = Some(e),
                // A bad version in the record: that range cannot be evaluated; said so.
                Err(e) => unevaluable = Some(format!("a range cannot be evaluated: {e}")),
            }
        }
        match (hit, unreadable, unevaluable) {
            (true, _, _) => Verdict::Affected { fixed },
            (false, Some(e), _) => Verdict::Unreadable(e),
            (false, None, Some(why)) => Verdict::Unevaluable(why),
            (false, None, None) => Verdict::NotAffected,
        }
    }
}

/// The OSV evaluation of one range: events in version order (`introduced: "0"` first), a
/// version is affected after an `introduced` at or below it until a `fixed` at or below it or
/// a `last_affected` below it; with `limit` events, only versions below some limit count.
fn in_range(order: Order, events: &[Event], version: &str) -> Result<bool, Invalid> {
    // Check the installed version reads at all.
    order.cmp(version, version)?;
    let mut sorted: Vec<&Event> = events.iter().filter(|e| e.version().is_some()).collect();
    let mut bad = None;
    sorted.sort_by(|a, b| {
        let (va, vb) = (a.version().unwrap_or("0"), b.version().unwrap_or("0"));
        let by_version = match (
            va == "0" && a.introduced.is_some(),
            vb == "0" && b.introduced.is_some(),
        ) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            (false, false) => order.cmp(va, vb).unwrap_or_else(|e| {
                bad = Some(e);
                Ordering::Equal
            }),
        };
        by_version.then(a.rank().cmp(&b.rank()))
    });
    if let Some(e) = bad {
        return Err(e);
    }
    let limits: Vec<&str> = sorted.iter().filter_map(|e| e.limit.as_deref()).collect();
    if !limits.is_empty() {
        let mut below_any = false;
        for l in &limits {
            if order.cmp(version, l)? == Ordering::Less {
                below_any = true;
            }
        }
        if !below_any {
            return Ok(false);
        }
    }
    let mut affected = false;
    for e in sorted {
        if let Some(intro) = e.introduced.as_deref() {
            if intro == "0" || order.cmp(version, intro)? != Ordering::Less {
                affected = true;
            }
        } else if let Some(fix) = e.fixed.as_deref() {
            if order.cmp(version, fix)? != Ordering::Less {
                affected = false;
            }
        } else if let Some(last) = e.last_affected.as_deref()
            && order.cmp(version, last)? == Ordering::Greater
        {
            affected = false;
        }
    }
    Ok(affected)
}

pub use trusthub_core::severity::Severity;

/// CVSS v3.0/v3.1 base score of a vector (`CVSS:3.1/AV:N/AC:L/...`), `None` when it is not a
/// complete, valid v3 base vector.
pub fn cvss3_base_score(vector: &str) -> Option<f64> {
    let mut parts = vector.trim().split('/');
    let version = parts.next()?;
    if version != "CVSS:3.1" && version != "CVSS:3.0" {
        return None;
    }
    let mut m = std::collections::HashMap::new();
    for p in parts {
        let (k, v) = p.split_once(':')?;
        if m.insert(k, v).is_some() {
            return None;
        }
    }
    let changed = match *m.get("S")? {
        "U" => false,
        "C" => true,
        _ => return None,
    };
    let av = match *m.get("AV")? {
        "N" => 0.85,
        "A" => 0.62,
        "L" => 0.55,
        "P" => 0.2,
        _ => return None,
    };
    let ac = match *m.get("AC")? {
        "L" => 0.77,
        "H" => 0.44,
        _ => return None,
    };
    let pr = match (*m.get("PR")?, changed) {
        ("N", _) => 0.85,
        ("L", false) => 0.62,
        ("L", true) => 0.68,
        ("H", false) => 0.27,
        ("H", true) => 0.5,
        _ => return None,
    };
    let ui = match *m.get("UI")? {
        "N" => 0.85,
        "R" => 0.62,
        _ => return None,
    };
    let cia = |k: &str| -> Option<f64> {
        Some(match *m.get(k)? {
            "H" => 0.56,
            "L" => 0.22,
            "N" => 0.0,
            _ => return None,
        })
    };
    let (c, i, a) = (cia("C")?, cia("I")?, cia("A")?);
    let iss = 1.0 - (1.0 - c) * (1.0 - i) * (1.0 - a);
    let impact = if changed {
        7.52 * (iss - 0.029) - 3.25 * (iss - 0.02).powi(15)
    } else {
        6.42 * iss
    };
    let exploitability = 8.22 * av * ac * pr * ui;
    if impact <= 0.0 {
        return Some(0.0);
    }
    let raw = if changed {
        (1.08 * (impact + exploitability)).min(10.0)
    } else {
        (impact + exploitability).min(10.0)
    };
    Some(if version == "CVSS:3.1" {
        roundup_31(raw)
    } else {
        (raw * 10.0).ceil() / 10.0
    })
}

/// CVSS 3.1's Roundup: the smallest number with one decimal at or above the input, computed
/// on integers so that floating-point noise does not round 4.0000001 up to 4.1.
fn roundup_31(x: f64) -> f64 {
    let int = (x * 100_000.0).round() as i64;
    if int % 10_000 == 0 {
        int as f64 / 100_000.0
    } else {
        ((int / 10_000) + 1) as f64 / 10.0
    }
}

/// The CVSS v4.0 score of a vector (`CVSS:4.0/AV:N/...`): base metrics, with threat and
/// environmental metrics when given, as FIRST's calculator (RustSec's `cvss` crate, checked
/// against PyPI's `cvss` in the oracle tests); `None` when the vector is not valid.
pub fn cvss4_score(vector: &str) -> Option<f64> {
    let v: cvss::v4::Vector = vector.trim().parse().ok()?;
    Some(v.score().value())
}

impl Record {
    /// What of this record the hub cannot evaluate (CONTRACT 18: such a record is stored and
    /// counted, never dropped): a package of an ecosystem without a version order the hub
    /// knows, a range of a type it does not read, a range event whose version its ecosystem's
    /// order cannot read. Empty when every range can be evaluated. GIT ranges are not read
    /// (the `versions` list that comes with them is).
    pub fn unusable(&self) -> Vec<String> {
        let mut why = Vec::new();
        for (i, a) in self.affected.iter().enumerate() {
            let Some(package) = &a.package else {
                continue;
            };
            let scheme = Scheme::of_ecosystem(&package.ecosystem);
            if scheme.is_none() {
                why.push(format!(
                    "affected[{i}]: ecosystem `{}` has no version order the hub knows",
                    package.ecosystem
                ));
                continue;
            }
            for (r, range) in a.ranges.iter().enumerate() {
                let order = match range.kind.as_str() {
                    "SEMVER" => Order::Semver,
                    "ECOSYSTEM" => Order::Ecosystem(scheme.unwrap_or(Scheme::Npm)),
                    "GIT" => continue,
                    other => {
                        why.push(format!(
                            "affected[{i}].ranges[{r}]: range type `{other}` is not read"
                        ));
                        continue;
                    }
                };
                for e in &range.events {
                    if let Some(v) = e.version()
                        && !(v == "0" && e.introduced.is_some())
                        && let Err(bad) = order.cmp(v, v)
                    {
                        why.push(format!("affected[{i}].ranges[{r}]: {bad}"));
                        break;
                    }
                }
            }
        }
        why
    }

    /// The best severity of the record for `affected` (the package entry matched): a CVSS
    /// v4.0 vector of the entry or the record (highest score), else a CVSS v3.x one, else a
    /// label the database gave.
    pub fn severity_for(&self, affected: Option<&Affected>) -> (Severity, Option<f64>) {
        let vectors = || {
            affected
                .map(|a| a.severity.as_slice())
                .unwrap_or_default()
                .iter()
                .chain(self.severity.iter())
        };
        let highest = |acc: Option<f64>, s: f64| Some(acc.map_or(s, |a: f64| a.max(s)));
        let v4 = vectors()
            .filter(|s| s.kind == "CVSS_V4")
            .filter_map(|s| cvss4_score(&s.score))
            .fold(None, highest);
        let best = v4.or_else(|| {
            vectors()
                .filter(|s| s.kind == "CVSS_V3")
                .filter_map(|s| cvss3_base_score(&s.score))
                .fold(None, highest)
        });
        if let Some(score) = best {
            return (Severity::of_score(score), Some(score));
        }
        let label = |v: &Option<serde_json::Value>| {
            v.as_ref()
                .and_then(|v| v.get("severity").or_else(|| v.get("urgency")))
                .and_then(|s| s.as_str())
                .and_then(Severity::parse)
        };
        let from_entry = affected
            .and_then(|a| label(&a.ecosystem_specific).or_else(|| label(&a.database_specific)));
        let from_label = self
            .severity
            .iter()
            .filter(|s| s.kind == "Ubuntu")
            .find_map(|s| Severity::parse(&s.score));
        (
            from_entry
                .or(from_label)
                .or_else(|| label(&self.database_specific))
                .unwrap_or(Severity::Unknown),
            None,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn affected(ecosystem: &str, ranges: serde_json::Value, versions: &[&str]) -> Affected {
        serde_json::from_value(json!({
            "package": {"ecosystem": ecosystem, "name": "p"},
            "ranges": ranges,
            "versions": versions,
        }))
        .expect("affected")
    }

    fn is(a: &Affected, v: &str) -> bool {
        matches!(a.verdict(v), Verdict::Affected { .. })
    }

    #[test]
    fn versions_lists_compare_in_the_ecosystem_order() {
        let a = affected("PyPI", json!([]), &["v2.11.6", "3.0.0.0"]);
        assert!(is(&a, "2.11.6"));
        assert!(is(&a, "3"));
        assert!(!is(&a, "2.11.7"));
        let npm = affected("npm", json!([]), &["1.2.3"]);
        assert!(is(&npm, "1.2.3"));
        assert!(!is(&npm, "1.2.4"));
    }

    #[test]
    fn a_range_that_cannot_be_evaluated_is_never_not_affected() {
        let a = affected(
            "npm",
            json!([{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "one.two"}]}]),
            &[],
        );
        assert!(matches!(a.verdict("1.0.0"), Verdict::Unevaluable(_)));
        let b = affected(
            "Hackage",
            json!([{"type": "ECOSYSTEM", "events": [{"introduced": "0"}]}]),
            &[],
        );
        assert!(matches!(b.verdict("1.0"), Verdict::Unevaluable(_)));
        // One readable range that matches is enough.
        let c = affected(
            "npm",
            json!([{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "one.two"}]},
                   {"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "2.0.0"}]}]),
            &[],
        );
        assert!(is(&c, "1.0.0"));
    }

    #[test]
    fn unusable_parts_are_named() {
        let record = |affected: serde_json::Value| -> Record {
            serde_json::from_value(
                json!({"id": "X-1", "modified": "2026-01-01T00:00:00Z", "affected": affected}),
            )
            .expect("record")
        };
        assert!(
            record(json!([{"package": {"ecosystem": "npm", "name": "a"},
            "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "1.0.0"}]}]}]))
            .unusable()
            .is_empty()
        );
        let why = record(json!([
            {"package": {"ecosystem": "Hackage", "name": "a"}, "versions": ["1"]},
            {"package": {"ecosystem": "npm", "name": "b"},
             "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "not a version"}]}]},
            {"package": {"ecosystem": "PyPI", "name": "c"}, "ranges": [{"type": "CALVER", "events": []}]}
        ]))
        .unusable();
        assert_eq!(why.len(), 3, "{why:?}");
        assert!(why[0].contains("Hackage"), "{why:?}");
        assert!(why[1].starts_with("affected[1].ranges[0]"), "{why:?}");
        assert!(why[2].contains("CALVER"), "{why:?}");
    }

    #[test]
    fn introduced_and_fixed() {
        let a = affected(
            "npm",
            json!([{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "4.17.21"}]}]),
            &[],
        );
        assert!(is(&a, "4.17.20"));
        assert!(is(&a, "0.0.1"));
        assert!(
            is(&a, "4.17.21-rc.1"),
            "a pre-release of the fix is before the fix"
        );
        assert!(!is(&a, "4.17.21"));
        assert!(!is(&a, "5.0.0"));
        assert_eq!(
            a.verdict("4.0.0"),
            Verdict::Affected {
                fixed: vec!["4.17.21".into()]
            }
        );
    }

    #[test]
    fn several_intervals_in_any_event_order() {
        // Two affected intervals, events listed out of order.
        let a = affected(
            "PyPI",
            json!([{"type": "ECOSYSTEM", "events": [
                {"fixed": "2.0.1"}, {"introduced": "3.0"}, {"introduced": "1.0"}, {"fixed": "3.1.post1"}
            ]}]),
            &[],
        );
        for (v, want) in [
            ("0.9", false),
            ("1.0", true),
            ("2.0", true),
            ("2.0.1", false),
            ("2.5", false),
            ("3.0rc1", false),
            ("3.0", true),
            ("3.1", true),
            ("3.1.post1", false),
            ("4", false),
        ] {
            assert_eq!(is(&a, v), want, "{v}");
        }
    }

    #[test]
    fn last_affected_limit_and_versions() {
        let a = affected(
            "Debian:12",
            json!([{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"last_affected": "1.2-3"}]}]),
            &[],
        );
        assert!(is(&a, "1.2-3"));
        assert!(is(&a, "1.2-2+deb12u1"));
        assert!(!is(&a, "1.2-3+deb12u1"));
        let limited = affected(
            "Go",
            json!([{"type": "SEMVER", "events": [{"introduced": "1.0.0"}, {"limit": "1.5.0"}]}]),
            &[],
        );
        assert!(is(&limited, "v1.4.9"));
        assert!(!is(&limited, "v1.5.0"));
        assert!(!is(&limited, "v0.9.0"));
        let listed = affected("RubyGems", json!([]), &["1.2.3", "1.2.4"]);
        assert!(is(&listed, "1.2.4"));
        assert!(!is(&listed, "1.2.5"));
        // The same version introduced and fixed: nothing affected.
        let empty = affected(
            "npm",
            json!([{"type": "SEMVER", "events": [{"introduced": "1.0.0"}, {"fixed": "1.0.0"}]}]),
            &[],
        );
        assert!(!is(&empty, "1.0.0"));
        // Git ranges name commits: never a match.
        let git = affected(
            "npm",
            json!([{"type": "GIT", "events": [{"introduced": "0"}, {"fixed": "abc"}]}]),
            &[],
        );
        assert!(!is(&git, "1.0.0"));
    }

    #[test]
    fn an_unreadable_installed_version_is_said_so() {
        let a = affected(
            "npm",
            json!([{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "2.0.0"}]}]),
            &[],
        );
        assert!(matches!(a.verdict("not-a-version"), Verdict::Unreadable(_)));
    }

    #[test]
    fn cvss_3_base_scores() {
        for (v, want) in [
            ("CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H", 9.8),
            ("CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:C/C:H/I:H/A:H", 10.0),
            ("CVSS:3.1/AV:N/AC:L/PR:N/UI:R/S:C/C:L/I:L/A:N", 6.1),
            ("CVSS:3.1/AV:L/AC:L/PR:L/UI:N/S:U/C:H/I:N/A:N", 5.5),
            ("CVSS:3.1/AV:N/AC:H/PR:N/UI:N/S:U/C:N/I:N/A:N", 0.0),
            ("CVSS:3.0/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H", 9.8),
        ] {
            assert_eq!(cvss3_base_score(v), Some(want), "{v}");
        }
        for bad in [
            "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H",
            "CVSS:2.0/AV:N",
            "CVSS:3.1/AV:X/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H",
            "CVSS:3.1/AV:N/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H",
        ] {
            assert_eq!(cvss3_base_score(bad), None, "{bad}");
        }
        assert_eq!(Severity::of_score(9.8), Severity::Critical);
        assert_eq!(Severity::of_score(6.1), Severity::Medium);
        assert_eq!(Severity::parse("Moderate"), Some(Severity::Medium));
    }

    #[test]
    fn severity_prefers_cvss_then_labels() {
        let r: Record = serde_json::from_value(json!({
            "id": "GHSA-x", "modified": "2024-01-01T00:00:00Z",
            "severity": [{"type": "CVSS_V3", "score": "CVSS:3.1/AV:N/AC:L/PR:N/UI:R/S:C/C:L/I:L/A:N"}],
            "affected": [{"package": {"ecosystem": "npm", "name": "p"}}],
            "database_specific": {"severity": "HIGH"},
            "unknown_field": true,
        }))
        .expect("record");
        assert_eq!(
            r.severity_for(r.affected.first()),
            (Severity::Medium, Some(6.1))
        );
        let r: Record = serde_json::from_value(json!({
            "id": "DEBIAN-CVE-x", "modified": "2024-01-01T00:00:00Z",
            "affected": [{"package": {"ecosystem": "Debian:12", "name": "p"},
                "ecosystem_specific": {"urgency": "low"}}],
        }))
        .expect("record");
        assert_eq!(r.severity_for(r.affected.first()), (Severity::Low, None));
    }

    #[test]
    fn a_cvss_4_vector_is_scored_and_preferred_to_cvss_3() {
        let r: Record = serde_json::from_value(json!({
            "id": "GHSA-v4", "modified": "2024-01-01T00:00:00Z",
            "severity": [
                {"type": "CVSS_V3", "score": "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H"},
                {"type": "CVSS_V4", "score": "CVSS:4.0/AV:N/AC:L/AT:N/PR:N/UI:N/VC:L/VI:N/VA:N/SC:N/SI:N/SA:N"},
            ],
            "affected": [{"package": {"ecosystem": "npm", "name": "p"}}],
        }))
        .expect("record");
        assert_eq!(r.severity_for(None), (Severity::Medium, Some(6.9)));
        assert_eq!(cvss4_score("CVSS:4.0/AV:N"), None);
    }
}
