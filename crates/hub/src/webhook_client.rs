//! The HTTP client webhooks are sent with: a 10 s limit for connecting and answering
//! together, no redirects, and (unless `TRUSTHUB_WEBHOOK_ALLOW_LINK_LOCAL`) no link-local or
//! cloud-metadata addresses, checked when an endpoint is created and again on every
//! connection, so a name that later resolves to 169.254.169.254 is still refused.

use crate::settings::Settings;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

/// Whether an address is link-local or a metadata service: 169.254.0.0/16, fe80::/10,
/// AWS's fd00:ec2::254, and IPv4-mapped forms of those.
pub fn blocked(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return v4.is_link_local();
            }
            let s = v6.segments();
            (s[0] & 0xffc0) == 0xfe80
                || v6 == std::net::Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254)
        }
    }
}

const REFUSED: &str = "resolves to a link-local or metadata address (169.254.0.0/16, fe80::/10); set TRUSTHUB_WEBHOOK_ALLOW_LINK_LOCAL=true to allow it";

#[derive(Debug)]
struct Guarded;

impl reqwest::dns::Resolve for Guarded {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .filter(|a| !blocked(a.ip()))
                .collect();
            if addrs.is_empty() {
                return Err(format!("`{host}` {REFUSED}").into());
            }
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// The client for deliveries.
pub fn client(settings: &Settings) -> Result<reqwest::Client, reqwest::Error> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut b = reqwest::Client::builder()
        .timeout(Duration::from_secs(settings.webhook_timeout_secs.max(1)))
        .redirect(reqwest::redirect::Policy::none());
    if !settings.webhook_allow_link_local {
        b = b.dns_resolver(Arc::new(Guarded));
    }
    b.build()
}

/// Checks a webhook URL: `http`/`https`, a host, and unless allowed not a link-local or
/// metadata address (literal, or what the name resolves to now).
pub async fn check_url(url: &str, allow_link_local: bool) -> Result<(), String> {
    trusthub_core::apps::http_url(url)?;
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("is not a URL: {e}"))?;
    if allow_link_local {
        return Ok(());
    }
    let Some(host) = parsed.host_str() else {
        return Ok(());
    };
    if let Some(ip) = literal_ip(host) {
        return if blocked(ip) {
            Err(REFUSED.into())
        } else {
            Ok(())
        };
    }
    let port = parsed.port_or_known_default().unwrap_or(443);
    let lookup = tokio::time::timeout(
        Duration::from_secs(3),
        tokio::net::lookup_host((host, port)),
    )
    .await;
    // A name that does not resolve yet is accepted; every delivery checks again.
    if let Ok(Ok(mut addrs)) = lookup
        && addrs.any(|a| blocked(a.ip()))
    {
        return Err(REFUSED.into());
    }
    Ok(())
}

fn literal_ip(host: &str) -> Option<IpAddr> {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok()
}

/// Whether a delivery target is a literal link-local address (names are checked by the
/// resolver on connection).
pub fn literal_blocked(url: &str) -> bool {
    reqwest::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().and_then(literal_ip))
        .is_some_and(blocked)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_local_and_metadata_addresses_are_blocked() {
        for ip in [
            "169.254.169.254",
            "169.254.0.1",
            "fe80::1",
            "fd00:ec2::254",
            "::ffff:169.254.169.254",
        ] {
            assert!(blocked(ip.parse().expect("ip")), "{ip}");
        }
        for ip in ["127.0.0.1", "10.0.0.1", "8.8.8.8", "::1", "2001:db8::1"] {
            assert!(!blocked(ip.parse().expect("ip")), "{ip}");
        }
        assert!(literal_blocked("http://169.254.169.254/latest/meta-data"));
        assert!(literal_blocked("http://[fe80::1]:8080/"));
        assert!(!literal_blocked("http://127.0.0.1:9/"));
    }
}
