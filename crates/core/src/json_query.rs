//! An http check's assertion on a JSON body (CONTRACT 32): `{path, op, value}`, `path` in a
//! JSONPath subset (`$`, `.name`, `['name']`, `["name"]`, `[index]`, negative indexes from
//! the end), `op` one of `== != < > contains`. The hub and agents judge alike, in the same
//! words.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Longest path accepted.
pub const MAX_PATH: usize = 500;
/// Longest expected text accepted.
pub const MAX_VALUE: usize = 1000;

/// The operators, in wire form.
pub const OPS: [&str; 5] = ["==", "!=", "<", ">", "contains"];

/// An assertion as saved and sent to agents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JsonQuery {
    /// Where the value is: `$.status`, `$.checks[0].ok`, `$['a b']`.
    pub path: String,
    /// `==`, `!=`, `<`, `>` or `contains`.
    pub op: String,
    /// What it is compared with: a string, number, boolean or null.
    pub value: Value,
}

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// An object's member.
    Key(String),
    /// An array's element (negative: from the end).
    Index(i64),
}

/// Parses a path; the message says what is wrong and where.
pub fn parse_path(path: &str) -> Result<Vec<Step>, String> {
    if path.chars().count() > MAX_PATH {
        return Err(format!("must be at most {MAX_PATH} characters"));
    }
    let rest = path
        .strip_prefix('$')
        .ok_or("must start with `$` (JSONPath: `$.status`, `$.items[0].name`)")?;
    let chars: Vec<char> = rest.chars().collect();
    let mut steps = Vec::new();
    let mut i = 0;
    let at = |i: usize| format!("at character {}", i + 2);
    while i < chars.len() {
        match chars[i] {
            '.' => {
                let start = i + 1;
                let mut j = start;
                while j < chars.len() && (chars[j].is_alphanumeric() || "_-$".contains(chars[j])) {
                    j += 1;
                }
                if j == start {
                    return Err(format!(
                        "expects a member name after `.` {} (quote others: `['a b']`)",
                        at(i)
                    ));
                }
                steps.push(Step::Key(chars[start..j].iter().collect()));
                i = j;
            }
            '[' => {
                let close = chars[i..]
                    .iter()
                    .position(|c| *c == ']')
                    .map(|p| p + i)
                    .ok_or_else(|| format!("has a `[` without `]` {}", at(i)))?;
                let inner: String = chars[i + 1..close].iter().collect();
                let inner = inner.trim();
                let quoted = [('\'', '\''), ('"', '"')].into_iter().find_map(|(a, b)| {
                    inner
                        .strip_prefix(a)
                        .and_then(|s| s.strip_suffix(b))
                        .filter(|_| inner.len() >= 2)
                });
                match quoted {
                    Some(name) => steps.push(Step::Key(name.to_owned())),
                    None => match inner.parse::<i64>() {
                        Ok(n) => steps.push(Step::Index(n)),
                        Err(_) => {
                            return Err(format!(
                                "expects an index or a quoted name in `[{inner}]` {} (filters and wildcards are not supported)",
                                at(i)
                            ));
                        }
                    },
                }
                i = close + 1;
            }
            c => {
                return Err(format!("expects `.` or `[` {}, found `{c}`", at(i)));
            }
        }
    }
    Ok(steps)
}

/// Checks an assertion a user sent: each problem as `(field, message)`, fields relative to
/// the query (`path`, `op`, `value`).
pub fn check(q: &JsonQuery) -> Vec<(&'static str, String)> {
    let mut errors = Vec::new();
    if let Err(m) = parse_path(&q.path) {
        errors.push(("path", m));
    }
    if !OPS.contains(&q.op.as_str()) {
        errors.push(("op", "must be ==, !=, <, > or contains".to_owned()));
    }
    match &q.value {
        Value::Array(_) | Value::Object(_) => {
            errors.push(("value", "must be a string, number, boolean or null".into()))
        }
        Value::String(s) if s.chars().count() > MAX_VALUE => {
            errors.push(("value", format!("must be at most {MAX_VALUE} characters")))
        }
        Value::Number(_) | Value::Bool(_) | Value::Null | Value::String(_) => {}
    }
    if matches!(q.op.as_str(), "<" | ">") && number(&q.value).is_none() {
        errors.push(("value", format!("must be a number for `{}`", q.op)));
    }
    errors
}

/// The value at `steps` in `doc`.
pub fn select<'a>(doc: &'a Value, steps: &[Step]) -> Option<&'a Value> {
    let mut cur = doc;
    for s in steps {
        cur = match (s, cur) {
            (Step::Key(k), Value::Object(m)) => m.get(k)?,
            (Step::Index(n), Value::Array(a)) => {
                let len = i64::try_from(a.len()).ok()?;
                let i = if *n < 0 { len + n } else { *n };
                a.get(usize::try_from(i).ok()?)?
            }
            _ => return None,
        };
    }
    Some(cur)
}

