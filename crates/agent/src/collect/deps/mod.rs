//! Dependency sources (CONTRACT 29): the lockfiles of the five ecosystems, each read by a
//! parser for the format its tool writes, named by `format` in the inventory so a finding
//! says where a package came from. A file that cannot be read is reported with the reason,
//! never as a project without dependencies.

pub mod discover;
pub mod gobinary;
pub mod golang;
pub mod installed;
pub mod locks;
pub mod npm;
pub mod python;

use std::path::Path;

/// Whether `have` is `want` or later: equal strings, else the dot-separated parts compared
/// numerically where both are numbers (a pre-release tail such as `-rc.1` sorts first).
pub fn at_least(have: &str, want: &str) -> bool {
    fn parts(v: &str) -> (Vec<&str>, bool) {
        let v = v.trim_start_matches('v');
        let (main, pre) = match v.find(['-', '+']) {
            Some(i) => (&v[..i], v[i..].starts_with('-')),
            None => (v, false),
        };
        (main.split('.').collect(), pre)
    }
    if have == want {
        return true;
    }
    let ((h, h_pre), (w, w_pre)) = (parts(have), parts(want));
    for i in 0..h.len().max(w.len()) {
        let (a, b) = (
            h.get(i).copied().unwrap_or("0"),
            w.get(i).copied().unwrap_or("0"),
        );
        let ord = match (a.parse::<u64>(), b.parse::<u64>()) {
            (Ok(x), Ok(y)) => x.cmp(&y),
            _ => a.cmp(b),
        };
        if ord != std::cmp::Ordering::Equal {
            return ord.is_gt();
        }
    }
    // Same release: a pre-release is before it.
    !h_pre || w_pre
}

/// One package a source names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Dep {
    /// `npm`, `pip`, `composer`, `RubyGems`, `Go` (the inventory's ecosystem names).
    pub ecosystem: &'static str,
    /// The package.
    pub name: String,
    /// Its version.
    pub version: String,
}

impl Dep {
    /// A package; Python's ecosystem is written `pip` in the inventory.
    pub fn new(ecosystem: &'static str, name: &str, version: &str) -> Dep {
        Dep {
            ecosystem: if ecosystem == "PyPI" {
                "pip"
            } else {
                ecosystem
            },
            name: name.to_owned(),
            version: version.to_owned(),
        }
    }
}

/// The format of a lockfile by its name (`yarn.lock` is told apart by its content).
pub fn lockfile_format(file_name: &str) -> Option<&'static str> {
    Some(match file_name {
        "package-lock.json" => "package-lock",
        "npm-shrinkwrap.json" => "npm-shrinkwrap",
        "yarn.lock" => "yarn",
        "pnpm-lock.yaml" => "pnpm-lock",
        "bun.lock" => "bun-lock",
        "requirements.txt" => "requirements",
        "Pipfile.lock" => "pipfile-lock",
        "poetry.lock" => "poetry-lock",
        "pdm.lock" => "pdm-lock",
        "uv.lock" => "uv-lock",
        "composer.lock" => "composer-lock",
        "Gemfile.lock" | "gems.locked" => "gemfile-lock",
        "go.sum" => "go-sum",
        "go.mod" => "go-mod",
        n if n == "pylock.toml" || (n.starts_with("pylock.") && n.ends_with(".toml")) => "pylock",
        // `requirements-dev.txt`, `requirements_docs.txt`, as pip users name them.
        n if n.starts_with("requirements") && n.ends_with(".txt") => "requirements",
        _ => return None,
    })
}

