//! apk-tools' version order (Alpine, `apk version -t`):
//! `digit{.digit}...{letter}{_suffix{#}}...{~hash}{-r#}` read as typed tokens. The first
//! number compares by value; later numbers by value unless one has a leading zero, then as
//! text (`1.02 < 1.1`, as Gentoo); one lowercase letter may follow a number; the suffixes
//! `_alpha`, `_beta`, `_pre`, `_rc` sort before the bare version and `_cvs`, `_svn`, `_git`,
//! `_hg`, `_p` after it, each with an optional number; `~<hex>` is a commit hash and `-r#` the
//! package revision. When one version runs out first, the longer one is newer unless what
//! follows is a pre-release suffix. Written from the rules of apk-tools' `version.c` (the
//! tokenizer of apk-tools 2.14 and 3, which current Alpine releases ship); checked by
//! hand-verified vectors, many from apk-tools' own `test/version.data`.

use super::Invalid;
use std::cmp::Ordering;

/// Token kinds in apk-tools' order: a version that stops at a later kind is older.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    InitialDigit,
    Digit,
    Letter,
    Suffix,
    SuffixNo,
    CommitHash,
    RevisionNo,
    End,
    Invalid,
}

/// The suffixes in order; the ones before `""` (no suffix) are pre-releases.
const SUFFIXES: [&str; 10] = [
    "alpha", "beta", "pre", "rc", "", "cvs", "svn", "git", "hg", "p",
];
const NO_SUFFIX: usize = 4;

#[derive(Debug, Clone, Copy)]
struct Token<'a> {
    kind: Kind,
    text: &'a [u8],
    suffix: usize,
}

/// The tokens of `v`, ending with one of kind `End` or `Invalid`.
fn tokens(v: &str) -> Vec<Token<'_>> {
    let b = v.as_bytes();
    let run = |from: usize, pred: fn(&u8) -> bool| {
        let mut to = from;
        while b.get(to).is_some_and(pred) {
            to += 1;
        }
        to
    };
    let mut out = Vec::new();
    let mut i = run(0, u8::is_ascii_digit);
    let mut kind = if i == 0 {
        Kind::Invalid
    } else {
        Kind::InitialDigit
    };
    out.push(Token {
        kind,
        text: &b[..i],
        suffix: NO_SUFFIX,
    });
    while kind < Kind::End {
        let mut tok = Token {
            kind: Kind::Invalid,
            text: &[],
            suffix: NO_SUFFIX,
        };
        match b.get(i).copied() {
            None => tok.kind = Kind::End,
            Some(b'a'..=b'z') if kind <= Kind::Digit => {
                tok = Token {
                    kind: Kind::Letter,
                    text: &b[i..i + 1],
                    suffix: NO_SUFFIX,
                };
                i += 1;
            }
            Some(c @ (b'.' | b'0'..=b'9')) => {
                let start = if c == b'.' { i + 1 } else { i };
                let next = match kind {
                    Kind::InitialDigit | Kind::Digit => Some(Kind::Digit),
                    Kind::Suffix if c != b'.' => Some(Kind::SuffixNo),
                    _ => None,
                };
                let end = run(start, u8::is_ascii_digit);
                if let Some(k) = next.filter(|_| end > start && (c != b'.' || kind <= Kind::Digit))
                {
                    tok.kind = k;
                    tok.text = &b[start..end];
                    i = end;
                }
            }
            Some(b'_') if kind <= Kind::SuffixNo => {
                let end = run(i + 1, u8::is_ascii_lowercase);
                let word = &b[i + 1..end];
                if let Some(k) = SUFFIXES
                    .iter()
                    .position(|s| !s.is_empty() && s.as_bytes() == word)
                {
                    tok = Token {
                        kind: Kind::Suffix,
                        text: word,
                        suffix: k,
                    };
                    i = end;
                }
            }
            Some(b'~') if kind < Kind::CommitHash => {
                let end = run(i + 1, u8::is_ascii_hexdigit);
                if end > i + 1 {
                    tok.kind = Kind::CommitHash;
                    tok.text = &b[i + 1..end];
                    i = end;
                }
            }
            Some(b'-') if kind < Kind::RevisionNo && b.get(i + 1) == Some(&b'r') => {
                let end = run(i + 2, u8::is_ascii_digit);
                if end > i + 2 {
                    tok.kind = Kind::RevisionNo;
                    tok.text = &b[i + 2..end];
                    i = end;
                }
            }
            Some(_) => {}
        }
        kind = tok.kind;
        out.push(tok);
    }
    out
}

