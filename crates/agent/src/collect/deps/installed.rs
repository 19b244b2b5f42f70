//! Installed trees (CONTRACT 29): what is really on disk, which wins over what a lockfile
//! claims. `node_modules` (nested, scoped, and pnpm's `.pnpm` store; symlinks not followed,
//! so a package pnpm links is read once), Python's `site-packages` (`*.dist-info/METADATA`,
//! `*.egg-info/PKG-INFO`) and gem homes (`specifications/*.gemspec`, as RubyGems writes them).
//! Walks are bounded in depth and in packages.

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
    read_each(
        dir,
        "PyPI",
        |name| {
            if name.ends_with(".dist-info") {
                Some("METADATA")
            } else if name.ends_with(".egg-info") {
                Some("PKG-INFO")
            } else {
                None
            }
        },
        metadata,
        "no Name and Version headers",
    )
}

/// The packages of a tree whose entries each hold one metadata file: for each entry of
/// `dir` that `file` names (the entry itself when it names `""`), the file read by `parse`;
/// a file that cannot be read or parsed is the tree's error (never a package dropped).
fn read_each(
    dir: &Path,
    ecosystem: &'static str,
    file: impl Fn(&str) -> Option<&'static str>,
    parse: fn(&str) -> Option<(String, String)>,
    unparsed: &str,
) -> Result<Vec<Dep>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("unreadable: {e}"))?;
    let mut out = Vec::new();
    for e in entries.filter_map(Result::ok).take(MAX_PACKAGES) {
        let Some(inner) = file(&e.file_name().to_string_lossy()) else {
            continue;
        };
        let meta = if inner.is_empty() {
            e.path()
        } else {
            e.path().join(inner)
        };
        let Ok(text) = std::fs::read_to_string(&meta) else {
            return Err(format!("{}: unreadable", meta.display()));
        };
        match parse(&text) {
            Some((n, v)) => out.push(Dep::new(ecosystem, &n, &v)),
            None => return Err(format!("{}: {unparsed}", meta.display())),
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

/// The gems installed in a gem home (the parent of `specifications/`): each gemspec's name and
/// version, from the `# stub:` line RubyGems writes first, else its `s.name =` and
/// `s.version =` lines (older RubyGems wrote no stub line and `%q{…}` strings).
pub fn gem_home(home: &Path) -> Result<Vec<Dep>, String> {
    read_each(
        &home.join("specifications"),
        "RubyGems",
        |name| name.ends_with(".gemspec").then_some(""),
        gemspec,
        "no name and version",
    )
}

/// Name and version of an installed gemspec.
pub fn gemspec(text: &str) -> Option<(String, String)> {
    let mut name = None;
    let mut version = None;
    for line in text.lines().take(200) {
        let l = line.trim();
        if let Some(stub) = l.strip_prefix("# stub: ") {
            let mut f = stub.split(' ');
            if let (Some(n), Some(v)) = (f.next(), f.next())
                && !n.is_empty()
                && v.starts_with(|c: char| c.is_ascii_digit())
            {
                return Some((n.to_owned(), v.to_owned()));
            }
        }
        let quoted = |rest: &str| -> Option<String> {
            let rest = rest.trim_start().strip_prefix('=')?.trim_start();
            let rest = rest.strip_prefix("Gem::Version.new(").unwrap_or(rest);
            // `"rack"`, `'rack'`, or older RubyGems' `%q{rack}`.
            let (body, close) = match rest.strip_prefix("%q{") {
                Some(b) => (b, '}'),
                None => {
                    let q = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
                    (&rest[1..], q)
                }
            };
            let end = body.find(close)?;
            Some(body[..end].to_owned())
        };
        if let Some(rest) = l.strip_prefix("s.name") {
            name = name.or_else(|| quoted(rest));
        } else if let Some(rest) = l.strip_prefix("s.version") {
            version = version.or_else(|| quoted(rest));
        }
    }
    name.zip(version)
        .filter(|(n, v)| !n.is_empty() && !v.is_empty())
}

/// The installed trees of a project directory: its `node_modules`, its Bundler gem homes
/// (`vendor/bundle/ruby/*`), and the `site-packages` of its virtualenvs (`.venv`, `venv`,
/// `env`): `(format, tree root)`.
pub fn trees_of(project: &Path) -> Vec<(&'static str, PathBuf)> {
    let mut out = Vec::new();
    let nm = project.join("node_modules");
    if nm.is_dir() {
        out.push(("node-modules", nm));
    }
    // Bundler's deployment folder: `vendor/bundle/ruby/<version>/` is a gem home.
    for ruby in std::fs::read_dir(project.join("vendor/bundle/ruby"))
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
    {
        if ruby.path().join("specifications").is_dir() {
            out.push(("gemspec", ruby.path()));
        }
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

/// Trees installed for the whole machine by a language's own tool rather than the
/// distribution's: npm's global `node_modules` (`/usr/local/lib/node_modules`), pip's
/// `/usr/local/lib/python3*/{site,dist}-packages` and gem homes (`/var/lib/gems/*`,
/// `/usr/local/lib/ruby/gems/*`). What the distribution installed (`/usr/lib/python3`,
/// `/usr/share/rubygems-integration`) is already reported as OS packages and is left out.
pub fn system_trees(root: &Path) -> Vec<(&'static str, PathBuf)> {
    let mut out = Vec::new();
    let local = root.join("usr/local/lib");
    let nm = local.join("node_modules");
    if nm.is_dir() {
        out.push(("node-modules", nm));
    }
    let children = |dir: PathBuf| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .map(|e| e.path())
            .collect();
        v.sort();
        v
    };
    for py in children(local.clone()) {
        if !py
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("python3"))
        {
            continue;
        }
        for sp in ["site-packages", "dist-packages"] {
            let dir = py.join(sp);
            let has_dist = std::fs::read_dir(&dir).into_iter().flatten().any(|e| {
                e.is_ok_and(|e| {
                    let n = e.file_name();
                    let n = n.to_string_lossy();
                    n.ends_with(".dist-info") || n.ends_with(".egg-info")
                })
            });
            if has_dist {
                out.push(("python-dist-info", dir));
            }
        }
    }
    for base in [root.join("var/lib/gems"), local.join("ruby/gems")] {
        for home in children(base) {
            if home.join("specifications").is_dir() {
                out.push(("gemspec", home));
            }
        }
    }
    out
}