/// A number, or a string that reads as one.
fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// How a value reads in a comparison: a string without quotes, anything else as JSON.
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Equality as a person means it: numbers by value (`200` equals `200.0` and `"200"`),
/// others by their text (`true` equals `"true"`).
fn equal(actual: &Value, expected: &Value) -> bool {
    match (number(actual), number(expected)) {
        (Some(a), Some(b)) if actual.is_number() || expected.is_number() => a == b,
        _ => text(actual) == text(expected),
    }
}

/// Shown in an error: at most 100 characters of a value.
fn shown(v: &Value) -> String {
    let t = v.to_string();
    if t.chars().count() > 100 {
        format!("{}…", t.chars().take(100).collect::<String>())
    } else {
        t
    }
}

/// Judges `body` (the first MiB of the answer) against `q`: why it fails, in the words the
/// hub and agents report.
pub fn judge(body: &[u8], q: &JsonQuery) -> Result<(), String> {
    let steps = parse_path(&q.path).map_err(|m| format!("the JSON query's path {m}"))?;
    let doc: Value = serde_json::from_slice(body)
        .map_err(|e| format!("the body is not JSON ({e}); the JSON query needs it"))?;
    let Some(actual) = select(&doc, &steps) else {
        return Err(format!("`{}` is not in the body", q.path));
    };
    let ok = match q.op.as_str() {
        "==" => equal(actual, &q.value),
        "!=" => !equal(actual, &q.value),
        "<" | ">" => {
            let (Some(a), Some(b)) = (number(actual), number(&q.value)) else {
                return Err(format!(
                    "`{}` is {}, not a number to compare with {}",
                    q.path,
                    shown(actual),
                    shown(&q.value)
                ));
            };
            if q.op == "<" { a < b } else { a > b }
        }
        "contains" => match actual {
            Value::Array(items) => items.iter().any(|i| equal(i, &q.value)),
            other => text(other).contains(&text(&q.value)),
        },
        op => return Err(format!("the JSON query's operator `{op}` is unknown")),
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{}` is {}, expected {} {}",
            q.path,
            shown(actual),
            q.op,
            shown(&q.value)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn q(path: &str, op: &str, value: Value) -> JsonQuery {
        JsonQuery {
            path: path.into(),
            op: op.into(),
            value,
        }
    }

    #[test]
    fn paths_parse_members_quoted_names_and_indexes() {
        assert_eq!(
            parse_path("$.a['b c'][\"d\"][0][-1]").expect("parses"),
            vec![
                Step::Key("a".into()),
                Step::Key("b c".into()),
                Step::Key("d".into()),
                Step::Index(0),
                Step::Index(-1)
            ]
        );
        assert_eq!(parse_path("$").expect("root"), vec![]);
        for bad in ["a.b", "$.", "$[", "$[*]", "$..a", "$.a b", "$[?(@.x)]"] {
            assert!(parse_path(bad).is_err(), "{bad} is refused");
        }
    }

    #[test]
    fn operators_judge_as_people_read_them() {
        let body = br#"{"status":"ok","db":{"latency":12.5,"up":true},"nodes":["a","b"],"code":"200","n":[1,2]}"#;
        let cases = [
            (q("$.status", "==", json!("ok")), true),
            (q("$.status", "!=", json!("ok")), false),
            (q("$.db.latency", "<", json!(20)), true),
            (q("$.db.latency", ">", json!(20)), false),
            (q("$.db.up", "==", json!(true)), true),
            (q("$.db.up", "==", json!("true")), true),
            (q("$.code", "==", json!(200)), true),
            (q("$.code", ">", json!(199)), true),
            (q("$.nodes", "contains", json!("b")), true),
            (q("$.nodes[-1]", "==", json!("b")), true),
            (q("$.n", "contains", json!(2)), true),
            (q("$.status", "contains", json!("k")), true),
            (q("$.nodes[5]", "==", json!("b")), false),
        ];
        for (query, ok) in cases {
            assert_eq!(judge(body, &query).is_ok(), ok, "{query:?}");
        }
        assert_eq!(
            judge(body, &q("$.status", "==", json!("down"))).expect_err("fails"),
            "`$.status` is \"ok\", expected == \"down\""
        );
        assert_eq!(
            judge(body, &q("$.missing", "==", json!(1))).expect_err("fails"),
            "`$.missing` is not in the body"
        );
        assert!(
            judge(b"<html>", &q("$.a", "==", json!(1)))
                .expect_err("fails")
                .starts_with("the body is not JSON")
        );
    }

    #[test]
    fn checks_name_each_field() {
        let e = check(&q("status", "=~", json!([1])));
        let fields: Vec<&str> = e.iter().map(|(f, _)| *f).collect();
        assert_eq!(fields, ["path", "op", "value"]);
        assert_eq!(check(&q("$.a", "<", json!("x")))[0].0, "value");
        assert!(check(&q("$.a", "<", json!("3"))).is_empty());
    }
}
