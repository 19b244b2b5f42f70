//! Emergency actions (CONTRACT 19): stop what is hurting the host now — a process, a systemd
//! unit, a container, a login, an address. Each target is checked before anything runs,
//! programs run without a shell, and the host's `actions.toml` may forbid any of them
//! (`emergency_actions = ["kill_process"]`).

use crate::host::command::CommandOutcome;
use serde_json::Value;
use std::time::Duration;

pub use trusthub_core::emergency::{ACTIONS, Emergency, HostFacts};

/// What the agent knows besides the host itself to check a target against: the hub it
/// reaches and the user its consoles run as.
#[derive(Debug, Clone, Default)]
pub struct Guard {
    /// The hub's URL as the agent reaches it (any scheme).
    pub hub_url: Option<String>,
    /// The console user.
    pub console_user: Option<String>,
}

/// Reads and checks a token's `{action, target}` by the rule the hub checked, then by the
/// rules only this host can check (CONTRACT 30): never the hub's address, this agent or
/// its ancestors, a kernel thread, a UID 0 account or the console user.
pub async fn parse(args: &Value, guard: &Guard) -> Result<Emergency, String> {
    let action = args["action"].as_str().unwrap_or_default();
    let target = args["target"].as_str().unwrap_or_default();
    let refused = |r: trusthub_core::emergency::Refusal| {
        format!("{action} `{}`: {} {}", target.trim(), r.field, r.message)
    };
    let e = trusthub_core::emergency::parse(action, target).map_err(refused)?;
    let facts = facts(&e, guard).await;
    trusthub_core::emergency::check_on_host(&e, &facts).map_err(refused)?;
    Ok(e)
}

/// The host's facts for `e`.
pub async fn facts(e: &Emergency, guard: &Guard) -> HostFacts {
    let mut f = HostFacts {
        console_user: guard.console_user.clone(),
        ..HostFacts::default()
    };
    match e {
        Emergency::BlockIp(_) => {
            if let Some(url) = guard
                .hub_url
                .as_deref()
                .and_then(|u| reqwest::Url::parse(u).ok())
            {
                let port = url.port_or_known_default().unwrap_or(443);
                let host = url.host_str().unwrap_or_default().trim_matches(['[', ']']);
                match host.parse::<std::net::IpAddr>() {
                    Ok(ip) => f.hub_addrs.push(ip),
                    Err(_) if !host.is_empty() => {
                        if let Ok(addrs) = tokio::net::lookup_host((host, port)).await {
                            f.hub_addrs.extend(addrs.map(|a| a.ip()));
                        }
                    }
                    Err(_) => {}
                }
            }
        }
        Emergency::KillProcess(pid) => {
            f.protected_pids = ancestors(std::process::id());
            f.kernel_thread = kernel_thread(*pid);
        }
        Emergency::LockUser(_) => {
            f.uid0_users = uid0_users(&std::fs::read_to_string("/etc/passwd").unwrap_or_default());
        }
        _ => {}
    }
    f
}

/// `pid` and its ancestors up to init, from `/proc/<pid>/stat`.
pub fn ancestors(pid: u32) -> Vec<u32> {
    let mut out = vec![pid];
    let mut at = pid;
    while let Some(parent) = stat_field(at, 1).and_then(|p| p.parse::<u32>().ok()) {
        if parent == 0 || out.contains(&parent) || out.len() > 4096 {
            break;
        }
        out.push(parent);
        at = parent;
    }
    out
}

/// The fields of `/proc/<pid>/stat` after the command: 0 the state, 1 the parent, … 6 the
/// flags.
fn stat_field(pid: u32, i: usize) -> Option<String> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = s.rsplit_once(')')?;
    rest.split_whitespace().nth(i).map(str::to_owned)
}

