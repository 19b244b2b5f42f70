//! The Trusthub host agent (CONTRACT 4 and 11): registers once with an enrollment token,
//! then collects this host's metrics every interval and its inventory every few hours,
//! spools every batch on disk, and pushes it signed to the hub, oldest first, deleting it
//! only once the hub answered 202.
//!
//! The `trusthub-agent` binary and `trusthub up` both run [`run`].
//!
//! Four rooms, each only above the ones before it: [`host`] (running a command, the Docker
//! Engine, procfs, a project's owner — below everything, it imports nothing of the agent);
//! [`collect`] (what the agent reports: metrics, inventory, dependencies, drift, compliance,
//! honeypots, DNA, checks); [`actions`] (what the hub asks for through signed tokens:
//! restarts, patches, emergencies, console sessions — each within this host's allowlist);
//! [`link`] (the hub: the signed client, the WebSocket, the client certificate, the spool,
//! the state directory). [`run`] and [`cli`] sit on top. No module imports one that imports
//! it back.
//!
//! Invariant: it acts only on tokens signed by the hub key pinned at registration and within
//! this host's allowlist; whatever it runs for a project runs as that project's owner; a batch
//! leaves the spool only once the hub has it.

pub mod actions;
pub mod cli;
pub mod collect;
pub mod host;
pub mod link;

use actions::allow;
use collect::{checks, compliance, deps, dna, drift, honeypot, inventory, metrics};
use link::client::{HubClient, PushOutcome};
use link::spool::Spool;
use link::state::{Registration, StateDir};
use link::{mtls, ws};
use serde_json::{Value, json};
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use time::OffsetDateTime;
use tokio::time::Instant;

