//! Trusthub SDK for LLM traces (SPEC 2.11; CONTRACT 9).
//!
//! Configure a [`Client`] with the hub's URL, an API key (scope `ai_ingest`), the team (a tag
//! on every trace) and optionally the tenant's name (also a tag; the key decides the tenant).
//! Record calls in a [`Trace`]: prompts are redacted in this process (`core::redact`, the same
//! rules as the Python SDK) and only the SHA-256 of the redacted prompt leaves it; redacted
//! content only with [`Config::send_content`].
//!
//! Nothing blocks the host program or fails because of the hub: finished traces go into a
//! bounded buffer (a full buffer drops the new trace and counts it in [`Stats::dropped`]); a
//! background thread sends them in batches, retries with backoff while the hub is down or busy
//! (5xx, 429, no connection) and drops batches the hub refuses (other 4xx, counted). Dropping
//! the client flushes for up to [`Config::shutdown_timeout`].
//!
//! ```no_run
//! use trusthub_sdk::{Client, Config};
//! let client = Client::new(Config::new("http://127.0.0.1:8080", "tht_...", "search")).unwrap();
//! let mut trace = client.trace("answer");
//! let reply = trace.call("gpt-4o", "What is 2+2? Mail me at jane@example.com", |c| {
//!     // ... call the provider ...
//!     c.usage(900, 200);
//!     "4"
//! });
//! trace.end();
//! ```

use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use time::OffsetDateTime;
use trusthub_core::ai::Usage;

/// What the client needs.
#[derive(Debug, Clone)]
pub struct Config {
    /// Hub base URL, e.g. `https://hub.example.com`.
    pub hub_url: String,
    /// API token with scope `ai_ingest`.
    pub api_key: String,
    /// Team of every trace (also the tag `team:<team>`).
    pub team: String,
    /// Tenant name, sent as the tag `tenant:<name>` (the key decides the tenant).
    pub tenant: Option<String>,
    /// Send the redacted content of each call as a blob.
    pub send_content: bool,
    /// Most traces buffered.
    pub max_buffer: usize,
    /// Traces per request (at most 500).
    pub batch_size: usize,
    /// How long a trace may wait for a batch to fill.
    pub flush_interval: Duration,
    /// Per request.
    pub timeout: Duration,
    /// How long dropping the client waits for the buffer to drain.
    pub shutdown_timeout: Duration,
}

impl Config {
    /// Defaults: buffer 10,000 traces, batches of 100, every 2 s, 10 s per request, 5 s at
    /// shutdown, no content.
    pub fn new(hub_url: &str, api_key: &str, team: &str) -> Config {
        Config {
            hub_url: hub_url.trim_end_matches('/').to_owned(),
            api_key: api_key.to_owned(),
            team: team.to_owned(),
            tenant: None,
            send_content: false,
            max_buffer: 10_000,
            batch_size: 100,
            flush_interval: Duration::from_secs(2),
            timeout: Duration::from_secs(10),
            shutdown_timeout: Duration::from_secs(5),
        }
    }
}

/// What happened to the traces so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Accepted by the hub.
    pub sent: u64,
    /// Lost: buffer full, refused by the hub, or left at shutdown.
    pub dropped: u64,
    /// Waiting or being sent.
    pub pending: u64,
}

/// A trace as it goes on the wire, and its blobs.
type Item = (Value, Vec<Value>);

#[derive(Default)]
struct Queue {
    items: VecDeque<Item>,
    inflight: usize,
    closed: bool,
    /// A [`Client::flush`] is waiting: send without waiting for a full batch.
    flushing: bool,
    /// When the waiting traces are due even if no batch filled up.
    due: Option<Instant>,
    /// Backing off after a failure: nothing goes out before.
    not_before: Option<Instant>,
    sent: u64,
    dropped: u64,
    last_error: Option<String>,
}

