//! Committing ingest batches (CONTRACT 4): everything a batch carries is stored in one
//! transaction, and a 202 is only sent after the commit.
//!
//! Concurrent batches go through one writer task per hub process that commits them in groups
//! (up to [`MAX_GROUP`] per transaction, with one set-based statement per kind of row for the
//! whole group: `UNNEST` on PostgreSQL, multi-row `VALUES` on SQLite). SQLite has one writer
//! anyway, and on PostgreSQL grouping also stops concurrent transactions from queueing on the
//! same rollup rows (measured: 94.6k → 105k samples/s, bench/RESULTS.md). If a group fails, its
//! batches are retried one per transaction, so one bad batch cannot fail its neighbours.

use crate::store::agents;
use crate::store::metric_log::Handoff;
use crate::store::telemetry::{self, HeldRollups, PointRows, SeriesCache};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use time::OffsetDateTime;
use tokio::sync::{mpsc, oneshot};
use trusthub_core::agent::Batch;
use trusthub_store::{Db, StoreResult};
use uuid::Uuid;

/// Most batches committed in one transaction.
pub const MAX_GROUP: usize = 64;

/// One validated batch of one agent.
#[derive(Debug)]
pub struct Job {
    /// The agent's tenant.
    pub tenant: trusthub_store::TenantId,
    /// The agent.
    pub agent_id: Uuid,
    /// The hash of the token the batch came with.
    pub token_hash: String,
    /// The agent as the request was checked against (a snapshot, maybe from
    /// [`AgentCache`]): the writer stores the batch only if the agent still stands so, with
    /// that token, in the batch's transaction.
    pub checked: Arc<Snapshot>,
    /// The batch.
    pub batch: Batch,
    /// The inventory's `collected_at`, when it carries one.
    pub inventory_at: Option<OffsetDateTime>,
    /// The host allowlist the heartbeat reported.
    pub reported_actions: Option<Vec<String>>,
    /// What runs on the host, for the liveness check.
    pub observed: Option<trusthub_core::apps::ObservedMap>,
    /// HTTP check results.
    pub checks: Vec<trusthub_core::apps::CheckResult>,
    /// A configuration scan, when the batch carried one (taken out of the batch).
    pub config: Option<ConfigScan>,
    /// Compliance results, DNA and honeypot events, when the batch carried any (taken out of
    /// the batch).
    pub security: Option<SecurityReport>,
    /// The hub's clock at arrival.
    pub now: OffsetDateTime,
    /// The series the cache knew when the batch was queued (set by [`Ingest::submit`]).
    pub(crate) resolved: Option<telemetry::Resolved>,
}

impl Job {
    /// Whether `agent`, holding the token with this hash, is still the agent the request was
    /// checked against.
    fn stands(&self, agent: &agents::Agent, token_hash: &str) -> bool {
        agent.id == self.agent_id
            && token_hash == self.token_hash
            && agent.same_settings(&self.checked.agent)
    }
}

/// A configuration scan an agent reported (CONTRACT 20), with what the drift capability
/// needs to know about the host.
#[derive(Debug, Clone)]
pub struct ConfigScan {
    /// The tenant.
    pub tenant: trusthub_store::TenantId,
    /// The agent.
    pub agent_id: Uuid,
    /// Its host name.
    pub hostname: String,
    /// Its tags.
    pub tags: Vec<String>,
    /// The watched patterns in force.
    pub patterns: Vec<String>,
    /// Every path the scan saw.
    pub hashes: Vec<trusthub_core::drift::ConfigHash>,
}

/// What the drift capability does with a configuration scan, in the batch's own
/// transaction: a typed event from the fleet to drift.
#[derive(Debug, Clone, Copy)]
pub struct ConfigReports(pub ConfigReportsFn);

/// The signature of [`ConfigReports`].
pub type ConfigReportsFn = for<'a> fn(
    &'a mut trusthub_store::Tx,
    &'a ConfigScan,
    OffsetDateTime,
) -> trusthub_platform::BoxFuture<'a, StoreResult<()>>;

