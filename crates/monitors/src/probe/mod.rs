//! The hub's own probes (CONTRACT 27, 32): an http request, a tcp connection, a tls
//! handshake, a dns query, an ICMP echo; and a push monitor's missed deadline.
//! Every one goes through the outbound policy (CONTRACT 18): the name is resolved and a
//! refused address is never connected to. Errors are said as an operator reads them
//! ("cannot connect: connection refused", "timed out after 10 s", "HTTP 503, expected
//! 200-399", "keyword `ok` not found").

use crate::store::apps::{App, CheckResult};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use time::OffsetDateTime;
use trusthub_core::apps::AppKind;
use trusthub_core::probe;
use trusthub_platform::outbound::Policy;

use trusthub_probe::{dns, ping};

/// The outbound policy as the shared probes' guard: why the hub does not call `ip`.
fn guard(policy: &Policy) -> impl Fn(std::net::IpAddr) -> Result<(), String> + Send + Sync + '_ {
    move |ip| match policy.refuses(ip) {
        false => Ok(()),
        true => Err(format!(
            "{ip} is a loopback, private or special-use address, which the hub does not call; allow a range with TRUSTHUB_OUTBOUND_ALLOW_CIDRS"
        )),
    }
}

/// One probe's result, and a tls certificate's expiry when one was seen.
pub struct Probed {
    /// The check result, at the instant the probe started.
    pub result: CheckResult,
    /// tls: the certificate's `notAfter`.
    pub tls_expires_at: Option<OffsetDateTime>,
}

fn result(app: &App, at: OffsetDateTime, started: Instant, outcome: Outcome) -> CheckResult {
    let latency = match outcome.latency {
        Some(l) => l,
        None => Some(i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX)),
    };
    CheckResult {
        app_id: app.id,
        checked_at: at,
        ok: outcome.error.is_none(),
        status_code: outcome.status,
        latency_ms: latency,
        error: outcome.error.map(|e| e.chars().take(500).collect()),
    }
}

#[derive(Default)]
struct Outcome {
    status: Option<i64>,
    error: Option<String>,
    /// A latency other than the probe's duration (a round trip; none for a push).
    latency: Option<Option<i64>>,
}

impl Outcome {
    fn fail(e: impl Into<String>) -> Outcome {
        Outcome {
            error: Some(e.into()),
            ..Outcome::default()
        }
    }

    fn of(r: Result<(), String>) -> Outcome {
        Outcome {
            error: r.err(),
            ..Outcome::default()
        }
    }
}

/// Why a push monitor whose deadline passed is failing.
fn missed(app: &App, at: OffsetDateTime) -> String {
    let every = app.interval_seconds.unwrap_or(60);
    let grace = app.grace_seconds.unwrap_or(0);
    let since = match (app.last_check_at, app.last_check_ok) {
        (Some(t), Some(true)) => format!(
            "the last ping came at {}",
            trusthub_platform::state::rfc3339(t)
        ),
        (Some(t), _) => format!(
            "the last result, at {}, was a failure",
            trusthub_platform::state::rfc3339(t)
        ),
        (None, _) => format!(
            "none came since it was made at {}",
            trusthub_platform::state::rfc3339(app.created_at)
        ),
    };
    let late = at - app.last_check_at.unwrap_or(app.created_at);
    format!(
        "no ping within {every} s + {grace} s grace: {since} ({} s ago)",
        late.whole_seconds()
    )
}

/// Probes `app` once, at `at` (the instant recorded; the probe itself runs now).
pub async fn run(
    policy: &Policy,
    client: &reqwest::Client,
    app: &App,
    at: OffsetDateTime,
) -> Probed {
    let timeout = Duration::from_secs(
        app.timeout_seconds
            .unwrap_or(probe::DEFAULT_TIMEOUT_SECS)
            .clamp(1, 60) as u64,
    );
    let started = Instant::now();
    let kind = AppKind::parse(&app.app_type);
    let mut tls_expires_at = None;
    let outcome = match kind {
        Some(AppKind::Http) => http(policy, client, app, timeout).await,
        Some(AppKind::Tcp) => match connect(policy, "tcp", &app.identifier, timeout).await {
            Ok(_) => Outcome::default(),
            Err(e) => Outcome::fail(e),
        },
        Some(AppKind::Tls) => match tls(policy, &app.identifier, timeout).await {
            Ok(expires) => {
                tls_expires_at = Some(expires);
                if expires <= at {
                    Outcome::fail(format!(
                        "the certificate expired at {}",
                        trusthub_platform::state::rfc3339(expires)
                    ))
                } else {
                    Outcome::default()
                }
            }
            Err(e) => Outcome::fail(e),
        },
        Some(AppKind::Dns) => {
            let guard = guard(policy);
            Outcome::of(dns::lookup(&guard, &app.identifier, &app.expected(), timeout).await)
        }
        Some(AppKind::Ping) => {
            let host = trusthub_core::apps::icmp_host(&app.identifier).unwrap_or_default();
            match ping::echo(&guard(policy), &host, timeout).await {
                Ok(rtt) => Outcome {
                    latency: Some(Some(i64::try_from(rtt.as_millis()).unwrap_or(i64::MAX))),
                    ..Outcome::default()
                },
                Err(e) => Outcome::fail(e),
            }
        }
        Some(AppKind::Push) => Outcome {
            latency: Some(None),
            ..Outcome::fail(missed(app, at))
        },
        _ => Outcome::fail(format!("{} apps are not checked by the hub", app.app_type)),
    };
    Probed {
        result: result(app, at, started, outcome),
        tls_expires_at,
    }
}

