//! Where a host's dependencies are found (CONTRACT 29): projects under `--project-path`
//! directories and, unless `--no-process-discovery`, around the working directories of
//! running processes; their lockfiles and installed trees (what is installed wins over what
//! a lockfile claims); trees installed machine-wide by npm, pip and gem; Go binaries in
//! `--binary-path` directories and running processes' executables. Every walk is bounded
//! in depth, in directories visited and in time, so a host with a huge tree still sends its
//! inventory.

use super::installed;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The directories searched for Go binaries when none are given.
pub const DEFAULT_BINARY_PATHS: [&str; 2] = ["/usr/local/bin", "/opt"];

/// How deep projects are searched under a `--project-path`, and around a process's
/// working directory.
const PROJECT_DEPTH: usize = 4;
const PROCESS_DEPTH: usize = 2;
/// Directories visited by all project walks together, and the time they may take.
const MAX_DIRS: usize = 20_000;
const MAX_WALK: Duration = Duration::from_secs(10);
/// Executables read for Go build info.
const MAX_EXECUTABLES: usize = 5_000;

/// What to look at.
#[derive(Debug, Clone)]
pub struct Discovery {
    /// Directories searched for projects (4 levels deep).
    pub project_paths: Vec<PathBuf>,
    /// Directories searched for Go binaries (3 levels deep); empty: [`DEFAULT_BINARY_PATHS`].
    pub binary_paths: Vec<PathBuf>,
    /// Also the working directories and executables of running processes.
    pub processes: bool,
    /// Also trees installed machine-wide ([`installed::system_trees`]).
    pub system: bool,
    /// Where `/proc` and the system trees are (`/`; another root in tests).
    pub root: PathBuf,
}

impl Discovery {
    /// Only these projects and binary directories: no processes, no system trees.
    pub fn only(project_paths: &[PathBuf], binary_paths: &[PathBuf]) -> Discovery {
        Discovery {
            project_paths: project_paths.to_vec(),
            binary_paths: binary_paths.to_vec(),
            processes: false,
            system: false,
            root: PathBuf::from("/"),
        }
    }
}

/// Every dependency found, as inventory `app_dependencies` entries; an unreadable source is
/// an entry with its `error`.
pub fn dependencies(d: &Discovery) -> Vec<Value> {
    let mut walk = Walk {
        projects: BTreeMap::new(),
        seen: HashSet::new(),
        dirs: 0,
        deadline: Instant::now() + MAX_WALK,
    };
    for root in &d.project_paths {
        walk.search(root, PROJECT_DEPTH);
    }
    let mut executables = Vec::new();
    if d.processes {
        let (dirs, exes) = running(&d.root);
        for dir in dirs {
            // The project may be the working directory or one of its two parents (a
            // process started in `src/`), or below it.
            for up in dir.ancestors().skip(1).take(2) {
                if !excluded(up) && looks_like_a_project(up) {
                    walk.search(up, 0);
                }
            }
            walk.search(&dir, PROCESS_DEPTH);
        }
        executables = exes;
    }
    let mut out = Vec::new();
    let mut trees = HashSet::new();
    for (project, files) in &walk.projects {
        read_project(project, files, &mut trees, &mut out);
    }
    if d.system {
        for (format, root) in installed::system_trees(&d.root) {
            let project = root.parent().unwrap_or(&root).to_owned();
            if trees.insert(canonical(&root)) {
                read_tree(
                    &project.display().to_string(),
                    format,
                    &root,
                    &mut |_| {},
                    &mut out,
                );
            }
        }
    }
    out.extend(go_binaries(&d.binary_paths, &executables));
    out
}

/// Projects found so far, bounded.
struct Walk {
    /// Project directory → its lockfiles (none: only installed trees).
    projects: BTreeMap<PathBuf, Vec<PathBuf>>,
    /// Directories already searched (canonical), so overlapping roots are read once.
    seen: HashSet<PathBuf>,
    dirs: usize,
    deadline: Instant,
}

