//! A steady fleet, soaked (issue 63): N agents registered for real, each with its WebSocket
//! open, each pushing one sample of each of `series` series every `interval_secs` (open loop,
//! their phases spread over the interval, with the heartbeat and live state agents send), an
//! inventory per agent every 6 h spread over the fleet, one alert rule firing for a tenth of
//! them, `checks` hub checks of an HTTP URL; meanwhile a signed-in client reads the overview,
//! the agents page and two API lists every `sample_secs`. Printed per window: each read's p50,
//! p95 and max, the pushes' p50/p99 (from their scheduled start: a stalled hub is charged for
//! what it delayed) and failures, the hub's RSS and CPU (and, with `--db-procs`, the CPU of
//! every process of that name: the PostgreSQL server). Run by `bench/soak.sh`.

use clap::Parser;
use futures_util::StreamExt;
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use trusthub_bench_ingest::{pct, proc_cpu_secs, proc_mib, procs_cpu};
use trusthub_core::agent::sign_header;

#[derive(Debug, Parser)]
struct Args {
    /// Hub base URL.
    #[arg(long, default_value = "http://127.0.0.1:18181")]
    hub: String,
    /// The owner's password (admin@trusthub.local).
    #[arg(long)]
    password: String,
    /// The hub's pid, for its RSS and CPU.
    #[arg(long)]
    hub_pid: Option<u32>,
    /// Also sum the CPU of every process with this command name (`postgres`).
    #[arg(long)]
    db_procs: Option<String>,
    /// Simulated agents.
    #[arg(long, default_value_t = 1000)]
    agents: usize,
    /// Series per push.
    #[arg(long, default_value_t = 100)]
    series: usize,
    /// Seconds between an agent's pushes.
    #[arg(long, default_value_t = 10)]
    interval_secs: u64,
    /// Seconds of soak.
    #[arg(long, default_value_t = 300)]
    duration_secs: u64,
    /// Seconds between the signed-in client's rounds of reads.
    #[arg(long, default_value_t = 2)]
    sample_secs: u64,
    /// Seconds per printed window.
    #[arg(long, default_value_t = 60)]
    window_secs: u64,
    /// Hub checks to create (http, every 30 s) of `check_url`.
    #[arg(long, default_value_t = 200)]
    checks: usize,
    /// The URL the hub checks (the hub must be allowed to reach it:
    /// TRUSTHUB_OUTBOUND_ALLOW_CIDRS).
    #[arg(long)]
    check_url: Option<String>,
    /// Exit non-zero when a push or a read failed (the CI's correctness run).
    #[arg(long)]
    strict: bool,
}

/// Pushes and reads of one window.
#[derive(Default)]
struct Window {
    pushes: Vec<f64>,
    push_failures: u64,
    reads: std::collections::BTreeMap<&'static str, Vec<f64>>,
    read_failures: u64,
}

const READS: [(&str, &str); 4] = [
    ("overview /", "/"),
    ("agents page", "/ui/agents"),
    ("GET /agents", "/api/v1/agents"),
    ("GET /alerts", "/api/v1/alerts?is_resolved=false"),
];

fn push_body(agent: usize, series: usize, firing: bool, inventory: bool, out: &mut String) {
    let now = time::OffsetDateTime::now_utc();
    let ts = now
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    out.clear();
    let _ = write!(
        out,
        r#"{{"batch_id":"{}","sent_at":"{ts}","heartbeat":{{"agent_version":"soak","agent_uptime_secs":1,"allowed_actions":[]}},"metrics":["#,
        uuid::Uuid::now_v7()
    );
    for i in 0..series {
        let (name, value) = match i {
            0 => ("cpu.percent".to_owned(), if firing { 95.0 } else { 20.0 }),
            _ => (
                format!("soak.m{i}"),
                ((agent * 31 + i * 7) % 1000) as f64 / 10.0,
            ),
        };
        let _ = write!(
            out,
            r#"{}{{"name":"{name}","ts":"{ts}","value":{value}}}"#,
            if i == 0 { "" } else { "," }
        );
    }
    out.push(']');
    if inventory {
        let _ = write!(
            out,
            r#","inventory":{{"collected_at":"{ts}","os":{{"name":"Debian GNU/Linux","id":"debian","version":"12"}},"packages":["#
        );
        for p in 0..300 {
            let _ = write!(
                out,
                r#"{}{{"manager":"dpkg","name":"pkg{p}","version":"1.{}-1"}}"#,
                if p == 0 { "" } else { "," },
                p % 7
            );
        }
        out.push_str("]}");
    } else {
        out.push_str(
            r#","live":{"systemd":[{"unit":"ssh.service","active_state":"active"}],"containers":[]}"#,
        );
    }
    out.push('}');
}

