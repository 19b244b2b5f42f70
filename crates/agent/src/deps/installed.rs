//! Installed trees (CONTRACT 29): what is really on disk, which wins over what a lockfile
//! claims. `node_modules` (nested, scoped, and pnpm's `.pnpm` store; symlinks not followed,
//! so a package pnpm links is read once) and Python's `site-packages` (`*.dist-info/METADATA`,
//! `*.egg-info/PKG-INFO`). Walks are bounded in depth and in packages.

use super::Dep;
use std::path::{Path, PathBuf};

/// At most this many packages are read from one tree, this deep.
const MAX_PACKAGES: usize = 50_000;
const MAX_DEPTH: usize = 16;

/// The packages of a `node_modules` directory; the reason when none can be read.
pub fn node_modules(root: &Path) -> Result<Vec<Dep>, String> {
    let mut out = Vec::new();
    let mut unreadable = 0usize;
    let mut stack: Vec<(PathBuf, usize)> = vec![(root.to_owned(), 0)];
    while let Some((dir, depth)) = stack.pop() {
        if depth > MAX_DEPTH || out.len() >= MAX_PACKAGES {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.filter_map(Result::ok) {
            let name = e.file_name().to_string_lossy().into_owned();
            let path = e.path();
            // Links (pnpm's top level, workspaces) are read where they point inside the tree.
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if name == ".pnpm" {
                // `.pnpm/<name@version>/node_modules/<name>`: each store entry is a tree.
                for store in std::fs::read_dir(&path)
                    .into_iter()
                    .flatten()
                    .filter_map(Result::ok)
                {
                    stack.push((store.path().join("node_modules"), depth + 1));
                }
                continue;
            }
            if name.starts_with('.') {
                continue;
            }
            let packages: Vec<PathBuf> = if name.starts_with('@') {
                std::fs::read_dir(&path)
                    .into_iter()
                    .flatten()
                    .filter_map(Result::ok)
                    .filter(|s| s.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|s| s.path())
                    .collect()
            } else {
                vec![path]
            };
            for pkg in packages {
                match read_package_json(&pkg.join("package.json")) {
                    Some((n, v)) => out.push(Dep::new("npm", &n, &v)),
                    None => unreadable += 1,
                }
                stack.push((pkg.join("node_modules"), depth + 1));
            }
        }
    }
    if out.is_empty() && unreadable > 0 {
        return Err(format!(
            "{unreadable} package folder(s) without a readable package.json"
        ));
    }
    Ok(out)
}

fn read_package_json(path: &Path) -> Option<(String, String)> {
    let text = std::fs::read_to_string(path).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    Some((
        v["name"].as_str()?.to_owned(),
        v["version"].as_str()?.to_owned(),
    ))
}

/// The distributions installed in a `site-packages` directory.
pub fn site_packages(dir: &Path) -> Result<Vec<Dep>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("unreadable: {e}"))?;
    let mut out = Vec::new();
    for e in entries.filter_map(Result::ok).take(MAX_PACKAGES) {
        let name = e.file_name().to_string_lossy().into_owned();
        let meta = if name.ends_with(".dist-info") {
            e.path().join("METADATA")
        } else if name.ends_with(".egg-info") {
            e.path().join("PKG-INFO")
        } else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(&meta) else {
            return Err(format!("{}: unreadable", meta.display()));
        };
        match metadata(&text) {
            Some((n, v)) => out.push(Dep::new("PyPI", &n, &v)),
            None => return Err(format!("{}: no Name and Version headers", meta.display())),
        }
    }
    Ok(out)
}

/// `Name` and `Version` of a core-metadata file (the headers before the first blank line).
pub fn metadata(text: &str) -> Option<(String, String)> {
    let mut name = None;
    let mut version = None;
    for line in text.lines() {
        if line.is_empty() {
            break;
        }
        if let Some(v) = line.strip_prefix("Name:") {
            name = Some(v.trim().to_owned());
        } else if let Some(v) = line.strip_prefix("Version:") {
            version = Some(v.trim().to_owned());
        }
    }
    name.zip(version)
        .filter(|(n, v)| !n.is_empty() && !v.is_empty())
}

/// The installed trees of a project directory: its `node_modules`, and the `site-packages` of
/// its virtualenvs (`.venv`, `venv`, `env`): `(format, tree root)`.
pub fn trees_of(project: &Path) -> Vec<(&'static str, PathBuf)> {
    let mut out = Vec::new();
    let nm = project.join("node_modules");
    if nm.is_dir() {
        out.push(("node-modules", nm));
    }
    for venv in [".venv", "venv", "env"] {
        let lib = project.join(venv).join("lib");
        for py in std::fs::read_dir(&lib)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
        {
            let sp = py.path().join("site-packages");
            if py.file_name().to_string_lossy().starts_with("python") && sp.is_dir() {
                out.push(("python-dist-info", sp));
            }
        }
    }
    out
}
