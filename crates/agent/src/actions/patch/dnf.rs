//! dnf and rpm (Fedora, RHEL, AlmaLinux, Rocky): upgrade to the repositories' latest version
//! when it reaches the target (unattended-upgrades' rule, as for apt). The snapshot is dnf's
//! history id before the upgrade and the `rpm -qa` list; a result that does not verify (a
//! target below its version, a scriptlet that failed, `dnf check` unhappy) is undone with
//! `dnf history rollback <id>` and the package list compared with the snapshot. rpm is the
//! oracle of its own version order (`rpm.vercmp`). dnf and rpm run as configured on the host.

use super::{Log, Target};
use crate::host::command::CommandOutcome;
use std::collections::BTreeMap;
use std::path::Path;

const ENV: &[(&str, &str)] = &[("LC_ALL", "C")];

/// What a scriptlet failure looks like on dnf's error output.
const SCRIPTLET_FAILED: &str = "scriptlet in rpm package";

/// `EPOCH:VERSION-RELEASE` with rpm's `(none)` epoch as 0.
fn evr(raw: &str) -> String {
    let raw = raw.trim();
    match raw.strip_prefix("(none):") {
        Some(rest) => format!("0:{rest}"),
        None => raw.to_owned(),
    }
}

/// Reads `rpm -qa --qf '%{NAME}\t%{EPOCH}:%{VERSION}-%{RELEASE}\n'` output: name -> EVRs (a
/// name may be installed twice, as kernels are).
pub fn parse_states(text: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for l in text.lines() {
        if let Some((name, v)) = l.split_once('\t')
            && !name.trim().is_empty()
        {
            out.entry(name.trim().to_owned()).or_default().push(evr(v));
        }
    }
    for v in out.values_mut() {
        v.sort();
    }
    out
}

/// The newest transaction id of `dnf history list` output; 0 when there is none.
pub fn parse_history_id(text: &str) -> u64 {
    text.lines()
        .filter_map(|l| l.split('|').next()?.trim().parse::<u64>().ok())
        .max()
        .unwrap_or(0)
}

pub(super) async fn states(log: &mut Log) -> Result<BTreeMap<String, Vec<String>>, String> {
    let (code, out) = log
        .run(
            "rpm",
            &["-qa", "--qf", "%{NAME}\\t%{EPOCH}:%{VERSION}-%{RELEASE}\\n"],
            ENV,
            None,
        )
        .await;
    if code != 0 {
        return Err(format!("rpm -qa exited {code}"));
    }
    Ok(parse_states(&out))
}

/// `rpm.vercmp(a, b)`: -1, 0 or 1. Versions are one word of `[A-Za-z0-9+.-_~:]` (checked
/// where the token is read), so nothing else reaches rpm's Lua.
async fn vercmp(a: &str, b: &str) -> Option<i32> {
    let expr = format!("%{{lua: print(rpm.vercmp('{a}', '{b}'))}}");
    let CommandOutcome {
        code, stdout: out, ..
    } = super::run("rpm", &["--eval", &expr], ENV, None).await;
    (code == 0).then(|| out.trim().parse().ok()).flatten()
}

pub(super) async fn at_least(have: &str, want: &str) -> bool {
    // A target without an epoch means epoch 0, as rpm reads it.
    let want = if want.contains(':') {
        want.to_owned()
    } else {
        format!("0:{want}")
    };
    vercmp(have, &want).await.is_some_and(|c| c >= 0)
}

/// dnf: see the module.
pub(super) struct Dnf;

impl super::PackageManager for Dnf {
    type Installed = Vec<String>;
    /// dnf's newest history id before the upgrade (0: none).
    type Snapshot = u64;
    const UPGRADE: &'static str = "dnf upgrade";

    async fn states(&self, log: &mut Log) -> Result<BTreeMap<String, Vec<String>>, String> {
        states(log).await
    }

    fn version(installed: &Vec<String>) -> Option<String> {
        installed.last().cloned()
    }

    async fn newest(&self, log: &mut Log, name: &str) -> Result<Option<String>, (i64, String)> {
        let (code, out) = log
            .run(
                "dnf",
                &[
                    "-q",
                    "repoquery",
                    "--available",
                    "--latest-limit=1",
                    "--qf",
                    "%{epoch}:%{version}-%{release}\\n",
                    name,
                ],
                ENV,
                None,
            )
            .await;
        if code != 0 {
            return Err((code, format!("dnf repoquery exited {code}")));
        }
        Ok(out
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(str::to_owned))
    }

    async fn at_least(&self, have: &str, want: &str) -> bool {
        at_least(have, want).await
    }

    async fn snapshot(
        &self,
        log: &mut Log,
        _targets: &[Target],
        _before: &BTreeMap<String, Vec<String>>,
        _dir: &Path,
    ) -> Result<u64, (i64, String)> {
        let (_, history) = log.run("dnf", &["history", "list"], ENV, None).await;
        Ok(parse_history_id(&history))
    }

    async fn install(&self, log: &mut Log, targets: &[Target]) -> (i64, Option<String>) {
        // `--best`: the newest version or a failure, never a quiet partial upgrade.
        let mut args = vec!["-y", "--best", "upgrade"];
        args.extend(targets.iter().map(|t| t.name.as_str()));
        let CommandOutcome { code, stderr, .. } = log.run_full("dnf", &args, ENV, None).await;
        let script = (code == 0)
            .then(|| stderr.lines().find(|l| l.contains(SCRIPTLET_FAILED)))
            .flatten()
            .map(|line| format!("dnf upgrade: {}", line.trim()));
        (code, script)
    }

    async fn check_database(&self, log: &mut Log) -> Option<String> {
        let (c, out) = log.run("dnf", &["-q", "check"], ENV, None).await;
        (c != 0 || !out.trim().is_empty()).then(|| format!("dnf check exited {c}"))
    }

    async fn restore(
        &self,
        log: &mut Log,
        snapshot: u64,
        _before: &BTreeMap<String, Vec<String>>,
        _after: &BTreeMap<String, Vec<String>>,
    ) -> Result<Option<&'static str>, String> {
        if snapshot == 0 {
            return Err("dnf has no history to roll back to".into());
        }
        let id = snapshot.to_string();
        log.run("dnf", &["-y", "history", "rollback", &id], ENV, None)
            .await;
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
    fn rpm_and_dnf_output_parses() {
        let s = parse_states(
            "bash\t(none):5.2.15-2.el9\nkernel\t(none):5.14.0-1\nkernel\t(none):5.14.0-2\nperl-Errno\t0:1.30-481.el9\n",
        );
        assert_eq!(s["bash"], vec!["0:5.2.15-2.el9"]);
        assert_eq!(s["kernel"].len(), 2);
        assert_eq!(s["perl-Errno"], vec!["0:1.30-481.el9"]);
        let h = "ID     | Command line             | Date and time    | Action(s)      | Altered\n-------------------------------------------------------------------------------\n     2 | upgrade broken           | 2026-11-27 03:14 | Upgrade        |    1 EE\n     1 | install demo             | 2026-11-27 03:14 | Install        |    2   \n";
        assert_eq!(parse_history_id(h), 2);
        assert_eq!(parse_history_id("No transactions\n"), 0);
    }
}
