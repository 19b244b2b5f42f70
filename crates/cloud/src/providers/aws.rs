//! AWS EC2 through its Query API (version 2016-11-15), signed with SigV4: regions,
//! instances (every page), the security groups that say which ports are open to the world,
//! and the volumes that say which disks are not encrypted. `endpoint` replaces the regional
//! `https://ec2.<region>.amazonaws.com` (boto3's `endpoint_url`).

use super::sigv4::{self, Keys, Request};
use super::xml::{self, El};
use super::{Discovery, Facts, Found, Http, Target};
use std::collections::{BTreeMap, HashMap, HashSet};

const VERSION: &str = "2016-11-15";

/// Where a region's EC2 API is.
fn base(t: &Target, region: &str) -> String {
    match &t.endpoint {
        Some(e) => e.trim_end_matches('/').to_owned(),
        None => format!("https://ec2.{region}.amazonaws.com"),
    }
}

/// One Query API call: its answer's root element, or EC2's error code and message.
async fn call(
    http: &Http,
    t: &Target,
    region: &str,
    params: &[(&str, &str)],
) -> Result<El, String> {
    let url = format!("{}/", base(t, region));
    let parsed = reqwest::Url::parse(&url).map_err(|e| format!("endpoint: {e}"))?;
    let host = match (parsed.host_str(), parsed.port()) {
        (Some(h), Some(p)) => format!("{h}:{p}"),
        (Some(h), None) => h.to_owned(),
        _ => return Err("endpoint: no host".into()),
    };
    let mut all: Vec<(&str, &str)> = vec![("Version", VERSION)];
    all.extend_from_slice(params);
    let body = sigv4::canonical_query(&all);
    let keys = Keys {
        access_key_id: t.cred("access_key_id"),
        secret_access_key: t.cred("secret_access_key"),
        session_token: Some(t.cred("session_token")).filter(|s| !s.is_empty()),
    };
    let r = http
        .send(|c| {
            let content_type = "application/x-www-form-urlencoded; charset=utf-8";
            let signed = sigv4::sign(
                &keys,
                region,
                "ec2",
                &Request {
                    method: "POST",
                    host: &host,
                    path: "/",
                    query: &[],
                    headers: &[("content-type", content_type)],
                    body: body.as_bytes(),
                },
                time::OffsetDateTime::now_utc(),
            );
            let mut b = c
                .post(&url)
                .header("content-type", content_type)
                .body(body.clone());
            for (k, v) in signed {
                b = b.header(k, v);
            }
            b
        })
        .await?;
    let status = r.status().as_u16();
    let text = r.text().await.map_err(|e| e.to_string())?;
    let root =
        xml::parse(&text).map_err(|_| trusthub_platform::outbound::provider_error(status, ""))?;
    if status >= 400 || root.name == "Response" && root.child("Errors").is_some() {
        let err = root.at(&["Errors", "Error"]);
        let code = err.map_or("", |e| e.text_at(&["Code"]));
        let message = err.map_or("", |e| e.text_at(&["Message"]));
        let line = trusthub_platform::outbound::provider_error(status, "");
        return Err(trusthub_platform::outbound::cut(
            &format!("{line}: {code}: {message}"),
            line.len() + 2 + trusthub_platform::outbound::PROVIDER_MESSAGE_MAX,
        ));
    }
    Ok(root)
}

/// Every page of a Describe call: the answers' roots.
async fn pages(
    http: &Http,
    t: &Target,
    region: &str,
    action: &str,
    page_size: Option<&str>,
) -> Result<Vec<El>, String> {
    let mut out = Vec::new();
    let mut token = String::new();
    loop {
        let mut params = vec![("Action", action)];
        if let Some(n) = page_size {
            params.push(("MaxResults", n));
        }
        if !token.is_empty() {
            params.push(("NextToken", token.as_str()));
        }
        let root = call(http, t, region, &params).await?;
        let next = root.text_at(&["nextToken"]).to_owned();
        out.push(root);
        if next.is_empty() || next == token {
            return Ok(out);
        }
        token = next;
    }
}

/// The check: one `DescribeRegions` call.
pub async fn check(http: &Http, t: &Target) -> Result<(), String> {
    let region = t.regions.first().map_or("us-east-1", String::as_str);
    call(http, t, region, &[("Action", "DescribeRegions")])
        .await
        .map(|_| ())
}

/// The account's regions: the ones asked for, else every region enabled for it in the
/// commercial partition (China and GovCloud regions take credentials of their own
/// partitions; an account there names its regions).
async fn regions(http: &Http, t: &Target) -> Result<Vec<String>, String> {
    if !t.regions.is_empty() {
        return Ok(t.regions.clone());
    }
    let root = call(http, t, "us-east-1", &[("Action", "DescribeRegions")]).await?;
    Ok(root
        .items(&["regionInfo"])
        .iter()
        .map(|i| i.text_at(&["regionName"]).to_owned())
        .filter(|r| {
            !r.is_empty()
                && !r.starts_with("cn-")
                && !r.starts_with("us-gov-")
                && !r.starts_with("us-iso")
        })
        .collect())
}

