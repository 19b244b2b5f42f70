//! OVHcloud Public Cloud (API 1.0, signed requests): a project's instances with their
//! addresses. Every call is signed as OVH documents it — `X-Ovh-Signature: $1$` and the
//! SHA-1 of `secret+consumer+METHOD+URL+BODY+timestamp`, the timestamp on OVH's clock
//! (`GET /auth/time`). Security groups are OpenStack's and not read (no exposure findings).
//! `endpoint` replaces `https://eu.api.ovh.com/1.0` (`https://ca.api.ovh.com/1.0`,
//! `https://api.us.ovhcloud.com/1.0` for the other regions).

use super::{Discovery, Facts, Found, Http, Target};
use serde_json::Value;
use sha1::{Digest, Sha1};

fn base(t: &Target) -> String {
    t.endpoint
        .as_deref()
        .unwrap_or("https://eu.api.ovh.com/1.0")
        .trim_end_matches('/')
        .to_owned()
}

/// The signature of one call.
pub fn signature(
    secret: &str,
    consumer: &str,
    method: &str,
    url: &str,
    body: &str,
    ts: i64,
) -> String {
    let plain = format!("{secret}+{consumer}+{method}+{url}+{body}+{ts}");
    format!(
        "$1${}",
        trusthub_core::secret::hex(&Sha1::digest(plain.as_bytes()))
    )
}

/// OVH's clock less ours.
async fn delta(http: &Http, t: &Target) -> Result<i64, String> {
    let url = format!("{}/auth/time", base(t));
    let v = http.json(|c| c.get(&url)).await?;
    let theirs = v.as_i64().ok_or("GET /auth/time: not a timestamp")?;
    Ok(theirs - time::OffsetDateTime::now_utc().unix_timestamp())
}

async fn get(http: &Http, t: &Target, delta: i64, path: &str) -> Result<Value, String> {
    let url = format!("{}{path}", base(t));
    http.json(|c| {
        let ts = time::OffsetDateTime::now_utc().unix_timestamp() + delta;
        let sig = signature(
            t.cred("application_secret"),
            t.cred("consumer_key"),
            "GET",
            &url,
            "",
            ts,
        );
        c.get(&url)
            .header("X-Ovh-Application", t.cred("application_key"))
            .header("X-Ovh-Consumer", t.cred("consumer_key"))
            .header("X-Ovh-Timestamp", ts.to_string())
            .header("X-Ovh-Signature", sig)
    })
    .await
}

fn project(t: &Target) -> String {
    t.cred("project_id")
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect()
}

/// The check: one `GET /cloud/project/<project_id>`.
pub async fn check(http: &Http, t: &Target) -> Result<(), String> {
    let d = delta(http, t).await?;
    get(http, t, d, &format!("/cloud/project/{}", project(t)))
        .await
        .map(|_| ())
}

/// Lists the project's instances.
pub async fn discover(http: &Http, t: &Target) -> Discovery {
    let mut d = Discovery::default();
    let listed = async {
        let delta = delta(http, t).await?;
        get(
            http,
            t,
            delta,
            &format!("/cloud/project/{}/instance", project(t)),
        )
        .await
    }
    .await;
    let instances = match listed {
        Ok(Value::Array(i)) => i,
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
    for i in instances {
        let region = i["region"].as_str().unwrap_or_default().to_owned();
        if !t.regions.is_empty() && !t.regions.contains(&region) {
            continue;
        }
        let addrs = |kind: &str| -> Vec<String> {
            i["ipAddresses"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|a| a["type"] == kind)
                .filter_map(|a| a["ip"].as_str().map(str::to_owned))
                .collect()
        };
        let state = i["status"].as_str().unwrap_or("UNKNOWN").to_owned();
        d.found.push(Found {
            kind: "vm".into(),
            provider_id: i["id"].as_str().unwrap_or_default().to_owned(),
            name: i["name"].as_str().unwrap_or_default().to_owned(),
            region,
            gone: state == "DELETED" || state == "DELETING",
            state,
            public_ips: addrs("public"),
            private_ips: addrs("private"),
            tags: Default::default(),
            facts: Facts::default(),
        });
    }
    d
}
