//! zypper and rpm (SUSE, openSUSE): upgrade to the repositories' newest version when it
//! reaches the target (as for apt and dnf). zypper has no transaction history to roll back
//! to, so the snapshot is the `rpm -qa` list: a result that does not verify (a target below
//! its version, a failed scriptlet, `zypper verify` unhappy) is undone by installing each
//! changed package's previous version again (`--oldpackage`) and removing what the upgrade
//! newly installed, then compared with the snapshot. rpm is the oracle of its version order.

use super::dnf::{at_least, states};
use super::{Log, Target};
use crate::host::command::CommandOutcome;
use std::collections::BTreeMap;
use std::path::Path;

const ENV: &[(&str, &str)] = &[("LC_ALL", "C")];
const QUIET: [&str; 2] = ["--non-interactive", "--no-color"];
/// zypper's exit code when an rpm scriptlet failed (`ZYPPER_EXIT_INF_RPM_SCRIPT_FAILED`).
const SCRIPT_FAILED: i64 = 107;

/// The newest version a `zypper search -s --match-exact` table lists for `name`.
pub fn parse_search(text: &str, name: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let cols: Vec<&str> = l.split('|').map(str::trim).collect();
            (cols.len() >= 6 && cols[1] == name && cols[2] == "package").then(|| cols[3].to_owned())
        })
        .collect()
}

/// Whether zypper's output says an rpm scriptlet failed.
pub fn scriptlet_failed(out: &str) -> Option<String> {
    out.lines()
        .map(str::trim)
        .find(|l| {
            l.starts_with("error:")
                && (l.contains("scriptlet") || l.contains("script failed") || l.contains("%post"))
        })
        .map(str::to_owned)
}

async fn newest(log: &mut Log, name: &str) -> Result<Option<String>, (i64, String)> {
    let mut args = QUIET.to_vec();
    args.extend(["--quiet", "search", "-s", "--match-exact", name]);
    let (code, out) = log.run("zypper", &args, ENV, None).await;
    // 104: nothing found.
    if code == 104 {
        return Ok(None);
    }
    if code != 0 {
        return Err((1, format!("zypper search exited {code}")));
    }
    Ok(super::newest(parse_search(&out, name), at_least).await)
}

/// zypper: see the module.
pub(super) struct Zypper;

impl super::PackageManager for Zypper {
    type Installed = Vec<String>;
    /// The `rpm -qa` list before the upgrade is all a restore needs.
    type Snapshot = ();
    const UPGRADE: &'static str = "zypper update";

    async fn states(&self, log: &mut Log) -> Result<BTreeMap<String, Vec<String>>, String> {
        states(log).await
    }

    fn version(installed: &Vec<String>) -> Option<String> {
        installed.last().cloned()
    }

    async fn newest(&self, log: &mut Log, name: &str) -> Result<Option<String>, (i64, String)> {
        newest(log, name).await
    }

    async fn at_least(&self, have: &str, want: &str) -> bool {
        at_least(have, want).await
    }

    async fn snapshot(
        &self,
        _log: &mut Log,
        _targets: &[Target],
        _before: &BTreeMap<String, Vec<String>>,
        _dir: &Path,
    ) -> Result<(), (i64, String)> {
        Ok(())
    }

    async fn install(&self, log: &mut Log, targets: &[Target]) -> (i64, Option<String>) {
        let mut args = QUIET.to_vec();
        args.push("update");
        args.extend(targets.iter().map(|t| t.name.as_str()));
        let CommandOutcome {
            code,
            stdout,
            stderr,
        } = log.run_full("zypper", &args, ENV, None).await;
        let scriptlet = scriptlet_failed(&stdout).or_else(|| scriptlet_failed(&stderr));
        let script = (code == SCRIPT_FAILED || scriptlet.is_some()).then(|| {
            format!(
                "zypper update: {}",
                scriptlet.unwrap_or_else(|| "an rpm scriptlet failed".into())
            )
        });
        (code, script)
    }

    async fn check_database(&self, log: &mut Log) -> Option<String> {
        let mut args = QUIET.to_vec();
        args.extend(["verify", "--dry-run"]);
        let (c, _) = log.run("zypper", &args, ENV, None).await;
        (c != 0).then(|| format!("zypper verify exited {c}"))
    }

    /// Each changed package at its previous version again, what is new removed.
    async fn restore(
        &self,
        log: &mut Log,
        _snapshot: (),
        before: &BTreeMap<String, Vec<String>>,
        after: &BTreeMap<String, Vec<String>>,
    ) -> Result<Option<&'static str>, String> {
        let previous: Vec<String> = before
            .iter()
            .filter(|(n, v)| after.get(*n) != Some(v))
            .filter_map(|(n, v)| {
                v.last()
                    .map(|evr| format!("{n}={}", evr.trim_start_matches("0:")))
            })
            .collect();
        if !previous.is_empty() {
            let mut args = QUIET.to_vec();
            args.extend(["install", "--oldpackage", "--force"]);
            args.extend(previous.iter().map(String::as_str));
            log.run("zypper", &args, ENV, None).await;
        }
        let fresh = super::fresh(before, after);
        if !fresh.is_empty() {
            let mut args = QUIET.to_vec();
            args.push("remove");
            args.extend(&fresh);
            log.run("zypper", &args, ENV, None).await;
        }
        Ok(None)
    }

    fn show(installed: &Vec<String>) -> String {
        installed.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zypper_output_parses() {
        let table = "\nS  | Name | Type    | Version | Arch   | Repository\n---+------+---------+---------+--------+-----------\nv  | demo | package | 1.1-1   | noarch | local\ni+ | demo | package | 1.0-1   | noarch | local\n   | demo | srcpackage | 1.2-1 | noarch | local\n";
        assert_eq!(parse_search(table, "demo"), vec!["1.1-1", "1.0-1"]);
        assert!(parse_search(table, "other").is_empty());
        let out = "(1/1) Installing: broken-2.0-1.noarch [......done]\nAdditional rpm output:\nerror: lua script failed: [string \"%post(broken-2.0-1.noarch)\"]:1: post failed\n";
        assert_eq!(
            scriptlet_failed(out).as_deref(),
            Some(
                "error: lua script failed: [string \"%post(broken-2.0-1.noarch)\"]:1: post failed"
            )
        );
        assert_eq!(scriptlet_failed("error: some other failure\n"), None);
    }
}
