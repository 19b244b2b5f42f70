//! What JSON the hub reads at all (CONTRACT 18): one pass over the bytes, before any parser
//! builds a structure from them, refuses nesting deeper than [`MAX_DEPTH`], more values than
//! a limit (a few bytes such as `{},` can parse into hundreds of bytes of structure, so the
//! size of the text alone does not bound the memory a parse takes) and an object with the same
//! key twice (which parsers resolve differently: the last wins in serde, the first elsewhere).
//!
//! The pass does not validate JSON; the parser that follows does. It only has to be right
//! about strings (where brackets, commas and quotes are text) and about where keys are.

use std::borrow::Cow;
use std::collections::HashSet;

/// The deepest nesting read anywhere (serde_json's own recursion limit is the same).
pub const MAX_DEPTH: usize = 128;

/// Why a text is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GuardError {
    /// Nested deeper than [`MAX_DEPTH`].
    #[error("JSON nested deeper than {0} levels")]
    TooDeep(usize),
    /// More values than allowed.
    #[error("JSON with more than {0} values")]
    TooManyValues(u64),
    /// An object with the same key twice; the path of the object and the key.
    #[error("duplicate key `{key}` in the object at {path}")]
    DuplicateKey {
        /// The object's path (`$` is the top, `$.metrics[1]` an element).
        path: String,
        /// The repeated key.
        key: String,
    },
}

/// One open container.
enum Frame<'a> {
    /// An object: where its keys start in the key stack, a set of them once it has many,
    /// whether the next string is a key, and the key being read (its place in the stack).
    Object {
        start: usize,
        set: Option<HashSet<Cow<'a, [u8]>>>,
        expect_key: bool,
        current: Option<usize>,
    },
    /// An array and the index of the element being read.
    Array(u64),
}

/// An object past this many keys looks keys up in a set rather than the list.
const SHORT_OBJECT: usize = 16;

/// Checks `text` against the depth limit, `max_values` (values of any kind, containers
/// included) and duplicate keys. Text that is not JSON passes through (its parser refuses it).
///
/// No allocation per object: the keys of every open object share one stack.
pub fn check(text: &[u8], max_values: u64) -> Result<(), GuardError> {
    let mut stack: Vec<Frame> = Vec::new();
    let mut keys: Vec<Cow<'_, [u8]>> = Vec::new();
    let mut values: u64 = 0;
    let mut i = 0;
    let n = text.len();
    while i < n {
        let b = text[i];
        match b {
            b'"' => {
                // A string: find its end, honouring escapes.
                let start = i + 1;
                let mut j = start;
                let mut escaped = false;
                while let Some(at) = memchr::memchr2(b'"', b'\\', &text[j..]) {
                    j += at;
                    if text[j] == b'"' {
                        break;
                    }
                    escaped = true;
                    j += 2;
                    if j >= n {
                        break;
                    }
                }
                let end = if j < n && text[j] == b'"' { j } else { n };
                if let Some(Frame::Object {
                    start: first,
                    set,
                    expect_key,
                    current,
                }) = stack.last_mut()
                    && *expect_key
                {
                    let raw = &text[start..end];
                    let key: Cow<'_, [u8]> = if escaped {
                        let quoted = &text[start - 1..(end + 1).min(n)];
                        match serde_json::from_slice::<String>(quoted) {
                            Ok(k) => Cow::Owned(k.into_bytes()),
                            Err(_) => Cow::Borrowed(raw),
                        }
                    } else {
                        Cow::Borrowed(raw)
                    };
                    let fresh = match set {
                        Some(set) => set.insert(key.clone()),
                        None => !keys[*first..].contains(&key),
                    };
                    if !fresh {
                        let path = path_of(&stack[..stack.len() - 1], &keys);
                        let key = String::from_utf8_lossy(&key).into_owned();
                        return Err(GuardError::DuplicateKey { path, key });
                    }
                    if set.is_none() && keys.len() - *first >= SHORT_OBJECT {
                        let mut all: HashSet<Cow<'_, [u8]>> =
                            keys[*first..].iter().cloned().collect();
                        all.insert(key.clone());
                        *set = Some(all);
                    }
                    *expect_key = false;
                    *current = Some(keys.len());
                    keys.push(key);
                } else {
                    values += 1;
                }
                i = end + 1;
                continue;
            }
            b'{' | b'[' => {
                values += 1;
                if stack.len() >= MAX_DEPTH {
                    return Err(GuardError::TooDeep(MAX_DEPTH));
                }
                stack.push(if b == b'{' {
                    Frame::Object {
                        start: keys.len(),
                        set: None,
                        expect_key: true,
                        current: None,
                    }
                } else {
                    Frame::Array(0)
                });
            }
            b'}' | b']' => {
                if let Some(Frame::Object { start, .. }) = stack.pop() {
                    keys.truncate(start);
                }
            }
            b',' => match stack.last_mut() {
                Some(Frame::Object {
                    expect_key,
                    current,
                    ..
                }) => {
                    *expect_key = true;
                    *current = None;
                }
                Some(Frame::Array(index)) => *index += 1,
                None => {}
            },
            b't' | b'f' | b'n' | b'-' | b'0'..=b'9' => {
                // A literal or a number: one value; skip the rest of its characters.
                values += 1;
                while i + 1 < n
                    && matches!(text[i + 1], b'a'..=b'z' | b'0'..=b'9' | b'.' | b'-' | b'+' | b'E')
                {
                    i += 1;
                }
            }
            _ => {}
        }
        if values > max_values {
            return Err(GuardError::TooManyValues(max_values));
        }
        i += 1;
    }
    if values > max_values {
        return Err(GuardError::TooManyValues(max_values));
    }
    Ok(())
}

