//! A throwaway apt world for tests (CONTRACT 19): a package root of its own with dpkg's
//! database (`DPKG_ROOT`, `DPKG_ADMINDIR`), an apt configuration pointing into it
//! (`APT_CONFIG`), and a local repository built with `dpkg-deb` and `apt-ftparchive`, used
//! through a trusted `file:` source. apt and dpkg honour those variables, so the host's own
//! packages are never touched. Maintainer scripts run chrooted in the root, with a shell
//! copied in.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

/// A package root, its apt configuration and a local repository, removed when dropped.
pub struct Rig {
    /// Scratch folder holding all of it.
    pub dir: PathBuf,
    /// The package root (`DPKG_ROOT`).
    pub root: PathBuf,
    /// The repository (`Packages`, `Release`, the .debs).
    pub repo: PathBuf,
}

impl Drop for Rig {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub fn sh(cmd: &mut Command) -> Output {
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
pub fn package(
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

pub fn index(rig: &Rig) {
    let packages = sh(Command::new("apt-ftparchive")
        .args(["packages", "."])
        .current_dir(&rig.repo));
    std::fs::write(rig.repo.join("Packages"), packages.stdout).expect("Packages");
    let release = sh(Command::new("apt-ftparchive")
        .args(["release", "."])
        .current_dir(&rig.repo));
    std::fs::write(rig.repo.join("Release"), release.stdout).expect("Release");
}

pub fn envs(rig: &Rig) -> Vec<(String, String)> {
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

pub fn rig() -> Rig {
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

pub fn apt_get(rig: &Rig, args: &[&str]) {
    sh(Command::new("apt-get").args(args).envs(envs(rig)));
}

/// The whole package database: `name version status` per line.
pub fn database(rig: &Rig) -> String {
    let out = sh(Command::new("dpkg-query")
        .args(["-W", "-f", "${Package} ${Version} ${db:Status-Abbrev}\n"])
        .envs(envs(rig)));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What the installed package `name`'s one file says: its version.
pub fn installed_file(rig: &Rig, name: &str) -> String {
    std::fs::read_to_string(rig.root.join(format!("usr/share/{name}/version"))).unwrap_or_default()
}
