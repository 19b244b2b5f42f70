//! Python's ecosystem: `requirements.txt` (pinned `==` lines), `Pipfile.lock`, `poetry.lock`,
//! `pdm.lock`, `uv.lock` and `pylock.toml` (PEP 751). The project itself (uv's `virtual` or
//! `editable` source) is not a dependency.

use super::Dep;
use serde_json::Value;

fn dep(name: &str, version: &str) -> Dep {
    Dep::new("PyPI", name, version)
}

/// `requirements.txt`: `name==version` lines (extras and markers cut), unpinned lines with an
/// empty version; options and comments are skipped; a line that is none of these makes the
/// file unreadable.
pub fn requirements(text: &str) -> Result<Vec<Dep>, String> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let l = raw.split(" #").next().unwrap_or_default().trim();
        if l.is_empty() || l.starts_with('#') || l.starts_with('-') || l.contains("://") {
            continue;
        }
        let spec = l.split(';').next().unwrap_or(l).trim();
        if let Some((n, v)) = spec.split_once("==") {
            let n = n.split('[').next().unwrap_or(n).trim();
            let v = v
                .split(',')
                .next()
                .unwrap_or(v)
                .trim()
                .trim_start_matches('=');
            if n.is_empty() || v.is_empty() || !valid_name(n) {
                return Err(format!("line {}: `{l}` is not a requirement", i + 1));
            }
            out.push(dep(n, v));
        } else {
            // An unpinned requirement (`flask>=2`, `flask`, `pkg @ https://…`) has no version
            // to match: it is reported without one (the hub says it cannot be checked);
            // anything else is not a requirement.
            let name = spec
                .split(|c: char| "<>=!~[(@; ".contains(c))
                .next()
                .unwrap_or_default();
            let rest = spec[name.len()..].trim_start();
            if !valid_name(name)
                || !(rest.is_empty() || rest.starts_with(['<', '>', '=', '!', '~', '[', '(', '@']))
            {
                return Err(format!("line {}: `{l}` is not a requirement", i + 1));
            }
            out.push(dep(name, ""));
        }
    }
    Ok(out)
}

fn valid_name(n: &str) -> bool {
    !n.is_empty()
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

/// `Pipfile.lock`: `default` and `develop`, each `{name: {version: "==1.2.3"}}`.
pub fn pipfile_lock(text: &str) -> Result<Vec<Dep>, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    if !v["_meta"].is_object() {
        return Err("not a Pipfile.lock: no `_meta`".into());
    }
    let mut out = Vec::new();
    for section in ["default", "develop"] {
        for (n, p) in v[section].as_object().into_iter().flatten() {
            // Git and path dependencies have no version.
            if let Some(ver) = p["version"].as_str() {
                out.push(dep(n, ver.trim_start_matches("==")));
            }
        }
    }
    Ok(out)
}

/// The `[[<key>]]` tables of a TOML lockfile with `name` and `version` (poetry, pdm and uv use
/// `package`, pylock `packages`); entries whose `source` is the project itself are skipped.
fn toml_packages(text: &str, key: &str) -> Result<Vec<Dep>, String> {
    let t = toml::from_str::<toml::Table>(text)
        .map_err(|e| format!("not valid TOML: {}", e.message()))?;
    let Some(list) = t.get(key) else {
        return Ok(Vec::new());
    };
    let list = list
        .as_array()
        .ok_or_else(|| format!("`{key}` is not an array of tables"))?;
    let mut out = Vec::new();
    for (i, p) in list.iter().enumerate() {
        let name = p
            .get("name")
            .and_then(|x| x.as_str())
            .ok_or_else(|| format!("{key}[{i}] has no name"))?;
        let own = p
            .get("source")
            .and_then(|s| s.as_table())
            .is_some_and(|s| s.contains_key("virtual") || s.contains_key("editable"));
        if own {
            continue;
        }
        // A VCS or directory package may have no version: reported without one (nothing
        // to match; the hub says it cannot be checked).
        out.push(dep(
            name,
            p.get("version")
                .and_then(|x| x.as_str())
                .unwrap_or_default(),
        ));
    }
    Ok(out)
}

/// `poetry.lock`, `pdm.lock`, `uv.lock`: `[[package]]`.
pub fn package_tables(text: &str) -> Result<Vec<Dep>, String> {
    toml_packages(text, "package")
}

/// `pylock.toml` (PEP 751): `[[packages]]`, with `lock-version`.
pub fn pylock(text: &str) -> Result<Vec<Dep>, String> {
    let head = toml::from_str::<toml::Table>(text)
        .map_err(|e| format!("not valid TOML: {}", e.message()))?;
    if !head.contains_key("lock-version") {
        return Err("not a pylock file: no `lock-version`".into());
    }
    toml_packages(text, "packages")
}
