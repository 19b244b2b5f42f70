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

/// One check.
pub async fn check(client: &reqwest::Client, c: &HttpCheck) -> AppCheck {
    let checked_at = OffsetDateTime::now_utc();
    let started = Instant::now();
    let outcome = client.get(&c.endpoint).send().await;
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
