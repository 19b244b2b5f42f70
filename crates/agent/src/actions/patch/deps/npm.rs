//! npm: a direct dependency keeps its section and its style (an exact pin stays exact); a
//! transitive one is forced with `overrides`; the result must pass `npm ls --all`.

use super::super::Log;
use super::Project;
use super::at_least;

pub const ITEMS: [&str; 4] = [
    "package.json",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "node_modules",
];
/// Every version of `name` a `package-lock.json` installs (each `node_modules/<name>` entry).
pub fn lock_versions(lock: &str, name: &str) -> Result<Vec<(String, String)>, String> {
    let v: serde_json::Value =
        serde_json::from_str(lock).map_err(|e| format!("package-lock.json: {e}"))?;
    let suffix = format!("node_modules/{name}");
    Ok(v["packages"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| {
            k.ends_with(&suffix)
                && (k.len() == suffix.len() || k[..k.len() - suffix.len()].ends_with('/'))
        })
        .filter_map(|(k, p)| Some((k.clone(), p["version"].as_str()?.to_owned())))
        .collect())
}

/// npm: `npm install` with the lockfile, checked by `npm ls --all`.
pub(super) struct Npm;

impl super::DependencyManager for Npm {
    const PROGRAM: &'static str = "npm";
    const TOOL: &'static str = "npm";
    const MANIFESTS: &'static [&'static str] = &["package.json"];
    const ITEMS: &'static [&'static str] = &ITEMS;

    async fn install(&self, log: &mut Log, p: &Project<'_>) -> Result<(), (i64, String)> {
        let (project, targets) = (p.dir, p.targets);
        let manifest: serde_json::Value = super::read_manifest(project, "package.json")?;
        let spec = |name: &str| {
            SECTIONS
                .iter()
                .find_map(|s| manifest[*s][name].as_str().map(str::to_owned))
        };
        // Direct dependencies keep their section and their style (an exact pin stays exact);
        // a transitive one is forced with `overrides`, npm's own mechanism.
        let (mut exact, mut ranged, mut overrides) = (Vec::new(), Vec::new(), Vec::new());
        for t in targets {
            let spec_of = format!("{}@{}", t.name, t.version);
            match spec(&t.name) {
                Some(s) if s.starts_with(|c: char| c.is_ascii_digit()) => exact.push(spec_of),
                Some(_) => ranged.push(spec_of),
                None => overrides.push(format!("overrides[{}]={}", t.name, t.version)),
            }
        }
        const FLAGS: [&str; 4] = [
            "--no-audit",
            "--no-fund",
            "--ignore-scripts",
            "--no-progress",
        ];
        let mut runs: Vec<Vec<String>> = Vec::new();
        if !overrides.is_empty() {
            let mut set = vec!["pkg".to_owned(), "set".to_owned()];
            set.extend(overrides);
            runs.push(set);
            runs.push(
                std::iter::once("install".to_owned())
                    .chain(FLAGS.map(String::from))
                    .collect(),
            );
        }
        for (list, extra) in [(exact, Some("--save-exact")), (ranged, None)] {
            if list.is_empty() {
                continue;
            }
            let mut args: Vec<String> = vec!["install".into()];
            args.extend(FLAGS.map(String::from));
            args.extend(extra.map(String::from));
            args.extend(list);
            runs.push(args);
        }
        for args in runs {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let (code, _) = log.run("npm", &args, ENV, Some(project)).await;
            if code != 0 {
                return Err((code, format!("npm {} exited {code}", args[0])));
            }
        }
        Ok(())
    }

    async fn verify(&self, log: &mut Log, p: &Project<'_>) -> Result<(), String> {
        let (project, targets) = (p.dir, p.targets);
        let lock = std::fs::read_to_string(project.join("package-lock.json"))
            .map_err(|e| format!("package-lock.json: {e}"))?;
        for t in targets {
            let found = lock_versions(&lock, &t.name)?;
            if found.is_empty() {
                return Err(format!("{} is not in package-lock.json", t.name));
            }
            if let Some((at, v)) = found.iter().find(|(_, v)| !at_least(v, &t.version)) {
                return Err(format!("{} is {v} at {at}, not {}", t.name, t.version));
            }
            // What is on disk, not only what the lockfile says.
            for (at, _) in &found {
                let installed = std::fs::read_to_string(project.join(at).join("package.json"))
                    .ok()
                    .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
                    .and_then(|m| m["version"].as_str().map(str::to_owned));
                match installed {
                    Some(v) if at_least(&v, &t.version) => {}
                    Some(v) => return Err(format!("{at} holds {v}, not {}", t.version)),
                    None => return Err(format!("{at} is not installed")),
                }
            }
        }
        let (code, _) = log.run("npm", &["ls", "--all"], ENV, Some(project)).await;
        if code != 0 {
            return Err(format!(
                "npm ls exited {code}: the dependency tree is not consistent"
            ));
        }
        Ok(())
    }
}

/// `package.json` dependency sections: a target named in one is a direct dependency.
const SECTIONS: [&str; 3] = ["dependencies", "devDependencies", "optionalDependencies"];

const ENV: &[(&str, &str)] = &[
    ("NO_UPDATE_NOTIFIER", "1"),
    ("npm_config_update_notifier", "false"),
];