/// What an agent reported about its host's integrity (CONTRACT 25), with what the compliance
/// capability needs to know about the host.
#[derive(Debug, Clone)]
pub struct SecurityReport {
    /// The tenant.
    pub tenant: trusthub_store::TenantId,
    /// The agent.
    pub agent_id: Uuid,
    /// Its host name.
    pub hostname: String,
    /// A run of the compliance checks.
    pub compliance: Option<trusthub_core::compliance::Report>,
    /// The host's DNA.
    pub dna: Option<trusthub_core::compliance::Dna>,
    /// Honeypots touched.
    pub honeypot_events: Vec<trusthub_core::compliance::HoneypotEvent>,
    /// Whether each governed honeypot is armed, when the agent said so again.
    pub honeypot_states: Option<Vec<trusthub_core::compliance::HoneypotState>>,
}

/// What the compliance capability does with a [`SecurityReport`], in the batch's own
/// transaction: a typed event from the fleet to compliance.
#[derive(Debug, Clone, Copy)]
pub struct SecurityReports(pub SecurityReportsFn);

/// The signature of [`SecurityReports`].
pub type SecurityReportsFn = for<'a> fn(
    &'a mut trusthub_store::Tx,
    &'a SecurityReport,
    OffsetDateTime,
) -> trusthub_platform::BoxFuture<'a, StoreResult<()>>;

/// The HTTP checks the apps capability has the group's agents run: `(agent, check)`, read for
/// all its agents at once, on a reader after the group's commit.
#[derive(Debug, Clone, Copy)]
pub struct HttpChecks(pub HttpChecksFn);

/// The signature of [`HttpChecks`].
pub type HttpChecksFn = for<'a> fn(
    &'a mut trusthub_store::Conn,
    &'a [Uuid],
) -> trusthub_platform::BoxFuture<
    'a,
    StoreResult<Vec<(Uuid, trusthub_core::agent::HttpCheck)>>,
>;

/// The compliance run each of the group's hosts owes now, if any: `(agent, run)`, answered by
/// the compliance capability after the group's commit (so after the group's own results).
/// `read` is handed `kept`, the capability's own state (what it keeps between groups), and
/// each host with whether its batch in this group carried a security report (which may have
/// answered a run).
#[derive(Clone)]
pub struct ComplianceRuns {
    /// The lookup.
    pub read: ComplianceRunsFn,
    /// What `read` keeps between calls.
    pub kept: Arc<dyn std::any::Any + Send + Sync>,
}

impl std::fmt::Debug for ComplianceRuns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ComplianceRuns")
    }
}

/// The signature of [`ComplianceRuns`]' lookup.
pub type ComplianceRunsFn =
    for<'a> fn(
        &'a (dyn std::any::Any + Send + Sync),
        &'a mut trusthub_store::Conn,
        &'a [(trusthub_store::TenantId, Uuid, bool)],
    ) -> trusthub_platform::BoxFuture<'a, StoreResult<Vec<(Uuid, Uuid)>>>;

/// The typed events ingest raises in its transaction, and what it asks other capabilities
/// for its answers: a part each capability sets its side of at start (`Parts::entry`);
/// unset, an event goes nowhere and a question has no answer.
#[derive(Debug, Clone)]
pub struct Hooks {
    /// To the apps capability.
    pub apps: AppReports,
    /// To the drift capability.
    pub config: ConfigReports,
    /// To the compliance capability.
    pub security: SecurityReports,
    /// From the apps capability.
    pub http_checks: HttpChecks,
    /// From the compliance capability.
    pub compliance_runs: ComplianceRuns,
}

impl Default for Hooks {
    fn default() -> Hooks {
        Hooks {
            apps: AppReports(|_, _, _, _, _| Box::pin(async { Ok(()) })),
            config: ConfigReports(|_, _, _| Box::pin(async { Ok(()) })),
            security: SecurityReports(|_, _, _| Box::pin(async { Ok(()) })),
            http_checks: HttpChecks(|_, _| Box::pin(async { Ok(Vec::new()) })),
            compliance_runs: ComplianceRuns {
                read: |_, _, _| Box::pin(async { Ok(Vec::new()) }),
                kept: Arc::new(()),
            },
        }
    }
}

/// Where committed metric points go on from ingest (the remote-write forwarder installs it);
/// none by default.
#[derive(Default)]
pub struct Forward(pub Option<crate::store::metric_log::Handoff>);