/// How the agent runs.
#[derive(Debug, Clone, clap::Args)]
pub struct Options {
    /// Hub URL, e.g. `https://hub.example:8080` (needed to enrol).
    #[arg(long, env = "TRUSTHUB_HUB")]
    pub hub: Option<String>,
    /// Enrollment token (`the_...`), needed only the first time.
    #[arg(long, env = "TRUSTHUB_ENROLL", hide_env_values = true)]
    pub enroll: Option<String>,
    /// Where the key, the registration and the spool live (mode 700).
    #[arg(
        long,
        env = "TRUSTHUB_AGENT_STATE_DIR",
        default_value = "/var/lib/trusthub-agent"
    )]
    pub state_dir: PathBuf,
    /// Seconds between metric pushes (default: what the hub says, 60).
    #[arg(long, env = "TRUSTHUB_AGENT_INTERVAL_SECS")]
    pub interval_secs: Option<u64>,
    /// Seconds between inventory snapshots (default: what the hub says, 6 h).
    #[arg(long, env = "TRUSTHUB_AGENT_INVENTORY_INTERVAL_SECS")]
    pub inventory_interval_secs: Option<u64>,
    /// Comma-separated action kinds this host accepts (overrides `actions.toml`).
    #[arg(long, env = "TRUSTHUB_AGENT_ALLOW_ACTIONS")]
    pub allow_actions: Option<String>,
    /// Directories to search for lockfiles (repeatable).
    #[arg(long = "project-path")]
    pub project_paths: Vec<PathBuf>,
    /// Directories to search for Go binaries, whose embedded module lists are reported
    /// (repeatable; default /usr/local/bin and /opt).
    #[arg(long = "binary-path")]
    pub binary_paths: Vec<PathBuf>,
    /// Do not look for projects in running processes' working directories, nor for Go
    /// binaries among their executables (only `--project-path` and `--binary-path`).
    #[arg(long)]
    pub no_process_discovery: bool,
    /// Largest spool, in bytes (oldest batches are dropped past it).
    #[arg(long, env = "TRUSTHUB_AGENT_SPOOL_MAX_BYTES", default_value_t = 256 * 1024 * 1024)]
    pub spool_max_bytes: u64,
    /// A PEM CA certificate to trust for the hub (self-signed hubs).
    #[arg(long, env = "TRUSTHUB_AGENT_CA_CERT")]
    pub ca_cert: Option<PathBuf>,
    /// Seconds between checks of the client certificate's expiry (renewed within 30 days).
    #[arg(
        long,
        env = "TRUSTHUB_AGENT_CERT_CHECK_SECS",
        default_value_t = 86_400,
        hide = true
    )]
    pub cert_check_secs: u64,
    /// dpkg's database directory for configuration scans (a chroot's or a test root's;
    /// default the host's).
    #[arg(long, env = "TRUSTHUB_AGENT_DPKG_ADMINDIR", hide = true)]
    pub dpkg_admindir: Option<PathBuf>,
    /// rpm's database directory for configuration scans (asks rpm even where dpkg exists).
    #[arg(long, env = "TRUSTHUB_AGENT_RPM_DBPATH", hide = true)]
    pub rpm_dbpath: Option<PathBuf>,
    /// Accept emergency console sessions (a recorded shell opened by an admin from the hub).
    #[arg(long, env = "TRUSTHUB_AGENT_ALLOW_CONSOLE",
        value_parser = clap::builder::BoolishValueParser::new(),
        action = clap::ArgAction::Set, num_args = 0..=1, require_equals = true,
        default_value = "false", default_missing_value = "true")]
    pub allow_console: bool,
    /// The user whose login shell a console runs.
    #[arg(long, env = "TRUSTHUB_AGENT_CONSOLE_USER", default_value = "root")]
    pub console_user: String,
    /// The auth log user honeypots are read from (default /var/log/auth.log or
    /// /var/log/secure, whichever exists).
    #[arg(long, env = "TRUSTHUB_AGENT_AUTH_LOG", hide = true)]
    pub auth_log: Option<PathBuf>,
    /// The root the compliance checks read the host under (a chroot's or a test tree's).
    #[arg(
        long,
        env = "TRUSTHUB_AGENT_COMPLIANCE_ROOT",
        default_value = "/",
        hide = true
    )]
    pub compliance_root: PathBuf,
    /// Largest watched file a configuration scan hashes; a larger one is reported
    /// `too_large` with its size and modification time (CONTRACT 30).
    #[arg(
        long,
        env = "TRUSTHUB_AGENT_CONFIG_MAX_FILE_BYTES",
        default_value_t = drift::DEFAULT_MAX_FILE_BYTES
    )]
    pub config_max_file_bytes: u64,
}

/// A finished scan: the patterns it ran with and what it saw.
type Scanned = (Vec<String>, Vec<trusthub_core::drift::ConfigHash>);

/// The configuration scan running beside the push loop, and what it found.
#[derive(Default)]
struct ConfigScans {
    running: Arc<std::sync::atomic::AtomicBool>,
    found: Arc<std::sync::Mutex<Option<Scanned>>>,
    skipped: Arc<std::sync::atomic::AtomicU64>,
    done: Arc<tokio::sync::Notify>,
}

impl ConfigScans {
    /// Starts a scan on a blocking thread unless one is still running (then skips it and
    /// counts the skip).
    fn start(
        &self,
        patterns: Vec<String>,
        db: drift::PackageDb,
        watcher: drift::Watcher,
        quiet: honeypot::QuietPaths,
        max_file_bytes: u64,
    ) {
        use std::sync::atomic::Ordering;
        if self.running.swap(true, Ordering::SeqCst) {
            let n = self.skipped.fetch_add(1, Ordering::Relaxed) + 1;
            tracing::warn!(
                skipped = n,
                "the last configuration scan is still running; this one is skipped"
            );
            return;
        }
        let (running, found, done) = (self.running.clone(), self.found.clone(), self.done.clone());
        crate::host::background::start("config scan", move || {
            let started = std::time::Instant::now();
            let files = {
                let _quiet = quiet;
                drift::scan_watching(&patterns, &db, Some(&watcher), max_file_bytes)
            };
            tracing::info!(
                files = files.len(),
                elapsed_ms = started.elapsed().as_millis() as u64,
                "configuration scan done"
            );
            if let Ok(mut f) = found.lock() {
                *f = Some((patterns, files));
            }
            running.store(false, Ordering::SeqCst);
            done.notify_one();
        });
    }

