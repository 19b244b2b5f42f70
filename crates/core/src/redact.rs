//! Redaction of personal data and secrets before anything leaves a program (SPEC 2.11;
//! issue 6): emails, phone numbers, IBANs (ISO 13616 mod-97), card numbers (Luhn), bearer
//! tokens and API keys of well-known shapes, IPv4 and IPv6 addresses. Each is replaced by a
//! marker such as `[EMAIL]`. Hand-written scanners, no regex engine: a match needs its exact
//! shape and, where one exists, its checksum, so ordinary numbers, dates, versions and prices
//! stay as they are.

use std::collections::BTreeMap;

/// The kinds of data redacted, with their markers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// `Bearer <token>` (the token only).
    Bearer,
    /// API keys with a known prefix.
    ApiKey,
    /// Email addresses.
    Email,
    /// IBANs that pass mod-97.
    Iban,
    /// Card numbers that pass Luhn.
    Card,
    /// Phone numbers.
    Phone,
    /// IPv4 or IPv6 addresses.
    Ip,
}

impl Kind {
    /// The replacement text.
    pub fn marker(self) -> &'static str {
        match self {
            Kind::Bearer => "[TOKEN]",
            Kind::ApiKey => "[API_KEY]",
            Kind::Email => "[EMAIL]",
            Kind::Iban => "[IBAN]",
            Kind::Card => "[CARD]",
            Kind::Phone => "[PHONE]",
            Kind::Ip => "[IP]",
        }
    }
}

/// Redacted text and how many of each kind were replaced.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Redacted {
    /// The text with markers.
    pub text: String,
    /// Replacements per kind.
    pub counts: BTreeMap<Kind, usize>,
}

const KEY_PREFIXES: [&str; 19] = [
    "sk-proj-",
    "sk-ant-",
    "sk_live_",
    "sk_test_",
    "rk_live_",
    "pk_live_",
    "sk-",
    "ghp_",
    "gho_",
    "ghs_",
    "github_pat_",
    "xoxb-",
    "xoxp-",
    "glpat-",
    "hf_",
    "whsec_",
    "tht_",
    "tha_",
    "the_",
];

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Redacts `text`.
pub fn redact(text: &str) -> Redacted {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut counts = BTreeMap::new();
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        let boundary = i == 0 || !is_word(b[i - 1]);
        let hit = if boundary && b[i].is_ascii() {
            detect(b, i)
        } else {
            None
        };
        match hit {
            Some((kind, start, end)) => {
                out.push_str(&text[copied..start]);
                out.push_str(kind.marker());
                *counts.entry(kind).or_insert(0) += 1;
                copied = end;
                i = end;
            }
            None => {
                i += 1;
                while i < b.len() && !text.is_char_boundary(i) {
                    i += 1;
                }
            }
        }
    }
    out.push_str(&text[copied..]);
    Redacted { text: out, counts }
}

/// The first detector that matches at `i`: its kind and the byte span replaced.
fn detect(b: &[u8], i: usize) -> Option<(Kind, usize, usize)> {
    bearer(b, i)
        .map(|(s, e)| (Kind::Bearer, s, e))
        .or_else(|| api_key(b, i).map(|e| (Kind::ApiKey, i, e)))
        .or_else(|| email(b, i).map(|e| (Kind::Email, i, e)))
        .or_else(|| iban(b, i).map(|e| (Kind::Iban, i, e)))
        .or_else(|| card(b, i).map(|e| (Kind::Card, i, e)))
        .or_else(|| phone(b, i).map(|e| (Kind::Phone, i, e)))
        .or_else(|| ipv6(b, i).map(|e| (Kind::Ip, i, e)))
        .or_else(|| ipv4(b, i).map(|e| (Kind::Ip, i, e)))
}

fn run(b: &[u8], mut i: usize, ok: impl Fn(u8) -> bool) -> usize {
    while i < b.len() && ok(b[i]) {
        i += 1;
    }
    i
}

fn ends_word(b: &[u8], e: usize) -> bool {
    e >= b.len() || !is_word(b[e])
}

