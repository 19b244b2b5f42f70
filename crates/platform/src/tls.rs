//! The TLS front (CONTRACT 11 `--tls-cert` / `--tls-key`; SPEC 5) with rustls.
//!
//! Handshakes run in their own tasks, so a slow or silent client cannot hold up the accept
//! loop; only finished handshakes reach axum.

use axum::serve::Listener;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// How long a client gets to finish its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Loads a PEM certificate chain and private key into a rustls acceptor (HTTP/1.1 ALPN).
/// With `client_ca` (the hub CA, DER), a client certificate signed by it is requested and
/// verified when presented, never required.
pub fn acceptor(cert: &Path, key: &Path, client_ca: Option<&[u8]>) -> Result<TlsAcceptor, String> {
    let cert_pem =
        std::fs::read(cert).map_err(|e| format!("--tls-cert {}: {e}", cert.display()))?;
    let key_pem = std::fs::read(key).map_err(|e| format!("--tls-key {}: {e}", key.display()))?;
    acceptor_from_pem(&cert_pem, &key_pem, client_ca).map_err(|e| {
        e.replace("--tls-cert", &format!("--tls-cert {}", cert.display()))
            .replace("--tls-key", &format!("--tls-key {}", key.display()))
    })
}

/// Like [`acceptor`], from PEM bytes (a chain, then its key).
pub fn acceptor_from_pem(
    cert_pem: &[u8],
    key_pem: &[u8],
    client_ca: Option<&[u8]>,
) -> Result<TlsAcceptor, String> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("--tls-cert: {e}"))?;
    if chain.is_empty() {
        return Err("--tls-cert: no certificate in the file".into());
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| format!("--tls-key: {e}"))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            roots
                .add(CertificateDer::from(ca.to_vec()))
                .map_err(|e| format!("the hub CA: {e}"))?;
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .allow_unauthenticated()
            .build()
            .map_err(|e| format!("client certificate verifier: {e}"))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(|e| format!("TLS certificate and key do not fit: {e}"))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// A listener that hands axum only connections whose TLS handshake finished.
#[derive(Debug)]
pub struct TlsListener {
    local: SocketAddr,
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    accept_task: tokio::task::JoinHandle<()>,
}

impl TlsListener {
    /// Starts accepting on `tcp`.
    pub fn new(tcp: TcpListener, acceptor: TlsAcceptor) -> std::io::Result<TlsListener> {
        let local = tcp.local_addr()?;
        let (tx, ready) = mpsc::channel(64);
        let accept_task = tokio::spawn(async move {
            loop {
                let (stream, peer) = match tcp.accept().await {
                    Ok(x) => x,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let acceptor = acceptor.clone();
                let tx = tx.clone();
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => {
                            let _ = tx.send((tls, peer)).await;
                        }
                        Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                });
            }
        });
        Ok(TlsListener {
            local,
            ready,
            accept_task,
        })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.accept_task.abort();
    }
}

impl Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(x) => x,
            // The accept task only ends when the listener is dropped.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}

/// The client certificate a TLS connection presented (verified against the hub CA by rustls).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerCert {
    /// `CN=<cn>,OU=<ou>` (RFC 4514; the parts the hub CA writes).
    pub subject: String,
    /// Lowercase hex SHA-256 of the certificate DER.
    pub fingerprint: String,
}

/// The verified client certificate of a connection, if it presented one.
pub fn peer_cert(tls: &TlsStream<TcpStream>) -> Option<PeerCert> {
    peer_cert_of(tls.get_ref().1.peer_certificates()?.first()?)
}

/// The certificate a trusted reverse proxy forwarded in `X-Service-Client-Cert` (nginx's
/// `$ssl_client_escaped_cert`: the PEM, percent-encoded): its subject and fingerprint, when it
/// is a certificate signed by `ca_der`. The proxy verified the chain; the signature is checked
/// again so a misconfigured proxy cannot pass another CA's certificate. Validity and
/// revocation are the cross-check's (so their use is recorded).
pub fn proxied_cert(header: &str, ca_der: &[u8]) -> Result<PeerCert, String> {
    use rustls_pki_types::pem::PemObject;
    let pem = percent_encoding::percent_decode_str(header)
        .decode_utf8()
        .map_err(|_| "not percent-encoded UTF-8".to_owned())?;
    let der = rustls_pki_types::CertificateDer::from_pem_slice(pem.as_bytes())
        .map_err(|e| format!("not a PEM certificate: {e}"))?;
    let (_, cert) =
        x509_parser::parse_x509_certificate(&der).map_err(|e| format!("unreadable: {e}"))?;
    let (_, ca) = x509_parser::parse_x509_certificate(ca_der).map_err(|e| e.to_string())?;
    cert.verify_signature(Some(ca.public_key()))
        .map_err(|_| "not issued by this hub's CA".to_owned())?;
    peer_cert_of(&der).ok_or_else(|| "unreadable".to_owned())
}

