//! `update_packages` (CONTRACT 19): a project's dependencies moved to their targets with the
//! ecosystem's own tool, the manifest and lockfile rewritten by it. Before anything runs the
//! manifest, the lockfile and the installed tree (`node_modules`, the virtualenv) are copied
//! aside with `cp -a`; a failed install or a result that does not verify (a package not at
//! its target, `npm ls` or `pip check` unhappy) puts the copies back, so the project is
//! exactly as it was. Install scripts are not run (`npm --ignore-scripts`), as Dependabot
//! does not run them.

use super::{Log, Outcome, Target};
use std::path::{Path, PathBuf};

/// Ecosystems this agent updates, by the names inventory reports them under.
pub const ECOSYSTEMS: [&str; 2] = ["npm", "pip"];

/// A project's files and folders a snapshot keeps: what exists of them is copied aside.
const NPM_ITEMS: [&str; 4] = [
    "package.json",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "node_modules",
];
const PIP_ITEMS: [&str; 1] = ["requirements.txt"];

/// Whether `have` is `want` or later: equal strings, else the dot-separated parts compared
/// numerically where both are numbers (a pre-release tail such as `-rc.1` sorts first).
pub fn at_least(have: &str, want: &str) -> bool {
    fn parts(v: &str) -> (Vec<&str>, bool) {
        let v = v.trim_start_matches('v');
        let (main, pre) = match v.find(['-', '+']) {
            Some(i) => (&v[..i], v[i..].starts_with('-')),
            None => (v, false),
        };
        (main.split('.').collect(), pre)
    }
    if have == want {
        return true;
    }
    let ((h, h_pre), (w, w_pre)) = (parts(have), parts(want));
    for i in 0..h.len().max(w.len()) {
        let (a, b) = (
            h.get(i).copied().unwrap_or("0"),
            w.get(i).copied().unwrap_or("0"),
        );
        let ord = match (a.parse::<u64>(), b.parse::<u64>()) {
            (Ok(x), Ok(y)) => x.cmp(&y),
            _ => a.cmp(b),
        };
        if ord != std::cmp::Ordering::Equal {
            return ord.is_gt();
        }
    }
    // Same release: a pre-release is before it.
    !h_pre || w_pre
}

