//! Composer's order (Packagist): a version is first normalised as Composer's
//! `VersionParser::normalize` does (`v1.2` → `1.2.0.0`, `1.0-b2` → `1.0.0.0-beta2`, `1.0.x-dev`
//! → `1.0.9999999.9999999-dev`, date versions, build metadata dropped), then the normalised
//! strings are ordered by PHP's `version_compare` (special forms `dev` < `alpha` = `a` <
//! `beta` = `b` < `RC` = `rc` < a number < `pl` = `p`, any other word before `dev`). Branches
//! (`dev-main`) have no order and are refused.

use super::Invalid;
use std::cmp::Ordering;

const NAME: &str = "Composer";

/// A version's modifier: `(stability as written, its number, -dev)`.
type Modifier = (Option<String>, String, bool);

/// The modifier after the numbers: `(stability as written, its number, -dev)`, or `None`
/// when the rest is not one. Composer's pattern, case-insensitive and with the regex's
/// backtracking: `[._-]?(?:(stable|beta|b|RC|alpha|a|patch|pl|p)((?:[.-]?\d+)*+)?)?
/// ([.-]?dev)?$`.
fn modifier(rest: &str) -> Option<Modifier> {
    const WORDS: [&str; 9] = [
        "stable", "beta", "b", "rc", "alpha", "a", "patch", "pl", "p",
    ];
    let starts_ci = |s: &str, w: &str| s.len() >= w.len() && s[..w.len()].eq_ignore_ascii_case(w);
    let seps: &[usize] = if rest.starts_with(['.', '_', '-']) {
        &[1, 0]
    } else {
        &[0]
    };
    for &sep in seps {
        let r1 = &rest[sep..];
        let choices = WORDS
            .iter()
            .filter(|w| starts_ci(r1, w))
            .map(|w| Some(w.len()))
            .chain(std::iter::once(None));
        for choice in choices {
            let (stability, r2) = match choice {
                Some(n) => (Some(r1[..n].to_owned()), &r1[n..]),
                None => (None, r1),
            };
            // `((?:[.-]?\d+)*+)`, possessive: as many as there are (only after a stability).
            let mut r3 = r2;
            let mut number = String::new();
            if stability.is_some() {
                loop {
                    let t = r3.strip_prefix(['.', '-']).unwrap_or(r3);
                    let d = t.bytes().take_while(u8::is_ascii_digit).count();
                    if d == 0 {
                        break;
                    }
                    let take = (r3.len() - t.len()) + d;
                    number.push_str(&r3[..take]);
                    r3 = &r3[take..];
                }
            }
            let dev = if r3.is_empty() {
                Some(false)
            } else {
                let t = r3.strip_prefix(['.', '-']).unwrap_or(r3);
                t.eq_ignore_ascii_case("dev").then_some(true)
            };
            if let Some(dev) = dev {
                return Some((stability, number, dev));
            }
        }
    }
    None
}

fn expand(stability: &str) -> String {
    match stability.to_ascii_lowercase().as_str() {
        "a" => "alpha".into(),
        "b" => "beta".into(),
        "p" | "pl" => "patch".into(),
        "rc" => "RC".into(),
        other => other.into(),
    }
}

/// Runs of digits at the start of `s`, each optionally after `seps`: up to `max` of them.
fn numbers(s: &str, first_max_len: usize) -> Option<(Vec<&str>, &str)> {
    let d = s.bytes().take_while(u8::is_ascii_digit).count();
    if d == 0 || d > first_max_len {
        return None;
    }
    let mut out = vec![&s[..d]];
    let mut rest = &s[d..];
    while out.len() < 4 {
        let Some(t) = rest.strip_prefix('.') else {
            break;
        };
        let d = t.bytes().take_while(u8::is_ascii_digit).count();
        if d == 0 {
            break;
        }
        out.push(&t[..d]);
        rest = &t[d..];
    }
    Some((out, rest))
}

