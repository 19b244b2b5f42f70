//! npm's ecosystem: `package-lock.json` and `npm-shrinkwrap.json` (lockfile versions 1 to 3),
//! `yarn.lock` (yarn 1 and yarn 2+ "berry"), `pnpm-lock.yaml` (v5 to v9) and bun's text
//! `bun.lock`. Each parser reads what its tool writes and refuses what it cannot read with
//! the reason (a line number where there is one), never answering "no dependencies".

use super::Dep;
use serde_json::Value;

fn dep(name: &str, version: &str) -> Dep {
    Dep::new("npm", name, version)
}

/// `package-lock.json` / `npm-shrinkwrap.json`: `packages` (v2, v3: keyed by install path,
/// the root `""` and links skipped) or, for v1, `dependencies` nested at every level.
pub fn package_lock(text: &str) -> Result<Vec<Dep>, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    if !v.is_object() {
        return Err("not a lockfile: the top level is not an object".into());
    }
    let mut out = Vec::new();
    if let Some(pkgs) = v["packages"].as_object() {
        for (k, p) in pkgs {
            if k.is_empty() || p["link"].as_bool() == Some(true) {
                continue;
            }
            // `node_modules/a/node_modules/@s/b` → `@s/b`; an alias (`wrap-ansi-cjs` installed
            // from `npm:wrap-ansi@7.0.0`) and a workspace path name the package in `name`.
            let name = match (p["name"].as_str(), k.rfind("node_modules/")) {
                (Some(n), _) => n.to_owned(),
                (None, Some(i)) => k[i + "node_modules/".len()..].to_owned(),
                (None, None) => continue,
            };
            if let Some(ver) = p["version"].as_str() {
                out.push(dep(&name, ver));
            }
        }
        return Ok(out);
    }
    if let Some(deps) = v["dependencies"].as_object() {
        let mut stack: Vec<&serde_json::Map<String, Value>> = vec![deps];
        while let Some(level) = stack.pop() {
            for (n, p) in level {
                if let Some(ver) = p["version"].as_str()
                    && !ver.starts_with("file:")
                    && !ver.starts_with("link:")
                {
                    // An alias: `"wrap-ansi-cjs": {"version": "npm:wrap-ansi@7.0.0"}`.
                    match ver.strip_prefix("npm:").and_then(|a| {
                        let at = a[1..].find('@')? + 1;
                        Some((&a[..at], &a[at + 1..]))
                    }) {
                        Some((real, v)) => out.push(dep(real, v)),
                        None => out.push(dep(n, ver)),
                    }
                }
                if let Some(nested) = p["dependencies"].as_object() {
                    stack.push(nested);
                }
            }
        }
        return Ok(out);
    }
    if v["lockfileVersion"].is_number() {
        // A project without dependencies.
        return Ok(out);
    }
    Err("not a lockfile: neither `packages` nor `dependencies` nor `lockfileVersion`".into())
}

/// The package name of a yarn/pnpm key such as `@scope/name@^1.0.0` or `name@npm:1.2.3`.
fn name_of_spec(spec: &str) -> &str {
    let spec = spec.trim().trim_matches('"');
    let from = usize::from(spec.starts_with('@'));
    match spec[from..].find('@') {
        Some(i) => &spec[..from + i],
        None => spec,
    }
}

fn unquote(s: &str) -> &str {
    s.trim().trim_matches('"').trim_matches('\'')
}

/// `yarn.lock`: yarn 1's format (`"name@^1", name@~1:` then `  version "1.2.3"`) or yarn 2+'s
/// YAML (`__metadata:` first; `"name@npm:1.2.3":` then `  version: 1.2.3`; workspaces and
/// links skipped).
pub fn yarn_lock(text: &str) -> Result<(&'static str, Vec<Dep>), String> {
    let berry = text.lines().any(|l| l.starts_with("__metadata:"));
    let mut out = Vec::new();
    let mut current: Option<(String, usize)> = None;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        if !line.starts_with(' ') {
            let Some(key) = line.strip_suffix(':') else {
                return Err(format!("line {n}: an entry key must end with `:`"));
            };
            if key == "__metadata" {
                current = None;
                continue;
            }
            let first = key.split(", ").next().unwrap_or(key);
            let name = name_of_spec(first);
            if name.is_empty() {
                return Err(format!("line {n}: no package name in `{key}`"));
            }
            let local = berry
                && ["@workspace:", "@link:", "@portal:", "@file:", "@exec:"]
                    .iter()
                    .any(|p| first.contains(p));
            current = (!local).then(|| (name.to_owned(), n));
            continue;
        }
        let t = line.trim();
        if line.starts_with("  ") && !line.starts_with("   ") {
            let version = if berry {
                t.strip_prefix("version: ")
            } else {
                t.strip_prefix("version ")
            };
            if let Some(v) = version
                && let Some((name, _)) = current.take()
            {
                out.push(dep(&name, unquote(v)));
            }
        }
    }
    if let Some((name, at)) = current.filter(|_| !berry) {
        return Err(format!("line {at}: `{name}` has no version"));
    }
    Ok((if berry { "yarn-berry" } else { "yarn-v1" }, out))
}

