//! What agents and cloud discovery show of the graph (CONTRACT 24): a node per host with an
//! agent and per cloud machine without one, and an edge per service one known host uses on
//! another, from the connections agents report (an outgoing connection to an address of
//! another host, or an incoming one from it), labelled with the processes on both sides.
//! Detected items have stable ids (derived from what they are), so one can be promoted by id.

use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::IpAddr;
use trusthub_core::inventory::{Connection, Listening};
use uuid::Uuid;

/// A host as detection reads it.
#[derive(Debug, Clone, Default)]
pub struct Host {
    /// The agent.
    pub agent_id: Uuid,
    /// Its host name.
    pub hostname: String,
    /// Its addresses (interfaces).
    pub addrs: Vec<String>,
    /// Its listening sockets.
    pub listening: Vec<Listening>,
    /// Its established connections.
    pub connections: Vec<Connection>,
    /// The cloud machine it runs on, where discovery matched one.
    pub cloud_resource_id: Option<Uuid>,
}

/// A cloud machine no agent watches.
#[derive(Debug, Clone)]
pub struct CloudMachine {
    /// The resource.
    pub id: Uuid,
    /// Its name at the provider.
    pub name: String,
    /// Its addresses.
    pub addrs: Vec<String>,
}

/// Where a detected item comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    /// An agent.
    Agent,
    /// Cloud discovery.
    Cloud,
}

/// A detected node.
#[derive(Debug, Clone)]
pub struct DNode {
    /// Its stable id.
    pub id: Uuid,
    /// Where from.
    pub source: Source,
    /// Host name or resource name.
    pub name: String,
    /// The agent.
    pub agent_id: Option<Uuid>,
    /// The cloud resource.
    pub cloud_resource_id: Option<Uuid>,
}

/// A detected edge: `source` uses a service of `target`.
#[derive(Debug, Clone)]
pub struct DEdge {
    /// Its stable id.
    pub id: Uuid,
    /// The detected node that depends.
    pub source: Uuid,
    /// The detected node it depends on.
    pub target: Uuid,
    /// `tcp`.
    pub protocol: String,
    /// The service's port.
    pub port: u16,
    /// `client processes → server process`.
    pub label: String,
    /// Connections seen.
    pub count: u64,
}

/// A stable id for what a detected item is.
pub fn stable_id(tenant: Uuid, what: &str) -> Uuid {
    let d = Sha256::digest(format!("trusthub-topology:{tenant}:{what}").as_bytes());
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    uuid::Builder::from_random_bytes(b).into_uuid()
}

/// The id of an agent's detected node.
pub fn agent_node(tenant: Uuid, agent: Uuid) -> Uuid {
    stable_id(tenant, &format!("agent:{agent}"))
}

/// The id of a cloud machine's detected node.
pub fn cloud_node(tenant: Uuid, resource: Uuid) -> Uuid {
    stable_id(tenant, &format!("cloud:{resource}"))
}

/// An address that names one machine (not loopback, unspecified, link-local or multicast:
/// those are every host's).
fn distinctive(ip: IpAddr) -> bool {
    let ip = trusthub_core::apps::canonical_ip(ip);
    !(ip.is_loopback() || ip.is_unspecified() || ip.is_multicast())
        && match ip {
            IpAddr::V4(v4) => !v4.is_link_local() && !v4.is_broadcast(),
            IpAddr::V6(v6) => (v6.segments()[0] & 0xffc0) != 0xfe80,
        }
}

fn parse(a: &str) -> Option<IpAddr> {
    // Interfaces are reported with their prefix (`10.0.0.5/24`).
    let ip: IpAddr = a.split('/').next()?.trim().parse().ok()?;
    let ip = trusthub_core::apps::canonical_ip(ip);
    distinctive(ip).then_some(ip)
}

