//! Azure Resource Manager with a service principal: a client-credentials token from
//! Microsoft Entra ID (`<authority_host>/<tenant_id>/oauth2/v2.0/token`), then the
//! subscription's virtual machines (with their power state), network interfaces, public IP
//! addresses and network security groups — every list followed by its `nextLink`, never to
//! another host than the ARM endpoint. A VM's address is its NICs'; what reaches it is what
//! its NICs' security groups allow from `*`, `Internet` or `0.0.0.0/0` (a NIC without one is
//! not judged). Managed disks are encrypted by Azure. A VM's id is its `vmId`, the UUID its
//! firmware reports (the agent's instance id). `endpoint` replaces
//! `https://management.azure.com`; the credential `authority_host` replaces
//! `https://login.microsoftonline.com`.

use super::{Discovery, Facts, Found, Http, Target};
use serde_json::Value;
use std::collections::HashMap;

const COMPUTE: &str = "2024-07-01";
const NETWORK: &str = "2024-05-01";
const SUBSCRIPTIONS: &str = "2022-12-01";

fn arm(t: &Target) -> String {
    t.endpoint
        .as_deref()
        .unwrap_or("https://management.azure.com")
        .trim_end_matches('/')
        .to_owned()
}

/// A token for ARM.
async fn token(http: &Http, t: &Target) -> Result<String, String> {
    let authority = Some(t.cred("authority_host"))
        .filter(|a| !a.is_empty())
        .unwrap_or("https://login.microsoftonline.com")
        .trim_end_matches('/')
        .to_owned();
    let tenant: String = t
        .cred("tenant_id")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '.')
        .collect();
    let url = format!("{authority}/{tenant}/oauth2/v2.0/token");
    let scope = match &t.endpoint {
        Some(_) => format!("{}/.default", arm(t)),
        None => "https://management.azure.com/.default".into(),
    };
    let form = serde_urlencoded::to_string([
        ("grant_type", "client_credentials"),
        ("client_id", t.cred("client_id")),
        ("client_secret", t.cred("client_secret")),
        ("scope", scope.as_str()),
    ])
    .map_err(|e| e.to_string())?;
    let v = http
        .json(|c| {
            c.post(&url)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(form.clone())
        })
        .await?;
    v["access_token"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| "Entra ID answered no access_token".into())
}

fn subscription(t: &Target) -> String {
    t.cred("subscription_id")
        .chars()
        .filter(|c| c.is_ascii_hexdigit() || *c == '-')
        .collect()
}

/// Every item of a list, following `nextLink` on the ARM endpoint only.
async fn all(http: &Http, t: &Target, tok: &str, first: String) -> Result<Vec<Value>, String> {
    let base = arm(t);
    let mut out = Vec::new();
    let mut url = first;
    for _ in 0..10_000 {
        let v = http.json(|c| c.get(&url).bearer_auth(tok)).await?;
        out.extend(v["value"].as_array().cloned().unwrap_or_default());
        match v["nextLink"].as_str() {
            Some(next) if next.starts_with(&format!("{base}/")) => url = next.to_owned(),
            Some(next) if !next.is_empty() => {
                return Err(format!("a nextLink off the ARM endpoint: {next}"));
            }
            _ => break,
        }
    }
    Ok(out)
}

/// The check: a token, then `GET /subscriptions/<id>`.
pub async fn check(http: &Http, t: &Target) -> Result<(), String> {
    let tok = token(http, t).await?;
    let url = format!(
        "{}/subscriptions/{}?api-version={SUBSCRIPTIONS}",
        arm(t),
        subscription(t)
    );
    http.json(|c| c.get(&url).bearer_auth(&tok))
        .await
        .map(|_| ())
}

/// Whether an address prefix of a rule is the whole internet.
fn world(prefix: &str) -> bool {
    matches!(prefix, "*" | "Internet" | "0.0.0.0/0" | "::/0" | "Any")
}

