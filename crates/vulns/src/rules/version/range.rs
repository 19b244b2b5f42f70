//! Version ranges as each ecosystem writes them (CVE suppressions, SPEC 2.5; CONTRACT 15):
//! a range is read and checked at creation with the scheme of its ecosystem, then asked
//! whether an installed version is in it.
//!
//! - **npm**: node-semver ranges — `||`, comparator sets separated by spaces, `^`, `~` (and
//!   `~>`), x-ranges (`1.x`, `1.2.*`, `*`), hyphen ranges (`1.2.3 - 2.3`), with node-semver's
//!   rule that a pre-release is only in a range naming a pre-release of the same
//!   `MAJOR.MINOR.PATCH` (`semver.satisfies`).
//! - **PyPI**: PEP 440 specifiers separated by commas — `~=`, `==` and `!=` (with `.*` prefix
//!   matching), `<`, `<=`, `>`, `>=` (not `===`) — as `packaging`'s `SpecifierSet.contains` with
//!   pre-releases included (an installed pre-release is in a range by its order).
//! - **RubyGems**: `Gem::Requirement` — `=`, `!=`, `>`, `<`, `>=`, `<=`, `~>`, separated by
//!   commas.
//! - **Packagist**: Composer's constraints — `^1.2`, `~1.2.3`, `1.2.*`, `1.0 - 2.0`,
//!   comparators (`>=1.0 <1.4.2`, `!=1.5`), `||` — as `Composer\Semver\Semver::satisfies`
//!   (stability flags such as `@dev` and branch constraints are refused).
//! - **Go, Debian/Ubuntu, Red Hat/AlmaLinux/Rocky, Alpine**: comparators `<`, `<=`, `>`,
//!   `>=`, `=`, `!=` (dpkg's `<<` and `>>` too) separated by commas or spaces, `||` between
//!   alternatives, `*` for every version; versions in the ecosystem's own syntax.

use super::{Invalid, Scheme, npm, pep440};
use std::cmp::Ordering;

/// A parsed range.
#[derive(Debug, Clone, PartialEq)]
pub struct Range {
    scheme: Scheme,
    /// Alternatives (`||`), each a set of comparators that must all hold.
    sets: Vec<Vec<Cmp>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    /// PEP 440 `==X.Y.*` (negated: `!=X.Y.*`).
    Prefix(bool),
    /// PEP 440 `~=`.
    Compatible,
    /// RubyGems `~>`.
    Pessimistic,
    /// A Composer bound: `version_compare` with this operator against a normalised version.
    Composer(&'static str),
}

#[derive(Debug, Clone, PartialEq)]
struct Cmp {
    op: Op,
    version: String,
}

/// Why a range cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RangeError(pub String);

fn err<T>(m: impl Into<String>) -> Result<T, RangeError> {
    Err(RangeError(m.into()))
}

impl Range {
    /// Reads `text` in the syntax of `scheme` (see the module's documentation); every version
    /// in it must be valid in the scheme.
    pub fn parse(scheme: Scheme, text: &str) -> Result<Range, RangeError> {
        let text = text.trim();
        if text.is_empty() {
            return err("the range is empty (use * for every version)");
        }
        if text.len() > 1000 {
            return err("the range is longer than 1000 characters");
        }
        let sets = match scheme {
            Scheme::Npm => parse_npm(text)?,
            Scheme::Pep440 => vec![parse_pep440(text)?],
            Scheme::Gem => vec![parse_gem(text)?],
            Scheme::Composer => parse_composer(text)?,
            _ => parse_generic(scheme, text)?,
        };
        Ok(Range { scheme, sets })
    }

