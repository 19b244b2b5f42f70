//! Google Compute Engine (API v1) with a service account: a JWT signed with the account's
//! RSA key (RS256) is exchanged for an access token at the key's `token_uri` (the OAuth 2.0
//! JWT bearer grant), then every zone's instances (`aggregated/instances`, every page by
//! `nextPageToken`) and the project's firewall rules, which say what reaches an instance
//! (ingress rules from `0.0.0.0/0` or `::/0`, for all instances or their network tags; with
//! none, GCE's implied rule denies). Disks are encrypted by Google. `endpoint` replaces
//! `https://compute.googleapis.com`.

use super::{Discovery, Facts, Found, Http, Target};
use serde_json::{Value, json};

/// The scope asked for.
const SCOPE: &str = "https://www.googleapis.com/auth/compute.readonly";

/// The assertion's audience: always Google's token endpoint, whatever `token_uri` the
/// request goes to (as Google documents it and google-auth makes it).
const AUDIENCE: &str = "https://oauth2.googleapis.com/token";

/// The service account key's fields used here.
struct Key {
    client_email: String,
    private_key_id: String,
    private_key: ring::signature::RsaKeyPair,
    token_uri: String,
    project_id: String,
}

fn b64url(bytes: &[u8]) -> String {
    data_encoding::BASE64URL_NOPAD.encode(bytes)
}

fn key(t: &Target) -> Result<Key, String> {
    let v: Value = serde_json::from_str(t.cred("service_account_json"))
        .map_err(|e| format!("service_account_json is not JSON: {e}"))?;
    let field = |k: &str| -> Result<String, String> {
        v[k].as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("service_account_json has no `{k}`"))
    };
    let pem = field("private_key")?;
    let body: String = pem
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect::<Vec<_>>()
        .concat();
    let der = data_encoding::BASE64
        .decode(body.trim().as_bytes())
        .map_err(|e| format!("private_key: {e}"))?;
    let private_key = ring::signature::RsaKeyPair::from_pkcs8(&der)
        .map_err(|e| format!("private_key is not a PKCS#8 RSA key: {e}"))?;
    Ok(Key {
        client_email: field("client_email")?,
        private_key_id: field("private_key_id").unwrap_or_default(),
        private_key,
        token_uri: field("token_uri")
            .unwrap_or_else(|_| "https://oauth2.googleapis.com/token".into()),
        project_id: field("project_id")?,
    })
}

/// The signed assertion (RS256) for the token endpoint.
fn assertion(k: &Key, now: i64) -> Result<String, String> {
    let header = json!({"alg": "RS256", "typ": "JWT", "kid": k.private_key_id});
    let claims = json!({"iss": k.client_email, "scope": SCOPE, "aud": AUDIENCE, "iat": now, "exp": now + 3600});
    let input = format!(
        "{}.{}",
        b64url(header.to_string().as_bytes()),
        b64url(claims.to_string().as_bytes())
    );
    let rng = ring::rand::SystemRandom::new();
    let mut sig = vec![0u8; k.private_key.public().modulus_len()];
    k.private_key
        .sign(
            &ring::signature::RSA_PKCS1_SHA256,
            &rng,
            input.as_bytes(),
            &mut sig,
        )
        .map_err(|_| "cannot sign the assertion".to_owned())?;
    Ok(format!("{input}.{}", b64url(&sig)))
}

/// An access token for the account.
async fn token(http: &Http, k: &Key) -> Result<String, String> {
    let jwt = assertion(k, time::OffsetDateTime::now_utc().unix_timestamp())?;
    let form = serde_urlencoded::to_string([
        ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
        ("assertion", jwt.as_str()),
    ])
    .map_err(|e| e.to_string())?;
    let v = http
        .json(|c| {
            c.post(&k.token_uri)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(form.clone())
        })
        .await?;
    v["access_token"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| "the token endpoint answered no access_token".into())
}

fn base(t: &Target, project: &str) -> String {
    format!(
        "{}/compute/v1/projects/{project}",
        t.endpoint
            .as_deref()
            .unwrap_or("https://compute.googleapis.com")
            .trim_end_matches('/')
    )
}

async fn get(http: &Http, url: &str, token: &str) -> Result<Value, String> {
    http.json(|c| c.get(url).bearer_auth(token)).await
}

/// The check: a token, then `GET projects/<project>`.
pub async fn check(http: &Http, t: &Target) -> Result<(), String> {
    let k = key(t)?;
    let tok = token(http, &k).await?;
    get(http, &base(t, &k.project_id), &tok).await.map(|_| ())
}

/// Every page of a list: `each` gets each page's answer.
async fn pages(
    http: &Http,
    url: &str,
    tok: &str,
    mut each: impl FnMut(&Value),
) -> Result<(), String> {
    let mut page_token = String::new();
    loop {
        let sep = if url.contains('?') { '&' } else { '?' };
        let mut u = format!("{url}{sep}maxResults=500");
        if !page_token.is_empty() {
            u.push_str(&format!("&pageToken={page_token}"));
        }
        let v = get(http, &u, tok).await?;
        each(&v);
        match v["nextPageToken"].as_str() {
            Some(n) if !n.is_empty() && n != page_token => page_token = n.to_owned(),
            _ => return Ok(()),
        }
    }
}

