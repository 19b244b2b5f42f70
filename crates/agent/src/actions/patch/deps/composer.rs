//! Composer (Packagist): an exact pin in `composer.json` moves to the target (`composer
//! require --no-update`), then `composer update <packages>` moves only those packages, within
//! every other package's requirements; `composer.lock` and `vendor/composer/installed.json`
//! must show each at or past its target and `composer validate` must pass. Scripts and
//! plugins are not run. Composer's own configuration (repositories, auth) applies.

use super::super::Log;
use super::Project;
use super::at_least;

/// What the snapshot keeps.
pub const ITEMS: [&str; 3] = ["composer.json", "composer.lock", "vendor"];

/// Composer: `composer require --no-update` then `composer update`, checked by `composer validate`.
pub(super) struct Composer;

impl super::DependencyManager for Composer {
    const PROGRAM: &'static str = "composer";
    const TOOL: &'static str = "composer";
    const MANIFESTS: &'static [&'static str] = &["composer.json", "composer.lock"];
    const ITEMS: &'static [&'static str] = &ITEMS;

    async fn install(&self, log: &mut Log, p: &Project<'_>) -> Result<(), (i64, String)> {
        let (project, targets) = (p.dir, p.targets);
        let manifest: serde_json::Value = super::read_manifest(project, "composer.json")?;
        // Exact pins (`1.2.3`, `v1.2.3`, `=1.2.3`) in require or require-dev move with the target.
        let mut pins: Vec<(String, bool)> = Vec::new();
        for t in targets {
            for (section, dev) in [("require", false), ("require-dev", true)] {
                if let Some(c) = manifest[section][t.name.as_str()].as_str() {
                    let c = c.trim().trim_start_matches('=').trim_start_matches('v');
                    if c.starts_with(|ch: char| ch.is_ascii_digit())
                        && c.chars()
                            .all(|ch| ch.is_ascii_alphanumeric() || ".-".contains(ch))
                    {
                        pins.push((format!("{}:{}", t.name, t.version), dev));
                    }
                }
            }
        }
        for dev in [false, true] {
            let list: Vec<&str> = pins
                .iter()
                .filter(|(_, d)| *d == dev)
                .map(|(p, _)| p.as_str())
                .collect();
            if list.is_empty() {
                continue;
            }
            let mut args = vec!["require", "--no-update"];
            if dev {
                args.push("--dev");
            }
            args.extend(FLAGS);
            args.extend(list);
            log.step("composer require", "composer", &args, ENV, Some(project))
                .await?;
        }
        let mut args = vec!["update"];
        args.extend(FLAGS);
        args.extend(targets.iter().map(|t| t.name.as_str()));
        log.step("composer update", "composer", &args, ENV, Some(project))
            .await?;
        Ok(())
    }

    async fn verify(&self, log: &mut Log, p: &Project<'_>) -> Result<(), String> {
        let (project, targets) = (p.dir, p.targets);
        super::locked_reach(project, "composer.lock", targets)?;
        let installed: serde_json::Value =
            std::fs::read_to_string(project.join("vendor/composer/installed.json"))
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok())
                .unwrap_or_default();
        for t in targets {
            let on_disk = installed["packages"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|p| p["name"] == t.name.as_str())
                .and_then(|p| p["version"].as_str());
            match on_disk {
                Some(v) if at_least(v, &t.version) => {}
                Some(v) => return Err(format!("vendor holds {} {v}, not {}", t.name, t.version)),
                None => return Err(format!("{} is not installed in vendor", t.name)),
            }
        }
        log.step(
            "composer validate",
            "composer",
            &["validate", "--no-interaction"],
            ENV,
            Some(project),
        )
        .await
        .map_err(|(_, e)| e)?;
        Ok(())
    }
}

const FLAGS: [&str; 5] = [
    "--no-interaction",
    "--no-scripts",
    "--no-plugins",
    "--no-progress",
    "--no-audit",
];
const ENV: &[(&str, &str)] = &[("COMPOSER_NO_INTERACTION", "1")];