/// An agent as ingest checked a request against it, with its pinned key read.
#[derive(Debug)]
pub struct Snapshot {
    /// The agent's row.
    pub agent: agents::Agent,
    /// Its pinned signing key, when it has one.
    pub key: Option<ed25519_dalek::VerifyingKey>,
}

/// Agents by token hash as ingest last read them, so that a batch costs no read of the
/// agent: the writer compares each batch's [`Snapshot`] with the agent's row in the batch's
/// own transaction and refuses a batch whose agent changed since (token rotated, agent
/// deleted, key pinned or dropped, settings changed; also by another hub process), and the
/// request reads the agent again. Bounded: past [`AgentCache::MAX`] entries it starts over.
#[derive(Debug, Default)]
pub struct AgentCache(std::sync::Mutex<HashMap<String, Arc<Snapshot>>>);

impl AgentCache {
    /// Most agents held.
    pub const MAX: usize = 100_000;

    /// The snapshot held for a token hash.
    pub fn get(&self, token_hash: &str) -> Option<Arc<Snapshot>> {
        self.0.lock().ok()?.get(token_hash).cloned()
    }

    /// Holds a snapshot.
    pub fn put(&self, token_hash: &str, snapshot: Arc<Snapshot>) {
        if let Ok(mut map) = self.0.lock() {
            if map.len() >= Self::MAX {
                map.clear();
            }
            map.insert(token_hash.to_owned(), snapshot);
        }
    }

    /// Drops what is held for a token hash.
    pub fn forget(&self, token_hash: &str) {
        if let Ok(mut map) = self.0.lock() {
            map.remove(token_hash);
        }
    }
}

/// What the writer answers for one batch: whether it was new, and what the answer to the
/// agent carries (read once per group after its commit, so one statement each serves the
/// whole group instead of two reads per request).
#[derive(Debug, Clone, Default)]
pub struct Accepted {
    /// False: a duplicate.
    pub fresh: bool,
    /// The agent's HTTP checks.
    pub http_checks: Vec<trusthub_core::agent::HttpCheck>,
    /// The compliance run the host owes, if any.
    pub compliance_run: Option<Uuid>,
}

/// `None`: the batch was not stored because its agent changed since the request was checked
/// (see [`AgentCache`]).
type Reply = oneshot::Sender<StoreResult<Option<Accepted>>>;

/// What the apps capability does with an agent's reports about its apps (what runs, HTTP
/// check results), in the batch's own transaction: a typed event from the fleet to apps.
#[derive(Debug, Clone, Copy)]
pub struct AppReports(pub AppReportsFn);

/// The signature of [`AppReports`].
pub type AppReportsFn = for<'a> fn(
    &'a mut trusthub_store::Tx,
    Uuid,
    Option<&'a trusthub_core::apps::ObservedMap>,
    &'a [trusthub_core::apps::CheckResult],
    OffsetDateTime,
) -> trusthub_platform::BoxFuture<'a, StoreResult<()>>;

/// Commits batches; `submit` answers whether the batch was new (false: a duplicate).
#[derive(Debug)]
pub struct Ingest {
    queue: mpsc::Sender<(Job, Reply)>,
    /// The writer's cache of series ids, read by requests before they queue a batch.
    cache: Arc<SeriesCache>,
    repeated: Arc<AtomicU64>,
    agents: AgentCache,
    /// Requests on their way to the writer (see [`Ingest::arriving`]).
    arriving: Arc<AtomicUsize>,
}

/// A request counted as on its way to the writer, until dropped (see [`Ingest::arriving`]).
#[derive(Debug)]
pub struct Arriving(Arc<AtomicUsize>);