/// Whether `pid` is a kernel thread (`PF_KTHREAD`, or a child of kthreadd).
pub fn kernel_thread(pid: u32) -> bool {
    const PF_KTHREAD: u64 = 0x0020_0000;
    stat_field(pid, 6)
        .and_then(|f| f.parse::<u64>().ok())
        .is_some_and(|f| f & PF_KTHREAD != 0)
        || stat_field(pid, 1).as_deref() == Some("2")
}

/// The UID 0 accounts of a `passwd` text.
pub fn uid0_users(passwd: &str) -> Vec<String> {
    passwd
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f.len() >= 3 && f[2] == "0").then(|| f[0].to_owned())
        })
        .collect()
}

/// The commands an action runs (a kill is a signal and the Docker stop an API call: no
/// command).
pub fn commands(e: &Emergency, nft: bool) -> Vec<Vec<String>> {
    let v = |args: &[&str]| args.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    match e {
        // Signalled directly (see `kill`).
        Emergency::KillProcess(_) => Vec::new(),
        Emergency::StopUnit(unit) => vec![v(&["systemctl", "stop", "--", unit])],
        Emergency::StopContainer(_) => Vec::new(),
        Emergency::LockUser(user) => vec![v(&["usermod", "-L", "-e", "1", "--", user])],
        Emergency::BlockIp(ip) if nft => {
            let family = if ip.is_ipv4() { "ip" } else { "ip6" };
            vec![
                v(&["nft", "add", "table", "inet", "trusthub"]),
                v(&[
                    "nft", "add", "chain", "inet", "trusthub", "input", "{", "type", "filter",
                    "hook", "input", "priority", "-10", ";", "policy", "accept", ";", "}",
                ]),
                v(&[
                    "nft",
                    "add",
                    "rule",
                    "inet",
                    "trusthub",
                    "input",
                    family,
                    "saddr",
                    &ip.to_string(),
                    "drop",
                ]),
            ]
        }
        Emergency::BlockIp(ip) => {
            let tool = if ip.is_ipv4() {
                "iptables"
            } else {
                "ip6tables"
            };
            vec![v(&[
                tool,
                "-I",
                "INPUT",
                "-s",
                &ip.to_string(),
                "-j",
                "DROP",
            ])]
        }
    }
}

fn alive(pid: u32) -> bool {
    // A zombie has no more to kill.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, r)| r.trim_start().starts_with('Z'))
        })
        .is_some_and(|zombie| !zombie)
}