fn token_cmp(a: &Token<'_>, b: &Token<'_>) -> Ordering {
    let digits = |t: &Token<'_>| std::str::from_utf8(t.text).unwrap_or_default().to_owned();
    match a.kind {
        // A later number with a leading zero on either side: as text.
        Kind::Digit if a.text.first() == Some(&b'0') || b.text.first() == Some(&b'0') => {
            a.text.cmp(b.text)
        }
        Kind::InitialDigit | Kind::Digit | Kind::SuffixNo | Kind::RevisionNo => {
            super::cmp_digits(&digits(a), &digits(b))
        }
        Kind::Letter => a.text.cmp(b.text),
        Kind::Suffix => a.suffix.cmp(&b.suffix),
        _ => a.text.cmp(b.text),
    }
}

/// Whether apk-tools reads `v` as a valid version.
pub fn valid(v: &str) -> bool {
    tokens(v).last().is_some_and(|t| t.kind == Kind::End)
}

/// Orders two versions as `apk version -t` (errors for versions apk calls invalid).
pub fn compare(a: &str, b: &str) -> Result<Ordering, Invalid> {
    for v in [a, b] {
        if !valid(v) {
            return Err(Invalid::new(
                "apk",
                v,
                "not digit{.digit}{letter}{_suffix{#}}{~hash}{-r#}",
            ));
        }
    }
    Ok(order(a, b))
}