/// Lists every region's instances.
pub async fn discover(http: &Http, t: &Target) -> Discovery {
    let mut d = Discovery::default();
    let regions = match regions(http, t).await {
        Ok(r) => r,
        Err(e) => {
            d.errors.push((String::new(), e));
            return d;
        }
    };
    let mut set = tokio::task::JoinSet::new();
    for region in regions {
        let (http, t) = (http.clone(), t.clone());
        set.spawn(async move {
            let r = region_instances(&http, &t, &region).await;
            (region, r)
        });
    }
    while let Some(done) = set.join_next().await {
        match done {
            Ok((_, Ok(found))) => d.found.extend(found),
            Ok((region, Err(e))) => d.errors.push((region, e)),
            Err(e) => d.errors.push((String::new(), e.to_string())),
        }
    }
    d.found.sort_by(|a, b| a.provider_id.cmp(&b.provider_id));
    d.errors.sort();
    d
}

/// Inbound TCP ports a security group opens to the world; `None` for all of them.
fn group_world_ports(g: &El) -> Option<Vec<u16>> {
    let mut ports = Vec::new();
    for p in g.items(&["ipPermissions"]) {
        let world = p
            .items(&["ipRanges"])
            .iter()
            .any(|r| r.text_at(&["cidrIp"]) == "0.0.0.0/0")
            || p.items(&["ipv6Ranges"])
                .iter()
                .any(|r| r.text_at(&["cidrIpv6"]) == "::/0");
        if !world {
            continue;
        }
        let proto = p.text_at(&["ipProtocol"]);
        if proto == "-1" {
            return None;
        }
        if proto != "tcp" && proto != "6" {
            continue;
        }
        let from: u16 = p.text_at(&["fromPort"]).parse().unwrap_or(0);
        let to: u16 = p.text_at(&["toPort"]).parse().unwrap_or(from);
        ports.extend(super::opened_range(from, to)?);
    }
    Some(ports)
}

async fn region_instances(http: &Http, t: &Target, region: &str) -> Result<Vec<Found>, String> {
    let mut groups: HashMap<String, Option<Vec<u16>>> = HashMap::new();
    for root in pages(http, t, region, "DescribeSecurityGroups", Some("1000")).await? {
        for g in root.items(&["securityGroupInfo"]) {
            groups.insert(g.text_at(&["groupId"]).to_owned(), group_world_ports(g));
        }
    }
    let mut unencrypted: HashSet<String> = HashSet::new();
    for root in pages(http, t, region, "DescribeVolumes", Some("1000")).await? {
        for v in root.items(&["volumeSet"]) {
            if v.text_at(&["encrypted"]) != "true" {
                unencrypted.insert(v.text_at(&["volumeId"]).to_owned());
            }
        }
    }
    let mut out = Vec::new();
    for root in pages(http, t, region, "DescribeInstances", Some("1000")).await? {
        for r in root.items(&["reservationSet"]) {
            for i in r.items(&["instancesSet"]) {
                out.push(instance(i, region, &groups, &unencrypted));
            }
        }
    }
    Ok(out)
}

fn instance(
    i: &El,
    region: &str,
    groups: &HashMap<String, Option<Vec<u16>>>,
    unencrypted: &HashSet<String>,
) -> Found {
    let id = i.text_at(&["instanceId"]).to_owned();
    let state = i.text_at(&["instanceState", "name"]).to_owned();
    let tags: BTreeMap<String, String> = i
        .items(&["tagSet"])
        .iter()
        .map(|t| {
            (
                t.text_at(&["key"]).to_owned(),
                t.text_at(&["value"]).to_owned(),
            )
        })
        .collect();
    let mut private_ips: Vec<String> = Vec::new();
    let mut public_ips: Vec<String> = Vec::new();
    let push = |v: &mut Vec<String>, ip: &str| {
        if !ip.is_empty() && !v.iter().any(|x| x == ip) {
            v.push(ip.to_owned());
        }
    };
    push(&mut private_ips, i.text_at(&["privateIpAddress"]));
    push(&mut public_ips, i.text_at(&["ipAddress"]));
    for n in i.items(&["networkInterfaceSet"]) {
        for a in n.items(&["privateIpAddressesSet"]) {
            push(&mut private_ips, a.text_at(&["privateIpAddress"]));
            push(&mut public_ips, a.text_at(&["association", "publicIp"]));
        }
        for a in n.items(&["ipv6AddressesSet"]) {
            push(&mut public_ips, a.text_at(&["ipv6Address"]));
        }
    }
    // The groups' union: one group open on all ports opens them all.
    let mut open: Option<Vec<u16>> = Some(Vec::new());
    let mut known = false;
    for g in i.items(&["groupSet"]) {
        let Some(ports) = groups.get(g.text_at(&["groupId"])) else {
            continue;
        };
        known = true;
        match (ports, &mut open) {
            (None, _) => open = None,
            (Some(p), Some(o)) => o.extend(p.iter().copied()),
            (Some(_), None) => {}
        }
    }
    let unencrypted_disks = i
        .items(&["blockDeviceMapping"])
        .iter()
        .map(|b| b.text_at(&["ebs", "volumeId"]))
        .filter(|v| unencrypted.contains(*v))
        .map(str::to_owned)
        .collect();
    Found {
        kind: "vm".into(),
        name: tags.get("Name").cloned().unwrap_or_else(|| id.clone()),
        provider_id: id,
        region: region.to_owned(),
        gone: state == "terminated" || state == "shutting-down",
        state,
        public_ips,
        private_ips,
        tags,
        facts: Facts {
            open_to_world: open,
            firewall_known: known,
            unencrypted_disks,
        },
    }
}
