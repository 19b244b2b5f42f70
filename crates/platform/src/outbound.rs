//! The one outbound-URL policy of every HTTP client of the hub (CONTRACT 18): webhooks,
//! alert-rule `webhook_url`, `TRUSTHUB_OSV_URL`, the npm registry, and every later one.
//!
//! - Loopback, private (RFC 1918, `fc00::/7`), link-local (`169.254.0.0/16`, `fe80::/10`),
//!   CGNAT `100.64.0.0/10`, `0.0.0.0/8`, multicast, documentation, benchmarking and the other
//!   special-use blocks are refused, in every spelling: URLs are parsed as browsers do
//!   (WHATWG), so `2130706433`, `0x7f.1` and `0177.0.0.1` are 127.0.0.1, and IPv4-mapped,
//!   NAT64 and 6to4 IPv6 addresses are judged by the IPv4 address inside them.
//! - A URL is checked when it is saved ([`Policy::check_url`]: literal addresses, and what a
//!   name resolves to then) and again at every connection: the client's resolver drops
//!   refused addresses ([`Policy::client`]), and a literal address (which no resolver sees)
//!   is checked before each request ([`Policy::check_target`]). Redirects are not followed.
//! - `TRUSTHUB_OUTBOUND_ALLOW_CIDRS` (comma-separated CIDRs, e.g. `127.0.0.0/8` for a local
//!   receiver) lets an operator allow ranges; the one setting covers every outbound client.

use reqwest::Url;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use trusthub_core::apps::canonical_ip as canonical;

/// One CIDR range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    addr: IpAddr,
    prefix: u8,
}

impl std::str::FromStr for Cidr {
    type Err = String;
    fn from_str(s: &str) -> Result<Cidr, String> {
        let s = s.trim();
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| format!("`{s}` is not a CIDR (like 127.0.0.0/8 or fd00::/8)"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("`{s}`: the prefix must be 0 to {max}"))?,
        };
        Ok(Cidr { addr, prefix })
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

impl Cidr {
    /// Whether `other` lies wholly inside this range.
    pub fn covers(&self, other: &Cidr) -> bool {
        other.prefix >= self.prefix && self.contains(other.addr)
    }

    /// Whether `ip` is inside (an IPv4-mapped IPv6 address counts as its IPv4 address).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

/// Parses `TRUSTHUB_OUTBOUND_ALLOW_CIDRS` (empty: nothing allowed).
pub fn parse_cidrs(s: &str) -> Result<Vec<Cidr>, String> {
    s.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::parse)
        .collect()
}

/// Whether `ip` is in a special-use block (not a public unicast address).
pub fn special(ip: IpAddr) -> bool {
    match canonical(ip) {
        IpAddr::V4(v4) => special_v4(v4),
        IpAddr::V6(v6) => special_v6(v6),
    }
}

fn special_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    a == 0                                   // 0.0.0.0/8 "this network"
        || a == 10                           // RFC 1918
        || a == 127                          // loopback
        || (a == 100 && (64..128).contains(&b)) // CGNAT 100.64.0.0/10
        || (a == 169 && b == 254)            // link-local, cloud metadata
        || (a == 172 && (16..32).contains(&b)) // RFC 1918
        || (a == 192 && b == 0 && c == 0)    // IETF protocol assignments
        || (a == 192 && b == 0 && c == 2)    // TEST-NET-1
        || (a == 192 && b == 88 && c == 99)  // 6to4 relay anycast
        || (a == 192 && b == 168)            // RFC 1918
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || (a == 198 && b == 51 && c == 100) // TEST-NET-2
        || (a == 203 && b == 0 && c == 113)  // TEST-NET-3
        || a >= 224 // multicast, reserved, broadcast
}