    /// Whether `version` is in the range; an error when the scheme cannot read it.
    pub fn contains(&self, version: &str) -> Result<bool, Invalid> {
        if version.trim().is_empty() {
            return Err(Invalid::new(self.scheme.name(), version, "empty"));
        }
        self.scheme.validate(version)?;
        for set in &self.sets {
            let mut all = true;
            for c in set {
                if !self.holds(c, version)? {
                    all = false;
                    break;
                }
            }
            if all && (self.scheme != Scheme::Npm || npm_prerelease_allowed(set, version)) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn holds(&self, c: &Cmp, v: &str) -> Result<bool, Invalid> {
        let s = self.scheme;
        if s == Scheme::Pep440 {
            return pep440_holds(c, v);
        }
        if let Op::Composer(op) = c.op {
            let n = super::composer::normalize(v)?;
            return Ok(super::composer::meets(&n, &(op, c.version.clone())));
        }
        Ok(match c.op {
            Op::Lt => s.compare(v, &c.version)? == Ordering::Less,
            Op::Le => s.compare(v, &c.version)? != Ordering::Greater,
            Op::Gt => s.compare(v, &c.version)? == Ordering::Greater,
            Op::Ge => s.compare(v, &c.version)? != Ordering::Less,
            Op::Eq => s.compare(v, &c.version)? == Ordering::Equal,
            Op::Ne => s.compare(v, &c.version)? != Ordering::Equal,
            Op::Pessimistic => {
                s.compare(v, &c.version)? != Ordering::Less
                    && super::gem::compare(
                        &super::gem::release(v)?,
                        &super::gem::bump(&c.version)?,
                    )? == Ordering::Less
            }
            Op::Prefix(_) | Op::Compatible | Op::Composer(_) => false,
        })
    }
}

// ---- the generic comparators ---------------------------------------------------------------

fn split_op<'a>(c: &'a str, ops: &[(&str, Op)]) -> Option<(Op, &'a str)> {
    ops.iter()
        .find(|(p, _)| c.starts_with(p))
        .map(|(p, op)| (*op, c[p.len()..].trim_start()))
}

/// Splits at `seps`, joining an operator written apart from its version (`>= 1.2`) to it.
fn tokens(set: &str, seps: &[char], ops_chars: &[char]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut pending = String::new();
    for t in set.split(seps).filter(|t| !t.is_empty()) {
        if t.chars().all(|c| ops_chars.contains(&c)) {
            pending.push_str(t);
        } else {
            out.push(format!("{pending}{t}"));
            pending.clear();
        }
    }
    if !pending.is_empty() {
        out.push(pending);
    }
    out
}

fn parse_generic(scheme: Scheme, text: &str) -> Result<Vec<Vec<Cmp>>, RangeError> {
    const OPS: [(&str, Op); 10] = [
        ("<<", Op::Lt),
        (">>", Op::Gt),
        ("<=", Op::Le),
        (">=", Op::Ge),
        ("==", Op::Eq),
        ("!=", Op::Ne),
        ("<", Op::Lt),
        (">", Op::Gt),
        ("=", Op::Eq),
        ("", Op::Eq),
    ];
    let mut sets = Vec::new();
    for alt in text.split("||") {
        let mut set = Vec::new();
        for t in tokens(alt, &[',', ' ', '\t'], &['<', '>', '=', '!']) {
            if t == "*" {
                continue;
            }
            let (op, v) = split_op(&t, &OPS).unwrap_or((Op::Eq, t.as_str()));
            if v.is_empty() {
                return err(format!("`{t}` has no version"));
            }
            check_version(scheme, v)?;
            set.push(Cmp {
                op,
                version: v.to_owned(),
            });
        }
        if set.is_empty() && !alt.contains('*') {
            return err("an empty alternative between ||");
        }
        sets.push(set);
    }
    Ok(sets)
}

fn check_version(scheme: Scheme, v: &str) -> Result<(), RangeError> {
    scheme.validate(v).map_err(|e| RangeError(e.to_string()))
}

// ---- Composer --------------------------------------------------------------------------------

/// Composer's constraints (`VersionParser::parseConstraints`): alternatives separated by `||`
/// (or `|`), constraints within one by commas or spaces (an operator written apart from its
/// version, and a hyphen range, stay one constraint).
fn parse_composer(text: &str) -> Result<Vec<Vec<Cmp>>, RangeError> {
    let mut sets = Vec::new();
    for alt in text.split('|').map(str::trim) {
        // `||` leaves an empty piece between its two bars.
        if alt.is_empty() && text.contains("||") {
            continue;
        }
        let spaced = alt.replace(',', " ");
        let words: Vec<&str> = spaced.split_whitespace().collect();
        let mut terms: Vec<String> = Vec::new();
        let mut i = 0;
        while i < words.len() {
            let w = words[i];
            if w.chars().all(|c| "<>=!~^".contains(c)) && i + 1 < words.len() {
                terms.push(format!("{w}{}", words[i + 1]));
                i += 2;
            } else if w == "-" && !terms.is_empty() && i + 1 < words.len() {
                let from = terms.pop().unwrap_or_default();
                terms.push(format!("{from} - {}", words[i + 1]));
                i += 2;
            } else {
                terms.push(w.to_owned());
                i += 1;
            }
        }
        if terms.is_empty() {
            return err("an empty alternative");
        }
        let mut set = Vec::new();
        for t in &terms {
            let bounds = super::composer::constraint(t)
                .map_err(|_| RangeError(format!("`{t}` is not a Composer constraint")))?;
            set.extend(bounds.into_iter().map(|(op, version)| Cmp {
                op: Op::Composer(op),
                version,
            }));
        }
        sets.push(set);
    }
    if sets.is_empty() {
        return err("the range is empty");
    }
    Ok(sets)
}

// ---- RubyGems --------------------------------------------------------------------------------

fn parse_gem(text: &str) -> Result<Vec<Cmp>, RangeError> {
    const OPS: [(&str, Op); 7] = [
        ("~>", Op::Pessimistic),
        (">=", Op::Ge),
        ("<=", Op::Le),
        ("!=", Op::Ne),
        (">", Op::Gt),
        ("<", Op::Lt),
        ("=", Op::Eq),
    ];
    let mut set = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        if part.is_empty() {
            return err("an empty requirement between commas");
        }
        let (op, v) = split_op(part, &OPS).unwrap_or((Op::Eq, part));
        if v.is_empty() || v.contains(' ') || !super::gem::valid(v) {
            return err(format!("`{part}` is not a RubyGems requirement"));
        }
        set.push(Cmp {
            op,
            version: v.to_owned(),
        });
    }
    Ok(set)
}

// ---- PEP 440 ---------------------------------------------------------------------------------

fn parse_pep440(text: &str) -> Result<Vec<Cmp>, RangeError> {
    const OPS: [(&str, Op); 7] = [
        ("~=", Op::Compatible),
        ("==", Op::Eq),
        ("!=", Op::Ne),
        ("<=", Op::Le),
        (">=", Op::Ge),
        ("<", Op::Lt),
        (">", Op::Gt),
    ];
    let mut set = Vec::new();
    // packaging skips empty specifiers (`>=1.0,,<2`).
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if part.starts_with("===") {
            return err(format!(
                "`{part}`: arbitrary equality (===) is not supported, use =="
            ));
        }
        let Some((mut op, v)) = split_op(part, &OPS) else {
            return err(format!(
                "`{part}` has no operator (use ~=, ==, !=, <=, >=, <, >, ===)"
            ));
        };
        let v = v.trim();
        if v.is_empty() || v.contains(char::is_whitespace) {
            return err(format!("`{part}` is not a PEP 440 specifier"));
        }
        let mut version = v.to_owned();
        match op {
            Op::Eq | Op::Ne if v.ends_with(".*") => {
                let base = &v[..v.len() - 2];
                let k = pep440::parse(base).map_err(|e| RangeError(e.to_string()))?;
                if !k.is_release_only() {
                    return err(format!("`{part}`: a .* prefix takes release numbers only"));
                }
                op = Op::Prefix(op == Op::Ne);
                version = base.to_owned();
            }
            _ => {
                let k = pep440::parse(v).map_err(|e| RangeError(e.to_string()))?;
                if k.has_local() && !matches!(op, Op::Eq | Op::Ne) {
                    return err(format!("`{part}`: only == and != take a local version"));
                }
                if op == Op::Compatible && pep440::release_of(v).1.len() < 2 {
                    return err(format!("`{part}`: ~= needs at least two release numbers"));
                }
            }
        }
        set.push(Cmp { op, version });
    }
    Ok(set)
}

