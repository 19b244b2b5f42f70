//! The process table from `/proc`: each process's program, command line, owner and parent,
//! and the other absolute names its program goes by.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One process.
#[derive(Debug, Clone)]
pub struct Proc {
    /// Pid.
    pub pid: u32,
    /// Executable path (empty when unreadable).
    pub exe: String,
    /// Command line, at most 512 characters.
    pub cmdline: String,
    /// Owner.
    pub user: String,
    /// Parent pid (1 for a daemon).
    pub ppid: u32,
    /// Other absolute names of its program ([`aliases`]).
    pub paths: Vec<String>,
}

/// The processes of this host.
pub fn processes(names: &HashMap<u32, String>) -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out: Vec<Proc> = dir
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let base = PathBuf::from(format!("/proc/{pid}"));
            let status = std::fs::read_to_string(base.join("status")).ok()?;
            let uid: u32 = status
                .lines()
                .find_map(|l| l.strip_prefix("Uid:"))?
                .split_whitespace()
                .next()?
                .parse()
                .ok()?;
            let cmdline: String = std::fs::read(base.join("cmdline"))
                .map(|b| {
                    String::from_utf8_lossy(&b)
                        .replace('\0', " ")
                        .trim()
                        .chars()
                        .take(512)
                        .collect()
                })
                .unwrap_or_default();
            let ppid: u32 = status
                .lines()
                .find_map(|l| l.strip_prefix("PPid:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            let exe = std::fs::read_link(base.join("exe"))
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            let paths = if exe.is_empty() {
                Vec::new()
            } else {
                aliases(
                    &exe,
                    &cmdline,
                    std::fs::read_link(base.join("cwd")).ok().as_deref(),
                )
            };
            Some(Proc {
                pid,
                exe,
                cmdline,
                user: names.get(&uid).cloned().unwrap_or_else(|| uid.to_string()),
                ppid,
                paths,
            })
        })
        .collect();
    out.sort_by_key(|p| p.pid);
    out
}

/// Where a program named without a directory is found (the usual `PATH` of services).
const PATH_DIRS: [&str; 6] = [
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/bin",
    "/sbin",
    "/bin",
];

/// Other absolute names of a process's program, resolved on this host: the path it was
/// started through when that is a symlink to its binary (`redis-server` found in `PATH`,
/// pointing at `redis-check-rdb`), and a script an interpreter runs, made absolute against
/// the process's working directory.
pub fn aliases(exe: &str, cmdline: &str, cwd: Option<&Path>) -> Vec<String> {
    let mut out = Vec::new();
    let mut argv = cmdline.split_whitespace();
    let argv0 = argv.next().unwrap_or_default();
    let target = std::fs::canonicalize(exe).ok();
    if !argv0.is_empty() && !argv0.starts_with('/') {
        let candidates: Vec<PathBuf> = if argv0.contains('/') {
            cwd.map(|c| c.join(argv0)).into_iter().collect()
        } else {
            PATH_DIRS.iter().map(|d| Path::new(d).join(argv0)).collect()
        };
        if let Some(found) = candidates
            .into_iter()
            .find(|c| target.is_some() && std::fs::canonicalize(c).ok() == target)
        {
            out.push(normalize(&found));
        }
    }
    let program = if exe.is_empty() { argv0 } else { exe };
    if trusthub_core::apps::is_interpreter(program)
        && let Some(script) = argv.find(|a| !a.starts_with('-'))
        && !script.starts_with('/')
        && let Some(cwd) = cwd
    {
        let abs = cwd.join(script);
        if abs.is_file() {
            out.push(normalize(&abs));
        }
    }
    out.retain(|p| p != exe);
    out
}

/// A path with `.` and `..` folded (no symlinks resolved: the name the user sees).
fn normalize(p: &Path) -> String {
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                parts.pop();
            }
            std::path::Component::Normal(n) => parts.push(n),
            _ => {}
        }
    }
    let mut s = String::new();
    for part in parts {
        s.push('/');
        s.push_str(&part.to_string_lossy());
    }
    if s.is_empty() { "/".into() } else { s }
}