    /// The last finished scan's patterns and files, once.
    fn take(&self) -> Option<Scanned> {
        self.found.lock().ok().and_then(|mut f| f.take())
    }

    /// Scans skipped since the start.
    fn skipped(&self) -> u64 {
        self.skipped.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Facts about this host for registration.
pub fn host_facts() -> Value {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .unwrap_or_default()
            .trim()
            .to_owned()
    };
    let machine_id = [read("/etc/machine-id"), read("/var/lib/dbus/machine-id")]
        .into_iter()
        .find(|m| !m.is_empty())
        .unwrap_or_else(|| read("/proc/sys/kernel/hostname"));
    let os = inventory_os_name();
    json!({
        "machine_id": machine_id,
        "hostname": read("/proc/sys/kernel/hostname"),
        "os": os,
        "arch": std::env::consts::ARCH,
        "agent_version": env!("CARGO_PKG_VERSION"),
    })
}

fn inventory_os_name() -> String {
    let release = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
    release
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim_matches('"').to_owned())
        .unwrap_or_else(|| std::env::consts::OS.to_owned())
}

/// Registers if the state dir holds no registration yet; returns the registration.
pub async fn ensure_registered(opts: &Options, dir: &StateDir) -> Result<Registration, String> {
    let existing = dir.registration().map_err(|e| e.to_string())?;
    // An enrollment token on the command line always (re-)registers: the same key keeps the
    // same agent id and gets a new token (how an agent recovers after a token rotation).
    let (hub, enroll) = match (&opts.enroll, &existing) {
        (None, Some(r)) => return Ok(r.clone()),
        (Some(enroll), _) => (
            opts.hub
                .clone()
                .or_else(|| existing.as_ref().map(|r| r.hub.clone())),
            enroll,
        ),
        (None, None) => {
            return Err(format!(
                "{} holds no registration: start once with --hub <url> --enroll <token>",
                dir.path().display()
            ));
        }
    };
    let hub = hub.ok_or("--hub <url> is needed to enrol")?;
    let key = dir.signing_key().map_err(|e| e.to_string())?;
    let client = client_for(&hub, opts)?;
    let reg = client.register(enroll, &key, &host_facts()).await?;
    dir.save_registration(&reg).map_err(|e| e.to_string())?;
    let again = existing.is_some_and(|e| e.agent_id == reg.agent_id);
    tracing::info!(agent_id = %reg.agent_id, hub = %reg.hub, again, "registered");
    // A (re-)registration always gets a fresh certificate: how an agent whose certificate
    // was revoked comes back.
    if let Err(e) = ensure_client_cert(opts, dir, &reg, true).await {
        tracing::warn!(error = %e, "no client certificate; the agent works without one");
    }
    Ok(reg)
}

/// Requests a client certificate when the hub is reached over HTTPS and the agent holds none,
/// or one that ends within 30 days (or always, with `force`): a new RSA-2048 key and CSR made
/// here, signed by the hub (CONTRACT 12), stored in `<state-dir>/mtls`. The request goes
/// without the old certificate (an expired one would fail the handshake); the bearer token
/// is what authorises it, as at enrolment. `Ok(true)` when a new certificate was stored.
pub async fn ensure_client_cert(
    opts: &Options,
    dir: &StateDir,
    reg: &Registration,
    force: bool,
) -> Result<bool, String> {
    if !reg.hub.starts_with("https://") {
        return Ok(false);
    }
    let files = mtls::Mtls::new(dir.path());
    if !force
        && files
            .current()
            .is_some_and(|h| !h.due(OffsetDateTime::now_utc()))
    {
        return Ok(false);
    }
    let agent_id = reg.agent_id.clone();
    let request = tokio::task::spawn_blocking(move || mtls::make_request(&agent_id))
        .await
        .map_err(|e| e.to_string())??;
    let (cert, ca) = client_for(&reg.hub, opts)?
        .issue_client_cert(reg, &request.csr_pem)
        .await?;
    files
        .save(&cert, &request.key_pem, &ca)
        .map_err(|e| e.to_string())?;
    let held = files
        .current()
        .ok_or("the hub's certificate does not match the key sent")?;
    tracing::info!(serial = %held.serial, not_after = %held.not_after, "client certificate stored");
    Ok(true)
}

