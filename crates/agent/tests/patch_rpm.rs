//! `install_package` with dnf and with zypper, against the real dnf, zypper and rpm of this
//! machine (CONTRACT 19): a local repository of packages built with `rpmbuild` and indexed
//! with `createrepo_c`, used through a root of its own. The `dnf`, `zypper` and `rpm` the
//! agent finds on its `PATH` are two-line wrappers adding `--installroot`/`--root` and the
//! rig's configuration (how an operator would point them at a chroot), so the host is never
//! touched. Scriptlets are Lua, run by rpm itself (no shell in the root).
//!
//! Cases, through the agent's `patch` command: an upgrade to the repository's newest version,
//! a broken upgrade (its %post fails) rolled back with `dnf history rollback` to exactly the
//! previous package list, a target the repository does not reach and an upgrade dnf cannot
//! resolve, both changing nothing.

use std::path::PathBuf;
use std::process::Command;

const AGENT: &str = env!("CARGO_BIN_EXE_trusthub-agent");

struct Rig {
    dir: PathBuf,
}

impl Drop for Rig {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn sh(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run");
    assert!(
        out.status.success(),
        "{cmd:?}\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const SPEC: &str = r#"Name: %{pkgname}
Version: %{pkgver}
Release: 1
Summary: test package
License: MIT
BuildArch: noarch
%{?req:Requires: %{req}}
%description
A package of the Trusthub dnf rig.
%install
mkdir -p %{buildroot}/usr/share/%{name}
echo %{version} > %{buildroot}/usr/share/%{name}/version
%files
/usr/share/%{name}/version
%post -p <lua>
if "%{postfail}" == "1" then error("post failed") end
"#;

fn rig() -> Rig {
    let dir = std::env::temp_dir().join(format!("trusthub-dnf-{}", uuid::Uuid::new_v4().simple()));
    for d in ["repo", "root", "repos.d", "build", "bin", "agent"] {
        std::fs::create_dir_all(dir.join(d)).expect("rig dir");
    }
    std::fs::write(dir.join("demo.spec"), SPEC).expect("spec");
    std::fs::write(
        dir.join("dnf.conf"),
        format!(
            "[main]\ngpgcheck=0\nreposdir={}\ninstall_weak_deps=False\nkeepcache=True\n",
            dir.join("repos.d").display()
        ),
    )
    .expect("dnf.conf");
    std::fs::write(
        dir.join("repos.d/local.repo"),
        format!(
            "[local]\nname=local\nbaseurl=file://{}\ngpgcheck=0\nenabled=1\nmetadata_expire=0\n",
            dir.join("repo").display()
        ),
    )
    .expect("repo");
    let wrap = |name: &str, body: String| {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.join("bin").join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).expect("wrapper");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    };
    wrap(
        "dnf",
        format!(
            "exec /usr/bin/dnf -c {} --installroot={} --releasever=1 \"$@\"",
            dir.join("dnf.conf").display(),
            dir.join("root").display()
        ),
    );
    wrap(
        "rpm",
        format!(
            "exec /usr/bin/rpm --root {} \"$@\"",
            dir.join("root").display()
        ),
    );
    wrap(
        "zypper",
        format!(
            "exec /usr/bin/zypper --root {} \"$@\"",
            dir.join("root").display()
        ),
    );
    Rig { dir }
}

fn package(rig: &Rig, name: &str, version: &str, post_fails: bool, requires: Option<&str>) {
    let mut cmd = Command::new("rpmbuild");
    cmd.arg("-bb")
        .arg("--define")
        .arg(format!("_topdir {}", rig.dir.join("build").display()))
        .arg("--define")
        .arg(format!("pkgname {name}"))
        .arg("--define")
        .arg(format!("pkgver {version}"))
        .arg("--define")
        .arg(format!("postfail {}", u8::from(post_fails)));
    if let Some(r) = requires {
        cmd.arg("--define").arg(format!("req {r}"));
    }
    sh(cmd.arg(rig.dir.join("demo.spec")));
    let rpm = rig
        .dir
        .join(format!("build/RPMS/noarch/{name}-{version}-1.noarch.rpm"));
    std::fs::copy(
        &rpm,
        rig.dir.join("repo").join(rpm.file_name().expect("name")),
    )
    .expect("copy");
}

fn path_env(rig: &Rig) -> String {
    format!(
        "{}:{}",
        rig.dir.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn dnf(rig: &Rig, args: &[&str]) -> String {
    sh(Command::new(rig.dir.join("bin/dnf"))
        .args(args)
        .env("PATH", path_env(rig)))
}

/// The root's package list, as rpm itself reads it.
fn database(rig: &Rig) -> String {
    let mut lines: Vec<String> = sh(Command::new(rig.dir.join("bin/rpm")).args([
        "-qa",
        "--qf",
        "%{NAME} %{VERSION}-%{RELEASE}\\n",
    ]))
    .lines()
    .map(str::to_owned)
    .collect();
    lines.sort();
    lines.join("\n")
}

fn patch(rig: &Rig, packages: &[&str]) -> (i32, String) {
    patch_with(rig, "dnf", packages)
}

fn patch_with(rig: &Rig, manager: &str, packages: &[&str]) -> (i32, String) {
    let out = Command::new(AGENT)
        .args(["patch", "--manager", manager, "--state-dir"])
        .arg(rig.dir.join("agent"))
        .args(packages)
        .env("PATH", path_env(rig))
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
    std::fs::read_to_string(rig.dir.join(format!("root/usr/share/{name}/version")))
        .unwrap_or_default()
        .trim()
        .to_owned()
}

#[test]
fn dnf_patches_upgrade_roll_back_a_broken_upgrade_and_change_nothing_on_failure() {
    let rig = rig();
    package(&rig, "demo", "1.0", false, None);
    package(&rig, "demo", "1.1", false, None);
    package(&rig, "broken", "1.0", false, None);
    package(&rig, "broken", "2.0", true, None);
    package(&rig, "needy", "1.0", false, None);
    package(&rig, "needy", "2.0", false, Some("not-in-any-repository"));
    sh(Command::new("createrepo_c")
        .arg("-q")
        .arg(rig.dir.join("repo")));
    dnf(
        &rig,
        &["-y", "-q", "install", "demo-1.0", "broken-1.0", "needy-1.0"],
    );
    let start = database(&rig);
    assert_eq!(start, "broken 1.0-1\ndemo 1.0-1\nneedy 1.0-1");

    // A broken upgrade: broken 2.0's %post fails; dnf history rollback restores 1.0.
    let (code, out) = patch(&rig, &["broken=2.0-1"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("rolled back: dnf upgrade: Error in POSTIN scriptlet in rpm package broken"),
        "{out}"
    );
    assert!(out.contains("$ dnf -y history rollback"), "{out}");
    assert_eq!(database(&rig), start, "exactly the previous package list");
    assert_eq!(installed_file(&rig, "broken"), "1.0");
    dnf(&rig, &["-q", "check"]);

    // The repository's newest version does not reach the target: nothing changes.
    let (code, out) = patch(&rig, &["demo=9.9-1"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("not installed: demo's newest version 0:1.1-1 does not reach 9.9-1"),
        "{out}"
    );
    assert_eq!(database(&rig), start);

    // dnf cannot resolve needy 2.0: it fails and nothing changes.
    let (code, out) = patch(&rig, &["needy=2.0-1"]);
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("not installed: dnf upgrade exited"), "{out}");
    assert_eq!(database(&rig), start);

    // Not installed at all: refused before anything runs.
    let (code, out) = patch(&rig, &["absent=1.0-1"]);
    assert_eq!(code, 1);
    assert!(
        out.contains("not installed: absent is not installed"),
        "{out}"
    );

    // The upgrade: demo reaches 1.0-2's target with the newest version, 1.1.
    let (code, out) = patch(&rig, &["demo=1.0-2"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(installed_file(&rig, "demo"), "1.1");
    assert_eq!(database(&rig), "broken 1.0-1\ndemo 1.1-1\nneedy 1.0-1");
}

#[test]
fn zypper_patches_upgrade_roll_back_a_broken_upgrade_and_change_nothing_on_failure() {
    let rig = rig();
    package(&rig, "demo", "1.0", false, None);
    package(&rig, "demo", "1.1", false, None);
    package(&rig, "broken", "1.0", false, None);
    package(&rig, "broken", "2.0", true, None);
    package(&rig, "needy", "1.0", false, None);
    package(&rig, "needy", "2.0", false, Some("not-in-any-repository"));
    sh(Command::new("createrepo_c")
        .arg("-q")
        .arg(rig.dir.join("repo")));
    let zypper = |args: &[&str]| {
        sh(Command::new(rig.dir.join("bin/zypper"))
            .args(["--non-interactive"])
            .args(args)
            .env("PATH", path_env(&rig)))
    };
    zypper(&[
        "addrepo",
        "--no-gpgcheck",
        &format!("file://{}", rig.dir.join("repo").display()),
        "local",
    ]);
    zypper(&["refresh"]);
    zypper(&["install", "demo-1.0", "broken-1.0", "needy-1.0"]);
    let start = database(&rig);
    assert_eq!(start, "broken 1.0-1\ndemo 1.0-1\nneedy 1.0-1");

    // A broken upgrade: broken 2.0's %post fails; the previous version goes back.
    let (code, out) = patch_with(&rig, "zypper", &["broken=2.0-1"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("rolled back: zypper update: error: lua script failed"),
        "{out}"
    );
    assert!(
        out.contains("install --oldpackage --force broken=1.0-1"),
        "{out}"
    );
    assert_eq!(database(&rig), start, "exactly the previous package list");
    assert_eq!(installed_file(&rig, "broken"), "1.0");

    // The newest version does not reach the target: nothing changes.
    let (code, out) = patch_with(&rig, "zypper", &["demo=9.9-1"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("not installed: demo's newest version 1.1-1 does not reach 9.9-1"),
        "{out}"
    );
    assert_eq!(database(&rig), start);

    // zypper cannot resolve needy 2.0: nothing changes.
    let (code, out) = patch_with(&rig, "zypper", &["needy=2.0-1"]);
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("not installed:"), "{out}");
    assert_eq!(database(&rig), start);

    // The upgrade: demo reaches 1.0-2's target with the newest version, 1.1.
    let (code, out) = patch_with(&rig, "zypper", &["demo=1.0-2"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(installed_file(&rig, "demo"), "1.1");
    assert_eq!(database(&rig), "broken 1.0-1\ndemo 1.1-1\nneedy 1.0-1");
}
