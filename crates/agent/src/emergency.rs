//! Emergency actions (CONTRACT 19): stop what is hurting the host now — a process, a systemd
//! unit, a container, a login, an address. Each target is checked before anything runs,
//! programs run without a shell, and the host's `actions.toml` may forbid any of them
//! (`emergency_actions = ["kill_process"]`).

use serde_json::Value;
use std::time::Duration;

pub use trusthub_core::emergency::{ACTIONS, Emergency};

/// Reads and checks a token's `{action, target}` by the rule the hub checked; and never
/// this agent's own process.
pub fn parse(args: &Value) -> Result<Emergency, String> {
    let action = args["action"].as_str().unwrap_or_default();
    let target = args["target"].as_str().unwrap_or_default();
    match trusthub_core::emergency::parse(action, target) {
        Ok(Emergency::KillProcess(pid)) if pid == std::process::id() => {
            Err("the agent does not kill itself".into())
        }
        Ok(e) => Ok(e),
        Err(r) => Err(format!(
            "{action} `{}`: {} {}",
            target.trim(),
            r.field,
            r.message
        )),
    }
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
async fn kill(pid: u32) -> (i64, String, String) {
    use rustix::process::{Pid, Signal, kill_process};
    let Some(p) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
        return (1, String::new(), format!("`{pid}` is not a process id"));
    };
    if let Err(e) = kill_process(p, Signal::TERM) {
        return (
            1,
            String::new(),
            format!("cannot signal process {pid}: {e}"),
        );
    }
    for _ in 0..50 {
        if !alive(pid) {
            return (
                0,
                format!("process {pid} ended after SIGTERM\n"),
                String::new(),
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    match kill_process(p, Signal::KILL) {
        Ok(()) => (
            0,
            format!("process {pid} killed with SIGKILL after 5 s\n"),
            String::new(),
        ),
        Err(e) => (1, String::new(), format!("cannot kill process {pid}: {e}")),
    }
}

/// Runs an emergency action: `(exit code, stdout, stderr)`.
pub async fn run(args: &Value, allowed: &crate::allow::Allowlist) -> (i64, String, String) {
    let action = args["action"].as_str().unwrap_or_default();
    if !allowed.emergency(action) {
        return (
            1,
            String::new(),
            format!("`{action}` is not on this host's emergency_actions"),
        );
    }
    let e = match parse(args) {
        Ok(e) => e,
        Err(why) => return (1, String::new(), why),
    };
    let nft = crate::patch::on_path("nft");
    let mut out = String::new();
    let mut err = String::new();
    if let Emergency::StopContainer(name) = &e {
        let (code, o, e) = crate::inventory::docker_stop(name).await;
        return (code, o, e);
    }
    if let Emergency::KillProcess(pid) = e {
        return kill(pid).await;
    }
    for cmd in commands(&e, nft) {
        let args: Vec<&str> = cmd[1..].iter().map(String::as_str).collect();
        let (code, o, e) = crate::patch::run(&cmd[0], &args, &[], None).await;
        out.push_str(&o);
        err.push_str(&e);
        if code != 0 {
            return (code, out, err);
        }
    }
    (0, out, err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn targets_are_checked_and_commands_built_without_a_shell() {
        let p = |a: &str, t: &str| parse(&json!({"action": a, "target": t}));
        // The rule is core's (tested there); the agent refuses its own pid besides.
        assert_eq!(p("kill_process", "4242"), Ok(Emergency::KillProcess(4242)));
        assert!(p("kill_process", &std::process::id().to_string()).is_err());
        assert!(p("block_ip", "203.0.113.0/24").is_err_and(|e| e.contains("IPv4 or IPv6")));
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
