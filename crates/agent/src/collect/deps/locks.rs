//! The lockfiles read as plain `(ecosystem, name, version)` lists: `composer.lock`,
//! `Gemfile.lock` (or `gems.locked`) and `go.sum`. The patchers read them too, to verify an
//! update reached its target.

use serde_json::Value;
use std::path::Path;

/// Dependencies declared by a `composer.lock`, `Gemfile.lock` or `go.sum` (the other
/// formats are read in [`super`]): `(ecosystem, name, version)`; why not, when the file
/// is not what its name says (a corrupt lockfile is reported, never read as empty).
pub fn read(path: &Path, text: &str) -> Result<Vec<(&'static str, String, String)>, String> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let mut out = Vec::new();
    match name {
        "composer.lock" => {
            let v: Value =
                serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
            for key in ["packages", "packages-dev"] {
                for p in v[key].as_array().into_iter().flatten() {
                    if let (Some(n), Some(ver)) = (p["name"].as_str(), p["version"].as_str()) {
                        out.push((
                            "composer",
                            n.to_owned(),
                            ver.trim_start_matches('v').to_owned(),
                        ));
                    }
                }
            }
        }
        "Gemfile.lock" | "gems.locked" => {
            // CONTRACT 30: a line Bundler does not write makes the file unreadable, said
            // with its number, rather than read as fewer gems.
            const SECTIONS: [&str; 9] = [
                "GEM",
                "GIT",
                "PATH",
                "PLUGIN SOURCE",
                "PLATFORMS",
                "DEPENDENCIES",
                "RUBY VERSION",
                "BUNDLED WITH",
                "CHECKSUMS",
            ];
            let mut in_specs = false;
            let mut section = "";
            for (i, l) in text.lines().enumerate() {
                let bad = || {
                    format!(
                        "line {}: `{}` is not a Gemfile.lock line",
                        i + 1,
                        l.chars().take(80).collect::<String>()
                    )
                };
                if l.trim().is_empty() {
                    continue;
                }
                if !l.starts_with(' ') {
                    section = SECTIONS
                        .iter()
                        .find(|s| **s == l.trim_end())
                        .ok_or_else(bad)?;
                    in_specs = false;
                    continue;
                }
                if l.trim() == "specs:" {
                    in_specs = true;
                    continue;
                }
                if matches!(section, "GEM" | "GIT" | "PATH" | "PLUGIN SOURCE")
                    && !l.starts_with("    ")
                {
                    in_specs = false;
                    // `  remote: …`, `  revision: …`: a key and its value.
                    if !l.trim().contains(':') {
                        return Err(bad());
                    }
                    continue;
                }
                // Gems are indented four spaces; their own dependencies six.
                if in_specs && l.starts_with("    ") && !l.starts_with("     ") {
                    let Some((n, rest)) = l.trim().split_once(" (") else {
                        return Err(bad());
                    };
                    if !rest.ends_with(')') || n.is_empty() || n.contains(' ') {
                        return Err(bad());
                    }
                    // `1.15.5-java`, `1.13.1-x86_64-linux`: the platform follows the version
                    // (RubyGems writes no `-` in versions themselves).
                    let version = rest.trim_end_matches(')');
                    out.push((
                        "RubyGems",
                        n.to_owned(),
                        version.split('-').next().unwrap_or(version).to_owned(),
                    ));
                }
            }
        }
        "go.sum" => {
            for d in super::golang::go_sum(text)? {
                out.push(("Go", d.name, d.version));
            }
        }
        other => return Err(format!("{other} is not read here")),
    }
    out.sort();
    out.dedup();
    Ok(out)
}