/// Reads a lockfile: its format (yarn's resolved to `yarn-v1` or `yarn-berry`) and packages,
/// sorted and without repeats; the reason when it cannot be read.
pub fn parse_lockfile(path: &Path, text: &str) -> Result<(&'static str, Vec<Dep>), String> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let format = lockfile_format(name).ok_or_else(|| format!("{name} is not a known lockfile"))?;
    let (format, mut deps) = match format {
        "package-lock" | "npm-shrinkwrap" => (format, npm::package_lock(text)?),
        "yarn" => npm::yarn_lock(text)?,
        "pnpm-lock" => (format, npm::pnpm_lock(text)?),
        "bun-lock" => (format, npm::bun_lock(text)?),
        "requirements" => (format, python::requirements(text)?),
        "pipfile-lock" => (format, python::pipfile_lock(text)?),
        "poetry-lock" | "pdm-lock" | "uv-lock" => (format, python::package_tables(text)?),
        "pylock" => (format, python::pylock(text)?),
        "go-mod" => {
            let required = golang::go_mod(text)?;
            // Before Go 1.17 (or without a `go` line) go.mod holds only direct requirements.
            let sum = path.with_file_name("go.sum");
            let deps = if golang::go_version(text).is_none_or(|v| v < (1, 17)) && sum.is_file() {
                let text = std::fs::read_to_string(&sum)
                    .map_err(|e| format!("go.sum beside a go.mod before Go 1.17: {e}"))?;
                golang::with_go_sum(
                    required,
                    golang::go_sum(&text).map_err(|e| format!("go.sum: {e}"))?,
                )
            } else {
                required
            };
            (format, deps)
        }
        "go-sum" => (format, golang::go_sum(text)?),
        _ => (
            format,
            locks::read(path, text)?
                .into_iter()
                .map(|(eco, name, version)| Dep::new(eco, &name, &version))
                .collect(),
        ),
    };
    deps.sort();
    deps.dedup();
    Ok((format, deps))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(name: &str) -> String {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/deps")
            .join(name);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    fn names(deps: &[Dep]) -> Vec<String> {
        deps.iter()
            .map(|d| format!("{}@{}", d.name, d.version))
            .collect()
    }

    /// Lockfiles written by the real tools (npm 11, yarn 1.22.22 and 4.5.3 through corepack,
    /// pnpm 9.15.0; uv and pipenv) for one small project each.
    #[test]
    fn lockfiles_written_by_the_real_tools_are_read() {
        let npm_project = ["@types/minimist@1.2.2", "lodash@4.17.20", "minimist@1.2.5"];
        for (dir, file, format) in [
            ("npm", "package-lock.json", "package-lock"),
            ("yarn1", "yarn.lock", "yarn-v1"),
            ("berry", "yarn.lock", "yarn-berry"),
            ("pnpm", "pnpm-lock.yaml", "pnpm-lock"),
        ] {
            let (f, deps) =
                parse_lockfile(Path::new(file), &read(&format!("{dir}/{file}"))).expect(dir);
            assert_eq!(f, format, "{dir}");
            assert_eq!(names(&deps), npm_project, "{dir}");
            assert!(deps.iter().all(|d| d.ecosystem == "npm"));
        }
        let py_project = [
            "certifi@2026.10.19.post1",
            "chardet@3.0.4",
            "idna@2.10",
            "jinja2@2.11.2",
            "markupsafe@3.0.4",
            "requests@2.25.0",
            "urllib3@1.26.20",
        ];
        for (file, format) in [
            ("uv.lock", "uv-lock"),
            ("pylock.toml", "pylock"),
            ("Pipfile.lock", "pipfile-lock"),
        ] {
            let (f, deps) =
                parse_lockfile(Path::new(file), &read(&format!("py/{file}"))).expect(file);
            assert_eq!(f, format);
            let got: Vec<String> = names(&deps).into_iter().map(|n| n.to_lowercase()).collect();
            assert_eq!(got, py_project, "{file}");
            assert!(deps.iter().all(|d| d.ecosystem == "pip"));
        }
    }

    /// Trees the real tools installed (npm 11, pnpm 9 with its `.pnpm` store and links, pip
    /// into a virtualenv), package metadata files only.
    #[test]
    fn installed_trees_are_read_as_the_tools_left_them() {
        let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/deps/installed");
        let npm_project = ["@types/minimist@1.2.2", "lodash@4.17.20", "minimist@1.2.5"];
        for tool in ["npm", "pnpm"] {
            let mut deps =
                installed::node_modules(&base.join(tool).join("node_modules")).expect(tool);
            deps.sort();
            assert_eq!(
                names(&deps),
                npm_project,
                "{tool}: each package once, links not followed"
            );
        }
        let trees = installed::trees_of(&base.join("py"));
        assert_eq!(trees.len(), 1);
        assert_eq!(trees[0].0, "python-dist-info");
        let mut deps = installed::site_packages(&trees[0].1).expect("site-packages");
        deps.sort();
        let got: Vec<String> = names(&deps);
        for want in [
            "Jinja2@2.11.2",
            "requests@2.25.0",
            "urllib3@1.26.20",
            "MarkupSafe@3.0.4",
            "pip@23.2.1",
        ] {
            assert!(got.contains(&want.to_owned()), "{want} in {got:?}");
        }
        assert!(deps.iter().all(|d| d.ecosystem == "pip"));
        assert_eq!(
            installed::metadata("Metadata-Version: 2.1\nName: a\n\nVersion: 1"),
            None,
            "headers end at the blank line"
        );
    }

    /// Lockfiles of public projects (tests/data/corpus, licences in its LICENSES.md) read as
    /// OSV-Scanner reads them (`osv-scanner.json`, recorded by bench/osv_compare.py with
    /// PyPI's osvpy): the same packages per file and, where the file pins one, the same
    /// version. Deliberate differences, each checked to be only that: an unpinned requirement
    /// (`sphinx>=4.0.0`) has no version here (OSV-Scanner takes the bound); uv's entry for
    /// the project itself (its `editable`/`virtual` source) is not a dependency; the `go`
    /// directive of a go.mod is not the toolchain that builds it (OSV-Scanner adds `stdlib`
    /// at `<go>.99`); a git dependency is named by its package name (OSV-Scanner by its
    /// URL); and pnpm v6 packages whose key carries peer suffixes are read (OSV-Scanner
    /// leaves some out); composer versions lose their `v`. OSV-Scanner does not read go.sum.
    #[test]
    fn public_lockfiles_read_as_osv_scanner_reads_them() {
        use std::collections::{BTreeMap, BTreeSet};
        let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/corpus");
        let osv: BTreeMap<String, Vec<String>> = serde_json::from_str(
            &std::fs::read_to_string(base.join("osv-scanner.json")).expect("osv-scanner.json"),
        )
        .expect("json");
        assert!(osv.len() >= 60, "{}", osv.len());
        // PEP 503 for Python names, lowercase for the others, as the recording did.
        let key = |d: &Dep| {
            let n = d.name.to_lowercase();
            if d.ecosystem == "pip" {
                n.replace(['_', '.'], "-")
            } else {
                n
            }
        };
        for (source, found) in &osv {
            let path = base.join(source);
            let (format, deps) =
                parse_lockfile(&path, &std::fs::read_to_string(&path).expect(source))
                    .expect(source);
            let ours: BTreeSet<(String, String)> =
                deps.iter().map(|d| (key(d), d.version.clone())).collect();
            let theirs: BTreeSet<(String, String)> = found
                .iter()
                .map(|p| {
                    let (n, v) = p.rsplit_once('@').expect("name@version");
                    (n.to_owned(), v.to_owned())
                })
                .collect();
            let project = source.split("--").next().unwrap_or_default().to_owned();
            let names = |s: &BTreeSet<(String, String)>| -> BTreeSet<String> {
                s.iter().map(|(n, _)| n.clone()).collect()
            };
            let missing: Vec<String> = names(&theirs)
                .difference(&names(&ours))
                .filter(|n| !n.starts_with("https://") && !n.starts_with("git+"))
                .cloned()
                .collect();
            let explained = match format {
                "uv-lock" => missing == [project.clone()],
                "go-mod" => missing == ["stdlib"],
                _ => false,
            };
            assert!(
                missing.is_empty() || explained,
                "{source}: not read: {missing:?}"
            );
            let url_named = theirs
                .iter()
                .filter(|(n, _)| n.starts_with("https://"))
                .count();
            let extra: Vec<String> = names(&ours).difference(&names(&theirs)).cloned().collect();
            assert!(
                extra.len() <= url_named || format == "pnpm-lock",
                "{source}: read but not by OSV-Scanner: {extra:?}"
            );
            // Composer versions are compared without their `v` (OSV-Scanner keeps it).
            let bare = |v: &str| {
                if format == "composer-lock" {
                    v.trim_start_matches('v').to_owned()
                } else {
                    v.to_owned()
                }
            };
            for (n, v) in &ours {
                if !v.is_empty() && names(&theirs).contains(n) {
                    assert!(
                        theirs.iter().any(|(tn, tv)| tn == n && bare(tv) == *v),
                        "{source}: {n}@{v}"
                    );
                }
            }
        }
    }

    /// Gem homes as RubyGems writes them: the saved fixture (two gemspecs `gem install` wrote,
    /// one of a platform gem, and one in the older style without a stub line), then a gem
    /// home the real `gem` tool fills in this test (`gem build` + `gem install --local`).
    #[test]
    fn installed_gems_are_read_as_rubygems_wrote_them() {
        let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/deps/installed/gems");
        let mut deps = installed::gem_home(&base).expect("gem home");
        deps.sort();
        assert_eq!(
            names(&deps),
            ["nokogiri@1.13.9", "rack@2.2.3", "rake@0.8.7"]
        );
        assert!(deps.iter().all(|d| d.ecosystem == "RubyGems"));
        assert_eq!(installed::gemspec("s.summary = \"x\"\n"), None);

        let dir = std::env::temp_dir().join(format!("gems-{}", uuid::Uuid::new_v4().simple()));
        let project = dir.join("app");
        std::fs::create_dir_all(&project).expect("dir");
        std::fs::write(
            dir.join("a.gemspec"),
            "Gem::Specification.new do |s|\n  s.name = \"json-demo_x\"\n  s.version = \"2.0.0.rc1\"\n  \
             s.summary = \"s\"\n  s.authors = [\"t\"]\n  s.files = []\nend\n",
        )
        .expect("gemspec");
        let gem = |args: &[&str]| {
            let out = std::process::Command::new("gem")
                .args(args)
                .current_dir(&dir)
                .output()
                .expect("the gem tool (installed by .ci/run)");
            assert!(
                out.status.success(),
                "gem {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        gem(&["build", "a.gemspec"]);
        let home = project.join("vendor/bundle/ruby/3.1.0");
        gem(&[
            "install",
            "--local",
            "--no-document",
            "--install-dir",
            &home.display().to_string(),
            "json-demo_x-2.0.0.rc1.gem",
        ]);
        let trees = installed::trees_of(&project);
        assert_eq!(trees, [("gemspec", home.clone())]);
        let deps = installed::gem_home(&home).expect("gem home");
        assert_eq!(names(&deps), ["json-demo_x@2.0.0.rc1"]);
        // A gemspec without a name or version is the tree's error, never zero gems.
        std::fs::write(home.join("specifications/broken.gemspec"), "# nothing\n").expect("write");
        let err = installed::gem_home(&home).expect_err("broken");
        assert!(err.contains("broken.gemspec"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn older_formats_are_read() {
        // package-lock v1: nested `dependencies`.
        let v1 = r#"{"lockfileVersion": 1, "dependencies": {"a": {"version": "1.0.0", "dependencies": {"b": {"version": "2.0.0"}}}, "local": {"version": "file:../x"}, "ansi-cjs": {"version": "npm:@s/ansi@7.0.0"}}}"#;
        let mut got = names(&npm::package_lock(v1).expect("v1"));
        got.sort();
        // An alias is the package it installs.
        assert_eq!(got, ["@s/ansi@7.0.0", "a@1.0.0", "b@2.0.0"]);
        let v3 = r#"{"lockfileVersion": 3, "packages": {"": {"name": "app"}, "node_modules/wrap-ansi-cjs": {"name": "wrap-ansi", "version": "7.0.0"}}}"#;
        assert_eq!(
            names(&npm::package_lock(v3).expect("v3")),
            ["wrap-ansi@7.0.0"]
        );
        // pnpm v5 and v6 keys, with peer suffixes.
        let v5 = "lockfileVersion: 5.4\n\npackages:\n\n  /lodash/4.17.20:\n    resolution: {integrity: x}\n\n  /@babel/core/7.1.0_react@18.0.0:\n    dev: true\n\n  \
                  /string_decoder/1.3.0:\n    dev: true\n\n  /@types/babel__core/7.1.19_x@1.0.0:\n    dev: true\n\n  \
                  registry.npmjs.org/@types/node/14.0.22:\n    dev: true\n";
        // Names with `_`, a registry host before the name.
        assert_eq!(
            names(&npm::pnpm_lock(v5).expect("v5")),
            [
                "lodash@4.17.20",
                "@babel/core@7.1.0",
                "string_decoder@1.3.0",
                "@types/babel__core@7.1.19",
                "@types/node@14.0.22"
            ]
        );
        let v6 = "lockfileVersion: '6.0'\n\npackages:\n\n  /lodash@4.17.20:\n    resolution: {integrity: x}\n\n  /@types/react@18.0.0(react@18.0.0):\n    dev: true\n";
        assert_eq!(
            names(&npm::pnpm_lock(v6).expect("v6")),
            ["lodash@4.17.20", "@types/react@18.0.0"]
        );
        // bun.lock, trailing commas and all.
        let bun = "{\n  \"lockfileVersion\": 1,\n  \"workspaces\": {\"\": {\"name\": \"app\",},},\n  \"packages\": {\n    \"lodash\": [\"lodash@4.17.20\", \"\", {}, \"sha512-x\"],\n    \"@types/minimist\": [\"@types/minimist@1.2.2\", \"\", {}, \"sha512-y\"],\n  },\n}\n";
        assert_eq!(
            names(&npm::bun_lock(bun).expect("bun")),
            ["@types/minimist@1.2.2", "lodash@4.17.20"]
        );
        // Bundler's gems.locked is a Gemfile.lock by another name.
        let gems = "GEM\n  remote: https://rubygems.org/\n  specs:\n    rack (3.0.8)\n\nPLATFORMS\n  ruby\n";
        let (f, deps) = parse_lockfile(Path::new("gems.locked"), gems).expect("gems.locked");
        assert_eq!(
            (f, names(&deps)),
            ("gemfile-lock", vec!["rack@3.0.8".to_owned()])
        );
        // requirements with extras, markers, options; an unpinned one without a version.
        let req = "-r base.txt\n--index-url https://x\nrequests[socks]==2.25.0 ; python_version > '3'\nflask>=2\n# c\n";
        assert_eq!(
            names(&python::requirements(req).expect("req")),
            ["requests@2.25.0", "flask@"]
        );
    }

    /// A `go.mod` the real toolchain wrote (`go mod init`, `go mod edit -require/-replace`).
    #[test]
    fn a_go_mod_written_by_go_is_read() {
        use std::process::Command;
        if Command::new("go").arg("version").output().is_err() {
            assert!(std::env::var_os("CI").is_none(), "go is required in CI");
            return;
        }
        let dir = std::env::temp_dir().join(format!("gomod-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("dir");
        let go = |args: &[&str]| {
            let o = Command::new("go")
                .args(args)
                .current_dir(&dir)
                .env("GOFLAGS", "-mod=mod")
                .env("GOPROXY", "off")
                .output()
                .expect("go");
            assert!(
                o.status.success(),
                "{args:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        };
        go(&["mod", "init", "example.com/app"]);
        go(&[
            "mod",
            "edit",
            "-require=golang.org/x/net@v0.17.0",
            "-require=github.com/gin-gonic/gin@v1.9.0",
        ]);
        go(&[
            "mod",
            "edit",
            "-replace=github.com/gin-gonic/gin@v1.9.0=github.com/gin-gonic/gin@v1.9.1",
        ]);
        let text = std::fs::read_to_string(dir.join("go.mod")).expect("go.mod");
        let (f, deps) = parse_lockfile(&dir.join("go.mod"), &text).expect("go.mod");
        assert_eq!(f, "go-mod");
        assert_eq!(
            names(&deps),
            ["github.com/gin-gonic/gin@1.9.1", "golang.org/x/net@0.17.0"],
            "{text}"
        );
        // The toolchain (Go 1.21+ writes it) is the standard library's version; a `go`
        // directive without a patch level says none.
        let newer = format!("{text}\ntoolchain go1.22.3\n");
        let (_, deps) = parse_lockfile(&dir.join("go.mod"), &newer).expect("go.mod");
        assert!(names(&deps).contains(&"stdlib@1.22.3".to_owned()));
        assert!(
            golang::go_mod("module a\nrequire (\n  x\n)\n")
                .expect_err("bad")
                .contains("line 3")
        );
        assert!(
            golang::go_mod("require x v1.0.0\n")
                .expect_err("no module")
                .contains("module")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn unreadable_lockfiles_say_why_and_never_read_as_empty() {
        for (file, text, says) in [
            ("package-lock.json", "{\"packages\": ", "not valid JSON"),
            ("package-lock.json", "[]", "top level"),
            (
                "yarn.lock",
                "lodash@^4.0.0\n  version \"4.17.20\"\n",
                "line 1",
            ),
            (
                "yarn.lock",
                "lodash@^4.0.0:\n  resolved \"x\"\n",
                "has no version",
            ),
            (
                "pnpm-lock.yaml",
                "packages:\n  /a/1.0.0:\n",
                "lockfileVersion",
            ),
            (
                "pnpm-lock.yaml",
                "lockfileVersion: '9.0'\npackages:\n  lodash\n",
                "line 3",
            ),
            ("bun.lock", "{\"packages\": {\"a\": [1]}}", "first element"),
            (
                "requirements.txt",
                "requests==2.25.0\nthis is not a requirement\n",
                "line 2",
            ),
            ("Pipfile.lock", "{\"default\": {}}", "_meta"),
            // CONTRACT 30: lines the format does not define, in every format.
            (
                "pnpm-lock.yaml",
                "lockfileVersion: '9.0'\nthis is not yaml\npackages:\n",
                "line 2",
            ),
            (
                "Gemfile.lock",
                "GEM\n  remote: https://rubygems.org/\n  specs:\n    rack (2.2.3)\ngarbage here\n",
                "line 5",
            ),
            (
                "Gemfile.lock",
                "GEM\n  remote: https://rubygems.org/\n  specs:\n    rack 2.2.3\n",
                "line 4",
            ),
            (
                "go.sum",
                "golang.org/x/net v0.17.0 h1:abc=\nnot a go.sum line\n",
                "line 2",
            ),
            ("go.sum", "golang.org/x/net 0.17.0 h1:abc=\n", "line 1"),
            ("uv.lock", "[[package]\nname =", "not valid TOML"),
            (
                "pylock.toml",
                "[[packages]]\nname = \"a\"\nversion = \"1\"\n",
                "lock-version",
            ),
        ] {
            let e = parse_lockfile(Path::new(file), text).expect_err(file);
            assert!(e.contains(says), "{file}: {e}");
        }
    }

    /// CONTRACT 30: a module whose go.mod predates Go 1.17 lists only its direct
    /// requirements; the modules its build also uses come from go.sum, each at the highest
    /// version hashed. From 1.17 on, go.mod alone.
    #[test]
    fn a_go_mod_before_1_17_takes_its_transitive_modules_from_go_sum() {
        let dir = std::env::temp_dir().join(format!("gosum116-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("dir");
        let sum = "github.com/a/direct v1.2.0 h1:x=\ngithub.com/a/direct v1.2.0/go.mod h1:y=\n\
                   golang.org/x/text v0.3.0 h1:a=\ngolang.org/x/text v0.3.7 h1:b=\n\
                   golang.org/x/text v0.3.7/go.mod h1:c=\ngolang.org/x/sys v0.1.0/go.mod h1:d=\n";
        std::fs::write(dir.join("go.sum"), sum).expect("go.sum");
        let old = "module example.com/app\n\ngo 1.16\n\nrequire github.com/a/direct v1.2.0\n";
        let (_, deps) = parse_lockfile(&dir.join("go.mod"), old).expect("go.mod");
        assert_eq!(
            names(&deps),
            ["github.com/a/direct@1.2.0", "golang.org/x/text@0.3.7"],
            "the transitive module at its highest hashed version; a go.mod-only line is no build"
        );
        let new = old.replace("go 1.16", "go 1.21");
        let (_, deps) = parse_lockfile(&dir.join("go.mod"), &new).expect("go.mod");
        assert_eq!(names(&deps), ["github.com/a/direct@1.2.0"]);
        std::fs::write(dir.join("go.sum"), "garbage\n").expect("go.sum");
        assert!(
            parse_lockfile(&dir.join("go.mod"), old).is_err_and(|e| e.contains("go.sum: line 1")),
            "a corrupt go.sum makes the module unreadable, not smaller"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn malformed_input_is_an_error_or_a_reading_never_a_panic() {
        // Every prefix of every real file: a parser either reads it or says why.
        for (dir, file) in [
            ("npm", "package-lock.json"),
            ("yarn1", "yarn.lock"),
            ("berry", "yarn.lock"),
            ("pnpm", "pnpm-lock.yaml"),
            ("py", "uv.lock"),
            ("py", "Pipfile.lock"),
        ] {
            let text = read(&format!("{dir}/{file}"));
            let mut cut = 0;
            while cut < text.len() {
                if text.is_char_boundary(cut) {
                    let _ = parse_lockfile(Path::new(file), &text[..cut]);
                }
                cut += 97;
            }
        }
    }
}