/// `pnpm-lock.yaml`: the keys of `packages:` — `/name/1.2.3` (v5), `/name@1.2.3` (v6),
/// `name@1.2.3` (v9), with peer suffixes `(…)` or `_…` cut.
pub fn pnpm_lock(text: &str) -> Result<Vec<Dep>, String> {
    if !text.lines().any(|l| l.starts_with("lockfileVersion:")) {
        return Err("not a pnpm lockfile: no `lockfileVersion`".into());
    }
    // Lockfiles before v6 write `/name/version_peers`; later ones `name@version(peers)`.
    let major: u32 = text
        .lines()
        .find_map(|l| l.strip_prefix("lockfileVersion:"))
        .map(unquote)
        .and_then(|v| v.split('.').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(9);
    let mut out = Vec::new();
    let mut in_packages = false;
    for (i, line) in text.lines().enumerate() {
        if !line.starts_with(' ') && !line.trim().is_empty() {
            // CONTRACT 30: a top-level line is a YAML key (`name:` or `name: value`), a
            // document marker or a comment; anything else makes the file unreadable.
            let key = line.split(':').next().unwrap_or_default();
            let is_key = line.contains(':')
                && key.starts_with(|c: char| c.is_ascii_alphabetic())
                && key.chars().all(|c| c.is_ascii_alphanumeric());
            if !is_key && line.trim_end() != "---" && !line.starts_with('#') {
                return Err(format!(
                    "line {}: `{}` is not a pnpm-lock.yaml entry",
                    i + 1,
                    line.chars().take(80).collect::<String>()
                ));
            }
            in_packages = line.trim_end() == "packages:";
            continue;
        }
        if !in_packages || !line.starts_with("  ") || line.starts_with("   ") {
            continue;
        }
        let Some(key) = line.trim().strip_suffix(':') else {
            return Err(format!("line {}: a package key must end with `:`", i + 1));
        };
        let key = unquote(key);
        let key = key.split('(').next().unwrap_or(key);
        let key = match key.strip_prefix('/') {
            Some(k) => k,
            // A package of another registry is keyed by the registry's host first
            // (`registry.npmjs.org/@types/node/14.0.22`).
            None => match key.split_once('/') {
                Some((host, rest)) if host.contains('.') && !host.starts_with('@') => rest,
                _ => key,
            },
        };
        let scoped = usize::from(key.starts_with('@'));
        let (name, version) = if major < 6 {
            // `name/1.2.3_peer@1` or `@scope/name/1.2.3`: the version follows the name's
            // `/` (the second one for a scoped name); names may hold `_` (`string_decoder`,
            // `@types/babel__core`), versions end at the peer suffix's `_`.
            match key.match_indices('/').nth(scoped) {
                Some((at, _)) => (&key[..at], &key[at + 1..]),
                None => return Err(format!("line {}: no version in `{key}`", i + 1)),
            }
        } else {
            match key[scoped..].find('@') {
                Some(at) => (&key[..at + scoped], &key[at + scoped + 1..]),
                None => return Err(format!("line {}: no version in `{key}`", i + 1)),
            }
        };
        let version = version.split('_').next().unwrap_or(version);
        if name.is_empty() || version.is_empty() {
            return Err(format!("line {}: no name or version in `{key}`", i + 1));
        }
        // Tarballs and git sources have no registry version.
        if version.contains(':') || version.contains('/') {
            continue;
        }
        out.push(dep(name, version));
    }
    Ok(out)
}

/// bun's text lockfile `bun.lock` (JSON with trailing commas): `packages` maps a key to
/// `["name@1.2.3", registry, {deps}, integrity]`; workspace entries (`name@workspace:`) are
/// the project itself.
pub fn bun_lock(text: &str) -> Result<Vec<Dep>, String> {
    let v: Value = serde_json::from_str(&strip_trailing_commas(text))
        .map_err(|e| format!("not valid JSON (with trailing commas): {e}"))?;
    let Some(pkgs) = v["packages"].as_object() else {
        return if v["lockfileVersion"].is_number() {
            Ok(Vec::new())
        } else {
            Err("not a bun lockfile: no `lockfileVersion`".into())
        };
    };
    let mut out = Vec::new();
    for (k, entry) in pkgs {
        let Some(id) = entry[0].as_str() else {
            return Err(format!(
                "packages.{k}: the first element is not `name@version`"
            ));
        };
        let from = usize::from(id.starts_with('@'));
        let Some(at) = id[from..].find('@').map(|a| a + from) else {
            return Err(format!("packages.{k}: `{id}` has no version"));
        };
        let (name, version) = (&id[..at], &id[at + 1..]);
        if version.contains(':') {
            continue;
        }
        out.push(dep(name, version));
    }
    Ok(out)
}

/// JSON with the trailing commas bun writes removed (outside strings).
fn strip_trailing_commas(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_str = false;
    let mut escaped = false;
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if in_str {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_str = false;
            }
            continue;
        }
        if c == '"' {
            in_str = true;
        }
        if c == ','
            && chars[i + 1..]
                .iter()
                .find(|c| !c.is_whitespace())
                .is_some_and(|n| *n == '}' || *n == ']')
        {
            continue;
        }
        out.push(c);
    }
    out
}
