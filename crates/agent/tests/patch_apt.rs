//! `install_package` with apt, against the real apt and dpkg of this machine (CONTRACT 19):
//! a local repository built with `dpkg-deb` and `apt-ftparchive`, used through a `file:`
//! source marked trusted, and a package database of its own (`APT_CONFIG`, `DPKG_ROOT`,
//! `DPKG_ADMINDIR`, which apt and dpkg honour) so the host's own packages are never touched.
//! Maintainer scripts run chrooted in that root, with a shell copied in.
//!
//! Each case runs the agent's `patch` command, the same code an auto-patch action runs:
//! an upgrade to the target, a broken upgrade (its postinst fails) rolled back to exactly
//! the previous package database, a target the repository does not have and an upgrade apt
//! cannot resolve, both changing nothing.

mod apt_rig;

use apt_rig::*;
use std::path::{Path, PathBuf};
use std::process::Command;

const AGENT: &str = env!("CARGO_BIN_EXE_trusthub-agent");

fn patch(rig: &Rig, packages: &[&str]) -> (i32, String) {
    let out = Command::new(AGENT)
        .args(["patch", "--manager", "apt", "--state-dir"])
        .arg(rig.dir.join("agent"))
        .args(packages)
        .envs(envs(rig))
        .output()
        .expect("agent");
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

fn root_path(p: &Path) -> String {
    p.display().to_string()
}

#[test]
fn apt_patches_upgrade_roll_back_a_broken_upgrade_and_change_nothing_on_failure() {
    let rig = rig();
    package(&rig, "demo", "1.0-1", None, None);
    package(&rig, "demo", "1.0-2", None, None);
    package(&rig, "demo", "1.1-1", None, None);
    package(&rig, "broken", "1.0", None, None);
    package(&rig, "broken", "2.0", Some(1), None);
    package(&rig, "pinned", "1.0", None, None);
    package(&rig, "needy", "1.0", None, None);
    package(&rig, "needy", "2.0", None, Some("not-in-any-repository"));
    index(&rig);
    apt_get(&rig, &["update", "-q"]);
    apt_get(
        &rig,
        &[
            "install",
            "-y",
            "-q",
            "demo=1.0-1",
            "broken=1.0",
            "pinned=1.0",
            "needy=1.0",
        ],
    );
    assert_eq!(installed_file(&rig, "demo"), "1.0-1");

    // The target is 1.0-2; the candidate 1.1-1 reaches it, and is what apt installs.
    let (code, out) = patch(&rig, &["demo=1.0-2"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("exit code 0"), "{out}");
    assert!(
        database(&rig).contains("demo 1.1-1 ii"),
        "{}",
        database(&rig)
    );
    assert_eq!(installed_file(&rig, "demo"), "1.1-1");
    // The snapshot kept the installed .deb and the states before.
    let snapshots: Vec<PathBuf> = std::fs::read_dir(rig.dir.join("agent/patches"))
        .expect("patches")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    assert_eq!(snapshots.len(), 1);
    assert!(
        snapshots[0].join("demo_1.0-1_all.deb").exists(),
        "{}",
        root_path(&snapshots[0])
    );
    assert!(
        std::fs::read_to_string(snapshots[0].join("status-before.txt"))
            .expect("states")
            .contains("demo\t1.0-1\tii")
    );

    // broken 2.0's postinst fails: dpkg leaves it half-configured; the agent puts 1.0 back.
    let before = database(&rig);
    let (code, out) = patch(&rig, &["broken=2.0"]);
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("rolled back:"), "{out}");
    assert_eq!(database(&rig), before, "the package database is as it was");
    assert_eq!(installed_file(&rig, "broken"), "1.0");
    let audit = sh(Command::new("dpkg").arg("--audit").envs(envs(&rig)));
    assert!(
        audit.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&audit.stdout)
    );

    // A target the repository does not have: nothing changes, the exit code says so.
    let (code, out) = patch(&rig, &["pinned=2.0"]);
    assert_eq!(code, 100, "{out}");
    assert!(
        out.contains("not installed: pinned 2.0 is not available"),
        "{out}"
    );
    assert_eq!(database(&rig), before);

    // An upgrade apt cannot resolve (a dependency no repository has): nothing changes.
    let (code, out) = patch(&rig, &["needy=2.0"]);
    assert_ne!(code, 0, "{out}");
    assert!(
        out.contains("not installed: apt cannot resolve the upgrade"),
        "{out}"
    );
    assert_eq!(database(&rig), before);

    // Names that could pass for options are refused before anything runs.
    let (code, out) = patch(&rig, &["-oAPT::X=1=1.0"]);
    assert_ne!(code, 0, "{out}");
    assert_eq!(database(&rig), before);
}