/// `$`, `$.a`, `$.a[3]` for the open containers.
fn path_of(stack: &[Frame<'_>], keys: &[Cow<'_, [u8]>]) -> String {
    let mut path = String::from("$");
    for frame in stack {
        // The key or index under which the next frame sits.
        match frame {
            Frame::Object { current, .. } => {
                if let Some(k) = current.and_then(|at| keys.get(at)) {
                    path.push('.');
                    path.push_str(&String::from_utf8_lossy(k));
                }
            }
            Frame::Array(i) => path.push_str(&format!("[{i}]")),
        }
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANY: u64 = 1_000_000;

    #[test]
    fn ordinary_json_passes() {
        let text =
            br#"{"a": [1, 2.5e3, -3, true, false, null, "x\"]{,"], "b": {"c": "d"}, "e": []}"#;
        assert_eq!(check(text, MANY), Ok(()));
        assert_eq!(check(b"[]", MANY), Ok(()));
        assert_eq!(check(b"", MANY), Ok(()));
        // Unterminated strings and escapes at the very end pass (the parser refuses them).
        for text in [&b"\"\\"[..], b"[\"a\\\"", b"{\"a\\", b"\"", b"{\"k\": \"v"] {
            assert_eq!(
                check(text, MANY),
                Ok(()),
                "{}",
                String::from_utf8_lossy(text)
            );
        }
        // A quote after an escaped backslash ends the string: the bracket after it counts.
        let deep = format!("[\"a\\\\\"{}", "[".repeat(MAX_DEPTH));
        assert_eq!(
            check(deep.as_bytes(), MANY),
            Err(GuardError::TooDeep(MAX_DEPTH))
        );
    }

    #[test]
    fn depth_is_bounded() {
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert_eq!(check(ok.as_bytes(), MANY), Ok(()));
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert_eq!(
            check(deep.as_bytes(), MANY),
            Err(GuardError::TooDeep(MAX_DEPTH))
        );
        // Brackets inside strings are text.
        let text = format!("[\"{}\"]", "[".repeat(10_000));
        assert_eq!(check(text.as_bytes(), MANY), Ok(()));
        // A bomb that never closes stops at the limit, not at the end of its text.
        let bomb = "{\"a\":".repeat(1_000_000);
        assert_eq!(
            check(bomb.as_bytes(), MANY),
            Err(GuardError::TooDeep(MAX_DEPTH))
        );
    }

    #[test]
    fn values_are_bounded() {
        let text = format!("[{}]", vec!["{}"; 1000].join(","));
        assert_eq!(check(text.as_bytes(), 1001), Ok(()));
        assert_eq!(
            check(text.as_bytes(), 1000),
            Err(GuardError::TooManyValues(1000))
        );
        let strings = format!("[{}]", vec!["\"\""; 50].join(","));
        assert_eq!(
            check(strings.as_bytes(), 10),
            Err(GuardError::TooManyValues(10))
        );
    }

    #[test]
    fn duplicate_keys_are_refused_with_their_path() {
        assert_eq!(
            check(br#"{"a": 1, "b": 2, "a": 3}"#, MANY),
            Err(GuardError::DuplicateKey {
                path: "$".into(),
                key: "a".into()
            })
        );
        assert_eq!(
            check(br#"{"metrics": [{"n": 1}, {"n": 1, "n": 2}]}"#, MANY),
            Err(GuardError::DuplicateKey {
                path: "$.metrics[1]".into(),
                key: "n".into()
            })
        );
        // The same key spelt with an escape is the same key.
        assert!(matches!(
            check(br#"{"a": 1, "\u0061": 2}"#, MANY),
            Err(GuardError::DuplicateKey { .. })
        ));
        // Same keys in sibling objects, and a key equal to a value, are fine.
        assert_eq!(check(br#"[{"a": 1}, {"a": "a"}]"#, MANY), Ok(()));
        assert_eq!(check(br#"{"a": {"a": {"a": 1}}}"#, MANY), Ok(()));
        // Long objects too (past the short list).
        let long: Vec<String> = (0..100).map(|i| format!("\"k{i}\": {i}")).collect();
        let text = format!("{{{}}}", long.join(","));
        assert_eq!(check(text.as_bytes(), MANY), Ok(()));
        let text = format!("{{{}, \"k42\": 0}}", long.join(","));
        assert!(matches!(
            check(text.as_bytes(), MANY),
            Err(GuardError::DuplicateKey { .. })
        ));
    }
}
