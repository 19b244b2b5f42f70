//! Checks run from this host — http, dns and ping (CONTRACT 32): the hub names them in its
//! answer to each batch (`http_checks`); the agent runs each at its interval and sends the
//! results in the next batch's `app_checks`. Each is judged as the hub judges its own checks:
//! the accepted statuses (`200-399` unless the check says), the keyword, the JSON assertion,
//! a dns answer's expected values, the timeout, the same words for a failure; redirects are
//! not followed. The dns and ping probes are the hub's own (`trusthub_probe`); this host's
//! guard refuses link-local and cloud-metadata addresses (CONTRACT 18).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use time::OffsetDateTime;
use trusthub_core::agent::{AppCheck, HttpCheck};
use trusthub_core::probe;
use uuid::Uuid;

/// Most results kept while the hub is unreachable (oldest dropped).
const MAX_PENDING: usize = 1000;
/// Longest a check may take, whatever the hub asks.
const TIMEOUT: Duration = Duration::from_secs(60);

/// The checks to run and the results not yet sent.
#[derive(Debug, Clone, Default)]
pub struct Checks {
    inner: Arc<Mutex<Inner>>,
    /// Told when a result must reach the hub soon: a failure, or the first success after
    /// one (so a dead URL alerts after its own failures, not after push intervals).
    pub urgent: Arc<tokio::sync::Notify>,
    /// Told when the list changes (the runner sleeps until the next check is due).
    changed: Arc<tokio::sync::Notify>,
}

#[derive(Debug, Default)]
struct Inner {
    wanted: Vec<HttpCheck>,
    next: HashMap<Uuid, Instant>,
    results: Vec<AppCheck>,
    /// Each check's last outcome.
    last_ok: HashMap<Uuid, bool>,
}

impl Checks {
    /// Replaces the list with what the hub asks for now.
    pub fn set(&self, wanted: Vec<HttpCheck>) {
        if let Ok(mut g) = self.inner.lock() {
            let ids: Vec<Uuid> = wanted.iter().map(|c| c.app_id).collect();
            g.next.retain(|id, _| ids.contains(id));
            g.last_ok.retain(|id, _| ids.contains(id));
            if g.wanted != wanted {
                g.wanted = wanted;
                self.changed.notify_one();
            }
        }
    }

    /// Takes the results gathered since the last call.
    pub fn take_results(&self) -> Vec<AppCheck> {
        self.inner
            .lock()
            .map(|mut g| std::mem::take(&mut g.results))
            .unwrap_or_default()
    }

    /// The checks due at `now` (each then scheduled an interval on), and when the next one
    /// falls due (`None`: no checks).
    fn due(&self, now: Instant) -> (Vec<HttpCheck>, Option<Instant>) {
        let Ok(mut g) = self.inner.lock() else {
            return (Vec::new(), None);
        };
        let mut out = Vec::new();
        let mut soonest: Option<Instant> = None;
        for c in g.wanted.clone() {
            let mut next = g.next.get(&c.app_id).copied().unwrap_or(now);
            if next <= now {
                let every = Duration::from_secs(c.interval_seconds.max(1) as u64);
                next = now + every;
                g.next.insert(c.app_id, next);
                out.push(c);
            }
            soonest = Some(soonest.map_or(next, |s| s.min(next)));
        }
        (out, soonest)
    }

    fn push(&self, r: AppCheck) {
        let urgent = match self.inner.lock() {
            Ok(mut g) => {
                let was = g.last_ok.insert(r.app_id, r.ok);
                if g.results.len() >= MAX_PENDING {
                    g.results.remove(0);
                }
                g.results.push(r);
                let ok = g.results.last().is_some_and(|r| r.ok);
                !ok || was == Some(false)
            }
            Err(_) => false,
        };
        if urgent {
            self.urgent.notify_one();
        }
    }

    /// Runs each check when it falls due, forever.
    pub async fn run(self) {
        let client = match reqwest::Client::builder()
            .timeout(TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .dns_resolver(std::sync::Arc::new(NoMetadata))
            .user_agent(concat!(
                "trusthub-agent/",
                env!("CARGO_PKG_VERSION"),
                " (health check)"
            ))
            .build()
        {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(error = %e, "cannot build the HTTP client for app checks");
                return;
            }
        };
        loop {
            let (due, next) = self.due(Instant::now());
            for c in due {
                let me = self.clone();
                let client = client.clone();
                tokio::spawn(async move { me.push(check(&client, &c).await) });
            }
            // Asleep until the next check is due or the list changes: a host without checks
            // is not woken every second (issue 63, the agent's idle cost).
            let until = next.unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
            tokio::select! {
                _ = tokio::time::sleep_until(until.into()) => {}
                _ = self.changed.notified() => {}
            }
        }
    }
}

/// The checks' resolver: a name that resolves only to link-local or cloud-metadata
/// addresses fails the check (CONTRACT 18); those addresses are dropped from any answer.
#[derive(Debug)]
struct NoMetadata;