fn pep440_holds(c: &Cmp, v: &str) -> Result<bool, Invalid> {
    let cand = pep440::parse(v)?;
    let spec = pep440::parse(&c.version)?;
    Ok(match c.op {
        Op::Prefix(negated) => cand.release_starts_with(&pep440::release_of(&c.version)) != negated,
        Op::Eq | Op::Ne => {
            let cand = if spec.has_local() {
                cand
            } else {
                cand.public()
            };
            (cand == spec) == (c.op == Op::Eq)
        }
        Op::Le => cand.public() <= spec,
        Op::Ge => cand.public() >= spec,
        Op::Lt => {
            cand < spec
                && !(!spec.is_prerelease() && cand.is_prerelease() && cand.base() == spec.base())
        }
        Op::Gt => {
            cand > spec
                && !(!spec.is_postrelease() && cand.is_postrelease() && cand.base() == spec.base())
                && !(cand.has_local() && cand.base() == spec.base())
        }
        Op::Compatible => {
            let (epoch, mut release) = pep440::release_of(&c.version);
            release.pop();
            cand.public() >= spec && cand.release_starts_with(&(epoch, release))
        }
        Op::Pessimistic | Op::Composer(_) => false,
    })
}

// ---- node-semver -----------------------------------------------------------------------------

