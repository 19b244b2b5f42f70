//! How answers are printed (CONTRACT 28): aligned tables for people (colour only on a
//! terminal, never with `NO_COLOR`), and for scripts the API's JSON unchanged (`-o json`),
//! YAML (`-o yaml`) or CSV with the table's columns (`-o csv`, RFC 4180).

use serde_json::Value;
use std::fmt::Write as _;

/// `-o`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Aligned columns.
    Table,
    /// The API's JSON.
    Json,
    /// The same as YAML.
    Yaml,
    /// The table's columns, comma-separated.
    Csv,
}

/// One column: its header and where its value is in each record (a JSON pointer).
pub type Column = (&'static str, &'static str);

/// A value as one cell: strings bare, arrays joined by spaces, null as `-`.
fn cell(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        Value::Array(a) => {
            if a.is_empty() {
                "-".into()
            } else {
                a.iter().map(cell).collect::<Vec<_>>().join(" ")
            }
        }
        Value::Object(o) => o
            .get("hostname")
            .or_else(|| o.get("name"))
            .map(cell)
            .unwrap_or_else(|| v.to_string()),
        other => other.to_string(),
    }
}

fn colour(word: &str, on: bool) -> String {
    if !on {
        return word.to_owned();
    }
    let code = match word {
        "online" | "running" | "ok" | "up" => "32",
        "silent" | "warning" | "unknown" | "acknowledged" => "33",
        "offline" | "critical" | "down" | "stopped" | "failed" => "31",
        _ => return word.to_owned(),
    };
    format!("\x1b[{code}m{word}\x1b[0m")
}

/// Whether tables may use colour: stdout is a terminal and `NO_COLOR` is unset.
pub fn colour_on() -> bool {
    std::io::IsTerminal::is_terminal(&std::io::stdout()) && std::env::var_os("NO_COLOR").is_none()
}

/// `records` (an array, or one object) in `format`, with `columns` for tables and CSV.
pub fn render(records: &Value, columns: &[Column], format: Format) -> String {
    match format {
        Format::Json => {
            let mut s = serde_json::to_string_pretty(records).unwrap_or_default();
            s.push('\n');
            s
        }
        Format::Yaml => yaml(records),
        Format::Csv => csv(&rows(records), columns),
        Format::Table => table(&rows(records), columns, colour_on()),
    }
}

fn rows(records: &Value) -> Vec<&Value> {
    match records {
        Value::Array(a) => a.iter().collect(),
        Value::Object(o) if o.contains_key("items") && o["items"].is_array() => o["items"]
            .as_array()
            .map(|a| a.iter().collect())
            .unwrap_or_default(),
        other => vec![other],
    }
}

/// Headers whose cells are printed whole, however long: what is copied and pasted or read
/// as a whole (CONTRACT 33).
const WHOLE: [&str; 9] = [
    "share token",
    "url",
    "link",
    "token",
    "secret",
    "explanation",
    "command",
    "uri",
    "share url",
];

