//! `update_packages` against the real npm and pip of this machine (CONTRACT 19): npm against
//! a local verdaccio registry the packages are published to with `npm publish`, pip against
//! a PEP 503 file index of wheels in the project's own virtualenv (its `pip.conf` names the
//! index, as a host's pip configuration would).
//!
//! Each case runs the agent's `patch --project` command, the same code an auto-patch action
//! runs: an upgrade to the target (the manifest and lockfile rewritten, the tree consistent),
//! a broken upgrade rolled back to exactly the previous files and installed tree (compared
//! byte for byte), and a target the registry does not have, which changes nothing.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

mod npm_rig;
use npm_rig::{publish, sh, verdaccio};

const AGENT: &str = env!("CARGO_BIN_EXE_trusthub-agent");

struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch(name: &str) -> Scratch {
    let dir =
        std::env::temp_dir().join(format!("trusthub-{name}-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).expect("scratch");
    Scratch(dir)
}

/// Every file under `paths` (relative name -> bytes; links as their target): the state a
/// rollback must give back exactly.
fn tree(root: &Path, paths: &[&str]) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, p: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        let Ok(m) = p.symlink_metadata() else { return };
        let name = p.strip_prefix(root).unwrap_or(p).display().to_string();
        if m.is_symlink() {
            out.insert(
                name,
                std::fs::read_link(p)
                    .expect("link")
                    .display()
                    .to_string()
                    .into_bytes(),
            );
        } else if m.is_dir() {
            out.insert(format!("{name}/"), Vec::new());
            for e in std::fs::read_dir(p).expect("dir").flatten() {
                walk(root, &e.path(), out);
            }
        } else {
            out.insert(name, std::fs::read(p).expect("file"));
        }
    }
    let mut out = BTreeMap::new();
    for p in paths {
        walk(root, &root.join(p), &mut out);
    }
    out
}

