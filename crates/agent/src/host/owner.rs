//! Running a project's own tools as the project's owner (CONTRACT 30). The agent is root; a
//! project folder owned by an unprivileged user holds code that user controls (its
//! `.venv/bin/python`, a Gemfile, lifecycle scripts), so every package manager and
//! interpreter run for that project runs as the folder's owner: its uid and primary gid (no
//! supplementary groups), that user's `HOME`, and a clean environment. Root-owned projects
//! run as root, as before. Either way, a program that would run and is writable by anyone
//! but its runner or root is refused before anything starts, naming the file.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Whom a project's tools run as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// The folder owner's uid (0: root, nothing dropped).
    pub uid: u32,
    /// Their primary group.
    pub gid: u32,
    /// Their name from `/etc/passwd` (the uid in decimal when it has no entry).
    pub name: String,
    /// Their home from `/etc/passwd` (the project folder when the uid has no entry).
    pub home: PathBuf,
}

/// The environment variables a dropped run keeps from the agent's own: the search path,
/// proxies and the registry settings a host gives its package managers (Go's proxy and
/// checksum settings, pip's and npm's index). Nothing else crosses.
const KEPT: &[&str] = &[
    "PATH",
    "LANG",
    "LC_ALL",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "GOPROXY",
    "GOSUMDB",
    "GONOSUMDB",
    "GOPRIVATE",
    "GONOPROXY",
    "GOINSECURE",
    "GOFLAGS",
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "npm_config_registry",
];

const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

impl Owner {
    /// Root: whom a root-owned project's tools run as.
    pub fn root() -> Owner {
        Owner {
            uid: 0,
            gid: 0,
            name: "root".into(),
            home: PathBuf::from("/root"),
        }
    }

    /// The owner of `dir` as the file system says (not following a final link).
    pub fn of(dir: &Path) -> Result<Owner, String> {
        let m = dir
            .symlink_metadata()
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        if m.uid() == 0 {
            return Ok(Owner::root());
        }
        let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
        Ok(Owner::from_passwd(&passwd, m.uid(), m.gid(), dir))
    }