impl Drop for Arriving {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Ingest {
    /// Starts the writer task. With `log` (forwarding is on, CONTRACT 26), the keys of stored
    /// points are appended to the metric log, and what each transaction stored is handed to
    /// it after the commit.
    pub fn new(db: Db, cache: Arc<SeriesCache>, apps: Hooks, log: Option<Handoff>) -> Ingest {
        let (tx, rx) = mpsc::channel(1024);
        let cache_for_requests = cache.clone();
        let repeated = Arc::new(AtomicU64::new(0));
        let counter = repeated.clone();
        let arriving = Arc::new(AtomicUsize::new(0));
        let on_the_way = arriving.clone();
        let backend = db.backend();
        let w = Writer {
            held: (backend == trusthub_store::Backend::Sqlite).then(HeldRollups::default),
            db,
            cache,
            hooks: apps,
            log,
            // Answers are read on the server's runtime, off the writer (see `Writer::answer`).
            answers: tokio::runtime::Handle::current(),
        };
        match backend {
            // SQLite's writer is the one serial stage of ingest: on its own thread it is woken
            // at once after each statement instead of queueing behind request handling on the
            // shared runtime's workers (group commit 25 → 20 ms p50, bench/RESULTS.md).
            trusthub_store::Backend::Sqlite => {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build();
                let started = runtime.and_then(|rt| {
                    std::thread::Builder::new()
                        .name("ingest-writer".into())
                        .spawn(move || rt.block_on(writer(w, rx, counter, on_the_way)))
                });
                if let Err(e) = started {
                    // The queue is closed with `rx`: every submit answers an error.
                    tracing::error!(error = %e, "cannot start the ingest writer thread");
                }
            }
            trusthub_store::Backend::Postgres => {
                tokio::spawn(writer(w, rx, counter, on_the_way));
            }
        }
        Ingest {
            queue: tx,
            cache: cache_for_requests,
            repeated,
            agents: AgentCache::default(),
            arriving,
        }
    }

    /// Counts a request as on its way to the writer (authenticated, its body being read and
    /// checked) until the guard is dropped or handed to [`Ingest::submit`]. While any is,
    /// the writer leaves a group's folding into the rollups to a later transaction, as it
    /// does while batches wait in its queue: under concurrent load the rollups are folded
    /// about once a second instead of after nearly every group, and a lone batch is still
    /// folded in its own transaction.
    pub fn arriving(&self) -> Arriving {
        self.arriving.fetch_add(1, Ordering::Relaxed);
        Arriving(self.arriving.clone())
    }

    /// Samples of new batches whose point was stored already (same series and timestamp),
    /// since this process started: an agent re-sending what the hub has.
    pub fn repeated_points(&self) -> u64 {
        self.repeated.load(Ordering::Relaxed)
    }

    /// Requests on their way to the writer now ([`Ingest::arriving`]).
    pub fn arriving_now(&self) -> usize {
        self.arriving.load(Ordering::Relaxed)
    }

    /// The agents ingest has read, by token hash.
    pub fn agents(&self) -> &AgentCache {
        &self.agents
    }

    /// Stores a batch; `None` when its agent changed since `job.checked` was read. The
    /// request stops counting as arriving once its batch is queued.
    pub async fn submit(&self, mut job: Job, arriving: Arriving) -> StoreResult<Option<Accepted>> {
        // The series are looked up here, on the request's thread, not by the writer.
        job.resolved = Some(self.cache.resolve(job.agent_id, &job.batch.metrics));
        let gone = || trusthub_store::StoreError::Db(sqlx::Error::PoolClosed);
        let (reply, answer) = oneshot::channel();
        // Counted off before it is queued: the writer must not take the batch's own request
        // for another on its way, and leave the batch's folding to a later transaction.
        drop(arriving);
        self.queue.send((job, reply)).await.map_err(|_| gone())?;
        answer.await.map_err(|_| gone())?
    }
}

/// The ingest writer's own state.
struct Writer {
    db: Db,
    cache: Arc<SeriesCache>,
    hooks: Hooks,
    log: Option<Handoff>,
    /// SQLite (one writer): the rollup rows written last.
    held: Option<HeldRollups>,
    /// The server's runtime, where answers are read after each commit.
    answers: tokio::runtime::Handle,
}

async fn writer(
    mut w: Writer,
    mut rx: mpsc::Receiver<(Job, Reply)>,
    repeated: Arc<AtomicU64>,
    arriving: Arc<AtomicUsize>,
) {
    // What a crash left unfolded is folded before the first batch.
    w.fold_unfolded().await;
    loop {
        // With points left unfolded, the writer folds them on its own after a while idle.
        let next = match w.held.as_ref().and_then(HeldRollups::fold_in) {
            Some(wait) => match tokio::time::timeout(wait, rx.recv()).await {
                Ok(next) => next,
                Err(_) => {
                    w.fold_unfolded().await;
                    continue;
                }
            },
            None => rx.recv().await,
        };
        let Some(first) = next else {
            if w.held.as_ref().is_some_and(|h| h.fold_in().is_some()) {
                w.fold_unfolded().await;
            }
            break;
        };
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(next) => group.push(next),
                Err(_) => break,
            }
        }
        let (jobs, replies): (Vec<Job>, Vec<Reply>) = group.into_iter().unzip();
        // More batches wait, or are on their way.
        let more = || !rx.is_empty() || arriving.load(Ordering::Relaxed) > 0;
        match w.commit_group(&jobs, &more).await {
            Ok((flags, again)) => {
                repeated.fetch_add(again, Ordering::Relaxed);
                w.answer(&jobs, flags, replies);
            }
            Err(e) => {
                tracing::warn!(error = %e, batches = jobs.len(), "group commit failed; committing its batches one by one");
                for (job, reply) in jobs.into_iter().zip(replies) {
                    let one = std::slice::from_ref(&job);
                    match w.commit_group(one, &more).await {
                        Ok((f, again)) => {
                            repeated.fetch_add(again, Ordering::Relaxed);
                            w.answer(one, f, vec![reply]);
                        }
                        // A batch of an agent deleted since its request was checked fails on
                        // its rows' references: not stored, the request checks again.
                        Err(e) => {
                            let _ = reply.send(match w.still_stands(&job).await {
                                Ok(false) => Ok(None),
                                _ => Err(e),
                            });
                        }
                    }
                }
            }
        }
    }
}

