//! Status page and push monitor benchmark (issue 64). A public status page of `--apps` apps,
//! each with `--days` days of timeline (an outage a day, as liveness writes them): its HTML
//! and JSON read `--reads` times on an idle hub, then again while `--agents` agents push
//! `--series` series every 10 s (open loop), and the view computed past its cache; the raw
//! ceiling in the same run is reading the page's spans (as the page reads them) and the
//! windows from the database, nothing computed. Then `--push` push monitors,
//! each pinged once a minute over HTTP for `--push-secs`: the process's CPU above its idle
//! CPU, as a share of one core (the pinging client runs in the same process, so the figure
//! is an upper bound of the hub's).
//!
//! `cargo run --release -p trusthub-bench-ingest --bin status` (add `--database-url
//! postgres://...` for PostgreSQL; the database must be empty).

use clap::Parser;
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use trusthub_bench_ingest::{
    insert_host, owner_cookie, owner_tenant, pct, proc_cpu_secs, procs_cpu, quiet_settings,
    register_agent,
};
use trusthub_hub::Server;

#[derive(Debug, Parser)]
struct Args {
    /// Apps on the page.
    #[arg(long, default_value_t = 50)]
    apps: usize,
    /// Days of history per app (the page shows 90).
    #[arg(long, default_value_t = 90)]
    days: i64,
    /// Reads of each form of the page per phase.
    #[arg(long, default_value_t = 1000)]
    reads: usize,
    /// Agents pushing while the page is read.
    #[arg(long, default_value_t = 200)]
    agents: usize,
    /// Series per push.
    #[arg(long, default_value_t = 100)]
    series: usize,
    /// Push monitors.
    #[arg(long, default_value_t = 10_000)]
    push: usize,
    /// Seconds of pinging.
    #[arg(long, default_value_t = 120)]
    push_secs: u64,
    /// Database (default: SQLite in a temporary data dir).
    #[arg(long)]
    database_url: Option<String>,
    /// Only the push monitors' part (no status page).
    #[arg(long)]
    push_only: bool,
}

fn line(what: &str, v: &[f64]) -> String {
    format!(
        "{what}: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        pct(v.to_vec(), 0.5),
        pct(v.to_vec(), 0.99),
        pct(v.to_vec(), 1.0)
    )
}

/// The public view computed `n` times, past the cache that serves it.
async fn computed(state: &trusthub_hub::AppState, n: usize) -> Result<Vec<f64>, String> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let page = trusthub_status::service::public(state, "bench", trusthub_hub::state::now())
            .await
            .map_err(|e| e.to_string())?
            .ok_or("no page")?;
        std::hint::black_box(page.groups.len());
        out.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    Ok(out)
}

async fn reads(http: &reqwest::Client, url: &str, n: usize) -> Result<Vec<f64>, String> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let r = http.get(url).send().await.map_err(|e| e.to_string())?;
        if !r.status().is_success() {
            return Err(format!("{url}: {}", r.status()));
        }
        r.bytes().await.map_err(|e| e.to_string())?;
        out.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    Ok(out)
}