fn bearer(b: &[u8], i: usize) -> Option<(usize, usize)> {
    let word = b.get(i..i + 7)?;
    if !word.eq_ignore_ascii_case(b"bearer ") {
        return None;
    }
    let s = run(b, i + 7, |c| c == b' ');
    let e = run(b, s, |c| {
        c.is_ascii_alphanumeric() || b"-._~+/=".contains(&c)
    });
    (e - s >= 8).then_some((s, e))
}

fn api_key(b: &[u8], i: usize) -> Option<usize> {
    let rest = &b[i..];
    if rest.starts_with(b"AKIA") {
        let e = run(b, i + 4, |c| c.is_ascii_uppercase() || c.is_ascii_digit());
        return (e - i == 20 && ends_word(b, e)).then_some(e);
    }
    if rest.starts_with(b"AIza") {
        let e = run(b, i + 4, |c| {
            c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
        });
        return (e - i == 39).then_some(e);
    }
    let p = KEY_PREFIXES
        .iter()
        .find(|p| rest.starts_with(p.as_bytes()))?;
    let e = run(b, i + p.len(), |c| {
        c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
    });
    let body = &b[i + p.len()..e];
    // Long enough and not a word: at least 16 characters with a digit in them.
    (body.len() >= 16 && body.iter().any(u8::is_ascii_digit)).then_some(e)
}

fn email(b: &[u8], i: usize) -> Option<usize> {
    let at = run(b, i, |c| c.is_ascii_alphanumeric() || b"._%+-".contains(&c));
    if at == i || b.get(at) != Some(&b'@') || b[i] == b'.' {
        return None;
    }
    let mut e = run(b, at + 1, |c| {
        c.is_ascii_alphanumeric() || c == b'.' || c == b'-'
    });
    while e > at + 1 && (b[e - 1] == b'.' || b[e - 1] == b'-') {
        e -= 1;
    }
    let domain = std::str::from_utf8(&b[at + 1..e]).ok()?;
    let tld = domain.rsplit('.').next()?;
    let ok = domain.contains('.')
        && !domain.contains("..")
        && tld.len() >= 2
        && tld.bytes().all(|c| c.is_ascii_alphabetic());
    ok.then_some(e)
}

/// Characters of a grouped number: the positions of its digits/letters, allowing one space
/// or dash between groups.
fn grouped(b: &[u8], i: usize, ok: impl Fn(u8) -> bool, max: usize) -> Vec<usize> {
    let mut pos = Vec::new();
    let mut j = i;
    while j < b.len() && pos.len() < max {
        if ok(b[j]) {
            pos.push(j);
            j += 1;
        } else if (b[j] == b' ' || b[j] == b'-')
            && j + 1 < b.len()
            && ok(b[j + 1])
            && !pos.is_empty()
        {
            j += 1;
        } else {
            break;
        }
    }
    pos
}

fn iban(b: &[u8], i: usize) -> Option<usize> {
    if !(b.get(i)?.is_ascii_uppercase()
        && b.get(i + 1)?.is_ascii_uppercase()
        && b.get(i + 2)?.is_ascii_digit()
        && b.get(i + 3)?.is_ascii_digit())
    {
        return None;
    }
    let pos = grouped(b, i, |c| c.is_ascii_uppercase() || c.is_ascii_digit(), 34);
    (15..=pos.len()).rev().find_map(|n| {
        let e = pos[n - 1] + 1;
        let chars: Vec<u8> = pos[..n].iter().map(|&p| b[p]).collect();
        (ends_word(b, e) && mod97(&chars) == 1).then_some(e)
    })
}

fn mod97(chars: &[u8]) -> u32 {
    let rotated = chars[4..].iter().chain(&chars[..4]);
    let mut r: u32 = 0;
    for &c in rotated {
        let v = if c.is_ascii_digit() {
            u32::from(c - b'0')
        } else {
            u32::from(c - b'A') + 10
        };
        r = if v >= 10 {
            (r * 100 + v) % 97
        } else {
            (r * 10 + v) % 97
        };
    }
    r
}