/// The `--ca-cert` PEM, when given.
fn read_ca(opts: &Options) -> Result<Option<Vec<u8>>, String> {
    opts.ca_cert
        .as_ref()
        .map(|p| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display())))
        .transpose()
}

fn client_for(hub: &str, opts: &Options) -> Result<HubClient, String> {
    HubClient::new(hub, read_ca(opts)?.as_deref(), None)
}

/// The client for pushes: presenting the agent's certificate when it holds a valid one.
fn pushing_client(
    reg: &Registration,
    dir: &StateDir,
    ca: Option<&[u8]>,
) -> Result<HubClient, String> {
    let held = mtls::Mtls::new(dir.path())
        .usable()
        .filter(|_| reg.hub.starts_with("https://"));
    HubClient::new(&reg.hub, ca, held.map(|h| h.identity_pem()).as_deref())
}

/// Runs until `shutdown` completes.
/// Brings the next batch forward to `in_` from now, and its sending with it — except while
/// backing off from an unreachable hub (the batch then waits in the spool).
fn hurry(next_collect: &mut Instant, next_send: &mut Instant, backoff: Duration, in_: Duration) {
    let soon = Instant::now() + in_;
    *next_collect = (*next_collect).min(soon);
    if backoff <= Duration::from_secs(1) {
        *next_send = (*next_send).min(soon);
    }
}