async fn http(policy: &Policy, client: &reqwest::Client, app: &App, timeout: Duration) -> Outcome {
    let url = app.endpoint.as_deref().unwrap_or(&app.identifier);
    // A literal address is judged here, at every probe (names by the client's resolver): the
    // operator's ranges or the tenant's private networks may have changed since creation.
    if let Err(e) = policy.check_target(url) {
        return Outcome::fail(e);
    }
    let secs = timeout.as_secs();
    let send = client.get(url).timeout(timeout).send();
    let resp = match tokio::time::timeout(timeout, send).await {
        Err(_) => return Outcome::fail(probe::request_failure(true, "", secs)),
        Ok(Err(e)) => {
            let reason = probe::innermost(&e);
            return Outcome::fail(probe::request_failure(e.is_timeout(), &reason, secs));
        }
        Ok(Ok(r)) => r,
    };
    let status = resp.status().as_u16();
    let answered = |error: Option<String>| Outcome {
        status: Some(status.into()),
        error,
        ..Outcome::default()
    };
    if let Err(e) = probe::judge_status(status, app.expected_status.as_deref()) {
        return answered(Some(e));
    }
    let keyword = app.keyword.as_deref().filter(|k| !k.is_empty());
    let query = app.query();
    if keyword.is_none() && query.is_none() {
        return answered(None);
    }
    let mut body: Vec<u8> = Vec::new();
    let mut resp = resp;
    while body.len() < probe::MAX_BODY {
        match tokio::time::timeout(timeout, resp.chunk()).await {
            Ok(Ok(Some(c))) => body.extend_from_slice(&c),
            Ok(Ok(None)) => break,
            Ok(Err(e)) => {
                let why = format!("the body could not be read: {}", probe::innermost(&e));
                return answered(Some(why));
            }
            Err(_) => {
                return answered(Some(format!("the body did not arrive within {secs} s")));
            }
        }
    }
    let judged = keyword
        .map_or(Ok(()), |k| probe::judge_body(&body, k))
        .and_then(|()| {
            query
                .as_ref()
                .map_or(Ok(()), |q| trusthub_core::json_query::judge(&body, q))
        });
    answered(judged.err())
}

/// Resolves `target` through the policy and connects, within `timeout`.
async fn connect(
    policy: &Policy,
    kind: &str,
    target: &str,
    timeout: Duration,
) -> Result<(tokio::net::TcpStream, String), String> {
    let (host, port) = probe::host_port(kind, target)?;
    let secs = timeout.as_secs();
    let addrs: Vec<SocketAddr> =
        match tokio::time::timeout(timeout, tokio::net::lookup_host((host.as_str(), port))).await {
            Err(_) => return Err(format!("`{host}` did not resolve within {secs} s")),
            Ok(Err(e)) => return Err(format!("`{host}` does not resolve: {e}")),
            Ok(Ok(a)) => a.collect(),
        };
    let allowed: Vec<SocketAddr> = addrs
        .iter()
        .copied()
        .filter(|a| !policy.refuses(a.ip()))
        .collect();
    let Some(first) = allowed.first().copied() else {
        return Err(format!(
            "`{host}` resolves only to loopback, private or special-use addresses, which the hub does not call; allow a range with TRUSTHUB_OUTBOUND_ALLOW_CIDRS"
        ));
    };
    match tokio::time::timeout(timeout, tokio::net::TcpStream::connect(first)).await {
        Err(_) => Err(format!("timed out after {secs} s connecting to {first}")),
        Ok(Err(e)) => Err(format!("cannot connect to {first}: {e}")),
        Ok(Ok(s)) => Ok((s, host)),
    }
}

/// A tls handshake (system roots and `SSL_CERT_FILE`); the leaf certificate's expiry.
async fn tls(policy: &Policy, target: &str, timeout: Duration) -> Result<OffsetDateTime, String> {
    use rustls_platform_verifier::BuilderVerifierExt;
    let (stream, host) = connect(policy, "tls", target, timeout).await?;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = rustls::ClientConfig::builder()
        .with_platform_verifier()
        .map_err(|e| format!("no trust roots: {e}"))?
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
    let name = rustls_pki_types::ServerName::try_from(host.clone())
        .map_err(|_| format!("`{host}` is not a valid server name"))?;
    let secs = timeout.as_secs();
    let tls = match tokio::time::timeout(timeout, connector.connect(name, stream)).await {
        Err(_) => return Err(format!("the TLS handshake timed out after {secs} s")),
        Ok(Err(e)) => return Err(format!("TLS handshake failed: {e}")),
        Ok(Ok(s)) => s,
    };
    let (_, session) = tls.get_ref();
    let leaf = session
        .peer_certificates()
        .and_then(|c| c.first())
        .ok_or("the server sent no certificate")?;
    let (_, cert) = x509_parser::parse_x509_certificate(leaf.as_ref())
        .map_err(|e| format!("the certificate cannot be read: {e}"))?;
    Ok(cert.validity().not_after.to_datetime())
}
