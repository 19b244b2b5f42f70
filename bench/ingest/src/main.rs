//! Ingest benchmark (issue 3): N simulated agents, registered for real, push signed batches of
//! S samples with concurrency C for D seconds against a running hub; then the same rows go
//! straight into the same storage engine without the hub (the raw ceiling), and the ratio is
//! printed. Run by hand (`bench/ingest.sh`, `bench/remote_write.sh`); loopback only; bounded
//! by `--duration-secs`. `--vm` pushes the same batches to VictoriaMetrics' JSON import in the
//! same run (a peer); `--watch-lag` samples the hub's remote-write lag while it runs.

use clap::Parser;
use ed25519_dalek::SigningKey;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use time::OffsetDateTime;
use trusthub_bench_ingest::{cpu_line, machine_cpu, proc_cpu_secs, proc_mib, procs_cpu};
use trusthub_core::agent::{MetricSample, sign_header};
use trusthub_store::{Db, DbOptions};

#[derive(Debug, Parser)]
struct Args {
    /// Hub base URL.
    #[arg(long, default_value = "http://127.0.0.1:18181")]
    hub: String,
    /// Owner email and password (to make an enrollment token).
    #[arg(long, default_value = "admin@trusthub.local")]
    email: String,
    #[arg(long)]
    password: String,
    /// Simulated agents.
    #[arg(long, default_value_t = 50)]
    agents: usize,
    /// Concurrent requests.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Seconds of load (each phase).
    #[arg(long, default_value_t = 20)]
    duration_secs: u64,
    /// Samples per batch.
    #[arg(long, default_value_t = 100)]
    samples: usize,
    /// `realistic` (the default): what an agent pushes — every batch one sample of each of
    /// `samples` distinct series, all at the batch's time. `flattering`: 10 series with 10
    /// samples each per batch (fewer series to touch; the shape of earlier figures).
    #[arg(long, default_value = "realistic")]
    shape: String,
    /// Every batch of an agent re-sends the same points under a new batch id (an agent that
    /// lost its spool state): after its first batch, every sample repeats a stored point.
    #[arg(long)]
    repeat: bool,
    /// Open loop: offer this many samples per second in total (batches start on a fixed
    /// schedule, at most `concurrency` in flight) and measure each latency from the batch's
    /// scheduled start, so a stalled hub is charged for the batches it delayed (no
    /// coordinated omission). Without it, each of the `concurrency` workers sends its next
    /// batch as soon as the last one was answered (closed loop: the hub's maximum rate).
    #[arg(long)]
    rate: Option<f64>,
    /// Print, per 100 ms of the run, how many batches took longer than this many
    /// milliseconds and the longest of them (to see whether the tail is periodic stalls).
    #[arg(long)]
    slow_ms: Option<u64>,
    /// Seconds of the same load sent before the measured `duration_secs` and left out of its
    /// figures (new connections, each simulated agent's first batch creating its series);
    /// the p99 over the whole run is printed beside it.
    #[arg(long, default_value_t = 0)]
    warmup_secs: u64,
    /// Pid of the hub, for its peak RSS.
    #[arg(long)]
    hub_pid: Option<u32>,
    /// Database URL for the raw-ceiling phase (an empty database of the same engine).
    #[arg(long)]
    raw_db: Option<String>,
    /// A PostgreSQL database for the plain ceiling (issue 63): the same samples as rows of a
    /// four-column table keyed by (agent, series, ts), each push one 100-row `INSERT ...
    /// SELECT FROM unnest(...)` in a transaction of its own, from `--unnest-connections`
    /// connections, as fast as they go. No hub, no rollups, no series names.
    #[arg(long)]
    unnest_db: Option<String>,
    #[arg(long, default_value_t = 8)]
    unnest_connections: usize,
    /// More hubs on the same database (the cluster case): agent `i` pushes to hub
    /// `i % (1 + n)`, the first being `--hub` (where agents register).
    #[arg(long)]
    also_hub: Vec<String>,
    /// Pids of the `--also-hub` processes (their CPU is counted with `--hub-pid`'s).
    #[arg(long)]
    also_hub_pid: Vec<u32>,
    /// A PEM CA to trust for an `https://` hub (`<data-dir>/hub-ca.pem` of `--tls-self`).
    #[arg(long)]
    ca_cert: Option<std::path::PathBuf>,
    /// Every simulated agent gets a client certificate of the hub CA (the hub makes the key)
    /// and presents it on every request (mTLS; the hub cross-checks each request).
    #[arg(long)]
    client_certs: bool,
    /// Skip the hub: push the same batches (same agents, series, samples, concurrency) to
    /// this VictoriaMetrics' `/api/v1/import` as JSON lines, one line per series.
    #[arg(long)]
    vm_only: Option<String>,
    /// Sample the hub's `trusthub_remote_write_lag_seconds` every 250 ms during the phase and
    /// after it until the lag is 0 again; print its p50, p99 and maximum and the drain time.
    #[arg(long)]
    watch_lag: bool,
}