/// PEP 503 normalised name: lower case, runs of `-`, `_`, `.` as one `-`.
pub fn pep503(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// `requirements.txt` with each target's `==` pin moved to its version (extras, markers and
/// comments kept); a target the file does not pin is appended.
pub fn rewrite_requirements(text: &str, targets: &[Target]) -> String {
    let mut seen = vec![false; targets.len()];
    let mut out: Vec<String> = text
        .lines()
        .map(|line| {
            let Some((head, tail)) = line.split_once("==") else {
                return line.to_owned();
            };
            let name = head.split('[').next().unwrap_or(head).trim();
            let Some(i) = targets.iter().position(|t| pep503(&t.name) == pep503(name)) else {
                return line.to_owned();
            };
            seen[i] = true;
            let end = tail
                .find(|c: char| c.is_whitespace() || c == ';' || c == '#')
                .unwrap_or(tail.len());
            format!("{head}=={}{}", targets[i].version, &tail[end..])
        })
        .collect();
    for (t, seen) in targets.iter().zip(seen) {
        if !seen {
            out.push(format!("{}=={}", t.name, t.version));
        }
    }
    let mut text = out.join("\n");
    text.push('\n');
    text
}

/// Every version of `name` a `package-lock.json` installs (each `node_modules/<name>` entry).
pub fn npm_lock_versions(lock: &str, name: &str) -> Result<Vec<(String, String)>, String> {
    let v: serde_json::Value =
        serde_json::from_str(lock).map_err(|e| format!("package-lock.json: {e}"))?;
    let suffix = format!("node_modules/{name}");
    Ok(v["packages"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| {
            k.ends_with(&suffix)
                && (k.len() == suffix.len() || k[..k.len() - suffix.len()].ends_with('/'))
        })
        .filter_map(|(k, p)| Some((k.clone(), p["version"].as_str()?.to_owned())))
        .collect())
}

/// What a snapshot holds: each item of the project and whether it existed.
struct Snapshot {
    project: PathBuf,
    dir: PathBuf,
    items: Vec<(String, bool)>,
}

impl Snapshot {
    async fn take(
        log: &mut Log,
        project: &Path,
        dir: &Path,
        items: &[&str],
    ) -> Result<Snapshot, String> {
        let saved = dir.join("project");
        std::fs::create_dir_all(&saved).map_err(|e| format!("{}: {e}", saved.display()))?;
        let mut kept = Vec::new();
        for item in items {
            let path = project.join(item);
            let exists = path.symlink_metadata().is_ok();
            if exists {
                let (code, _) = log
                    .run(
                        "cp",
                        &[
                            "-a",
                            "--",
                            &path.display().to_string(),
                            &saved.display().to_string(),
                        ],
                        &[],
                        None,
                    )
                    .await;
                if code != 0 {
                    return Err(format!("cannot copy {} aside", path.display()));
                }
            }
            kept.push(((*item).to_owned(), exists));
        }
        Ok(Snapshot {
            project: project.to_owned(),
            dir: saved,
            items: kept,
        })
    }

    /// Puts every item back as it was; what did not exist is removed.
    async fn restore(&self, log: &mut Log) -> Result<(), String> {
        for (item, existed) in &self.items {
            let path = self.project.join(item);
            remove(&path)?;
            if *existed {
                let (code, _) = log
                    .run(
                        "cp",
                        &[
                            "-a",
                            "--",
                            &self.dir.join(item).display().to_string(),
                            &self.project.display().to_string(),
                        ],
                        &[],
                        None,
                    )
                    .await;
                if code != 0 {
                    return Err(format!("cannot put {} back", path.display()));
                }
            }
        }
        Ok(())
    }

    /// A listing of the project's items (path, kind, size, modification time, link target):
    /// what a restore must give back.
    fn listing(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (item, _) in &self.items {
            walk(&self.project.join(item), &mut out);
        }
        out.sort();
        out
    }

    fn discard(self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn remove(path: &Path) -> Result<(), String> {
    match path.symlink_metadata() {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(_) => Ok(()),
    }
    .map_err(|e| format!("{}: {e}", path.display()))
}

fn walk(path: &Path, out: &mut Vec<String>) {
    let Ok(m) = path.symlink_metadata() else {
        return;
    };
    let mtime = m
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    if m.is_symlink() {
        let to = std::fs::read_link(path).unwrap_or_default();
        out.push(format!("{} -> {}", path.display(), to.display()));
    } else if m.is_dir() {
        out.push(format!("{}/", path.display()));
        if let Ok(entries) = std::fs::read_dir(path) {
            for e in entries.flatten() {
                walk(&e.path(), out);
            }
        }
    } else {
        out.push(format!("{} {} {mtime}", path.display(), m.len()));
    }
}

/// `update_packages` in `project` (already checked against the allowlist) for `ecosystem`.
pub async fn update(ecosystem: &str, project: &Path, targets: &[Target], dir: &Path) -> Outcome {
    let mut log = Log::default();
    let prepared = match ecosystem {
        "npm" => npm_prepare(project),
        "pip" => pip_prepare(project),
        other => Err(format!("this agent cannot update `{other}` projects yet")),
    };
    let items: Vec<&str> = match prepared {
        Ok(items) => items,
        Err(why) => return log.outcome(1, Some(format!("not installed: {why}"))),
    };
    let snap = match Snapshot::take(&mut log, project, dir, &items).await {
        Ok(s) => s,
        Err(why) => return log.outcome(1, Some(format!("not installed: {why}"))),
    };
    let before = snap.listing();
    let installed = match ecosystem {
        "npm" => npm_install(&mut log, project, targets).await,
        _ => pip_install(&mut log, project, targets).await,
    };
    let (exit, why, note) = match installed {
        Err((code, why)) => (code, why, "not installed"),
        Ok(()) => {
            let verified = match ecosystem {
                "npm" => npm_verify(&mut log, project, targets).await,
                _ => pip_verify(&mut log, project, targets).await,
            };
            match verified {
                Ok(()) => {
                    snap.discard();
                    return log.outcome(0, None);
                }
                Err(why) => (1, why, "rolled back"),
            }
        }
    };
    if let Err(e) = snap.restore(&mut log).await {
        return log.outcome(exit, Some(format!("rollback failed: {why}; {e}")));
    }
    let after = snap.listing();
    if after != before {
        let differ: Vec<&String> = after
            .iter()
            .filter(|l| !before.contains(l))
            .take(5)
            .collect();
        return log.outcome(
            exit,
            Some(format!(
                "rollback failed: {why}; still different: {differ:?}"
            )),
        );
    }
    snap.discard();
    log.outcome(exit, Some(format!("{note}: {why}")))
}

fn npm_prepare(project: &Path) -> Result<Vec<&'static str>, String> {
    if !project.join("package.json").is_file() {
        return Err(format!("{} has no package.json", project.display()));
    }
    if !super::on_path("npm") {
        return Err("npm is not installed on this host".into());
    }
    Ok(NPM_ITEMS.to_vec())
}

/// `package.json` dependency sections: a target named in one is a direct dependency.
const SECTIONS: [&str; 3] = ["dependencies", "devDependencies", "optionalDependencies"];

async fn npm_install(
    log: &mut Log,
    project: &Path,
    targets: &[Target],
) -> Result<(), (i64, String)> {
    let manifest: serde_json::Value = std::fs::read_to_string(project.join("package.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .ok_or((1, "package.json is not valid JSON".to_owned()))?;
    let spec = |name: &str| {
        SECTIONS
            .iter()
            .find_map(|s| manifest[*s][name].as_str().map(str::to_owned))
    };
    // Direct dependencies keep their section and their style (an exact pin stays exact);
    // a transitive one is forced with `overrides`, npm's own mechanism.
    let (mut exact, mut ranged, mut overrides) = (Vec::new(), Vec::new(), Vec::new());
    for t in targets {
        let spec_of = format!("{}@{}", t.name, t.version);
        match spec(&t.name) {
            Some(s) if s.starts_with(|c: char| c.is_ascii_digit()) => exact.push(spec_of),
            Some(_) => ranged.push(spec_of),
            None => overrides.push(format!("overrides[{}]={}", t.name, t.version)),
        }
    }
    const FLAGS: [&str; 4] = [
        "--no-audit",
        "--no-fund",
        "--ignore-scripts",
        "--no-progress",
    ];
    let mut runs: Vec<Vec<String>> = Vec::new();
    if !overrides.is_empty() {
        let mut set = vec!["pkg".to_owned(), "set".to_owned()];
        set.extend(overrides);
        runs.push(set);
        runs.push(
            std::iter::once("install".to_owned())
                .chain(FLAGS.map(String::from))
                .collect(),
        );
    }
    for (list, extra) in [(exact, Some("--save-exact")), (ranged, None)] {
        if list.is_empty() {
            continue;
        }
        let mut args: Vec<String> = vec!["install".into()];
        args.extend(FLAGS.map(String::from));
        args.extend(extra.map(String::from));
        args.extend(list);
        runs.push(args);
    }
    for args in runs {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, _) = log.run("npm", &args, NPM_ENV, Some(project)).await;
        if code != 0 {
            return Err((code, format!("npm {} exited {code}", args[0])));
        }
    }
    Ok(())
}

const NPM_ENV: &[(&str, &str)] = &[
    ("NO_UPDATE_NOTIFIER", "1"),
    ("npm_config_update_notifier", "false"),
];

async fn npm_verify(log: &mut Log, project: &Path, targets: &[Target]) -> Result<(), String> {
    let lock = std::fs::read_to_string(project.join("package-lock.json"))
        .map_err(|e| format!("package-lock.json: {e}"))?;
    for t in targets {
        let found = npm_lock_versions(&lock, &t.name)?;
        if found.is_empty() {
            return Err(format!("{} is not in package-lock.json", t.name));
        }
        if let Some((at, v)) = found.iter().find(|(_, v)| !at_least(v, &t.version)) {
            return Err(format!("{} is {v} at {at}, not {}", t.name, t.version));
        }
        // What is on disk, not only what the lockfile says.
        for (at, _) in &found {
            let installed = std::fs::read_to_string(project.join(at).join("package.json"))
                .ok()
                .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
                .and_then(|m| m["version"].as_str().map(str::to_owned));
            match installed {
                Some(v) if at_least(&v, &t.version) => {}
                Some(v) => return Err(format!("{at} holds {v}, not {}", t.version)),
                None => return Err(format!("{at} is not installed")),
            }
        }
    }
    let (code, _) = log
        .run("npm", &["ls", "--all"], NPM_ENV, Some(project))
        .await;
    if code != 0 {
        return Err(format!(
            "npm ls exited {code}: the dependency tree is not consistent"
        ));
    }
    Ok(())
}

/// The project's virtualenv: `.venv` or `venv` with its own Python.
fn venv(project: &Path) -> Option<PathBuf> {
    [".venv", "venv"]
        .iter()
        .map(|v| project.join(v))
        .find(|v| v.join("bin/python").exists())
}

fn pip_prepare(project: &Path) -> Result<Vec<&'static str>, String> {
    if !project.join("requirements.txt").is_file() {
        return Err(format!(
            "{} has no requirements.txt (poetry projects are not updated by this agent)",
            project.display()
        ));
    }
    let env = venv(project).ok_or(format!(
        "{} has no virtualenv at .venv or venv",
        project.display()
    ))?;
    Ok(match env.file_name().and_then(|n| n.to_str()) {
        Some(".venv") => vec![PIP_ITEMS[0], ".venv"],
        _ => vec![PIP_ITEMS[0], "venv"],
    })
}

const PIP_ENV: &[(&str, &str)] = &[
    ("PIP_DISABLE_PIP_VERSION_CHECK", "1"),
    ("PIP_NO_INPUT", "1"),
    ("PYTHONDONTWRITEBYTECODE", "1"),
];

fn python(project: &Path) -> String {
    venv(project)
        .map(|v| v.join("bin/python").display().to_string())
        .unwrap_or_default()
}

async fn pip_install(
    log: &mut Log,
    project: &Path,
    targets: &[Target],
) -> Result<(), (i64, String)> {
    let python = python(project);
    let pins: Vec<String> = targets
        .iter()
        .map(|t| format!("{}=={}", t.name, t.version))
        .collect();
    let mut args = vec!["-m", "pip", "install"];
    args.extend(pins.iter().map(String::as_str));
    let (code, _) = log.run(&python, &args, PIP_ENV, Some(project)).await;
    if code != 0 {
        return Err((code, format!("pip install exited {code}")));
    }
    let file = project.join("requirements.txt");
    let text = std::fs::read_to_string(&file).map_err(|e| (1, format!("requirements.txt: {e}")))?;
    std::fs::write(&file, rewrite_requirements(&text, targets))
        .map_err(|e| (1, format!("requirements.txt: {e}")))?;
    Ok(())
}

async fn pip_verify(log: &mut Log, project: &Path, targets: &[Target]) -> Result<(), String> {
    let python = python(project);
    let (code, out) = log
        .run(
            &python,
            &["-m", "pip", "list", "--format=json"],
            PIP_ENV,
            Some(project),
        )
        .await;
    if code != 0 {
        return Err(format!("pip list exited {code}"));
    }
    let list: Vec<serde_json::Value> =
        serde_json::from_str(&out).map_err(|e| format!("pip list: {e}"))?;
    for t in targets {
        let have = list
            .iter()
            .find(|p| {
                p["name"]
                    .as_str()
                    .is_some_and(|n| pep503(n) == pep503(&t.name))
            })
            .and_then(|p| p["version"].as_str());
        match have {
            Some(v) if at_least(v, &t.version) => {}
            Some(v) => return Err(format!("{} is {v}, not {}", t.name, t.version)),
            None => return Err(format!("{} is not installed", t.name)),
        }
    }
    let (code, _) = log
        .run(&python, &["-m", "pip", "check"], PIP_ENV, Some(project))
        .await;
    if code != 0 {
        return Err(format!(
            "pip check exited {code}: the environment has broken requirements"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(name: &str, version: &str) -> Target {
        Target {
            name: name.into(),
            version: version.into(),
        }
    }

    #[test]
    fn versions_compare_as_releases() {
        assert!(at_least("1.2.4", "1.2.4"));
        assert!(at_least("1.10.0", "1.9.9"));
        assert!(!at_least("1.2.3", "1.2.4"));
        assert!(at_least("2.0.0", "1.99"));
        assert!(!at_least("2.0.0-rc.1", "2.0.0"));
        assert!(at_least("2.0.0", "2.0.0-rc.1"));
        assert!(at_least("v1.2.0", "1.2"));
    }

    #[test]
    fn requirements_keep_their_shape() {
        let text = "# deps\nRequests[socks]==2.31.0 ; python_version >= \"3.8\"  # http\nurllib3==1.26.0\nflask>=2\n";
        let out = rewrite_requirements(
            text,
            &[
                t("requests", "2.32.0"),
                t("urllib3", "1.26.19"),
                t("idna", "3.7"),
            ],
        );
        assert_eq!(
            out,
            "# deps\nRequests[socks]==2.32.0 ; python_version >= \"3.8\"  # http\nurllib3==1.26.19\nflask>=2\nidna==3.7\n"
        );
        assert_eq!(pep503("Zope.Interface__x"), "zope-interface-x");
    }

    #[test]
    fn lockfile_versions_are_every_copy() {
        let lock = r#"{"packages":{"":{},"node_modules/c":{"version":"2.0.0"},"node_modules/a/node_modules/c":{"version":"1.0.1"},"node_modules/abc":{"version":"9"}}}"#;
        let mut v = npm_lock_versions(lock, "c").expect("lock");
        v.sort();
        assert_eq!(
            v,
            vec![
                (
                    "node_modules/a/node_modules/c".to_owned(),
                    "1.0.1".to_owned()
                ),
                ("node_modules/c".to_owned(), "2.0.0".to_owned())
            ]
        );
        assert!(npm_lock_versions("{", "c").is_err());
    }
}
