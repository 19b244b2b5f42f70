//! HTTP checks of the host's `http` apps: the hub names them in its answer to each batch
//! (`http_checks`); the agent runs each at its interval from this host and sends the results
//! in the next batch's `app_checks`. 2xx and 3xx within the timeout count as up; redirects
//! are not followed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use time::OffsetDateTime;
use trusthub_core::agent::{AppCheck, HttpCheck};
use uuid::Uuid;

/// Most results kept while the hub is unreachable (oldest dropped).
const MAX_PENDING: usize = 1000;
/// Longest a check may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// The checks to run and the results not yet sent.
#[derive(Debug, Clone, Default)]
pub struct Checks {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug, Default)]
struct Inner {
    wanted: Vec<HttpCheck>,
    next: HashMap<Uuid, Instant>,
    results: Vec<AppCheck>,
}

impl Checks {
    /// Replaces the list with what the hub asks for now.
    pub fn set(&self, wanted: Vec<HttpCheck>) {
        if let Ok(mut g) = self.inner.lock() {
            let ids: Vec<Uuid> = wanted.iter().map(|c| c.app_id).collect();
            g.next.retain(|id, _| ids.contains(id));
            g.wanted = wanted;
        }
    }

    /// Takes the results gathered since the last call.
    pub fn take_results(&self) -> Vec<AppCheck> {
        self.inner
            .lock()
            .map(|mut g| std::mem::take(&mut g.results))
            .unwrap_or_default()
    }

    fn due(&self, now: Instant) -> Vec<HttpCheck> {
        let Ok(mut g) = self.inner.lock() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for c in g.wanted.clone() {
            let next = g.next.get(&c.app_id).copied();
            if next.is_none_or(|n| n <= now) {
                let every = Duration::from_secs(c.interval_seconds.max(1) as u64);
                g.next.insert(c.app_id, now + every);
                out.push(c);
            }
        }
        out
    }

    fn push(&self, r: AppCheck) {
        if let Ok(mut g) = self.inner.lock() {
            if g.results.len() >= MAX_PENDING {
                g.results.remove(0);
            }
            g.results.push(r);
        }
    }

    /// Runs due checks every second, forever.
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
            for c in self.due(Instant::now()) {
                let me = self.clone();
                let client = client.clone();
                tokio::spawn(async move { me.push(check(&client, &c).await) });
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
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

/// One check.
pub async fn check(client: &reqwest::Client, c: &HttpCheck) -> AppCheck {
    let checked_at = OffsetDateTime::now_utc();
    let started = Instant::now();
    // Never a link-local or cloud-metadata address, whatever the hub asked (CONTRACT 18):
    // a literal one here, a name that resolves to one in the client's resolver.
    let literal = reqwest::Url::parse(&c.endpoint)
        .ok()
        .and_then(|u| u.host_str().and_then(trusthub_core::apps::literal_host_ip));
    let outcome = match literal {
        Some(ip) if trusthub_core::apps::metadata_address(ip) => {
            return AppCheck {
                app_id: c.app_id,
                checked_at,
                ok: false,
                status_code: None,
                latency_ms: Some(0),
                error: Some(format!(
                    "{ip} is a link-local or cloud-metadata address; the agent does not check it"
                )),
            };
        }
        _ => client.get(&c.endpoint).send().await,
    };
    let latency_ms = Some(started.elapsed().as_millis().min(u128::from(u64::MAX)) as u64);
    match outcome {
        Ok(resp) => {
            let code = resp.status().as_u16();
            let ok = (200..400).contains(&code);
            AppCheck {
                app_id: c.app_id,
                checked_at,
                ok,
                status_code: Some(code),
                latency_ms,
                error: (!ok).then(|| format!("HTTP {code}")),
            }
        }
        Err(e) => AppCheck {
            app_id: c.app_id,
            checked_at,
            ok: false,
            status_code: None,
            latency_ms,
            error: Some(if e.is_timeout() {
                "timed out".to_owned()
            } else if e.is_connect() {
                "cannot connect".to_owned()
            } else {
                "request failed".to_owned()
            }),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