/// A client as one agent has: its own connection pool, the hub's CA, its certificate. An
/// agent keeps one connection; workers that send for the same agent at once may keep a few
/// (at most 4 × concurrency / agents, at least 2): with 1,000 agents, keeping `concurrency`
/// idle connections per agent held the hub at its connection cap (10,000) after ~25 s and
/// stalled the run (issue 63).
fn agent_client(args: &Args, identity: Option<&[u8]>) -> Result<reqwest::Client, String> {
    let idle = (4 * args.concurrency).div_ceil(args.agents.max(1)).max(2);
    let mut b = reqwest::Client::builder().pool_max_idle_per_host(idle);
    if let Some(path) = &args.ca_cert {
        let pem = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        b = b.tls_certs_only([reqwest::Certificate::from_pem(&pem).map_err(|e| e.to_string())?]);
    }
    if let Some(pem) = identity {
        b = b.identity(reqwest::Identity::from_pem(pem).map_err(|e| e.to_string())?);
    }
    b.build().map_err(|e| e.to_string())
}

fn iso(t: OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// Samples of one batch number `seq` (see `--shape`); every sample its own stored point
/// unless `--repeat` makes every batch of an agent the same points again.
fn samples(n: usize, seq: u64, shape: Shape) -> Vec<MetricSample> {
    let base = OffsetDateTime::now_utc();
    match shape {
        Shape::Realistic => {
            // One scrape: n series, one sample each, all at the batch's millisecond.
            let at = base + time::Duration::milliseconds(seq as i64);
            (0..n)
                .map(|i| MetricSample {
                    name: format!("bench.metric_{i}"),
                    ts: at,
                    value: (seq as f64) + i as f64 * 0.5,
                    labels: BTreeMap::new(),
                })
                .collect()
        }
        Shape::Flattering => (0..n)
            .map(|i| MetricSample {
                name: format!("bench.metric_{}", i % 10),
                // Distinct milliseconds for every sample, so each one is a stored point.
                ts: base + time::Duration::milliseconds((seq as i64) * n as i64 + i as i64),
                value: (seq as f64) + i as f64 * 0.5,
                labels: BTreeMap::from([("shard".to_owned(), format!("{}", i % 10))]),
            })
            .collect(),
    }
}

/// The batch shape (`--shape`).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Shape {
    Realistic,
    Flattering,
}

impl Shape {
    fn parse(s: &str) -> Result<Shape, String> {
        match s {
            "realistic" => Ok(Shape::Realistic),
            "flattering" => Ok(Shape::Flattering),
            other => Err(format!("--shape {other}: use realistic or flattering")),
        }
    }
}

