//! The providers (CONTRACT 23): each checks its credentials with one read call and lists
//! what an account holds — machines with their addresses, tags, state, what their firewall
//! leaves open to the world and whether their disks are encrypted — speaking the provider's
//! own API. Every call goes through [`Http`]: the hub's outbound policy, the account's CA,
//! and 429 / `Retry-After` handled the same way everywhere.

pub mod aws;
pub mod azure;
pub mod digitalocean;
pub mod gcp;
pub mod hetzner;
pub mod ionos;
pub mod ovh;
pub mod proxmox;
pub mod scaleway;
mod sigv4;
mod xml;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

/// The providers, by their API name.
pub const PROVIDERS: [&str; 9] = [
    "aws",
    "azure",
    "gcp",
    "hetzner",
    "proxmox",
    "digitalocean",
    "scaleway",
    "ovh",
    "ionos",
];

/// The credential fields each provider takes: `(name, required)`.
pub fn credential_fields(provider: &str) -> &'static [(&'static str, bool)] {
    match provider {
        "aws" => &[
            ("access_key_id", true),
            ("secret_access_key", true),
            ("session_token", false),
        ],
        "azure" => &[
            ("tenant_id", true),
            ("client_id", true),
            ("client_secret", true),
            ("subscription_id", true),
            ("authority_host", false),
        ],
        "gcp" => &[("service_account_json", true)],
        "hetzner" | "digitalocean" | "ionos" => &[("token", true)],
        "scaleway" => &[
            ("access_key", true),
            ("secret_key", true),
            ("project_id", true),
        ],
        "proxmox" => &[("token_id", true), ("token_secret", true)],
        "ovh" => &[
            ("application_key", true),
            ("application_secret", true),
            ("consumer_key", true),
            ("project_id", true),
        ],
        _ => &[],
    }
}

/// An account as a provider needs it.
#[derive(Debug, Clone)]
pub struct Target {
    /// The provider.
    pub provider: String,
    /// Its credential fields (opened from the sealed column).
    pub credentials: BTreeMap<String, String>,
    /// Regions to read (empty: every region the account has).
    pub regions: Vec<String>,
    /// The API base URL, when not the provider's own.
    pub endpoint: Option<String>,
}

impl Target {
    /// A credential field ("" when absent).
    pub fn cred(&self, name: &str) -> &str {
        self.credentials.get(name).map_or("", String::as_str)
    }
}

/// The ports the exposure findings judge: SSH and RDP.
pub const WATCHED: [u16; 2] = [22, 3389];

/// What a rule letting TCP `from..=to` in from the world opens: `None` for every port,
/// else the watched ports in the range.
pub fn opened_range(from: u16, to: u16) -> Option<Vec<u16>> {
    if from <= 1 && to == 65535 {
        return None;
    }
    Some(
        WATCHED
            .into_iter()
            .filter(|p| (from..=to).contains(p))
            .collect(),
    )
}

/// The same for a port as firewalls write it: `22` or `1000-2000`.
pub fn opened(spec: &str) -> Option<Vec<u16>> {
    let (from, to) = match spec.split_once('-') {
        Some((a, b)) => (a.trim().parse().unwrap_or(0), b.trim().parse().unwrap_or(0)),
        None => {
            let p = spec.trim().parse().unwrap_or(0);
            (p, p)
        }
    };
    opened_range(from, to)
}

/// A JSON object of strings (labels, tags) as a map; other values as empty strings.
pub fn string_map(v: &Value) -> BTreeMap<String, String> {
    v.as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect()
        })
        .unwrap_or_default()
}

/// A resource as a provider lists it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Found {
    /// `vm`, `container`, `database`, `load_balancer` or `bucket`.
    pub kind: String,
    /// The provider's id.
    pub provider_id: String,
    /// Its name (AWS: the `Name` tag, else the id).
    pub name: String,
    /// Region or zone.
    pub region: String,
    /// The provider's state (`running`, `stopped`, …).
    pub state: String,
    /// Public addresses.
    pub public_ips: Vec<String>,
    /// Private addresses.
    pub private_ips: Vec<String>,
    /// Tags or labels.
    pub tags: BTreeMap<String, String>,
    /// Terminated or being deleted: counts as removed.
    pub gone: bool,
    /// What the findings are made of.
    pub facts: Facts,
}

/// What a provider tells about a resource's exposure.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Facts {
    /// Ports open to `0.0.0.0/0` or `::/0` (inbound TCP), as the firewall says; `None` for
    /// every port (no firewall at all).
    pub open_to_world: Option<Vec<u16>>,
    /// Whether the firewall was read (false: unknown exposure).
    pub firewall_known: bool,
    /// Attached disks that are not encrypted (ids), where the provider tells.
    pub unencrypted_disks: Vec<String>,
}

impl Facts {
    /// Whether inbound TCP `port` is open to the world.
    pub fn open(&self, port: u16) -> bool {
        self.firewall_known
            && match &self.open_to_world {
                None => true,
                Some(ports) => ports.contains(&port),
            }
    }
}

/// One discovery: what was seen, and the regions that failed.
#[derive(Debug, Default)]
pub struct Discovery {
    /// Resources seen.
    pub found: Vec<Found>,
    /// `(region, message)` of what could not be read.
    pub errors: Vec<(String, String)>,
}

