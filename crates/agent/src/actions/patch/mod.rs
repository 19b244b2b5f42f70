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
use std::collections::BTreeMap;
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
    fn refused(code: i64, end: PatchEnd) -> Outcome {
        let note = end.to_string();
        Outcome {
            exit_code: code,
            stdout: String::new(),
            stderr: note.clone(),
            note: Some(note),
        }
    }
}

/// A command's outcome as an action's result (no note: it says for itself how it ended).
impl From<CommandOutcome> for Outcome {
    fn from(c: CommandOutcome) -> Outcome {
        Outcome {
            exit_code: c.code,
            stdout: c.stdout,
            stderr: c.stderr,
            note: None,
        }
    }
}

/// How a patch that did not reach its targets ended; the result's note says it in these
/// words, which the hub and the dashboard show as they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchEnd {
    /// Nothing changed: the patch was refused or failed before changing anything.
    NotInstalled(String),
    /// Something changed and the snapshot was put back.
    RolledBack(String),
    /// Something changed and could not be put back entirely: the host needs a look.
    RollbackFailed(String),
}

impl std::fmt::Display for PatchEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PatchEnd::NotInstalled(why) => write!(f, "not installed: {why}"),
            PatchEnd::RolledBack(why) => write!(f, "rolled back: {why}"),
            PatchEnd::RollbackFailed(why) => write!(f, "rollback failed: {why}"),
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
        let answer = self.run(program, args, envs, dir).await;
        self.owner = owner;
        answer
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

    /// [`Log::run`] for a step that must succeed: its output, or `(exit code, "<what> exited
    /// <code>")`.
    pub async fn step(
        &mut self,
        what: &str,
        program: &str,
        args: &[&str],
        envs: &[(&str, &str)],
        dir: Option<&Path>,
    ) -> Result<String, (i64, String)> {
        match self.run(program, args, envs, dir).await {
            (0, out) => Ok(out),
            (code, _) => Err((code, format!("{what} exited {code}"))),
        }
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
    pub fn outcome(self, exit_code: i64, end: Option<PatchEnd>) -> Outcome {
        Outcome {
            exit_code,
            stdout: self.out,
            stderr: self.err,
            note: end.as_ref().map(PatchEnd::to_string),
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
        return log.outcome(exit, Some(PatchEnd::RolledBack(why.to_owned())));
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
        Some(PatchEnd::RollbackFailed(format!(
            "{why}; still different: {still}"
        ))),
    )
}

/// A distribution's package manager (CONTRACT 19): the steps of a patch, which [`patch_with`]
/// runs in order: the package states, a check that every target can be reached, a snapshot,
/// the upgrade, its verification, and a restore when it does not verify.
pub(super) trait PackageManager {
    /// What the package database holds for one name (a version, or several, and a status).
    type Installed: PartialEq;
    /// What a restore needs besides the states before the upgrade.
    type Snapshot;
    /// The upgrade command as notes name it (`dnf upgrade exited 1`).
    const UPGRADE: &'static str;
    /// Whether a failed upgrade is still verified (apt reports every problem at once).
    const VERIFY_A_FAILED_UPGRADE: bool = false;

    /// Every installed package by name.
    async fn states(&self, log: &mut Log) -> Result<BTreeMap<String, Self::Installed>, String>;
    /// The installed version a target is compared with, for notes and verification.
    fn version(installed: &Self::Installed) -> Option<String>;
    /// The newest version the repositories offer for `name`; `Err((exit, why))` when the
    /// manager cannot say.
    async fn newest(&self, log: &mut Log, name: &str) -> Result<Option<String>, (i64, String)>;
    /// Whether `have` reaches `want`, in the manager's own version order.
    async fn at_least(&self, have: &str, want: &str) -> bool;

    /// Refuses, changing nothing, a target that is not installed or that the repositories
    /// cannot bring to its version.
    async fn check(
        &self,
        log: &mut Log,
        targets: &[Target],
        before: &BTreeMap<String, Self::Installed>,
    ) -> Result<(), (i64, String)> {
        for t in targets {
            if !before.contains_key(&t.name) {
                return Err((1, format!("{} is not installed", t.name)));
            }
            match self.newest(log, &t.name).await? {
                None => return Err((1, format!("no version of {} is available", t.name))),
                Some(v) if !self.at_least(&v, &t.version).await => {
                    return Err((
                        1,
                        format!(
                            "{}'s newest version {v} does not reach {}",
                            t.name, t.version
                        ),
                    ));
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// Keeps what a restore needs (in `dir`); `Err((exit, why))` refuses, changing nothing.
    async fn snapshot(
        &self,
        log: &mut Log,
        targets: &[Target],
        before: &BTreeMap<String, Self::Installed>,
        dir: &Path,
    ) -> Result<Self::Snapshot, (i64, String)>;

    /// Runs the upgrade: its exit code, and a failed package script the code alone may not
    /// tell.
    async fn install(&self, log: &mut Log, targets: &[Target]) -> (i64, Option<String>);

    /// What is wrong with the result: a target below its version or gone (the first one),
    /// then the database's own check.
    async fn verify(
        &self,
        log: &mut Log,
        targets: &[Target],
        after: &BTreeMap<String, Self::Installed>,
    ) -> Vec<String> {
        for t in targets {
            match after.get(&t.name).and_then(Self::version) {
                Some(v) if self.at_least(&v, &t.version).await => {}
                Some(v) => return vec![format!("{} is {v}, not {}", t.name, t.version)],
                None => return vec![format!("{} is gone", t.name)],
            }
        }
        self.check_database(log).await.into_iter().collect()
    }

    /// The database's own consistency check after an upgrade (`dnf check`), if it has one.
    async fn check_database(&self, _log: &mut Log) -> Option<String> {
        None
    }

    /// Puts back what the upgrade changed; `Ok` with the name of a database check that
    /// still complains, `Err(why)` when there is nothing to restore from.
    async fn restore(
        &self,
        log: &mut Log,
        snapshot: Self::Snapshot,
        before: &BTreeMap<String, Self::Installed>,
        after: &BTreeMap<String, Self::Installed>,
    ) -> Result<Option<&'static str>, String>;

    /// How a package that is still different after a restore is shown (`was …`).
    fn show(installed: &Self::Installed) -> String;
}

/// A patch with `manager`: states, check, snapshot, upgrade, verification, and a restore
/// when the result does not verify. A failed upgrade that changed nothing is reported as
/// `not installed`.
pub(super) async fn patch_with<M: PackageManager>(
    manager: &M,
    targets: &[Target],
    dir: &Path,
) -> Outcome {
    let mut log = Log::default();
    let not_installed =
        |log: Log, code: i64, why: String| log.outcome(code, Some(PatchEnd::NotInstalled(why)));
    let before = match manager.states(&mut log).await {
        Ok(s) => s,
        Err(why) => return not_installed(log, 1, why),
    };
    if let Err((code, why)) = manager.check(&mut log, targets, &before).await {
        return not_installed(log, code, why);
    }
    let snapshot = match manager.snapshot(&mut log, targets, &before, dir).await {
        Ok(s) => s,
        Err((code, why)) => return not_installed(log, code, why),
    };
    let (code, script_failed) = manager.install(&mut log, targets).await;
    let after = manager.states(&mut log).await.unwrap_or_default();
    let exit = if code != 0 { code } else { 1 };
    let exited = format!("{} exited {code}", M::UPGRADE);
    let why = match script_failed {
        Some(why) => why,
        None if code != 0 && !M::VERIFY_A_FAILED_UPGRADE => {
            if after == before {
                return not_installed(log, code, exited);
            }
            exited
        }
        None => {
            let mut problems = if code != 0 { vec![exited] } else { Vec::new() };
            problems.extend(manager.verify(&mut log, targets, &after).await);
            if problems.is_empty() {
                return log.outcome(0, None);
            }
            let why = problems.join("; ");
            // Nothing changed: there is nothing to roll back.
            if after == before {
                return not_installed(log, exit, why);
            }
            why
        }
    };
    match manager.restore(&mut log, snapshot, &before, &after).await {
        Err(e) => log.outcome(exit, Some(PatchEnd::RollbackFailed(format!("{why}; {e}")))),
        Ok(audit) => {
            let restored = manager.states(&mut log).await.unwrap_or_default();
            rollback_verdict(log, exit, &why, &before, &restored, M::show, audit)
        }
    }
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

/// The newest of `versions` by a manager's own order (`at_least(have, want)`), the first of
/// equals.
async fn newest(
    versions: Vec<String>,
    at_least: impl AsyncFn(&str, &str) -> bool,
) -> Option<String> {
    let mut best: Option<String> = None;
    for v in versions {
        let newer = match &best {
            None => true,
            Some(b) => !at_least(b, &v).await,
        };
        if newer {
            best = Some(v);
        }
    }
    best
}

/// An action refused before anything changed: `not installed: <why>`.
fn not_installed(why: String) -> Outcome {
    Outcome::refused(1, PatchEnd::NotInstalled(why))
}

/// What every patch reads before it starts: its targets and its snapshot's folder.
fn prepared(args: &Value, state_dir: &Path, jti: &str) -> Result<(Vec<Target>, PathBuf), String> {
    Ok((targets(args)?, snapshot_dir(state_dir, jti)?))
}

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
        return not_installed(format!("`{manager}` is not on this host's patch_managers"));
    }
    let (targets, dir) = match prepared(args, state_dir, jti) {
        Ok(p) => p,
        Err(e) => return not_installed(e),
    };
    let _turn = ONE_AT_A_TIME.lock().await;
    match manager {
        "apt" => patch_with(&apt::Apt, &targets, &dir).await,
        "dnf" => patch_with(&dnf::Dnf, &targets, &dir).await,
        "zypper" => patch_with(&zypper::Zypper, &targets, &dir).await,
        "apk" => patch_with(&apk::Apk, &targets, &dir).await,
        other => not_installed(format!("this agent cannot patch with `{other}` yet")),
    }
}

/// The project folder `args.project_path` names, as the file system resolves it (a symbolic
/// link cannot lead outside), when this host lets `ecosystem` patch there.
fn allowed_project(
    args: &Value,
    allowed: &crate::actions::allow::Allowlist,
    ecosystem: &str,
) -> Result<PathBuf, String> {
    // The allowlist names managers by their program: bundler and go for RubyGems and Go.
    let manager = match ecosystem {
        "RubyGems" => "bundler",
        "Go" => "go",
        other => other,
    };
    if !allowed.manager(manager) {
        return Err(format!(
            "`{ecosystem}` is not on this host's patch_managers"
        ));
    }
    let path = Path::new(args["project_path"].as_str().unwrap_or_default());
    if !allowed.project(path) {
        return Err(format!(
            "`{}` is not under this host's project_paths",
            path.display()
        ));
    }
    let p = std::fs::canonicalize(path).map_err(|e| format!("`{}`: {e}", path.display()))?;
    if !allowed.project(&p) {
        return Err(format!(
            "`{}` leads outside this host's project_paths",
            p.display()
        ));
    }
    if !p.is_dir() {
        return Err(format!("`{}` is not a folder", path.display()));
    }
    Ok(p)
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
    let started = allowed_project(args, allowed, ecosystem)
        .and_then(|project| Ok((project, prepared(args, state_dir, jti)?)));
    let (project, (targets, dir)) = match started {
        Ok(s) => s,
        Err(e) => return not_installed(e),
    };
    let _turn = ONE_AT_A_TIME.lock().await;
    deps::update(ecosystem, &project, &targets, &dir).await
}
