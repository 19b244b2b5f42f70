//! apt and dpkg (Debian, Ubuntu): upgrade to the distribution's candidate when it reaches the
//! target (unattended-upgrades' rule), with a snapshot of every package the upgrade touches
//! (its installed `.deb`, fetched again or taken from apt's cache) restored with `dpkg -i`
//! when the result does not verify. apt and dpkg run as configured on the host; `APT_CONFIG`,
//! `DPKG_ROOT` and `DPKG_ADMINDIR` are honoured as the tools themselves honour them.

use super::{Log, Target};
use crate::host::command::CommandOutcome;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const ENV: &[(&str, &str)] = &[("DEBIAN_FRONTEND", "noninteractive"), ("LC_ALL", "C")];
/// Keep changed configuration files, and wait for dpkg's lock (unattended-upgrades may
/// hold it) rather than fail at once.
const KEEP_CONFIG: [&str; 6] = [
    "-o",
    "Dpkg::Options::=--force-confdef",
    "-o",
    "Dpkg::Options::=--force-confold",
    "-o",
    "DPkg::Lock::Timeout=300",
];

/// Every package dpkg knows: name -> (version, status abbreviation such as `ii`).
pub type States = BTreeMap<String, (String, String)>;

/// Reads `dpkg-query -W` output (`name\tversion\tstatus`).
pub fn parse_states(text: &str) -> States {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split('\t');
            let name = f.next()?.trim();
            let version = f.next()?.trim();
            let status = f.next()?.trim();
            (!name.is_empty()).then(|| (name.to_owned(), (version.to_owned(), status.to_owned())))
        })
        .collect()
}

async fn states(log: &mut Log) -> Result<States, String> {
    let (code, out) = log
        .run(
            "dpkg-query",
            &[
                "-W",
                "-f",
                "${Package}\\t${Version}\\t${db:Status-Abbrev}\\n",
            ],
            ENV,
            None,
        )
        .await;
    if code != 0 {
        return Err(format!("dpkg-query exited {code}"));
    }
    Ok(parse_states(&out))
}

/// The `Candidate:` of `apt-cache policy` output; `None` for `(none)` or nothing.
pub fn parse_candidate(policy: &str) -> Option<String> {
    policy
        .lines()
        .find_map(|l| l.trim().strip_prefix("Candidate:"))
        .map(str::trim)
        .filter(|c| !c.is_empty() && *c != "(none)")
        .map(str::to_owned)
}

/// A package an apt simulation would change: `(name, installed version if any, new version)`.
pub type Change = (String, Option<String>, String);

/// The `Inst` and `Remv` lines of `apt-get -s` output: what would change, what would go.
pub fn parse_simulation(text: &str) -> (Vec<Change>, Vec<String>) {
    let mut changes = Vec::new();
    let mut removed = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Inst ") {
            let mut words = rest.splitn(2, ' ');
            let name = words.next().unwrap_or_default();
            let name = name.split(':').next().unwrap_or(name).to_owned();
            let tail = words.next().unwrap_or_default().trim();
            let (old, tail) = match tail.strip_prefix('[') {
                Some(t) => match t.split_once(']') {
                    Some((o, rest)) => (Some(o.to_owned()), rest.trim()),
                    None => (None, tail),
                },
                None => (None, tail),
            };
            let new = tail
                .strip_prefix('(')
                .and_then(|t| t.split_whitespace().next())
                .unwrap_or_default()
                .to_owned();
            changes.push((name, old, new));
        } else if let Some(rest) = line.strip_prefix("Remv ") {
            let name = rest.split_whitespace().next().unwrap_or_default();
            removed.push(name.split(':').next().unwrap_or(name).to_owned());
        }
    }
    (changes, removed)
}

/// `dpkg --compare-versions a op b`: dpkg is the oracle of its own order.
async fn compare(a: &str, op: &str, b: &str) -> bool {
    super::run("dpkg", &["--compare-versions", a, op, b], ENV, None)
        .await
        .succeeded()
}

/// apt's archive cache (`Dir::Cache::archives`).
async fn archive_cache() -> Option<PathBuf> {
    let CommandOutcome {
        code, stdout: out, ..
    } = super::run(
        "apt-config",
        &["shell", "D", "Dir::Cache::archives/d"],
        ENV,
        None,
    )
    .await;
    if code != 0 {
        return None;
    }
    out.trim()
        .strip_prefix("D=")
        .map(|d| PathBuf::from(d.trim_matches('\'')))
}

