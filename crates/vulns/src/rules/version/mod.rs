//! Version order per ecosystem (issue 20; CONTRACT 15): every comparison the vulnerability
//! matcher makes goes through [`Scheme::compare`]. Each scheme is a pure function of its own
//! module, written from the rules of the tool that defines it and tested against that tool
//! (`crates/core/tests/version_oracles.rs` runs dpkg, Python `packaging`, node-semver, Ruby's
//! `Gem::Version`, rpm and Go's `x/mod/semver` over hundreds of pairs).

pub mod apk;
pub mod composer;
pub mod dpkg;
pub mod gem;
pub mod golang;
pub mod npm;
pub mod pep440;
pub mod range;
pub mod rpm;

use std::cmp::Ordering;

/// A version string the scheme cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{version}` is not a valid {scheme} version: {why}")]
pub struct Invalid {
    /// The scheme's name.
    pub scheme: &'static str,
    /// The version as given.
    pub version: String,
    /// What is wrong.
    pub why: &'static str,
}

impl Invalid {
    pub(crate) fn new(scheme: &'static str, version: &str, why: &'static str) -> Invalid {
        Invalid {
            scheme,
            version: version.to_owned(),
            why,
        }
    }
}

/// How an ecosystem orders its versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// node-semver (npm).
    Npm,
    /// PEP 440 (PyPI).
    Pep440,
    /// `Gem::Version` (RubyGems).
    Gem,
    /// Go module versions (`golang.org/x/mod/semver`; the `v` is optional here, as in OSV).
    Go,
    /// dpkg (Debian, Ubuntu).
    Dpkg,
    /// rpmvercmp over epoch:version-release (Red Hat, AlmaLinux, Rocky Linux).
    Rpm,
    /// apk-tools (Alpine).
    Apk,
    /// Composer (Packagist): normalised, then PHP's `version_compare`.
    Composer,
}

impl Scheme {
    /// The scheme of an OSV ecosystem name (`npm`, `PyPI`, `Debian:12`, `Alpine:v3.19`, ...),
    /// with SPEC's `pip` for PyPI; `None` for ecosystems the hub cannot order.
    pub fn of_ecosystem(ecosystem: &str) -> Option<Scheme> {
        let base = ecosystem.split(':').next().unwrap_or_default();
        Some(match base {
            "npm" => Scheme::Npm,
            "PyPI" | "pip" => Scheme::Pep440,
            "RubyGems" => Scheme::Gem,
            "Go" => Scheme::Go,
            "Debian" | "Ubuntu" => Scheme::Dpkg,
            "Red Hat" | "AlmaLinux" | "Rocky Linux" => Scheme::Rpm,
            "Alpine" => Scheme::Apk,
            "Packagist" | "composer" => Scheme::Composer,
            _ => return None,
        })
    }

    /// The scheme's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Npm => "npm",
            Scheme::Pep440 => "PEP 440",
            Scheme::Gem => "RubyGems",
            Scheme::Go => "Go",
            Scheme::Dpkg => "dpkg",
            Scheme::Rpm => "rpm",
            Scheme::Apk => "apk",
            Scheme::Composer => "Composer",
        }
    }

    /// Orders `a` against `b`; an error names the version the scheme cannot read.
    pub fn compare(self, a: &str, b: &str) -> Result<Ordering, Invalid> {
        match self {
            Scheme::Npm => npm::compare(a, b),
            Scheme::Pep440 => pep440::compare(a, b),
            Scheme::Gem => gem::compare(a, b),
            Scheme::Go => golang::compare(a, b),
            Scheme::Dpkg => dpkg::compare(a, b),
            Scheme::Rpm => rpm::compare(a, b),
            Scheme::Apk => apk::compare(a, b),
            Scheme::Composer => composer::compare(a, b),
        }
    }

    /// Whether the scheme reads `v`.
    pub fn validate(self, v: &str) -> Result<(), Invalid> {
        self.compare(v, v).map(|_| ())
    }
}

/// Compares two runs of ASCII digits by value, whatever their length and leading zeros.
pub(crate) fn cmp_digits(a: &str, b: &str) -> Ordering {
    let a = a.trim_start_matches('0');
    let b = b.trim_start_matches('0');
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ecosystems_map_to_their_scheme() {
        assert_eq!(Scheme::of_ecosystem("Debian:12"), Some(Scheme::Dpkg));
        assert_eq!(Scheme::of_ecosystem("Ubuntu:22.04:LTS"), Some(Scheme::Dpkg));
        assert_eq!(Scheme::of_ecosystem("Alpine:v3.19"), Some(Scheme::Apk));
        assert_eq!(Scheme::of_ecosystem("Rocky Linux:9"), Some(Scheme::Rpm));
        assert_eq!(Scheme::of_ecosystem("pip"), Some(Scheme::Pep440));
        assert_eq!(Scheme::of_ecosystem("Packagist"), Some(Scheme::Composer));
        assert_eq!(Scheme::of_ecosystem("crates.io"), None);
    }

    #[test]
    fn digit_runs_compare_by_value() {
        assert_eq!(cmp_digits("010", "9"), Ordering::Greater);
        assert_eq!(cmp_digits("0", ""), Ordering::Equal);
        assert_eq!(
            cmp_digits("20191109021931000000", "20191109021931000001"),
            Ordering::Less
        );
    }
}