fn push_body(series: usize, out: &mut String) {
    let ts = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    out.clear();
    let _ = write!(
        out,
        r#"{{"batch_id":"{}","sent_at":"{ts}","heartbeat":{{"agent_version":"bench","agent_uptime_secs":1,"allowed_actions":[]}},"metrics":["#,
        uuid::Uuid::now_v7()
    );
    for i in 0..series {
        let _ = write!(
            out,
            r#"{}{{"name":"status.m{i}","ts":"{ts}","value":{}}}"#,
            if i == 0 { "" } else { "," },
            i % 97
        );
    }
    out.push_str("]}");
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let args = Args::parse();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = std::env::temp_dir().join(format!("th-status-{}", uuid::Uuid::new_v4().simple()));
    let mut settings = quiet_settings(dir.clone(), args.database_url.clone());
    settings.rate_limits = "off".into();
    let server = Server::build(settings).await.map_err(|e| e.to_string())?;
    let state = server.state().clone();
    let base = format!("http://{}", server.local_addr());
    let api = format!("{base}/api/v1");
    tokio::spawn(server.run(std::future::pending::<()>()));
    let db = state.db.clone();
    let tenant = owner_tenant(&db).await.map_err(|e| e.to_string())?;
    let now = trusthub_hub::state::now();
    let http = reqwest::Client::new();
    let cookie = owner_cookie(&http, &api, "bench password")
        .await
        .map_err(|e| e.to_string())?;

    if !args.push_only {
        status_page(&args, &state, &http, &base, &cookie, tenant, now).await?;
    }
    push_monitors(&args, &state, &http, &base, tenant).await?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// The status page's part: computed and served, idle and while agents push.
async fn status_page(
    args: &Args,
    state: &trusthub_hub::AppState,
    http: &reqwest::Client,
    base: &str,
    cookie: &str,
    tenant: trusthub_store::TenantId,
    now: time::OffsetDateTime,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let api = format!("{base}/api/v1");
    let db = state.db.clone();
    // The page's apps with their history: up, and down 10 minutes a day.
    let setup = Instant::now();
    let mut ids = Vec::new();
    let mut tx = db.begin().await?;
    let host = insert_host(&mut tx, tenant, 0, now).await?;
    for k in 0..args.apps {
        let app = trusthub_monitors::raw::apps::insert(
            &mut tx,
            tenant,
            &trusthub_bench_ingest::watched_app(
                host,
                &format!("service {k}"),
                "systemd",
                &format!("svc-{k}.service"),
            ),
            now,
        )
        .await?
        .ok_or("app")?;
        let mut t = now - time::Duration::days(args.days);
        while t < now {
            let down_at = t + time::Duration::hours(12) + time::Duration::minutes(k as i64 % 60);
            let up_at = down_at + time::Duration::minutes(10);
            trusthub_monitors::timeline::append(&mut tx, app.id, t, down_at.min(now), false)
                .await?;
            if down_at < now {
                trusthub_monitors::timeline::append(&mut tx, app.id, down_at, up_at.min(now), true)
                    .await?;
            }
            t = up_at;
        }
        ids.push(app.id);
    }
    tx.commit().await?;
    let groups: Vec<Value> = ids
        .chunks(10)
        .enumerate()
        .map(|(i, c)| json!({"name": format!("Group {i}"), "app_ids": c}))
        .collect();
    let r = http
        .post(format!("{api}/status-pages"))
        .header("cookie", cookie)
        .json(&json!({"slug": "bench", "title": "Bench", "groups": groups}))
        .send()
        .await?;
    if r.status() != 201 {
        return Err(format!("status page: {} {}", r.status(), r.text().await?).into());
    }
    println!(
        "{} apps with {} days of timeline, setup {:.1} s",
        args.apps,
        args.days,
        setup.elapsed().as_secs_f64()
    );
    let html = format!("{base}/status/bench");
    let json_url = format!("{base}/status/bench.json");
    let size = http.get(&html).send().await?.bytes().await?.len();
    println!("page: {} KiB of HTML", size / 1024);

    // The raw ceiling: the same rows read, nothing computed.
    let mut bare = Vec::new();
    for _ in 0..args.reads.min(200) {
        let t = Instant::now();
        let mut c = db.conn().await?;
        let since = now - time::Duration::days(91);
        let spans = trusthub_monitors::timeline::spans_of_apps(&mut c, &ids, since).await?;
        let windows =
            trusthub_monitors::timeline::maintenance_of_tenant(&mut c, tenant, since).await?;
        std::hint::black_box((spans.len(), windows.len()));
        bare.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    println!("{}", line("bare read of the page's spans (packed)", &bare));
    println!(
        "{}",
        line("idle: HTML", &reads(http, &html, args.reads).await?)
    );
    println!(
        "{}",
        line("idle: JSON", &reads(http, &json_url, args.reads).await?)
    );

    // Ingest meanwhile: agents registered for real, open loop every 10 s.
    let enroll: Value = http
        .post(format!("{api}/agents/enrollment-tokens"))
        .header("cookie", cookie)
        .json(&json!({}))
        .send()
        .await?
        .json()
        .await?;
    let enroll = enroll["token"]
        .as_str()
        .ok_or("no enrollment token")?
        .to_owned();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let pushed = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for i in 0..args.agents {
        let (id, token, key) =
            register_agent(http, &api, &enroll, &format!("bench-{i}"), &[]).await?;
        let _ = id;
        let (http, api, stop, pushed, failed) = (
            http.clone(),
            api.clone(),
            stop.clone(),
            pushed.clone(),
            failed.clone(),
        );
        let series = args.series;
        let phase = Duration::from_secs_f64(10.0 * i as f64 / args.agents as f64);
        tasks.push(tokio::spawn(async move {
            let mut body = String::new();
            let mut due = Instant::now() + phase;
            while !stop.load(Ordering::Relaxed) {
                tokio::time::sleep_until(due.into()).await;
                push_body(series, &mut body);
                let r = http
                    .post(format!("{api}/ingest"))
                    .bearer_auth(&token)
                    .header("content-type", "application/json")
                    .header(
                        "x-service-signature",
                        trusthub_core::agent::sign_header(&key, body.as_bytes()),
                    )
                    .body(body.clone())
                    .send()
                    .await;
                match r {
                    Ok(r) if r.status().as_u16() == 202 => {
                        pushed.fetch_add(series as u64, Ordering::Relaxed)
                    }
                    _ => failed.fetch_add(1, Ordering::Relaxed),
                };
                due += Duration::from_secs(10);
            }
        }));
    }
    tokio::time::sleep(Duration::from_secs(10)).await;
    let t0 = Instant::now();
    let before = pushed.load(Ordering::Relaxed);
    let busy_computed = computed(state, args.reads.min(300)).await?;
    let busy_html = reads(http, &html, args.reads).await?;
    let busy_json = reads(http, &json_url, args.reads).await?;
    let rate = (pushed.load(Ordering::Relaxed) - before) as f64 / t0.elapsed().as_secs_f64();
    println!(
        "ingesting {:.0} samples/s ({} agents x {} series / 10 s), {} failed pushes:",
        rate,
        args.agents,
        args.series,
        failed.load(Ordering::Relaxed)
    );
    println!("{}", line("  busy: computed (no cache)", &busy_computed));
    println!("{}", line("  busy: HTML", &busy_html));
    println!("{}", line("  busy: JSON", &busy_json));
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        let _ = t.await;
    }

    Ok(())
}

/// Push monitors pinged once a minute: the CPU above the same rate of `GET /health`.
async fn push_monitors(
    args: &Args,
    state: &trusthub_hub::AppState,
    http: &reqwest::Client,
    base: &str,
    tenant: trusthub_store::TenantId,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let db = state.db.clone();
    let base = base.to_owned();
    let now = trusthub_hub::state::now();
    let setup = Instant::now();
    let mut tokens = Vec::with_capacity(args.push);
    let mut tx = db.begin().await?;
    for k in 0..args.push {
        let token = trusthub_core::secret::new_token("thp_")?;
        let hash = trusthub_core::secret::token_hash(&token);
        trusthub_monitors::raw::apps::insert(
            &mut tx,
            tenant,
            &trusthub_monitors::raw::apps::NewApp {
                agent_id: None,
                name: &format!("job {k}"),
                app_type: "push",
                identifier: &format!("push:{}", &hash[..16]),
                owner_email: None,
                runbook_url: None,
                notes: None,
                expected_state: "running",
                restart_command: None,
                endpoint: None,
                interval_seconds: Some(60),
                timeout_seconds: None,
                retries: 0,
                recoveries: 1,
                expected_status: None,
                keyword: None,
                tls_min_days: None,
                grace_seconds: Some(60),
                push_token: Some((&hash, &token[..8])),
                expected_values: None,
                json_query: None,
                // Past the idle and ceiling phases and each one's first ping (late
                // pings would be counted as failures, not what is measured).
                first_due: Some(now + time::Duration::seconds(400)),
            },
            now,
        )
        .await?
        .ok_or("push app")?;
        tokens.push(token);
    }
    tx.commit().await?;
    println!(
        "{} push monitors made in {:.1} s",
        args.push,
        setup.elapsed().as_secs_f64()
    );
    let pid = std::process::id();
    // On PostgreSQL its server's processes too (this machine's server serves nothing else
    // meanwhile).
    let server = || procs_cpu("postgres");
    let on_pg = args.database_url.is_some();
    let idle_secs = 20.0;
    let c0 = proc_cpu_secs(pid).unwrap_or(0.0);
    let s0 = server();
    tokio::time::sleep(Duration::from_secs_f64(idle_secs)).await;
    let idle = (proc_cpu_secs(pid).unwrap_or(0.0) - c0) / idle_secs;
    let server_idle = (server() - s0) / idle_secs;
    // The ceiling in the same run: the same client at the same rate against the hub's
    // cheapest route (`GET /api/v1/health`), so what HTTP and the client cost is apart.
    let health_secs = 60.0;
    let rate = args.push as f64 / 60.0;
    let c_h = proc_cpu_secs(pid).unwrap_or(0.0);
    let s_h = server();
    let t_h = Instant::now();
    let mut probes = Vec::new();
    for k in 0..(rate * health_secs) as usize {
        let (http, base) = (http.clone(), base.clone());
        let due = t_h + Duration::from_secs_f64(k as f64 / rate);
        probes.push(tokio::spawn(async move {
            tokio::time::sleep_until(due.into()).await;
            let _ = http.get(format!("{base}/api/v1/health")).send().await;
        }));
    }
    for p in probes {
        let _ = p.await;
    }
    let health = (proc_cpu_secs(pid).unwrap_or(0.0) - c_h) / t_h.elapsed().as_secs_f64();
    let server_health = (server() - s_h) / t_h.elapsed().as_secs_f64();
    println!(
        "ceiling: {rate:.0} GET /health a second: CPU {:.1} % of a core ({:.1} % above idle)",
        health * 100.0,
        (health - idle) * 100.0
    );
    let ok = Arc::new(AtomicU64::new(0));
    let bad = Arc::new(AtomicU64::new(0));
    let c1 = proc_cpu_secs(pid).unwrap_or(0.0);
    let s1 = server();
    let t1 = Instant::now();
    let end = t1 + Duration::from_secs(args.push_secs);
    let mut pingers = Vec::new();
    for (k, token) in tokens.into_iter().enumerate() {
        let (http, base, ok, bad) = (http.clone(), base.clone(), ok.clone(), bad.clone());
        let phase = Duration::from_secs_f64(60.0 * k as f64 / args.push as f64);
        pingers.push(tokio::spawn(async move {
            let mut due = t1 + phase;
            while due < end {
                tokio::time::sleep_until(due.into()).await;
                match http.get(format!("{base}/api/v1/push/{token}")).send().await {
                    Ok(r) if r.status() == 200 => {
                        ok.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(r) => {
                        if bad.fetch_add(1, Ordering::Relaxed) < 3 {
                            let status = r.status();
                            eprintln!(
                                "ping failed: {status} {}",
                                r.text().await.unwrap_or_default()
                            );
                        }
                    }
                    Err(e) => {
                        if bad.fetch_add(1, Ordering::Relaxed) < 3 {
                            eprintln!("ping failed: {e}");
                        }
                    }
                };
                due += Duration::from_secs(60);
            }
        }));
    }
    for p in pingers {
        let _ = p.await;
    }
    let wall = t1.elapsed().as_secs_f64();
    let busy = (proc_cpu_secs(pid).unwrap_or(0.0) - c1) / wall;
    let server_busy = (server() - s1) / wall;
    println!(
        "pings: {} ok, {} failed, {:.0}/s over {:.0} s; CPU {:.1} % of a core (idle {:.1} %): {:.1} % for the pings, client included; {:.1} % above the /health ceiling (what counting the pings costs the hub)",
        ok.load(Ordering::Relaxed),
        bad.load(Ordering::Relaxed),
        ok.load(Ordering::Relaxed) as f64 / wall,
        wall,
        busy * 100.0,
        idle * 100.0,
        (busy - idle) * 100.0,
        (busy - health) * 100.0
    );
    if on_pg {
        println!(
            "PostgreSQL server: idle {:.1} %, /health {:.1} %, pings {:.1} % of a core: {:.1} % for the pings; hub and server together {:.1} % above the ceiling",
            server_idle * 100.0,
            server_health * 100.0,
            server_busy * 100.0,
            (server_busy - server_health) * 100.0,
            (busy + server_busy - health - server_health) * 100.0
        );
    }
    Ok(())
}