/// Inbound TCP ports a security group allows from the world; `None` for all of them.
fn nsg_world_ports(nsg: &Value) -> Option<Vec<u16>> {
    let mut ports = Vec::new();
    for r in nsg["properties"]["securityRules"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let p = &r["properties"];
        let from_world = p["sourceAddressPrefix"].as_str().is_some_and(world)
            || p["sourceAddressPrefixes"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|s| s.as_str().is_some_and(world));
        let tcp = matches!(p["protocol"].as_str(), Some("Tcp" | "*"));
        if p["direction"] != "Inbound" || p["access"] != "Allow" || !from_world || !tcp {
            continue;
        }
        let mut ranges: Vec<&str> = p["destinationPortRanges"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if let Some(r) = p["destinationPortRange"].as_str() {
            ranges.push(r);
        }
        for r in ranges {
            if r == "*" {
                return None;
            }
            ports.extend(super::opened(r)?);
        }
    }
    Some(ports)
}

/// Lists the subscription's virtual machines.
pub async fn discover(http: &Http, t: &Target) -> Discovery {
    let mut d = Discovery::default();
    let listed = async {
        let tok = token(http, t).await?;
        let sub = format!("{}/subscriptions/{}/providers", arm(t), subscription(t));
        let vms = all(
            http,
            t,
            &tok,
            format!(
                "{sub}/Microsoft.Compute/virtualMachines?api-version={COMPUTE}&statusOnly=true"
            ),
        )
        .await?;
        let nics = all(
            http,
            t,
            &tok,
            format!("{sub}/Microsoft.Network/networkInterfaces?api-version={NETWORK}"),
        )
        .await?;
        let ips = all(
            http,
            t,
            &tok,
            format!("{sub}/Microsoft.Network/publicIPAddresses?api-version={NETWORK}"),
        )
        .await?;
        let nsgs = all(
            http,
            t,
            &tok,
            format!("{sub}/Microsoft.Network/networkSecurityGroups?api-version={NETWORK}"),
        )
        .await?;
        Ok::<_, String>((vms, nics, ips, nsgs))
    }
    .await;
    let (vms, nics, ips, nsgs) = match listed {
        Ok(l) => l,
        Err(e) => {
            d.errors.push((String::new(), e));
            return d;
        }
    };
    let id_of = |v: &Value| v["id"].as_str().unwrap_or_default().to_lowercase();
    let public: HashMap<String, String> = ips
        .iter()
        .filter_map(|p| Some((id_of(p), p["properties"]["ipAddress"].as_str()?.to_owned())))
        .collect();
    let groups: HashMap<String, Option<Vec<u16>>> = nsgs
        .iter()
        .map(|n| (id_of(n), nsg_world_ports(n)))
        .collect();
    let nics: HashMap<String, &Value> = nics.iter().map(|n| (id_of(n), n)).collect();
    for vm in &vms {
        let location = vm["location"].as_str().unwrap_or_default().to_owned();
        if !t.regions.is_empty() && !t.regions.contains(&location) {
            continue;
        }
        let (mut public_ips, mut private_ips) = (Vec::new(), Vec::new());
        let mut open: Option<Vec<u16>> = Some(Vec::new());
        let mut judged = false;
        for r in vm["properties"]["networkProfile"]["networkInterfaces"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let Some(nic) = nics.get(&id_of(r)) else {
                continue;
            };
            for c in nic["properties"]["ipConfigurations"]
                .as_array()
                .into_iter()
                .flatten()
            {
                if let Some(ip) = c["properties"]["privateIPAddress"].as_str() {
                    private_ips.push(ip.to_owned());
                }
                if let Some(ip) = public.get(&id_of(&c["properties"]["publicIPAddress"])) {
                    public_ips.push(ip.clone());
                }
            }
            if let Some(ports) = groups.get(&id_of(&nic["properties"]["networkSecurityGroup"])) {
                judged = true;
                match (ports, &mut open) {
                    (None, _) => open = None,
                    (Some(p), Some(o)) => o.extend(p.iter().copied()),
                    (Some(_), None) => {}
                }
            }
        }
        let state = vm["properties"]["instanceView"]["statuses"]
            .as_array()
            .into_iter()
            .flatten()
            .find_map(|s| s["code"].as_str()?.strip_prefix("PowerState/"))
            .unwrap_or_else(|| {
                vm["properties"]["provisioningState"]
                    .as_str()
                    .unwrap_or("unknown")
            })
            .to_owned();
        let tags = super::string_map(&vm["tags"]);
        d.found.push(Found {
            kind: "vm".into(),
            provider_id: vm["properties"]["vmId"]
                .as_str()
                .map(str::to_lowercase)
                .unwrap_or_else(|| id_of(vm)),
            name: vm["name"].as_str().unwrap_or_default().to_owned(),
            region: location,
            gone: state == "deleting",
            state,
            public_ips,
            private_ips,
            tags,
            facts: Facts {
                open_to_world: open,
                firewall_known: judged,
                unencrypted_disks: Vec::new(),
            },
        });
    }
    d
}