/// `VersionParser::normalize`, for versions (not branches): the normalised string.
pub fn normalize(v: &str) -> Result<String, Invalid> {
    let bad = |why| Invalid::new(NAME, v, why);
    let mut s = v.trim();
    // An alias (`1.0.0 as 2.0.0`): the version itself.
    let words: Vec<&str> = s.split(' ').filter(|w| !w.is_empty()).collect();
    if let [first, "as", _] = words[..]
        && !first.contains(',')
    {
        s = first;
    }
    for flag in ["@stable", "@rc", "@beta", "@alpha", "@dev"] {
        if s.len() >= flag.len() && s[s.len() - flag.len()..].eq_ignore_ascii_case(flag) {
            s = &s[..s.len() - flag.len()];
            break;
        }
    }
    if matches!(s, "master" | "trunk" | "default")
        || s.get(..4).is_some_and(|p| p.eq_ignore_ascii_case("dev-"))
    {
        return Err(bad("a branch, which has no order"));
    }
    if s.contains(|c: char| c.is_whitespace() || c == ',') {
        return Err(bad("not a version"));
    }
    if let Some((main, build)) = s.split_once('+')
        && !main.is_empty()
        && !build.is_empty()
    {
        s = main;
    }
    let body = s
        .strip_prefix('v')
        .or_else(|| s.strip_prefix('V'))
        .unwrap_or(s);
    // Classical versions: 1 to 4 numbers, the first of at most 5 digits.
    let classical = numbers(body, 5).and_then(|(nums, rest)| {
        let m = modifier(rest)?;
        let mut out = nums.join(".");
        for _ in nums.len()..4 {
            out.push_str(".0");
        }
        Some((out, m))
    });
    // Date versions: 4 digits, then 1 to 6 groups of 2 and up to one of 1 to 3, separated by
    // `.`, `:` or `-` or not at all.
    let dated = || -> Option<(String, Modifier)> {
        let b = body.as_bytes();
        if b.len() < 4 || !b[..4].iter().all(u8::is_ascii_digit) {
            return None;
        }
        // Greedy as the regex: try the longest date prefix whose rest is a modifier.
        let mut ends = Vec::new();
        let mut i = 4;
        let mut groups = 0;
        while groups < 6 {
            let j = if i < b.len() && matches!(b[i], b'.' | b':' | b'-') {
                i + 1
            } else {
                i
            };
            if j + 2 <= b.len() && b[j..j + 2].iter().all(u8::is_ascii_digit) {
                i = j + 2;
                groups += 1;
                ends.push(i);
            } else {
                break;
            }
        }
        let mut candidates = Vec::new();
        for &e in &ends {
            candidates.push(e);
            let j = if e < b.len() && matches!(b[e], b'.' | b':' | b'-') {
                e + 1
            } else {
                e
            };
            for k in 1..=3 {
                if j + k <= b.len() && b[j..j + k].iter().all(u8::is_ascii_digit) {
                    candidates.push(j + k);
                }
            }
        }
        candidates.sort_unstable();
        candidates.dedup();
        for &e in candidates.iter().rev() {
            if let Some(m) = modifier(&body[e..]) {
                let date: String = body[..e]
                    .chars()
                    .map(|c| if c.is_ascii_digit() { c } else { '.' })
                    .collect();
                return Some((date, m));
            }
        }
        None
    };
    let Some((mut out, (stability, number, dev))) = classical.or_else(dated) else {
        return numeric_branch(body).ok_or_else(|| bad("not a Composer version"));
    };
    if let Some(st) = stability {
        if st == "stable" {
            return Ok(out);
        }
        out.push('-');
        out.push_str(&expand(&st));
        out.push_str(number.trim_start_matches(['.', '-']));
    }
    if dev {
        out.push_str("-dev");
    }
    Ok(out)
}

/// A numeric branch with `-dev` (`1.x-dev`, `2.1.*-dev`): `normalizeBranch`.
fn numeric_branch(body: &str) -> Option<String> {
    let lower = body.to_ascii_lowercase();
    let name = lower.strip_suffix("dev")?.trim_end_matches(['.', '-']);
    let name = name.strip_prefix('v').unwrap_or(name);
    let parts: Vec<&str> = name.split('.').collect();
    if parts.is_empty()
        || parts.len() > 4
        || parts[0].is_empty()
        || !parts[0].bytes().all(|b| b.is_ascii_digit())
        || !parts[1..].iter().all(|p| {
            (!p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())) || matches!(*p, "x" | "*")
        })
    {
        return None;
    }
    let mut out: Vec<String> = parts
        .iter()
        .map(|p| {
            if matches!(*p, "x" | "*") {
                "9999999".to_owned()
            } else {
                (*p).to_owned()
            }
        })
        .collect();
    while out.len() < 4 {
        out.push("9999999".into());
    }
    Some(format!("{}-dev", out.join(".")))
}