/// The detected graph of a tenant.
pub fn detect(tenant: Uuid, hosts: &[Host], machines: &[CloudMachine]) -> (Vec<DNode>, Vec<DEdge>) {
    let mut nodes = Vec::new();
    // Address → detected node (an address two machines claim names neither).
    let mut owner: HashMap<IpAddr, Option<Uuid>> = HashMap::new();
    let mut claim = |ip: IpAddr, node: Uuid| {
        owner
            .entry(ip)
            .and_modify(|o| {
                if *o != Some(node) {
                    *o = None;
                }
            })
            .or_insert(Some(node));
    };
    for h in hosts {
        let id = agent_node(tenant, h.agent_id);
        nodes.push(DNode {
            id,
            source: Source::Agent,
            name: h.hostname.clone(),
            agent_id: Some(h.agent_id),
            cloud_resource_id: h.cloud_resource_id,
        });
        for ip in h.addrs.iter().filter_map(|a| parse(a)) {
            claim(ip, id);
        }
    }
    for m in machines {
        let id = cloud_node(tenant, m.id);
        nodes.push(DNode {
            id,
            source: Source::Cloud,
            name: m.name.clone(),
            agent_id: None,
            cloud_resource_id: Some(m.id),
        });
        for ip in m.addrs.iter().filter_map(|a| parse(a)) {
            claim(ip, id);
        }
    }
    let server_process = |node: Uuid, port: u16| -> Option<String> {
        let h = hosts
            .iter()
            .find(|h| agent_node(tenant, h.agent_id) == node)?;
        h.listening
            .iter()
            .find(|l| {
                l.port == Some(u64::from(port))
                    && l.proto.as_deref().is_some_and(|p| p.starts_with("tcp"))
            })
            .and_then(|l| l.process.clone())
    };
    // (source, target, port) → (client processes, server processes, count)
    type Seen = (BTreeSet<String>, BTreeSet<String>, u64);
    let mut edges: BTreeMap<(Uuid, Uuid, u16), Seen> = BTreeMap::new();
    for h in hosts {
        let me = agent_node(tenant, h.agent_id);
        for c in &h.connections {
            let (Some(remote), Some(port)) = (
                c.remote_addr.as_deref().and_then(parse),
                c.port
                    .and_then(|p| u16::try_from(p).ok())
                    .filter(|p| *p > 0),
            ) else {
                continue;
            };
            let Some(Some(other)) = owner.get(&remote).copied() else {
                continue;
            };
            if other == me {
                continue;
            }
            let (source, target) = match c.direction.as_deref() {
                Some("out") => (me, other),
                Some("in") => (other, me),
                _ => continue,
            };
            let e = edges.entry((source, target, port)).or_default();
            if let Some(p) = c.process.clone().filter(|p| !p.is_empty()) {
                if source == me {
                    e.0.insert(p)
                } else {
                    e.1.insert(p)
                };
            }
            e.2 += c.count.unwrap_or(1);
        }
    }
    let edges = edges
        .into_iter()
        .map(
            |((source, target, port), (mut clients, mut servers, count))| {
                if servers.is_empty() {
                    servers.extend(server_process(target, port));
                }
                clients.retain(|c| !c.is_empty());
                servers.retain(|s| !s.is_empty());
                let side = |s: &BTreeSet<String>| {
                    if s.is_empty() {
                        "?".to_owned()
                    } else {
                        s.iter().cloned().collect::<Vec<_>>().join(", ")
                    }
                };
                DEdge {
                    id: stable_id(tenant, &format!("edge:{source}:{target}:tcp:{port}")),
                    source,
                    target,
                    protocol: "tcp".into(),
                    port,
                    label: format!("{} → {} (tcp/{port})", side(&clients), side(&servers)),
                    count,
                }
            },
        )
        .collect();
    (nodes, edges)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn(direction: &str, remote: &str, port: u64, process: &str) -> Connection {
        Connection {
            proto: Some("tcp".into()),
            direction: Some(direction.into()),
            local_addr: None,
            remote_addr: Some(remote.into()),
            port: Some(port),
            pid: Some(1),
            process: Some(process.into()),
            count: Some(3),
        }
    }

    #[test]
    fn connections_between_known_hosts_become_edges_from_either_side() {
        let t = Uuid::from_u128(7);
        let (web, db, cache) = (Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(3));
        let hosts = vec![
            Host {
                agent_id: web,
                hostname: "web".into(),
                addrs: vec!["10.0.0.5/24".into(), "127.0.0.1/8".into()],
                connections: vec![
                    conn("out", "10.0.0.9", 5432, "gunicorn"),
                    // Loopback is every host's: not an edge.
                    conn("out", "127.0.0.1", 6379, "gunicorn"),
                    // Somewhere unknown: not an edge.
                    conn("out", "93.184.216.34", 443, "curl"),
                ],
                ..Host::default()
            },
            Host {
                agent_id: db,
                hostname: "db".into(),
                addrs: vec!["10.0.0.9".into()],
                listening: vec![Listening {
                    proto: Some("tcp".into()),
                    addr: Some("0.0.0.0".into()),
                    port: Some(5432),
                    pid: Some(9),
                    process: Some("postgres".into()),
                }],
                connections: vec![conn("in", "10.0.0.5", 5432, "postgres")],
                ..Host::default()
            },
            Host {
                agent_id: cache,
                hostname: "cache".into(),
                addrs: vec!["10.0.0.7".into()],
                // Only the server's side reports it: still an edge web -> cache.
                connections: vec![conn("in", "10.0.0.5", 6379, "redis-server")],
                ..Host::default()
            },
        ];
        let machines = vec![CloudMachine {
            id: Uuid::from_u128(99),
            name: "legacy".into(),
            addrs: vec!["10.0.0.42".into()],
        }];
        let (nodes, edges) = detect(t, &hosts, &machines);
        assert_eq!(nodes.len(), 4);
        assert_eq!(nodes[3].source, Source::Cloud);
        let (wn, dn, cn) = (agent_node(t, web), agent_node(t, db), agent_node(t, cache));
        let mut got: Vec<(Uuid, Uuid, u16, String, u64)> = edges
            .iter()
            .map(|e| (e.source, e.target, e.port, e.label.clone(), e.count))
            .collect();
        got.sort();
        let mut want = vec![
            (wn, dn, 5432, "gunicorn → postgres (tcp/5432)".to_owned(), 6),
            (wn, cn, 6379, "? → redis-server (tcp/6379)".to_owned(), 3),
        ];
        want.sort();
        assert_eq!(got, want);
        // Stable: the same input, the same ids.
        let (_, again) = detect(t, &hosts, &machines);
        assert_eq!(
            edges.iter().map(|e| e.id).collect::<Vec<_>>(),
            again.iter().map(|e| e.id).collect::<Vec<_>>()
        );
    }

    #[test]
    fn an_address_two_hosts_claim_names_neither() {
        let t = Uuid::from_u128(7);
        let hosts: Vec<Host> = (1..=3u128)
            .map(|i| Host {
                agent_id: Uuid::from_u128(i),
                hostname: format!("h{i}"),
                addrs: vec!["172.17.0.1".into()],
                connections: vec![conn("out", "172.17.0.1", 80, "x")],
                ..Host::default()
            })
            .collect();
        assert!(detect(t, &hosts, &[]).1.is_empty());
    }
}
