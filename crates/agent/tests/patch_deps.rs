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
    patch_with(state, manager, project, packages, &[])
}

/// The agent's `patch --project` run with the tool's own environment (`GOPROXY`, `HOME`, …).
fn patch_with(
    state: &Path,
    manager: &str,
    project: &Path,
    packages: &[&str],
    env: &[(&str, &std::ffi::OsStr)],
) -> (i32, String) {
    let out = Command::new(AGENT)
        .args(["patch", "--manager", manager, "--project"])
        .arg(project)
        .arg("--state-dir")
        .arg(state)
        .args(packages)
        .envs(env.iter().copied())
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

/// A module version in a `file://` GOPROXY: `@v/list`, `.info`, `.mod` and the zip.
fn go_module(proxy: &Path, module: &str, version: &str, source: &str) {
    let dir = proxy.join(module).join("@v");
    std::fs::create_dir_all(&dir).expect("proxy dir");
    let go_mod = format!("module {module}\n\ngo 1.19\n");
    std::fs::write(dir.join(format!("{version}.mod")), &go_mod).expect("mod");
    std::fs::write(
        dir.join(format!("{version}.info")),
        format!(r#"{{"Version":"{version}","Time":"2024-01-01T00:00:00Z"}}"#),
    )
    .expect("info");
    let mut z = zip::ZipWriter::new(
        std::fs::File::create(dir.join(format!("{version}.zip"))).expect("zip"),
    );
    let opts = zip::write::SimpleFileOptions::default();
    for (name, body) in [("go.mod", go_mod.as_str()), ("lib.go", source)] {
        z.start_file(format!("{module}@{version}/{name}"), opts)
            .expect("entry");
        z.write_all(body.as_bytes()).expect("write");
    }
    z.finish().expect("zip");
    let mut list = std::fs::read_to_string(dir.join("list")).unwrap_or_default();
    list.push_str(&format!("{version}\n"));
    std::fs::write(dir.join("list"), list).expect("list");
}

#[test]
fn go_modules_upgrade_roll_back_a_broken_upgrade_and_change_nothing_on_failure() {
    let work = scratch("go");
    let proxy = work.0.join("proxy");
    let lib = "example.com/thlib";
    go_module(
        &proxy,
        lib,
        "v1.0.0",
        "package thlib\n\nfunc Hello() string { return \"1.0.0\" }\n",
    );
    go_module(
        &proxy,
        lib,
        "v1.0.1",
        "package thlib\n\nfunc Hello() string { return \"1.0.1\" }\n",
    );
    // 1.1.0 renames Hello: the project no longer builds with it.
    go_module(
        &proxy,
        lib,
        "v1.1.0",
        "package thlib\n\nfunc Greet() string { return \"1.1.0\" }\n",
    );
    let project = work.0.join("srv/svc");
    std::fs::create_dir_all(&project).expect("project");
    std::fs::write(
        project.join("go.mod"),
        format!("module example.com/svc\n\ngo 1.19\n\nrequire {lib} v1.0.0\n"),
    )
    .expect("go.mod");
    std::fs::write(
        project.join("main.go"),
        format!("package main\n\nimport (\n\t\"fmt\"\n\n\t\"{lib}\"\n)\n\nfunc main() {{ fmt.Println(thlib.Hello()) }}\n"),
    )
    .expect("main.go");
    // Go's own settings, as a host would have them: the proxy, no checksum database, caches
    // of the test's own (writable, so they can be removed).
    let env = [
        ("GOPROXY", format!("file://{}", proxy.display())),
        ("GOSUMDB", "off".to_owned()),
        ("GOFLAGS", "-modcacherw".to_owned()),
        ("GOPATH", work.0.join("gopath").display().to_string()),
        ("GOCACHE", work.0.join("gocache").display().to_string()),
    ];
    let go = |args: &[&str]| {
        sh(Command::new("go")
            .args(args)
            .current_dir(&project)
            .envs(env.iter().map(|(k, v)| (*k, v.as_str()))))
    };
    go(&["mod", "download"]);
    go(&["mod", "tidy"]);
    go(&["build", "./..."]);
    let state = work.0.join("agent");
    let items = ["go.mod", "go.sum"];
    let patch_go = |packages: &[&str]| {
        let env: Vec<(&str, &std::ffi::OsStr)> = env
            .iter()
            .map(|(k, v)| (*k, std::ffi::OsStr::new(v.as_str())))
            .collect();
        patch_with(&state, "go", &project, packages, &env)
    };

    // A broken upgrade: go get takes 1.1.0, the build fails, go.mod and go.sum come back.
    let before = tree(&project, &items);
    let (code, out) = patch_go(&[&format!("{lib}=1.1.0")]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("rolled back: go build ./... exited 2"),
        "{out}"
    );
    assert_eq!(
        tree(&project, &items),
        before,
        "the rollback restores every byte"
    );
    go(&["build", "./..."]);

    // A version the proxy does not have: nothing changes.
    let (code, out) = patch_go(&[&format!("{lib}=9.9.9")]);
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("not installed: go get exited"), "{out}");
    assert_eq!(tree(&project, &items), before);

    // The upgrade: go.mod names 1.0.1, go.sum has its hashes, it verifies and builds.
    let (code, out) = patch_go(&[&format!("{lib}=1.0.1")]);
    assert_eq!(code, 0, "{out}");
    let go_mod = std::fs::read_to_string(project.join("go.mod")).expect("go.mod");
    assert!(
        go_mod.contains(&format!("require {lib} v1.0.1")),
        "{go_mod}"
    );
    let go_sum = std::fs::read_to_string(project.join("go.sum")).expect("go.sum");
    assert!(go_sum.contains(&format!("{lib} v1.0.1 h1:")), "{go_sum}");
    go(&["mod", "verify"]);
    let built = go(&["run", "."]);
    assert_eq!(built.trim(), "1.0.1");
}

/// Builds gem `name` `version` (with `extra` gemspec lines) into `repo/gems` with `gem build`.
fn gem(work: &Path, repo: &Path, name: &str, version: &str, extra: &str) {
    let src = work.join("gem-src").join(format!("{name}-{version}"));
    std::fs::create_dir_all(src.join("lib")).expect("gem src");
    std::fs::write(
        src.join(format!("lib/{name}.rb")),
        format!("module Th; VERSION = \"{version}\"; end\n"),
    )
    .expect("lib");
    std::fs::write(
        src.join(format!("{name}.gemspec")),
        format!(
            "Gem::Specification.new do |s|\n  s.name = \"{name}\"\n  s.version = \"{version}\"\n  s.summary = \"test gem\"\n  s.authors = [\"Trusthub tests\"]\n  s.license = \"MIT\"\n  s.files = [\"lib/{name}.rb\"]\n  {extra}\nend\n"
        ),
    )
    .expect("gemspec");
    sh(Command::new("gem")
        .args(["build", "-q", &format!("{name}.gemspec")])
        .current_dir(&src));
    std::fs::create_dir_all(repo.join("gems")).expect("gems");
    let file = format!("{name}-{version}.gem");
    std::fs::rename(src.join(&file), repo.join("gems").join(&file)).expect("move gem");
}

#[test]
fn bundler_projects_upgrade_roll_back_a_broken_upgrade_and_change_nothing_on_failure() {
    let work = scratch("gems");
    let repo = work.0.join("repo");
    gem(&work.0, &repo, "thc", "1.0.0", "");
    gem(
        &work.0,
        &repo,
        "tha",
        "1.0.0",
        "s.add_dependency \"thc\", \"~> 1.0\"",
    );
    gem(&work.0, &repo, "thb", "1.0.0", "");
    sh(Command::new("gem")
        .args(["generate_index", "-q", "-d"])
        .arg(&repo));
    let project = work.0.join("srv/shop");
    std::fs::create_dir_all(project.join(".bundle")).expect("project");
    std::fs::write(
        project.join("Gemfile"),
        format!(
            "source \"file://{}\"\n\ngem \"tha\", \"1.0.0\"\ngem 'thb', '= 1.0.0'\n",
            repo.display()
        ),
    )
    .expect("Gemfile");
    std::fs::write(
        project.join(".bundle/config"),
        "---\nBUNDLE_PATH: \"vendor/bundle\"\n",
    )
    .expect("config");
    let home = work.0.join("home");
    std::fs::create_dir_all(&home).expect("home");
    let bundle = |args: &[&str]| {
        sh(Command::new("bundle")
            .args(args)
            .current_dir(&project)
            .env("HOME", &home))
    };
    bundle(&["install", "--quiet"]);
    // Newer versions arrive in the source after the project locked its gems.
    gem(&work.0, &repo, "thc", "1.0.1", "");
    gem(&work.0, &repo, "thc", "2.0.0", "");
    gem(&work.0, &repo, "thb", "1.1.0", "");
    sh(Command::new("gem")
        .args(["generate_index", "-q", "-d"])
        .arg(&repo));
    let state = work.0.join("agent");
    let items = ["Gemfile", "Gemfile.lock", "vendor/bundle"];
    let patch_gems = |packages: &[&str]| {
        let env: Vec<(&str, &std::ffi::OsStr)> = vec![("HOME", home.as_os_str())];
        patch_with(&state, "bundler", &project, packages, &env)
    };
    let locked = || std::fs::read_to_string(project.join("Gemfile.lock")).expect("lock");
    assert!(locked().contains("    thc (1.0.0)"), "{}", locked());

    // thc 2.0.0 breaks tha's `~> 1.0`: bundler moves thc only to 1.0.1, which is not the
    // target; the change is undone.
    let before = tree(&project, &items);
    let (code, out) = patch_gems(&["thc=2.0.0"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("rolled back: thc is 1.0.1, not 2.0.0"),
        "{out}"
    );
    assert_eq!(
        tree(&project, &items),
        before,
        "the rollback restores every byte"
    );

    // A version the source does not have: bundler fails, nothing changes.
    let (code, out) = patch_gems(&["thb=9.9.9"]);
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("not installed: bundle update exited"), "{out}");
    assert_eq!(tree(&project, &items), before);

    // The upgrade: the exact pin moves (its style kept), the transitive gem within tha's range.
    let (code, out) = patch_gems(&["thb=1.1.0", "thc=1.0.1"]);
    assert_eq!(code, 0, "{out}");
    let gemfile = std::fs::read_to_string(project.join("Gemfile")).expect("Gemfile");
    assert!(
        gemfile.contains("gem 'thb', '= 1.1.0'") && gemfile.contains("gem \"tha\", \"1.0.0\""),
        "{gemfile}"
    );
    let lock = locked();
    assert!(
        lock.contains("    thb (1.1.0)") && lock.contains("    thc (1.0.1)"),
        "{lock}"
    );
    bundle(&["check"]);
}

/// A package zip for a Composer artifact repository: its composer.json and one source file.
fn composer_package(artifacts: &Path, name: &str, version: &str, extra: &str) {
    std::fs::create_dir_all(artifacts).expect("artifacts");
    let file = artifacts.join(format!("{}-{version}.zip", name.replace('/', "-")));
    let mut z = zip::ZipWriter::new(std::fs::File::create(file).expect("zip"));
    let opts = zip::write::SimpleFileOptions::default();
    z.start_file("composer.json", opts).expect("entry");
    z.write_all(
        format!(r#"{{"name":"{name}","version":"{version}","type":"library","license":"MIT","description":"test package"{extra}}}"#)
            .as_bytes(),
    )
    .expect("write");
    z.start_file("src/Version.php", opts).expect("entry");
    z.write_all(format!("<?php\nreturn '{version}';\n").as_bytes())
        .expect("write");
    z.finish().expect("zip");
}

#[test]
fn composer_projects_upgrade_roll_back_a_broken_upgrade_and_change_nothing_on_failure() {
    let work = scratch("composer");
    let artifacts = work.0.join("artifacts");
    composer_package(&artifacts, "th/c", "1.0.0", "");
    composer_package(&artifacts, "th/a", "1.0.0", r#","require":{"th/c":"^1.0"}"#);
    composer_package(&artifacts, "th/b", "1.0.0", "");
    let project = work.0.join("srv/portal");
    std::fs::create_dir_all(&project).expect("project");
    std::fs::write(
        project.join("composer.json"),
        format!(
            "{{\n    \"name\": \"th/portal\",\n    \"description\": \"portal\",\n    \"license\": \"MIT\",\n    \"repositories\": [{{\"type\": \"artifact\", \"url\": \"{}\"}}, {{\"packagist.org\": false}}],\n    \"require\": {{\n        \"th/a\": \"^1.0\",\n        \"th/b\": \"1.0.0\"\n    }}\n}}\n",
            artifacts.display()
        ),
    )
    .expect("composer.json");
    let env = [
        ("COMPOSER_HOME", work.0.join("composer-home")),
        ("COMPOSER_CACHE_DIR", work.0.join("composer-cache")),
    ];
    sh(Command::new("composer")
        .args(["install", "--no-interaction", "--no-progress"])
        .current_dir(&project)
        .envs(env.iter().map(|(k, v)| (*k, v.as_os_str()))));
    // Newer versions arrive after the project locked its packages.
    composer_package(&artifacts, "th/c", "1.0.1", "");
    composer_package(&artifacts, "th/c", "2.0.0", "");
    composer_package(&artifacts, "th/b", "1.1.0", "");
    let state = work.0.join("agent");
    let items = ["composer.json", "composer.lock", "vendor"];
    let patch_composer = |packages: &[&str]| {
        let env: Vec<(&str, &std::ffi::OsStr)> =
            env.iter().map(|(k, v)| (*k, v.as_os_str())).collect();
        patch_with(&state, "composer", &project, packages, &env)
    };
    let locked = |name: &str| {
        let lock: serde_json::Value =
            serde_json::from_slice(&std::fs::read(project.join("composer.lock")).expect("lock"))
                .expect("json");
        lock["packages"]
            .as_array()
            .and_then(|p| p.iter().find(|x| x["name"] == name))
            .and_then(|x| x["version"].as_str())
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(locked("th/c"), "1.0.0");

    // th/c 2.0.0 breaks th/a's `^1.0`: composer moves th/c only to 1.0.1, not the target; undone.
    let before = tree(&project, &items);
    let (code, out) = patch_composer(&["th/c=2.0.0"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("rolled back: th/c is 1.0.1, not 2.0.0"),
        "{out}"
    );
    assert_eq!(
        tree(&project, &items),
        before,
        "the rollback restores every byte"
    );

    // A version no repository has: composer fails, nothing changes.
    let (code, out) = patch_composer(&["th/b=9.9.9"]);
    assert_ne!(code, 0, "{out}");
    assert!(
        out.contains("not installed: composer update exited"),
        "{out}"
    );
    assert_eq!(tree(&project, &items), before);

    // The upgrade: the exact pin moves, the transitive package within th/a's range.
    let (code, out) = patch_composer(&["th/b=1.1.0", "th/c=1.0.1"]);
    assert_eq!(code, 0, "{out}");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(project.join("composer.json")).expect("read"))
            .expect("json");
    assert_eq!(manifest["require"]["th/b"], "1.1.0");
    assert_eq!(manifest["require"]["th/a"], "^1.0");
    assert_eq!(locked("th/b"), "1.1.0");
    assert_eq!(locked("th/c"), "1.0.1");
    assert_eq!(
        std::fs::read_to_string(project.join("vendor/th/c/src/Version.php")).expect("installed"),
        "<?php\nreturn '1.0.1';\n"
    );
}

/// A real unprivileged user made for one test (`useradd`), removed when dropped.
struct User {
    name: String,
    uid: u32,
}

impl User {
    fn new(home: &Path) -> User {
        let name = format!("thpo{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
        sh(Command::new("useradd")
            .args([
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                "--home-dir",
            ])
            .arg(home)
            .arg(&name));
        std::fs::create_dir_all(home).expect("home");
        sh(Command::new("chown").arg(&name).arg(home));
        let uid = sh(Command::new("id").args(["-u", &name]))
            .trim()
            .parse()
            .expect("uid");
        User { name, uid }
    }

    fn owns(&self, path: &Path) {
        sh(Command::new("chown")
            .args(["-R", "-h", &format!("{0}:{0}", self.name)])
            .arg(path));
    }
}

impl Drop for User {
    fn drop(&mut self) {
        let _ = Command::new("userdel").arg(&self.name).output();
    }
}

/// CONTRACT 30: a project owned by an unprivileged user has its interpreter and package
/// manager run as that user, with that user's HOME and a clean environment; a program
/// anyone else could change is refused before it runs; a real pip upgrade as the owner
/// leaves what it installed owned by the owner.
#[test]
fn a_projects_own_tools_run_as_its_owner_never_as_root() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    if sh(Command::new("id").arg("-u")).trim() != "0" {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI runs the agent's tests as root, as the agent runs"
        );
        eprintln!("skipped: dropping privileges needs the test to run as root");
        return;
    }
    let work = scratch("owner");
    let user = User::new(&work.0.join("home"));
    let state = work.0.join("agent");

    // A project whose `.venv/bin/python` its owner replaced: it records who ran it and how.
    let fake = work.0.join("srv/fake");
    std::fs::create_dir_all(fake.join(".venv/bin")).expect("venv");
    std::fs::write(fake.join("requirements.txt"), "thb==1.0\n").expect("requirements");
    let python = fake.join(".venv/bin/python");
    std::fs::write(
        &python,
        "#!/bin/sh\nid -u > ran-as\nid -G >> ran-as\nenv > ran-with\nexit 1\n",
    )
    .expect("python");
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).expect("mode");
    user.owns(&fake);
    let (code, out) = patch_with(
        &state,
        "pip",
        &fake,
        &["thb=1.1"],
        &[
            ("TRUSTHUB_PROBE_SECRET", std::ffi::OsStr::new("hunter2")),
            ("GOPROXY", std::ffi::OsStr::new("off")),
        ],
    );
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("not installed: pip install exited 1"), "{out}");
    let ran = std::fs::read_to_string(fake.join("ran-as")).expect("the interpreter ran");
    let gid = fake.metadata().expect("meta").gid();
    assert_eq!(
        ran,
        format!("{}\n{gid}\n", user.uid),
        "as the owner, with only the owner's group"
    );
    let env = std::fs::read_to_string(fake.join("ran-with")).expect("env");
    assert!(
        env.contains(&format!("HOME={}\n", work.0.join("home").display())),
        "{env}"
    );
    assert!(env.contains(&format!("USER={}\n", user.name)), "{env}");
    assert!(
        !env.contains("TRUSTHUB_PROBE_SECRET"),
        "the agent's environment does not cross: {env}"
    );
    assert!(
        env.contains("GOPROXY=off\n"),
        "a host's registry settings do: {env}"
    );

    // The same program writable by others: refused, never run.
    std::fs::remove_file(fake.join("ran-as")).expect("rm");
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o777)).expect("mode");
    let (code, out) = patch(&state, "pip", &fake, &["thb=1.1"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("rolled back: refused to run")
            && out.contains(&python.display().to_string())
            && out.contains("writable by its group or by others"),
        "{out}"
    );
    assert!(!fake.join("ran-as").exists(), "nothing ran");

    // A real pip in the owner's virtualenv: the upgrade lands, and what it installed
    // belongs to the owner.
    let files = work.0.join("files");
    std::fs::create_dir_all(&files).expect("files");
    wheel(&files, "thb", "1.0", &[]);
    wheel(&files, "thb", "1.1", &[]);
    let simple = work.0.join("simple");
    simple_index(&simple, &files);
    let project = work.0.join("srv/api");
    std::fs::create_dir_all(&project).expect("project");
    sh(Command::new("/usr/bin/python3")
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
    std::fs::write(project.join("requirements.txt"), "thb==1.0\n").expect("requirements");
    sh(Command::new(project.join(".venv/bin/python"))
        .args(["-m", "pip", "install", "-q", "-r", "requirements.txt"])
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .current_dir(&project));
    user.owns(&project);
    let (code, out) = patch(&state, "pip", &project, &["thb=1.1"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        std::fs::read_to_string(project.join("requirements.txt")).expect("read"),
        "thb==1.1\n"
    );
    let site = project.join(".venv/lib/python3.11/site-packages");
    let installed = std::fs::read_dir(&site)
        .expect("site-packages")
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with("thb-1.1"))
        .expect("thb 1.1 installed");
    assert_eq!(
        installed.metadata().expect("meta").uid(),
        user.uid,
        "pip ran as the owner"
    );
}