/// A partial version of a range (`1`, `1.2`, `1.2.x`, `1.2.3-pre`): the numbers given.
struct Partial {
    nums: Vec<u64>,
    pre: String,
}

fn npm_partial(s: &str) -> Result<Partial, RangeError> {
    let t = s.strip_prefix('v').unwrap_or(s);
    let (t, _build) = t.split_once('+').unwrap_or((t, ""));
    let mut nums = Vec::new();
    let mut rest = t;
    let mut pre = String::new();
    for i in 0..3 {
        let (part, after) = match rest.find(['.', '-']) {
            Some(k) => (&rest[..k], &rest[k..]),
            None => (rest, ""),
        };
        if matches!(part, "x" | "X" | "*") {
            rest = after.strip_prefix('.').unwrap_or(after);
            // Anything after a wildcard is a wildcard too.
            if !rest.is_empty() && !rest.split('.').all(|p| matches!(p, "x" | "X" | "*")) {
                return err(format!("`{s}` is not a version or x-range"));
            }
            rest = "";
            break;
        }
        if part.is_empty()
            || !part.bytes().all(|b| b.is_ascii_digit())
            || (part.len() > 1 && part.starts_with('0'))
        {
            return err(format!("`{s}` is not a version or x-range"));
        }
        nums.push(
            part.parse::<u64>()
                .map_err(|_| RangeError(format!("`{s}`: a number is too large")))?,
        );
        if i < 2 && after.starts_with('.') {
            rest = &after[1..];
        } else {
            rest = after;
            break;
        }
    }
    if let Some(p) = rest.strip_prefix('-') {
        if nums.len() < 3 {
            return err(format!("`{s}`: a pre-release needs MAJOR.MINOR.PATCH"));
        }
        pre = p.to_owned();
    } else if !rest.is_empty() {
        return err(format!("`{s}` is not a version or x-range"));
    }
    if nums.len() == 3 {
        let full = if pre.is_empty() {
            format!("{}.{}.{}", nums[0], nums[1], nums[2])
        } else {
            format!("{}.{}.{}-{pre}", nums[0], nums[1], nums[2])
        };
        npm::parse(&full).map_err(|e| RangeError(e.to_string()))?;
    }
    Ok(Partial { nums, pre })
}

fn semver(n: [u64; 3], pre: &str) -> String {
    if pre.is_empty() {
        format!("{}.{}.{}", n[0], n[1], n[2])
    } else {
        format!("{}.{}.{}-{pre}", n[0], n[1], n[2])
    }
}

fn cmp(op: Op, n: [u64; 3], pre: &str) -> Cmp {
    Cmp {
        op,
        version: semver(n, pre),
    }
}

