//! node-semver's order (npm; SemVer 2.0.0 precedence): strict `MAJOR.MINOR.PATCH` without
//! leading zeros, an optional `v`, pre-release identifiers (numeric by value, before
//! alphanumeric, alphanumeric by ASCII; a version with a pre-release before the same version
//! without), build metadata ignored.

use super::Invalid;
use std::cmp::Ordering;

const NAME: &str = "npm";

/// A parsed SemVer version (borrowed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SemVer<'a> {
    /// Major, minor, patch as digit strings without leading zeros.
    pub core: [&'a str; 3],
    /// Pre-release identifiers.
    pub pre: Vec<&'a str>,
}

fn numeric(id: &str) -> bool {
    !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit())
}

fn ident_ok(id: &str, leading_zero_ok: bool) -> bool {
    !id.is_empty()
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && (leading_zero_ok || !numeric(id) || id == "0" || !id.starts_with('0'))
}

/// Reads `v` as node-semver's `semver.valid` does (strict; a leading `v` allowed, no spaces).
pub fn parse(v: &str) -> Result<SemVer<'_>, Invalid> {
    let bad = |why| Invalid::new(NAME, v, why);
    let s = v.strip_prefix('v').unwrap_or(v);
    let (s, build) = match s.split_once('+') {
        Some((s, b)) => (s, Some(b)),
        None => (s, None),
    };
    if let Some(b) = build
        && !b.split('.').all(|id| ident_ok(id, true))
    {
        return Err(bad("bad build metadata"));
    }
    let (main, pre) = match s.split_once('-') {
        Some((m, p)) => (m, Some(p)),
        None => (s, None),
    };
    let parts: Vec<&str> = main.split('.').collect();
    let [major, minor, patch] = parts[..] else {
        return Err(bad("not MAJOR.MINOR.PATCH"));
    };
    for n in [major, minor, patch] {
        if !numeric(n) || (n.len() > 1 && n.starts_with('0')) {
            return Err(bad(
                "a version number is not a number without leading zeros",
            ));
        }
        // node-semver refuses numbers above Number.MAX_SAFE_INTEGER.
        if super::cmp_digits(n, "9007199254740991") == Ordering::Greater {
            return Err(bad("a version number is too large"));
        }
    }
    let pre = match pre {
        None => Vec::new(),
        Some(p) => {
            let ids: Vec<&str> = p.split('.').collect();
            if !ids.iter().all(|id| ident_ok(id, false)) {
                return Err(bad("bad pre-release"));
            }
            ids
        }
    };
    Ok(SemVer {
        core: [major, minor, patch],
        pre,
    })
}

/// Pre-release precedence (SemVer 11.4): none is newer than any.
pub fn cmp_pre(a: &[&str], b: &[&str]) -> Ordering {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Greater,
        (false, true) => return Ordering::Less,
        _ => {}
    }
    for (x, y) in a.iter().zip(b) {
        let o = match (numeric(x), numeric(y)) {
            (true, true) => super::cmp_digits(x, y),
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            (false, false) => x.cmp(y),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    a.len().cmp(&b.len())
}

impl SemVer<'_> {
    /// Precedence.
    pub fn precedence(&self, other: &SemVer<'_>) -> Ordering {
        self.core
            .iter()
            .zip(other.core.iter())
            .map(|(x, y)| super::cmp_digits(x, y))
            .find(|o| *o != Ordering::Equal)
            .unwrap_or(Ordering::Equal)
            .then_with(|| cmp_pre(&self.pre, &other.pre))
    }
}

/// Orders two versions as `semver.compare`.
pub fn compare(a: &str, b: &str) -> Result<Ordering, Invalid> {
    Ok(parse(a)?.precedence(&parse(b)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use Ordering::*;

    #[test]
    fn semver_precedence() {
        // SemVer 2.0.0 section 11's chain.
        let chain = [
            "1.0.0-alpha",
            "1.0.0-alpha.1",
            "1.0.0-alpha.beta",
            "1.0.0-beta",
            "1.0.0-beta.2",
            "1.0.0-beta.11",
            "1.0.0-rc.1",
            "1.0.0",
            "2.0.0",
            "2.1.0",
            "2.1.1",
        ];
        for w in chain.windows(2) {
            assert_eq!(compare(w[0], w[1]), Ok(Less), "{} < {}", w[0], w[1]);
        }
        assert_eq!(compare("v1.2.3", "1.2.3+build.7"), Ok(Equal));
        assert_eq!(compare("1.2.3-0", "1.2.3-a"), Ok(Less));
        for bad in [
            "1.2", "01.2.3", "1.2.3-01", "1.2.3-", "1.2.3+", "a.b.c", "1.2.3.4",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
