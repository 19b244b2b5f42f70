//! `update_packages` (CONTRACT 19): a project's dependencies moved to their targets with the
//! ecosystem's own tool, the manifest and lockfile rewritten by it. Before anything runs the
//! manifest, the lockfile and the installed tree (`node_modules`, the virtualenv) are copied
//! aside with `cp -a`; a failed install or a result that does not verify (a package not at
//! its target, `npm ls` or `pip check` unhappy) puts the copies back, so the project is
//! exactly as it was. Install scripts are not run (`npm --ignore-scripts`), as Dependabot
//! does not run them. Every tool runs as the project folder's owner ([`crate::host::owner`]);
//! the snapshot's copies are the agent's own and run as root.

mod bundler;
mod composer;
mod go;
mod npm;
mod pip;

use super::{Log, Outcome, PatchEnd, Target};
use std::path::{Path, PathBuf};

pub use npm::lock_versions as npm_lock_versions;
pub use pip::{pep503, rewrite_requirements};

pub use crate::collect::deps::at_least;

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
                // Kept at the same relative path (items may be nested: `vendor/bundle`).
                let copy = saved.join(item);
                if let Some(parent) = copy.parent() {
                    std::fs::create_dir_all(parent)
                        .map_err(|e| format!("{}: {e}", parent.display()))?;
                }
                let (code, _) = log
                    .run_as_agent(
                        "cp",
                        &[
                            "-a",
                            "--",
                            &path.display().to_string(),
                            &copy.display().to_string(),
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
                    .run_as_agent(
                        "cp",
                        &[
                            "-a",
                            "--",
                            &self.dir.join(item).display().to_string(),
                            &path.display().to_string(),
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

/// A project's dependency manager (CONTRACT 19): what a snapshot of the project keeps, the
/// change made with the ecosystem's own tool, and the check that it holds. Taking the
/// snapshot and restoring it are the same for every ecosystem ([`Snapshot`]).
pub(super) trait DependencyManager {
    /// The program it runs, as the project folder's owner.
    const PROGRAM: &'static str;
    /// Its name in notes (`bundler is not installed on this host`).
    const TOOL: &'static str;
    /// The files a project it updates has.
    const MANIFESTS: &'static [&'static str];
    /// What a snapshot keeps: the manifests, the lockfile and the installed tree.
    const ITEMS: &'static [&'static str];

    /// The program it runs for `project`.
    fn program(&self, _project: &Path) -> String {
        Self::PROGRAM.to_owned()
    }

    /// What a snapshot keeps, once the project's manifests and the tool are there.
    fn prepare(&self, project: &Path) -> Result<Vec<&'static str>, String> {
        if Self::MANIFESTS.iter().any(|m| !project.join(m).is_file()) {
            return Err(format!(
                "{} has no {}",
                project.display(),
                Self::MANIFESTS.join(" and ")
            ));
        }
        if !super::on_path(Self::PROGRAM) {
            return Err(format!("{} is not installed on this host", Self::TOOL));
        }
        Ok(Self::ITEMS.to_vec())
    }
    /// Moves `targets` to their versions: `Err((exit code, why))` when the tool refuses.
    async fn install(&self, log: &mut Log, p: &Project<'_>) -> Result<(), (i64, String)>;
    /// Whether the result holds: every target at its version and the tree consistent.
    async fn verify(&self, log: &mut Log, p: &Project<'_>) -> Result<(), String>;
}

/// The project a manager works on and what it moves.
#[derive(Clone, Copy)]
pub(super) struct Project<'a> {
    /// The project's folder.
    pub dir: &'a Path,
    /// The packages and their target versions.
    pub targets: &'a [Target],
}

/// The JSON manifest `file` of `project`, or why the install cannot start.
fn read_manifest(project: &Path, file: &str) -> Result<serde_json::Value, (i64, String)> {
    std::fs::read_to_string(project.join(file))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .ok_or((1, format!("{file} is not valid JSON")))
}

/// Whether the lockfile `file` of `project` holds each target at (or past) its version: the
/// first target that it does not, in words.
fn locked_reach(project: &Path, file: &str, targets: &[Target]) -> Result<(), String> {
    let path = project.join(file);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{file}: {e}"))?;
    let locked = crate::collect::deps::locks::read(&path, &text)?;
    for t in targets {
        match locked.iter().find(|(_, n, _)| *n == t.name) {
            Some((_, _, v)) if at_least(v, &t.version) => {}
            Some((_, _, v)) => return Err(format!("{} is {v}, not {}", t.name, t.version)),
            None => return Err(format!("{} is not in {file}", t.name)),
        }
    }
    Ok(())
}

/// `update_packages` in `project` (already checked against the allowlist) for `ecosystem`.
pub async fn update(ecosystem: &str, project: &Path, targets: &[Target], dir: &Path) -> Outcome {
    match ecosystem {
        "npm" => update_with(&npm::Npm, project, targets, dir).await,
        "pip" => update_with(&pip::Pip, project, targets, dir).await,
        "go" | "Go" => update_with(&go::Go, project, targets, dir).await,
        "bundler" | "RubyGems" => update_with(&bundler::Bundler, project, targets, dir).await,
        "composer" | "Packagist" => update_with(&composer::Composer, project, targets, dir).await,
        other => Log::default().outcome(
            1,
            Some(PatchEnd::NotInstalled(format!(
                "this agent cannot update `{other}` projects yet"
            ))),
        ),
    }
}

/// Snapshot, install, verify; restore when the install or its check fails.
async fn update_with<M: DependencyManager>(
    manager: &M,
    project: &Path,
    targets: &[Target],
    dir: &Path,
) -> Outcome {
    let mut log = Log::default();
    let items = match manager.prepare(project) {
        Ok(items) => items,
        Err(why) => return log.outcome(1, Some(PatchEnd::NotInstalled(why))),
    };
    // CONTRACT 30: the project's tools run as its owner, and only programs nobody else
    // could have changed run at all.
    let owner = match crate::host::owner::Owner::of(project) {
        Ok(o) => o,
        Err(why) => return log.outcome(1, Some(PatchEnd::NotInstalled(why))),
    };
    if let Err(why) = owner.check_executable(&manager.program(project)) {
        return log.outcome(
            1,
            Some(PatchEnd::RolledBack(format!("refused to run {why}"))),
        );
    }
    log.as_owner(owner);
    let snap = match Snapshot::take(&mut log, project, dir, &items).await {
        Ok(s) => s,
        Err(why) => return log.outcome(1, Some(PatchEnd::NotInstalled(why))),
    };
    let before = snap.listing();
    let work = Project {
        dir: project,
        targets,
    };
    let (exit, why, end): (i64, String, fn(String) -> PatchEnd) =
        match manager.install(&mut log, &work).await {
            Err((code, why)) => (code, why, PatchEnd::NotInstalled),
            Ok(()) => match manager.verify(&mut log, &work).await {
                Ok(()) => {
                    snap.discard();
                    return log.outcome(0, None);
                }
                Err(why) => (1, why, PatchEnd::RolledBack),
            },
        };
    if let Err(e) = snap.restore(&mut log).await {
        return log.outcome(exit, Some(PatchEnd::RollbackFailed(format!("{why}; {e}"))));
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
            Some(PatchEnd::RollbackFailed(format!(
                "{why}; still different: {differ:?}"
            ))),
        );
    }
    snap.discard();
    log.outcome(exit, Some(end(why)))
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