/// The comparators of one node-semver range term.
fn npm_term(op: &str, p: &Partial, out: &mut Vec<Cmp>) -> Result<(), RangeError> {
    let n = &p.nums;
    let full = |d: u64| {
        [
            n.first().copied().unwrap_or(d),
            n.get(1).copied().unwrap_or(d),
            n.get(2).copied().unwrap_or(d),
        ]
    };
    let next = |k: usize| -> Result<[u64; 3], RangeError> {
        let mut v = full(0);
        v[k] = v[k]
            .checked_add(1)
            .ok_or_else(|| RangeError("a version number is too large".into()))?;
        for x in v.iter_mut().skip(k + 1) {
            *x = 0;
        }
        Ok(v)
    };
    match op {
        "^" => {
            if n.is_empty() {
                return Ok(());
            }
            out.push(cmp(Op::Ge, full(0), &p.pre));
            let k = match n.len() {
                1 => 0,
                2 => usize::from(n[0] == 0),
                _ => {
                    if n[0] != 0 {
                        0
                    } else if n[1] != 0 {
                        1
                    } else {
                        2
                    }
                }
            };
            out.push(cmp(Op::Lt, next(k)?, "0"));
        }
        "~" | "~>" => {
            if n.is_empty() {
                return Ok(());
            }
            out.push(cmp(Op::Ge, full(0), &p.pre));
            out.push(cmp(Op::Lt, next(if n.len() == 1 { 0 } else { 1 })?, "0"));
        }
        "" | "=" => match n.len() {
            0 => {}
            3 => out.push(cmp(Op::Eq, full(0), &p.pre)),
            k => {
                out.push(cmp(Op::Ge, full(0), ""));
                out.push(cmp(Op::Lt, next(k - 1)?, "0"));
            }
        },
        ">" => match n.len() {
            // `>*` matches nothing.
            0 => out.push(cmp(Op::Lt, [0, 0, 0], "0")),
            3 => out.push(cmp(Op::Gt, full(0), &p.pre)),
            k => out.push(cmp(Op::Ge, next(k - 1)?, "")),
        },
        ">=" => match n.len() {
            0 => {}
            _ => out.push(cmp(Op::Ge, full(0), &p.pre)),
        },
        "<" => match n.len() {
            0 => out.push(cmp(Op::Lt, [0, 0, 0], "0")),
            3 => out.push(cmp(Op::Lt, full(0), &p.pre)),
            _ => out.push(cmp(Op::Lt, full(0), "0")),
        },
        "<=" => match n.len() {
            0 => {}
            3 => out.push(cmp(Op::Le, full(0), &p.pre)),
            k => out.push(cmp(Op::Lt, next(k - 1)?, "0")),
        },
        _ => return err(format!("`{op}` is not a node-semver operator")),
    }
    Ok(())
}

fn parse_npm(text: &str) -> Result<Vec<Vec<Cmp>>, RangeError> {
    let mut sets = Vec::new();
    for alt in text.split("||") {
        let alt = alt.trim();
        let mut set = Vec::new();
        let words: Vec<&str> = alt.split_whitespace().collect();
        if words.len() == 3 && words[1] == "-" {
            let (a, b) = (npm_partial(words[0])?, npm_partial(words[2])?);
            npm_term(">=", &a, &mut set)?;
            npm_term("<=", &b, &mut set)?;
            sets.push(set);
            continue;
        }
        if words.contains(&"-") {
            return err(format!("`{alt}`: a hyphen range is `A - B`"));
        }
        for t in tokens(alt, &[' ', '\t'], &['<', '>', '=', '~', '^']) {
            let op_len = t
                .find(|c: char| !matches!(c, '<' | '>' | '=' | '~' | '^'))
                .unwrap_or(t.len());
            let (op, v) = t.split_at(op_len);
            if v.is_empty() {
                return err(format!("`{t}` has no version"));
            }
            let op = if op == "~>" { "~" } else { op };
            npm_term(op, &npm_partial(v)?, &mut set)?;
        }
        sets.push(set);
    }
    Ok(sets)
}

