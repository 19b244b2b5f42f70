//! RubyGems' `Gem::Version`: digits and letters split into segments (`1.0.0.pre1` is
//! `1, 0, 0, "pre", 1`; a `-` reads as `.pre.`), trailing zeros of the numeric part and of the
//! rest dropped, then segment by segment with missing ones as 0: a string segment before a
//! number (so `1.0.a < 1.0`), numbers by value, strings by bytes.

use super::Invalid;
use std::cmp::Ordering;

const NAME: &str = "RubyGems";

#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    Num(String),
    Str(String),
}

fn zero(s: &Seg) -> bool {
    matches!(s, Seg::Num(n) if n.bytes().all(|b| b == b'0'))
}

/// Whether `Gem::Version.correct?` accepts `v`.
pub fn valid(v: &str) -> bool {
    let s = v.trim();
    if s.is_empty() {
        return true;
    }
    let (main, pre) = match s.split_once('-') {
        Some((m, p)) => (m, Some(p)),
        None => (s, None),
    };
    let mut parts = main.split('.');
    let first_ok = parts
        .next()
        .is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let rest_ok = parts.all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric()));
    let pre_ok = pre.is_none_or(|p| {
        p.split('.')
            .all(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
    });
    first_ok && rest_ok && pre_ok
}

fn canonical(v: &str) -> Result<Vec<Seg>, Invalid> {
    let mut segs = segments(v)?;
    let split = segs
        .iter()
        .position(|s| matches!(s, Seg::Str(_)))
        .unwrap_or(segs.len());
    let mut rest = segs.split_off(split);
    while segs.last().is_some_and(zero) {
        segs.pop();
    }
    while rest.last().is_some_and(zero) {
        rest.pop();
    }
    segs.extend(rest);
    Ok(segs)
}

/// `Gem::Version#segments`: numbers and strings as written (no zeros dropped).
fn segments(v: &str) -> Result<Vec<Seg>, Invalid> {
    if !valid(v) {
        return Err(Invalid::new(NAME, v, "not a Gem::Version"));
    }
    let s = v.trim().replace('-', ".pre.");
    let s = if s.is_empty() { "0".to_owned() } else { s };
    let mut segs = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        if b[i].is_ascii_digit() {
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            segs.push(Seg::Num(s[start..i].to_owned()));
        } else if b[i].is_ascii_alphabetic() {
            while i < b.len() && b[i].is_ascii_alphabetic() {
                i += 1;
            }
            segs.push(Seg::Str(s[start..i].to_owned()));
        } else {
            i += 1;
        }
    }
    Ok(segs)
}

fn join(segs: &[Seg]) -> String {
    segs.iter()
        .map(|s| match s {
            Seg::Num(n) | Seg::Str(n) => n.as_str(),
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// `Gem::Version#release`: the version without its pre-release part.
pub fn release(v: &str) -> Result<String, Invalid> {
    let mut segs = segments(v)?;
    while segs.iter().any(|s| matches!(s, Seg::Str(_))) {
        segs.pop();
    }
    Ok(join(&segs))
}

/// `Gem::Version#bump` (the upper end of `~>`): pre-release dropped, the last number dropped
/// (when more than one), the new last one incremented.
pub fn bump(v: &str) -> Result<String, Invalid> {
    let mut segs = segments(v)?;
    while segs.iter().any(|s| matches!(s, Seg::Str(_))) {
        segs.pop();
    }
    if segs.len() > 1 {
        segs.pop();
    }
    if let Some(Seg::Num(n)) = segs.last_mut() {
        *n = increment(n);
    }
    Ok(join(&segs))
}

/// A decimal number plus one, whatever its length.
fn increment(n: &str) -> String {
    let mut digits: Vec<u8> = n.trim_start_matches('0').bytes().collect();
    let mut i = digits.len();
    loop {
        if i == 0 {
            digits.insert(0, b'1');
            break;
        }
        i -= 1;
        if digits[i] == b'9' {
            digits[i] = b'0';
        } else {
            digits[i] += 1;
            break;
        }
    }
    String::from_utf8(digits).unwrap_or_default()
}

/// Orders two versions as `Gem::Version#<=>`.
pub fn compare(a: &str, b: &str) -> Result<Ordering, Invalid> {
    let (x, y) = (canonical(a)?, canonical(b)?);
    let zero = Seg::Num("0".into());
    for i in 0..x.len().max(y.len()) {
        let (l, r) = (x.get(i).unwrap_or(&zero), y.get(i).unwrap_or(&zero));
        let o = match (l, r) {
            (Seg::Num(l), Seg::Num(r)) => super::cmp_digits(l, r),
            (Seg::Str(l), Seg::Str(r)) => l.cmp(r),
            (Seg::Str(_), Seg::Num(_)) => Ordering::Less,
            (Seg::Num(_), Seg::Str(_)) => Ordering::Greater,
        };
        if o != Ordering::Equal {
            return Ok(o);
        }
    }
    Ok(Ordering::Equal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Ordering::*;

    #[test]
    fn gem_version_order() {
        for (a, b, want) in [
            ("1.0", "1.0.0", Equal),
            ("1.0.a", "1.0", Less),
            ("1.0.0.pre1", "1.0.0", Less),
            ("1.0.0-1", "1.0.0.pre.1", Equal),
            ("1.0.0.rc1", "1.0.0.beta2", Greater),
            ("1.0.b1", "1.0.a2", Greater),
            ("1.0.a10", "1.0.a9", Greater),
            ("2.0.0.rc.1", "2.0.0.rc1", Equal),
            ("1.0.0.a.0", "1.0.0.a", Equal),
            ("", "0", Equal),
            ("1.B", "1.a", Less),
        ] {
            assert_eq!(compare(a, b), Ok(want), "{a} vs {b}");
            assert_eq!(compare(b, a), Ok(want.reverse()), "{b} vs {a}");
        }
        for bad in ["a", "1..2", "1.0 beta", "1.", "-1", "1.0-"] {
            assert!(compare(bad, "1").is_err(), "{bad:?}");
        }
    }
}
