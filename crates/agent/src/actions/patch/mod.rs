//! Patching on this host (CONTRACT 19): `install_package` through the distribution's manager
//! and `update_packages` of a project's dependencies. Every patch takes a snapshot first,
//! installs, verifies that each package is at (or past) its target and that the package
//! database is consistent, and restores the snapshot when verification fails; a failed
//! install that changed nothing is reported as it is. Programs run without a shell, with a
//! time limit, their output bounded.

pub mod apk;
pub mod apt;
pub mod deps;
pub mod dnf;
pub mod zypper;

use crate::host::command::{COMMAND_TIMEOUT, CommandOutcome, on_path, run, run_as};
use crate::host::owner::Owner;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// What a patch reports: the hub records it as the action's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// 0 when every package is at its target.
    pub exit_code: i64,
    /// What the commands printed (bounded by the caller).
    pub stdout: String,
    /// Their errors.
    pub stderr: String,
    /// `rolled back: <reason>` after a restore, `not installed: <reason>` when nothing changed.
    pub note: Option<String>,
}

impl Outcome {
    fn refused(code: i64, note: String) -> Outcome {
        Outcome {
            exit_code: code,
            stdout: String::new(),
            stderr: note.clone(),
            note: Some(note),
        }
    }
}

/// A package and its target, as the token names them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Package name.
    pub name: String,
    /// Version to reach (the manager may install a newer candidate).
    pub version: String,
}

/// The packages of a token's `args.packages`, each name and version checked to be one word
/// of the characters package managers use (nothing reaches a shell, and nothing can pass
/// for an option).
pub fn targets(args: &Value) -> Result<Vec<Target>, String> {
    let list = args["packages"]
        .as_array()
        .filter(|l| !l.is_empty() && l.len() <= 100)
        .ok_or("`packages` must be a list of 1 to 100 {name, version}")?;
    let word = |s: &str, extra: &[u8]| {
        !s.is_empty()
            && s.len() <= 200
            && !s.starts_with('-')
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"+.-_~:".contains(&b) || extra.contains(&b))
    };
    list.iter()
        .map(|p| {
            let name = p["name"].as_str().unwrap_or_default();
            let version = p["version"].as_str().unwrap_or_default();
            if !word(name, b"@/") {
                return Err(format!("`{name}` is not a package name"));
            }
            if !word(version, b"") {
                return Err(format!("`{version}` is not a version"));
            }
            Ok(Target {
                name: name.to_owned(),
                version: version.to_owned(),
            })
        })
        .collect()
}

/// A transcript of the commands a patch ran, for the result's output. Its commands run as
/// the project's owner once [`Log::as_owner`] says who that is, else as the agent.
#[derive(Debug, Default)]
pub struct Log {
    out: String,
    err: String,
    owner: Option<Owner>,
}

impl Log {
    /// From now on, the project's commands run as `owner`.
    pub fn as_owner(&mut self, owner: Owner) {
        self.owner = Some(owner);
    }

    /// Runs one of the agent's own commands (a snapshot's copy) as the agent, whoever owns
    /// the project, and keeps its output like [`Log::run`].
    pub async fn run_as_agent(
        &mut self,
        program: &str,
        args: &[&str],
        envs: &[(&str, &str)],
        dir: Option<&Path>,
    ) -> (i64, String) {
        let owner = self.owner.take();
        let CommandOutcome {
            code, stdout: out, ..
        } = self.run_full(program, args, envs, dir).await;
        self.owner = owner;
        (code, out)
    }

    /// Runs a command and keeps its output under a `$ command` line.
    pub async fn run(
        &mut self,
        program: &str,
        args: &[&str],
        envs: &[(&str, &str)],
        dir: Option<&Path>,
    ) -> (i64, String) {
        let CommandOutcome {
            code, stdout: out, ..
        } = self.run_full(program, args, envs, dir).await;
        (code, out)
    }

    /// [`Log::run`], answering the errors too.
    pub async fn run_full(
        &mut self,
        program: &str,
        args: &[&str],
        envs: &[(&str, &str)],
        dir: Option<&Path>,
    ) -> CommandOutcome {
        let root = Owner::root();
        let owner = self.owner.as_ref().unwrap_or(&root);
        let CommandOutcome {
            code,
            stdout: out,
            stderr: err,
        } = run_as(owner, program, args, envs, dir, COMMAND_TIMEOUT).await;
        self.out
            .push_str(&format!("$ {program} {}\n{out}", args.join(" ")));
        if !err.is_empty() {
            self.err
                .push_str(&format!("$ {program} {}\n{err}", args.join(" ")));
        }
        CommandOutcome {
            code,
            stdout: out,
            stderr: err,
        }
    }

    /// The outcome with this transcript.
    pub fn outcome(self, exit_code: i64, note: Option<String>) -> Outcome {
        Outcome {
            exit_code,
            stdout: self.out,
            stderr: self.err,
            note,
        }
    }
}

/// The packages an upgrade installed that were not there before (what a rollback removes).
pub fn fresh<'a, V>(
    before: &std::collections::BTreeMap<String, V>,
    after: &'a std::collections::BTreeMap<String, V>,
) -> Vec<&'a str> {
    after
        .keys()
        .filter(|n| !before.contains_key(*n))
        .map(String::as_str)
        .collect()
}

