//! A throwaway dpkg database of its own (`--admindir`) whose packages install real files
//! into a test directory (`--instdir=/` with absolute paths inside the test directory): the
//! real dpkg, dpkg-deb and dpkg-query, without touching the host's package database.

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct DpkgRig {
    pub root: PathBuf,
    pub admindir: PathBuf,
}

fn ok(cmd: &mut Command) -> String {
    let out = cmd.output().expect("runs");
    assert!(
        out.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

impl DpkgRig {
    /// A new database under `root` (which must be absolute).
    pub fn new(root: &Path) -> DpkgRig {
        let admindir = root.join("dpkg-db");
        for d in ["info", "updates", "triggers"] {
            std::fs::create_dir_all(admindir.join(d)).expect("db dir");
        }
        std::fs::write(admindir.join("status"), "").expect("status");
        std::fs::write(admindir.join("available"), "").expect("available");
        DpkgRig {
            root: root.to_path_buf(),
            admindir,
        }
    }

    /// Builds `name_version.deb` with `files` (absolute paths, content), the first one a
    /// conffile when `conffile` is set.
    pub fn build(
        &self,
        name: &str,
        version: &str,
        files: &[(&Path, &str)],
        conffile: bool,
    ) -> PathBuf {
        let tree = self.root.join(format!("build-{name}-{version}"));
        let _ = std::fs::remove_dir_all(&tree);
        std::fs::create_dir_all(tree.join("DEBIAN")).expect("tree");
        std::fs::write(
            tree.join("DEBIAN/control"),
            format!("Package: {name}\nVersion: {version}\nArchitecture: all\nMaintainer: Trusthub tests <t@example.com>\nDescription: drift test package\n"),
        )
        .expect("control");
        for (path, content) in files {
            let inside = tree.join(path.strip_prefix("/").expect("absolute"));
            std::fs::create_dir_all(inside.parent().expect("parent")).expect("dirs");
            std::fs::write(&inside, content).expect("file");
        }
        if conffile {
            std::fs::write(
                tree.join("DEBIAN/conffiles"),
                format!("{}\n", files[0].0.display()),
            )
            .expect("conffiles");
        }
        let deb = self.root.join(format!("{name}_{version}.deb"));
        ok(Command::new("dpkg-deb")
            .args(["-b", "--root-owner-group"])
            .arg(&tree)
            .arg(&deb));
        deb
    }

    /// `dpkg -i` into this database.
    pub fn install(&self, deb: &Path) {
        ok(Command::new("dpkg")
            .arg(format!("--admindir={}", self.admindir.display()))
            .args([
                "--force-not-root",
                "--force-script-chrootless",
                "--force-confold",
                "-i",
            ])
            .arg(deb));
    }
}