/// The order of apk-tools' comparison, also for invalid versions (compared up to the token
/// where they go wrong, as `apk version -t` does).
fn order(a: &str, b: &str) -> Ordering {
    let (x, y) = (tokens(a), tokens(b));
    let mut k = 0;
    while x[k].kind == y[k].kind && x[k].kind < Kind::End {
        let o = token_cmp(&x[k], &y[k]);
        if o != Ordering::Equal {
            return o;
        }
        k += 1;
    }
    let (ta, tb) = (&x[k], &y[k]);
    if ta.kind == tb.kind {
        return Ordering::Equal;
    }
    if ta.kind == Kind::Suffix && ta.suffix < NO_SUFFIX {
        return Ordering::Less;
    }
    if tb.kind == Kind::Suffix && tb.suffix < NO_SUFFIX {
        return Ordering::Greater;
    }
    tb.kind.cmp(&ta.kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Ordering::*;

    fn sign(o: Ordering) -> &'static str {
        match o {
            Less => "<",
            Equal => "=",
            Greater => ">",
        }
    }

    /// Vectors checked by hand against the rules above; most from apk-tools'
    /// `test/version.data`, the rest (suffix order, revisions, leading zeros) our own.
    #[test]
    fn apk_vectors() {
        let vectors = "\
2.34 > 0.1.0_alpha
23_foo > 4_beta
0.1.0_alpha = 0.1.0_alpha
0.1.0_alpha2 > 0.1.0_alpha
0.1.0_alpha < 2.2.39-r1
1.0.4-r3 < 1.0.4-r4
1.1 > 1.1_alpha1
1.2.1 > 1.2
1.3_alpha2 < 1.3_alpha3
0.8_beta4 < 4.8-r1
2.3.0b-r1 < 2.3.0b-r2
0.12.3 > 0.12
0.12 < 0.13_beta1
1.2.11 < 1.2.12.1
3.1_p16 < 3.1_p17
1.06-r6 < 006
006 > 1.0.0
1.2.2-r1 > 1.2.2
2.59 < 20050718-r1
3.9.8-r5 > 2.01.01_alpha10
1.0 > 0.99.3.20040818
1.02 < 1.03-r1
4.2.52_p2-r1 < 4.2.52_p4-r2
2.11-r1 > 2.11
3.0.20060720 < 20060720
2.5.1-r8 < 2.5.1a-r1
2.0.0_rc3-r1 > 1.5
3.0.0-r2 < 021109-r3
3.9_pre20060124 > 0.01
0.10.0-r1 > 0.10.0
0.10.0 < 0.10.1_rc1
1.1a < 1.3a
0.15.1b < 1.0.1
1.07-r1 < 1.07.5
1.07.5 > 1.07
0.1_pre20060810 < 0.1_pre20060817
0.59s-r11 < 0.65
0.20070118 < 0.20070207_rc1
4.5_p1 < 4.5_p1-r1
1.7 < 1.7b
1.8.5 < 1.8.5_p2
2.9.11_pre20051101-r3 > 2.9.11_pre20051101
0.9.28-r2 < 0.9.28.1
1.6.8_p12-r1 > 1.6.8_p9-r2
2.12r-r4 < 2.12r-r5
7.0.17 < 7.0.174
1.3-r0 < 1.3.1-r0
1.3_pre1-r1 < 1.3.2
1.0_p10-r0 > 1.0_p9-r0
0.1.0_alpha_pre2 < 0.1.0_alpha
1.0.0_pre20191002222144-r0 < 1.0.0_pre20210530193627-r0
1.0_alpha < 1.0_beta
1.0_beta < 1.0_pre
1.0_pre < 1.0_rc
1.0_rc < 1.0
1.0 < 1.0_cvs
1.0_cvs < 1.0_svn
1.0_svn < 1.0_git
1.0_git < 1.0_hg
1.0_hg < 1.0_p
1.0_p > 1.0-r1
1.0 < 1.0-r1
1.0-r1 < 1.0-r10
1.02 < 1.1
1.002 < 1.02
1.0 = 1.0
1.0 < 1.0bc";
        for line in vectors.lines() {
            let parts: Vec<&str> = line.split_whitespace().collect();
            let (a, op, b) = (parts[0], parts[1], parts[2]);
            if !valid(a) || !valid(b) {
                // `23_foo`, `1.0bc`: invalid for apk, ordered by the same rules by
                // `apk version -t`, refused by `compare`.
                assert_eq!(sign(order(a, b)), op, "{line}");
                assert!(compare(a, b).is_err());
                continue;
            }
            let got = compare(a, b).unwrap_or_else(|e| panic!("{line}: {e}"));
            assert_eq!(sign(got), op, "{line}");
            assert_eq!(
                sign(compare(b, a).expect("valid")),
                sign(got.reverse()),
                "{line} reversed"
            );
        }
    }

    #[test]
    fn invalid_versions() {
        for bad in [
            "",
            "a1",
            "1..0",
            "1.",
            "1.0-r",
            "1.0-1",
            "1.0_foo",
            "1.0-rx",
            "1.0bc",
            "1.0b2",
            "1.0~",
            "1.0-r1_p1",
            "1.0 ",
        ] {
            assert!(!valid(bad), "{bad:?} should be invalid");
            assert!(compare(bad, "1.0").is_err(), "{bad:?}");
        }
        for good in [
            "1.2.3_p4-r5",
            "1.0b",
            "1.0_git20230101~abc123-r1",
            "0.1.0_alpha_pre2",
        ] {
            assert!(valid(good), "{good:?}");
        }
        assert_eq!(compare("1.0~abc", "1.0~abd"), Ok(Less));
        assert_eq!(compare("1.0~abc", "1.0"), Ok(Greater));
    }
}
