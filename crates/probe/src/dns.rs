//! A dns check (CONTRACT 32): one query over UDP (again over TCP when the answer is cut) to
//! the target's server — if the caller's guard allows it — or to the host's resolver; the
//! answer must hold records of the asked type and every expected value. NXDOMAIN, an
//! error code and silence are told apart.

use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use trusthub_core::dns::{self, Answer, Target};

/// The first `nameserver` of `/etc/resolv.conf`: the host's resolver.
fn system_server() -> Result<SocketAddr, String> {
    let conf = std::fs::read_to_string("/etc/resolv.conf")
        .map_err(|e| format!("no server named and /etc/resolv.conf cannot be read: {e}"))?;
    conf.lines()
        .filter_map(|l| l.trim().strip_prefix("nameserver"))
        .filter_map(|ip| ip.trim().split('%').next()?.parse().ok())
        .map(|ip| SocketAddr::new(ip, 53))
        .next()
        .ok_or_else(|| "no server named and /etc/resolv.conf lists none".into())
}

async fn over_udp(server: SocketAddr, q: &[u8], t: &Target, id: u16) -> Result<Answer, String> {
    let bind: SocketAddr = if server.is_ipv4() {
        "0.0.0.0:0".parse().map_err(|_| "bind")?
    } else {
        "[::]:0".parse().map_err(|_| "bind")?
    };
    let sock = tokio::net::UdpSocket::bind(bind)
        .await
        .map_err(|e| format!("cannot open a UDP socket: {e}"))?;
    sock.connect(server)
        .await
        .map_err(|e| format!("cannot reach {server}: {e}"))?;
    sock.send(q)
        .await
        .map_err(|e| format!("cannot send to {server}: {e}"))?;
    let mut buf = vec![0u8; 4096];
    loop {
        let n = sock
            .recv(&mut buf)
            .await
            .map_err(|e| format!("{server} refused the query: {e}"))?;
        // Another query's answer (a late one, a spoof) is not this one's: wait on.
        if let Ok(a) = dns::parse_answer(&buf[..n], t, id) {
            return Ok(a);
        }
    }
}

async fn over_tcp(server: SocketAddr, q: &[u8], t: &Target, id: u16) -> Result<Answer, String> {
    let mut s = tokio::net::TcpStream::connect(server)
        .await
        .map_err(|e| format!("cannot connect to {server} over TCP: {e}"))?;
    let mut framed = (q.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(q);
    s.write_all(&framed)
        .await
        .map_err(|e| format!("cannot send to {server}: {e}"))?;
    let len = s
        .read_u16()
        .await
        .map_err(|e| format!("{server} closed the TCP answer: {e}"))?;
    let mut buf = vec![0u8; usize::from(len)];
    s.read_exact(&mut buf)
        .await
        .map_err(|e| format!("{server} cut the TCP answer: {e}"))?;
    dns::parse_answer(&buf, t, id)
}

/// Asks `endpoint`'s question; `Ok` when the answer holds records and every `expected`
/// value.
pub async fn lookup(
    guard: crate::Guard<'_>,
    endpoint: &str,
    expected: &[String],
    timeout: Duration,
) -> Result<(), String> {
    let t = dns::parse_target(endpoint)?;
    let server = match t.server {
        Some(s) => {
            guard(s.ip()).map_err(|why| format!("the server {why}"))?;
            s
        }
        None => system_server()?,
    };
    let id = u16::from_be_bytes(trusthub_core::secret::random_bytes::<2>().unwrap_or([0x5a, 0xa5]));
    let q = dns::query(&t, id);
    let secs = timeout.as_secs();
    let asked = async {
        match over_udp(server, &q, &t, id).await? {
            Answer::Truncated => over_tcp(server, &q, &t, id).await,
            a => Ok(a),
        }
    };
    let answer = match tokio::time::timeout(timeout, asked).await {
        Err(_) => return Err(format!("no answer from {server} within {secs} s")),
        Ok(r) => r?,
    };
    let name = &t.name;
    let values = match answer {
        Answer::NoSuchName => {
            return Err(format!("`{name}` does not exist (NXDOMAIN from {server})"));
        }
        Answer::Failed(code) => return Err(format!("{server} answered {code} for `{name}`")),
        Answer::Truncated => return Err(format!("{server} sent a cut answer over TCP")),
        Answer::Records(v) => v,
    };
    if values.is_empty() {
        return Err(format!("`{name}` has no {} records", t.rtype));
    }
    let missing: Vec<&str> = expected
        .iter()
        .filter(|e| !values.iter().any(|v| dns::matches(t.rtype, v, e)))
        .map(String::as_str)
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        let mut shown = values.join(", ");
        if shown.chars().count() > 200 {
            shown = format!("{}…", shown.chars().take(200).collect::<String>());
        }
        Err(format!(
            "the {} answer for `{name}` lacks {}: it holds {shown}",
            t.rtype,
            missing.join(", ")
        ))
    }
}