fn patch(state: &Path, manager: &str, project: &Path, packages: &[&str]) -> (i32, String) {
    let out = Command::new(AGENT)
        .args(["patch", "--manager", manager, "--project"])
        .arg(project)
        .arg("--state-dir")
        .arg(state)
        .args(packages)
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

fn lock_version(project: &Path, key: &str) -> String {
    let lock: serde_json::Value =
        serde_json::from_slice(&std::fs::read(project.join("package-lock.json")).expect("lock"))
            .expect("json");
    lock["packages"][key]["version"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn npm_projects_upgrade_roll_back_a_broken_upgrade_and_change_nothing_on_failure() {
    let work = scratch("npm");
    let reg = verdaccio(&work.0);
    let pkgs = work.0.join("packages");
    publish(&reg, &pkgs, "th-c", "1.0.1", "");
    publish(&reg, &pkgs, "th-c", "2.0.0", "");
    publish(
        &reg,
        &pkgs,
        "th-a",
        "1.0.0",
        r#","dependencies":{"th-c":"^1.0.0"}"#,
    );
    publish(&reg, &pkgs, "th-b", "1.0.0", "");
    publish(&reg, &pkgs, "th-b", "1.1.0", "");
    // th-b 2.0.0 wants th-a 2 beside it: with legacy-peer-deps npm installs it anyway and
    // `npm ls` finds the tree invalid.
    publish(
        &reg,
        &pkgs,
        "th-b",
        "2.0.0",
        r#","peerDependencies":{"th-a":"^2.0.0"}"#,
    );

    let project = work.0.join("srv/app");
    std::fs::create_dir_all(&project).expect("project");
    std::fs::write(
        project.join("package.json"),
        "{\n  \"name\": \"app\",\n  \"version\": \"1.0.0\",\n  \"dependencies\": {\n    \"th-a\": \"^1.0.0\"\n  },\n  \"devDependencies\": {\n    \"th-b\": \"1.0.0\"\n  }\n}\n",
    )
    .expect("manifest");
    std::fs::write(
        project.join(".npmrc"),
        format!("registry={}\nlegacy-peer-deps=true\n", reg.url),
    )
    .expect("npmrc");
    sh(Command::new("npm")
        .args(["install", "--no-audit", "--no-fund"])
        .current_dir(&project));
    assert_eq!(lock_version(&project, "node_modules/th-c"), "1.0.1");
    let state = work.0.join("agent");
    let items = ["package.json", "package-lock.json", "node_modules"];

    // A broken upgrade: installed, then `npm ls` fails; everything is put back.
    let before = tree(&project, &items);
    let (code, out) = patch(&state, "npm", &project, &["th-b=2.0.0"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("rolled back: npm ls exited 1"), "{out}");
    assert!(out.contains("$ npm install"), "the install ran: {out}");
    assert_eq!(
        tree(&project, &items),
        before,
        "the rollback restores every byte"
    );

    // A version the registry does not have: npm fails, nothing changes.
    let (code, out) = patch(&state, "npm", &project, &["th-b=9.9.9"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("not installed: npm install exited 1"), "{out}");
    assert_eq!(tree(&project, &items), before);

    // The upgrade: a direct pin stays exact in its own section, a transitive package is
    // forced with `overrides`, and the tree is consistent.
    let (code, out) = patch(&state, "npm", &project, &["th-b=1.1.0", "th-c=2.0.0"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.ends_with("exit code 0\n"), "{out}");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(project.join("package.json")).expect("read"))
            .expect("json");
    assert_eq!(manifest["devDependencies"]["th-b"], "1.1.0");
    assert!(manifest["dependencies"].get("th-b").is_none());
    assert_eq!(manifest["overrides"]["th-c"], "2.0.0");
    assert_eq!(lock_version(&project, "node_modules/th-b"), "1.1.0");
    assert_eq!(lock_version(&project, "node_modules/th-c"), "2.0.0");
    sh(Command::new("npm")
        .args(["ls", "--all"])
        .current_dir(&project));
    // Snapshots are gone once a patch is over.
    assert_eq!(
        std::fs::read_dir(state.join("patches"))
            .expect("patches")
            .flatten()
            .filter(|e| e.path().join("project").exists())
            .count(),
        0
    );

    // Outside the host's project_paths: refused before anything runs.
    std::fs::write(
        state.join("actions.toml"),
        "allow = [\"update_packages\"]\nproject_paths = [\"/opt/apps\"]\n",
    )
    .expect("allow");
    let (code, out) = patch(&state, "npm", &project, &["th-b=1.1.0"]);
    assert_eq!(code, 1);
    assert!(
        out.contains("is not under this host's project_paths"),
        "{out}"
    );
    assert!(!out.contains("$ "), "{out}");
}

/// A wheel of `name` `version` requiring `requires` (PEP 427 layout, written with the zip crate).
fn wheel(dir: &Path, name: &str, version: &str, requires: &[&str]) {
    let file = dir.join(format!("{name}-{version}-py3-none-any.whl"));
    let mut z = zip::ZipWriter::new(std::fs::File::create(&file).expect("wheel"));
    let opts = zip::write::SimpleFileOptions::default();
    let info = format!("{name}-{version}.dist-info");
    let mut metadata = format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n");
    for r in requires {
        metadata.push_str(&format!("Requires-Dist: {r}\n"));
    }
    let files = [
        (format!("{name}/__init__.py"), format!("VERSION = '{version}'\n")),
        (format!("{info}/METADATA"), metadata),
        (format!("{info}/WHEEL"), "Wheel-Version: 1.0\nGenerator: trusthub-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n".to_owned()),
    ];
    let mut record = String::new();
    for (path, body) in &files {
        z.start_file(path.as_str(), opts).expect("entry");
        z.write_all(body.as_bytes()).expect("write");
        record.push_str(&format!("{path},,\n"));
    }
    record.push_str(&format!("{info}/RECORD,,\n"));
    z.start_file(format!("{info}/RECORD"), opts)
        .expect("record");
    z.write_all(record.as_bytes()).expect("write");
    z.finish().expect("zip");
}

/// A PEP 503 simple index over the wheels in `files`.
fn simple_index(root: &Path, files: &Path) {
    let mut by_name: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for e in std::fs::read_dir(files).expect("files").flatten() {
        let f = e.file_name().to_string_lossy().into_owned();
        let name = f.split('-').next().unwrap_or_default().replace('_', "-");
        by_name.entry(name).or_default().push(f);
    }
    for (name, list) in by_name {
        let dir = root.join(&name);
        std::fs::create_dir_all(&dir).expect("index dir");
        let links: String = list
            .iter()
            .map(|f| format!("<a href=\"file://{}\">{f}</a>\n", files.join(f).display()))
            .collect();
        std::fs::write(
            dir.join("index.html"),
            format!("<!DOCTYPE html><html><body>\n{links}</body></html>\n"),
        )
        .expect("index");
    }
}

#[test]
fn pip_projects_upgrade_roll_back_a_broken_upgrade_and_change_nothing_on_failure() {
    let work = scratch("pip");
    let files = work.0.join("files");
    std::fs::create_dir_all(&files).expect("files");
    wheel(&files, "thc", "1.0", &[]);
    wheel(&files, "thc", "2.0", &[]);
    wheel(&files, "tha", "1.0", &["thc<2"]);
    wheel(&files, "thb", "1.0", &[]);
    wheel(&files, "thb", "1.1", &[]);
    let simple = work.0.join("simple");
    simple_index(&simple, &files);

    let project = work.0.join("srv/api");
    std::fs::create_dir_all(&project).expect("project");
    sh(Command::new("python3")
        .args(["-m", "venv", ".venv"])
        .current_dir(&project));
    std::fs::write(
        project.join(".venv/pip.conf"),
        format!(
            "[global]\nindex-url = file://{}\ndisable-pip-version-check = true\n",
            simple.display()
        ),
    )
    .expect("pip.conf");
    std::fs::write(
        project.join("requirements.txt"),
        "# the API\ntha==1.0\nthb==1.0  # pinned\nthc==1.0\n",
    )
    .expect("requirements");
    sh(Command::new(project.join(".venv/bin/python"))
        .args(["-m", "pip", "install", "-q", "-r", "requirements.txt"])
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .current_dir(&project));
    let state = work.0.join("agent");
    let items = ["requirements.txt", ".venv"];

    // A broken upgrade: pip installs thc 2.0 though tha wants thc<2; `pip check` fails and
    // the virtualenv and requirements.txt are put back.
    let before = tree(&project, &items);
    let (code, out) = patch(&state, "pip", &project, &["thc=2.0"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("rolled back: pip check exited 1"), "{out}");
    assert_eq!(
        tree(&project, &items),
        before,
        "the rollback restores every byte"
    );

    // A version the index does not have: nothing changes.
    let (code, out) = patch(&state, "pip", &project, &["thb=7.0"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("not installed: pip install exited 1"), "{out}");
    assert_eq!(tree(&project, &items), before);

    // The upgrade: installed, pinned in requirements.txt with its comment kept, consistent.
    let (code, out) = patch(&state, "pip", &project, &["thb=1.1"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        std::fs::read_to_string(project.join("requirements.txt")).expect("read"),
        "# the API\ntha==1.0\nthb==1.1  # pinned\nthc==1.0\n"
    );
    let frozen = sh(Command::new(project.join(".venv/bin/python"))
        .args(["-m", "pip", "freeze"])
        .current_dir(&project));
    assert!(
        frozen.contains("thb==1.1") && frozen.contains("thc==1.0"),
        "{frozen}"
    );
    sh(Command::new(project.join(".venv/bin/python"))
        .args(["-m", "pip", "check"])
        .current_dir(&project));

    // No virtualenv: refused, nothing run.
    let bare = work.0.join("srv/bare");
    std::fs::create_dir_all(&bare).expect("bare");
    std::fs::write(bare.join("requirements.txt"), "thb==1.0\n").expect("requirements");
    let (code, out) = patch(&state, "pip", &bare, &["thb=1.1"]);
    assert_eq!(code, 1);
    assert!(out.contains("has no virtualenv at .venv or venv"), "{out}");
}