impl Walk {
    fn search(&mut self, root: &Path, max_depth: usize) {
        let mut stack: Vec<(PathBuf, usize)> = vec![(root.to_owned(), 0)];
        while let Some((dir, depth)) = stack.pop() {
            if self.dirs >= MAX_DIRS || Instant::now() >= self.deadline {
                return;
            }
            if !self.seen.insert(canonical(&dir)) {
                continue;
            }
            self.dirs += 1;
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.filter_map(Result::ok) {
                let name = e.file_name().to_string_lossy().into_owned();
                let Ok(t) = e.file_type() else { continue };
                if t.is_file() && super::lockfile_format(&name).is_some() {
                    self.projects.entry(dir.clone()).or_default().push(e.path());
                } else if t.is_dir() {
                    match name.as_str() {
                        // An installed tree: its folder is a project even without a lockfile.
                        "node_modules" | ".venv" | "venv" => {
                            self.projects.entry(dir.clone()).or_default();
                        }
                        "vendor" if e.path().join("bundle").is_dir() => {
                            self.projects.entry(dir.clone()).or_default();
                        }
                        ".git" | "vendor" => {}
                        _ if depth < max_depth => stack.push((e.path(), depth + 1)),
                        _ => {}
                    }
                }
            }
        }
    }
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned())
}

/// Whether a directory holds a lockfile or an installed tree (without walking it).
fn looks_like_a_project(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .any(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            super::lockfile_format(&n).is_some() || matches!(n.as_ref(), "node_modules" | ".venv")
        })
}

/// Working directories not worth searching: the root, home and temporary roots themselves,
/// and the system's own trees.
fn excluded(dir: &Path) -> bool {
    const EXACT: [&str; 7] = ["/", "/root", "/home", "/tmp", "/var/tmp", "/var", "/srv"];
    const UNDER: [&str; 19] = [
        "/proc",
        "/sys",
        "/dev",
        "/run",
        "/boot",
        "/bin",
        "/sbin",
        "/lib",
        "/lib32",
        "/lib64",
        "/etc",
        "/usr/bin",
        "/usr/sbin",
        "/usr/lib",
        "/usr/share",
        "/usr/include",
        "/var/log",
        "/var/cache",
        "/var/lib/dpkg",
    ];
    EXACT.iter().any(|x| dir == Path::new(x))
        || UNDER.iter().any(|u| dir.starts_with(u))
        || (dir.parent() == Some(Path::new("/home")))
}

/// The working directories (searchable ones) and executables of running processes, each
/// once; this agent's own and those of processes in containers (another root) left out.
fn running(root: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let me = std::process::id();
    let mut dirs = BTreeMap::new();
    let mut exes = BTreeMap::new();
    for e in std::fs::read_dir(root.join("proc"))
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
    {
        let Some(pid) = e.file_name().to_str().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        // A process in a container sees another root: its paths are not this host's (the
        // container's own files are not read from outside it).
        if std::fs::read_link(e.path().join("root")).is_ok_and(|r| r != Path::new("/")) {
            continue;
        }
        if let Ok(cwd) = std::fs::read_link(e.path().join("cwd"))
            && cwd.is_absolute()
            && !excluded(&cwd)
        {
            dirs.insert(cwd, ());
        }
        if let Ok(exe) = std::fs::read_link(e.path().join("exe"))
            && exe.is_absolute()
            && !exe.to_string_lossy().ends_with(" (deleted)")
        {
            exes.insert(exe, ());
        }
    }
    (dirs.into_keys().collect(), exes.into_keys().collect())
}

/// A package name as two sources of one ecosystem compare it (PEP 503 for Python).
fn compare_key(ecosystem: &str, name: &str) -> String {
    let lower = name.to_ascii_lowercase();
    if ecosystem == "pip" {
        lower.replace(['_', '.'], "-")
    } else {
        lower
    }
}

/// Reads one installed tree into `out` (`note` sees each package read).
fn read_tree(
    project: &str,
    format: &'static str,
    root: &Path,
    note: &mut dyn FnMut(&super::Dep),
    out: &mut Vec<Value>,
) {
    let source = root.display().to_string();
    let read = match format {
        "node-modules" => installed::node_modules(root),
        "gemspec" => installed::gem_home(root),
        _ => installed::site_packages(root),
    };
    match read {
        Ok(mut deps) => {
            deps.sort();
            deps.dedup();
            for d in deps {
                note(&d);
                out.push(json!({"project_path": project, "source": source, "source_kind": "installed",
                    "format": format, "ecosystem": d.ecosystem, "name": d.name, "version": d.version}));
            }
        }
        Err(error) => out.push(json!({"project_path": project, "source": source,
            "source_kind": "installed", "format": format, "error": error})),
    }
}

