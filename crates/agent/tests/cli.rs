//! The agent's own commands as an operator types them: `status` only reads and honours the
//! global `--state-dir`, survives a closed pipe, and `install` points the unit at an
//! installed binary, not at the build directory.

use std::path::PathBuf;
use std::process::{Command, Stdio};

struct Dir(PathBuf);
impl Dir {
    fn new(name: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("th-agent-cli-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("dir");
        Dir(d)
    }
}
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn agent() -> Command {
    Command::new(env!("CARGO_BIN_EXE_trusthub-agent"))
}

fn run(cmd: &mut Command) -> (i32, String, String) {
    let out = cmd.output().expect("run trusthub-agent");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn status_reads_the_given_state_dir_and_changes_nothing() {
    let tmp = Dir::new("status");
    // The global flag before the command, and the command's own flag.
    let state = tmp.0.join("state");
    std::fs::create_dir_all(&state).expect("mkdir");
    for args in [
        vec!["--state-dir", state.to_str().expect("utf-8"), "status"],
        vec!["status", "--state-dir", state.to_str().expect("utf-8")],
    ] {
        let (code, out, err) = run(agent().args(&args));
        assert_eq!(code, 0, "{args:?}: {out}{err}");
        assert!(out.contains(state.to_str().expect("utf-8")), "{out}");
        assert!(out.contains("none yet"), "no key is made by status: {out}");
        assert!(!state.join("signing.key").exists(), "status created a key");
        assert!(!state.join("spool").exists(), "status created the spool");
    }
    // A state dir that does not exist is said so, and not created.
    let missing = tmp.0.join("missing");
    let (code, _, err) =
        run(agent().args(["--state-dir", missing.to_str().expect("utf-8"), "status"]));
    assert_eq!(code, 1);
    assert!(
        err.contains("no agent state in") && err.contains("missing"),
        "{err}"
    );
    assert!(!missing.exists(), "status created the state dir");
}

#[test]
fn status_into_a_closed_pipe_does_not_panic() {
    let tmp = Dir::new("pipe");
    for _ in 0..5 {
        let mut child = agent()
            .args(["--state-dir", tmp.0.to_str().expect("utf-8"), "status"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        // The reader goes away before the agent writes (like `| head` that has enough).
        drop(child.stdout.take());
        let out = child.wait_with_output().expect("wait");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{err}");
        assert_eq!(out.status.code(), Some(0), "{err}");
    }
}

#[test]
fn install_copies_the_binary_and_the_unit_runs_the_installed_one() {
    let tmp = Dir::new("install");
    let binary = tmp.0.join("bin/trusthub-agent");
    let (code, out, err) = run(agent().args([
        "install",
        "--unit-dir",
        tmp.0.to_str().expect("utf-8"),
        "--binary",
        binary.to_str().expect("utf-8"),
        "--state-dir",
        "/var/lib/trusthub-agent",
    ]));
    assert_eq!(code, 0, "{out}{err}");
    let installed = std::fs::metadata(&binary).expect("binary installed");
    let built = std::fs::metadata(env!("CARGO_BIN_EXE_trusthub-agent")).expect("built");
    assert_eq!(installed.len(), built.len());
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(installed.permissions().mode() & 0o777, 0o755);
    let unit = std::fs::read_to_string(tmp.0.join("trusthub-agent.service")).expect("unit");
    assert!(
        unit.contains(&format!(
            "ExecStart={} run --state-dir /var/lib/trusthub-agent",
            binary.display()
        )),
        "{unit}"
    );
    assert!(
        !unit.contains("target/"),
        "the unit must not run the build output: {unit}"
    );
}

#[test]
fn enroll_without_a_hub_or_token_says_what_it_needs() {
    let tmp = Dir::new("enroll");
    let (code, _, err) =
        run(agent().args(["enroll", "--state-dir", tmp.0.to_str().expect("utf-8")]));
    assert_eq!(code, 1);
    assert!(err.contains("--hub") && err.contains("--enroll"), "{err}");
}

#[test]
fn dependencies_prints_what_the_inventory_would_report_with_a_count_per_source() {
    let tmp = Dir::new("deps");
    let project = tmp.0.join("web");
    std::fs::create_dir_all(&project).expect("dir");
    std::fs::write(
        project.join("requirements.txt"),
        "flask==3.0.0\nsphinx>=4\n",
    )
    .expect("req");
    std::fs::write(project.join("yarn.lock"), "not a yarn lockfile at all\n").expect("yarn");
    // A go.mod without requirements: a source with no package, still listed.
    std::fs::create_dir_all(tmp.0.join("tool")).expect("tool");
    std::fs::write(tmp.0.join("tool/go.mod"), "module example.com/tool\n").expect("go.mod");
    let (code, out, err) = run(agent()
        .args(["dependencies", "--project-path"])
        .arg(&tmp.0)
        .args([
            "--binary-path",
            "/nonexistent",
            "--no-process-discovery",
            "--no-system",
        ]));
    assert_eq!(code, 0, "{err}");
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    let flask = lines.iter().find(|e| e["name"] == "flask").expect("flask");
    assert_eq!(flask["version"], "3.0.0");
    assert_eq!(flask["format"], "requirements");
    let sphinx = lines
        .iter()
        .find(|e| e["name"] == "sphinx")
        .expect("sphinx");
    assert_eq!(sphinx["version"], "", "unpinned: no version");
    let yarn = lines
        .iter()
        .find(|e| {
            e["source"]
                .as_str()
                .is_some_and(|s| s.ends_with("yarn.lock"))
        })
        .expect("the yarn.lock");
    assert!(yarn["error"].is_string(), "{yarn}");
    assert!(
        err.contains("requirements.txt (requirements): 2 packages"),
        "{err}"
    );
    assert!(err.contains("yarn.lock (yarn): cannot be read"), "{err}");
    assert!(err.contains("go.mod (go-mod): 0 packages"), "{err}");
    let gomod = lines
        .iter()
        .find(|e| e["source"].as_str().is_some_and(|s| s.ends_with("go.mod")))
        .expect("the go.mod");
    assert!(
        gomod.get("name").is_none() && gomod.get("error").is_none(),
        "{gomod}"
    );
    assert!(err.ends_with("2 packages from 3 sources\n"), "{err}");
}