#[tokio::main]
async fn main() -> Result<(), String> {
    let args = Args::parse();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let hub = args.hub.trim_end_matches('/').to_owned();
    let api = format!("{hub}/api/v1");
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .timeout(Duration::from_secs(60))
        .build()
        .map_err(|e| e.to_string())?;
    let e = |e: reqwest::Error| e.to_string();
    let owner = trusthub_bench_ingest::owner_cookie(&http, &api, &args.password)
        .await
        .map_err(|e| format!("login: {e}"))?;
    let post = |path: &str, body: Value| {
        http.post(format!("{api}{path}"))
            .header("cookie", &owner)
            .json(&body)
            .send()
    };
    let enroll: Value = post("/agents/enrollment-tokens", json!({}))
        .await
        .map_err(e)?
        .json()
        .await
        .map_err(e)?;
    let enroll = enroll["token"]
        .as_str()
        .ok_or("no enrollment token")?
        .to_owned();

    // Register the agents.
    let t = Instant::now();
    let mut agents: Vec<(String, String, ed25519_dalek::SigningKey)> = Vec::new();
    let mut set = tokio::task::JoinSet::new();
    for i in 0..args.agents {
        let (http, api, enroll) = (http.clone(), api.clone(), enroll.clone());
        set.spawn(async move {
            trusthub_bench_ingest::register_agent(
                &http,
                &api,
                &enroll,
                &format!("soak-{i:04}"),
                &[],
            )
            .await
            .ok()
        });
        while set.len() >= 16 {
            if let Some(Ok(Some(r))) = set.join_next().await {
                agents.push(r);
            }
        }
    }
    while let Some(r) = set.join_next().await {
        if let Ok(Some(r)) = r {
            agents.push(r);
        }
    }
    if agents.len() < args.agents {
        return Err(format!(
            "only {} of {} agents registered",
            agents.len(),
            args.agents
        ));
    }
    println!(
        "registered {} agents in {:.1} s",
        agents.len(),
        t.elapsed().as_secs_f64()
    );

    // Their sockets, held open (tungstenite answers the hub's pings while it reads).
    let open = Arc::new(AtomicU64::new(0));
    let host = hub.trim_start_matches("http://").to_owned();
    for (id, token, _) in &agents {
        let (open, host) = (open.clone(), host.clone());
        let mut req = format!("ws://{host}/api/v1/ws/agents/{id}")
            .into_client_request()
            .map_err(|e| e.to_string())?;
        req.headers_mut().insert(
            "authorization",
            format!("Bearer {token}").parse().map_err(|_| "token")?,
        );
        tokio::spawn(async move {
            let Ok(tcp) = tokio::net::TcpStream::connect(&host).await else {
                return;
            };
            let Ok((mut ws, _)) = tokio_tungstenite::client_async(req, tcp).await else {
                return;
            };
            open.fetch_add(1, Ordering::Relaxed);
            while let Some(Ok(_)) = ws.next().await {}
            open.fetch_sub(1, Ordering::Relaxed);
        });
    }

    // One rule firing for a tenth of the fleet; the hub checks.
    let r = post(
        "/alert-rules",
        json!({"name": "soak busy", "metric": "cpu.percent", "operator": ">", "threshold": 90,
            "window": "5m", "group_by": ["agent_id"]}),
    )
    .await
    .map_err(e)?;
    if !r.status().is_success() {
        return Err(format!("alert rule: HTTP {}", r.status()));
    }
    let rule: Value = r.json().await.map_err(e)?;
    let rule = rule["id"].as_str().unwrap_or_default().to_owned();
    let checks = if args.check_url.is_some() {
        args.checks
    } else {
        0
    };
    for i in 0..checks {
        let r = post(
            "/apps",
            json!({"name": format!("check {i}"), "type": "http",
                "endpoint": format!("{}?check={i}", args.check_url.as_deref().unwrap_or_default()),
                "interval_seconds": 30}),
        )
        .await
        .map_err(e)?;
        if !r.status().is_success() {
            return Err(format!(
                "check {i}: HTTP {} {}",
                r.status(),
                r.text().await.unwrap_or_default()
            ));
        }
    }
    println!(
        "{} sockets open, 1 alert rule, {checks} hub checks",
        open.load(Ordering::Relaxed)
    );

    let window = Duration::from_secs(args.window_secs);
    let windows: Arc<Mutex<Vec<Window>>> = Arc::new(Mutex::new(
        (0..args.duration_secs.div_ceil(args.window_secs))
            .map(|_| Window::default())
            .collect(),
    ));
    let start = Instant::now() + Duration::from_secs(1);
    let end = start + Duration::from_secs(args.duration_secs);
    let slot = move |at: Instant| {
        (at.saturating_duration_since(start).as_secs() / window.as_secs()) as usize
    };
    let pushed = Arc::new(AtomicU64::new(0));

    // The pushes: agent i at phase i/N of the interval; an inventory every 6 h, spread.
    let interval = Duration::from_secs(args.interval_secs);
    let mut tasks = Vec::new();
    let n = agents.len();
    for (i, (_, token, key)) in agents.into_iter().enumerate() {
        let (http, api, windows, pushed) =
            (http.clone(), api.clone(), windows.clone(), pushed.clone());
        let series = args.series;
        let phase = interval.mul_f64(i as f64 / n as f64);
        let inventory_at = start + Duration::from_secs_f64(21_600.0 * i as f64 / n as f64);
        tasks.push(tokio::spawn(async move {
            let mut body = String::new();
            let mut due = start + phase;
            let mut inventory_due = inventory_at;
            while due < end {
                tokio::time::sleep_until(due.into()).await;
                let inventory = due >= inventory_due;
                if inventory {
                    inventory_due += Duration::from_secs(21_600);
                }
                push_body(i, series, i % 10 == 0, inventory, &mut body);
                let r = http
                    .post(format!("{api}/ingest"))
                    .bearer_auth(&token)
                    .header("content-type", "application/json")
                    .header("x-service-signature", sign_header(&key, body.as_bytes()))
                    .body(body.clone())
                    .send()
                    .await;
                let ms = due.elapsed().as_secs_f64() * 1000.0;
                let ok = matches!(&r, Ok(r) if r.status().as_u16() == 202);
                if !ok {
                    let why = match r {
                        Ok(r) => format!("HTTP {}", r.status()),
                        Err(e) => e.to_string(),
                    };
                    eprintln!("push of agent {i} failed: {why}");
                }
                if let Some(w) = windows.lock().expect("windows").get_mut(slot(due)) {
                    if ok {
                        w.pushes.push(ms);
                    } else {
                        w.push_failures += 1;
                    }
                }
                pushed.fetch_add(series as u64, Ordering::Relaxed);
                due += interval;
            }
        }));
    }

    // The signed-in client.
    let reader = {
        let (http, windows, hub, owner) =
            (http.clone(), windows.clone(), hub.clone(), owner.clone());
        let every = Duration::from_secs(args.sample_secs);
        tokio::spawn(async move {
            let mut at = start;
            while at < end {
                tokio::time::sleep_until(at.into()).await;
                for (label, path) in READS {
                    let t = Instant::now();
                    let r = http
                        .get(format!("{hub}{path}"))
                        .header("cookie", &owner)
                        .send()
                        .await;
                    let ok = match r {
                        Ok(r) if r.status().is_success() => r.bytes().await.is_ok(),
                        Ok(r) => {
                            eprintln!("{label}: HTTP {}", r.status());
                            false
                        }
                        Err(e) => {
                            eprintln!("{label}: {e}");
                            false
                        }
                    };
                    let ms = t.elapsed().as_secs_f64() * 1000.0;
                    if let Some(w) = windows.lock().expect("windows").get_mut(slot(at)) {
                        if ok {
                            w.reads.entry(label).or_default().push(ms);
                        } else {
                            w.read_failures += 1;
                        }
                    }
                }
                at += every;
            }
        })
    };

    // One line per window, as it closes.
    let mut cpu = (
        args.hub_pid.and_then(proc_cpu_secs),
        args.db_procs.as_deref().map(procs_cpu),
    );
    let mut rss_after_10 = None;
    let mut failures = 0;
    let count = windows.lock().expect("windows").len();
    for k in 0..count {
        tokio::time::sleep_until((start + window * (k as u32 + 1) + Duration::from_secs(3)).into())
            .await;
        let w = std::mem::take(&mut windows.lock().expect("windows")[k]);
        failures += w.push_failures + w.read_failures;
        let rss = proc_mib(args.hub_pid, "VmRSS");
        if (k + 1) as u64 * args.window_secs == 600 {
            rss_after_10 = rss;
        }
        let now_cpu = (
            args.hub_pid.and_then(proc_cpu_secs),
            args.db_procs.as_deref().map(procs_cpu),
        );
        let share = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => format!("{:.0} %", (b - a) * 100.0 / args.window_secs as f64),
            _ => "-".into(),
        };
        let mut line = format!("window {:>3}: pushes {}", k + 1, w.pushes.len());
        if !w.pushes.is_empty() {
            let _ = write!(
                line,
                " p50 {:.0} ms p99 {:.0} ms max {:.0} ms",
                pct(w.pushes.clone(), 0.5),
                pct(w.pushes.clone(), 0.99),
                pct(w.pushes, 1.0)
            );
        }
        let _ = write!(line, ", failed {}", w.push_failures);
        for (label, v) in w.reads {
            let _ = write!(
                line,
                " | {label} p50 {:.0} p95 {:.0} max {:.0}",
                pct(v.clone(), 0.5),
                pct(v.clone(), 0.95),
                pct(v, 1.0)
            );
        }
        let _ = write!(
            line,
            " | read failures {} | hub RSS {} MiB, CPU {}, db CPU {}",
            w.read_failures,
            rss.map_or("-".into(), |m| m.to_string()),
            share(cpu.0, now_cpu.0),
            share(cpu.1, now_cpu.1),
        );
        cpu = now_cpu;
        println!("{line}");
    }
    for t in tasks {
        let _ = t.await;
    }
    let _ = reader.await;
    // The rule fires for the agents pushing cpu.percent 95 (one in ten).
    let alerts: Value = http
        .get(format!("{api}/alerts?is_resolved=false"))
        .header("cookie", &owner)
        .send()
        .await
        .map_err(e)?
        .json()
        .await
        .map_err(e)?;
    let firing = alerts.as_array().map_or(0, |a| {
        a.iter().filter(|x| x["rule_id"] == rule.as_str()).count()
    });
    println!(
        "rule alerts open: {firing} of {} agents pushing cpu.percent 95",
        n.div_ceil(10)
    );
    if args.strict && firing != n.div_ceil(10) {
        failures += 1;
    }
    let rss = proc_mib(args.hub_pid, "VmRSS");
    println!(
        "soak done: {} samples pushed, {} sockets open at the end, {failures} failed pushes or reads, hub RSS at the end {} MiB (after 10 min {}), peak {} MiB",
        pushed.load(Ordering::Relaxed),
        open.load(Ordering::Relaxed),
        rss.map_or("-".into(), |m| m.to_string()),
        rss_after_10.map_or("-".into(), |m| format!("{m} MiB")),
        proc_mib(args.hub_pid, "VmHWM").map_or("-".into(), |m| m.to_string()),
    );
    if args.strict && failures > 0 {
        return Err(format!("{failures} pushes or reads failed"));
    }
    Ok(())
}
