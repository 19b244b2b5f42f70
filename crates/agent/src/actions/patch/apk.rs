//! apk (Alpine): upgrade to the repositories' newest version when it reaches the target (as
//! for apt, dnf and zypper). The snapshot is `apk info -v` (every package at its version) and
//! `/etc/apk/world`; a result that does not verify (a target below its version, a package
//! script that failed) is undone by adding each changed package at its previous version
//! again (`apk add name=version`, from the repositories or apk's cache), deleting what the
//! upgrade newly installed and putting `world` back. apk is the oracle of its version order
//! (`apk version -t`).
//!
//! This machine has no apk: the commands and the parsing of apk's output are tested with
//! fixtures (see README), the rest is the flow the other managers share and test for real.

use super::{Log, Target};
use crate::host::command::CommandOutcome;
use std::collections::BTreeMap;
use std::path::Path;

const ENV: &[(&str, &str)] = &[("LC_ALL", "C")];
const WORLD: &str = "/etc/apk/world";

/// `name-version-rN` (as `apk info -v` prints it) split into name and `version-rN`.
pub fn split_name_version(s: &str) -> Option<(&str, &str)> {
    let s = s.trim();
    let mut parts = s.rsplitn(3, '-');
    let release = parts.next()?;
    let version = parts.next()?;
    let name = parts.next()?;
    (release.starts_with('r')
        && release[1..].bytes().all(|b| b.is_ascii_digit())
        && version.starts_with(|c: char| c.is_ascii_digit())
        && !name.is_empty())
    .then(|| (name, &s[name.len() + 1..]))
}

/// `apk info -v` output: name -> version.
pub fn parse_info(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(split_name_version)
        .map(|(n, v)| (n.to_owned(), v.to_owned()))
        .collect()
}

/// The versions `apk policy <name>` lists (each an indented `version:` line).
pub fn parse_policy(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("    "))
        .filter_map(|l| l.trim().strip_suffix(':'))
        .filter(|v| v.starts_with(|c: char| c.is_ascii_digit()))
        .map(str::to_owned)
        .collect()
}

/// `apk version -t a b` prints `<`, `=` or `>`.
pub fn parse_compare(text: &str) -> Option<std::cmp::Ordering> {
    match text.trim() {
        "<" => Some(std::cmp::Ordering::Less),
        "=" => Some(std::cmp::Ordering::Equal),
        ">" => Some(std::cmp::Ordering::Greater),
        _ => None,
    }
}

/// The line of apk's output saying a package script failed.
pub fn script_failed(out: &str) -> Option<String> {
    out.lines()
        .map(str::trim)
        .find(|l| {
            l.starts_with("ERROR:")
                && (l.contains("script exited with error") || l.contains("trigger"))
        })
        .map(str::to_owned)
}

/// The argv of each step, in order (what the tests check without apk).
pub mod commands {
    /// Every installed package and its version.
    pub fn info() -> Vec<String> {
        vec!["info".into(), "-v".into()]
    }
    /// The versions available for `name`.
    pub fn policy(name: &str) -> Vec<String> {
        vec!["policy".into(), name.into()]
    }
    /// Compare two versions.
    pub fn compare(a: &str, b: &str) -> Vec<String> {
        vec!["version".into(), "-t".into(), a.into(), b.into()]
    }
    /// Upgrade the named packages to their newest versions.
    pub fn upgrade(names: &[&str]) -> Vec<String> {
        let mut v = vec!["upgrade".to_owned(), "--no-progress".to_owned()];
        v.extend(names.iter().map(|n| (*n).to_owned()));
        v
    }
    /// Put packages back at the given versions (`name=version`).
    pub fn add_exact(pins: &[(String, String)]) -> Vec<String> {
        let mut v = vec!["add".to_owned(), "--no-progress".to_owned()];
        v.extend(pins.iter().map(|(n, ver)| format!("{n}={ver}")));
        v
    }
    /// Delete what an upgrade newly installed.
    pub fn del(names: &[&str]) -> Vec<String> {
        let mut v = vec!["del".to_owned(), "--no-progress".to_owned()];
        v.extend(names.iter().map(|n| (*n).to_owned()));
        v
    }
}

async fn apk(log: &mut Log, args: Vec<String>) -> CommandOutcome {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    log.run_full("apk", &args, ENV, None).await
}

async fn at_least(have: &str, want: &str) -> bool {
    let args = commands::compare(have, want);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let CommandOutcome {
        code, stdout: out, ..
    } = super::run("apk", &args, ENV, None).await;
    code == 0 && parse_compare(&out).is_some_and(|o| o.is_ge())
}

async fn states(log: &mut Log) -> Result<BTreeMap<String, String>, String> {
    let CommandOutcome {
        code, stdout: out, ..
    } = apk(log, commands::info()).await;
    if code != 0 {
        return Err(format!("apk info exited {code}"));
    }
    Ok(parse_info(&out))
}

/// `install_package` with apk: see the module.
/// apk: see the module.
pub(super) struct Apk;

impl super::PackageManager for Apk {
    type Installed = String;
    /// `/etc/apk/world` before the upgrade, when there is one.
    type Snapshot = Option<Vec<u8>>;
    const UPGRADE: &'static str = "apk upgrade";

    async fn states(&self, log: &mut Log) -> Result<BTreeMap<String, String>, String> {
        states(log).await
    }

    fn version(installed: &String) -> Option<String> {
        Some(installed.clone())
    }

