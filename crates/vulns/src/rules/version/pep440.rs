//! PEP 440 (PyPI), as Python's `packaging.version.Version` reads and orders versions: epochs
//! (`1!`), releases of any length (trailing zeros do not count), pre-releases (`a`, `b`, `rc`
//! and their spellings `alpha`, `beta`, `c`, `pre`, `preview`), post-releases (`.post1`,
//! `-1`, `rev`, `r`), dev releases (`.dev1`, before the pre-releases of the same release when
//! alone) and local versions (`+ubuntu.1`; numeric segments after alphanumeric ones).

use super::Invalid;
use std::cmp::Ordering;

const NAME: &str = "PEP 440";

/// A value with infinities at both ends (packaging's `Infinity`/`NegativeInfinity`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Bound<T> {
    Min,
    Val(T),
    Max,
}

/// A run of digits ordered by value.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Num(String);

impl Ord for Num {
    fn cmp(&self, other: &Self) -> Ordering {
        super::cmp_digits(&self.0, &other.0)
    }
}
impl PartialOrd for Num {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A local version segment: alphanumeric ones sort before numeric ones.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Local {
    Alpha(String),
    Num(Num),
}

/// The sort key of a version.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key {
    epoch: Num,
    release: Vec<Num>,
    pre: Bound<(u8, Num)>,
    post: Bound<Num>,
    dev: Bound<Num>,
    local: Bound<Vec<Local>>,
}

struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn digits(&mut self) -> Option<Num> {
        let start = self.i;
        while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
            self.i += 1;
        }
        (self.i > start).then(|| Num(String::from_utf8_lossy(&self.s[start..self.i]).into_owned()))
    }
    fn sep(&mut self) -> bool {
        if self.i < self.s.len() && matches!(self.s[self.i], b'-' | b'_' | b'.') {
            self.i += 1;
            true
        } else {
            false
        }
    }
    /// The first of `words` at the cursor (in the order given), consumed.
    fn word(&mut self, words: &[&str]) -> Option<usize> {
        let rest = &self.s[self.i..];
        let k = words.iter().position(|w| rest.starts_with(w.as_bytes()))?;
        self.i += words[k].len();
        Some(k)
    }
}

/// An optional separator, then one of `words`, then an optional separator and number;
/// `None` (cursor unchanged) when the word is not there.
fn labelled(c: &mut Cursor<'_>, words: &[&str]) -> Option<(usize, Option<Num>)> {
    let start = c.i;
    c.sep();
    let Some(k) = c.word(words) else {
        c.i = start;
        return None;
    };
    let before_sep = c.i;
    c.sep();
    let n = c.digits();
    if n.is_none() {
        c.i = before_sep;
    }
    Some((k, n))
}

/// Reads a version as `packaging.version.Version` (case-insensitive, surrounding spaces and a
/// leading `v` allowed).
pub fn parse(v: &str) -> Result<Key, Invalid> {
    let bad = |why| Invalid::new(NAME, v, why);
    let lower = v.trim().to_ascii_lowercase();
    let body = lower.strip_prefix('v').unwrap_or(&lower);
    let (main, local) = match body.split_once('+') {
        Some((m, l)) => (m, Some(l)),
        None => (body, None),
    };
    let mut c = Cursor {
        s: main.as_bytes(),
        i: 0,
    };
    let first = c
        .digits()
        .ok_or_else(|| bad("does not start with a number"))?;
    let (epoch, first) = if c.s.get(c.i) == Some(&b'!') {
        c.i += 1;
        (
            first,
            c.digits()
                .ok_or_else(|| bad("no release after the epoch"))?,
        )
    } else {
        (Num("0".into()), first)
    };
    let mut release = vec![first];
    while c.s.get(c.i) == Some(&b'.') && c.s.get(c.i + 1).is_some_and(u8::is_ascii_digit) {
        c.i += 1;
        release.push(c.digits().ok_or_else(|| bad("empty release segment"))?);
    }
    // Pre-release: a, b, rc (and spellings); order as in packaging's pattern.
    const PRE: [&str; 8] = ["alpha", "a", "beta", "b", "preview", "pre", "c", "rc"];
    let pre = labelled(&mut c, &PRE).map(|(k, n)| {
        let rank = match PRE[k] {
            "alpha" | "a" => 0,
            "beta" | "b" => 1,
            _ => 2,
        };
        (rank, n.unwrap_or(Num("0".into())))
    });
    // Post-release: `-N` or [sep](post|rev|r)[sep][N].
    let post = {
        let start = c.i;
        if c.s.get(c.i) == Some(&b'-') && c.s.get(c.i + 1).is_some_and(u8::is_ascii_digit) {
            c.i += 1;
            c.digits()
        } else {
            c.i = start;
            labelled(&mut c, &["post", "rev", "r"]).map(|(_, n)| n.unwrap_or(Num("0".into())))
        }
    };
    let dev = labelled(&mut c, &["dev"]).map(|(_, n)| n.unwrap_or(Num("0".into())));
    if c.i != c.s.len() {
        return Err(bad("unexpected text after the version"));
    }
    let local = match local {
        None => None,
        Some(l) => {
            let segs: Vec<&str> = l.split(['.', '-', '_']).collect();
            if segs
                .iter()
                .any(|s| s.is_empty() || !s.bytes().all(|b| b.is_ascii_alphanumeric()))
            {
                return Err(bad("bad local version"));
            }
            Some(
                segs.into_iter()
                    .map(|s| {
                        if s.bytes().all(|b| b.is_ascii_digit()) {
                            Local::Num(Num(s.to_owned()))
                        } else {
                            Local::Alpha(s.to_owned())
                        }
                    })
                    .collect(),
            )
        }
    };
    while release.len() > 1
        && release
            .last()
            .is_some_and(|n| n.0.bytes().all(|b| b == b'0'))
    {
        release.pop();
    }
    if release.len() == 1 && release[0].0.bytes().all(|b| b == b'0') {
        release.clear();
    }
    let pre = match (pre, &post, &dev) {
        (None, None, Some(_)) => Bound::Min,
        (None, _, _) => Bound::Max,
        (Some(p), _, _) => Bound::Val(p),
    };
    Ok(Key {
        epoch,
        release,
        pre,
        post: post.map_or(Bound::Min, Bound::Val),
        dev: dev.map_or(Bound::Max, Bound::Val),
        local: local.map_or(Bound::Min, Bound::Val),
    })
}

