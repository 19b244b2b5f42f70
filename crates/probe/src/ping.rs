//! A ping check (CONTRACT 32): one ICMP echo to the target's first address the caller's
//! guard allows, up when the reply comes within the timeout; the round trip is its
//! latency. The socket is an unprivileged ICMP datagram socket where the kernel allows it
//! (`net.ipv4.ping_group_range` holds the process's group), else a raw socket
//! (CAP_NET_RAW).

use socket2::{Domain, Protocol, Socket, Type};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

/// How the echo was sent: which socket the kernel gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// `SOCK_DGRAM` + `IPPROTO_ICMP`: no privilege needed.
    Datagram,
    /// `SOCK_RAW`: needs CAP_NET_RAW.
    Raw,
}

/// An ICMP socket for `ip`'s family: datagram first, raw when that is not allowed.
pub fn open(ip: IpAddr) -> Result<(Socket, Via), String> {
    let (domain, proto) = match ip {
        IpAddr::V4(_) => (Domain::IPV4, Protocol::ICMPV4),
        IpAddr::V6(_) => (Domain::IPV6, Protocol::ICMPV6),
    };
    let s = match Socket::new(domain, Type::DGRAM, Some(proto)) {
        Ok(s) => (s, Via::Datagram),
        Err(_) => match Socket::new(domain, Type::RAW, Some(proto)) {
            Ok(s) => (s, Via::Raw),
            Err(e) => {
                return Err(format!(
                    "cannot open an ICMP socket ({e}): allow this process's group in net.ipv4.ping_group_range, or give it CAP_NET_RAW"
                ));
            }
        },
    };
    s.0.set_nonblocking(true)
        .map_err(|e| format!("cannot use the ICMP socket: {e}"))?;
    Ok(s)
}

/// The Internet checksum (RFC 1071).
fn checksum(b: &[u8]) -> u16 {
    let mut sum: u32 = b
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An echo request carrying `token` (what the reply is matched by: a datagram socket's
/// kernel rewrites the identifier).
fn request(v6: bool, token: &[u8; 16]) -> Vec<u8> {
    let mut m = vec![if v6 { 128 } else { 8 }, 0, 0, 0, 0x7e, 0x57, 0, 1];
    m.extend_from_slice(token);
    if !v6 {
        let c = checksum(&m);
        m[2..4].copy_from_slice(&c.to_be_bytes());
    }
    m
}

/// Whether `packet` (as the socket gave it) is the echo reply carrying `token`.
fn is_reply(packet: &[u8], v6: bool, via: Via, token: &[u8; 16]) -> bool {
    // A raw IPv4 socket hands the IP header too.
    let icmp = if !v6 && via == Via::Raw {
        let ihl = usize::from(packet.first().map_or(0, |b| b & 0x0f)) * 4;
        packet.get(ihl..).unwrap_or_default()
    } else {
        packet
    };
    let reply_type = if v6 { 129 } else { 0 };
    icmp.len() >= 8 + token.len() && icmp[0] == reply_type && &icmp[8..8 + token.len()] == token
}

/// Pings `host` once; the round trip.
pub async fn echo(
    guard: crate::Guard<'_>,
    host: &str,
    timeout: Duration,
) -> Result<Duration, String> {
    let secs = timeout.as_secs();
    let addrs: Vec<SocketAddr> =
        match tokio::time::timeout(timeout, tokio::net::lookup_host((host, 0))).await {
            Err(_) => return Err(format!("`{host}` did not resolve within {secs} s")),
            Ok(Err(e)) => return Err(format!("`{host}` does not resolve: {e}")),
            Ok(Ok(a)) => a.collect(),
        };
    let Some(target) = addrs.iter().copied().find(|a| guard(a.ip()).is_ok()) else {
        let why = match addrs.first() {
            Some(a) => guard(a.ip()).err().unwrap_or_default(),
            None => "nothing".into(),
        };
        return Err(format!(
            "`{host}` resolves only to addresses not called: {why}"
        ));
    };
    let ip = target.ip();
    let v6 = ip.is_ipv6();
    let (socket, via) = open(ip)?;
    let sock = tokio::net::UdpSocket::from_std(std::net::UdpSocket::from(socket))
        .map_err(|e| format!("cannot use the ICMP socket: {e}"))?;
    let token = trusthub_core::secret::random_bytes::<16>().map_err(|e| e.to_string())?;
    let started = Instant::now();
    let exchange = async {
        sock.send_to(&request(v6, &token), SocketAddr::new(ip, 0))
            .await
            .map_err(|e| format!("cannot send an echo to {ip}: {e}"))?;
        let mut buf = [0u8; 1500];
        loop {
            let (n, from) = sock
                .recv_from(&mut buf)
                .await
                .map_err(|e| format!("no echo reply from {ip}: {e}"))?;
            if from.ip() == ip && is_reply(&buf[..n], v6, via, &token) {
                return Ok::<Duration, String>(started.elapsed());
            }
        }
    };
    match tokio::time::timeout(timeout, exchange).await {
        Err(_) => Err(format!("no echo reply from {ip} within {secs} s")),
        Ok(r) => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_carry_a_valid_checksum_and_replies_match_by_token() {
        let token = [7u8; 16];
        let r = request(false, &token);
        assert_eq!(checksum(&r), 0, "a packet with its checksum sums to zero");
        let mut reply = r.clone();
        reply[0] = 0;
        assert!(is_reply(&reply, false, Via::Datagram, &token));
        assert!(
            !is_reply(&r, false, Via::Datagram, &token),
            "a request is not a reply"
        );
        let mut with_ip = vec![0x45u8; 1];
        with_ip.extend_from_slice(&[0; 19]);
        with_ip.extend_from_slice(&reply);
        assert!(is_reply(&with_ip, false, Via::Raw, &token));
        assert!(!is_reply(&reply, false, Via::Datagram, &[8u8; 16]));
    }
}
