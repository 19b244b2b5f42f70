//! Forwarding (CONTRACT 26): one loop per receiver that reads the metric log after the
//! receiver's stored position, sends what was stored there as remote-write requests, and
//! moves the position only when the receiver accepted them (or refused them for good).
//!
//! At least once: a request is sent before its position is saved, so a hub stopped between
//! the two sends it again. 5xx, 429 and network errors are retried with backoff (1 s,
//! doubling, capped at 60 s) without moving on; another 4xx drops the request (counted and
//! logged) and moves on. With several hub processes, the one holding the receiver's lease
//! sends; another takes over when it stops renewing.

use crate::store;
use crate::wire::{Body, Request, label_bytes, tag_label};
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use trusthub_fleet::metric_log::{self, AgentLabels, Committed, Handoff, LogPosition, StoredPoint};
use trusthub_platform::AppState;
use trusthub_store::StoreResult;

/// Samples in one request at most.
mod userinfo;
pub(crate) use userinfo::{Credentials, split_userinfo};

pub const MAX_SAMPLES_PER_REQUEST: usize = 10_000;
/// Log rows read in one round at most.
const ROUND_ROWS: i64 = 256;
/// Most points of the transactions handed over in memory that one round takes together.
const ROUND_POINTS: usize = 50_000;
/// Longest wait between retries.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// Longest wait for the ingest writer's next commit (then the log is looked at) when
/// everything was sent.
const IDLE: Duration = Duration::from_millis(250);
/// The position is saved at most this often while sending (and when nothing came to send
/// for [`IDLE`] after catching up, or a request failed): each save is a write transaction
/// beside the ingest writer's. A hub stopped between two saves sends at most this much again.
const SAVE_EVERY: Duration = Duration::from_secs(1);
/// A lease is renewed this often, and held for three times as long.
const LEASE_RENEW: Duration = Duration::from_secs(5);
/// Points handed over in memory and not sent yet, per receiver, at most (≈ 32 bytes each).
/// Past that, handed-over points are dropped and read back from the log instead.
const MAX_QUEUED_POINTS: usize = 1_000_000;
/// Transactions handed over in memory and not sent yet, per receiver, at most.
const MAX_QUEUED: usize = 256;
/// Once caught up, a round waits for the transactions handed over in memory until they hold
/// this many points ...
const GATHER_POINTS: usize = MAX_SAMPLES_PER_REQUEST;
/// ... or the oldest of them is this old: one request for many commits at a low rate, not a
/// request (and a wake-up of the sender) per commit.
const GATHER: Duration = Duration::from_millis(100);

/// The receivers of this hub (empty: forwarding is off), a part of the state.
#[derive(Debug, Default)]
pub struct RemoteWrite {
    /// Each configured receiver, in the order given.
    pub receivers: Vec<Arc<Receiver>>,
}

/// How a receiver is authenticated.
#[derive(Debug, Clone, PartialEq)]
enum Auth {
    None,
    Bearer(String),
    Basic(String, Option<String>),
}

/// One receiver and what this process did with it.
#[derive(Debug)]
pub struct Receiver {
    /// Its URL without userinfo: the `url` label and the key of its position.
    pub label: String,
    auth: Auth,
    /// What was sent, retried and dropped, and the lag.
    pub figures: Figures,
    queue: Queue,
}

/// What the ingest writer handed over in memory (SQLite): the points of each committed
/// transaction, so that the sender need not read them back. The log stays the truth: a
/// transaction dropped here (queue full, or this process not sending) is read from the log.
#[derive(Debug)]
struct Queue {
    tx: mpsc::Sender<Arc<Committed>>,
    rx: Mutex<Option<mpsc::Receiver<Arc<Committed>>>>,
    /// Points in the queue and not sent yet.
    points: AtomicUsize,
    /// Transactions not queued because the queue was full (they are read from the log).
    dropped: AtomicU64,
}

impl Queue {
    fn new() -> Queue {
        let (tx, rx) = mpsc::channel(MAX_QUEUED);
        Queue {
            tx,
            rx: Mutex::new(Some(rx)),
            points: AtomicUsize::new(0),
            dropped: AtomicU64::new(0),
        }
    }