fn special_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    if ip.is_unspecified() || ip.is_loopback() {
        return true;
    }
    // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) carry an IPv4 address: judged by it.
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        return special_v4(Ipv4Addr::new(
            (s[6] >> 8) as u8,
            s[6] as u8,
            (s[7] >> 8) as u8,
            s[7] as u8,
        ));
    }
    if s[0] == 0x2002 {
        return special_v4(Ipv4Addr::new(
            (s[1] >> 8) as u8,
            s[1] as u8,
            (s[2] >> 8) as u8,
            s[2] as u8,
        ));
    }
    (s[0] & 0xfe00) == 0xfc00               // unique local fc00::/7
        || (s[0] & 0xffc0) == 0xfe80        // link-local fe80::/10
        || (s[0] & 0xffc0) == 0xfec0        // site-local (deprecated)
        || (s[0] & 0xff00) == 0xff00        // multicast
        || (s[0] == 0x2001 && s[1] < 0x200) // IETF protocol assignments 2001::/23 (Teredo ...)
        || (s[0] == 0x2001 && s[1] == 0xdb8) // documentation
        || (s[0] == 0x100 && s[1..4] == [0, 0, 0]) // discard-only
        || s[0..6] == [0, 0, 0, 0, 0, 0] // IPv4-compatible (deprecated)
}

pub use trusthub_core::apps::metadata_address as metadata;

/// Checks an `http` app's endpoint (CONTRACT 18): agents may check their own loopback and
/// private networks, never a link-local or cloud-metadata address, in any spelling.
pub fn check_agent_endpoint(url: &str) -> Result<(), String> {
    let parsed = parse_http_url(url)?;
    match literal_ip(&parsed) {
        Some(ip) if metadata(ip) => Err(format!(
            "is {ip}, a link-local or cloud-metadata address, which agents never check"
        )),
        _ => Ok(()),
    }
}

/// The literal address of a parsed URL's host, in whatever spelling it was written (the
/// parser normalised `2130706433` to `127.0.0.1` already).
pub fn literal_ip(url: &Url) -> Option<IpAddr> {
    url.host_str()
        .and_then(trusthub_core::apps::literal_host_ip)
}

/// Parses an `http`/`https` URL as clients will (WHATWG).
pub fn parse_http_url(url: &str) -> Result<Url, String> {
    trusthub_core::apps::http_url(url)?;
    Url::parse(url).map_err(|e| format!("is not a URL: {e}"))
}

/// The private ranges `trusthub up` allows when its operator named none (CONTRACT 33): RFC
/// 1918, CGNAT and unique-local IPv6; never loopback, link-local or metadata addresses.
pub const PRIVATE_RANGES: &str = "10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,100.64.0.0/10,fc00::/7";

/// The policy, with the operator's allowed ranges and, for a tenant whose owner chose, the
/// tenant's own within them (CONTRACT 33).
#[derive(Debug, Clone, Default)]
pub struct Policy {
    allow: Arc<Vec<Cidr>>,
    tenant: Option<Arc<Vec<Cidr>>>,
}

impl Policy {
    /// A policy allowing `allow` besides public addresses.
    pub fn allowing(allow: Vec<Cidr>) -> Policy {
        Policy {
            allow: Arc::new(allow),
            tenant: None,
        }
    }

    /// This policy narrowed to a tenant's own ranges (`None`: the tenant did not choose, so
    /// every range the operator allows).
    pub fn narrowed(mut self, tenant: Option<Vec<Cidr>>) -> Policy {
        self.tenant = tenant.map(Arc::new);
        self
    }

    /// The operator's ranges.
    pub fn operator_ranges(&self) -> &[Cidr] {
        &self.allow
    }

    /// Whether a tenant's choice narrows the operator's ranges.
    pub fn is_narrowed(&self) -> bool {
        self.tenant.is_some()
    }

    /// Whether a connection to `ip` is refused.
    pub fn refuses(&self, ip: IpAddr) -> bool {
        let operator = self.allow.iter().any(|c| c.contains(ip));
        let tenant = self
            .tenant
            .as_ref()
            .is_none_or(|t| t.iter().any(|c| c.contains(ip)));
        special(ip) && !(operator && tenant)
    }