/// node-semver's rule: a pre-release version is only in a comparator set that names a
/// pre-release of the same `MAJOR.MINOR.PATCH`.
fn npm_prerelease_allowed(set: &[Cmp], v: &str) -> bool {
    let Ok(version) = npm::parse(v) else {
        return false;
    };
    if version.pre.is_empty() {
        return true;
    }
    set.iter().any(|c| {
        npm::parse(&c.version).is_ok_and(|s| {
            !s.pre.is_empty()
                && s.core
                    .iter()
                    .zip(version.core.iter())
                    .all(|(a, b)| super::cmp_digits(a, b) == Ordering::Equal)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: Scheme, t: &str) -> Range {
        Range::parse(s, t).unwrap_or_else(|e| panic!("{t}: {e}"))
    }

    #[test]
    fn npm_sugar() {
        let caret = r(Scheme::Npm, "^1.2.3");
        assert!(caret.contains("1.9.9").expect("a valid version"));
        assert!(!caret.contains("2.0.0").expect("a valid version"));
        assert!(!caret.contains("1.5.0-beta").expect("a valid version"));
        assert!(
            r(Scheme::Npm, "^0.0.3")
                .contains("0.0.3")
                .expect("a valid version")
        );
        assert!(
            !r(Scheme::Npm, "^0.0.3")
                .contains("0.0.4")
                .expect("a valid version")
        );
        assert!(
            r(Scheme::Npm, "~1.2")
                .contains("1.2.9")
                .expect("a valid version")
        );
        assert!(
            r(Scheme::Npm, ">=1.2.3-beta.1 <1.2.4")
                .contains("1.2.3-beta.2")
                .expect("a valid version")
        );
        assert!(
            r(Scheme::Npm, "1.2.3 - 2.3")
                .contains("2.3.9")
                .expect("a valid version")
        );
        assert!(
            !r(Scheme::Npm, "1.2.3 - 2.3")
                .contains("2.4.0")
                .expect("a valid version")
        );
        assert!(
            r(Scheme::Npm, "<1.0.0 || >=2.1")
                .contains("2.1.0")
                .expect("a valid version")
        );
        assert!(
            r(Scheme::Npm, "*")
                .contains("5.0.0")
                .expect("a valid version")
        );
        assert!(Range::parse(Scheme::Npm, "^1.2.3.4").is_err());
        assert!(Range::parse(Scheme::Npm, "").is_err());
    }

    #[test]
    fn pep440_specifiers() {
        let s = r(Scheme::Pep440, ">=1.0, <2.0");
        assert!(s.contains("1.5").expect("a valid version"));
        assert!(!s.contains("2.0").expect("a valid version"));
        assert!(!s.contains("2.0rc1").expect("a valid version"));
        assert!(
            r(Scheme::Pep440, "~=2.2")
                .contains("2.9")
                .expect("a valid version")
        );
        assert!(
            !r(Scheme::Pep440, "~=2.2")
                .contains("3.0")
                .expect("a valid version")
        );
        assert!(
            r(Scheme::Pep440, "==1.1.*")
                .contains("1.1.post1")
                .expect("a valid version")
        );
        assert!(
            r(Scheme::Pep440, "==1.0")
                .contains("1.0+local")
                .expect("a valid version")
        );
        assert!(
            !r(Scheme::Pep440, ">1.0")
                .contains("1.0.post1")
                .expect("a valid version")
        );
        assert!(Range::parse(Scheme::Pep440, "1.0").is_err());
        assert!(Range::parse(Scheme::Pep440, "===1.0").is_err());
        assert!(Range::parse(Scheme::Pep440, "~=1").is_err());
        assert!(Range::parse(Scheme::Pep440, ">=1.0+local").is_err());
    }

    #[test]
    fn gem_and_generic() {
        let g = r(Scheme::Gem, "~> 2.2, != 2.2.5");
        assert!(g.contains("2.9").expect("a valid version"));
        assert!(!g.contains("3.0").expect("a valid version"));
        assert!(!g.contains("2.2.5").expect("a valid version"));
        let d = r(Scheme::Dpkg, ">= 1:2.0-1, << 1:2.1");
        assert!(d.contains("1:2.0-3").expect("a valid version"));
        assert!(!d.contains("2.5").expect("a valid version"));
        assert!(
            r(Scheme::Go, "<v1.5.0 || >=v2.0.0")
                .contains("v1.4.9")
                .expect("a valid version")
        );
        assert!(Range::parse(Scheme::Dpkg, ">= ").is_err());
        assert!(Range::parse(Scheme::Go, ">=banana").is_err());
    }
}