/// SIGTERM, then SIGKILL when the process is still there after 5 s (signals sent directly,
/// no `kill` program needed).
async fn kill(pid: u32) -> CommandOutcome {
    use rustix::process::{Pid, Signal, kill_process};
    let Some(p) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
        return CommandOutcome::failed(1, format!("`{pid}` is not a process id"));
    };
    if let Err(e) = kill_process(p, Signal::TERM) {
        return CommandOutcome::failed(1, format!("cannot signal process {pid}: {e}"));
    }
    for _ in 0..50 {
        if !alive(pid) {
            return CommandOutcome::ok(format!("process {pid} ended after SIGTERM\n"));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    match kill_process(p, Signal::KILL) {
        Ok(()) => CommandOutcome::ok(format!("process {pid} killed with SIGKILL after 5 s\n")),
        Err(e) => CommandOutcome::failed(1, format!("cannot kill process {pid}: {e}")),
    }
}

/// Runs an emergency action: `(exit code, stdout, stderr)`.
pub async fn run(
    args: &Value,
    allowed: &crate::actions::allow::Allowlist,
    guard: &Guard,
) -> CommandOutcome {
    let action = args["action"].as_str().unwrap_or_default();
    if !allowed.emergency(action) {
        return CommandOutcome::failed(
            1,
            format!("`{action}` is not on this host's emergency_actions"),
        );
    }
    let e = match parse(args, guard).await {
        Ok(e) => e,
        Err(why) => return CommandOutcome::failed(1, why),
    };
    let nft = crate::host::command::on_path("nft");
    let mut out = String::new();
    let mut err = String::new();
    if let Emergency::StopContainer(name) = &e {
        return crate::host::docker::stop(name).await;
    }
    if let Emergency::KillProcess(pid) = e {
        return kill(pid).await;
    }
    for cmd in commands(&e, nft) {
        let args: Vec<&str> = cmd[1..].iter().map(String::as_str).collect();
        let CommandOutcome {
            code,
            stdout: o,
            stderr: e,
        } = crate::host::command::run(&cmd[0], &args, &[], None).await;
        out.push_str(&o);
        err.push_str(&e);
        if code != 0 {
            return CommandOutcome {
                code,
                stdout: out,
                stderr: err,
            };
        }
    }
    CommandOutcome {
        code: 0,
        stdout: out,
        stderr: err,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn targets_are_checked_on_the_host_and_commands_built_without_a_shell() {
        let guard = Guard {
            hub_url: Some("https://192.0.2.10:8080".into()),
            console_user: Some("ops".into()),
        };
        let p = |a: &'static str, t: String| {
            let guard = guard.clone();
            async move { parse(&json!({"action": a, "target": t}), &guard).await }
        };
        // The rules are core's (tested there); the agent refuses what only the host knows.
        assert_eq!(
            p("kill_process", "999999".into()).await,
            Ok(Emergency::KillProcess(999_999))
        );
        assert!(
            p("kill_process", std::process::id().to_string())
                .await
                .is_err()
        );
        let parent = ancestors(std::process::id())[1];
        assert!(
            p("kill_process", parent.to_string())
                .await
                .is_err_and(|e| e.contains("ancestors")),
            "the agent's parent"
        );
        // kthreadd's children are kernel threads.
        if let Some(k) = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .find(|pid| *pid > 2 && kernel_thread(*pid))
        {
            assert!(
                p("kill_process", k.to_string())
                    .await
                    .is_err_and(|e| e.contains("kernel thread"))
            );
        }
        assert!(
            p("block_ip", "192.0.2.10".into())
                .await
                .is_err_and(|e| e.contains("hub"))
        );
        assert!(p("block_ip", "::ffff:192.0.2.10".into()).await.is_err());
        assert!(p("block_ip", "127.0.0.1".into()).await.is_err());
        assert!(
            p("lock_user", "ops".into())
                .await
                .is_err_and(|e| e.contains("console"))
        );
        assert_eq!(
            uid0_users(
                "root:x:0:0::/root:/bin/sh\ntoor:x:0:0::/root:/bin/sh\nbob:x:1000:1000::/home/bob:/bin/sh\n"
            ),
            vec!["root".to_owned(), "toor".to_owned()]
        );
        assert!(
            p("block_ip", "203.0.113.0/24".into())
                .await
                .is_err_and(|e| e.contains("prefix"))
        );
        let ip: std::net::IpAddr = "203.0.113.7".parse().expect("ip");
        assert_eq!(
            commands(&Emergency::BlockIp(ip), false),
            vec![vec![
                "iptables",
                "-I",
                "INPUT",
                "-s",
                "203.0.113.7",
                "-j",
                "DROP"
            ]]
        );
        let nft = commands(&Emergency::BlockIp(ip), true);
        assert_eq!(nft.len(), 3);
        assert_eq!(
            nft[2],
            vec![
                "nft",
                "add",
                "rule",
                "inet",
                "trusthub",
                "input",
                "ip",
                "saddr",
                "203.0.113.7",
                "drop"
            ]
        );
        let v6: std::net::IpAddr = "2001:db8::1".parse().expect("ip");
        assert_eq!(commands(&Emergency::BlockIp(v6), false)[0][0], "ip6tables");
        assert_eq!(
            commands(&Emergency::LockUser("mallory".into()), false),
            vec![vec!["usermod", "-L", "-e", "1", "--", "mallory"]]
        );
    }
}
