//! The pure rules: which host watches a resource, and what findings a resource raises.

use crate::providers::Facts;
use std::collections::HashMap;
use trusthub_fleet::HostKeys;
use uuid::Uuid;

/// The hosts of a tenant, indexed the ways a resource is matched (CONTRACT 23): its instance
/// id, one of its addresses on a host's interfaces, or its name as the host's short name.
#[derive(Debug, Default)]
pub struct Matcher {
    by_instance: HashMap<String, Uuid>,
    by_addr: HashMap<String, Uuid>,
    by_name: HashMap<String, Uuid>,
}

/// The short, lowercase form of a host name (`web-1.example.com` → `web-1`).
pub fn short(name: &str) -> String {
    name.split('.').next().unwrap_or(name).trim().to_lowercase()
}

impl Matcher {
    /// Indexes the hosts.
    pub fn new(hosts: &[HostKeys]) -> Matcher {
        let mut m = Matcher::default();
        for h in hosts {
            if let Some(i) = h.instance_id.as_deref().filter(|i| !i.is_empty()) {
                m.by_instance.insert(i.to_owned(), h.agent_id);
            }
            for a in &h.addrs {
                // Loopback and link-local addresses are every host's.
                let local = a.parse::<std::net::IpAddr>().is_ok_and(|ip| match ip {
                    std::net::IpAddr::V4(v4) => v4.is_loopback() || v4.is_link_local(),
                    std::net::IpAddr::V6(v6) => v6.is_loopback() || v6.is_unicast_link_local(),
                });
                if !local {
                    m.by_addr.insert(a.clone(), h.agent_id);
                }
            }
            let name = short(&h.hostname);
            if !name.is_empty() && name != "localhost" {
                m.by_name.insert(name, h.agent_id);
            }
        }
        m
    }

    /// The host watching a resource: by instance id, then address, then name.
    pub fn agent_of(
        &self,
        provider_id: &str,
        private_ips: &[String],
        public_ips: &[String],
        name: &str,
    ) -> Option<Uuid> {
        self.by_instance
            .get(provider_id)
            .or_else(|| {
                private_ips
                    .iter()
                    .chain(public_ips)
                    .find_map(|ip| self.by_addr.get(ip))
            })
            .or_else(|| self.by_name.get(&short(name)))
            .copied()
    }
}

/// One finding a resource raises: `(rule, severity, detail)`.
pub type Raised = (&'static str, &'static str, String);

/// The findings of a live resource.
pub fn findings(kind: &str, public: bool, has_agent: bool, facts: &Facts) -> Vec<Raised> {
    let mut out = Vec::new();
    if kind == "vm" && !has_agent {
        out.push((
            "no_agent",
            "MEDIUM",
            "no Trusthub agent watches this machine".to_owned(),
        ));
        if public {
            out.push((
                "public_without_agent",
                "HIGH",
                "a machine with a public address that no Trusthub agent watches".to_owned(),
            ));
        }
    }
    let why = |port: u16| match facts.open_to_world {
        None => "no firewall applies: every port is open to the world".to_owned(),
        Some(_) => format!("the firewall lets TCP port {port} in from 0.0.0.0/0 or ::/0"),
    };
    if public && facts.open(22) {
        out.push(("ssh_open_to_world", "HIGH", why(22)));
    }
    if public && facts.open(3389) {
        out.push(("rdp_open_to_world", "CRITICAL", why(3389)));
    }
    if !facts.unencrypted_disks.is_empty() {
        out.push((
            "unencrypted_disk",
            "MEDIUM",
            format!(
                "disks not encrypted: {}",
                facts.unencrypted_disks.join(", ")
            ),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(id: u128, name: &str, addrs: &[&str], instance: Option<&str>) -> HostKeys {
        HostKeys {
            agent_id: Uuid::from_u128(id),
            hostname: name.into(),
            addrs: addrs.iter().map(|a| (*a).to_owned()).collect(),
            instance_id: instance.map(str::to_owned),
        }
    }

    #[test]
    fn a_resource_matches_by_instance_id_then_address_then_short_name() {
        let m = Matcher::new(&[
            host(1, "db-1.internal", &["127.0.0.1", "10.0.0.5"], None),
            host(2, "web-1", &["::1"], Some("i-abc")),
            host(3, "localhost", &["127.0.0.1"], None),
        ]);
        let none: Vec<String> = Vec::new();
        assert_eq!(
            m.agent_of("i-abc", &none, &none, "x"),
            Some(Uuid::from_u128(2))
        );
        assert_eq!(
            m.agent_of("i-zzz", &["10.0.0.5".into()], &none, "x"),
            Some(Uuid::from_u128(1))
        );
        assert_eq!(
            m.agent_of("i-zzz", &none, &none, "DB-1"),
            Some(Uuid::from_u128(1))
        );
        // Loopback and "localhost" match nothing.
        assert_eq!(
            m.agent_of("i-zzz", &["127.0.0.1".into()], &none, "localhost"),
            None
        );
    }

    #[test]
    fn findings_follow_exposure_and_coverage() {
        let open_all = Facts {
            open_to_world: None,
            firewall_known: true,
            unencrypted_disks: vec!["vol-1".into()],
        };
        let rules: Vec<&str> = findings("vm", true, false, &open_all)
            .iter()
            .map(|f| f.0)
            .collect();
        assert_eq!(
            rules,
            [
                "no_agent",
                "public_without_agent",
                "ssh_open_to_world",
                "rdp_open_to_world",
                "unencrypted_disk"
            ]
        );
        let closed = Facts {
            open_to_world: Some(vec![22]),
            firewall_known: true,
            unencrypted_disks: vec![],
        };
        let rules: Vec<&str> = findings("vm", false, true, &closed)
            .iter()
            .map(|f| f.0)
            .collect();
        assert!(
            rules.is_empty(),
            "a private machine's open port is not exposed: {rules:?}"
        );
        let rules: Vec<&str> = findings("vm", false, false, &Facts::default())
            .iter()
            .map(|f| f.0)
            .collect();
        assert_eq!(rules, ["no_agent"]);
    }
}
