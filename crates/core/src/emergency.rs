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

/// The units of Trusthub itself, which no emergency stops (CONTRACT 30).
pub const OWN_UNITS: [&str; 2] = ["trusthub-agent", "trusthub"];

/// Whether `ip`, in any spelling (an IPv4-mapped or IPv4-compatible IPv6 address is its
/// IPv4 address), is one no host should block: loopback, unspecified, broadcast, multicast
/// or link-local.
pub fn unblockable(ip: std::net::IpAddr) -> bool {
    use std::net::IpAddr;
    let ip = match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            // `::a.b.c.d` (IPv4-compatible, deprecated but parsed).
            None if v6.segments()[..6] == [0; 6] && v6.segments()[6] != 0 => {
                IpAddr::V4(std::net::Ipv4Addr::from_bits(v6.to_bits() as u32))
            }
            None => IpAddr::V6(v6),
        },
        v4 => v4,
    };
    match ip {
        IpAddr::V4(a) => {
            a.is_loopback()
                || a.is_unspecified()
                || a.is_broadcast()
                || a.is_multicast()
                || a.is_link_local()
        }
        IpAddr::V6(a) => {
            a.is_loopback() || a.is_unspecified() || a.is_multicast() || a.is_unicast_link_local()
        }
    }
}

/// What the agent knows of its host that the hub cannot, for the rules checked again on
/// the host (CONTRACT 30).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostFacts {
    /// The hub's addresses as the agent reaches it.
    pub hub_addrs: Vec<std::net::IpAddr>,
    /// The agent's pid and its ancestors'.
    pub protected_pids: Vec<u32>,
    /// Whether the target pid is a kernel thread.
    pub kernel_thread: bool,
    /// Every UID 0 account of the host.
    pub uid0_users: Vec<String>,
    /// The user the agent's consoles run as.
    pub console_user: Option<String>,
}

/// The rules only the host can check: never the hub's address, the agent or its ancestors,
/// a kernel thread, a UID 0 account or the console user.
pub fn check_on_host(e: &Emergency, facts: &HostFacts) -> Result<(), Refusal> {
    let refuse = |message| {
        Err(Refusal {
            field: "target",
            message,
        })
    };
    match e {
        Emergency::BlockIp(ip) if facts.hub_addrs.iter().any(|h| same_ip(*h, *ip)) => {
            refuse("is the hub's own address: blocking it would cut this host off")
        }
        Emergency::KillProcess(pid) if facts.protected_pids.contains(pid) => {
            refuse("is the agent or one of its ancestors")
        }
        Emergency::KillProcess(_) if facts.kernel_thread => refuse("is a kernel thread"),
        Emergency::LockUser(u) if facts.uid0_users.iter().any(|r| r == u) => {
            refuse("is a UID 0 account")
        }
        Emergency::LockUser(u) if facts.console_user.as_deref() == Some(u.as_str()) => {
            refuse("is the user emergency consoles run as")
        }
        _ => Ok(()),
    }
}

fn canonical(ip: std::net::IpAddr) -> std::net::IpAddr {
    match ip {
        std::net::IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, std::net::IpAddr::V4),
        v4 => v4,
    }
}

fn same_ip(a: std::net::IpAddr, b: std::net::IpAddr) -> bool {
    canonical(a) == canonical(b)
}

/// Reads `action` with `target` (trimmed): a pid above 2 (not init, not the kernel's thread
/// parent); a unit, container or login name of letters, digits and a few signs, never
/// starting with `-` (nothing can pass for an option), the login never root and the unit
/// never Trusthub's own; one IPv4 or IPv6 address that is not loopback, unspecified,
/// broadcast, multicast or link-local in any spelling (CONTRACT 30).
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
            Ok(pid) if pid > 2 => Ok(Emergency::KillProcess(pid)),
            _ => refuse("must be a process id above 2 (not init or the kernel's threads)"),
        },
        "block_ip" if target.contains('/') => {
            refuse("must be one IPv4 or IPv6 address, not a prefix")
        }
        "block_ip" => match target.parse::<std::net::IpAddr>() {
            Ok(ip) if unblockable(ip) => refuse(
                "must not be a loopback, unspecified, broadcast, multicast or link-local address",
            ),
            Ok(ip) => Ok(Emergency::BlockIp(canonical(ip))),
            Err(_) => refuse("must be an IPv4 or IPv6 address"),
        },
        "lock_user" if word(b"_.-") && target != "root" => {
            Ok(Emergency::LockUser(target.to_owned()))
        }
        "lock_user" => refuse("must be a login name (not root)"),
        "stop_unit"
            if word(b"@._:-\\") && OWN_UNITS.contains(&target.trim_end_matches(".service")) =>
        {
            refuse("must not be Trusthub's own unit")
        }
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

    #[test]
    fn no_spelling_of_a_special_address_or_our_own_unit_passes() {
        for t in [
            "127.0.0.1",
            "127.8.9.10",
            "::1",
            "0:0:0:0:0:0:0:1",
            "0.0.0.0",
            "::",
            "255.255.255.255",
            "224.0.0.1",
            "ff02::1",
            "169.254.169.254",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:7f00:1",
            "::127.0.0.1",
            "10.0.0.0/8",
            "203.0.113.0/24",
        ] {
            assert_eq!(
                parse("block_ip", t).map_err(|r| r.field),
                Err("target"),
                "{t}"
            );
        }
        assert_eq!(
            parse("block_ip", "::ffff:203.0.113.9"),
            Ok(Emergency::BlockIp("203.0.113.9".parse().expect("ip")))
        );
        for u in [
            "trusthub-agent.service",
            "trusthub-agent",
            "trusthub.service",
        ] {
            assert!(parse("stop_unit", u).is_err(), "{u}");
        }
        assert!(parse("stop_unit", "trusthub-web.service").is_ok());
        assert!(parse("kill_process", "2").is_err());
        let facts = HostFacts {
            hub_addrs: vec!["192.0.2.10".parse().expect("ip")],
            protected_pids: vec![4242, 17],
            kernel_thread: false,
            uid0_users: vec!["root".into(), "toor".into()],
            console_user: Some("ops".into()),
        };
        let host = |a: &str, t: &str| parse(a, t).and_then(|e| check_on_host(&e, &facts));
        assert!(host("block_ip", "192.0.2.10").is_err());
        assert!(host("block_ip", "::ffff:192.0.2.10").is_err());
        assert!(host("block_ip", "192.0.2.11").is_ok());
        assert!(host("kill_process", "17").is_err());
        assert!(host("kill_process", "18").is_ok());
        assert!(host("lock_user", "toor").is_err());
        assert!(host("lock_user", "ops").is_err());
        assert!(host("lock_user", "mallory").is_ok());
        let kthread = HostFacts {
            kernel_thread: true,
            ..HostFacts::default()
        };
        assert!(check_on_host(&Emergency::KillProcess(99), &kthread).is_err());
    }
}