/// Aligned columns; the header in capitals; cells cut at 60 characters, except addresses,
/// tokens, secrets, explanations and the last column, which are printed whole.
pub fn table(rows: &[&Value], columns: &[Column], paint_on: bool) -> String {
    let last = columns.len().saturating_sub(1);
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            columns
                .iter()
                .enumerate()
                .map(|(i, (h, p))| {
                    let c = cell(r.pointer(p).unwrap_or(&Value::Null));
                    let whole = i == last || WHOLE.contains(h) || c.contains("://");
                    if !whole && c.chars().count() > 60 {
                        format!("{}…", c.chars().take(59).collect::<String>())
                    } else {
                        c
                    }
                })
                .collect()
        })
        .collect();
    let widths: Vec<usize> = columns
        .iter()
        .enumerate()
        .map(|(i, (h, _))| {
            cells
                .iter()
                .map(|r| r[i].chars().count())
                .chain([h.chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    let line = |out: &mut String, values: &[String], paint: bool| {
        let last = values.len().saturating_sub(1);
        for (i, v) in values.iter().enumerate() {
            let shown = if paint {
                colour(v, paint_on)
            } else {
                v.clone()
            };
            if i == last {
                out.push_str(&shown);
            } else {
                let pad = widths[i].saturating_sub(v.chars().count()) + 2;
                let _ = write!(out, "{shown}{}", " ".repeat(pad));
            }
        }
        out.push('\n');
    };
    let header: Vec<String> = columns.iter().map(|(h, _)| h.to_uppercase()).collect();
    line(&mut out, &header, false);
    for r in &cells {
        line(&mut out, r, true);
    }
    out
}

/// RFC 4180: a header, CRLF line ends, fields quoted when they hold a comma, quote or line
/// break.
pub fn csv(rows: &[&Value], columns: &[Column]) -> String {
    let field = |s: &str| {
        if s.contains([',', '"', '\n', '\r']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_owned()
        }
    };
    let mut out = columns
        .iter()
        .map(|(h, _)| field(h))
        .collect::<Vec<_>>()
        .join(",");
    out.push_str("\r\n");
    for r in rows {
        let values: Vec<String> = columns
            .iter()
            .map(|(_, p)| match r.pointer(p) {
                None | Some(Value::Null) => String::new(),
                Some(Value::Array(a)) if a.is_empty() => String::new(),
                Some(v) => field(&cell(v)),
            })
            .collect();
        out.push_str(&values.join(","));
        out.push_str("\r\n");
    }
    out
}

/// YAML 1.2 block style; strings double-quoted (as JSON writes them), so nothing is read back
/// as another type.
pub fn yaml(v: &Value) -> String {
    let mut out = String::new();
    yaml_into(&mut out, v, 0);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

fn key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        k.to_owned()
    } else {
        Value::String(k.to_owned()).to_string()
    }
}

fn yaml_into(out: &mut String, v: &Value, indent: usize) {
    let pad = " ".repeat(indent);
    match v {
        Value::Object(o) if !o.is_empty() => {
            for (k, val) in o {
                match val {
                    Value::Object(m) if !m.is_empty() => {
                        let _ = writeln!(out, "{pad}{}:", key(k));
                        yaml_into(out, val, indent + 2);
                    }
                    Value::Array(a) if !a.is_empty() => {
                        let _ = writeln!(out, "{pad}{}:", key(k));
                        yaml_into(out, val, indent);
                    }
                    scalar => {
                        let _ = writeln!(out, "{pad}{}: {}", key(k), inline(scalar));
                    }
                }
            }
        }
        Value::Array(a) if !a.is_empty() => {
            for item in a {
                match item {
                    Value::Object(m) if !m.is_empty() => {
                        let mut inner = String::new();
                        yaml_into(&mut inner, item, indent + 2);
                        // The first key on the dash's line.
                        let trimmed = inner.trim_start_matches(' ');
                        let _ = write!(out, "{pad}- {trimmed}");
                    }
                    Value::Array(b) if !b.is_empty() => {
                        let _ = writeln!(out, "{pad}-");
                        yaml_into(out, item, indent + 2);
                    }
                    scalar => {
                        let _ = writeln!(out, "{pad}- {}", inline(scalar));
                    }
                }
            }
        }
        scalar => {
            let _ = writeln!(out, "{pad}{}", inline(scalar));
        }
    }
}

fn inline(v: &Value) -> String {
    match v {
        Value::Object(_) => "{}".into(),
        Value::Array(_) => "[]".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const COLS: &[Column] = &[("id", "/id"), ("name", "/name"), ("tags", "/tags")];

    #[test]
    fn tables_align_and_csv_quotes() {
        let v = json!([{"id": "1", "name": "web-1", "tags": ["env:prod", "a"]},
                       {"id": "22", "name": "db, main", "tags": []}]);
        assert_eq!(
            render(&v, COLS, Format::Table),
            "ID  NAME      TAGS\n1   web-1     env:prod a\n22  db, main  -\n"
        );
        assert_eq!(
            render(&v, COLS, Format::Csv),
            "id,name,tags\r\n1,web-1,env:prod a\r\n22,\"db, main\",\r\n"
        );
    }

    /// CONTRACT 33: a long note is cut in the middle of a table, but an address, a token
    /// and the last column are printed whole.
    #[test]
    fn long_cells_are_cut_but_addresses_tokens_and_the_last_column_are_whole() {
        let long = "x".repeat(80);
        let url = format!("https://hub.example.com/api/v1/diagrams/share/thd_{long}");
        let v = json!([{"note": long, "url": url, "token": format!("tht_{long}"), "end": long}]);
        let cols: &[Column] = &[
            ("note", "/note"),
            ("share", "/url"),
            ("token", "/token"),
            ("end", "/end"),
        ];
        let out = render(&v, cols, Format::Table);
        let row = out.lines().nth(1).expect("row");
        assert!(row.starts_with(&format!("{}…", "x".repeat(59))), "{row}");
        assert!(row.contains(&url), "{row}");
        assert!(row.contains(&format!("tht_{long}")), "{row}");
        assert!(row.ends_with(&long), "{row}");
    }

    #[test]
    fn yaml_keeps_types_and_nesting() {
        let v =
            json!([{"id": "1", "n": 2, "ok": true, "tags": ["a", "b"], "o": {"k": null}, "e": []}]);
        assert_eq!(
            yaml(&v),
            "- e: []\n  id: \"1\"\n  n: 2\n  o:\n    k: null\n  ok: true\n  tags:\n  - \"a\"\n  - \"b\"\n"
        );
    }
}