fn card(b: &[u8], i: usize) -> Option<usize> {
    if !b.get(i)?.is_ascii_digit() || inside_number(b, i) {
        return None;
    }
    let pos = grouped(b, i, |c| c.is_ascii_digit(), 19);
    (13..=pos.len()).rev().find_map(|n| {
        let e = pos[n - 1] + 1;
        let digits: Vec<u8> = pos[..n].iter().map(|&p| b[p] - b'0').collect();
        (ends_word(b, e) && brand_length_ok(&digits) && luhn(&digits)).then_some(e)
    })
}

/// Whether the number's length fits its issuer prefix (Amex 15, Visa 13/16/19, Mastercard
/// 16, ...), which keeps Luhn-valid numbers of other shapes (one in ten) out.
fn brand_length_ok(d: &[u8]) -> bool {
    let n = d.len();
    let p2 = u32::from(d[0]) * 10 + u32::from(d[1]);
    let p4 = p2 * 100 + u32::from(d[2]) * 10 + u32::from(d[3]);
    match d[0] {
        4 => matches!(n, 13 | 16 | 19),
        3 if p2 == 34 || p2 == 37 => n == 15,
        3 if p2 == 35 => (16..=19).contains(&n),
        3 if p2 == 30 || p2 == 36 || p2 == 38 => (14..=19).contains(&n),
        5 if (51..=55).contains(&p2) => n == 16,
        5 | 6 => (12..=19).contains(&n),
        2 if (2221..=2720).contains(&p4) => n == 16,
        _ => false,
    }
}

fn luhn(d: &[u8]) -> bool {
    let sum: u32 = d
        .iter()
        .rev()
        .enumerate()
        .map(|(k, &x)| {
            let x = u32::from(x);
            if k % 2 == 1 {
                if x * 2 > 9 { x * 2 - 9 } else { x * 2 }
            } else {
                x
            }
        })
        .sum();
    sum.is_multiple_of(10) && d.iter().any(|&x| x != 0)
}

/// Whether `i` continues a grouped number (a group after `1234 ` or `1234-`): numbers are
/// only matched from their first group.
fn inside_number(b: &[u8], i: usize) -> bool {
    i >= 2 && (b[i - 1] == b' ' || b[i - 1] == b'-') && b[i - 2].is_ascii_digit()
}

fn phone(b: &[u8], i: usize) -> Option<usize> {
    if inside_number(b, i) {
        return None;
    }
    let plus = b.get(i) == Some(&b'+');
    if !plus && b.get(i) != Some(&b'(') && !b.get(i)?.is_ascii_digit() {
        return None;
    }
    let e = run(b, i + usize::from(plus), |c| {
        c.is_ascii_digit() || b" -.()".contains(&c)
    });
    let mut e = e;
    while e > i && !b[e - 1].is_ascii_digit() {
        e -= 1;
    }
    let span = &b[i..e];
    let digits = span.iter().filter(|c| c.is_ascii_digit()).count();
    let seps = span.iter().filter(|c| b" -.()".contains(c)).count();
    if !ends_word(b, e) || span.windows(2).any(|w| w == b"  ") {
        return None;
    }
    let ok = if plus {
        (8..=15).contains(&digits)
    } else {
        // National numbers: 10 digits in the usual groups, e.g. (555) 123-4567, 555-123-4567,
        // 030 1234 5678; dates and plain numbers have other counts or no grouping.
        digits == 10 && seps >= 2 && !span.contains(&b'.')
    };
    ok.then_some(e)
}

fn ipv4(b: &[u8], i: usize) -> Option<usize> {
    let e = run(b, i, |c| c.is_ascii_digit() || c == b'.');
    let mut e2 = e;
    while e2 > i && b[e2 - 1] == b'.' {
        e2 -= 1;
    }
    let s = std::str::from_utf8(&b[i..e2]).ok()?;
    let ok = s.split('.').count() == 4
        && s.split('.').all(|o| !o.is_empty() && o.len() <= 3)
        && s.parse::<std::net::Ipv4Addr>().is_ok()
        && ends_word(b, e2)
        && !(e2 < b.len() && b[e2] == b'.' && b.get(e2 + 1).is_some_and(u8::is_ascii_digit));
    ok.then_some(e2)
}

