//! DigitalOcean (API v2, bearer token): droplets (every page, while `links.pages.next`) and
//! the cloud firewalls applied to them (by droplet id or by tag). A droplet without a cloud
//! firewall has every port open to the world. Volumes are encrypted at rest by DigitalOcean.
//! `endpoint` replaces `https://api.digitalocean.com` (without `/v2`, as `pydo` takes it).

use super::{Discovery, Facts, Found, Http, Target};
use serde_json::Value;
use std::collections::BTreeMap;

fn base(t: &Target) -> String {
    format!(
        "{}/v2",
        t.endpoint
            .as_deref()
            .unwrap_or("https://api.digitalocean.com")
            .trim_end_matches('/')
    )
}

async fn get(http: &Http, t: &Target, path: &str) -> Result<Value, String> {
    let url = format!("{}{path}", base(t));
    let token = t.cred("token").to_owned();
    http.json(|c| c.get(&url).bearer_auth(&token)).await
}

/// Every page of a list (`key` holds the items).
async fn all(http: &Http, t: &Target, path: &str, key: &str) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    for page in 1..=10_000u32 {
        let v = get(http, t, &format!("{path}?page={page}&per_page=200")).await?;
        let items = v[key].as_array().cloned().unwrap_or_default();
        let empty = items.is_empty();
        out.extend(items);
        if empty || v["links"]["pages"]["next"].as_str().is_none() {
            break;
        }
    }
    Ok(out)
}

/// The check: one `GET /v2/account`.
pub async fn check(http: &Http, t: &Target) -> Result<(), String> {
    get(http, t, "/account").await.map(|_| ())
}

/// Inbound TCP ports a firewall opens to the world; `None` for all of them.
fn world_ports(fw: &Value) -> Option<Vec<u16>> {
    let mut ports = Vec::new();
    for r in fw["inbound_rules"].as_array().into_iter().flatten() {
        let world = r["sources"]["addresses"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|s| s == "0.0.0.0/0" || s == "::/0");
        if !world || r["protocol"] != "tcp" {
            continue;
        }
        let spec = r["ports"].as_str().unwrap_or("all");
        if spec == "all" || spec == "0" {
            return None;
        }
        ports.extend(super::opened(spec)?);
    }
    Some(ports)
}

/// Lists the team's droplets.
pub async fn discover(http: &Http, t: &Target) -> Discovery {
    let mut d = Discovery::default();
    let firewalls = match all(http, t, "/firewalls", "firewalls").await {
        Ok(f) => Some(f),
        Err(e) => {
            d.errors.push(("firewalls".into(), e));
            None
        }
    };
    let droplets = match all(http, t, "/droplets", "droplets").await {
        Ok(s) => s,
        Err(e) => {
            d.errors.push((String::new(), e));
            return d;
        }
    };
    for s in droplets {
        let region = s["region"]["slug"].as_str().unwrap_or_default().to_owned();
        if !t.regions.is_empty() && !t.regions.contains(&region) {
            continue;
        }
        let id = s["id"].as_u64().unwrap_or_default();
        let tags: Vec<&str> = s["tags"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let addrs = |family: &str, kind: &str| -> Vec<String> {
            s["networks"][family]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|n| n["type"] == kind)
                .filter_map(|n| n["ip_address"].as_str().map(str::to_owned))
                .collect()
        };
        let mut public_ips = addrs("v4", "public");
        public_ips.extend(addrs("v6", "public"));
        let private_ips = addrs("v4", "private");
        // The firewalls that apply: by droplet id or by one of its tags.
        let mut open: Option<Vec<u16>> = None;
        let mut applied = false;
        for fw in firewalls.iter().flatten() {
            let by_id = fw["droplet_ids"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|d| d.as_u64() == Some(id));
            let by_tag = fw["tags"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|t| t.as_str().is_some_and(|t| tags.contains(&t)));
            if !(by_id || by_tag) {
                continue;
            }
            let ports = world_ports(fw);
            open = match (applied, open, ports) {
                (false, _, p) => p,
                (true, None, _) | (true, _, None) => None,
                (true, Some(mut a), Some(b)) => {
                    a.extend(b);
                    Some(a)
                }
            };
            applied = true;
        }
        if !applied {
            open = None;
        }
        let state = s["status"].as_str().unwrap_or("unknown").to_owned();
        d.found.push(Found {
            kind: "vm".into(),
            provider_id: id.to_string(),
            name: s["name"].as_str().unwrap_or_default().to_owned(),
            region,
            gone: state == "archive",
            state,
            public_ips,
            private_ips,
            tags: tags
                .iter()
                .map(|t| match t.split_once(':') {
                    Some((k, v)) => (k.to_owned(), v.to_owned()),
                    None => ((*t).to_owned(), String::new()),
                })
                .collect::<BTreeMap<_, _>>(),
            facts: Facts {
                open_to_world: open,
                firewall_known: firewalls.is_some(),
                unencrypted_disks: Vec::new(),
            },
        });
    }
    d
}
