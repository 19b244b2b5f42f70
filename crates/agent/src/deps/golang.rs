//! Go's `go.mod` (CONTRACT 29): the required modules (direct and `// indirect` — since Go 1.17
//! a module's `go.mod` lists every module its build selects) with `replace` directives
//! applied, and the toolchain (`toolchain go1.22.3`, else a `go 1.22.3` directive with a patch
//! level) as `stdlib`.

use super::Dep;

/// A module path and version from a `go.mod` line's fields.
fn module(f: &[&str]) -> Option<(String, String)> {
    match f {
        [path, version, ..] if version.starts_with('v') => {
            Some(((*path).to_owned(), (*version).to_owned()))
        }
        _ => None,
    }
}

/// Reads a `go.mod`.
pub fn go_mod(text: &str) -> Result<Vec<Dep>, String> {
    let mut required: Vec<(String, String)> = Vec::new();
    let mut replaced: Vec<(String, Option<String>, String, String)> = Vec::new();
    let mut block: Option<&str> = None;
    let mut toolchain = None;
    let mut go = None;
    let mut saw_module = false;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split("//").next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line
            .split_whitespace()
            .map(|w| w.trim_matches('"'))
            .collect();
        if let Some(kind) = block {
            if line == ")" {
                block = None;
                continue;
            }
            match kind {
                "require" => required.push(module(&f).ok_or_else(|| {
                    format!("line {}: `{line}` is not a module and version", i + 1)
                })?),
                "replace" => replaced.push(
                    replacement(&f)
                        .ok_or_else(|| format!("line {}: `{line}` is not a replacement", i + 1))?,
                ),
                _ => {}
            }
            continue;
        }
        match f[0] {
            "module" => saw_module = true,
            "go" => go = f.get(1).map(|v| (*v).to_owned()),
            "toolchain" => toolchain = f.get(1).map(|v| v.trim_start_matches("go").to_owned()),
            "require" | "replace" | "exclude" | "retract" | "tool" | "ignore" | "godebug"
                if f.get(1) == Some(&"(") =>
            {
                block = Some(f[0])
            }
            "require" => {
                required.push(module(&f[1..]).ok_or_else(|| {
                    format!("line {}: `{line}` is not a module and version", i + 1)
                })?)
            }
            "replace" => replaced.push(
                replacement(&f[1..])
                    .ok_or_else(|| format!("line {}: `{line}` is not a replacement", i + 1))?,
            ),
            "exclude" | "retract" | "tool" | "ignore" | "godebug" => {}
            other => {
                return Err(format!(
                    "line {}: `{other}` is not a go.mod directive",
                    i + 1
                ));
            }
        }
    }
    if !saw_module {
        return Err("not a go.mod: no `module` directive".into());
    }
    if block.is_some() {
        return Err("a `(` block is not closed".into());
    }
    let mut out = Vec::new();
    let stdlib = toolchain.or_else(|| go.filter(|g| g.split('.').count() >= 3));
    if let Some(v) = stdlib {
        out.push(Dep::new("Go", "stdlib", &v));
    }
    for (path, version) in required {
        // A replacement of this version (or of every version) by a module with a version
        // takes its place; by a directory, the required version stays.
        let r = replaced
            .iter()
            .find(|(p, v, _, _)| *p == path && v.as_ref().is_none_or(|v| *v == version));
        let (path, version) = match r {
            Some((_, _, to, to_version)) if to_version.starts_with('v') => {
                (to.clone(), to_version.clone())
            }
            _ => (path, version),
        };
        out.push(Dep::new("Go", &path, version.trim_start_matches('v')));
    }
    Ok(out)
}

/// `old [version] => new [version]`.
fn replacement(f: &[&str]) -> Option<(String, Option<String>, String, String)> {
    let arrow = f.iter().position(|w| *w == "=>")?;
    let (old, new) = (&f[..arrow], &f[arrow + 1..]);
    Some((
        (*old.first()?).to_owned(),
        old.get(1).map(|v| (*v).to_owned()),
        (*new.first()?).to_owned(),
        new.get(1).map(|v| (*v).to_owned()).unwrap_or_default(),
    ))
}