/// How a rollback ended, as every OS manager reports it: `rolled back: <why>` when the
/// package database is back to `before` (and `audit`, a database check's complaint, is
/// empty), else `rollback failed: <why>; still different: ` up to ten packages with what
/// they were (`show`), or the check's name when only it complains.
pub fn rollback_verdict<V: PartialEq>(
    log: Log,
    exit: i64,
    why: &str,
    before: &std::collections::BTreeMap<String, V>,
    restored: &std::collections::BTreeMap<String, V>,
    show: impl Fn(&V) -> String,
    audit: Option<&str>,
) -> Outcome {
    if restored == before && audit.is_none() {
        return log.outcome(exit, Some(format!("rolled back: {why}")));
    }
    let differ: Vec<String> = before
        .iter()
        .filter(|(n, v)| restored.get(*n) != Some(*v))
        .map(|(n, v)| format!("{n} (was {})", show(v)))
        .take(10)
        .collect();
    let still = if differ.is_empty() {
        audit.unwrap_or_default().to_owned()
    } else {
        differ.join(", ")
    };
    log.outcome(
        exit,
        Some(format!("rollback failed: {why}; still different: {still}")),
    )
}

/// Where a patch keeps its snapshot: `<state dir>/patches/<jti>`.
pub fn snapshot_dir(state_dir: &Path, jti: &str) -> Result<PathBuf, String> {
    if jti.is_empty() || !jti.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return Err("bad token id".into());
    }
    let dir = state_dir.join("patches").join(jti);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}

/// One patch at a time on this host: package managers hold a lock of their own, and a
/// snapshot is only true while nothing else changes the packages.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// `install_package` (CONTRACT 19): `args.manager` with `args.packages`; managers this host
/// does not allow (`patch_managers` in actions.toml) are refused. Patches run one after
/// another.
pub async fn install_package(
    args: &Value,
    allowed: &crate::actions::allow::Allowlist,
    state_dir: &Path,
    jti: &str,
) -> Outcome {
    let manager = args["manager"].as_str().unwrap_or_default();
    if !allowed.manager(manager) {
        return Outcome::refused(
            1,
            format!("not installed: `{manager}` is not on this host's patch_managers"),
        );
    }
    let targets = match targets(args) {
        Ok(t) => t,
        Err(e) => return Outcome::refused(1, format!("not installed: {e}")),
    };
    let dir = match snapshot_dir(state_dir, jti) {
        Ok(d) => d,
        Err(e) => return Outcome::refused(1, format!("not installed: {e}")),
    };
    let _turn = ONE_AT_A_TIME.lock().await;
    match manager {
        "apt" => apt::install(&targets, &dir).await,
        "dnf" => dnf::install(&targets, &dir).await,
        "zypper" => zypper::install(&targets, &dir).await,
        "apk" => apk::install(&targets, &dir).await,
        other => Outcome::refused(
            1,
            format!("not installed: this agent cannot patch with `{other}` yet"),
        ),
    }
}

/// `update_packages` (CONTRACT 19): `args.ecosystem` in `args.project_path` with
/// `args.packages`; ecosystems this host does not allow (`patch_managers`) and projects
/// outside its `project_paths` are refused. Patches run one after another.
pub async fn update_packages(
    args: &Value,
    allowed: &crate::actions::allow::Allowlist,
    state_dir: &Path,
    jti: &str,
) -> Outcome {
    let ecosystem = args["ecosystem"].as_str().unwrap_or_default();
    // The allowlist names managers by their program: bundler and go for RubyGems and Go.
    let manager = match ecosystem {
        "RubyGems" => "bundler",
        "Go" => "go",
        other => other,
    };
    if !allowed.manager(manager) {
        return Outcome::refused(
            1,
            format!("not installed: `{ecosystem}` is not on this host's patch_managers"),
        );
    }
    let path = Path::new(args["project_path"].as_str().unwrap_or_default());
    if !allowed.project(path) {
        return Outcome::refused(
            1,
            format!(
                "not installed: `{}` is not under this host's project_paths",
                path.display()
            ),
        );
    }
    // The folder as the file system resolves it: a symbolic link cannot lead outside.
    let project = match std::fs::canonicalize(path) {
        Err(e) => {
            return Outcome::refused(1, format!("not installed: `{}`: {e}", path.display()));
        }
        Ok(p) if !allowed.project(&p) => {
            return Outcome::refused(
                1,
                format!(
                    "not installed: `{}` leads outside this host's project_paths",
                    p.display()
                ),
            );
        }
        Ok(p) if !p.is_dir() => {
            return Outcome::refused(
                1,
                format!("not installed: `{}` is not a folder", path.display()),
            );
        }
        Ok(p) => p,
    };
    let targets = match targets(args) {
        Ok(t) => t,
        Err(e) => return Outcome::refused(1, format!("not installed: {e}")),
    };
    let dir = match snapshot_dir(state_dir, jti) {
        Ok(d) => d,
        Err(e) => return Outcome::refused(1, format!("not installed: {e}")),
    };
    let _turn = ONE_AT_A_TIME.lock().await;
    deps::update(ecosystem, &project, &targets, &dir).await
}