pub async fn run(opts: Options, shutdown: impl Future<Output = ()>) -> Result<(), String> {
    let dir = StateDir::open(&opts.state_dir).map_err(|e| e.to_string())?;
    let key = dir.signing_key().map_err(|e| e.to_string())?;
    let reg = ensure_registered(&opts, &dir).await?;
    let mut allowlist = allow::load_all(dir.path(), opts.allow_actions.as_deref())?;
    // Consoles only with --allow-console (CONTRACT 22): else the hub's session fails.
    allowlist
        .kinds
        .retain(|k| k != "console_open" || opts.allow_console);
    if opts.allow_console && !allowlist.kinds.iter().any(|k| k == "console_open") {
        allowlist.kinds.push("console_open".into());
    }
    let allowed = allowlist.kinds.clone();
    if let Err(e) = ensure_client_cert(&opts, &dir, &reg, false).await {
        tracing::warn!(error = %e, "cannot renew the client certificate now; retried at the next check");
    }
    let ca = read_ca(&opts)?;
    let mut client = pushing_client(&reg, &dir, ca.as_deref())?;
    let cert_check = Duration::from_secs(opts.cert_check_secs.max(1));
    let mut next_cert_check = Instant::now() + cert_check;
    let spool = Spool::new(dir.spool(), opts.spool_max_bytes);
    let mut interval = Duration::from_secs(
        opts.interval_secs
            .unwrap_or(reg.ingest_interval_secs.max(1) as u64)
            .max(1),
    );
    let mut inventory_every = Duration::from_secs(
        opts.inventory_interval_secs
            .unwrap_or(reg.inventory_interval_secs.max(60) as u64)
            .max(1),
    );
    tracing::info!(
        interval_secs = interval.as_secs(),
        pending = spool.pending().len(),
        ?allowed,
        "agent running"
    );

    let socket = ws::Socket::new(
        &reg,
        dir.path(),
        allowlist,
        ca.as_deref(),
        &opts.console_user,
    )?;
    let push_now = socket.push_now.clone();
    let action_socket = tokio::spawn(socket.run());
    let checks = checks::Checks::default();
    let checker = tokio::spawn(checks.clone().run());
    let mut collector = metrics::Collector::default();
    // Prime the rate counters so the first batch already has CPU and I/O rates.
    collector.collect(OffsetDateTime::now_utc());
    let started = std::time::Instant::now();
    let mut next_collect = Instant::now() + Duration::from_secs(1).min(interval);
    let mut next_inventory = Instant::now();
    let discovery = deps::discover::Discovery {
        project_paths: opts.project_paths.clone(),
        binary_paths: opts.binary_paths.clone(),
        processes: !opts.no_process_discovery,
        system: true,
        root: PathBuf::from("/"),
    };
    let mut next_send = Instant::now();
    let mut backoff = Duration::from_secs(1);
    // Configuration scans start once the hub said what to watch (its first answer).
    let mut config: Option<(Vec<String>, Duration)> = None;
    let mut next_config_scan = Instant::now();
    let config_wake = Arc::new(tokio::sync::Notify::new());
    let watcher = drift::Watcher::start(config_wake.clone());
    let honeypots =
        honeypot::Honeypots::new(opts.auth_log.clone().or_else(honeypot::default_auth_log));
    // Compliance runs: the agent's own every `compliance_every` (the first soon after the
    // start), and those the hub asks for by id; each runs on a blocking thread and its
    // report goes with the next batch.
    let mut compliance_every =
        Duration::from_secs(trusthub_core::compliance::DEFAULT_INTERVAL_SECS as u64);
    let mut next_compliance = Instant::now() + Duration::from_secs(5);
    let mut asked_run: Option<uuid::Uuid> = None;
    let mut waiting_run: Option<uuid::Uuid> = None;
    let compliance_report: Arc<std::sync::Mutex<Option<Value>>> = Arc::default();
    let compliance_running = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let compliance_done = Arc::new(tokio::sync::Notify::new());
    let start_run = {
        let (root, report) = (opts.compliance_root.clone(), compliance_report.clone());
        let (running, done) = (compliance_running.clone(), compliance_done.clone());
        move |run: Option<uuid::Uuid>, own: honeypot::OwnReads| {
            start_compliance(
                root.clone(),
                run,
                own,
                report.clone(),
                running.clone(),
                done.clone(),
            );
        }
    };
    let exe = std::env::current_exe().unwrap_or_default();
    let package_db = drift::PackageDb {
        dpkg_admindir: opts.dpkg_admindir.clone(),
        rpm_dbpath: opts.rpm_dbpath.clone(),
    };
    // Configuration scans run beside this loop (CONTRACT 30): a scan never delays a push;
    // its result goes with the first batch after it ends, and a scan still running when the
    // next is due is skipped and counted (`config_scans_skipped` in the heartbeat).
    let config_scan = ConfigScans::default();
    let mut last_honeypot_states: Option<Vec<trusthub_core::compliance::HoneypotState>> = None;
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            _ = tokio::time::sleep_until(next_collect.min(next_send).min(next_cert_check)) => {}
            _ = config_scan.done.notified() => {
                // A scan ended: its result goes with a batch now (CONTRACT 33: drift within
                // 5 s of the write).
                hurry(&mut next_collect, &mut next_send, backoff, Duration::ZERO);
                continue;
            }
            _ = checks.urgent.notified() => {
                // A check failed (or came back): its result goes with a batch now, so the
                // hub counts it at the check's own interval (CONTRACT 33). A burst of results
                // is one batch.
                hurry(&mut next_collect, &mut next_send, backoff, Duration::from_millis(500));
                continue;
            }
            _ = compliance_done.notified() => {
                // A run ended: its report goes now, and a run the hub asked for meanwhile
                // starts.
                if let Some(run) = waiting_run.take()
                    && !compliance_running.swap(true, std::sync::atomic::Ordering::SeqCst)
                {
                    tracing::info!(%run, "the hub asked for a compliance run");
                    asked_run = Some(run);
                    start_run(Some(run), honeypots.own_reads());
                }
                hurry(&mut next_collect, &mut next_send, backoff, Duration::ZERO);
                continue;
            }
            _ = push_now.notified() => {
                // The hub asked over the socket (a compliance run was requested): push now,
                // and its answer says what to do.
                hurry(&mut next_collect, &mut next_send, backoff, Duration::ZERO);
                continue;
            }
            _ = config_wake.notified() => {
                // A change in a watched directory: scan with the next batch, soon (a burst
                // of writes is one scan).
                tracing::debug!(watching = config.is_some(), "a watched directory changed");
                if config.is_some() {
                    let soon = Instant::now() + Duration::from_secs(2);
                    next_config_scan = next_config_scan.min(soon);
                    hurry(&mut next_collect, &mut next_send, backoff, Duration::from_secs(2));
                }
                continue;
            }
        }
        let now = Instant::now();
        if now >= next_cert_check {
            next_cert_check = now + cert_check;
            match ensure_client_cert(&opts, &dir, &reg, false).await {
                // New connections present the new certificate (the pool of the old client
                // goes with it: its connections carry the certificate just revoked).
                Ok(true) => client = pushing_client(&reg, &dir, ca.as_deref())?,
                Ok(false) => {}
                Err(e) => tracing::warn!(error = %e, "cannot renew the client certificate now"),
            }
        }
        if now >= next_collect {
            next_collect = now + interval;
            let ts = OffsetDateTime::now_utc();
            let mut batch = json!({
                "batch_id": uuid::Uuid::now_v7(),
                "metrics": collector.collect(ts),
                "heartbeat": {
                    "agent_version": env!("CARGO_PKG_VERSION"),
                    "agent_uptime_secs": started.elapsed().as_secs(),
                    "allowed_actions": allowed,
                },
            });
            if now >= next_inventory {
                next_inventory = now + inventory_every;
                let inv = inventory::collect(&discovery, ts).await;
                batch["processes"] = inv["processes"].clone();
                batch["inventory"] = inv;
                let _own = honeypots.own_reads();
                batch["dna"] = dna::collect(std::path::Path::new("/"), &exe);
            } else {
                let (live, processes) = inventory::live().await;
                batch["live"] = live;
                batch["processes"] = processes;
            }
            if let Some((patterns, every)) = config.clone().filter(|_| now >= next_config_scan) {
                next_config_scan = now + every;
                let own_reads = honeypots.quiet_for(honeypots.files_matching(&patterns));
                config_scan.start(
                    patterns,
                    package_db.clone(),
                    watcher.clone(),
                    own_reads,
                    opts.config_max_file_bytes,
                );
            }
            if let Some((patterns, files)) = config_scan.take() {
                tracing::debug!(files = files.len(), "configuration scanned");
                batch["config_hashes"] = json!(files);
                batch["config_patterns"] = json!(patterns);
            }
            batch["heartbeat"]["config_scans_skipped"] = json!(config_scan.skipped());
            let results = checks.take_results();
            if !results.is_empty() {
                batch["app_checks"] = json!(results);
            }
            if let Some(report) = compliance_report.lock().ok().and_then(|mut r| r.take()) {
                batch["compliance"] = report;
            }
            let touched = honeypots.take();
            if !touched.is_empty() {
                batch["honeypot_events"] = json!(touched);
            }
            // Whether each honeypot is armed, when that changed (CONTRACT 30).
            let states = honeypots.states();
            if last_honeypot_states.as_ref() != Some(&states) {
                batch["honeypot_states"] = json!(states);
                last_honeypot_states = Some(states);
            }
            let id = batch["batch_id"].as_str().unwrap_or_default().to_owned();
            match serde_json::to_vec(&batch) {
                Ok(bytes) => {
                    if let Err(e) = spool.push(time_ms(ts), &id, &bytes) {
                        tracing::error!(error = %e, "cannot spool a batch");
                    }
                }
                Err(e) => tracing::error!(error = %e, "cannot serialise a batch"),
            }
        }
        if Instant::now() >= next_compliance
            && !compliance_running.swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            next_compliance = Instant::now() + compliance_every;
            start_run(None, honeypots.own_reads());
        }
        if Instant::now() >= next_send {
            match drain(&client, &reg, &key, &spool).await {
                Ok(ack) => {
                    if let Some(a) = &ack {
                        if let Some(list) = &a.honeypots {
                            honeypots.set(list);
                        }
                        if let Some(secs) = a.compliance_interval.filter(|s| *s >= 60) {
                            let every = Duration::from_secs(secs);
                            if every != compliance_every {
                                next_compliance = next_compliance.min(Instant::now() + every);
                                compliance_every = every;
                            }
                        }
                        if let Some(run) = a.compliance_run
                            && asked_run != Some(run)
                            && compliance_running.swap(true, std::sync::atomic::Ordering::SeqCst)
                        {
                            // A run is under way (the agent's own): this one starts as it ends.
                            waiting_run = Some(run);
                        } else if let Some(run) = a.compliance_run
                            && asked_run != Some(run)
                        {
                            tracing::info!(%run, "the hub asked for a compliance run");
                            asked_run = Some(run);
                            start_run(Some(run), honeypots.own_reads());
                            // The results go with a batch as the run ends (its report
                            // wakes the loop through `compliance_done`).
                        }
                    }
                    if let Some(wanted) = ack.as_ref().and_then(|a| a.http_checks.clone()) {
                        checks.set(wanted);
                    }
                    if let Some((paths, secs)) = ack.as_ref().and_then(|a| a.config.clone()) {
                        let every = Duration::from_secs(secs.max(10));
                        let changed = config.as_ref().is_none_or(|(p, _)| *p != paths);
                        if changed {
                            // New patterns: scan with the next batch.
                            next_config_scan = Instant::now();
                            next_collect =
                                next_collect.min(Instant::now() + Duration::from_secs(1));
                        } else if config.as_ref().is_some_and(|(_, e)| *e != every) {
                            next_config_scan = next_config_scan.min(Instant::now() + every);
                        }
                        config = Some((paths, every));
                    }
                    // Flags given on the command line win over the hub's governance.
                    if let Some((push, inv)) = ack.and_then(|a| a.intervals) {
                        if opts.interval_secs.is_none()
                            && push > 0
                            && Duration::from_secs(push) != interval
                        {
                            tracing::info!(secs = push, "push interval changed by the hub");
                            interval = Duration::from_secs(push);
                            next_collect = next_collect.min(Instant::now() + interval);
                        }
                        if opts.inventory_interval_secs.is_none() && inv > 0 {
                            inventory_every = Duration::from_secs(inv);
                        }
                    }
                    backoff = Duration::from_secs(1);
                    next_send = next_collect;
                }
                Err(wait) => {
                    let jitter = Duration::from_millis(
                        u64::from(
                            trusthub_core::secret::random_bytes::<2>()
                                .map(u16::from_le_bytes)
                                .unwrap_or(0),
                        ) % 1000,
                    );
                    let delay = wait.unwrap_or(backoff).max(backoff) + jitter;
                    backoff = (backoff * 2).min(Duration::from_secs(300));
                    next_send = Instant::now() + delay;
                }
            }
        }
    }
    checker.abort();
    action_socket.abort();
    tracing::info!(
        pending = spool.pending().len(),
        "agent stopped; spooled batches go out at the next start"
    );
    Ok(())
}