/// A project's installed trees, then its lockfiles without what the trees have.
fn read_project(
    project: &Path,
    files: &[PathBuf],
    trees: &mut HashSet<PathBuf>,
    out: &mut Vec<Value>,
) {
    let project_s = project.display().to_string();
    // What is installed wins over what a lockfile claims: a package found in an installed
    // tree of the project is reported from there (CONTRACT 29).
    let mut installed_names: HashSet<(&'static str, String)> = HashSet::new();
    for (format, root) in installed::trees_of(project) {
        if !trees.insert(canonical(&root)) {
            continue;
        }
        read_tree(
            &project_s,
            format,
            &root,
            &mut |d| {
                installed_names.insert((d.ecosystem, compare_key(d.ecosystem, &d.name)));
            },
            out,
        );
    }
    // go.sum holds every version the module graph ever considered; go.mod the ones the build
    // selects: with both, go.mod is read.
    let has_go_mod = files.iter().any(|f| f.ends_with("go.mod"));
    for file in files {
        if has_go_mod && file.ends_with("go.sum") {
            continue;
        }
        let lockfile = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let source = file.display().to_string();
        let text = std::fs::read_to_string(file).map_err(|e| format!("unreadable: {e}"));
        match text.and_then(|t| super::parse_lockfile(file, &t)) {
            Ok((format, deps)) => {
                // A lockfile without dependencies is still a source the host has (listed,
                // with no package).
                if deps.is_empty() {
                    out.push(
                        json!({"project_path": project_s, "lockfile": lockfile, "source": source,
                        "source_kind": "lockfile", "format": format}),
                    );
                }
                for d in deps {
                    if installed_names.contains(&(d.ecosystem, compare_key(d.ecosystem, &d.name))) {
                        continue;
                    }
                    out.push(json!({"project_path": project_s, "lockfile": lockfile, "source": source,
                        "source_kind": "lockfile", "format": format, "ecosystem": d.ecosystem, "name": d.name,
                        "version": d.version}));
                }
            }
            Err(error) => {
                let format = super::lockfile_format(&lockfile).unwrap_or_default();
                out.push(
                    json!({"project_path": project_s, "lockfile": lockfile, "source": source,
                    "source_kind": "lockfile", "format": format, "error": error}),
                );
            }
        }
    }
}

/// The modules of the Go binaries under `dirs` (3 levels deep; [`DEFAULT_BINARY_PATHS`]
/// when empty) and of `executables` (running processes'), each file once, at most 5,000:
/// one entry per module with the binary as its source (CONTRACT 29); a binary whose build
/// info cannot be read is reported with the reason.
pub fn go_binaries(dirs: &[PathBuf], executables: &[PathBuf]) -> Vec<Value> {
    use std::os::unix::fs::PermissionsExt;
    let defaults: Vec<PathBuf> = DEFAULT_BINARY_PATHS.iter().map(PathBuf::from).collect();
    let roots = if dirs.is_empty() { &defaults[..] } else { dirs };
    let mut files = Vec::new();
    let mut stack: Vec<(PathBuf, usize)> = roots.iter().map(|r| (r.clone(), 0)).collect();
    while let Some((dir, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.filter_map(Result::ok) {
            let Ok(t) = e.file_type() else { continue };
            if t.is_dir() && depth < 3 {
                stack.push((e.path(), depth + 1));
                continue;
            }
            let executable = t.is_file()
                && e.metadata()
                    .is_ok_and(|m| m.permissions().mode() & 0o111 != 0 && m.len() > 64);
            if executable {
                files.push(e.path());
            }
        }
    }
    files.extend(executables.iter().cloned());
    let mut read = HashSet::new();
    let mut out = Vec::new();
    for path in files {
        if read.len() >= MAX_EXECUTABLES {
            break;
        }
        if !read.insert(canonical(&path)) {
            continue;
        }
        let source = path.display().to_string();
        let folder = path
            .parent()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        match super::gobinary::read_file(&path) {
            Ok(Some(info)) => {
                for d in info.deps() {
                    out.push(json!({"project_path": folder, "source": source, "source_kind": "binary",
                        "format": "go-binary", "ecosystem": d.ecosystem, "name": d.name, "version": d.version}));
                }
            }
            Ok(None) => {}
            Err(error) => out.push(json!({"project_path": folder, "source": source,
                "source_kind": "binary", "format": "go-binary", "error": error})),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
        std::fs::write(path, text).expect("write");
    }

    fn listed(found: &[Value]) -> Vec<(String, String, String)> {
        let mut v: Vec<(String, String, String)> = found
            .iter()
            .map(|e| {
                (
                    e["source"].as_str().unwrap_or_default().to_owned(),
                    e["name"].as_str().unwrap_or_default().to_owned(),
                    e["project_path"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn trees_without_a_lockfile_and_machine_wide_trees_are_found() {
        let root = std::env::temp_dir().join(format!("disc-{}", uuid::Uuid::new_v4().simple()));
        let s = |p: &str| root.join(p).display().to_string();
        // A copied node_modules with no lockfile beside it; a venv alone.
        write(
            &root.join("srv/web/node_modules/lodash/package.json"),
            r#"{"name": "lodash", "version": "4.17.20"}"#,
        );
        write(
            &root.join("srv/api/.venv/lib/python3.11/site-packages/Flask-2.0.0.dist-info/METADATA"),
            "Metadata-Version: 2.1\nName: Flask\nVersion: 2.0.0\n",
        );
        // Machine-wide: npm -g, pip into /usr/local, gem install; the distribution's own
        // Python packages are OS packages and left out.
        write(
            &root.join("usr/local/lib/node_modules/npm/package.json"),
            r#"{"name": "npm", "version": "10.0.0"}"#,
        );
        write(
            &root.join("usr/local/lib/python3.11/dist-packages/requests-2.25.0.dist-info/METADATA"),
            "Name: requests\nVersion: 2.25.0\n",
        );
        write(
            &root.join("usr/lib/python3/dist-packages/six-1.16.0.dist-info/METADATA"),
            "Name: six\nVersion: 1.16.0\n",
        );
        write(
            &root.join("var/lib/gems/3.1.0/specifications/rack-2.2.3.gemspec"),
            "# stub: rack 2.2.3 ruby lib\n",
        );
        let d = Discovery {
            system: true,
            root: root.clone(),
            ..Discovery::only(&[root.join("srv")], &[root.join("nothing")])
        };
        let found = dependencies(&d);
        assert_eq!(
            listed(&found),
            [
                (
                    s("srv/api/.venv/lib/python3.11/site-packages"),
                    "Flask".into(),
                    s("srv/api")
                ),
                (s("srv/web/node_modules"), "lodash".into(), s("srv/web")),
                (
                    s("usr/local/lib/node_modules"),
                    "npm".into(),
                    s("usr/local/lib")
                ),
                (
                    s("usr/local/lib/python3.11/dist-packages"),
                    "requests".into(),
                    s("usr/local/lib/python3.11")
                ),
                (s("var/lib/gems/3.1.0"), "rack".into(), s("var/lib/gems")),
            ]
        );
        assert!(found.iter().all(|e| e["source_kind"] == "installed"));
        // Overlapping roots read each project once.
        let twice = Discovery::only(
            &[root.join("srv"), root.join("srv/web")],
            &[root.join("nothing")],
        );
        assert_eq!(dependencies(&twice).len(), 2);
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn a_running_process_leads_to_its_project() {
        let root = std::env::temp_dir().join(format!("proc-{}", uuid::Uuid::new_v4().simple()));
        write(&root.join("svc/requirements.txt"), "flask==2.0.0\n");
        std::fs::create_dir_all(root.join("svc/src")).expect("src");
        // Started in the project's `src/`: the project is its parent.
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .current_dir(root.join("svc/src"))
            .spawn()
            .expect("sleep");
        let source = root.join("svc/requirements.txt").display().to_string();
        let with = Discovery {
            processes: true,
            ..Discovery::only(&[], &[root.join("nothing")])
        };
        let found = dependencies(&with);
        let without = dependencies(&Discovery::only(&[], &[root.join("nothing")]));
        let _ = child.kill();
        let _ = child.wait();
        let flask: Vec<&Value> = found.iter().filter(|e| e["source"] == source).collect();
        assert_eq!(flask.len(), 1, "{found:?}");
        assert_eq!(flask[0]["name"], "flask");
        assert!(without.iter().all(|e| e["source"] != source), "{without:?}");
        assert!(excluded(Path::new("/")) && excluded(Path::new("/proc/1")));
        assert!(excluded(Path::new("/home/ops")) && !excluded(Path::new("/home/ops/app")));
        let _ = std::fs::remove_dir_all(&root);
    }
}