/// What the answers to a committed group carry, read on a reader for all its agents at once:
/// each agent's HTTP checks, and the compliance run each host owes.
async fn read_answers(
    db: &Db,
    hooks: &Hooks,
    hosts: &[(trusthub_store::TenantId, Uuid, bool)],
) -> StoreResult<Answers> {
    let mut answers = Answers::default();
    if hosts.is_empty() {
        return Ok(answers);
    }
    let ids: Vec<Uuid> = hosts.iter().map(|h| h.1).collect();
    let mut c = db.conn().await?;
    for (agent, check) in (hooks.http_checks.0)(&mut c, &ids).await? {
        answers.checks.entry(agent).or_default().push(check);
    }
    let runs = &hooks.compliance_runs;
    answers
        .runs
        .extend((runs.read)(&*runs.kept, &mut c, hosts).await?);
    Ok(answers)
}

/// What [`read_answers`] read, by agent.
#[derive(Debug, Default)]
struct Answers {
    checks: HashMap<Uuid, Vec<trusthub_core::agent::HttpCheck>>,
    runs: HashMap<Uuid, Uuid>,
}

/// One attempt at a group: committed, or not because the agents of some batches changed
/// since their requests were checked (false for those).
enum Attempt {
    Committed(Vec<Option<bool>>, u64),
    Changed(Vec<bool>),
}

impl Writer {
    /// Commits a group of batches in one transaction; answers, per batch, whether it was new
    /// (`None`: not stored, its agent changed since the request was checked), and how many
    /// samples of the new batches repeated a stored point. With
    /// `log`, the stored points' keys go to the metric log in the same transaction, and the
    /// points to `log` after the commit (when the log's ids are in commit order: SQLite).
    ///
    /// Whether each batch's agent still stands as its request was checked is answered by the
    /// group's last statement (which records the agents seen); when one does not, the
    /// transaction is rolled back and the group committed again without it (rare: after a
    /// rotation, a deletion or a change of settings).
    ///
    /// `waiting` tells whether more batches wait or are on their way
    /// ([`Ingest::arriving`]): then (SQLite) the group's points may be
    /// folded into the rollups by a later transaction ([`HeldRollups`]).
    async fn commit_group(
        &mut self,
        jobs: &[Job],
        waiting: &(dyn Fn() -> bool + Sync),
    ) -> StoreResult<(Vec<Option<bool>>, u64)> {
        let mut take = vec![true; jobs.len()];
        loop {
            if !take.contains(&true) {
                return Ok((vec![None; jobs.len()], 0));
            }
            match self.attempt(jobs, &take, waiting).await? {
                Attempt::Committed(answers, again) => return Ok((answers, again)),
                Attempt::Changed(valid) => {
                    for (t, ok) in take.iter_mut().zip(valid) {
                        *t = *t && ok;
                    }
                }
            }
        }
    }