/// Runs the compliance checks under `root` on a blocking thread; the report (answering
/// `run`, if the hub asked) is left in `slot` for the next batch.
fn start_compliance(
    root: PathBuf,
    run: Option<uuid::Uuid>,
    own: honeypot::OwnReads,
    slot: Arc<std::sync::Mutex<Option<Value>>>,
    running: Arc<std::sync::atomic::AtomicBool>,
    done: Arc<tokio::sync::Notify>,
) {
    crate::host::background::start("compliance", move || {
        let checked_at = OffsetDateTime::now_utc();
        let outcomes = {
            let _own = own;
            compliance::run(&root)
        };
        let results: Vec<Value> = outcomes
            .iter()
            .map(|o| {
                json!({"check_id": o.check_id, "status": o.status.as_str(), "evidence": o.evidence,
                       "remediation": o.remediation})
            })
            .collect();
        let failed = outcomes
            .iter()
            .filter(|o| o.status == compliance::Status::Fail)
            .count();
        tracing::info!(checks = results.len(), failed, run = ?run, "compliance checks ran");
        let report = json!({
            "run_id": run,
            "checked_at": checked_at.format(&time::format_description::well_known::Rfc3339).unwrap_or_default(),
            "results": results,
        });
        if let Ok(mut s) = slot.lock() {
            *s = Some(report);
        }
        running.store(false, std::sync::atomic::Ordering::SeqCst);
        // Its report is pushed at once (CONTRACT 33 for a run the hub asked for), and a run
        // asked for meanwhile starts.
        done.notify_one();
    });
}