    async fn newest(&self, log: &mut Log, name: &str) -> Result<Option<String>, (i64, String)> {
        let CommandOutcome {
            code, stdout: out, ..
        } = apk(log, commands::policy(name)).await;
        if code != 0 {
            return Err((code, format!("apk policy exited {code}")));
        }
        Ok(super::newest(parse_policy(&out), at_least).await)
    }

    async fn at_least(&self, have: &str, want: &str) -> bool {
        at_least(have, want).await
    }

    async fn snapshot(
        &self,
        _log: &mut Log,
        _targets: &[Target],
        _before: &BTreeMap<String, String>,
        dir: &Path,
    ) -> Result<Option<Vec<u8>>, (i64, String)> {
        let world = std::fs::read(WORLD).ok();
        if let Some(w) = &world
            && let Err(e) = std::fs::write(dir.join("world"), w)
        {
            return Err((1, format!("cannot keep {WORLD}: {e}")));
        }
        Ok(world)
    }

    async fn install(&self, log: &mut Log, targets: &[Target]) -> (i64, Option<String>) {
        let names: Vec<&str> = targets.iter().map(|t| t.name.as_str()).collect();
        let CommandOutcome {
            code,
            stdout,
            stderr,
        } = apk(log, commands::upgrade(&names)).await;
        let script = script_failed(&stdout)
            .or_else(|| script_failed(&stderr))
            .map(|line| format!("apk upgrade: {line}"));
        (code, script)
    }

    /// Each changed package at its previous version again, what is new deleted, `world` back.
    async fn restore(
        &self,
        log: &mut Log,
        world: Option<Vec<u8>>,
        before: &BTreeMap<String, String>,
        after: &BTreeMap<String, String>,
    ) -> Result<Option<&'static str>, String> {
        let previous: Vec<(String, String)> = before
            .iter()
            .filter(|(n, v)| after.get(*n) != Some(v))
            .map(|(n, v)| (n.clone(), v.clone()))
            .collect();
        if !previous.is_empty() {
            apk(log, commands::add_exact(&previous)).await;
        }
        let fresh = super::fresh(before, after);
        if !fresh.is_empty() {
            apk(log, commands::del(&fresh)).await;
        }
        if let Some(w) = world {
            let _ = std::fs::write(WORLD, w);
        }
        Ok(None)
    }

    fn show(installed: &String) -> String {
        installed.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `apk info -v` on an Alpine 3.19 container.
    const INFO: &str = "alpine-baselayout-3.4.3-r2\nbusybox-1.36.1-r15\nca-certificates-bundle-20240226-r0\nlibcrypto3-3.1.4-r5\nlibssl3-3.1.4-r5\nmusl-1.2.4_git20230717-r4\nssl_client-1.36.1-r15\nzlib-1.3.1-r0\n";
    /// `apk policy libcrypto3` with an upgrade in the repository.
    const POLICY: &str = "libcrypto3 policy:\n  3.1.4-r5:\n    lib/apk/db/installed\n    https://dl-cdn.alpinelinux.org/alpine/v3.19/main\n  3.1.6-r0:\n    https://dl-cdn.alpinelinux.org/alpine/v3.19/main\n";

    #[test]
    fn apk_output_parses() {
        let info = parse_info(INFO);
        assert_eq!(info["libcrypto3"], "3.1.4-r5");
        assert_eq!(info["musl"], "1.2.4_git20230717-r4");
        assert_eq!(info["ca-certificates-bundle"], "20240226-r0");
        assert_eq!(info.len(), 8);
        assert_eq!(
            split_name_version("py3-foo-bar-2.0-r1"),
            Some(("py3-foo-bar", "2.0-r1"))
        );
        assert_eq!(split_name_version("not-a-version"), None);
        assert_eq!(parse_policy(POLICY), vec!["3.1.4-r5", "3.1.6-r0"]);
        assert_eq!(parse_compare("<\n"), Some(std::cmp::Ordering::Less));
        assert_eq!(parse_compare("?"), None);
        let out = "(1/1) Upgrading busybox (1.36.1-r15 -> 1.36.1-r16)\nExecuting busybox-1.36.1-r16.post-upgrade\nERROR: busybox-1.36.1-r16.post-upgrade: script exited with error 127\nOK: 8 MiB in 15 packages\n";
        assert_eq!(
            script_failed(out).as_deref(),
            Some("ERROR: busybox-1.36.1-r16.post-upgrade: script exited with error 127")
        );
        assert_eq!(script_failed("OK: 8 MiB in 15 packages\n"), None);
    }

    #[test]
    fn apk_commands_are_argv_without_a_shell() {
        assert_eq!(commands::info(), ["info", "-v"]);
        assert_eq!(commands::policy("libcrypto3"), ["policy", "libcrypto3"]);
        assert_eq!(
            commands::compare("3.1.6-r0", "3.1.5-r0"),
            ["version", "-t", "3.1.6-r0", "3.1.5-r0"]
        );
        assert_eq!(
            commands::upgrade(&["libcrypto3", "libssl3"]),
            ["upgrade", "--no-progress", "libcrypto3", "libssl3"]
        );
        assert_eq!(
            commands::add_exact(&[("libcrypto3".into(), "3.1.4-r5".into())]),
            ["add", "--no-progress", "libcrypto3=3.1.4-r5"]
        );
        assert_eq!(
            commands::del(&["newdep"]),
            ["del", "--no-progress", "newdep"]
        );
    }
}