struct Shared {
    q: Mutex<Queue>,
    cv: Condvar,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        // A panic elsewhere must not stop the host program from recording.
        self.q.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Why a client could not start.
#[derive(Debug)]
pub struct Error(pub String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

/// Records traces and sends them in the background.
pub struct Client {
    cfg: Arc<Config>,
    shared: Arc<Shared>,
    worker: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("hub_url", &self.cfg.hub_url)
            .field("team", &self.cfg.team)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Starts the sender thread.
    pub fn new(cfg: Config) -> Result<Client, Error> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .timeout(cfg.timeout)
            .user_agent(concat!("trusthub-sdk-rust/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| Error(format!("HTTP client: {e}")))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error(format!("runtime: {e}")))?;
        let cfg = Arc::new(cfg);
        let shared = Arc::new(Shared {
            q: Mutex::new(Queue::default()),
            cv: Condvar::new(),
        });
        let (c, s) = (cfg.clone(), shared.clone());
        let worker = std::thread::Builder::new()
            .name("trusthub-sdk".into())
            .spawn(move || runtime.block_on(run(c, s, http)))
            .map_err(|e| Error(format!("thread: {e}")))?;
        Ok(Client {
            cfg,
            shared,
            worker: Some(worker),
        })
    }

    /// Starts a trace; it is sent when [`Trace::end`] is called or it is dropped.
    pub fn trace(&self, name: &str) -> Trace<'_> {
        Trace {
            client: self,
            trace_id: uuid::Uuid::new_v4().simple().to_string(),
            name: name.to_owned(),
            tags: Vec::new(),
            app_id: None,
            started_at: OffsetDateTime::now_utc(),
            calls: Vec::new(),
            ended: false,
        }
    }

    fn enqueue(&self, item: Item) -> bool {
        let mut q = self.shared.lock();
        if q.closed || q.items.len() >= self.cfg.max_buffer {
            q.dropped += 1;
            return false;
        }
        if q.items.is_empty() {
            q.due = Some(Instant::now() + self.cfg.flush_interval);
        }
        q.items.push_back(item);
        if q.items.len() >= self.cfg.batch_size {
            self.shared.cv.notify_all();
        }
        true
    }

    /// Counts so far.
    pub fn stats(&self) -> Stats {
        let q = self.shared.lock();
        Stats {
            sent: q.sent,
            dropped: q.dropped,
            pending: (q.items.len() + q.inflight) as u64,
        }
    }

    /// The last error the sender met (for logs).
    pub fn last_error(&self) -> Option<String> {
        self.shared.lock().last_error.clone()
    }

    /// Waits until everything buffered was sent or refused; false on timeout.
    pub fn flush(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut q = self.shared.lock();
        loop {
            if q.items.is_empty() && q.inflight == 0 {
                q.flushing = false;
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                q.flushing = false;
                return false;
            }
            q.flushing = true;
            self.shared.cv.notify_all();
            q = self
                .shared
                .cv
                .wait_timeout(q, left.min(Duration::from_millis(50)))
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let drained = self.flush(self.cfg.shutdown_timeout);
        {
            let mut q = self.shared.lock();
            q.closed = true;
            q.dropped += q.items.len() as u64;
            q.items.clear();
            self.shared.cv.notify_all();
        }
        // An idle sender ends at once; one still in a request to an unresponsive hub is left
        // to end on its own rather than hold the host program past `shutdown_timeout`.
        if let Some(w) = self.worker.take()
            && drained
        {
            let _ = w.join();
        }
    }
}

/// Waits until a batch is due: full, its oldest trace waited `flush_interval`, a flush is
/// asked for, or the client closes; never while backing off. `None` when closed and empty.
fn next_batch(cfg: &Config, shared: &Shared) -> Option<Vec<Item>> {
    let batch_size = cfg.batch_size.clamp(1, 500);
    let mut q = shared.lock();
    loop {
        if q.closed && q.items.is_empty() {
            return None;
        }
        let now = Instant::now();
        let backing_off = q.not_before.is_some_and(|t| now < t);
        let due = q.closed
            || q.flushing
            || q.items.len() >= batch_size
            || q.due.is_some_and(|t| now >= t);
        if !q.items.is_empty() && !backing_off && due {
            break;
        }
        let wake = match (backing_off, q.due) {
            (true, _) => q.not_before,
            (false, Some(t)) if !q.items.is_empty() => Some(t),
            _ => None,
        };
        let wait = wake
            .map(|t| t.saturating_duration_since(now))
            .unwrap_or(cfg.flush_interval)
            .max(Duration::from_millis(1));
        q = shared
            .cv
            .wait_timeout(q, wait)
            .map(|(g, _)| g)
            .unwrap_or_else(|e| e.into_inner().0);
    }
    let n = q.items.len().min(batch_size);
    let batch: Vec<Item> = q.items.drain(..n).collect();
    // What is left waited as long as this batch: it goes next.
    q.due = (!q.items.is_empty()).then(Instant::now);
    q.inflight = batch.len();
    Some(batch)
}

async fn run(cfg: Arc<Config>, shared: Arc<Shared>, http: reqwest::Client) {
    let url = format!("{}/api/v1/ai/traces", cfg.hub_url);
    let mut backoff = Duration::from_millis(500);
    while let Some(batch) = next_batch(&cfg, &shared) {
        let outcome = send(&http, &url, &cfg.api_key, &batch).await;
        let mut q = shared.lock();
        q.inflight = 0;
        match outcome {
            Outcome::Sent => {
                q.sent += batch.len() as u64;
                backoff = Duration::from_millis(500);
                q.not_before = None;
            }
            Outcome::Refused(why) => {
                q.dropped += batch.len() as u64;
                q.last_error = Some(why);
            }
            Outcome::Retry(why) => {
                q.last_error = Some(why);
                for item in batch.into_iter().rev() {
                    if q.items.len() < cfg.max_buffer {
                        q.items.push_front(item);
                    } else {
                        q.dropped += 1;
                    }
                }
                q.due = Some(Instant::now());
                q.not_before = Some(Instant::now() + backoff);
                backoff = (backoff * 2).min(Duration::from_secs(30));
            }
        }
        shared.cv.notify_all();
    }
}

enum Outcome {
    Sent,
    Refused(String),
    Retry(String),
}

async fn send(http: &reqwest::Client, url: &str, key: &str, batch: &[Item]) -> Outcome {
    let mut blobs = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (_, bs) in batch {
        for b in bs {
            if seen.insert(b["sha256"].to_string()) {
                blobs.push(b.clone());
            }
        }
    }
    let traces: Vec<&Value> = batch.iter().map(|(t, _)| t).collect();
    let body = json!({"traces": traces, "blobs": blobs});
    match http.post(url).bearer_auth(key).json(&body).send().await {
        Ok(r) if r.status().is_success() => Outcome::Sent,
        Ok(r) => {
            let status = r.status();
            let text = r.text().await.unwrap_or_default();
            let why = format!(
                "HTTP {status}: {}",
                text.chars().take(2000).collect::<String>()
            );
            if status.as_u16() == 429 || status.is_server_error() {
                Outcome::Retry(why)
            } else {
                Outcome::Refused(why)
            }
        }
        Err(e) => Outcome::Retry(e.to_string()),
    }
}

/// One LLM call while it runs: set what the provider answered.
#[derive(Debug, Default)]
pub struct CallRecord {
    usage: Usage,
    refused: bool,
    content: Option<String>,
    provider: Option<String>,
}

impl CallRecord {
    /// Input and output tokens.
    pub fn usage(&mut self, prompt_tokens: u64, completion_tokens: u64) -> &mut Self {
        self.usage.prompt_tokens = prompt_tokens;
        self.usage.completion_tokens = completion_tokens;
        self
    }

    /// Every token kind (cache reads and writes are parts of the prompt, reasoning part of
    /// the completion).
    pub fn usage_detail(&mut self, usage: Usage) -> &mut Self {
        self.usage = usage;
        self
    }

    /// The model refused.
    pub fn refused(&mut self, refused: bool) -> &mut Self {
        self.refused = refused;
        self
    }

    /// Content to send redacted (with `send_content`); the redacted prompt otherwise.
    pub fn content(&mut self, text: &str) -> &mut Self {
        self.content = Some(text.to_owned());
        self
    }

    /// Provider name.
    pub fn provider(&mut self, name: &str) -> &mut Self {
        self.provider = Some(name.to_owned());
        self
    }
}

/// A finished call as recorded.
#[derive(Debug, Clone)]
struct CallDone {
    model: String,
    prompt_sha256: String,
    redacted_prompt: String,
    latency_ms: u64,
    record_usage: Usage,
    refused: bool,
    content: Option<String>,
    provider: Option<String>,
}

/// A unit of work with zero or more LLM calls.
#[derive(Debug)]
pub struct Trace<'c> {
    client: &'c Client,
    trace_id: String,
    name: String,
    tags: Vec<String>,
    app_id: Option<String>,
    started_at: OffsetDateTime,
    calls: Vec<CallDone>,
    ended: bool,
}

impl Trace<'_> {
    /// Adds a tag.
    pub fn tag(&mut self, tag: &str) -> &mut Self {
        self.tags.push(tag.to_owned());
        self
    }

    /// Attaches the trace to an app of the tenant (its id).
    pub fn app(&mut self, app_id: &str) -> &mut Self {
        self.app_id = Some(app_id.to_owned());
        self
    }

    /// Wraps an LLM call: measures its latency, redacts and hashes `prompt`; `f` fills in the
    /// usage from the provider's answer.
    pub fn call<T>(
        &mut self,
        model: &str,
        prompt: &str,
        f: impl FnOnce(&mut CallRecord) -> T,
    ) -> T {
        let started = Instant::now();
        let mut rec = CallRecord::default();
        let out = f(&mut rec);
        let latency_ms = started.elapsed().as_millis() as u64;
        self.record(model, prompt, latency_ms, rec);
        out
    }

    /// Records a call made elsewhere.
    pub fn record(&mut self, model: &str, prompt: &str, latency_ms: u64, rec: CallRecord) {
        let redacted = trusthub_core::redact::redact(prompt).text;
        self.calls.push(CallDone {
            model: model.to_owned(),
            prompt_sha256: trusthub_core::evidence::sha256_hex(redacted.as_bytes()),
            redacted_prompt: redacted,
            latency_ms,
            record_usage: rec.usage,
            refused: rec.refused,
            content: rec.content,
            provider: rec.provider,
        });
    }

    /// Ends the trace and hands it to the sender (never blocks). False when it was dropped
    /// (buffer full).
    pub fn end(mut self) -> bool {
        self.finish()
    }

    fn finish(&mut self) -> bool {
        if self.ended {
            return true;
        }
        self.ended = true;
        let cfg = &self.client.cfg;
        let fmt = |t: OffsetDateTime| {
            t.format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default()
        };
        let mut blobs = Vec::new();
        let calls: Vec<Value> = self
            .calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut v = json!({
                    "span_id": format!("{}-{i}", &self.trace_id[..24]),
                    "model": c.model,
                    "prompt_tokens": c.record_usage.prompt_tokens,
                    "completion_tokens": c.record_usage.completion_tokens,
                    "cache_read_tokens": c.record_usage.cache_read_tokens,
                    "cache_write_tokens": c.record_usage.cache_write_tokens,
                    "reasoning_tokens": c.record_usage.reasoning_tokens,
                    "latency_ms": c.latency_ms,
                    "prompt_sha256": c.prompt_sha256,
                    "refused": c.refused,
                });
                if let Some(p) = &c.provider {
                    v["provider"] = json!(p);
                }
                if cfg.send_content {
                    let text = match &c.content {
                        Some(t) => trusthub_core::redact::redact(t).text,
                        None => c.redacted_prompt.clone(),
                    };
                    let hash = trusthub_core::evidence::sha256_hex(text.as_bytes());
                    v["content_sha256"] = json!(hash);
                    blobs.push(json!({"sha256": hash, "text": text}));
                }
                v
            })
            .collect();
        let mut tags = vec![format!("team:{}", cfg.team)];
        if let Some(t) = &cfg.tenant {
            tags.push(format!("tenant:{t}"));
        }
        tags.extend(self.tags.iter().cloned());
        let mut trace = json!({
            "trace_id": self.trace_id,
            "name": self.name,
            "team": cfg.team,
            "started_at": fmt(self.started_at),
            "ended_at": fmt(OffsetDateTime::now_utc().max(self.started_at)),
            "tags": tags,
            "calls": calls,
        });
        if let Some(a) = &self.app_id {
            trace["app_id"] = json!(a);
        }
        self.client.enqueue((trace, blobs))
    }
}

impl Drop for Trace<'_> {
    fn drop(&mut self) {
        self.finish();
    }
}
