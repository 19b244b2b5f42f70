//! This host's sockets (CONTRACT 24): listening TCP sockets and bound UDP sockets, and the
//! established TCP connections, each with the process that owns it — read from
//! `/proc/net/{tcp,tcp6,udp,udp6}` and matched to processes through the socket inodes of
//! `/proc/<pid>/fd`. The hub draws the topology's edges from them.
//!
//! Connections are reported aggregated, as a map needs them: an outgoing connection (its
//! local port is not one this host listens on) by `(remote address, remote port, process)`,
//! an incoming one by `(local port, remote address, process)`, each with a `count`; a busy
//! host's thousands of ephemeral ports become a few dozen entries.

use crate::host::procfs::Proc;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// At most this many connection entries are reported (the busiest first).
pub const MAX_CONNECTIONS: usize = 2000;

/// One line of a `/proc/net` socket table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Socket {
    /// The local address.
    pub local: IpAddr,
    /// The local port.
    pub local_port: u16,
    /// The remote address (unspecified for a listener).
    pub remote: IpAddr,
    /// The remote port.
    pub remote_port: u16,
    /// The kernel's state code (`0A` listen, `01` established, `07` a bound UDP socket).
    pub state: u8,
    /// The socket's inode (what `/proc/<pid>/fd` links to).
    pub inode: u64,
}

/// TCP `LISTEN`.
pub const LISTEN: u8 = 0x0A;
/// TCP `ESTABLISHED`.
pub const ESTABLISHED: u8 = 0x01;
/// A UDP socket that is bound but not connected.
pub const UDP_BOUND: u8 = 0x07;

/// Parses a `/proc/net/{tcp,tcp6,udp,udp6}` table (the header line and unreadable lines are
/// skipped). IPv4-mapped IPv6 addresses are given as the IPv4 address they are.
pub fn parse(table: &str) -> Vec<Socket> {
    table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 10 {
                return None;
            }
            let (local, local_port) = endpoint(f[1])?;
            let (remote, remote_port) = endpoint(f[2])?;
            Some(Socket {
                local,
                local_port,
                remote,
                remote_port,
                state: u8::from_str_radix(f[3], 16).ok()?,
                inode: f[9].parse().ok()?,
            })
        })
        .collect()
}

/// `0100007F:1F90` → `127.0.0.1`, 8080.
fn endpoint(s: &str) -> Option<(IpAddr, u16)> {
    let (addr, port) = s.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let bytes: Vec<u8> = (0..addr.len() / 2)
        .map(|i| u8::from_str_radix(addr.get(2 * i..2 * i + 2)?, 16).ok())
        .collect::<Option<_>>()?;
    let ip = match bytes.len() {
        // The kernel prints each 32-bit word in host (little-endian) order.
        4 => IpAddr::V4(Ipv4Addr::new(bytes[3], bytes[2], bytes[1], bytes[0])),
        16 => {
            let mut b = [0u8; 16];
            for w in 0..4 {
                for i in 0..4 {
                    b[w * 4 + i] = bytes[w * 4 + 3 - i];
                }
            }
            trusthub_core::apps::canonical_ip(IpAddr::V6(Ipv6Addr::from(b)))
        }
        _ => return None,
    };
    Some((ip, port))
}

/// The process that owns each socket inode: `inode → (pid, name)`.
pub fn owners(procs: &[Proc]) -> HashMap<u64, (u32, String)> {
    let mut out = HashMap::new();
    for p in procs {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{}/fd", p.pid)) else {
            continue;
        };
        for fd in fds.filter_map(Result::ok) {
            if let Ok(target) = std::fs::read_link(fd.path())
                && let Some(inode) = target
                    .to_str()
                    .and_then(|t| t.strip_prefix("socket:["))
                    .and_then(|t| t.strip_suffix(']'))
                    .and_then(|t| t.parse().ok())
            {
                out.insert(inode, (p.pid, name(p)));
            }
        }
    }
    out
}