/// The `.deb` of `name` at `version` in `dir` (apt's file naming: `:` of an epoch as `%3a`).
fn deb_in(dir: &Path, name: &str, version: &str) -> Option<PathBuf> {
    let prefix = format!("{name}_{}_", version.replace(':', "%3a"));
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".deb"))
        })
}

/// The installed `.deb` of `name` at `version`, kept in `dir`: fetched again from the
/// repositories, else taken from apt's cache.
async fn save_deb(log: &mut Log, dir: &Path, name: &str, version: &str) -> Option<PathBuf> {
    let spec = format!("{name}={version}");
    log.run("apt-get", &["download", "-q", &spec], ENV, Some(dir))
        .await;
    if let Some(p) = deb_in(dir, name, version) {
        return Some(p);
    }
    let cached = deb_in(&archive_cache().await?, name, version)?;
    let kept = dir.join(cached.file_name()?);
    std::fs::copy(&cached, &kept).ok()?;
    Some(kept)
}

async fn audit(log: &mut Log) -> String {
    let (_, out) = log.run("dpkg", &["--audit"], ENV, None).await;
    out.trim().to_owned()
}

/// apt: see the module.
pub(super) struct Apt;

impl super::PackageManager for Apt {
    type Installed = (String, String);
    /// The installed `.deb` of everything the upgrade changes.
    type Snapshot = Vec<PathBuf>;
    const UPGRADE: &'static str = "apt-get";
    const VERIFY_A_FAILED_UPGRADE: bool = true;

    async fn states(&self, log: &mut Log) -> Result<States, String> {
        states(log).await
    }

    fn version(installed: &(String, String)) -> Option<String> {
        Some(installed.0.clone())
    }

    async fn newest(&self, log: &mut Log, name: &str) -> Result<Option<String>, (i64, String)> {
        let (_, policy) = log
            .run("apt-cache", &["policy", "--", name], ENV, None)
            .await;
        Ok(parse_candidate(&policy))
    }

    async fn at_least(&self, have: &str, want: &str) -> bool {
        compare(have, "ge", want).await
    }

    /// Each target installed (`ii`) with a candidate that reaches it, after fresh lists, as
    /// unattended-upgrades has them (a failed update leaves the lists there were).
    async fn check(
        &self,
        log: &mut Log,
        targets: &[Target],
        before: &States,
    ) -> Result<(), (i64, String)> {
        log.run("apt-get", &["update", "-q"], ENV, None).await;
        for t in targets {
            if before.get(&t.name).is_none_or(|(_, s)| s != "ii") {
                return Err((1, format!("{} is not installed", t.name)));
            }
            match self.newest(log, &t.name).await? {
                Some(c) if self.at_least(&c, &t.version).await => {}
                Some(c) => {
                    return Err((
                        100,
                        format!(
                            "{} {} is not available (the candidate is {c})",
                            t.name, t.version
                        ),
                    ));
                }
                None => {
                    return Err((100, format!("{} has no installation candidate", t.name)));
                }
            }
        }
        Ok(())
    }

    /// The upgrade simulated first (it must resolve and remove nothing), then the package
    /// states and the installed `.deb` of everything it changes kept in `dir`.
    async fn snapshot(
        &self,
        log: &mut Log,
        targets: &[Target],
        before: &States,
        dir: &Path,
    ) -> Result<Vec<PathBuf>, (i64, String)> {
        let mut args: Vec<&str> = vec!["-s", "-q", "install", "--only-upgrade"];
        args.extend(KEEP_CONFIG);
        args.push("--");
        args.extend(targets.iter().map(|t| t.name.as_str()));
        let (code, simulation) = log.run("apt-get", &args, ENV, None).await;
        if code != 0 {
            return Err((code, "apt cannot resolve the upgrade".into()));
        }
        let (changes, removed) = parse_simulation(&simulation);
        if !removed.is_empty() {
            return Err((
                1,
                format!("the upgrade would remove {}", removed.join(", ")),
            ));
        }
        let _ = std::fs::write(
            dir.join("status-before.txt"),
            before
                .iter()
                .map(|(n, (v, s))| format!("{n}\t{v}\t{s}\n"))
                .collect::<String>(),
        );
        let mut saved: Vec<PathBuf> = Vec::new();
        for (name, old, _) in &changes {
            if let Some(old) = old {
                match save_deb(log, dir, name, old).await {
                    Some(p) => saved.push(p),
                    None => {
                        return Err((
                            1,
                            format!(
                                "no snapshot: the installed {name} {old} cannot be fetched again or found in apt's cache"
                            ),
                        ));
                    }
                }
            }
        }
        Ok(saved)
    }

