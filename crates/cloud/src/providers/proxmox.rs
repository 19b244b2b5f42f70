//! Proxmox VE (API `api2/json`, API token): the cluster's virtual machines and containers
//! (`/cluster/resources?type=vm`, templates left out) and their addresses — a VM's from its
//! QEMU guest agent, a container's from its interfaces. Addresses in private or unique-local
//! ranges are private, the others public. Containers (`lxc/<vmid>`) are listed as
//! machines like VMs (`qemu/<vmid>`): they have their own init and run an agent as a VM
//! does. The firewall is not read yet (no exposure findings). `endpoint` is the cluster's own URL (`https://pve.example.com:8006`); its
//! certificate is usually the cluster's own CA, given as the account's `ca_pem`.

use super::{Discovery, Facts, Found, Http, Target};
use serde_json::Value;
use std::collections::BTreeMap;
use std::net::IpAddr;

fn base(t: &Target) -> Result<String, String> {
    t.endpoint
        .as_deref()
        .map(|e| format!("{}/api2/json", e.trim_end_matches('/')))
        .ok_or_else(|| "a Proxmox account needs its endpoint (https://host:8006)".to_owned())
}

async fn get(http: &Http, t: &Target, path: &str) -> Result<Value, String> {
    let url = format!("{}{path}", base(t)?);
    let auth = format!(
        "PVEAPIToken={}={}",
        t.cred("token_id"),
        t.cred("token_secret")
    );
    let v = http
        .json(|c| c.get(&url).header("authorization", &auth))
        .await?;
    Ok(v["data"].clone())
}

/// The check: one `GET /version`.
pub async fn check(http: &Http, t: &Target) -> Result<(), String> {
    get(http, t, "/version").await.map(|_| ())
}

/// Whether an address is private (RFC 1918, CGNAT, unique-local) or the host's own.
fn private(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            v4.is_private() || (o[0] == 100 && (64..128).contains(&o[1]))
        }
        IpAddr::V6(v6) => (v6.segments()[0] & 0xfe00) == 0xfc00,
    }
}

/// Sorts addresses into public and private, leaving out loopback and link-local ones.
fn sort(addrs: impl Iterator<Item = String>) -> (Vec<String>, Vec<String>) {
    let (mut public, mut private_ips) = (Vec::new(), Vec::new());
    for a in addrs {
        let a = a.split('/').next().unwrap_or_default().to_owned();
        let Ok(ip) = a.parse::<IpAddr>() else {
            continue;
        };
        let local = match ip {
            IpAddr::V4(v4) => v4.is_loopback() || v4.is_link_local(),
            IpAddr::V6(v6) => v6.is_loopback() || v6.is_unicast_link_local(),
        };
        if local {
            continue;
        }
        let list = if private(&ip) {
            &mut private_ips
        } else {
            &mut public
        };
        if !list.contains(&a) {
            list.push(a);
        }
    }
    (public, private_ips)
}

/// Lists the cluster's guests.
pub async fn discover(http: &Http, t: &Target) -> Discovery {
    let mut d = Discovery::default();
    let guests = match get(http, t, "/cluster/resources?type=vm").await {
        Ok(Value::Array(g)) => g,
        Ok(other) => {
            d.errors
                .push((String::new(), format!("unexpected answer: {other}")));
            return d;
        }
        Err(e) => {
            d.errors.push((String::new(), e));
            return d;
        }
    };
    for g in guests {
        if g["template"].as_u64() == Some(1) {
            continue;
        }
        let node = g["node"].as_str().unwrap_or_default().to_owned();
        if !t.regions.is_empty() && !t.regions.contains(&node) {
            continue;
        }
        let kind = g["type"].as_str().unwrap_or("qemu");
        let vmid = g["vmid"].as_u64().unwrap_or_default();
        let state = g["status"].as_str().unwrap_or("unknown").to_owned();
        // Addresses are only known of a running guest (its agent or its interfaces).
        let addrs: Vec<String> = if state != "running" {
            Vec::new()
        } else if kind == "lxc" {
            match get(http, t, &format!("/nodes/{node}/lxc/{vmid}/interfaces")).await {
                Ok(v) => v
                    .as_array()
                    .into_iter()
                    .flatten()
                    .flat_map(|i| [i["inet"].as_str(), i["inet6"].as_str()])
                    .flatten()
                    .map(str::to_owned)
                    .collect(),
                Err(e) => {
                    d.errors
                        .push((node.clone(), format!("container {vmid}: {e}")));
                    Vec::new()
                }
            }
        } else {
            // A VM without a running guest agent answers an error: no addresses, no failure.
            match get(
                http,
                t,
                &format!("/nodes/{node}/qemu/{vmid}/agent/network-get-interfaces"),
            )
            .await
            {
                Ok(v) => v["result"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .flat_map(|i| i["ip-addresses"].as_array().into_iter().flatten())
                    .filter_map(|a| a["ip-address"].as_str().map(str::to_owned))
                    .collect(),
                Err(_) => Vec::new(),
            }
        };
        let (public_ips, private_ips) = sort(addrs.into_iter());
        let tags: BTreeMap<String, String> = g["tags"]
            .as_str()
            .unwrap_or_default()
            .split([';', ',', ' '])
            .filter(|t| !t.is_empty())
            .map(|t| (t.to_owned(), String::new()))
            .collect();
        d.found.push(Found {
            // A container guest has its own init and runs an agent as a VM does.
            kind: "vm".into(),
            provider_id: format!("{kind}/{vmid}"),
            name: g["name"].as_str().unwrap_or_default().to_owned(),
            region: node,
            gone: false,
            state,
            public_ips,
            private_ips,
            tags,
            facts: Facts::default(),
        });
    }
    d
}

#[cfg(test)]
mod tests {
    #[test]
    fn addresses_sort_into_public_and_private_without_local_ones() {
        let (public, private) = super::sort(
            [
                "127.0.0.1",
                "10.0.0.5/24",
                "fe80::1/64",
                "203.0.113.9",
                "100.64.1.2",
                "fd00::5",
                "2001:db8::7/64",
            ]
            .into_iter()
            .map(str::to_owned),
        );
        assert_eq!(public, ["203.0.113.9", "2001:db8::7"]);
        assert_eq!(private, ["10.0.0.5", "100.64.1.2", "fd00::5"]);
    }
}
