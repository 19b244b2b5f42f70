//! Scaleway Instances (API `instance/v1`, `X-Auth-Token`: the API key's secret): every
//! zone's servers of the project (`page` / `per_page` until `total_count`) and their
//! security groups, whose rules are evaluated as Scaleway does — in order, the first inbound
//! rule that matches decides, else the group's inbound default policy (`accept` unless set
//! otherwise). `endpoint` replaces `https://api.scaleway.com`.

use super::{Discovery, Facts, Found, Http, Target};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// The zones Instances run in.
pub const ZONES: [&str; 10] = [
    "fr-par-1", "fr-par-2", "fr-par-3", "nl-ams-1", "nl-ams-2", "nl-ams-3", "pl-waw-1", "pl-waw-2",
    "pl-waw-3", "it-mil-1",
];

fn base(t: &Target) -> String {
    t.endpoint
        .as_deref()
        .unwrap_or("https://api.scaleway.com")
        .trim_end_matches('/')
        .to_owned()
}

fn project(t: &Target) -> String {
    t.cred("project_id")
        .chars()
        .filter(|c| c.is_ascii_hexdigit() || *c == '-')
        .collect()
}

async fn get(http: &Http, t: &Target, path: &str) -> Result<Value, String> {
    let url = format!("{}{path}", base(t));
    let key = t.cred("secret_key").to_owned();
    http.json(|c| c.get(&url).header("X-Auth-Token", &key))
        .await
}

/// Every item of a zone's list.
async fn all(http: &Http, t: &Target, zone: &str, what: &str) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    for page in 1..=10_000u32 {
        let v = get(
            http,
            t,
            &format!(
                "/instance/v1/zones/{zone}/{what}?project={}&page={page}&per_page=100",
                project(t)
            ),
        )
        .await?;
        let items = v[what].as_array().cloned().unwrap_or_default();
        let done = items.len() < 100
            || v["total_count"]
                .as_u64()
                .is_some_and(|n| (out.len() + items.len()) as u64 >= n);
        out.extend(items);
        if done {
            break;
        }
    }
    Ok(out)
}

/// The check: one list of the first zone's servers.
pub async fn check(http: &Http, t: &Target) -> Result<(), String> {
    let zone = t.regions.first().map_or(ZONES[0], String::as_str);
    get(
        http,
        t,
        &format!(
            "/instance/v1/zones/{zone}/servers?project={}&per_page=1",
            project(t)
        ),
    )
    .await
    .map(|_| ())
}

/// Whether TCP `port` from anywhere reaches a server of this group.
fn reaches(group: &Value, rules: &[Value], port: u16) -> bool {
    let mut ordered: Vec<&Value> = rules
        .iter()
        .filter(|r| r["direction"] == "inbound")
        .collect();
    ordered.sort_by_key(|r| r["position"].as_u64().unwrap_or(u64::MAX));
    for r in ordered {
        let proto = r["protocol"].as_str().unwrap_or_default();
        let world = matches!(r["ip_range"].as_str(), Some("0.0.0.0/0" | "::/0"));
        let from = r["dest_port_from"].as_u64();
        let to = r["dest_port_to"].as_u64().or(from);
        let in_range = match (from, to) {
            (None, _) => true,
            (Some(a), Some(b)) => (a..=b).contains(&u64::from(port)),
            (Some(a), None) => a == u64::from(port),
        };
        if (proto == "TCP" || proto == "ANY") && world && in_range {
            return r["action"] == "accept";
        }
    }
    group["inbound_default_policy"].as_str().unwrap_or("accept") == "accept"
}

/// Lists every zone's servers.
pub async fn discover(http: &Http, t: &Target) -> Discovery {
    let mut d = Discovery::default();
    let zones: Vec<String> = if t.regions.is_empty() {
        ZONES.iter().map(|z| (*z).to_owned()).collect()
    } else {
        t.regions.clone()
    };
    for zone in zones {
        match zone_servers(http, t, &zone).await {
            Ok(found) => d.found.extend(found),
            Err(e) => d.errors.push((zone, e)),
        }
    }
    d
}

async fn zone_servers(http: &Http, t: &Target, zone: &str) -> Result<Vec<Found>, String> {
    let servers = all(http, t, zone, "servers").await?;
    if servers.is_empty() {
        return Ok(Vec::new());
    }
    // What each security group lets in from the world, of SSH and RDP.
    let mut open_by_group: HashMap<String, Vec<u16>> = HashMap::new();
    for g in all(http, t, zone, "security_groups").await? {
        let id = g["id"].as_str().unwrap_or_default().to_owned();
        let rules = get(
            http,
            t,
            &format!("/instance/v1/zones/{zone}/security_groups/{id}/rules?per_page=100"),
        )
        .await?["rules"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let open = super::WATCHED
            .into_iter()
            .filter(|p| reaches(&g, &rules, *p))
            .collect();
        open_by_group.insert(id, open);
    }
    let mut out = Vec::new();
    for s in servers {
        let mut public_ips: Vec<String> = s["public_ips"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["address"].as_str().map(str::to_owned))
            .collect();
        if let Some(ip) = s["public_ip"]["address"].as_str()
            && !public_ips.iter().any(|p| p == ip)
        {
            public_ips.push(ip.to_owned());
        }
        let private_ips = s["private_ip"]
            .as_str()
            .map(|p| vec![p.to_owned()])
            .unwrap_or_default();
        let group = s["security_group"]["id"].as_str().unwrap_or_default();
        let open = open_by_group.get(group).cloned();
        let tags: BTreeMap<String, String> = s["tags"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(|t| match t.split_once('=') {
                Some((k, v)) => (k.to_owned(), v.to_owned()),
                None => (t.to_owned(), String::new()),
            })
            .collect();
        out.push(Found {
            kind: "vm".into(),
            provider_id: s["id"].as_str().unwrap_or_default().to_owned(),
            name: s["name"].as_str().unwrap_or_default().to_owned(),
            region: zone.to_owned(),
            state: s["state"].as_str().unwrap_or("unknown").to_owned(),
            gone: false,
            public_ips,
            private_ips,
            tags,
            facts: Facts {
                firewall_known: open.is_some(),
                open_to_world: Some(open.unwrap_or_default()),
                unencrypted_disks: Vec::new(),
            },
        });
    }
    Ok(out)
}