    /// The entry of `uid` in a `passwd` text; a uid without one keeps the folder's group,
    /// its number as its name and the project as its home.
    pub fn from_passwd(passwd: &str, uid: u32, dir_gid: u32, dir: &Path) -> Owner {
        passwd
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split(':').collect();
                (f.len() >= 7 && f[2].parse::<u32>().ok() == Some(uid)).then(|| Owner {
                    uid,
                    gid: f[3].parse().unwrap_or(dir_gid),
                    name: f[0].to_owned(),
                    home: PathBuf::from(f[5]),
                })
            })
            .next()
            .unwrap_or_else(|| Owner {
                uid,
                gid: dir_gid,
                name: uid.to_string(),
                home: dir.to_owned(),
            })
    }

    /// Whether anything is dropped (the owner is not root).
    pub fn drops(&self) -> bool {
        self.uid != 0
    }

    /// `program` as it would run: a path as given, a bare name looked up on `PATH`.
    pub fn resolve(program: &str) -> Option<PathBuf> {
        if program.contains('/') {
            return Some(PathBuf::from(program));
        }
        let path = std::env::var_os("PATH").unwrap_or_else(|| DEFAULT_PATH.into());
        std::env::split_paths(&path)
            .map(|d| d.join(program))
            .find(|p| p.is_file())
    }

    /// Refuses a program that someone other than this owner or root could have changed:
    /// the file it resolves to (links followed) and every link on the way must belong to
    /// this owner or root and be writable by neither its group nor others.
    pub fn check_executable(&self, program: &str) -> Result<(), String> {
        let Some(path) = Owner::resolve(program) else {
            return Err(format!("`{program}` is not installed on this host"));
        };
        let mut at = path.clone();
        for _ in 0..40 {
            let m = at
                .symlink_metadata()
                .map_err(|e| format!("{}: {e}", at.display()))?;
            if !m.file_type().is_symlink() {
                self.check_writers(&at, &m)?;
                return Ok(());
            }
            // A link's own mode means nothing; who owns it decides where it points.
            if m.uid() != 0 && m.uid() != self.uid {
                return Err(format!(
                    "{} belongs to uid {}, not to the project's owner or root",
                    at.display(),
                    m.uid()
                ));
            }
            let to = std::fs::read_link(&at).map_err(|e| format!("{}: {e}", at.display()))?;
            at = match at.parent() {
                Some(dir) if to.is_relative() => dir.join(to),
                _ => to,
            };
        }
        Err(format!("{}: too many links", path.display()))
    }

    fn check_writers(&self, path: &Path, m: &std::fs::Metadata) -> Result<(), String> {
        if m.uid() != 0 && m.uid() != self.uid {
            return Err(format!(
                "{} belongs to uid {}, not to the project's owner or root",
                path.display(),
                m.uid()
            ));
        }
        if m.mode() & 0o022 != 0 {
            return Err(format!(
                "{} is writable by its group or by others (mode {:o})",
                path.display(),
                m.mode() & 0o7777
            ));
        }
        Ok(())
    }

    /// Sets `cmd` to run as this owner: uid, gid, no supplementary groups and a clean
    /// environment (`HOME`, `USER`, `LOGNAME`, the kept variables, then `envs`). Root runs
    /// are left with the agent's environment plus `envs`, as before.
    pub fn apply(&self, cmd: &mut tokio::process::Command, envs: &[(&str, &str)]) {
        if self.drops() {
            cmd.env_clear();
            for key in KEPT {
                if let Some(v) = std::env::var_os(key) {
                    cmd.env(key, v);
                }
            }
            if std::env::var_os("PATH").is_none() {
                cmd.env("PATH", DEFAULT_PATH);
            }
            cmd.env("HOME", &self.home)
                .env("USER", &self.name)
                .env("LOGNAME", &self.name)
                .uid(self.uid)
                .gid(self.gid);
        }
        cmd.envs(envs.iter().copied());
    }
}

/// Writes `bytes` to the project file `path` without following a link there (a project's
/// owner cannot turn a rewrite of `requirements.txt` into a write of `/etc/shadow`).
pub fn write_no_follow(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)?;
    f.write_all(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwd_entries_name_the_owner_and_a_missing_one_keeps_the_folder() {
        let passwd = "root:x:0:0:root:/root:/bin/bash\nops:x:1001:1002:Ops:/home/ops:/bin/sh\n";
        let dir = Path::new("/srv/app");
        assert_eq!(
            Owner::from_passwd(passwd, 1001, 7, dir),
            Owner {
                uid: 1001,
                gid: 1002,
                name: "ops".into(),
                home: "/home/ops".into()
            }
        );
        assert_eq!(
            Owner::from_passwd(passwd, 4242, 7, dir),
            Owner {
                uid: 4242,
                gid: 7,
                name: "4242".into(),
                home: dir.to_owned()
            }
        );
    }

    #[test]
    fn a_program_others_can_change_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("th-owner-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let prog = dir.join("python");
        std::fs::write(&prog, "#!/bin/sh\n").expect("write");
        std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o757)).expect("mode");
        let me = Owner::of(&dir).expect("owner");
        let err = me
            .check_executable(&prog.display().to_string())
            .expect_err("world-writable");
        assert!(err.contains("writable by its group or by others"), "{err}");
        std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).expect("mode");
        me.check_executable(&prog.display().to_string())
            .expect("owner-only");
        // Through a link: the target decides.
        let link = dir.join("python3");
        std::os::unix::fs::symlink(&prog, &link).expect("link");
        me.check_executable(&link.display().to_string())
            .expect("link to a sound file");
        assert!(me.check_executable("/no/such/program").is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