/// An ingress rule open to the world: the network tags it targets (empty: every instance)
/// and the ports it opens (`None`: all).
struct Rule {
    tags: Vec<String>,
    ports: Option<Vec<u16>>,
}

fn world_rule(f: &Value) -> Option<Rule> {
    let world = f["sourceRanges"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|s| s == "0.0.0.0/0" || s == "::/0");
    if f["direction"] != "INGRESS" || f["disabled"] == true || !world {
        return None;
    }
    let mut ports = Some(Vec::new());
    let mut any = false;
    for a in f["allowed"].as_array().into_iter().flatten() {
        let proto = a["IPProtocol"].as_str().unwrap_or_default();
        if proto != "tcp" && proto != "all" {
            continue;
        }
        any = true;
        let Some(list) = a["ports"].as_array() else {
            ports = None;
            break;
        };
        for p in list.iter().filter_map(Value::as_str) {
            match (super::opened(p), ports.as_mut()) {
                (None, _) => ports = None,
                (Some(o), Some(v)) => v.extend(o),
                (Some(_), None) => {}
            }
        }
    }
    any.then(|| Rule {
        tags: f["targetTags"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t.as_str().map(str::to_owned))
            .collect(),
        ports,
    })
}

/// Lists the project's instances.
pub async fn discover(http: &Http, t: &Target) -> Discovery {
    let mut d = Discovery::default();
    let prepared = async {
        let k = key(t)?;
        let tok = token(http, &k).await?;
        Ok::<_, String>((k, tok))
    }
    .await;
    let (k, tok) = match prepared {
        Ok(p) => p,
        Err(e) => {
            d.errors.push((String::new(), e));
            return d;
        }
    };
    let base = base(t, &k.project_id);
    let mut rules = Vec::new();
    let fw = pages(http, &format!("{base}/global/firewalls"), &tok, |v| {
        rules.extend(
            v["items"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(world_rule),
        );
    })
    .await;
    let firewall_known = match fw {
        Ok(()) => true,
        Err(e) => {
            d.errors.push(("firewalls".into(), e));
            false
        }
    };
    let mut found = Vec::new();
    let url = format!("{base}/aggregated/instances?returnPartialSuccess=true");
    let listed = pages(http, &url, &tok, |v| {
        for (_, scope) in v["items"].as_object().into_iter().flatten() {
            for i in scope["instances"].as_array().into_iter().flatten() {
                if let Some(f) = instance(i, t, &rules, firewall_known) {
                    found.push(f);
                }
            }
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

fn instance(i: &Value, t: &Target, rules: &[Rule], firewall_known: bool) -> Option<Found> {
    let zone = i["zone"]
        .as_str()
        .unwrap_or_default()
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .to_owned();
    // A region (`europe-west1`) selects its zones; a zone selects itself.
    if !t.regions.is_empty()
        && !t
            .regions
            .iter()
            .any(|r| zone == *r || zone.starts_with(&format!("{r}-")))
    {
        return None;
    }
    let (mut public_ips, mut private_ips) = (Vec::new(), Vec::new());
    for n in i["networkInterfaces"].as_array().into_iter().flatten() {
        if let Some(ip) = n["networkIP"].as_str() {
            private_ips.push(ip.to_owned());
        }
        for a in n["accessConfigs"].as_array().into_iter().flatten() {
            if let Some(ip) = a["natIP"].as_str() {
                public_ips.push(ip.to_owned());
            }
        }
        for a in n["ipv6AccessConfigs"].as_array().into_iter().flatten() {
            if let Some(ip) = a["externalIpv6"].as_str() {
                public_ips.push(ip.to_owned());
            }
        }
    }
    let net_tags: Vec<&str> = i["tags"]["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut open: Option<Vec<u16>> = Some(Vec::new());
    for r in rules {
        if !r.tags.is_empty() && !r.tags.iter().any(|t| net_tags.contains(&t.as_str())) {
            continue;
        }
        match (&r.ports, &mut open) {
            (None, _) => open = None,
            (Some(p), Some(o)) => o.extend(p.iter().copied()),
            (Some(_), None) => {}
        }
    }
    let labels = super::string_map(&i["labels"]);
    Some(Found {
        kind: "vm".into(),
        provider_id: i["id"]
            .as_str()
            .map(str::to_owned)
            .or_else(|| i["id"].as_u64().map(|n| n.to_string()))
            .unwrap_or_default(),
        name: i["name"].as_str().unwrap_or_default().to_owned(),
        region: zone,
        state: i["status"].as_str().unwrap_or("UNKNOWN").to_owned(),
        gone: false,
        public_ips,
        private_ips,
        tags: labels,
        facts: Facts {
            open_to_world: open,
            firewall_known,
            unencrypted_disks: Vec::new(),
        },
    })
}