    async fn install(&self, log: &mut Log, targets: &[Target]) -> (i64, Option<String>) {
        let mut args: Vec<&str> = vec!["-y", "-q", "install", "--only-upgrade"];
        args.extend(KEEP_CONFIG);
        args.push("--");
        args.extend(targets.iter().map(|t| t.name.as_str()));
        let (code, _) = log.run("apt-get", &args, ENV, None).await;
        (code, None)
    }

    /// Every target reached and installed (each problem named), dpkg's database consistent.
    async fn verify(&self, log: &mut Log, targets: &[Target], after: &States) -> Vec<String> {
        let mut problems: Vec<String> = Vec::new();
        for t in targets {
            match after.get(&t.name) {
                Some((v, s)) if s == "ii" && compare(v, "ge", &t.version).await => {}
                Some((v, s)) if s != "ii" => problems.push(format!(
                    "{} {v} is left in dpkg state {s}, not installed",
                    t.name
                )),
                Some((v, _)) => problems.push(format!("{} is {v}, below {}", t.name, t.version)),
                None => problems.push(format!("{} is gone", t.name)),
            }
        }
        if !audit(log).await.is_empty() {
            problems.push("dpkg --audit reports broken packages".into());
        }
        problems
    }

    /// The saved `.deb` of what changed installed again, what the upgrade newly installed
    /// purged; `dpkg --audit` asked after.
    async fn restore(
        &self,
        log: &mut Log,
        saved: Vec<PathBuf>,
        before: &States,
        after: &States,
    ) -> Result<Option<&'static str>, String> {
        if !saved.is_empty() {
            let mut args: Vec<&str> = vec!["-i", "--force-downgrade"];
            let paths: Vec<String> = saved.iter().map(|p| p.display().to_string()).collect();
            args.extend(paths.iter().map(String::as_str));
            log.run("dpkg", &args, ENV, None).await;
        }
        let fresh = super::fresh(before, after);
        if !fresh.is_empty() {
            let mut args = vec!["--purge"];
            args.extend(&fresh);
            log.run("dpkg", &args, ENV, None).await;
        }
        Ok((!audit(log).await.is_empty()).then_some("dpkg --audit"))
    }

    fn show(installed: &(String, String)) -> String {
        installed.0.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apt_output_parses() {
        let sim = "NOTE: This is only a simulation!\n\
            Inst libssl3 [3.0.11-1~deb12u2] (3.0.11-1~deb12u3 Debian-Security:12/stable-security [amd64])\n\
            Inst openssl [3.0.11-1~deb12u2] (3.0.11-1~deb12u3 Debian-Security:12/stable-security [amd64]) []\n\
            Inst libnew1 (1.0-1 Debian:12/stable [amd64])\n\
            Remv oldlib [0.9-1]\n\
            Conf libssl3 (3.0.11-1~deb12u3 Debian-Security:12/stable-security [amd64])\n";
        let (changes, removed) = parse_simulation(sim);
        assert_eq!(
            changes,
            vec![
                (
                    "libssl3".into(),
                    Some("3.0.11-1~deb12u2".into()),
                    "3.0.11-1~deb12u3".into()
                ),
                (
                    "openssl".into(),
                    Some("3.0.11-1~deb12u2".into()),
                    "3.0.11-1~deb12u3".into()
                ),
                ("libnew1".into(), None, "1.0-1".into()),
            ]
        );
        assert_eq!(removed, vec!["oldlib"]);
        assert_eq!(
            parse_candidate("demo:\n  Installed: 1.0\n  Candidate: 1.1\n  Version table:\n"),
            Some("1.1".into())
        );
        assert_eq!(
            parse_candidate("x:\n  Installed: (none)\n  Candidate: (none)\n"),
            None
        );
        let s = parse_states("demo\t1.0\tii \nbroken\t2.0\tiF \n");
        assert_eq!(s["demo"], ("1.0".into(), "ii".into()));
        assert_eq!(s["broken"], ("2.0".into(), "iF".into()));
    }
}