    fn offer(&self, c: &Arc<Committed>) {
        let n = c.points.len();
        if self.points.fetch_add(n, Ordering::Relaxed) + n > MAX_QUEUED_POINTS
            || self.tx.try_send(c.clone()).is_err()
        {
            self.points.fetch_sub(n, Ordering::Relaxed);
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A receiver's figures in this process.
#[derive(Debug, Default)]
pub struct Figures {
    /// Samples the receiver accepted.
    pub sent: AtomicU64,
    /// Samples of requests that failed and will be sent again.
    pub retried: AtomicU64,
    /// Samples of requests the receiver refused for good (a 4xx other than 429).
    pub dropped: AtomicU64,
    /// Age of the oldest stored sample it has not accepted yet, in milliseconds.
    pub lag_ms: AtomicI64,
    /// When it last accepted a request (unix milliseconds; 0: not yet).
    pub last_sent_at: AtomicI64,
    /// Samples taken for sending as the ingest writer handed them over in memory.
    pub from_memory: AtomicU64,
    /// Samples taken for sending by reading them back from the metric log.
    pub from_log: AtomicU64,
    /// Whether this process is the one sending to it (holds its lease).
    pub sending: AtomicBool,
    /// The last failure, cleared by the next success.
    pub last_error: Mutex<Option<String>>,
}

impl Figures {
    fn fail(&self, why: String) {
        if let Ok(mut e) = self.last_error.lock() {
            *e = Some(why);
        }
    }

    /// The last failure, if the last request failed.
    pub fn last_error(&self) -> Option<String> {
        self.last_error.lock().ok().and_then(|e| e.clone())
    }
}

impl RemoteWrite {
    /// The receivers of `TRUSTHUB_REMOTE_WRITE_URL` and `TRUSTHUB_REMOTE_WRITE_BEARER`:
    /// `http`/`https` URLs; a URL's userinfo is its basic auth and wins over the bearer.
    pub fn from_settings(urls: &[String], bearer: Option<&str>) -> Result<RemoteWrite, String> {
        let mut receivers: Vec<Arc<Receiver>> = Vec::new();
        for raw in urls.iter().map(|u| u.trim()).filter(|u| !u.is_empty()) {
            let (label, basic) =
                split_userinfo(raw).map_err(|e| format!("TRUSTHUB_REMOTE_WRITE_URL: {e}"))?;
            let auth = match (basic, bearer.map(str::trim).filter(|b| !b.is_empty())) {
                (Some((user, password)), _) => Auth::Basic(user, password),
                (None, Some(b)) => Auth::Bearer(b.to_owned()),
                (None, None) => Auth::None,
            };
            if receivers.iter().any(|r| r.label == label) {
                return Err(format!("TRUSTHUB_REMOTE_WRITE_URL names {label} twice"));
            }
            receivers.push(Arc::new(Receiver {
                label,
                auth,
                figures: Figures::default(),
                queue: Queue::new(),
            }));
        }
        Ok(RemoteWrite { receivers })
    }

    /// Whether anything is forwarded.
    pub fn enabled(&self) -> bool {
        !self.receivers.is_empty()
    }

    /// Where the ingest writer hands what it committed (None: forwarding is off). Each
    /// receiver this process sends to queues it; the others ignore it.
    pub fn handoff(&self) -> Option<Handoff> {
        if !self.enabled() {
            return None;
        }
        let receivers = self.receivers.clone();
        Some(Arc::new(move |c: Arc<Committed>| {
            for r in &receivers {
                if r.figures.sending.load(Ordering::Relaxed) {
                    r.queue.offer(&c);
                }
            }
        }))
    }

    /// The Prometheus exposition of the figures, for `//metrics`.
    pub fn exposition(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        if !self.enabled() {
            return out;
        }
        out.push_str(
            "# HELP trusthub_remote_write_samples_total Samples forwarded to remote-write receivers, by result (sent, retried, dropped).\n\
             # TYPE trusthub_remote_write_samples_total counter\n",
        );
        for r in &self.receivers {
            let url = escape(&r.label);
            let f = &r.figures;
            for (result, n) in [
                ("sent", &f.sent),
                ("retried", &f.retried),
                ("dropped", &f.dropped),
            ] {
                let _ = writeln!(
                    out,
                    "trusthub_remote_write_samples_total{{url=\"{url}\",result=\"{result}\"}} {}",
                    n.load(Ordering::Relaxed)
                );
            }
        }
        out.push_str(
            "# HELP trusthub_remote_write_samples_source_total Samples taken for forwarding, by where they were taken from: handed over in memory after the commit, or read back from the metric log.\n\
             # TYPE trusthub_remote_write_samples_source_total counter\n",
        );
        for r in &self.receivers {
            let url = escape(&r.label);
            let f = &r.figures;
            for (source, n) in [("memory", &f.from_memory), ("log", &f.from_log)] {
                let _ = writeln!(
                    out,
                    "trusthub_remote_write_samples_source_total{{url=\"{url}\",source=\"{source}\"}} {}",
                    n.load(Ordering::Relaxed)
                );
            }
        }
        out.push_str(
            "# HELP trusthub_remote_write_lag_seconds Wall-clock age of the oldest stored sample a receiver has not accepted yet (0 when none).\n\
             # TYPE trusthub_remote_write_lag_seconds gauge\n",
        );
        for r in &self.receivers {
            let _ = writeln!(
                out,
                "trusthub_remote_write_lag_seconds{{url=\"{}\"}} {}",
                escape(&r.label),
                r.figures.lag_ms.load(Ordering::Relaxed) as f64 / 1000.0
            );
        }
        out
    }
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The task every hub process runs: one forwarding loop per receiver.
pub fn task(state: AppState) -> trusthub_platform::BoxFuture<'static, ()> {
    Box::pin(async move {
        let receivers = state.part::<RemoteWrite>().receivers.clone();
        let loops: Vec<_> = receivers
            .into_iter()
            .map(|r| tokio::spawn(forward(state.clone(), r)))
            .collect();
        for l in loops {
            let _ = l.await;
        }
    })
}

fn now_ms() -> i64 {
    (time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64
}

/// Labels of series and agents already looked up, each series' encoded labels (keyed by
/// numbers: a multiplicative hash, not SipHash, as every forwarded sample takes lookups), and
/// the request being written.
#[derive(Default)]
struct Labels {
    series: FxHashMap<i64, SeriesLabels>,
    agents: FxHashMap<i64, (u64, AgentLabels)>,
    request: Request,
    /// The points of a round handed over in memory.
    points: Vec<StoredPoint>,
    /// Buffers of bodies sent, for the next ones.
    spare: Vec<Vec<u8>>,
}

/// Buffers of sent bodies kept for the next requests, at most.
const SPARE_BODIES: usize = 8;

/// A series' labels. Every forwarded sample reads one of these: the entry is small (what the
/// labels are made of is boxed apart), and the encoded labels are read in place.
struct SeriesLabels {
    /// The fingerprint of the agent labels `encoded` was made with.
    fingerprint: u64,
    /// The encoded labels ([`label_bytes`]); empty until first made (they always hold
    /// `__name__`).
    encoded: Box<[u8]>,
    /// The metric's name and own labels.
    made_of: Box<(String, BTreeMap<String, String>)>,
}

fn fingerprint(a: &AgentLabels) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (a.id, a.tenant_id, &a.hostname, &a.tags.0).hash(&mut h);
    h.finish()
}

/// One round: the log rows read, and the requests their points make.
struct Round {
    last: Option<LogPosition>,
    requests: Vec<Body>,
}

impl Labels {
    /// Reads the log after `pos` (and before row `before`, when given) and builds the
    /// requests of what was stored there.
    async fn round(
        &mut self,
        state: &AppState,
        pos: LogPosition,
        before: Option<i64>,
    ) -> StoreResult<Round> {
        let mut c = state.db.conn().await?;
        let entries = metric_log::read_between(&mut c, pos, before, ROUND_ROWS).await?;
        let Some(last) = entries.last().map(|e| e.position()) else {
            return Ok(Round {
                last: None,
                requests: Vec::new(),
            });
        };
        let mut keys: Vec<(i64, i64)> = entries.iter().map(|e| (e.agent_seq, e.ts)).collect();
        keys.sort_unstable();
        keys.dedup();
        let mut points = metric_log::points_at(&mut c, &keys).await?;
        drop(c);
        self.forget_if_many();
        Ok(Round {
            last: Some(last),
            requests: self.requests(state, &mut points, &[]).await?,
        })
    }

    /// Forgets the agents looked up when they are many (deleted ones stay otherwise).
    fn forget_if_many(&mut self) {
        if self.agents.len() > 100_000 {
            self.agents.clear();
        }
    }

    /// The requests of points handed over in memory: a round of consecutive transactions
    /// (see [`Inbox::take`]), each the points of its log rows `first_id..=last_id`.
    async fn handed(&mut self, state: &AppState, taken: Vec<Arc<Committed>>) -> StoreResult<Round> {
        let last = taken.last().map(|c| LogPosition {
            txid: 0,
            id: c.last_id,
        });
        // Copied into a buffer kept from round to round (a fresh one costs page faults).
        let mut points = std::mem::take(&mut self.points);
        points.clear();
        // Labelled as their agents stood when the points were stored (a later commit's win).
        let mut latest: FxHashMap<i64, &AgentLabels> = FxHashMap::default();
        for c in &taken {
            points.extend_from_slice(&c.points);
            latest.extend(c.agents.iter().map(|a| (a.seq, a)));
        }
        self.forget_if_many();
        let mut labelled: Vec<i64> = Vec::with_capacity(latest.len());
        for (seq, a) in latest {
            labelled.push(seq);
            self.agents.insert(seq, (fingerprint(a), a.clone()));
        }
        drop(taken);
        labelled.sort_unstable();
        let requests = self.requests(state, &mut points, &labelled).await;
        self.points = points;
        Ok(Round {
            last,
            requests: requests?,
        })
    }

    /// Labels points (the agents read each time, tags and host names change, but for those
    /// in `labelled`, sorted: their labels came with the points; series looked up once) and
    /// cuts them into requests.
    async fn requests(
        &mut self,
        state: &AppState,
        points: &mut Vec<StoredPoint>,
        labelled: &[i64],
    ) -> StoreResult<Vec<Body>> {
        let mut c = state.db.conn().await?;
        let mut seqs: Vec<i64> = points.iter().map(|p| p.0).collect();
        seqs.sort_unstable();
        seqs.dedup();
        seqs.retain(|s| labelled.binary_search(s).is_err());
        if !seqs.is_empty() {
            for a in metric_log::agent_labels(&mut c, &seqs).await? {
                self.agents.insert(a.seq, (fingerprint(&a), a));
            }
        }
        // Grouped by series, each series' samples in time order: one sort, no map of vectors.
        points.sort_unstable_by_key(|p| (p.1, p.2));
        points.dedup_by_key(|p| (p.1, p.2));
        let unknown: Vec<i64> = points
            .chunk_by(|x, y| x.1 == y.1)
            .map(|g| g[0].1)
            .filter(|id| !self.series.contains_key(id))
            .collect();
        if self.series.len() + unknown.len() > 2_000_000 {
            self.series.clear();
        }
        for s in metric_log::series_info(&mut c, &unknown).await? {
            self.series.insert(
                s.id,
                SeriesLabels {
                    fingerprint: 0,
                    encoded: Box::default(),
                    made_of: Box::new((s.name, s.labels)),
                },
            );
        }
        drop(c);
        let mut requests = Vec::new();
        let request = &mut self.request;
        let mut samples: Vec<(i64, f64)> = Vec::new();
        for group in points.chunk_by(|x, y| x.1 == y.1) {
            let (agent, series) = (group[0].0, group[0].1);
            let (Some((fp, a)), Some(s)) = (self.agents.get(&agent), self.series.get_mut(&series))
            else {
                // The agent was deleted after storing these: its data went with it.
                continue;
            };
            if s.encoded.is_empty() || s.fingerprint != *fp {
                s.encoded = encode_labels(a, &s.made_of.0, &s.made_of.1).into_boxed_slice();
                s.fingerprint = *fp;
            }
            samples.clear();
            samples.extend(group.iter().map(|p| (p.2, p.3)));
            request.push(&s.encoded, &samples);
            if request.samples() >= MAX_SAMPLES_PER_REQUEST {
                requests.push(request.finish_into(self.spare.pop().unwrap_or_default()));
            }
        }
        if request.samples() > 0 {
            requests.push(request.finish_into(self.spare.pop().unwrap_or_default()));
        }
        Ok(requests)
    }
}

/// A series' labels: `tenant_id`, `agent_id`, `hostname` first (they win over a metric's
/// own label of the same name), then its own labels, then its agent's tags.
fn encode_labels(a: &AgentLabels, name: &str, own: &BTreeMap<String, String>) -> Vec<u8> {
    let mut labels: Vec<(String, String)> = vec![
        ("tenant_id".into(), a.tenant_id.to_string()),
        ("agent_id".into(), a.id.to_string()),
        ("hostname".into(), a.hostname.clone()),
    ];
    labels.extend(own.iter().map(|(k, v)| (k.clone(), v.clone())));
    labels.extend(a.tags.0.iter().map(|t| tag_label(t)));
    label_bytes(name, &labels)
}

/// What a receiver made of a request.
enum Outcome {
    Accepted,
    Retry(String),
    Refused(String),
}

/// A body's buffer, shared with the HTTP client while it sends it.
struct Shared(Arc<Vec<u8>>);

impl AsRef<[u8]> for Shared {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// Sends a body; what the receiver made of it, and the body's buffer when the client let go
/// of it (to write the next body into).
async fn send(client: &reqwest::Client, r: &Receiver, body: Vec<u8>) -> (Outcome, Option<Vec<u8>>) {
    let body = Arc::new(body);
    let mut req = client
        .post(&r.label)
        .body(axum::body::Bytes::from_owner(Shared(body.clone())));
    for (name, value) in crate::wire::HEADERS {
        req = req.header(name, value);
    }
    req = match &r.auth {
        Auth::None => req,
        Auth::Bearer(t) => req.bearer_auth(t),
        Auth::Basic(u, p) => req.basic_auth(u, p.as_deref()),
    };
    let outcome = match req.send().await {
        Ok(resp) => {
            let status = resp.status();
            if status.is_success() {
                Outcome::Accepted
            } else {
                let text = resp.text().await.unwrap_or_default();
                let why = trusthub_platform::outbound::provider_error(status.as_u16(), &text);
                if status.is_server_error() || status.as_u16() == 429 {
                    Outcome::Retry(why)
                } else {
                    Outcome::Refused(why)
                }
            }
        }
        Err(e) => Outcome::Retry(format!("{e}")),
    };
    (outcome, Arc::try_unwrap(body).ok())
}

/// The HTTP client of outside metrics stores: rustls with the system's roots, the hub's
/// User-Agent, no redirects, 30 s per request.
pub(crate) fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("trusthub/", env!("CARGO_PKG_VERSION")))
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap_or_default()
}

async fn take_lease(state: &AppState, name: &str) -> StoreResult<bool> {
    let now = trusthub_platform::state::now();
    let until = now + time::Duration::seconds(LEASE_RENEW.as_secs() as i64 * 3);
    let mut tx = state.db.begin().await?;
    let held = trusthub_store::leases::acquire(&mut tx, name, &state.instance, now, until).await?;
    tx.commit().await?;
    Ok(held)
}

/// The lag: the age of the oldest log row after `pos` (the stored position when `None`).
async fn lag_ms(state: &AppState, label: &str, pos: Option<LogPosition>) -> StoreResult<i64> {
    let mut c = state.db.conn().await?;
    let pos = match pos {
        Some(p) => p,
        None => store::position(&mut c, label).await?.unwrap_or_default(),
    };
    Ok(metric_log::oldest_after(&mut c, pos)
        .await?
        .map(|at| (now_ms() - at).max(0))
        .unwrap_or(0))
}

/// Saves the position and, every so often, forgets log rows every receiver has taken.
async fn advance(state: &AppState, label: &str, to: LogPosition, prune: bool) -> StoreResult<()> {
    let mut tx = state.db.begin().await?;
    store::save(&mut tx, label, to, now_ms()).await?;
    if prune {
        let labels: Vec<String> = state
            .part::<RemoteWrite>()
            .receivers
            .iter()
            .map(|r| r.label.clone())
            .collect();
        let positions = store::all(&mut tx).await?;
        let taken: Option<LogPosition> = labels
            .iter()
            .map(|l| positions.iter().find(|p| &p.url == l).map(|p| p.position))
            .collect::<Option<Vec<_>>>()
            .and_then(|v| v.into_iter().min());
        if let Some(through) = taken {
            metric_log::prune_through(&mut tx, through).await?;
        }
    }
    tx.commit().await?;
    Ok(())
}

/// What was handed over in memory and not sent yet, in commit order.
struct Inbox {
    rx: Option<mpsc::Receiver<Arc<Committed>>>,
    pending: VecDeque<Arc<Committed>>,
    r: Arc<Receiver>,
}

impl Inbox {
    /// Takes what the queue holds.
    fn fill(&mut self) {
        if let Some(rx) = &mut self.rx {
            while let Ok(c) = rx.try_recv() {
                self.pending.push_back(c);
            }
        }
    }

    fn pop(&mut self) -> Option<Arc<Committed>> {
        let c = self.pending.pop_front()?;
        self.r
            .queue
            .points
            .fetch_sub(c.points.len(), Ordering::Relaxed);
        Some(c)
    }

    /// The transactions waiting here that follow on from the first without a gap, up to
    /// [`ROUND_POINTS`] points (at least one): one round of labels and requests for several
    /// commits when the sender is behind.
    fn take(&mut self) -> Vec<Arc<Committed>> {
        let mut taken: Vec<Arc<Committed>> = Vec::new();
        let mut points = 0;
        while let Some(next) = self.pending.front() {
            let follows = taken.last().is_none_or(|t| next.first_id == t.last_id + 1);
            if !follows || (!taken.is_empty() && points + next.points.len() > ROUND_POINTS) {
                break;
            }
            points += next.points.len();
            match self.pop() {
                Some(c) => taken.push(c),
                None => break,
            }
        }
        taken
    }

    /// Forgets what the log position already covers (read from the log, or sent by a
    /// predecessor).
    fn skip_through(&mut self, pos: LogPosition) {
        while self.pending.front().is_some_and(|c| c.last_id <= pos.id) {
            self.pop();
        }
    }

    /// Forgets everything (this process stopped sending: the log is the truth).
    fn clear(&mut self) {
        self.fill();
        while self.pop().is_some() {}
    }

    /// Waits for more to be handed over while what waits here holds fewer than
    /// [`GATHER_POINTS`] points and the oldest of it was stored less than [`GATHER`] ago.
    async fn gather(&mut self) {
        let Some(rx) = &mut self.rx else {
            return;
        };
        let mut points: usize = self.pending.iter().map(|c| c.points.len()).sum();
        while let Some(oldest) = self.pending.front() {
            let left = GATHER.as_millis() as i64 - (now_ms() - oldest.stored_at);
            if points >= GATHER_POINTS || left <= 0 {
                return;
            }
            match tokio::time::timeout(Duration::from_millis(left as u64), rx.recv()).await {
                Ok(Some(c)) => {
                    points += c.points.len();
                    self.pending.push_back(c);
                }
                _ => return,
            }
        }
    }

    /// Waits up to `d` for a transaction to be handed over; whether one was.
    async fn wait(&mut self, d: Duration) -> bool {
        if !self.pending.is_empty() {
            return true;
        }
        let Some(rx) = &mut self.rx else {
            tokio::time::sleep(d).await;
            return false;
        };
        match tokio::time::timeout(d, rx.recv()).await {
            Ok(Some(c)) => {
                self.pending.push_back(c);
                true
            }
            _ => false,
        }
    }

    /// The lag after sending through `pos`: the age of the oldest transaction waiting here,
    /// if the next one follows on from `pos` (otherwise the log is read to know).
    fn lag_ms(&self, pos: LogPosition) -> Option<i64> {
        match self.pending.front() {
            Some(c) if c.first_id == pos.id + 1 => Some((now_ms() - c.stored_at).max(0)),
            _ => None,
        }
    }
}

/// The loop of one receiver, for as long as the hub serves.
///
/// On SQLite the ingest writer hands each committed transaction's points over in memory
/// ([`RemoteWrite::handoff`]); when the next one follows on from the position (its first log
/// row is the one after), it is sent without reading anything back. Otherwise — after a
/// start, a lease change, a failed request or a full queue — the log is read up to the first
/// transaction waiting in memory. On PostgreSQL (log ids are not in commit order, and
/// another process may have stored the points) the log is always read.
async fn forward(state: AppState, r: Arc<Receiver>) {
    let client = client();
    let lease = format!("remote_write:{}", r.label);
    let mut labels = Labels::default();
    let mut inbox = Inbox {
        rx: r.queue.rx.lock().ok().and_then(|mut q| q.take()),
        pending: VecDeque::new(),
        r: r.clone(),
    };
    let mut pos: Option<LogPosition> = None;
    let mut saves = Saves {
        saved: None,
        saved_at: Instant::now(),
        pruned: Instant::now(),
    };
    let mut renewed: Option<Instant> = None;
    let mut backoff = Duration::from_secs(1);
    // `Some(d)`: every transaction committed after `pos` was handed over in memory (it waits
    // in the inbox) unless the queue's drop count has passed `d` — so with nothing waiting the
    // receiver has everything, known without reading the log. Set when the log was read up to
    // what waits in memory; kept while rounds take what waits in memory in order.
    let mut complete: Option<u64> = None;
    loop {
        if renewed.is_none_or(|t| t.elapsed() >= LEASE_RENEW) {
            match take_lease(&state, &lease).await {
                Ok(true) => renewed = Some(Instant::now()),
                Ok(false) | Err(_) => {
                    // Another process sends; keep the lag figure true from the database.
                    r.figures.sending.store(false, Ordering::Relaxed);
                    inbox.clear();
                    renewed = None;
                    pos = None;
                    complete = None;
                    if let Ok(lag) = lag_ms(&state, &r.label, None).await {
                        r.figures.lag_ms.store(lag, Ordering::Relaxed);
                    }
                    tokio::time::sleep(LEASE_RENEW).await;
                    continue;
                }
            }
            r.figures.sending.store(true, Ordering::Relaxed);
        }
        let from = match pos {
            Some(p) => p,
            None => {
                let loaded = async {
                    let mut c = state.db.conn().await?;
                    store::position(&mut c, &r.label).await
                }
                .await;
                match loaded {
                    Ok(p) => {
                        let p = p.unwrap_or_default();
                        pos = Some(p);
                        saves.saved = Some(p);
                        p
                    }
                    Err(e) => {
                        tracing::warn!(url = %r.label, error = %e, "remote write: cannot read the position");
                        tokio::time::sleep(Duration::from_secs(5)).await;
                        continue;
                    }
                }
            }
        };
        inbox.fill();
        inbox.skip_through(from);
        let next = inbox.pending.front().map(|c| c.first_id);
        let in_memory = from.txid == 0 && next == Some(from.id + 1);
        let dropped = r.queue.dropped.load(Ordering::Relaxed);
        if next.is_none() && complete == Some(dropped) {
            // Caught up, known from memory: nothing to read back, no lag.
            r.figures.lag_ms.store(0, Ordering::Relaxed);
            saves
                .caught_up(&state, &r.label, from, &mut inbox, &mut complete)
                .await;
            continue;
        }
        let round = if in_memory {
            if let Some(lag) = inbox.lag_ms(from) {
                r.figures.lag_ms.store(lag, Ordering::Relaxed);
            }
            inbox.gather().await;
            let taken = inbox.take();
            if taken.is_empty() {
                continue;
            }
            labels.handed(&state, taken).await
        } else {
            labels.round(&state, from, next).await
        };
        if let Ok(round) = &round {
            let n: usize = round.requests.iter().map(|b| b.samples).sum();
            let source = match in_memory {
                true => &r.figures.from_memory,
                false => &r.figures.from_log,
            };
            source.fetch_add(n as u64, Ordering::Relaxed);
        }
        let round = match round {
            Ok(round) => round,
            Err(e) => {
                complete = None;
                tracing::warn!(url = %r.label, error = %e, "remote write: cannot read the metric log");
                tokio::time::sleep(Duration::from_secs(5)).await;
                continue;
            }
        };
        let Some(last) = round.last else {
            if let Some(next) = next {
                // The log holds nothing before the first transaction handed over (it committed
                // after every row before it): carry on from there.
                pos = Some(LogPosition {
                    txid: 0,
                    id: next - 1,
                });
                complete = Some(dropped);
                continue;
            }
            refresh_lag(&state, &r, from).await;
            complete = Some(dropped);
            saves
                .caught_up(&state, &r.label, from, &mut inbox, &mut complete)
                .await;
            continue;
        };
        complete = complete.filter(|_| in_memory);
        let mut retry = None;
        for request in round.requests {
            let n = request.samples as u64;
            let (outcome, buffer) = send(&client, &r, request.bytes).await;
            if let Some(buffer) = buffer.filter(|b| {
                labels.spare.len() < SPARE_BODIES && b.capacity() <= crate::wire::KEEP_BYTES
            }) {
                labels.spare.push(buffer);
            }
            match outcome {
                Outcome::Accepted => {
                    r.figures.sent.fetch_add(n, Ordering::Relaxed);
                    r.figures.last_sent_at.store(now_ms(), Ordering::Relaxed);
                    if let Ok(mut e) = r.figures.last_error.lock() {
                        *e = None;
                    }
                }
                Outcome::Refused(why) => {
                    r.figures.dropped.fetch_add(n, Ordering::Relaxed);
                    tracing::warn!(url = %r.label, samples = n, error = %why, "remote write: the receiver refused a request; its samples are dropped");
                    r.figures.fail(why);
                }
                Outcome::Retry(why) => {
                    r.figures.retried.fetch_add(n, Ordering::Relaxed);
                    retry = Some(why);
                    break;
                }
            }
        }
        if let Some(why) = retry {
            tracing::warn!(url = %r.label, error = %why, retry_in_secs = backoff.as_secs(), "remote write: sending failed; retrying");
            r.figures.fail(why);
            complete = None;
            // What was accepted before the failure is recorded: a restart during an outage
            // does not send it again.
            if saves.saved != Some(from) {
                saves.save(&state, &r.label, from).await;
            }
            refresh_lag(&state, &r, from).await;
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
            continue;
        }
        backoff = Duration::from_secs(1);
        pos = Some(last);
        if saves.saved_at.elapsed() >= SAVE_EVERY {
            saves.save(&state, &r.label, last).await;
        }
        inbox.fill();
        match inbox.lag_ms(last) {
            Some(lag) => r.figures.lag_ms.store(lag, Ordering::Relaxed),
            None if inbox.pending.is_empty()
                && complete == Some(r.queue.dropped.load(Ordering::Relaxed)) =>
            {
                r.figures.lag_ms.store(0, Ordering::Relaxed)
            }
            None => refresh_lag(&state, &r, last).await,
        }
    }
}

/// When a receiver's position was last written, and the log last pruned.
struct Saves {
    saved: Option<LogPosition>,
    saved_at: Instant,
    pruned: Instant,
}

impl Saves {
    fn prune_due(&self) -> bool {
        self.pruned.elapsed() >= Duration::from_secs(10)
    }

    /// Caught up through `to`: waits for the ingest writer's next commit. What was accepted is
    /// recorded at once when the last record is a second old; otherwise when nothing more
    /// comes for a moment (a save is a write beside the ingest writer's: at most one a second
    /// under load). When nothing comes, the log is read next (`complete` is cleared): it holds
    /// whatever was not handed over in memory.
    async fn caught_up(
        &mut self,
        state: &AppState,
        label: &str,
        to: LogPosition,
        inbox: &mut Inbox,
        complete: &mut Option<u64>,
    ) {
        if self.saved != Some(to) && self.saved_at.elapsed() >= SAVE_EVERY || self.prune_due() {
            self.save(state, label, to).await;
        }
        if !inbox.wait(IDLE).await {
            *complete = None;
            if self.saved != Some(to) {
                self.save(state, label, to).await;
            }
        }
    }

    /// Writes the position (and prunes when due). A failure is logged: what was sent but
    /// not recorded is recorded by the next save, or sent again by a successor.
    async fn save(&mut self, state: &AppState, label: &str, to: LogPosition) {
        let prune = self.prune_due();
        match advance(state, label, to, prune).await {
            Ok(()) => {
                self.saved = Some(to);
                self.saved_at = Instant::now();
                if prune {
                    self.pruned = Instant::now();
                }
            }
            Err(e) => {
                tracing::warn!(url = %label, error = %e, "remote write: cannot save the position");
            }
        }
    }
}

async fn refresh_lag(state: &AppState, r: &Receiver, pos: LogPosition) {
    if let Ok(lag) = lag_ms(state, &r.label, Some(pos)).await {
        r.figures.lag_ms.store(lag, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests;