    fn refusal(&self, what: &str, ip: Option<IpAddr>) -> String {
        let operator = ip.is_some_and(|ip| self.allow.iter().any(|c| c.contains(ip)));
        if operator {
            return format!(
                "{what} an address outside this tenant's private networks; its owner adds the range in Settings (PATCH /api/v1/tenant {{\"allowed_networks\": [...]}})"
            );
        }
        format!(
            "{what} a loopback, private, link-local or other special-use address, which the hub does not call; allow a range with TRUSTHUB_OUTBOUND_ALLOW_CIDRS (`trusthub up` allows the private ranges by default), then the tenant's owner may narrow it in Settings"
        )
    }

    /// Checks a URL when it is saved: `http`/`https`, a host, no refused literal address, and
    /// no refused address among what the name resolves to now. A name that does not resolve
    /// (yet, or not from the hub's network) is accepted, as monitoring and chat tools accept
    /// it: every request is judged again at connection by the policy's resolver, so a name
    /// that later resolves to a refused address is still never called, and the check or
    /// delivery reports the resolution error.
    pub async fn check_url(&self, url: &str) -> Result<(), String> {
        let parsed = parse_http_url(url)?;
        if let Some(ip) = literal_ip(&parsed) {
            return if self.refuses(ip) {
                Err(self.refusal(&format!("is {ip},"), Some(ip)))
            } else {
                Ok(())
            };
        }
        let host = parsed.host_str().unwrap_or_default().to_owned();
        let port = parsed.port_or_known_default().unwrap_or(443);
        let addrs: Vec<SocketAddr> = match tokio::time::timeout(
            Duration::from_secs(3),
            tokio::net::lookup_host((host.as_str(), port)),
        )
        .await
        {
            Ok(Ok(a)) => a.collect(),
            Ok(Err(e)) => {
                tracing::info!(%host, error = %e, "outbound: a saved URL's host does not resolve yet");
                Vec::new()
            }
            Err(_) => Vec::new(),
        };
        if let Some(bad) = addrs.iter().find(|a| self.refuses(a.ip())) {
            let what = format!("`{host}` resolves to {},", bad.ip());
            return Err(self.refusal(&what, Some(bad.ip())));
        }
        Ok(())
    }

    /// Checks the target of one request, just before it is sent: a literal address is judged
    /// here (names are judged by the client's resolver, at connection).
    pub fn check_target(&self, url: &str) -> Result<(), String> {
        let shown = redact(url);
        let parsed = Url::parse(url).map_err(|e| format!("{shown}: not a URL: {e}"))?;
        match literal_ip(&parsed) {
            Some(ip) if self.refuses(ip) => {
                Err(self.refusal(&format!("{shown}: the target is"), Some(ip)))
            }
            _ => Ok(()),
        }
    }

    /// A client builder that follows no redirects and resolves names through the policy.
    pub fn client(&self) -> reqwest::ClientBuilder {
        let _ = rustls::crypto::ring::default_provider().install_default();
        reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("trusthub/", env!("CARGO_PKG_VERSION")))
            .dns_resolver(Arc::new(Guarded(self.clone())))
    }
}

/// The resolver of outbound clients: refused addresses are dropped; none left fails.
#[derive(Debug)]
struct Guarded(Policy);