fn time_ms(t: OffsetDateTime) -> i64 {
    (t.unix_timestamp_nanos() / 1_000_000) as i64
}

/// Sends spooled batches oldest first; stops at the first one the hub cannot take now and
/// returns how long it asked to wait. On success, the last answer.
async fn drain(
    client: &HubClient,
    reg: &Registration,
    key: &ed25519_dalek::SigningKey,
    spool: &Spool,
) -> Result<Option<link::client::Ack>, Option<Duration>> {
    let mut governed = None;
    for path in spool.pending() {
        let Ok(bytes) = std::fs::read(&path) else {
            spool.remove(&path);
            continue;
        };
        let Ok(mut batch) = serde_json::from_slice::<Value>(&bytes) else {
            tracing::error!(path = %path.display(), "unreadable spooled batch moved to rejected/");
            spool.reject(&path, "the spooled file is not JSON");
            continue;
        };
        // sent_at is the moment of sending (the hub's replay window), not of collection.
        batch["sent_at"] = json!(
            OffsetDateTime::now_utc()
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default()
        );
        let body = serde_json::to_vec(&batch).unwrap_or_default();
        match client.push(reg, key, &body).await {
            PushOutcome::Stored(ack) => {
                governed = Some(ack);
                spool.remove(&path);
            }
            PushOutcome::Rejected(why) => {
                // Kept, never deleted (CONTRACT 18): the next batches go on.
                tracing::error!(path = %path.display(), %why, rejected_dir = %spool.rejected_dir().display(),
                    "the hub refused a batch; kept in rejected/");
                spool.reject(&path, &why);
            }
            PushOutcome::Later {
                reason,
                retry_after,
            } => {
                tracing::warn!(%reason, pending = spool.pending().len(), "hub not taking batches now; keeping them spooled");
                return Err(retry_after);
            }
        }
    }
    Ok(governed)
}

/// A systemd unit that runs the agent with this state dir.
pub fn systemd_unit(exe: &std::path::Path, state_dir: &std::path::Path) -> String {
    format!(
        "[Unit]\nDescription=Trusthub host agent\nAfter=network-online.target\nWants=network-online.target\n\n\
         [Service]\nExecStart={} run --state-dir {}\nRestart=always\nRestartSec=5\n\n\
         [Install]\nWantedBy=multi-user.target\n",
        exe.display(),
        state_dir.display()
    )
}
