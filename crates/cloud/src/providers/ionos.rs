//! IONOS Cloud (Cloud API v6, bearer token): every data center's servers with their NICs and
//! firewall rules (`depth=3`) and the data center's LANs (a NIC on a public LAN has public
//! addresses). A public NIC whose firewall is off lets every port in; with it on, only what
//! its ingress rules allow (a rule without `sourceIp` allows any source). Collections are
//! read with `offset` / `limit` while `_links.next` is set. `endpoint` replaces
//! `https://api.ionos.com/cloudapi/v6`.

use super::{Discovery, Facts, Found, Http, Target};
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};

fn base(t: &Target) -> String {
    t.endpoint
        .as_deref()
        .unwrap_or("https://api.ionos.com/cloudapi/v6")
        .trim_end_matches('/')
        .to_owned()
}

async fn get(http: &Http, t: &Target, path: &str) -> Result<Value, String> {
    let url = format!("{}{path}", base(t));
    let token = t.cred("token").to_owned();
    http.json(|c| c.get(&url).bearer_auth(&token)).await
}

/// Every item of a collection.
async fn all(http: &Http, t: &Target, path: &str, depth: u8) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    let mut offset = 0usize;
    loop {
        let v = get(
            http,
            t,
            &format!("{path}?depth={depth}&offset={offset}&limit=100"),
        )
        .await?;
        let items = v["items"].as_array().cloned().unwrap_or_default();
        let n = items.len();
        out.extend(items);
        if n == 0 || v["_links"]["next"].as_str().is_none() {
            return Ok(out);
        }
        offset += n;
    }
}

/// The check: one `GET /datacenters`.
pub async fn check(http: &Http, t: &Target) -> Result<(), String> {
    get(http, t, "/datacenters?depth=0&limit=1")
        .await
        .map(|_| ())
}

/// Inbound TCP ports of `[22, 3389]` a NIC lets in from anywhere.
fn nic_open(nic: &Value) -> Vec<u16> {
    if nic["properties"]["firewallActive"] != true {
        return super::WATCHED.to_vec();
    }
    let mut open = Vec::new();
    for r in nic["entities"]["firewallrules"]["items"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let p = &r["properties"];
        let ingress = p["type"].as_str().is_none_or(|t| t == "INGRESS");
        let any_source = p["sourceIp"].is_null() || p["sourceIp"] == "0.0.0.0";
        let tcp = matches!(p["protocol"].as_str(), Some("TCP" | "ANY"));
        if !(ingress && any_source && tcp) {
            continue;
        }
        let port = |k: &str, d: u16| p[k].as_u64().map_or(d, |n| n.min(65535) as u16);
        let range = super::opened_range(port("portRangeStart", 1), port("portRangeEnd", 65535));
        open.extend(range.unwrap_or_else(|| super::WATCHED.to_vec()));
    }
    open
}

/// Lists every data center's servers.
pub async fn discover(http: &Http, t: &Target) -> Discovery {
    let mut d = Discovery::default();
    let dcs = match all(http, t, "/datacenters", 1).await {
        Ok(v) => v,
        Err(e) => {
            d.errors.push((String::new(), e));
            return d;
        }
    };
    for dc in dcs {
        let id = dc["id"].as_str().unwrap_or_default().to_owned();
        let location = dc["properties"]["location"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if !t.regions.is_empty() && !t.regions.contains(&location) {
            continue;
        }
        let listed = async {
            let lans = all(http, t, &format!("/datacenters/{id}/lans"), 1).await?;
            let servers = all(http, t, &format!("/datacenters/{id}/servers"), 3).await?;
            Ok::<_, String>((lans, servers))
        }
        .await;
        let (lans, servers) = match listed {
            Ok(l) => l,
            Err(e) => {
                d.errors.push((location, e));
                continue;
            }
        };
        let public_lans: HashSet<String> = lans
            .iter()
            .filter(|l| l["properties"]["public"] == true)
            .filter_map(|l| l["id"].as_str().map(str::to_owned))
            .collect();
        for s in servers {
            let (mut public_ips, mut private_ips, mut open) = (Vec::new(), Vec::new(), Vec::new());
            for nic in s["entities"]["nics"]["items"]
                .as_array()
                .into_iter()
                .flatten()
            {
                let lan = match &nic["properties"]["lan"] {
                    Value::Number(n) => n.to_string(),
                    Value::String(s) => s.clone(),
                    _ => String::new(),
                };
                let public = public_lans.contains(&lan);
                let ips = nic["properties"]["ips"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|i| i.as_str().map(str::to_owned));
                if public {
                    public_ips.extend(ips);
                    open.extend(nic_open(nic));
                } else {
                    private_ips.extend(ips);
                }
            }
            let state = s["properties"]["vmState"]
                .as_str()
                .unwrap_or("NOSTATE")
                .to_owned();
            d.found.push(Found {
                kind: "vm".into(),
                provider_id: s["id"].as_str().unwrap_or_default().to_owned(),
                name: s["properties"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                region: location.clone(),
                gone: false,
                state,
                public_ips,
                private_ips,
                tags: BTreeMap::new(),
                facts: Facts {
                    open_to_world: Some(open),
                    firewall_known: true,
                    unencrypted_disks: Vec::new(),
                },
            });
        }
    }
    d
}
