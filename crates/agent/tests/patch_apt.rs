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

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const AGENT: &str = env!("CARGO_BIN_EXE_trusthub-agent");

struct Rig {
    dir: PathBuf,
    root: PathBuf,
    repo: PathBuf,
}

impl Drop for Rig {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn sh(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("run");
    assert!(
        out.status.success(),
        "{cmd:?}\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A package `name` at `version`: one file, and a postinst exiting `postinst_exit` when given;
/// `depends` as its Depends field.
fn package(
    rig: &Rig,
    name: &str,
    version: &str,
    postinst_exit: Option<i32>,
    depends: Option<&str>,
) {
    let build = rig.dir.join("build").join(format!("{name}-{version}"));
    std::fs::create_dir_all(build.join("DEBIAN")).expect("debian");
    std::fs::create_dir_all(build.join(format!("usr/share/{name}"))).expect("share");
    std::fs::write(build.join(format!("usr/share/{name}/version")), version).expect("file");
    let mut control = format!(
        "Package: {name}\nVersion: {version}\nArchitecture: all\nMaintainer: Trusthub tests <tests@trusthub.local>\nDescription: test package\n"
    );
    if let Some(d) = depends {
        control.push_str(&format!("Depends: {d}\n"));
    }
    std::fs::write(build.join("DEBIAN/control"), control).expect("control");
    if let Some(code) = postinst_exit {
        let script = build.join("DEBIAN/postinst");
        std::fs::write(&script, format!("#!/bin/sh\nexit {code}\n")).expect("postinst");
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .expect("chmod");
    }
    sh(Command::new("dpkg-deb")
        .args(["-Zgzip", "--build"])
        .arg(&build)
        .arg(&rig.repo));
}

fn index(rig: &Rig) {
    let packages = sh(Command::new("apt-ftparchive")
        .args(["packages", "."])
        .current_dir(&rig.repo));
    std::fs::write(rig.repo.join("Packages"), packages.stdout).expect("Packages");
    let release = sh(Command::new("apt-ftparchive")
        .args(["release", "."])
        .current_dir(&rig.repo));
    std::fs::write(rig.repo.join("Release"), release.stdout).expect("Release");
}

fn envs(rig: &Rig) -> Vec<(String, String)> {
    vec![
        (
            "APT_CONFIG".into(),
            rig.root.join("apt.conf").display().to_string(),
        ),
        ("DPKG_ROOT".into(), rig.root.display().to_string()),
        (
            "DPKG_ADMINDIR".into(),
            rig.root.join("var/lib/dpkg").display().to_string(),
        ),
    ]
}

fn rig() -> Rig {
    let dir = std::env::temp_dir().join(format!("apt-rig-{}", uuid::Uuid::new_v4().simple()));
    let root = dir.join("root");
    let repo = dir.join("repo");
    for d in [
        "var/lib/dpkg/updates",
        "var/lib/dpkg/info",
        "var/lib/dpkg/triggers",
        "var/cache/apt/archives/partial",
        "var/lib/apt/lists/partial",
        "var/log/apt",
        "etc/apt/apt.conf.d",
        "etc/apt/preferences.d",
        "tmp",
    ] {
        std::fs::create_dir_all(root.join(d)).expect("dir");
    }
    std::fs::create_dir_all(&repo).expect("repo");
    std::fs::write(root.join("var/lib/dpkg/status"), "").expect("status");
    std::fs::write(root.join("var/lib/dpkg/available"), "").expect("available");
    // A shell for maintainer scripts, which dpkg runs chrooted in the root: dash and the
    // libraries ldd names.
    let shell = root.join("bin/sh");
    std::fs::create_dir_all(shell.parent().expect("bin")).expect("bin");
    std::fs::copy("/bin/dash", &shell).expect("dash");
    let ldd = sh(Command::new("ldd").arg("/bin/dash"));
    for lib in String::from_utf8_lossy(&ldd.stdout)
        .split_whitespace()
        .filter(|w| w.starts_with('/'))
    {
        let to = root.join(lib.trim_start_matches('/'));
        std::fs::create_dir_all(to.parent().expect("lib")).expect("lib dir");
        std::fs::copy(lib, &to).expect("lib");
    }
    std::fs::write(
        root.join("etc/apt/sources.list"),
        format!("deb [trusted=yes] file:{} ./\n", repo.display()),
    )
    .expect("sources");
    let r = root.display();
    std::fs::write(
        root.join("apt.conf"),
        format!(
            "Dir \"{r}/\";\nDir::State::status \"{r}/var/lib/dpkg/status\";\n\
             Dir::Etc::sourcelist \"{r}/etc/apt/sources.list\";\nDir::Etc::sourceparts \"-\";\n\
             Dir::Bin::dpkg \"/usr/bin/dpkg\";\nDir::Bin::methods \"/usr/lib/apt/methods\";\n\
             Dir::Log \"{r}/var/log/apt\";\nAPT::Sandbox::User \"root\";\n\
             DPkg::Options {{ \"--root={r}\"; }};\n"
        ),
    )
    .expect("apt.conf");
    Rig { dir, root, repo }
}

fn apt_get(rig: &Rig, args: &[&str]) {
    sh(Command::new("apt-get").args(args).envs(envs(rig)));
}

/// The whole package database: `name version status` per line.
fn database(rig: &Rig) -> String {
    let out = sh(Command::new("dpkg-query")
        .args(["-W", "-f", "${Package} ${Version} ${db:Status-Abbrev}\n"])
        .envs(envs(rig)));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

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

fn installed_file(rig: &Rig, name: &str) -> String {
    std::fs::read_to_string(rig.root.join(format!("usr/share/{name}/version"))).unwrap_or_default()
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
