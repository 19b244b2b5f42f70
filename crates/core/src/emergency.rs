//! Emergency actions (CONTRACT 19): the actions and what each accepts as its target, the one
//! rule the hub checks before it signs a token and the agent checks again before it acts.

/// The emergency actions.
pub const ACTIONS: [&str; 5] = [
    "kill_process",
    "stop_unit",
    "stop_container",
    "lock_user",
    "block_ip",
];

/// A checked emergency action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Emergency {
    /// SIGTERM, then SIGKILL after 5 s.
    KillProcess(u32),
    /// `systemctl stop`.
    StopUnit(String),
    /// The Docker Engine API's stop.
    StopContainer(String),
    /// `usermod -L -e 1`: password locked and the account expired (SSH keys stop too).
    LockUser(String),
    /// A drop rule for the address (nftables, else iptables).
    BlockIp(std::net::IpAddr),
}

/// Why an action or its target is refused: the field (`action` or `target`) and the rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// `action` or `target`.
    pub field: &'static str,
    /// What it must be.
    pub message: &'static str,
}

/// Reads `action` with `target` (trimmed): a pid above 1; a unit, container or login name
/// of letters, digits and a few signs, never starting with `-` (nothing can pass for an
/// option), the login never root; an IPv4 or IPv6 address.
pub fn parse(action: &str, target: &str) -> Result<Emergency, Refusal> {
    let target = target.trim();
    let word = |extra: &[u8]| {
        !target.is_empty()
            && target.len() <= 256
            && !target.starts_with('-')
            && target
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || extra.contains(&b))
    };
    let refuse = |message| {
        Err(Refusal {
            field: "target",
            message,
        })
    };
    match action {
        "kill_process" => match target.parse::<u32>() {
            Ok(pid) if pid > 1 => Ok(Emergency::KillProcess(pid)),
            _ => refuse("must be a process id above 1"),
        },
        "block_ip" => target
            .parse::<std::net::IpAddr>()
            .map(Emergency::BlockIp)
            .or_else(|_| refuse("must be an IPv4 or IPv6 address")),
        "lock_user" if word(b"_.-") && target != "root" => {
            Ok(Emergency::LockUser(target.to_owned()))
        }
        "lock_user" => refuse("must be a login name (not root)"),
        "stop_unit" if word(b"@._:-\\") => Ok(Emergency::StopUnit(target.to_owned())),
        "stop_container" if word(b"_.-") => Ok(Emergency::StopContainer(target.to_owned())),
        "stop_unit" | "stop_container" => {
            refuse("must be a name of letters, digits and . _ - (not starting with -)")
        }
        _ => Err(Refusal {
            field: "action",
            message: "must be kill_process, stop_unit, stop_container, lock_user or block_ip",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_checked_per_action() {
        assert_eq!(
            parse("kill_process", " 4242 "),
            Ok(Emergency::KillProcess(4242))
        );
        for (a, t) in [
            ("kill_process", "1"),
            ("kill_process", "-1"),
            ("kill_process", "12 34"),
            ("stop_unit", "--now"),
            ("stop_unit", "a;b"),
            ("lock_user", "root"),
            ("block_ip", "203.0.113.0/24"),
        ] {
            assert_eq!(parse(a, t).map_err(|r| r.field), Err("target"), "{a} {t}");
        }
        assert_eq!(parse("reboot", "now").map_err(|r| r.field), Err("action"));
        assert_eq!(
            parse("stop_unit", "nginx.service"),
            Ok(Emergency::StopUnit("nginx.service".into()))
        );
        assert!(parse("stop_container", "web_1").is_ok());
        assert_eq!(
            parse("lock_user", "mallory"),
            Ok(Emergency::LockUser("mallory".into()))
        );
        assert!(parse("block_ip", "2001:db8::1").is_ok());
    }
}
