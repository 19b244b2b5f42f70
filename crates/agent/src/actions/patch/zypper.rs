//! zypper and rpm (SUSE, openSUSE): upgrade to the repositories' newest version when it
//! reaches the target (as for apt and dnf). zypper has no transaction history to roll back
//! to, so the snapshot is the `rpm -qa` list: a result that does not verify (a target below
//! its version, a failed scriptlet, `zypper verify` unhappy) is undone by installing each
//! changed package's previous version again (`--oldpackage`) and removing what the upgrade
//! newly installed, then compared with the snapshot. rpm is the oracle of its version order.

use super::dnf::{at_least, states};
use super::{Log, Outcome, Target};
use crate::host::command::CommandOutcome;
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

async fn newest(log: &mut Log, name: &str) -> Result<Option<String>, String> {
    let mut args = QUIET.to_vec();
    args.extend(["--quiet", "search", "-s", "--match-exact", name]);
    let (code, out) = log.run("zypper", &args, ENV, None).await;
    // 104: nothing found.
    if code == 104 {
        return Ok(None);
    }
    if code != 0 {
        return Err(format!("zypper search exited {code}"));
    }
    let mut best: Option<String> = None;
    for v in parse_search(&out, name) {
        let newer = match &best {
            None => true,
            Some(b) => !at_least(b, &v).await,
        };
        if newer {
            best = Some(v);
        }
    }
    Ok(best)
}

/// `install_package` with zypper: see the module.
pub async fn install(targets: &[Target], _dir: &Path) -> Outcome {
    let mut log = Log::default();
    let not_installed =
        |log: Log, code: i64, why: String| log.outcome(code, Some(format!("not installed: {why}")));
    let before = match states(&mut log).await {
        Ok(s) => s,
        Err(why) => return not_installed(log, 1, why),
    };
    for t in targets {
        if !before.contains_key(&t.name) {
            return not_installed(log, 1, format!("{} is not installed", t.name));
        }
        match newest(&mut log, &t.name).await {
            Err(why) => return not_installed(log, 1, why),
            Ok(None) => {
                return not_installed(log, 1, format!("no version of {} is available", t.name));
            }
            Ok(Some(v)) if !at_least(&v, &t.version).await => {
                return not_installed(
                    log,
                    1,
                    format!(
                        "{}'s newest version {v} does not reach {}",
                        t.name, t.version
                    ),
                );
            }
            Ok(Some(_)) => {}
        }
    }
    let mut args = QUIET.to_vec();
    args.push("update");
    args.extend(targets.iter().map(|t| t.name.as_str()));
    let CommandOutcome {
        code,
        stdout: out,
        stderr: err,
    } = log.run_full("zypper", &args, ENV, None).await;
    let after = states(&mut log).await.unwrap_or_default();
    let scriptlet = scriptlet_failed(&out).or_else(|| scriptlet_failed(&err));
    let why = if code == SCRIPT_FAILED || scriptlet.is_some() {
        format!(
            "zypper update: {}",
            scriptlet.unwrap_or_else(|| "an rpm scriptlet failed".into())
        )
    } else if code != 0 {
        if after == before {
            return not_installed(log, code, format!("zypper update exited {code}"));
        }
        format!("zypper update exited {code}")
    } else {
        let mut problem = None;
        for t in targets {
            match after.get(&t.name).and_then(|v| v.last()) {
                Some(v) if at_least(v, &t.version).await => {}
                Some(v) => {
                    problem = Some(format!("{} is {v}, not {}", t.name, t.version));
                    break;
                }
                None => {
                    problem = Some(format!("{} is gone", t.name));
                    break;
                }
            }
        }
        if problem.is_none() {
            let mut args = QUIET.to_vec();
            args.extend(["verify", "--dry-run"]);
            let (c, _) = log.run("zypper", &args, ENV, None).await;
            if c != 0 {
                problem = Some(format!("zypper verify exited {c}"));
            }
        }
        match problem {
            None => return log.outcome(0, None),
            Some(p) if after == before => return not_installed(log, 1, p),
            Some(p) => p,
        }
    };
    let exit = if code != 0 { code } else { 1 };
    // Back: each changed package at its previous version, what is new removed.
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
    let fresh = super::fresh(&before, &after);
    if !fresh.is_empty() {
        let mut args = QUIET.to_vec();
        args.push("remove");
        args.extend(&fresh);
        log.run("zypper", &args, ENV, None).await;
    }
    let restored = states(&mut log).await.unwrap_or_default();
    super::rollback_verdict(log, exit, &why, &before, &restored, |v| v.join(", "), None)
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