    /// Folds what is left unfolded (SQLite), in a transaction of its own.
    /// Answers a committed group's requests once what the answers carry is read
    /// ([`read_answers`]): on a reader, in a task of the server's runtime, so that the writer
    /// goes on to the next group meanwhile. If that read fails, the requests of stored
    /// batches get the error (their batches are stored: the agent's retry is a duplicate).
    fn answer(&self, jobs: &[Job], flags: Vec<Option<bool>>, replies: Vec<Reply>) {
        let mut hosts: Vec<(trusthub_store::TenantId, Uuid, bool)> = jobs
            .iter()
            .zip(&flags)
            .filter(|(_, f)| f.is_some())
            .map(|(j, _)| (j.tenant, j.agent_id, j.security.is_some()))
            .collect();
        // One entry per host, reporting if any of its batches did.
        hosts.sort_by_key(|h| (h.1, !h.2));
        hosts.dedup_by_key(|h| h.1);
        let agents: Vec<Uuid> = jobs.iter().map(|j| j.agent_id).collect();
        let (db, hooks) = (self.db.clone(), self.hooks.clone());
        self.answers.spawn(async move {
            let read = read_answers(&db, &hooks, &hosts).await;
            for ((reply, fresh), agent) in replies.into_iter().zip(flags).zip(agents) {
                let one = match (&read, fresh) {
                    (_, None) => Ok(None),
                    (Ok(a), Some(fresh)) => Ok(Some(Accepted {
                        fresh,
                        http_checks: a.checks.get(&agent).cloned().unwrap_or_default(),
                        compliance_run: a.runs.get(&agent).copied(),
                    })),
                    (Err(e), Some(_)) => {
                        Err(trusthub_store::StoreError::Db(sqlx::Error::Protocol(
                            format!("the batch is stored, but reading the answer failed: {e}"),
                        )))
                    }
                };
                let _ = reply.send(one);
            }
        });
    }

    async fn fold_unfolded(&mut self) {
        let (db, Some(held)) = (&self.db, self.held.as_mut()) else {
            return;
        };
        let folded = async {
            let mut tx = db.begin().await?;
            held.begin();
            held.fold_unfolded(&mut tx).await?;
            tx.commit().await
        }
        .await;
        match folded {
            Ok(()) => held.committed(),
            Err(e) => {
                tracing::warn!(error = %e, "folding stored points into the rollups failed; trying again");
                held.failed();
            }
        }
    }

    /// Whether a batch's agent still stands as its request was checked (read again).
    async fn still_stands(&self, job: &Job) -> StoreResult<bool> {
        let mut c = self.db.conn().await?;
        Ok(agents::find_by_token(&mut c, &job.token_hash)
            .await?
            .is_some_and(|a| job.stands(&a, &job.token_hash)))
    }

