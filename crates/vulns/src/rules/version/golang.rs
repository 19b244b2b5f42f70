//! Go module versions (`golang.org/x/mod/semver`): semantic versions with a `v` (optional
//! here: OSV writes Go versions without it), `vMAJOR` and `vMAJOR.MINOR` as shorthands,
//! pre-releases as in SemVer (pseudo-versions such as `v0.0.0-20191109021931-daa7c04131f5` are
//! pre-releases and order by their time), `+incompatible` and other build metadata ignored.

use super::Invalid;
use std::cmp::Ordering;

const NAME: &str = "Go";

fn num_ok(n: &str) -> bool {
    !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && (n == "0" || !n.starts_with('0'))
}

/// `(major, minor, patch, pre-release identifiers)`.
pub fn parse(v: &str) -> Result<([&str; 3], Vec<&str>), Invalid> {
    let bad = |why| Invalid::new(NAME, v, why);
    let s = v.strip_prefix('v').unwrap_or(v);
    let (s, build) = match s.split_once('+') {
        Some((s, b)) => (s, Some(b)),
        None => (s, None),
    };
    if let Some(b) = build
        && !b
            .split('.')
            .all(|id| !id.is_empty() && id.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-'))
    {
        return Err(bad("bad build metadata"));
    }
    let (main, pre) = match s.split_once('-') {
        Some((m, p)) => (m, Some(p)),
        None => (s, None),
    };
    let parts: Vec<&str> = main.split('.').collect();
    if parts.len() > 3 || !parts.iter().all(|p| num_ok(p)) {
        return Err(bad("not vMAJOR[.MINOR[.PATCH]] without leading zeros"));
    }
    // Shorthands only without pre-release or build.
    if parts.len() < 3 && (pre.is_some() || build.is_some()) {
        return Err(bad(
            "a shorthand version cannot have a pre-release or build",
        ));
    }
    let get = |i: usize| parts.get(i).copied().unwrap_or("0");
    let pre = match pre {
        None => Vec::new(),
        Some(p) => {
            let ids: Vec<&str> = p.split('.').collect();
            let ok = ids.iter().all(|id| {
                !id.is_empty()
                    && id.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-')
                    && (!id.bytes().all(|c| c.is_ascii_digit()) || num_ok(id))
            });
            if !ok {
                return Err(bad("bad pre-release"));
            }
            ids
        }
    };
    Ok(([get(0), get(1), get(2)], pre))
}

/// Orders two module versions as `semver.Compare` (both must be valid here).
pub fn compare(a: &str, b: &str) -> Result<Ordering, Invalid> {
    let (ca, pa) = parse(a)?;
    let (cb, pb) = parse(b)?;
    Ok(ca
        .iter()
        .zip(cb.iter())
        .map(|(x, y)| super::cmp_digits(x, y))
        .find(|o| *o != Ordering::Equal)
        .unwrap_or(Ordering::Equal)
        .then_with(|| super::npm::cmp_pre(&pa, &pb)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use Ordering::*;

    #[test]
    fn module_versions() {
        assert_eq!(compare("v1", "v1.0.0"), Ok(Equal));
        assert_eq!(compare("v1.2", "v1.2.0"), Ok(Equal));
        assert_eq!(compare("v2.0.0+incompatible", "v2.0.0"), Ok(Equal));
        assert_eq!(compare("1.2.3", "v1.2.3"), Ok(Equal));
        assert_eq!(
            compare(
                "v0.0.0-20191109021931-daa7c04131f5",
                "v0.0.0-20200101000000-aaaaaaaaaaaa"
            ),
            Ok(Less)
        );
        assert_eq!(
            compare("v1.2.4-0.20191109021931-daa7c04131f5", "v1.2.3"),
            Ok(Greater)
        );
        assert_eq!(
            compare("v1.2.4-0.20191109021931-daa7c04131f5", "v1.2.4"),
            Ok(Less)
        );
        for bad in ["v1.2-pre", "v01.2.3", "v1.2.3.4", "vx", "", "v1.2.3-01"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
