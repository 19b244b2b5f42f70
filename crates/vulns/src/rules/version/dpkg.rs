//! dpkg's version order (deb-version(7), `dpkg --compare-versions`): `[epoch:]upstream[-revision]`,
//! the epoch compared as a number, then upstream and revision each by alternating runs of
//! non-digits (letters before other characters, `~` before everything, even the end) and digits
//! (by value).

use super::Invalid;
use std::cmp::Ordering;

const NAME: &str = "dpkg";

/// A parsed version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Version<'a> {
    /// The epoch (0 when absent).
    pub epoch: u64,
    /// The upstream version.
    pub upstream: &'a str,
    /// The Debian revision ("" when absent, which orders as "0").
    pub revision: &'a str,
}

/// Reads a version as dpkg does; errors where dpkg errors (warnings, such as an upstream
/// version not starting with a digit, are accepted as dpkg accepts them).
pub fn parse(v: &str) -> Result<Version<'_>, Invalid> {
    let s = v.trim();
    if s.is_empty() {
        return Err(Invalid::new(NAME, v, "empty"));
    }
    if s.chars().any(char::is_whitespace) {
        return Err(Invalid::new(NAME, v, "embedded space"));
    }
    let (epoch, rest) = match s.split_once(':') {
        Some((e, rest)) => {
            if e.is_empty() || !e.bytes().all(|b| b.is_ascii_digit()) {
                return Err(Invalid::new(NAME, v, "epoch is not a number"));
            }
            let epoch: u64 = e
                .parse()
                .map_err(|_| Invalid::new(NAME, v, "epoch too large"))?;
            if epoch > i32::MAX as u64 {
                return Err(Invalid::new(NAME, v, "epoch too large"));
            }
            if rest.is_empty() {
                return Err(Invalid::new(NAME, v, "nothing after the colon"));
            }
            (epoch, rest)
        }
        None => (0, s),
    };
    let (upstream, revision) = match rest.rsplit_once('-') {
        Some((_, "")) => return Err(Invalid::new(NAME, v, "empty revision")),
        Some((u, r)) => (u, r),
        None => (rest, ""),
    };
    if upstream.is_empty() {
        return Err(Invalid::new(NAME, v, "empty upstream version"));
    }
    Ok(Version {
        epoch,
        upstream,
        revision,
    })
}

/// Orders two versions as `dpkg --compare-versions`.
pub fn compare(a: &str, b: &str) -> Result<Ordering, Invalid> {
    let (a, b) = (parse(a)?, parse(b)?);
    Ok(a.epoch
        .cmp(&b.epoch)
        .then_with(|| verrevcmp(a.upstream.as_bytes(), b.upstream.as_bytes()))
        .then_with(|| verrevcmp(a.revision.as_bytes(), b.revision.as_bytes())))
}

/// The weight of one character in a non-digit run (`None` is the end of the string).
fn weight(c: Option<u8>) -> i32 {
    match c {
        None => 0,
        Some(c) if c.is_ascii_digit() => 0,
        Some(c) if c.is_ascii_alphabetic() => i32::from(c),
        Some(b'~') => -1,
        Some(c) => i32::from(c) + 256,
    }
}

fn verrevcmp(a: &[u8], b: &[u8]) -> Ordering {
    let (mut i, mut j) = (0, 0);
    let digit = |s: &[u8], k: usize| s.get(k).is_some_and(u8::is_ascii_digit);
    while i < a.len() || j < b.len() {
        // A non-digit run: character by character.
        while (i < a.len() && !digit(a, i)) || (j < b.len() && !digit(b, j)) {
            let (wa, wb) = (weight(a.get(i).copied()), weight(b.get(j).copied()));
            if wa != wb {
                return wa.cmp(&wb);
            }
            i += 1;
            j += 1;
        }
        // A digit run: by value.
        let start_a = i;
        while digit(a, i) {
            i += 1;
        }
        let start_b = j;
        while digit(b, j) {
            j += 1;
        }
        let (da, db) = (
            std::str::from_utf8(&a[start_a..i]).unwrap_or_default(),
            std::str::from_utf8(&b[start_b..j]).unwrap_or_default(),
        );
        match super::cmp_digits(da, db) {
            Ordering::Equal => {}
            other => return other,
        }
    }
    Ordering::Equal
}

#[cfg(test)]
mod tests {
    use super::*;
    use Ordering::*;

    #[test]
    fn deb_version_rules() {
        for (a, b, want) in [
            ("1.0", "1.0", Equal),
            ("1.0~rc1", "1.0", Less),
            ("1.0~~", "1.0~", Less),
            ("1.0~", "1.0", Less),
            ("1.0", "1.0+b1", Less),
            ("1.0a", "1.0+", Less),
            ("1:0.1", "2.0", Greater),
            ("1.0-1", "1.0", Greater),
            ("1.0-0", "1.0", Equal),
            ("1.00", "1.0", Equal),
            ("2.36.1-8+deb12u1", "2.36.1-8", Greater),
            ("7.88.1-10+deb12u5", "7.88.1-10+deb12u12", Less),
            ("1.2.3-1ubuntu0.1", "1.2.3-1", Greater),
            ("a", "b", Less),
        ] {
            assert_eq!(compare(a, b), Ok(want), "{a} vs {b}");
            assert_eq!(compare(b, a), Ok(want.reverse()), "{b} vs {a}");
        }
    }

    #[test]
    fn what_dpkg_refuses_is_refused() {
        for bad in ["", "a b", "x:1.0", ":1.0", "1:", "1.0-", "-1"] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        let v = parse("2:1.2-3-4").expect("valid");
        assert_eq!((v.epoch, v.upstream, v.revision), (2, "1.2-3", "4"));
    }
}