impl reqwest::dns::Resolve for NoMetadata {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs: Vec<std::net::SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .filter(|a| !trusthub_core::apps::metadata_address(a.ip()))
                .collect();
            if addrs.is_empty() {
                return Err(format!(
                    "`{host}` resolves only to link-local or cloud-metadata addresses, which the agent does not check"
                )
                .into());
            }
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// Why this host's checks do not call `ip`: link-local and cloud-metadata addresses.
fn guard(ip: std::net::IpAddr) -> Result<(), String> {
    match trusthub_core::apps::metadata_address(ip) {
        false => Ok(()),
        true => Err(format!(
            "{ip} is a link-local or cloud-metadata address, which the agent does not check"
        )),
    }
}

/// One check, judged as the hub judges its own (CONTRACT 33): the accepted statuses, the
/// keyword in the body's first MiB, the timeout, and the same words for each failure; a
/// `dns://` or `icmp://` endpoint is a dns or ping check.
pub async fn check(client: &reqwest::Client, c: &HttpCheck) -> AppCheck {
    let checked_at = OffsetDateTime::now_utc();
    let started = Instant::now();
    let result = |status_code: Option<u16>, error: Option<String>| AppCheck {
        app_id: c.app_id,
        checked_at,
        ok: error.is_none(),
        status_code,
        latency_ms: Some(started.elapsed().as_millis().min(u128::from(u64::MAX)) as u64),
        error,
    };
    let timeout = Duration::from_secs(
        c.timeout_seconds
            .unwrap_or(probe::DEFAULT_TIMEOUT_SECS)
            .clamp(1, 60) as u64,
    );
    if c.endpoint.starts_with("dns://") {
        let expected = c.expected.clone().unwrap_or_default();
        let asked = trusthub_probe::dns::lookup(&guard, &c.endpoint, &expected, timeout).await;
        return result(None, asked.err());
    }
    if c.endpoint.starts_with("icmp://") {
        let host = match trusthub_core::apps::icmp_host(&c.endpoint) {
            Ok(h) => h,
            Err(e) => return result(None, Some(e)),
        };
        return match trusthub_probe::ping::echo(&guard, &host, timeout).await {
            Ok(rtt) => AppCheck {
                latency_ms: Some(rtt.as_millis().min(u128::from(u64::MAX)) as u64),
                ..result(None, None)
            },
            Err(e) => result(None, Some(e)),
        };
    }
    // Never a link-local or cloud-metadata address, whatever the hub asked (CONTRACT 18):
    // a literal one here, a name that resolves to one in the client's resolver.
    let literal = reqwest::Url::parse(&c.endpoint)
        .ok()
        .and_then(|u| u.host_str().and_then(trusthub_core::apps::literal_host_ip));
    if let Some(ip) = literal.filter(|ip| trusthub_core::apps::metadata_address(*ip)) {
        let why =
            format!("{ip} is a link-local or cloud-metadata address; the agent does not check it");
        return result(None, Some(why));
    }
    let secs = timeout.as_secs();
    let send = client.get(&c.endpoint).timeout(timeout).send();
    let mut resp = match tokio::time::timeout(timeout, send).await {
        Err(_) => return result(None, Some(probe::request_failure(true, "", secs))),
        Ok(Err(e)) => {
            let why = probe::request_failure(e.is_timeout(), &probe::innermost(&e), secs);
            return result(None, Some(why));
        }
        Ok(Ok(r)) => r,
    };
    let status = resp.status().as_u16();
    if let Err(e) = probe::judge_status(status, c.expected_status.as_deref()) {
        return result(Some(status), Some(e));
    }
    let keyword = c.keyword.as_deref().filter(|k| !k.is_empty());
    if keyword.is_none() && c.json_query.is_none() {
        return result(Some(status), None);
    }
    // At most MAX_BODY bytes are held, whatever the server sends.
    let mut body: Vec<u8> = Vec::new();
    while body.len() < probe::MAX_BODY {
        match tokio::time::timeout(timeout, resp.chunk()).await {
            Ok(Ok(Some(chunk))) => body.extend_from_slice(&chunk),
            Ok(Ok(None)) => break,
            Ok(Err(e)) => {
                let why = format!("the body could not be read: {}", probe::innermost(&e));
                return result(Some(status), Some(why));
            }
            Err(_) => {
                let why = format!("the body did not arrive within {secs} s");
                return result(Some(status), Some(why));
            }
        }
    }
    let judged = keyword
        .map_or(Ok(()), |k| probe::judge_body(&body, k))
        .and_then(|()| {
            c.json_query
                .as_ref()
                .map_or(Ok(()), |q| trusthub_core::json_query::judge(&body, q))
        });
    result(Some(status), judged.err())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A server that answers every connection with `answer` (or never, when it is empty).
    async fn serve(answer: &'static str) -> String {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}/health", l.local_addr().expect("addr"));
        tokio::spawn(async move {
            while let Ok((mut s, _)) = l.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 1024];
                    let _ = s.read(&mut buf).await;
                    if answer.is_empty() {
                        tokio::time::sleep(Duration::from_secs(30)).await;
                    }
                    let _ = s.write_all(answer.as_bytes()).await;
                });
            }
        });
        url
    }

    fn wanted(endpoint: &str, expected: Option<&str>, keyword: Option<&str>) -> HttpCheck {
        HttpCheck {
            app_id: uuid::Uuid::new_v4(),
            endpoint: endpoint.into(),
            interval_seconds: 10,
            timeout_seconds: Some(1),
            expected_status: expected.map(str::to_owned),
            keyword: keyword.map(str::to_owned),
            json_query: None,
            expected: None,
        }
    }

    #[tokio::test]
    async fn checks_are_judged_and_worded_as_the_hubs_own() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::new();
        let down = serve("HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\n\r\n").await;
        let up = serve("HTTP/1.1 200 OK\r\ncontent-length: 8\r\n\r\nall good").await;
        let silent = serve("").await;
        let r = check(&client, &wanted(&down, None, None)).await;
        assert_eq!((r.ok, r.status_code), (false, Some(503)));
        assert_eq!(r.error.as_deref(), Some("HTTP 503, expected 200-399"));
        let r = check(&client, &wanted(&down, Some("503"), None)).await;
        assert!(r.ok, "{r:?}");
        let r = check(&client, &wanted(&up, None, Some("good"))).await;
        assert!(r.ok, "{r:?}");
        let r = check(&client, &wanted(&up, None, Some("healthy"))).await;
        assert_eq!(
            r.error.as_deref(),
            Some("keyword `healthy` not found in the body")
        );
        let r = check(&client, &wanted(&silent, None, None)).await;
        assert_eq!(r.error.as_deref(), Some("timed out after 1 s"));
        // A JSON assertion (CONTRACT 32), in the hub's words.
        let json =
            serve("HTTP/1.1 200 OK\r\ncontent-length: 26\r\n\r\n{\"db\":{\"ok\":true,\"lag\":7}}")
                .await;
        let query = |path: &str, op: &str, value: serde_json::Value| HttpCheck {
            json_query: Some(trusthub_core::json_query::JsonQuery {
                path: path.into(),
                op: op.into(),
                value,
            }),
            ..wanted(&json, None, None)
        };
        let r = check(&client, &query("$.db.ok", "==", serde_json::json!(true))).await;
        assert!(r.ok, "{r:?}");
        let r = check(&client, &query("$.db.lag", "<", serde_json::json!(5))).await;
        assert_eq!(r.error.as_deref(), Some("`$.db.lag` is 7, expected < 5"));
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            format!("http://{}/", l.local_addr().expect("addr"))
        };
        let r = check(&client, &wanted(&closed, None, None)).await;
        let e = r.error.unwrap_or_default();
        assert!(
            e.starts_with("cannot connect: ") && e.contains("refused"),
            "{e}"
        );
    }

    #[tokio::test]
    async fn a_failure_or_a_recovery_asks_for_a_push_now() {
        let checks = Checks::default();
        let id = uuid::Uuid::new_v4();
        let result = |ok: bool| AppCheck {
            app_id: id,
            checked_at: OffsetDateTime::now_utc(),
            ok,
            status_code: None,
            latency_ms: None,
            error: None,
        };
        let urgent = checks.urgent.clone();
        let told = || async {
            tokio::time::timeout(Duration::from_millis(50), urgent.notified())
                .await
                .is_ok()
        };
        checks.push(result(true));
        assert!(!told().await, "a success waits for the next push");
        checks.push(result(false));
        assert!(told().await, "a failure goes now");
        checks.push(result(true));
        assert!(told().await, "so does the recovery");
        checks.push(result(true));
        assert!(!told().await);
        assert_eq!(checks.take_results().len(), 4);
    }

    #[tokio::test]
    async fn metadata_addresses_are_never_checked_in_any_spelling() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::new();
        for endpoint in [
            "http://169.254.169.254/latest/meta-data",
            "http://2852039166/",
            "http://[fd00:ec2::254]/",
            "http://[::ffff:a9fe:a9fe]/",
        ] {
            let r = check(
                &client,
                &HttpCheck {
                    app_id: uuid::Uuid::new_v4(),
                    endpoint: endpoint.into(),
                    interval_seconds: 30,
                    timeout_seconds: None,
                    expected_status: None,
                    keyword: None,
                    json_query: None,
                    expected: None,
                },
            )
            .await;
            assert!(!r.ok, "{endpoint}");
            assert!(
                r.error.as_deref().is_some_and(|e| e.contains("metadata")),
                "{endpoint}: {:?}",
                r.error
            );
        }
    }
}