/// A process's short name: the name its program was started with (`redis-server`, a
/// symlink to `redis-check-rdb`), else its executable's file name, else its command's first
/// word's.
fn name(p: &Proc) -> String {
    let path = match p.paths.first() {
        Some(started) if !trusthub_core::apps::is_interpreter(&p.exe) => started.as_str(),
        _ if p.exe.is_empty() => p.cmdline.split_whitespace().next().unwrap_or_default(),
        _ => p.exe.trim_end_matches(" (deleted)"),
    };
    path.rsplit('/').next().unwrap_or_default().to_owned()
}

/// What the inventory reports: `(listening, connections)`.
pub fn report(procs: &[Proc]) -> (Value, Value) {
    let tables: Vec<(&str, Vec<Socket>)> = ["tcp", "tcp6", "udp", "udp6"]
        .into_iter()
        .map(|t| {
            let text = std::fs::read_to_string(format!("/proc/net/{t}")).unwrap_or_default();
            (t, parse(&text))
        })
        .collect();
    summarise(&tables, &owners(procs))
}

/// [`report`] of tables already read.
pub fn summarise(
    tables: &[(&str, Vec<Socket>)],
    owners: &HashMap<u64, (u32, String)>,
) -> (Value, Value) {
    let mut listening = Vec::new();
    let mut ports: HashSet<u16> = HashSet::new();
    for (proto, socks) in tables {
        let want = if proto.starts_with("tcp") {
            LISTEN
        } else {
            UDP_BOUND
        };
        for s in socks.iter().filter(|s| s.state == want) {
            if proto.starts_with("tcp") {
                ports.insert(s.local_port);
            }
            let owner = owners.get(&s.inode);
            listening.push(json!({
                "proto": proto, "addr": s.local.to_string(), "port": s.local_port,
                "pid": owner.map(|o| o.0), "process": owner.map(|o| o.1.clone()),
            }));
        }
    }
    // (direction, address on the other side, service port, process) → (local address, pid, count)
    type Key = (&'static str, IpAddr, u16, Option<String>);
    type Seen = (IpAddr, Option<u32>, u64);
    let mut conns: BTreeMap<Key, Seen> = BTreeMap::new();
    for (_, socks) in tables.iter().filter(|(p, _)| p.starts_with("tcp")) {
        for s in socks.iter().filter(|s| s.state == ESTABLISHED) {
            let owner = owners.get(&s.inode);
            let (direction, port) = if ports.contains(&s.local_port) {
                ("in", s.local_port)
            } else {
                ("out", s.remote_port)
            };
            let e = conns
                .entry((direction, s.remote, port, owner.map(|o| o.1.clone())))
                .or_insert((s.local, owner.map(|o| o.0), 0));
            e.2 += 1;
        }
    }
    let mut conns: Vec<(Key, Seen)> = conns.into_iter().collect();
    conns.sort_by_key(|c| std::cmp::Reverse(c.1.2));
    conns.truncate(MAX_CONNECTIONS);
    let connections = conns
        .into_iter()
        .map(
            |((direction, remote, port, process), (local, pid, count))| {
                json!({
                    "proto": "tcp", "direction": direction, "local_addr": local.to_string(),
                    "remote_addr": remote.to_string(), "port": port, "pid": pid,
                    "process": process, "count": count,
                })
            },
        )
        .collect();
    (Value::Array(listening), Value::Array(connections))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CONTRACT 33: a program is named as it was started (`redis-server`, a symlink to
    /// `redis-check-rdb`); an interpreter keeps its own name.
    #[test]
    fn a_process_is_named_as_it_was_started() {
        let p = |exe: &str, cmdline: &str, paths: &[&str]| Proc {
            pid: 7,
            exe: exe.into(),
            cmdline: cmdline.into(),
            user: "redis".into(),
            ppid: 1,
            paths: paths.iter().map(|s| (*s).to_owned()).collect(),
        };
        assert_eq!(
            name(&p(
                "/usr/bin/redis-check-rdb",
                "redis-server *:6379",
                &["/usr/bin/redis-server"]
            )),
            "redis-server"
        );
        assert_eq!(name(&p("/usr/sbin/nginx", "nginx: master", &[])), "nginx");
        assert_eq!(
            name(&p(
                "/usr/bin/python3.11",
                "python3 app.py",
                &["/srv/app/app.py"]
            )),
            "python3.11"
        );
        assert_eq!(name(&p("", "/opt/tool --serve", &[])), "tool");
    }

    #[test]
    fn tables_read_as_the_kernel_writes_them() {
        let tcp = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 12345 1 0000000000000000 100 0 0 10 0\n\
   1: 0F02000A:C350 0102000A:0016 01 00000000:00000000 02:000A7B5F 00000000  1000        0 777 4 0000000000000000 20 4 30 10 -1\n\
 garbage\n";
        let s = parse(tcp);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].local, IpAddr::from([127, 0, 0, 1]));
        assert_eq!(
            (s[0].local_port, s[0].state, s[0].inode),
            (8080, LISTEN, 12345)
        );
        assert_eq!(s[1].local, IpAddr::from([10, 0, 2, 15]));
        assert_eq!(s[1].remote, IpAddr::from([10, 0, 2, 1]));
        assert_eq!(
            (s[1].local_port, s[1].remote_port, s[1].state),
            (50000, 22, ESTABLISHED)
        );
        // tcp6: ::1 and an IPv4-mapped address.
        let tcp6 = "header\n\
   0: 00000000000000000000000001000000:0050 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 99 1\n\
   1: 0000000000000000FFFF00000100007F:1F90 0000000000000000FFFF00000100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 98 1\n";
        let s = parse(tcp6);
        assert_eq!(s[0].local, "::1".parse::<IpAddr>().expect("ip"));
        assert_eq!(s[0].local_port, 80);
        assert_eq!(s[1].local, IpAddr::from([127, 0, 0, 1]));
        assert_eq!(s[1].remote_port, 0xD431);
    }

    /// The real `/proc` of this test: a listener and a client it opens are reported with
    /// this process as their owner, the connection once from each side.
    #[test]
    fn this_process_listener_and_client_are_found_in_the_real_proc() {
        use std::io::Write;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let mut client = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
        let (_server, _) = listener.accept().expect("accept");
        client.write_all(b"x").expect("write");
        let me = std::process::id();
        let names = HashMap::new();
        let procs: Vec<Proc> = crate::host::procfs::processes(&names)
            .into_iter()
            .filter(|p| p.pid == me)
            .collect();
        assert_eq!(procs.len(), 1, "this process is listed");
        let (listening, connections) = report(&procs);
        let mine = |v: &Value| v["pid"] == json!(me);
        assert!(
            listening
                .as_array()
                .expect("list")
                .iter()
                .any(|l| l["port"] == json!(port)
                    && l["proto"] == "tcp"
                    && l["addr"] == "127.0.0.1"
                    && mine(l)
                    && !l["process"].as_str().unwrap_or_default().is_empty()),
            "{listening}"
        );
        let conns = connections.as_array().expect("list");
        let out = conns
            .iter()
            .find(|c| c["direction"] == "out" && c["port"] == json!(port))
            .unwrap_or_else(|| panic!("the client's side: {connections}"));
        assert!(
            mine(out) && out["remote_addr"] == "127.0.0.1" && out["count"] == 1,
            "{out}"
        );
        let inc = conns
            .iter()
            .find(|c| c["direction"] == "in" && c["port"] == json!(port))
            .unwrap_or_else(|| panic!("the server's side: {connections}"));
        assert!(mine(inc) && inc["local_addr"] == "127.0.0.1", "{inc}");
        assert_eq!(inc["process"], out["process"]);
    }

    #[test]
    fn many_connections_to_one_service_are_one_entry() {
        let local = IpAddr::from([10, 0, 0, 5]);
        let db = IpAddr::from([10, 0, 0, 9]);
        let socks: Vec<Socket> = (0..500u16)
            .map(|i| Socket {
                local,
                local_port: 40000 + i,
                remote: db,
                remote_port: 5432,
                state: ESTABLISHED,
                inode: 1000 + u64::from(i),
            })
            .collect();
        let owners: HashMap<u64, (u32, String)> = (0..500u64)
            .map(|i| (1000 + i, (42, "gunicorn".to_owned())))
            .collect();
        let (_, c) = summarise(&[("tcp", socks)], &owners);
        assert_eq!(
            c,
            json!([{"proto": "tcp", "direction": "out", "local_addr": "10.0.0.5", "remote_addr": "10.0.0.9",
                "port": 5432, "pid": 42, "process": "gunicorn", "count": 500}])
        );
    }
}