/// The JSON body of one batch of [`samples`], written straight into `out` (the load generator
/// shares the hub's 2 cores: building a `serde_json::Value` tree per batch cost it three times
/// as much CPU).
fn batch_body(n: usize, seq: u64, shape: Shape, out: &mut String) {
    use std::fmt::Write;
    out.clear();
    let _ = write!(
        out,
        r#"{{"batch_id":"{}","sent_at":"{}","metrics":["#,
        uuid::Uuid::now_v7(),
        iso(OffsetDateTime::now_utc())
    );
    for (i, s) in samples(n, seq, shape).iter().enumerate() {
        let _ = write!(
            out,
            r#"{}{{"name":"{}","ts":"{}","value":{}"#,
            if i == 0 { "" } else { "," },
            s.name,
            iso(s.ts),
            s.value,
        );
        match s.labels.get("shard") {
            Some(shard) => {
                let _ = write!(out, r#","labels":{{"shard":"{shard}"}}}}"#);
            }
            None => out.push('}'),
        }
    }
    out.push_str("]}");
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

async fn hub_phase(args: &Args) -> Result<f64, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = agent_client(args, None)?;
    let api = format!("{}/api/v1", args.hub.trim_end_matches('/'));
    let login = http
        .post(format!("{api}/auth/login"))
        .json(&json!({"email": args.email, "password": args.password}))
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let cookie = login
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .and_then(|c| c.split(';').next())
        .ok_or("login failed")?
        .to_owned();
    let enroll: Value = http
        .post(format!("{api}/agents/enrollment-tokens"))
        .header("cookie", &cookie)
        .json(&json!({}))
        .send()
        .await
        .map_err(|e| e.to_string())?
        .json()
        .await
        .map_err(|e| e.to_string())?;
    let enroll = enroll["token"]
        .as_str()
        .ok_or("no enrollment token")?
        .to_owned();
    let mut agents = Vec::with_capacity(args.agents);
    for i in 0..args.agents {
        let key = SigningKey::from_bytes(
            &trusthub_core::secret::random_bytes::<32>().map_err(|e| e.to_string())?,
        );
        let body = json!({"machine_id": format!("bench-{}-{i}", uuid::Uuid::new_v4().simple()), "hostname": format!("bench-{i}"), "os": "bench", "arch": "x86_64", "agent_version": "bench", "signing_pubkey": trusthub_core::secret::hex(key.verifying_key().as_bytes())}).to_string();
        let r: Value = http
            .post(format!("{api}/agents/register"))
            .bearer_auth(&enroll)
            .header("content-type", "application/json")
            .header("x-service-signature", sign_header(&key, body.as_bytes()))
            .body(body)
            .send()
            .await
            .map_err(|e| e.to_string())?
            .json()
            .await
            .map_err(|e| e.to_string())?;
        let token = r["agent_token"]
            .as_str()
            .ok_or("registration failed")?
            .to_owned();
        let identity = if args.client_certs {
            let c: Value = http
                .post(format!("{api}/agents/issue-client-cert"))
                .bearer_auth(&token)
                .json(&json!({}))
                .send()
                .await
                .map_err(|e| e.to_string())?
                .json()
                .await
                .map_err(|e| e.to_string())?;
            Some(format!(
                "{}{}",
                c["private_key_pem"]
                    .as_str()
                    .ok_or("no certificate issued")?,
                c["certificate_pem"]
                    .as_str()
                    .ok_or("no certificate issued")?
            ))
        } else {
            None
        };
        // Each agent its own connections, as real agents have (in every mode, so the
        // modes compare the same number of connections).
        let client = agent_client(args, identity.as_deref().map(str::as_bytes))?;
        agents.push((key, token, client));
    }
    let agents = Arc::new(agents);
    let apis: Arc<Vec<String>> = Arc::new(
        std::iter::once(api.clone())
            .chain(
                args.also_hub
                    .iter()
                    .map(|h| format!("{}/api/v1", h.trim_end_matches('/'))),
            )
            .collect(),
    );
    let hub_pids: Vec<u32> = args
        .hub_pid
        .into_iter()
        .chain(args.also_hub_pid.iter().copied())
        .collect();
    let hubs_cpu = |pids: &[u32]| pids.iter().filter_map(|p| proc_cpu_secs(*p)).sum::<f64>();
    let hubs_before = hubs_cpu(&hub_pids);
    let postgres_before = procs_cpu("postgres");
    let (machine_before, me_before) = (machine_cpu(), proc_cpu_secs(std::process::id()));
    let watching = args
        .watch_lag
        .then(|| tokio::spawn(watch_lag(args.hub.trim_end_matches('/').to_owned())));
    let cpu_before = args.hub_pid.and_then(proc_cpu_secs);
    let start = Instant::now();
    let warmup = Duration::from_secs(args.warmup_secs);
    let deadline = start + warmup + Duration::from_secs(args.duration_secs);
    let seq = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for w in 0..args.concurrency {
        let (apis, agents, seq, errors) =
            (apis.clone(), agents.clone(), seq.clone(), errors.clone());
        let n = args.samples;
        let (shape, repeat) = (Shape::parse(&args.shape)?, args.repeat);
        let pace = args
            .rate
            .map(|rate| Duration::from_secs_f64(n as f64 / rate.max(1.0)));
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            let mut body = String::new();
            let mut i = w;
            loop {
                let s = seq.fetch_add(1, Ordering::Relaxed);
                let scheduled = pace.map(|pace| start + pace.mul_f64(s as f64));
                if scheduled.unwrap_or_else(Instant::now) >= deadline {
                    break;
                }
                let agent = i % agents.len();
                let (key, token, http) = &agents[agent];
                i += 1;
                // `--repeat`: the same points for every batch of an agent.
                let points_of = if repeat { agent as u64 } else { s };
                batch_body(n, points_of, shape, &mut body);
                let signature = sign_header(key, body.as_bytes());
                // Latency runs from the scheduled start (open loop) or from the send (closed
                // loop), never over building and signing the body.
                let due = match scheduled {
                    Some(at) => {
                        tokio::time::sleep_until(at.into()).await;
                        at
                    }
                    None => Instant::now(),
                };
                let r = http
                    .post(format!("{}/ingest", apis[agent % apis.len()]))
                    .bearer_auth(token)
                    .header("content-type", "application/json")
                    .header("x-service-signature", signature)
                    .body(body.clone())
                    .send()
                    .await;
                match r {
                    Ok(r) if r.status().as_u16() == 202 => {
                        lat.push((due - start, due.elapsed().as_micros() as u64))
                    }
                    failed => {
                        // The first few failures are shown: a figure with errors is explained.
                        if errors.fetch_add(1, Ordering::Relaxed) < 3 {
                            let why = match failed {
                                Ok(r) => format!(
                                    "HTTP {}: {}",
                                    r.status(),
                                    r.text().await.unwrap_or_default()
                                ),
                                Err(e) => format!("{e:?}"),
                            };
                            eprintln!("a batch failed: {why}");
                        }
                    }
                }
            }
            lat
        }));
    }
    let mut lat = Vec::new();
    for t in tasks {
        lat.extend(t.await.map_err(|e| e.to_string())?);
    }
    let cpu = cpu_line(
        "hub",
        cpu_before,
        args.hub_pid,
        lat.len() as u64 * args.samples as u64,
    );
    if let Some(slow) = args.slow_ms {
        print_slow_windows(&lat, slow);
    }
    // p50 and p99 over the whole run, warm-up included, when there was one.
    let whole = (args.warmup_secs > 0).then(|| {
        let mut all: Vec<u64> = lat.iter().map(|(_, l)| *l).collect();
        all.sort_unstable();
        (all.len(), percentile(&all, 0.5), percentile(&all, 0.99))
    });
    let mut lat: Vec<u64> = lat
        .into_iter()
        .filter(|(at, _)| *at >= warmup)
        .map(|(_, l)| l)
        .collect();
    lat.sort_unstable();
    // Batches started in the measured window, over its length.
    let rate = lat.len() as f64 * args.samples as f64 / args.duration_secs.max(1) as f64;
    println!(
        "hub:  {} batches ({} samples each) in {} s = {rate:.0} samples/s{}; p50 {:.1} ms, p99 {:.1} ms; errors {}",
        lat.len(),
        args.samples,
        args.duration_secs,
        args.rate
            .map(|r| format!(" (offered {r:.0}, latency from the scheduled start)"))
            .unwrap_or_default(),
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
        errors.load(Ordering::Relaxed)
    );
    if let Some((n, p50, p99)) = whole {
        println!(
            "      after {} s of warm-up left out; over the whole run ({n} batches): p50 {p50:.1} ms, p99 {p99:.1} ms",
            args.warmup_secs
        );
    }
    if let Some(cpu) = cpu {
        println!("{cpu}");
    }
    let samples_done = (lat.len() as u64 * args.samples as u64).max(1) as f64;
    if hub_pids.len() > 1 {
        let used = hubs_cpu(&hub_pids) - hubs_before;
        println!(
            "{} hubs' CPU in the timed window: {used:.2} s, {:.2} µs per sample",
            hub_pids.len(),
            used * 1e6 / samples_done
        );
    }
    if let (Some(me), Some(now)) = (me_before, proc_cpu_secs(std::process::id())) {
        println!(
            "load generator CPU (this process): {:.2} s, {:.2} µs per sample",
            now - me,
            (now - me) * 1e6 / samples_done
        );
    }
    if let (Some((busy0, all0)), Some((busy1, all1))) = (machine_before, machine_cpu()) {
        println!(
            "the machine was {:.0} % busy in the timed window ({:.1} of {:.1} core-seconds)",
            100.0 * (busy1 - busy0) / (all1 - all0).max(1e-9),
            busy1 - busy0,
            all1 - all0
        );
    }
    let server = procs_cpu("postgres") - postgres_before;
    if server > 0.0 {
        println!(
            "PostgreSQL server CPU in the timed window: {server:.2} s, {:.2} µs per sample",
            server * 1e6 / samples_done
        );
    }
    if let Some(rss) = args.hub_pid.and_then(|pid| proc_mib(Some(pid), "VmHWM")) {
        println!("hub peak RSS: {rss} MiB");
    }
    if let Some(w) = watching {
        let loaded = Instant::now();
        w.abort();
        // After the load: how long until everything stored was accepted.
        let http = reqwest::Client::new();
        let mut drained = None;
        while loaded.elapsed() < Duration::from_secs(600) {
            if lag_now(&http, args.hub.trim_end_matches('/')).await == Some(0.0) {
                drained = Some(loaded.elapsed());
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        let samples = LAG.lock().map(|l| l.clone()).unwrap_or_default();
        let mut sorted = samples.clone();
        sorted.sort_by(f64::total_cmp);
        let at = |p: f64| {
            sorted
                .get(((sorted.len() as f64 - 1.0) * p).round() as usize)
                .copied()
                .unwrap_or_default()
        };
        println!(
            "remote-write lag during the load ({} readings every 250 ms): p50 {:.2} s, p99 {:.2} s, max {:.2} s; after the load, 0 again in {}",
            sorted.len(),
            at(0.5),
            at(0.99),
            at(1.0),
            drained
                .map(|d| format!("{:.1} s", d.as_secs_f64()))
                .unwrap_or_else(|| "more than 600 s".into())
        );
    }
    Ok(rate)
}

/// Lag readings of the current phase.
static LAG: std::sync::Mutex<Vec<f64>> = std::sync::Mutex::new(Vec::new());

async fn lag_now(http: &reqwest::Client, hub: &str) -> Option<f64> {
    let text = http
        .get(format!("{hub}/metrics"))
        .send()
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    text.lines()
        .find(|l| l.starts_with("trusthub_remote_write_lag_seconds{"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

async fn watch_lag(hub: String) {
    let http = reqwest::Client::new();
    if let Ok(mut l) = LAG.lock() {
        l.clear();
    }
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    loop {
        tick.tick().await;
        if let Some(v) = lag_now(&http, &hub).await
            && let Ok(mut l) = LAG.lock()
        {
            l.push(v);
        }
    }
}

/// The batches of [`hub_phase`] pushed to VictoriaMetrics' JSON import instead: one line per
/// series (`{"metric": {...}, "values": [v], "timestamps": [ms]}`), the agent as labels.
async fn vm_phase(args: &Args, vm: &str) -> Result<f64, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let shape = Shape::parse(&args.shape)?;
    let clients: Vec<reqwest::Client> = (0..args.agents)
        .map(|_| agent_client(args, None))
        .collect::<Result<_, _>>()?;
    let clients = Arc::new(clients);
    let url = format!("{}/api/v1/import", vm.trim_end_matches('/'));
    let cpu_before = args.hub_pid.and_then(proc_cpu_secs);
    let start = Instant::now();
    let deadline = start + Duration::from_secs(args.duration_secs);
    let seq = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for w in 0..args.concurrency {
        let (url, clients, seq, errors) =
            (url.clone(), clients.clone(), seq.clone(), errors.clone());
        let n = args.samples;
        let pace = args
            .rate
            .map(|rate| Duration::from_secs_f64(n as f64 / rate.max(1.0)));
        tasks.push(tokio::spawn(async move {
            use std::fmt::Write;
            let mut lat = Vec::new();
            let mut body = String::new();
            let mut i = w;
            loop {
                let s = seq.fetch_add(1, Ordering::Relaxed);
                let scheduled = pace.map(|pace| start + pace.mul_f64(s as f64));
                if scheduled.unwrap_or_else(Instant::now) >= deadline {
                    break;
                }
                let agent = i % clients.len();
                i += 1;
                body.clear();
                for m in samples(n, s, shape) {
                    let _ = write!(
                        body,
                        r#"{{"metric":{{"__name__":"{}","agent_id":"bench-{agent}","hostname":"bench-{agent}"{}}},"values":[{}],"timestamps":[{}]}}"#,
                        m.name.replace('.', "_"),
                        m.labels
                            .get("shard")
                            .map(|s| format!(r#","shard":"{s}""#))
                            .unwrap_or_default(),
                        m.value,
                        m.ts.unix_timestamp_nanos() / 1_000_000
                    );
                    body.push('\n');
                }
                let due = match scheduled {
                    Some(at) => {
                        tokio::time::sleep_until(at.into()).await;
                        at
                    }
                    None => Instant::now(),
                };
                match clients[agent].post(&url).body(body.clone()).send().await {
                    Ok(r) if r.status().is_success() => lat.push(due.elapsed().as_micros() as u64),
                    _ => {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            lat
        }));
    }
    let mut lat = Vec::new();
    for t in tasks {
        lat.extend(t.await.map_err(|e| e.to_string())?);
    }
    lat.sort_unstable();
    let rate = lat.len() as f64 * args.samples as f64 / args.duration_secs.max(1) as f64;
    println!(
        "vm:   {} batches ({} samples each) in {} s = {rate:.0} samples/s{}; p50 {:.1} ms, p99 {:.1} ms; errors {}",
        lat.len(),
        args.samples,
        args.duration_secs,
        args.rate
            .map(|r| format!(" (offered {r:.0}, latency from the scheduled start)"))
            .unwrap_or_default(),
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
        errors.load(Ordering::Relaxed)
    );
    if let Some(cpu) = cpu_line(
        "vm",
        cpu_before,
        args.hub_pid,
        lat.len() as u64 * args.samples as u64,
    ) {
        println!("{cpu}");
    }
    if let Some(rss) = args.hub_pid.and_then(|pid| proc_mib(Some(pid), "VmHWM")) {
        println!("vm peak RSS: {rss} MiB");
    }
    Ok(rate)
}

/// Per 100 ms window of start times: batches slower than `slow_ms` and the slowest.
fn print_slow_windows(lat: &[(Duration, u64)], slow_ms: u64) {
    let mut windows: std::collections::BTreeMap<u128, (usize, u64)> = Default::default();
    for (at, micros) in lat {
        if *micros > slow_ms * 1000 {
            let w = windows.entry(at.as_millis() / 100).or_default();
            w.0 += 1;
            w.1 = w.1.max(*micros);
        }
    }
    for (w, (n, max)) in windows {
        println!(
            "  {:>6.1} s: {n} batches over {slow_ms} ms, longest {:.1} ms",
            w as f64 / 10.0,
            max as f64 / 1000.0
        );
    }
}

/// The same rows straight into storage: one transaction per batch, C concurrent writers.
async fn raw_phase(args: &Args, url: &str) -> Result<f64, String> {
    let db = Db::connect(
        url,
        &DbOptions {
            max_connections: args.concurrency.min(32) as u32,
            ..DbOptions::default()
        },
    )
    .await
    .map_err(|e| e.to_string())?;
    db.migrate().await.map_err(|e| e.to_string())?;
    let now = OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .map_err(|e| e.to_string())?;
    let mut tx = db.begin().await.map_err(|e| e.to_string())?;
    let tenant = trusthub_identity::raw::tenants::insert(
        &mut tx,
        &format!("bench-{}", uuid::Uuid::new_v4().simple()),
        now,
    )
    .await
    .map_err(|e| e.to_string())?;
    let mut agent_ids = Vec::new();
    for i in 0..args.agents {
        let tags: Vec<String> = Vec::new();
        let reg = trusthub_fleet::raw::Registration {
            machine_id: &format!("raw-{i}"),
            hostname: "raw",
            os: "raw",
            arch: "raw",
            agent_version: "raw",
            signing_pubkey: "00",
            tags: &tags,
        };
        agent_ids.push(
            trusthub_fleet::raw::insert_agent(
                &mut tx,
                tenant.tenant_id(),
                &reg,
                &format!("hash-{}", uuid::Uuid::new_v4()),
                &[],
                now,
            )
            .await
            .map_err(|e| e.to_string())?,
        );
    }
    tx.commit().await.map_err(|e| e.to_string())?;
    let agent_ids = Arc::new(agent_ids);
    let cache = Arc::new(trusthub_fleet::raw::SeriesCache::default());
    let deadline = Instant::now() + Duration::from_secs(args.duration_secs);
    let seq = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for w in 0..args.concurrency {
        let (db, agent_ids, seq, cache) =
            (db.clone(), agent_ids.clone(), seq.clone(), cache.clone());
        let n = args.samples;
        let (shape, repeat) = (Shape::parse(&args.shape)?, args.repeat);
        tasks.push(tokio::spawn(async move {
            let mut done = 0u64;
            let mut i = w;
            while Instant::now() < deadline {
                let agent = agent_ids[i % agent_ids.len()];
                let points_of = if repeat {
                    (i % agent_ids.len()) as u64
                } else {
                    seq.fetch_add(1, Ordering::Relaxed)
                };
                i += 1;
                let batch = samples(n, points_of, shape);
                let ok = async {
                    let mut tx = db.begin().await?;
                    let done =
                        trusthub_fleet::raw::insert_samples(&mut tx, agent, &batch, &cache).await?;
                    tx.commit().await?;
                    cache.learn(agent, done.learned);
                    Ok::<_, trusthub_store::StoreError>(())
                }
                .await;
                if ok.is_ok() {
                    done += 1;
                }
            }
            done
        }));
    }
    let (batches, secs) = joined(tasks).await?;
    let rate = batches as f64 * args.samples as f64 / secs;
    println!(
        "raw:  {batches} batches in {secs:.1} s = {rate:.0} samples/s (same rows, one transaction per batch, no hub)"
    );
    db.close().await;
    Ok(rate)
}

/// Waits for writers that each count the batches they stored until their deadline: the
/// batches in all, and the seconds they took (from now, just after they were started).
async fn joined(tasks: Vec<tokio::task::JoinHandle<u64>>) -> Result<(u64, f64), String> {
    let started = Instant::now();
    let mut batches = 0;
    for t in tasks {
        batches += t.await.map_err(|e| e.to_string())?;
    }
    Ok((batches, started.elapsed().as_secs_f64()))
}

/// The plain PostgreSQL ceiling: the same samples as four-column rows, one 100-row `unnest`
/// insert per push in its own transaction, from a few connections as fast as they go.
async fn unnest_phase(args: &Args, url: &str) -> Result<f64, String> {
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(args.unnest_connections as u32)
        .connect(url)
        .await
        .map_err(|e| e.to_string())?;
    for q in [
        "DROP TABLE IF EXISTS bench_samples",
        "CREATE TABLE bench_samples (agent integer NOT NULL, series integer NOT NULL, \
         ts bigint NOT NULL, value double precision NOT NULL, PRIMARY KEY (agent, series, ts))",
    ] {
        sqlx::query(q)
            .execute(&pool)
            .await
            .map_err(|e| e.to_string())?;
    }
    let postgres_before = procs_cpu("postgres");
    let deadline = Instant::now() + Duration::from_secs(args.duration_secs);
    let seq = Arc::new(AtomicU64::new(0));
    let (agents, n) = (args.agents.max(1) as u64, args.samples);
    let mut tasks = Vec::new();
    for _ in 0..args.unnest_connections {
        let (pool, seq) = (pool.clone(), seq.clone());
        tasks.push(tokio::spawn(async move {
            let mut done = 0u64;
            while Instant::now() < deadline {
                let s = seq.fetch_add(1, Ordering::Relaxed);
                // Push `s` is agent `s % agents`'s, at a time of its own.
                let agent = vec![(s % agents) as i32; n];
                let series: Vec<i32> = (0..n as i32).collect();
                let ts = vec![1_700_000_000_000 + (s / agents) as i64 * 10_000; n];
                let value: Vec<f64> = (0..n).map(|i| (s as f64) + i as f64 / 7.0).collect();
                let ok = sqlx::query(
                    "INSERT INTO bench_samples (agent, series, ts, value) \
                     SELECT * FROM unnest($1::integer[], $2::integer[], $3::bigint[], $4::float8[])",
                )
                .bind(agent)
                .bind(series)
                .bind(ts)
                .bind(value)
                .execute(&pool)
                .await;
                if ok.is_ok() {
                    done += 1;
                }
            }
            done
        }));
    }
    let (batches, secs) = joined(tasks).await?;
    let rate = batches as f64 * n as f64 / secs;
    let server = procs_cpu("postgres") - postgres_before;
    println!(
        "unnest: {batches} pushes in {secs:.1} s = {rate:.0} rows/s ({} connections, one {n}-row unnest insert per transaction; server CPU {:.2} µs per row)",
        args.unnest_connections,
        server * 1e6 / (batches as f64 * n as f64).max(1.0)
    );
    let _ = sqlx::query("DROP TABLE bench_samples").execute(&pool).await;
    pool.close().await;
    Ok(rate)
}

#[tokio::main]
async fn main() -> Result<(), String> {
    let args = Args::parse();
    println!(
        "agents {}, concurrency {}, {} samples/batch, shape {}{}, {} s per phase",
        args.agents,
        args.concurrency,
        args.samples,
        args.shape,
        if args.repeat {
            " (repeated points)"
        } else {
            ""
        },
        args.duration_secs
    );
    if let Some(vm) = &args.vm_only {
        vm_phase(&args, vm).await?;
        return Ok(());
    }
    let hub = hub_phase(&args).await?;
    if let Some(url) = &args.raw_db {
        let raw = raw_phase(&args, url).await?;
        println!("ratio hub/raw: {:.2}", hub / raw.max(1.0));
    }
    if let Some(url) = &args.unnest_db {
        let plain = unnest_phase(&args, url).await?;
        println!("ratio hub/unnest: {:.2}", hub / plain.max(1.0));
    }
    Ok(())
}
