//! Running a program on this host: no shell, no stdin, a time limit, killed when dropped,
//! as root or as a project's owner (CONTRACT 30).

use super::owner::Owner;
use std::path::Path;
use std::time::Duration;

/// What a program did, as an action's result reports it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandOutcome {
    /// Its exit code: 0 for success; -1 when it could not start, was killed by a signal or
    /// overran its time limit.
    pub code: i64,
    /// What it printed.
    pub stdout: String,
    /// Its errors.
    pub stderr: String,
}

impl CommandOutcome {
    /// Success that printed `stdout`.
    pub fn ok(stdout: impl Into<String>) -> CommandOutcome {
        CommandOutcome {
            code: 0,
            stdout: stdout.into(),
            stderr: String::new(),
        }
    }

    /// A failure with exit code `code` and the reason `stderr`, nothing printed.
    pub fn failed(code: i64, stderr: impl Into<String>) -> CommandOutcome {
        CommandOutcome {
            code,
            stdout: String::new(),
            stderr: stderr.into(),
        }
    }

    /// Whether it exited 0.
    pub fn succeeded(&self) -> bool {
        self.code == 0
    }
}

/// Whether `program` is on `PATH`.
pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(program).is_file()))
}

/// Longest one package-manager command may take.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// Runs `program args` with `envs`, in `dir` when given: its [`CommandOutcome`];
/// -1 when it cannot start or overruns [`COMMAND_TIMEOUT`].
pub async fn run(
    program: &str,
    args: &[&str],
    envs: &[(&str, &str)],
    dir: Option<&Path>,
) -> CommandOutcome {
    run_for(program, args, envs, dir, COMMAND_TIMEOUT).await
}

/// [`run`] with its own time limit: every command an action runs goes through here (no
/// shell, no stdin, killed when dropped). Output is bounded where the answer is built.
pub async fn run_for(
    program: &str,
    args: &[&str],
    envs: &[(&str, &str)],
    dir: Option<&Path>,
    limit: Duration,
) -> CommandOutcome {
    run_as(&Owner::root(), program, args, envs, dir, limit).await
}

/// [`run_for`] as `owner` (CONTRACT 30): a project's tools run as the project's owner with a
/// clean environment; root runs keep the agent's environment.
pub async fn run_as(
    owner: &Owner,
    program: &str,
    args: &[&str],
    envs: &[(&str, &str)],
    dir: Option<&Path>,
    limit: Duration,
) -> CommandOutcome {
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    owner.apply(&mut cmd, envs);
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    match tokio::time::timeout(limit, cmd.output()).await {
        Ok(Ok(out)) => CommandOutcome {
            code: i64::from(out.status.code().unwrap_or(-1)),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        },
        Ok(Err(e)) => CommandOutcome::failed(-1, format!("cannot run {program}: {e}")),
        Err(_) => CommandOutcome::failed(
            -1,
            format!("{program} did not finish within {} s", limit.as_secs()),
        ),
    }
}