fn peer_cert_of(der: &[u8]) -> Option<PeerCert> {
    use sha2::Digest;
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let first = |it: &mut dyn Iterator<Item = &x509_parser::x509::AttributeTypeAndValue<'_>>| {
        it.next()
            .and_then(|a| a.as_str().ok())
            .map(str::to_owned)
            .unwrap_or_default()
    };
    let subject = cert.subject();
    let cn = first(&mut subject.iter_common_name());
    let ou = first(&mut subject.iter_organizational_unit());
    Some(PeerCert {
        subject: format!("CN={},OU={}", escape_dn(&cn), escape_dn(&ou)),
        fingerprint: trusthub_core::secret::hex(&sha2::Sha256::digest(der)),
    })
}

/// RFC 4514 escaping of an attribute value.
fn escape_dn(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for (i, c) in v.chars().enumerate() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';' | '=')
            || (i == 0 && (c == '#' || c == ' '))
            || (i + 1 == v.chars().count() && c == ' ');
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// An address block (`10.0.0.0/8`, `::1/128`, or one address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    addr: std::net::IpAddr,
    prefix: u8,
}

impl Cidr {
    /// Parses `addr[/prefix]`.
    pub fn parse(s: &str) -> Result<Cidr, String> {
        let bad =
            || format!("--trusted-proxy {s}: expected an address or CIDR block such as 10.0.0.0/8");
        let (addr, prefix) = match s.trim().split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s.trim(), None),
        };
        let addr: std::net::IpAddr = addr.parse().map_err(|_| bad())?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(p) => p.parse::<u8>().ok().filter(|p| *p <= max).ok_or_else(bad)?,
            None => max,
        };
        Ok(Cidr { addr, prefix })
    }

    /// Whether `ip` is in the block (an IPv4-mapped IPv6 address counts as IPv4).
    pub fn contains(&self, ip: std::net::IpAddr) -> bool {
        use std::net::IpAddr;
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
            v4 => v4,
        };
        let (a, b, bits) = match (self.addr, ip) {
            (IpAddr::V4(a), IpAddr::V4(b)) => (
                u128::from(u32::from(a)) << 96,
                u128::from(u32::from(b)) << 96,
                self.prefix,
            ),
            (IpAddr::V6(a), IpAddr::V6(b)) => (u128::from(a), u128::from(b), self.prefix),
            _ => return false,
        };
        if bits == 0 {
            return true;
        }
        let mask = u128::MAX << (128 - u32::from(bits));
        a & mask == b & mask
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidr_blocks_hold_their_addresses_only() {
        let net = Cidr::parse("10.1.0.0/16").expect("cidr");
        assert!(net.contains("10.1.200.3".parse().expect("ip")));
        assert!(!net.contains("10.2.0.1".parse().expect("ip")));
        assert!(net.contains("::ffff:10.1.0.9".parse().expect("ip")));
        let one = Cidr::parse("127.0.0.1").expect("one");
        assert!(one.contains("127.0.0.1".parse().expect("ip")));
        assert!(!one.contains("127.0.0.2".parse().expect("ip")));
        let v6 = Cidr::parse("fd00::/8").expect("v6");
        assert!(v6.contains("fd12::1".parse().expect("ip")));
        assert!(!v6.contains("10.0.0.1".parse().expect("ip")));
        assert!(
            Cidr::parse("0.0.0.0/0")
                .expect("all")
                .contains("8.8.8.8".parse().expect("ip"))
        );
        for bad in ["10.0.0.0/33", "nope", "10.0.0.0/x", "::/129"] {
            assert!(Cidr::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(escape_dn("a,b"), "a\\,b");
    }
}