    async fn attempt(
        &mut self,
        jobs: &[Job],
        take: &[bool],
        waiting: &(dyn Fn() -> bool + Sync),
    ) -> StoreResult<Attempt> {
        let (db, cache, apps, log) = (&self.db, &*self.cache, &self.hooks, self.log.as_ref());
        let now = jobs
            .iter()
            .map(|j| j.now)
            .max()
            .unwrap_or_else(OffsetDateTime::now_utc);
        let mut tx = db.begin().await?;
        if let Some(held) = self.held.as_mut() {
            held.begin();
        }
        let keys: Vec<(Uuid, Uuid)> = jobs
            .iter()
            .map(|j| (j.agent_id, j.batch.batch_id))
            .collect();
        let mut unique: Vec<(Uuid, Uuid)> = keys
            .iter()
            .zip(take)
            .filter(|(_, ok)| **ok)
            .map(|(k, _)| *k)
            .collect();
        unique.sort();
        unique.dedup();
        let new = telemetry::claim_batches(&mut tx, &unique, now).await?;
        let mut taken = HashSet::new();
        let mut flags = Vec::with_capacity(jobs.len());
        let mut rows = PointRows::default();
        let mut learned = Vec::new();
        let mut last_of_agent: HashMap<Uuid, &Job> = HashMap::new();
        for ((job, key), ok) in jobs.iter().zip(&keys).zip(take) {
            if !ok {
                flags.push(false);
                continue;
            }
            // The same batch twice in one group: the first is the new one.
            let fresh = new.contains(key) && taken.insert(*key);
            if fresh {
                let l = telemetry::resolve_series(
                    &mut tx,
                    job.agent_id,
                    &job.batch.metrics,
                    cache,
                    &mut rows,
                    job.resolved.as_ref(),
                )
                .await?;
                learned.push((job.agent_id, l));
                if let (Some(inv), Some(at)) = (&job.batch.inventory, job.inventory_at) {
                    telemetry::insert_inventory(&mut tx, job.agent_id, at, inv, job.now).await?;
                }
                if let Some(p) = &job.batch.processes {
                    telemetry::set_processes(&mut tx, job.agent_id, p, job.now).await?;
                }
                if job.observed.is_some() || !job.checks.is_empty() {
                    (apps.apps.0)(
                        &mut tx,
                        job.agent_id,
                        job.observed.as_ref(),
                        &job.checks,
                        job.now,
                    )
                    .await?;
                }
                if let Some(scan) = &job.config {
                    (apps.config.0)(&mut tx, scan, job.now).await?;
                }
                if let Some(report) = &job.security {
                    (apps.security.0)(&mut tx, report, job.now).await?;
                }
            }
            flags.push(fresh);
            last_of_agent.insert(job.agent_id, job);
        }
        let (stored, mut committed) = telemetry::insert_points(
            &mut tx,
            &rows,
            log.is_some().then(|| telemetry::unix_ms(now)),
            self.held.as_mut(),
            waiting(),
        )
        .await?;
        let repeated = (rows.series.len() as u64).saturating_sub(stored);
        let seen: Vec<agents::Seen<'_>> = last_of_agent
            .into_iter()
            .map(|(agent_id, job)| agents::Seen {
                agent_id,
                heartbeat: job.batch.heartbeat.as_ref(),
                reported_actions: job.reported_actions.as_deref(),
                cpu_percent: cpu_of(&job.batch.metrics),
            })
            .collect();
        // The agents as they stand now: a batch whose agent changed since its request was checked
        // is not stored (the request checks again).
        let mut current: HashMap<Uuid, agents::Credentialed> =
            agents::seen_many(&mut tx, &seen, now)
                .await?
                .into_iter()
                .map(|c| (c.agent.id, c))
                .collect();
        let still: Vec<bool> = jobs
            .iter()
            .zip(take)
            .map(|(j, t)| {
                !t || current
                    .get(&j.agent_id)
                    .is_some_and(|c| j.stands(&c.agent, &c.token_hash))
            })
            .collect();
        if still.contains(&false) {
            drop(tx);
            return Ok(Attempt::Changed(still));
        }
        if let Some(c) = committed.as_mut() {
            // Moved out: nothing reads the agents after this.
            c.agents = rows
                .owners
                .iter()
                .filter_map(|(seq, id)| {
                    let a = current.remove(id)?.agent;
                    Some(crate::store::metric_log::AgentLabels {
                        seq: *seq,
                        id: a.id,
                        tenant_id: a.tenant_id,
                        hostname: a.hostname,
                        tags: a.tags,
                    })
                })
                .collect();
        }
        let flags = flags
            .into_iter()
            .zip(take)
            .map(|(fresh, ok)| ok.then_some(fresh))
            .collect();
        tx.commit().await?;
        if let Some(held) = self.held.as_mut() {
            held.committed();
        }
        if let (Some(handoff), Some(committed)) = (log, committed) {
            handoff(Arc::new(committed));
        }
        for (agent, l) in learned {
            cache.learn(agent, l);
        }
        Ok(Attempt::Committed(flags, repeated))
    }
}

/// A batch's newest unlabelled `cpu.percent` (what the overview ranks agents by).
fn cpu_of(metrics: &[trusthub_core::agent::MetricSample]) -> Option<f64> {
    metrics
        .iter()
        .filter(|m| m.name == "cpu.percent" && m.labels.is_empty())
        .max_by_key(|m| m.ts)
        .map(|m| m.value)
}