impl reqwest::dns::Resolve for Guarded {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        let policy = self.0.clone();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .filter(|a| !policy.refuses(a.ip()))
                .collect();
            if addrs.is_empty() {
                let what = format!("`{host}` resolves only to");
                return Err(policy.refusal(&what, None).into());
            }
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// The sealing context of URLs that hold userinfo.
pub const URL_SEAL_CONTEXT: &str = "outbound.url";

/// How an outbound URL is kept (CONTRACT 18): the form every answer and audit row shows
/// (`https://***@host/...` when it holds userinfo) and, then only, the whole URL sealed with
/// the hub key.
pub fn keep(
    key: &trusthub_core::secret::SealingKey,
    url: &str,
) -> Result<(String, Option<Vec<u8>>), crate::error::ApiError> {
    let shown = redact(url);
    if shown == url {
        return Ok((shown, None));
    }
    let sealed = key
        .seal(URL_SEAL_CONTEXT, url.as_bytes())
        .map_err(|e| crate::error::ApiError::Internal(e.to_string()))?;
    Ok((shown, Some(sealed)))
}

/// The URL to call: the sealed whole one when there is one, else the shown one.
pub fn to_call(
    key: &trusthub_core::secret::SealingKey,
    shown: &str,
    sealed: Option<&[u8]>,
) -> Result<String, String> {
    match sealed {
        None => Ok(shown.to_owned()),
        Some(s) => key
            .open(URL_SEAL_CONTEXT, s)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .map_err(|_| "the URL cannot be unsealed with the hub key".to_owned()),
    }
}

/// Longest provider message an error shown to users carries.
pub const PROVIDER_MESSAGE_MAX: usize = 200;

/// What users are shown of an outbound call's error answer (CONTRACT 30): the status line
/// and, when the body is the provider's JSON error shape (`error.message`, `message`,
/// `error_description`, `error`), that message cut to [`PROVIDER_MESSAGE_MAX`] characters;
/// never the raw body of any other answer (an internal service's page must not be echoed).
pub fn provider_error(status: u16, body: &str) -> String {
    let line = match reqwest::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
    {
        Some(reason) => format!("HTTP {status} {reason}"),
        None => format!("HTTP {status}"),
    };
    match provider_message(body) {
        Some(m) => format!("{line}: {}", cut(&m, PROVIDER_MESSAGE_MAX)),
        None => line,
    }
}

/// The message of a JSON error body, if it has the shape of one.
pub fn provider_message(body: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(body.trim()).ok()?;
    [
        &v["error"]["message"],
        &v["message"],
        &v["error_description"],
        &v["error"],
    ]
    .into_iter()
    .find_map(|m| m.as_str())
    .map(|m| m.trim().to_owned())
    .filter(|m| !m.is_empty())
}

/// `s` cut to `max` characters, `…` marking a cut.
pub fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Shows a URL without the password of its userinfo: `https://***@host/path` (CONTRACT 18).
pub fn redact(url: &str) -> String {
    match Url::parse(url) {
        Ok(mut u) if !u.username().is_empty() || u.password().is_some() => {
            let _ = u.set_password(None);
            let _ = u.set_username("***");
            u.to_string()
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_errors_carry_the_status_line_and_only_a_json_message() {
        assert_eq!(
            provider_error(403, r#"{"error":{"message":"bad token"}}"#),
            "HTTP 403 Forbidden: bad token"
        );
        assert_eq!(
            provider_error(
                500,
                "<html>internal admin panel: db=10.0.0.5 password=x</html>"
            ),
            "HTTP 500 Internal Server Error"
        );
        let long = format!(r#"{{"message":"{}"}}"#, "x".repeat(500));
        assert_eq!(
            provider_error(400, &long).chars().count(),
            "HTTP 400 Bad Request: ".len() + PROVIDER_MESSAGE_MAX
        );
        assert_eq!(provider_error(599, "{}"), "HTTP 599");
    }

    #[test]
    fn special_use_addresses_in_every_spelling_are_refused() {
        let p = Policy::default();
        for url in [
            "http://127.0.0.1/",
            "http://2130706433/",
            "http://0177.0.0.1/",
            "http://0x7f.1/",
            "http://127.1/",
            "http://0.0.0.0/",
            "http://10.1.2.3/",
            "http://172.16.0.1/",
            "http://192.168.1.1/",
            "http://100.64.0.1/",
            "http://169.254.169.254/latest/meta-data",
            "http://224.0.0.1/",
            "http://255.255.255.255/",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:7f00:1]/",
            "http://[fe80::1]/",
            "http://[fd00:ec2::254]/",
            "http://[fc00::1]/",
            "http://[64:ff9b::a00:1]/",
            "http://[2002:a00:1::]/",
            "http://[ff02::1]/",
        ] {
            assert!(p.check_target(url).is_err(), "{url}");
        }
        for url in [
            "https://8.8.8.8/",
            "https://[2606:4700::1111]/",
            "https://hooks.example.com/x",
        ] {
            assert!(p.check_target(url).is_ok(), "{url}");
        }
    }

    #[test]
    fn allowed_ranges_open_exactly_what_they_say() {
        let p = Policy::allowing(parse_cidrs("127.0.0.0/8, fd00::/8").expect("cidrs"));
        assert!(p.check_target("http://127.0.0.1:9/").is_ok());
        assert!(p.check_target("http://2130706433/").is_ok());
        assert!(p.check_target("http://[::ffff:127.0.0.1]/").is_ok());
        assert!(p.check_target("http://[fd12::1]/").is_ok());
        assert!(p.check_target("http://10.0.0.1/").is_err());
        assert!(p.check_target("http://169.254.169.254/").is_err());
        assert!(parse_cidrs("10.0.0.0/33").is_err());
        assert!(parse_cidrs("nonsense").is_err());
        assert_eq!(parse_cidrs(" ").expect("empty"), vec![]);
    }

    #[test]
    fn a_tenants_ranges_narrow_the_operators_and_say_who_can_widen_them() {
        let ip = |s: &str| s.parse::<IpAddr>().expect("ip");
        let operator = Policy::allowing(parse_cidrs("10.0.0.0/8,fd00::/8").expect("cidrs"));
        assert!(!operator.refuses(ip("10.1.2.3")));
        let tenant = operator
            .clone()
            .narrowed(Some(parse_cidrs("10.1.0.0/16").expect("cidrs")));
        assert!(tenant.is_narrowed() && !operator.is_narrowed());
        assert!(!tenant.refuses(ip("10.1.2.3")));
        assert!(
            tenant.refuses(ip("10.2.0.1")),
            "inside the operator's, outside the tenant's"
        );
        assert!(tenant.refuses(ip("fd00::1")));
        assert!(
            !tenant.refuses(ip("93.184.216.34")),
            "public addresses stay reachable"
        );
        // A tenant cannot widen: its range outside the operator's stays refused.
        let wider = operator
            .clone()
            .narrowed(Some(parse_cidrs("192.168.0.0/16").expect("cidrs")));
        assert!(wider.refuses(ip("192.168.1.1")));
        // None chosen: nothing private besides public addresses.
        let none = operator.clone().narrowed(Some(Vec::new()));
        assert!(none.refuses(ip("10.1.2.3")));
        // Who can widen: the owner inside the operator's ranges, the operator outside them.
        let e = tenant
            .check_target("http://10.2.0.1/")
            .expect_err("refused");
        assert!(e.contains("tenant's private networks"), "{e}");
        let e = tenant
            .check_target("http://192.168.1.1/")
            .expect_err("refused");
        assert!(e.contains("TRUSTHUB_OUTBOUND_ALLOW_CIDRS"), "{e}");
        // Coverage is by range, not by first address.
        let c = |s: &str| s.parse::<Cidr>().expect("cidr");
        assert!(c("10.0.0.0/8").covers(&c("10.1.0.0/16")));
        assert!(!c("10.1.0.0/16").covers(&c("10.0.0.0/8")));
        assert!(!c("10.0.0.0/8").covers(&c("fd00::/8")));
        assert_eq!(c(" 10.1.2.3 ").to_string(), "10.1.2.3/32");
        assert!(parse_cidrs(PRIVATE_RANGES).is_ok_and(|r| r.len() == 5));
    }

    #[test]
    fn metadata_addresses() {
        for ip in [
            "169.254.169.254",
            "fe80::1",
            "fd00:ec2::254",
            "::ffff:169.254.169.254",
        ] {
            assert!(metadata(ip.parse().expect("ip")), "{ip}");
        }
        for ip in ["127.0.0.1", "10.0.0.1", "::1"] {
            assert!(!metadata(ip.parse().expect("ip")), "{ip}");
        }
    }

    #[test]
    fn passwords_in_urls_are_hidden() {
        assert_eq!(
            redact("https://user:secret@hooks.example.com/x"),
            "https://***@hooks.example.com/x"
        );
        assert_eq!(
            redact("https://hooks.example.com/x"),
            "https://hooks.example.com/x"
        );
    }
}