/// The HTTP client of provider calls.
#[derive(Debug, Clone)]
pub struct Http {
    client: reqwest::Client,
    policy: trusthub_platform::outbound::Policy,
}

/// Attempts of one call when the provider asks to slow down.
const ATTEMPTS: u32 = 5;

impl Http {
    /// A client under the hub's outbound policy, trusting `ca_pem` besides the system roots.
    pub fn new(
        policy: trusthub_platform::outbound::Policy,
        ca_pem: Option<&str>,
    ) -> Result<Http, String> {
        let mut b = policy
            .client()
            .timeout(Duration::from_secs(30))
            .connect_timeout(Duration::from_secs(10));
        if let Some(pem) = ca_pem {
            let cert = reqwest::Certificate::from_pem(pem.as_bytes())
                .map_err(|e| format!("ca_pem: {e}"))?;
            b = b.add_root_certificate(cert);
        }
        Ok(Http {
            client: b.build().map_err(|e| e.to_string())?,
            policy,
        })
    }

    /// Sends the request `make` builds, again after the wait a 429 or 503 asks for
    /// (`Retry-After` seconds, else 1, 2, 4 … s; at most 30 s a wait, 5 attempts).
    pub async fn send(
        &self,
        make: impl Fn(&reqwest::Client) -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, String> {
        let mut attempt = 0;
        loop {
            let req = make(&self.client).build().map_err(|e| e.to_string())?;
            self.policy.check_target(req.url().as_str())?;
            let shown = trusthub_platform::outbound::redact(req.url().as_str());
            let r = self
                .client
                .execute(req)
                .await
                // The URL is shown masked; the error's own copy of it is dropped.
                .map_err(|e| format!("{UNREACHABLE}{shown}: {}", transport(&e.without_url())))?;
            let status = r.status().as_u16();
            attempt += 1;
            if (status == 429 || status == 503) && attempt < ATTEMPTS {
                let wait = r
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .unwrap_or(1 << (attempt - 1))
                    .min(30);
                tokio::time::sleep(Duration::from_secs(wait)).await;
                continue;
            }
            return Ok(r);
        }
    }

    /// A JSON answer, or the provider's message for an error status.
    pub async fn json(
        &self,
        make: impl Fn(&reqwest::Client) -> reqwest::RequestBuilder,
    ) -> Result<Value, String> {
        let r = self.send(make).await?;
        let status = r.status();
        let body = r.text().await.map_err(|e| e.to_string())?;
        if !status.is_success() {
            return Err(error_message(status.as_u16(), &body));
        }
        serde_json::from_str(&body).map_err(|e| format!("the answer is not JSON: {e}"))
    }
}

/// The error shown for a provider's error answer: the status line and its JSON message
/// (CONTRACT 30), never the raw body.
pub fn error_message(status: u16, body: &str) -> String {
    trusthub_platform::outbound::provider_error(status, body)
}

/// How a transport failure's message begins: the provider was not reached at all (a name
/// that does not resolve, a refused connection, a certificate not trusted), so nothing was
/// said about the credentials.
pub const UNREACHABLE: &str = "cannot reach ";

/// A transport error with its causes (a refused connection says so).
fn transport(e: &reqwest::Error) -> String {
    let mut out = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        out.push_str(": ");
        out.push_str(&s.to_string());
        src = s.source();
    }
    out
}

/// Checks the credentials with one read call; the provider's message when refused.
pub async fn check(http: &Http, t: &Target) -> Result<(), String> {
    match t.provider.as_str() {
        "aws" => aws::check(http, t).await,
        "hetzner" => hetzner::check(http, t).await,
        "digitalocean" => digitalocean::check(http, t).await,
        "proxmox" => proxmox::check(http, t).await,
        "ovh" => ovh::check(http, t).await,
        "gcp" => gcp::check(http, t).await,
        "azure" => azure::check(http, t).await,
        "scaleway" => scaleway::check(http, t).await,
        "ionos" => ionos::check(http, t).await,
        p => Err(format!("no provider named {p}")),
    }
}

/// Lists what the account holds.
pub async fn discover(http: &Http, t: &Target) -> Discovery {
    match t.provider.as_str() {
        "aws" => aws::discover(http, t).await,
        "hetzner" => hetzner::discover(http, t).await,
        "digitalocean" => digitalocean::discover(http, t).await,
        "proxmox" => proxmox::discover(http, t).await,
        "ovh" => ovh::discover(http, t).await,
        "gcp" => gcp::discover(http, t).await,
        "azure" => azure::discover(http, t).await,
        "scaleway" => scaleway::discover(http, t).await,
        "ionos" => ionos::discover(http, t).await,
        p => Discovery {
            found: Vec::new(),
            errors: vec![(String::new(), format!("no provider named {p}"))],
        },
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn port_specs_open_the_watched_ports_they_cover() {
        assert_eq!(super::opened("22"), Some(vec![22]));
        assert_eq!(super::opened("20-3390"), Some(vec![22, 3389]));
        assert_eq!(super::opened("443"), Some(vec![]));
        assert_eq!(super::opened("1-65535"), None);
        assert_eq!(super::opened_range(0, 65535), None);
    }
}
