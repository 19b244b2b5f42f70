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

/// The `go` directive's language version of a `go.mod` (`go 1.16` → `(1, 16)`).
pub fn go_version(text: &str) -> Option<(u32, u32)> {
    text.lines().find_map(|l| {
        let v = l.split("//").next()?.trim().strip_prefix("go ")?.trim();
        let mut parts = v.split('.');
        Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
    })
}

/// Reads a `go.sum` strictly: each line is `module version hash` (`version/go.mod` for a
/// module's go.mod alone); any other line is refused with its number (CONTRACT 30). The
/// modules whose content was hashed (the ones built), each at every version listed.
pub fn go_sum(text: &str) -> Result<Vec<Dep>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        let hash_ok = |h: &str| {
            h.split_once(':')
                .is_some_and(|(alg, rest)| alg.starts_with('h') && !rest.is_empty())
        };
        match f.as_slice() {
            [module, version, hash]
                if version.starts_with('v') && hash_ok(hash) && !module.is_empty() =>
            {
                if !version.ends_with("/go.mod") {
                    out.push(Dep::new("Go", module, version.trim_start_matches('v')));
                }
            }
            _ => {
                return Err(format!(
                    "line {}: `{}` is not `module version hash`",
                    i + 1,
                    line.chars().take(80).collect::<String>()
                ));
            }
        }
    }
    Ok(out)
}

/// A `go.mod` of Go before 1.17 lists only direct requirements; the modules its build also
/// uses are only in `go.sum`. Each module of `sum` that `required` lacks, at the highest
/// version hashed (the one minimal version selection keeps), is added.
pub fn with_go_sum(required: Vec<Dep>, sum: Vec<Dep>) -> Vec<Dep> {
    let mut out = required;
    let mut best: std::collections::BTreeMap<String, Dep> = std::collections::BTreeMap::new();
    for d in sum {
        if out.iter().any(|r| r.name == d.name) {
            continue;
        }
        let newer = best
            .get(&d.name)
            .is_none_or(|b| super::at_least(&d.version, &b.version) && d.version != b.version);
        if newer {
            best.insert(d.name.clone(), d);
        }
    }
    out.extend(best.into_values());
    out
}