/// PHP's `php_canonicalize_version`: `-`, `_`, `+` and other non-alphanumerics become `.`, and
/// a `.` goes between a digit and a non-digit.
fn canonical(v: &str) -> String {
    let b = v.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len() * 2);
    let Some(&first) = b.first() else {
        return String::new();
    };
    out.push(first);
    let mut lp = first;
    let dig = |x: u8| x.is_ascii_digit();
    let ndig = |x: u8| !x.is_ascii_digit() && x != b'.';
    for &c in &b[1..] {
        let last = *out.last().unwrap_or(&b'.');
        if matches!(c, b'-' | b'_' | b'+') {
            if last != b'.' {
                out.push(b'.');
            }
        } else if (ndig(lp) && dig(c)) || (dig(lp) && ndig(c)) {
            if last != b'.' {
                out.push(b'.');
            }
            out.push(c);
        } else if !c.is_ascii_alphanumeric() {
            if last != b'.' {
                out.push(b'.');
            }
        } else {
            out.push(c);
        }
        lp = c;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// PHP's special forms, by prefix (`compare_special_version_forms`).
fn special(form: &str) -> i32 {
    for (name, order) in [
        ("dev", 0),
        ("alpha", 1),
        ("a", 1),
        ("beta", 2),
        ("b", 2),
        ("RC", 3),
        ("rc", 3),
        ("#", 4),
        ("pl", 5),
        ("p", 5),
    ] {
        if form.starts_with(name) {
            return order;
        }
    }
    -6
}

fn numeric(s: &str) -> bool {
    s.bytes().next().is_some_and(|b| b.is_ascii_digit())
}

/// PHP's `version_compare` of two strings.
pub fn php_version_compare(a: &str, b: &str) -> Ordering {
    let (ca, cb) = (canonical(a), canonical(b));
    let pa: Vec<&str> = ca.split('.').filter(|p| !p.is_empty()).collect();
    let pb: Vec<&str> = cb.split('.').filter(|p| !p.is_empty()).collect();
    slices(&pa, &pb)
}

fn slices(pa: &[&str], pb: &[&str]) -> Ordering {
    for (x, y) in pa.iter().zip(pb) {
        let o = match (numeric(x), numeric(y)) {
            (true, true) => {
                // strtol: leading digits, saturating.
                let n = |s: &str| -> u128 {
                    s.bytes()
                        .take_while(u8::is_ascii_digit)
                        .fold(0u128, |acc, d| {
                            (acc * 10 + u128::from(d - b'0')).min(i64::MAX as u128)
                        })
                };
                n(x).cmp(&n(y))
            }
            (false, false) => special(x).cmp(&special(y)),
            (true, false) => special("#N#").cmp(&special(y)),
            (false, true) => special(x).cmp(&special("#N#")),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    match pa.len().cmp(&pb.len()) {
        Ordering::Equal => Ordering::Equal,
        Ordering::Greater => {
            let next = pa[pb.len()];
            if numeric(next) {
                Ordering::Greater
            } else {
                slices(&pa[pb.len()..], &["#N#"])
            }
        }
        Ordering::Less => {
            let next = pb[pa.len()];
            if numeric(next) {
                Ordering::Less
            } else {
                slices(&["#N#"], &pb[pa.len()..])
            }
        }
    }
}

/// Orders two versions as Composer does: normalised, then `version_compare`.
pub fn compare(a: &str, b: &str) -> Result<Ordering, Invalid> {
    let (x, y) = (normalize(a)?, normalize(b)?);
    Ok(php_version_compare(&x, &y))
}

// ---- constraints -------------------------------------------------------------------------------

/// One comparison of a constraint: an operator (`<`, `<=`, `>`, `>=`, `==`, `!=`) and a
/// normalised version.
pub type Bound = (&'static str, String);

/// `v1.2.3-beta` split: the given numbers (1 to 4), whether a modifier (stability or `-dev`)
/// follows, and the rest is valid.
fn partial(s: &str) -> Option<(Vec<u64>, bool)> {
    let body = s.strip_prefix(['v', 'V']).unwrap_or(s);
    let body = match body.split_once('+') {
        Some((m, b)) if !b.is_empty() && !b.contains(char::is_whitespace) => m,
        _ => body,
    };
    let (nums, rest) = numbers(body, usize::MAX)?;
    let (stability, _, dev) = modifier(rest)?;
    let nums = nums
        .iter()
        .map(|n| n.parse::<u64>().ok())
        .collect::<Option<Vec<u64>>>()?;
    Some((nums, stability.is_some() || dev))
}

/// Composer's `manipulateVersionString`: numbers after `position` zeroed, the one at
/// `position` (1-based) plus `increment`.
fn manipulate(nums: &[u64], position: usize, increment: u64) -> String {
    (1..=4)
        .map(|i| {
            let n = nums.get(i - 1).copied().unwrap_or(0);
            if i > position {
                0
            } else if i == position {
                n + increment
            } else {
                n
            }
        })
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(".")
}

fn invalid(c: &str) -> Invalid {
    Invalid::new(NAME, c, "not a Composer constraint")
}

/// The comparisons of one constraint of Composer's syntax (`VersionParser::parseConstraint`):
/// `*`, `~1.2`, `^1.2.3`, `1.2.*`, `1.0 - 2.0`, `>=1.0`, `!=1.5`, `1.2.3`. An empty list
/// matches every version. Stability flags (`@dev`) and branch constraints are refused.
pub fn constraint(c: &str) -> Result<Vec<Bound>, Invalid> {
    let c = c.trim();
    if c.is_empty() || c.contains('@') || c.contains('#') {
        return Err(invalid(c));
    }
    let wild = |s: &str| matches!(s, "x" | "X" | "*");
    // `*`, `x`, `*.*`, `v*`
    {
        let (v, body) = match c.strip_prefix(['v', 'V']) {
            Some(b) => (true, b),
            None => (false, c),
        };
        let parts: Vec<&str> = body.split('.').collect();
        if parts.iter().all(|p| wild(p)) {
            return Ok(if v || parts.len() > 1 {
                vec![(">=", "0.0.0.0-dev".into())]
            } else {
                Vec::new()
            });
        }
    }
    let low = |body: &str, has_modifier: bool| -> Result<String, Invalid> {
        normalize(&if has_modifier {
            body.to_owned()
        } else {
            format!("{body}-dev")
        })
    };
    if let Some(body) = c.strip_prefix('~') {
        if body.starts_with('>') {
            return Err(invalid(c));
        }
        let (nums, modified) = partial(body).ok_or_else(|| invalid(c))?;
        let position = nums.len();
        return Ok(vec![
            (">=", low(body, modified)?),
            (
                "<",
                format!(
                    "{}-dev",
                    manipulate(&nums, position.saturating_sub(1).max(1), 1)
                ),
            ),
        ]);
    }
    if let Some(body) = c.strip_prefix('^') {
        let (nums, modified) = partial(body).ok_or_else(|| invalid(c))?;
        let position = if nums[0] != 0 || nums.len() < 2 {
            1
        } else if nums[1] != 0 || nums.len() < 3 {
            2
        } else {
            3
        };
        return Ok(vec![
            (">=", low(body, modified)?),
            ("<", format!("{}-dev", manipulate(&nums, position, 1))),
        ]);
    }
    // X-range: `1.2.*`, `v1.x`
    {
        let body = c.strip_prefix(['v', 'V']).unwrap_or(c);
        let parts: Vec<&str> = body.split('.').collect();
        let given = parts
            .iter()
            .take_while(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            .count();
        if (1..=3).contains(&given) && parts.len() > given && parts[given..].iter().all(|p| wild(p))
        {
            let nums: Vec<u64> = parts[..given]
                .iter()
                .map(|p| p.parse().map_err(|_| invalid(c)))
                .collect::<Result<_, _>>()?;
            let lo = format!("{}-dev", manipulate(&nums, given, 0));
            let hi = format!("{}-dev", manipulate(&nums, given, 1));
            return Ok(if lo == "0.0.0.0-dev" {
                vec![("<", hi)]
            } else {
                vec![(">=", lo), ("<", hi)]
            });
        }
    }
    // Hyphen range: `1.0 - 2.0`
    if let Some((from, to)) = c.split_once(" - ") {
        let (from, to) = (from.trim_end(), to.trim_start());
        let (_, from_modified) = partial(from).ok_or_else(|| invalid(c))?;
        let (to_nums, to_modified) = partial(to).ok_or_else(|| invalid(c))?;
        let lower = (">=", low(from, from_modified)?);
        let upper = if to_nums.len() >= 3 || to_modified {
            ("<=", normalize(to)?)
        } else {
            normalize(to)?;
            (
                "<",
                format!(
                    "{}-dev",
                    manipulate(&to_nums, if to_nums.len() < 2 { 1 } else { 2 }, 1)
                ),
            )
        };
        return Ok(vec![lower, upper]);
    }
    // Comparators.
    let (op, rest) = ["<>", "!=", ">=", "<=", "==", ">", "<", "="]
        .iter()
        .find_map(|op| c.strip_prefix(op).map(|r| (*op, r.trim_start())))
        .unwrap_or(("=", c));
    let mut version = normalize(rest)?;
    let op: &'static str = match op {
        "<>" | "!=" => "!=",
        "=" | "==" => "==",
        ">=" => ">=",
        "<=" => "<=",
        ">" => ">",
        _ => "<",
    };
    if matches!(op, "<" | ">=") {
        let lower = rest.to_ascii_lowercase();
        let has_modifier = lower
            .match_indices('-')
            .any(|(i, _)| modifier(&lower[i + 1..]).is_some());
        if !has_modifier {
            version.push_str("-dev");
        }
    }
    Ok(vec![(op, version)])
}

/// Whether a normalised version meets a bound (`version_compare` with the operator).
pub fn meets(normalized: &str, bound: &Bound) -> bool {
    let o = php_version_compare(normalized, &bound.1);
    match bound.0 {
        "<" => o == Ordering::Less,
        "<=" => o != Ordering::Greater,
        ">" => o == Ordering::Greater,
        ">=" => o != Ordering::Less,
        "==" => o == Ordering::Equal,
        _ => o != Ordering::Equal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalisation_as_composer() {
        for (v, n) in [
            ("1.0.0", "1.0.0.0"),
            ("v1.2", "1.2.0.0"),
            ("1.0.0-beta.2", "1.0.0.0-beta2"),
            ("1.0-b2", "1.0.0.0-beta2"),
            ("1.0.0RC1", "1.0.0.0-RC1"),
            ("1.0.0-p1", "1.0.0.0-patch1"),
            ("1.0.0-dev", "1.0.0.0-dev"),
            ("1.0.0-alpha3-dev", "1.0.0.0-alpha3-dev"),
            ("2010-01-02", "2010.01.02"),
            ("1.x-dev", "1.9999999.9999999.9999999-dev"),
            ("1.0.0+build.5", "1.0.0.0"),
            ("1.0.0-stable", "1.0.0.0"),
        ] {
            assert_eq!(normalize(v).as_deref(), Ok(n), "{v}");
        }
        assert!(normalize("dev-main").is_err());
        assert!(normalize("banana").is_err());
        assert!(normalize("").is_err());
    }

    #[test]
    fn order() {
        use Ordering::*;
        for (a, b, o) in [
            ("1.0.0", "1.0.0.0", Equal),
            ("1.0.0-dev", "1.0.0-alpha1", Less),
            ("1.0.0-alpha1", "1.0.0-beta1", Less),
            ("1.0.0-RC1", "1.0.0", Less),
            ("1.0.0", "1.0.0-p1", Less),
            ("1.10", "1.9", Greater),
        ] {
            assert_eq!(compare(a, b), Ok(o), "{a} {b}");
        }
    }
}
