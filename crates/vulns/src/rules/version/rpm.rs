//! rpm's version order (`rpmvercmp` of rpm ≥ 4.15, with `~` and `^`) over
//! `[epoch:]version[-release]`: the epoch as a number (absent = 0), then the version, then the
//! release, where a missing release is older than any (as rpm's `rpmverCmp`, `rpm.ver`).

use super::Invalid;
use std::cmp::Ordering;

const NAME: &str = "rpm";

/// `(epoch, version, release)` of an EVR string.
pub fn parse(v: &str) -> Result<(u64, &str, Option<&str>), Invalid> {
    let s = v.trim();
    if s.is_empty() {
        return Err(Invalid::new(NAME, v, "empty"));
    }
    let (epoch, rest) = match s.split_once(':') {
        Some((e, rest)) if !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit()) => (
            e.parse()
                .map_err(|_| Invalid::new(NAME, v, "epoch too large"))?,
            rest,
        ),
        Some(_) => return Err(Invalid::new(NAME, v, "epoch is not a number")),
        None => (0, s),
    };
    let (version, release) = match rest.rsplit_once('-') {
        Some((ver, rel)) => (ver, Some(rel)),
        None => (rest, None),
    };
    if version.is_empty() || release == Some("") {
        return Err(Invalid::new(NAME, v, "empty version or release"));
    }
    Ok((epoch, version, release))
}

/// Orders two EVR strings as rpm does.
pub fn compare(a: &str, b: &str) -> Result<Ordering, Invalid> {
    let (ea, va, ra) = parse(a)?;
    let (eb, vb, rb) = parse(b)?;
    Ok(ea
        .cmp(&eb)
        .then_with(|| vercmp(va, vb))
        .then_with(|| match (ra, rb) {
            (Some(ra), Some(rb)) => vercmp(ra, rb),
            (Some(_), None) => Ordering::Greater,
            (None, Some(_)) => Ordering::Less,
            (None, None) => Ordering::Equal,
        }))
}

/// `rpmvercmp`: segments of digits (by value) or letters (by bytes), everything else a
/// separator; `~` sorts before anything, even the end; `^` after the end but before anything
/// else; a digit segment is newer than a letter segment.
pub fn vercmp(a: &str, b: &str) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    let sep = |c: u8| !c.is_ascii_alphanumeric() && c != b'~' && c != b'^';
    loop {
        while i < a.len() && sep(a[i]) {
            i += 1;
        }
        while j < b.len() && sep(b[j]) {
            j += 1;
        }
        let (ca, cb) = (a.get(i).copied(), b.get(j).copied());
        if ca == Some(b'~') || cb == Some(b'~') {
            if ca != Some(b'~') {
                return Ordering::Greater;
            }
            if cb != Some(b'~') {
                return Ordering::Less;
            }
            i += 1;
            j += 1;
            continue;
        }
        if ca == Some(b'^') || cb == Some(b'^') {
            if ca.is_none() {
                return Ordering::Less;
            }
            if cb.is_none() {
                return Ordering::Greater;
            }
            if ca != Some(b'^') {
                return Ordering::Greater;
            }
            if cb != Some(b'^') {
                return Ordering::Less;
            }
            i += 1;
            j += 1;
            continue;
        }
        let (Some(ca), Some(_)) = (ca, cb) else {
            break;
        };
        let numeric = ca.is_ascii_digit();
        let class = |c: &u8| {
            if numeric {
                c.is_ascii_digit()
            } else {
                c.is_ascii_alphabetic()
            }
        };
        let (si, sj) = (i, j);
        while a.get(i).is_some_and(class) {
            i += 1;
        }
        while b.get(j).is_some_and(class) {
            j += 1;
        }
        if sj == j {
            // Segments of different kinds: the number is newer.
            return if numeric {
                Ordering::Greater
            } else {
                Ordering::Less
            };
        }
        let (x, y) = (
            std::str::from_utf8(&a[si..i]).unwrap_or_default(),
            std::str::from_utf8(&b[sj..j]).unwrap_or_default(),
        );
        let order = if numeric {
            super::cmp_digits(x, y)
        } else {
            x.cmp(y)
        };
        if order != Ordering::Equal {
            return order;
        }
    }
    match (i < a.len(), j < b.len()) {
        (false, false) => Ordering::Equal,
        (true, _) => Ordering::Greater,
        (false, true) => Ordering::Less,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Ordering::*;

    #[test]
    fn rpmvercmp_rules() {
        for (a, b, want) in [
            ("1.0", "1.0", Equal),
            ("1.0", "2.0", Less),
            ("2.0.1", "2.0", Greater),
            ("5.5p1", "5.5p2", Less),
            ("5.5p10", "5.5p1", Greater),
            ("10xyz", "10.1xyz", Less),
            ("xyz10", "xyz10.1", Less),
            ("1.0a", "1.0", Greater),
            ("a", "1", Less),
            ("1.0~rc1", "1.0", Less),
            ("1.0~rc1", "1.0~rc2", Less),
            ("1.0^", "1.0", Greater),
            ("1.0^git1", "1.0.1", Less),
            ("1.0^git1", "1.0~rc1", Greater),
            ("1_0", "1.0", Equal),
            ("001", "1", Equal),
        ] {
            assert_eq!(vercmp(a, b), want, "{a} vs {b}");
            assert_eq!(vercmp(b, a), want.reverse(), "{b} vs {a}");
        }
        assert_eq!(compare("1:1.0-1.el9", "2.0-1.el9"), Ok(Greater));
        assert_eq!(compare("0:2.0-1.el9", "2.0-1.el9"), Ok(Equal));
        assert_eq!(compare("3.2.5-21.el9_2", "3.2.5-21.el9"), Ok(Greater));
        assert_eq!(compare("3.2.5", "3.2.5-21.el9"), Ok(Less));
        assert!(compare("x:1", "1").is_err());
    }
}