fn ipv6(b: &[u8], i: usize) -> Option<usize> {
    let e = run(b, i, |c| c.is_ascii_hexdigit() || c == b':' || c == b'.');
    let mut e2 = e;
    while e2 > i && (b[e2 - 1] == b'.' || (b[e2 - 1] == b':' && !(e2 >= 2 && b[e2 - 2] == b':'))) {
        e2 -= 1;
    }
    let s = std::str::from_utf8(&b[i..e2]).ok()?;
    let ok =
        s.matches(':').count() >= 2 && s.parse::<std::net::Ipv6Addr>().is_ok() && ends_word(b, e2);
    ok.then_some(e2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> String {
        redact(s).text
    }

    #[test]
    fn each_kind_is_replaced() {
        assert_eq!(r("mail jane.doe+x@example.co.uk now"), "mail [EMAIL] now");
        assert_eq!(r("call +49 30 1234 5678."), "call [PHONE].");
        assert_eq!(
            r("call (555) 123-4567 or 555-123-4567"),
            "call [PHONE] or [PHONE]"
        );
        assert_eq!(
            r("IBAN DE89 3704 0044 0532 0130 00, thanks"),
            "IBAN [IBAN], thanks"
        );
        assert_eq!(r("GB82WEST12345698765432"), "[IBAN]");
        assert_eq!(r("card 4111 1111 1111 1111 exp"), "card [CARD] exp");
        assert_eq!(r("card 5500-0000-0000-0004"), "card [CARD]");
        assert_eq!(
            r("Authorization: Bearer eyJhbGciOi.abc-DEF_123"),
            "Authorization: Bearer [TOKEN]"
        );
        assert_eq!(r("key sk-proj-abc123DEF456ghi789 ok"), "key [API_KEY] ok");
        assert_eq!(r("AKIAIOSFODNN7EXAMPLE"), "[API_KEY]");
        assert_eq!(r("ghp_0123456789abcdefABCDEF0123456789abcd"), "[API_KEY]");
        assert_eq!(r("from 192.168.1.20:8080"), "from [IP]:8080");
        assert_eq!(
            r("host 2001:db8::8a2e:370:7334 and ::1"),
            "host [IP] and [IP]"
        );
        let all = redact("a@b.io 10.0.0.1 10.0.0.2");
        assert_eq!(all.counts.get(&Kind::Ip), Some(&2));
        assert_eq!(all.counts.get(&Kind::Email), Some(&1));
    }

    #[test]
    fn ordinary_text_is_left_alone() {
        for s in [
            "The meeting is on 2026-11-22 at 12:30:45, room 101.",
            "Revenue grew 12.5% to 1,234,567 EUR in Q3; version 1.2.3 ships.",
            "Order 4111 1111 1111 1112 is not a valid card (Luhn fails).",
            "DE89 3704 0044 0532 0130 01 fails mod-97.",
            "Use the sk- prefix for secret keys; see docs@ for help.",
            "Call me maybe, at 5 pm. Number 12345. Pi is 3.14159.",
            "Über straße — naïve café 東京 🚀 stays intact.",
            "a bearer of good news",
            "ISBN 978-3-16-148410-0 and ticket ABCD-1234.",
        ] {
            assert_eq!(r(s), s, "{s}");
        }
    }

    /// The vectors every SDK shares (`sdk/redaction-vectors.json`).
    #[test]
    fn shared_vectors_redact_alike_in_every_sdk() {
        let v: serde_json::Value =
            serde_json::from_str(include_str!("../../../sdk/redaction-vectors.json"))
                .expect("vectors");
        for pair in v["redacted"].as_array().expect("redacted") {
            let (input, want) = (
                pair[0].as_str().expect("in"),
                pair[1].as_str().expect("out"),
            );
            assert_eq!(r(input), want, "{input}");
        }
        for s in v["unchanged"].as_array().expect("unchanged") {
            let s = s.as_str().expect("s");
            assert_eq!(r(s), s, "{s}");
        }
    }
}
