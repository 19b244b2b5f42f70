//! Hetzner Cloud (API v1, bearer token): servers (every page, `meta.pagination.next_page`)
//! and the firewalls applied to them. A server without a firewall has every port open to
//! the world; with one, only what its inbound rules from `0.0.0.0/0` or `::/0` let in.
//! `endpoint` replaces `https://api.hetzner.cloud/v1`.

use super::{Discovery, Facts, Found, Http, Target};
use serde_json::Value;
use std::collections::HashMap;

fn base(t: &Target) -> String {
    t.endpoint
        .as_deref()
        .unwrap_or("https://api.hetzner.cloud/v1")
        .trim_end_matches('/')
        .to_owned()
}

async fn get(http: &Http, t: &Target, path: &str) -> Result<Value, String> {
    let url = format!("{}{path}", base(t));
    let token = t.cred("token").to_owned();
    http.json(|c| c.get(&url).bearer_auth(&token)).await
}

/// Hands every item of every page of a list (`key` holds them) to `each`, a page at a time
/// (a large project is never held whole as JSON).
async fn each(
    http: &Http,
    t: &Target,
    path: &str,
    key: &str,
    mut each: impl FnMut(&Value),
) -> Result<(), String> {
    let mut page = 1u64;
    loop {
        let v = get(http, t, &format!("{path}?page={page}&per_page=50")).await?;
        for item in v[key].as_array().into_iter().flatten() {
            each(item);
        }
        match v["meta"]["pagination"]["next_page"].as_u64() {
            Some(next) if next > page => page = next,
            _ => return Ok(()),
        }
    }
}

/// The check: one `GET /servers?per_page=1`.
pub async fn check(http: &Http, t: &Target) -> Result<(), String> {
    get(http, t, "/servers?per_page=1").await.map(|_| ())
}

/// Inbound TCP ports a firewall opens to the world; `None` for all of them.
fn world_ports(fw: &Value) -> Option<Vec<u16>> {
    let mut ports = Vec::new();
    for r in fw["rules"].as_array().into_iter().flatten() {
        let world = r["source_ips"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|s| s == "0.0.0.0/0" || s == "::/0");
        if r["direction"] != "in" || !world || r["protocol"] != "tcp" {
            continue;
        }
        let spec = r["port"].as_str().unwrap_or("any");
        if spec == "any" {
            return None;
        }
        ports.extend(super::opened(spec)?);
    }
    Some(ports)
}

/// Lists the project's servers.
pub async fn discover(http: &Http, t: &Target) -> Discovery {
    let mut d = Discovery::default();
    let mut firewalls: HashMap<u64, Option<Vec<u16>>> = HashMap::new();
    let read = each(http, t, "/firewalls", "firewalls", |f| {
        if let Some(id) = f["id"].as_u64() {
            firewalls.insert(id, world_ports(f));
        }
    })
    .await;
    let firewalls_read = match read {
        Ok(()) => true,
        Err(e) => {
            d.errors.push(("firewalls".into(), e));
            false
        }
    };
    let mut found = Vec::new();
    let listed = each(http, t, "/servers", "servers", |s| {
        if let Some(f) = server(s, t, &firewalls, firewalls_read) {
            found.push(f);
        }
    })
    .await;
    if let Err(e) = listed {
        d.errors.push((String::new(), e));
        return d;
    }
    d.found = found;
    d
}

/// A server as a resource (`None` outside the account's locations).
fn server(
    s: &Value,
    t: &Target,
    firewalls: &HashMap<u64, Option<Vec<u16>>>,
    firewalls_read: bool,
) -> Option<Found> {
    // `location` (the datacenter's location in API versions before it).
    let region = s["location"]["name"]
        .as_str()
        .or_else(|| s["datacenter"]["location"]["name"].as_str())
        .unwrap_or_default()
        .to_owned();
    if !t.regions.is_empty() && !t.regions.contains(&region) {
        return None;
    }
    let mut public_ips = Vec::new();
    if let Some(ip) = s["public_net"]["ipv4"]["ip"].as_str() {
        public_ips.push(ip.to_owned());
    }
    if let Some(net) = s["public_net"]["ipv6"]["ip"].as_str() {
        // The server's address in its /64 is the first one.
        let prefix = net.split('/').next().unwrap_or(net);
        public_ips.push(if prefix.ends_with("::") {
            format!("{prefix}1")
        } else {
            prefix.to_owned()
        });
    }
    let private_ips = s["private_net"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n["ip"].as_str().map(str::to_owned))
        .collect();
    let applied: Vec<u64> = s["public_net"]["firewalls"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["id"].as_u64())
        .collect();
    let mut open: Option<Vec<u16>> = if applied.is_empty() {
        None
    } else {
        Some(Vec::new())
    };
    for id in &applied {
        match (firewalls.get(id), &mut open) {
            (Some(None), _) => open = None,
            (Some(Some(p)), Some(o)) => o.extend(p.iter().copied()),
            _ => {}
        }
    }
    let tags = super::string_map(&s["labels"]);
    let state = s["status"].as_str().unwrap_or("unknown").to_owned();
    Some(Found {
        kind: "vm".into(),
        provider_id: s["id"].as_u64().map(|i| i.to_string()).unwrap_or_default(),
        name: s["name"].as_str().unwrap_or_default().to_owned(),
        region,
        gone: state == "deleting",
        state,
        public_ips,
        private_ips,
        tags,
        facts: Facts {
            open_to_world: open,
            firewall_known: firewalls_read,
            unencrypted_disks: Vec::new(),
        },
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn firewall_rules_open_ports_to_the_world_only_from_everywhere() {
        let fw = json!({"rules": [
            {"direction": "in", "protocol": "tcp", "port": "22", "source_ips": ["0.0.0.0/0", "::/0"]},
            {"direction": "in", "protocol": "tcp", "port": "3380-3390", "source_ips": ["10.0.0.0/8"]},
            {"direction": "in", "protocol": "udp", "port": "53", "source_ips": ["0.0.0.0/0"]},
        ]});
        assert_eq!(super::world_ports(&fw), Some(vec![22]));
        let all = json!({"rules": [{"direction": "in", "protocol": "tcp", "port": "1-65535", "source_ips": ["::/0"]}]});
        assert_eq!(super::world_ports(&all), None);
    }
}