impl Key {
    /// Whether it is a plain release (no pre, post, dev or local part).
    pub fn is_release_only(&self) -> bool {
        self.pre == Bound::Max
            && self.post == Bound::Min
            && self.dev == Bound::Max
            && self.local == Bound::Min
    }

    /// Whether it has a local part (`+ubuntu.1`).
    pub fn has_local(&self) -> bool {
        self.local != Bound::Min
    }

    /// The same version without its local part.
    pub fn public(&self) -> Key {
        Key {
            local: Bound::Min,
            ..self.clone()
        }
    }

    /// packaging's `is_prerelease`: a pre or dev release.
    pub fn is_prerelease(&self) -> bool {
        matches!(self.pre, Bound::Val(_)) || matches!(self.dev, Bound::Val(_))
    }

    /// packaging's `is_postrelease`.
    pub fn is_postrelease(&self) -> bool {
        matches!(self.post, Bound::Val(_))
    }

    /// The base version (epoch and release) as a key.
    pub fn base(&self) -> Key {
        Key {
            epoch: self.epoch.clone(),
            release: self.release.clone(),
            pre: Bound::Max,
            post: Bound::Min,
            dev: Bound::Max,
            local: Bound::Min,
        }
    }

    /// Whether the epoch is `prefix.0` and the release, padded with zeros, starts with the
    /// numbers of `prefix.1` (PEP 440 prefix matching, `==1.2.*`).
    pub fn release_starts_with(&self, prefix: &(String, Vec<String>)) -> bool {
        super::cmp_digits(&self.epoch.0, &prefix.0) == Ordering::Equal
            && prefix.1.iter().enumerate().all(|(i, n)| {
                super::cmp_digits(self.release.get(i).map_or("0", |r| r.0.as_str()), n)
                    == Ordering::Equal
            })
    }
}

/// The epoch and release numbers of `v` as written (trailing zeros kept: `1.0` is two
/// numbers), for prefix matching. `v` is expected to be valid.
pub fn release_of(v: &str) -> (String, Vec<String>) {
    let lower = v.trim().to_ascii_lowercase();
    let body = lower.strip_prefix('v').unwrap_or(&lower);
    let (epoch, rest) = match body.split_once('!') {
        Some((e, r)) if e.bytes().all(|b| b.is_ascii_digit()) => (e.to_owned(), r),
        _ => ("0".to_owned(), body),
    };
    let mut release = Vec::new();
    for part in rest.split('.') {
        let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
        if digits.is_empty() {
            break;
        }
        let whole = digits.len() == part.len();
        release.push(digits);
        if !whole {
            break;
        }
    }
    (epoch, release)
}

/// Orders two versions as `packaging.version.Version`.
pub fn compare(a: &str, b: &str) -> Result<Ordering, Invalid> {
    Ok(parse(a)?.cmp(&parse(b)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use Ordering::*;

    #[test]
    fn pep_440_order() {
        // PEP 440's own example order, with spellings and epochs.
        let chain = [
            "1.0.dev456",
            "1.0a1",
            "1.0a2.dev456",
            "1.0a12.dev456",
            "1.0a12",
            "1.0b1.dev456",
            "1.0b2",
            "1.0b2.post345.dev456",
            "1.0b2.post345",
            "1.0rc1.dev456",
            "1.0rc1",
            "1.0",
            "1.0+abc.5",
            "1.0+abc.7",
            "1.0+5",
            "1.0.post456.dev34",
            "1.0.post456",
            "1.0.15",
            "1.1.dev1",
            "1!0.1",
        ];
        for w in chain.windows(2) {
            assert_eq!(compare(w[0], w[1]), Ok(Less), "{} < {}", w[0], w[1]);
        }
        for (a, b) in [
            ("1.0", "1.0.0.0"),
            ("1.0alpha1", "1.0a1"),
            ("1.0-1", "1.0.post1"),
            ("1.0c1", "1.0rc1"),
            ("1.0-r", "1.0post0"),
            ("V1.0", "1.0"),
            ("1.0.PREVIEW2", "1.0rc2"),
            ("0!1.0", "1.0"),
        ] {
            assert_eq!(compare(a, b), Ok(Equal), "{a} = {b}");
        }
        for bad in [
            "", "1.0.", "a1", "1.0+", "1.0+a..b", "1.0 beta", "1.0-", "1!",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }
}
