//! Bundler (RubyGems): an exact pin in the Gemfile (`gem "rack", "2.2.8"`, `"= 2.2.8"`) moves
//! to the target; then `bundle update --conservative <gems>` moves only those gems, within
//! every other gem's requirements; the Gemfile.lock must show each at or past its target and
//! `bundle check` must pass. Bundler's own settings (`.bundle/config`, `BUNDLE_PATH`, the
//! Gemfile's sources) apply. The snapshot holds the Gemfile, its lock and `vendor/bundle`.

use super::super::{Log, Target};
use super::Project;

/// What the snapshot keeps.
pub const ITEMS: [&str; 3] = ["Gemfile", "Gemfile.lock", "vendor/bundle"];

/// Bundler: `bundle update --conservative`, checked by `bundle check`.
pub(super) struct Bundler;

impl super::DependencyManager for Bundler {
    const PROGRAM: &'static str = "bundle";
    const TOOL: &'static str = "bundler";
    const MANIFESTS: &'static [&'static str] = &["Gemfile", "Gemfile.lock"];
    const ITEMS: &'static [&'static str] = &ITEMS;

    async fn install(&self, log: &mut Log, p: &Project<'_>) -> Result<(), (i64, String)> {
        let (project, targets) = (p.dir, p.targets);
        let gemfile = project.join("Gemfile");
        let text = std::fs::read_to_string(&gemfile).map_err(|e| (1, format!("Gemfile: {e}")))?;
        let rewritten = rewrite_gemfile(&text, targets);
        if rewritten != text {
            crate::host::owner::write_no_follow(&gemfile, rewritten.as_bytes())
                .map_err(|e| (1, format!("Gemfile: {e}")))?;
        }
        let mut args = vec!["update", "--conservative"];
        args.extend(targets.iter().map(|t| t.name.as_str()));
        log.step("bundle update", "bundle", &args, ENV, Some(project))
            .await?;
        Ok(())
    }

    async fn verify(&self, log: &mut Log, p: &Project<'_>) -> Result<(), String> {
        let (project, targets) = (p.dir, p.targets);
        super::locked_reach(project, "Gemfile.lock", targets)?;
        log.step("bundle check", "bundle", &["check"], ENV, Some(project))
            .await
            .map_err(|(_, e)| e)?;
        Ok(())
    }
}

/// The Gemfile with each target's exact pin moved to its version; ranges and unpinned gems
/// stay as they are.
pub fn rewrite_gemfile(text: &str, targets: &[Target]) -> String {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        let Some(rest) = trimmed.strip_prefix("gem ") else {
            out.push(line.to_owned());
            continue;
        };
        let rest = rest.trim_start();
        let quote = rest.chars().next().unwrap_or(' ');
        if quote != '"' && quote != '\'' {
            out.push(line.to_owned());
            continue;
        }
        let Some(end) = rest[1..].find(quote) else {
            out.push(line.to_owned());
            continue;
        };
        let name = &rest[1..1 + end];
        let Some(t) = targets.iter().find(|t| t.name == name) else {
            out.push(line.to_owned());
            continue;
        };
        // The requirement: the next quoted string after `, `.
        let after = &rest[end + 2..];
        let Some(open) = after.find(['"', '\'']) else {
            out.push(line.to_owned());
            continue;
        };
        if after[..open].trim() != "," {
            out.push(line.to_owned());
            continue;
        }
        let q = after.as_bytes()[open] as char;
        let Some(close) = after[open + 1..].find(q) else {
            out.push(line.to_owned());
            continue;
        };
        let requirement = &after[open + 1..open + 1 + close];
        let (op, version) = match requirement.strip_prefix('=') {
            Some(v) => ("= ", v.trim()),
            None => ("", requirement.trim()),
        };
        if version.is_empty() || !version.starts_with(|c: char| c.is_ascii_digit()) {
            out.push(line.to_owned());
            continue;
        }
        out.push(format!(
            "{indent}gem {quote}{name}{quote}{}{q}{op}{}{q}{}",
            &after[..open],
            t.version,
            &after[open + 1 + close + 1..]
        ));
    }
    let mut text = out.join("\n");
    text.push('\n');
    text
}

const ENV: &[(&str, &str)] = &[("BUNDLE_FROZEN", "false"), ("BUNDLE_DEPLOYMENT", "false")];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_pins_move_and_ranges_stay() {
        let t = |n: &str, v: &str| Target {
            name: n.into(),
            version: v.into(),
        };
        let text = "source \"https://rubygems.org\"\ngem \"rack\", \"2.2.8\"\n  gem 'nokogiri', '= 1.15.0', require: false\ngem \"rails\", \"~> 7.0\"\ngem \"puma\"\n";
        assert_eq!(
            rewrite_gemfile(
                text,
                &[
                    t("rack", "2.2.9"),
                    t("nokogiri", "1.16.5"),
                    t("rails", "7.0.8"),
                    t("puma", "6.4.2")
                ]
            ),
            "source \"https://rubygems.org\"\ngem \"rack\", \"2.2.9\"\n  gem 'nokogiri', '= 1.16.5', require: false\ngem \"rails\", \"~> 7.0\"\ngem \"puma\"\n"
        );
    }
}
