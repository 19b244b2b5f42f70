//! Dashboard rendering benchmark (issue 18): N agents registered for real, each having sent
//! an hour of CPU/memory samples (one sample per series per minute, as agents push) and a live
//! report, M tracked apps spread over them, some alerts; then the overview, its live fragment,
//! the agents list and the apps list are fetched K times each by a signed-in session and timed
//! end to end over HTTP (server-side rendering, database reads, the network stack). In the
//! same run the JSON list the agents page is built from (`GET /api/v1/agents`) is timed as
//! the peer: the page's cost over the bare data is the ratio.
//!
//! `cargo run --release -p trusthub-bench-ingest --bin dashboard -- --agents 1000 --apps 10000`
//! (add `--database-url postgres://...` for PostgreSQL; the database must be empty).

use clap::Parser;
use ed25519_dalek::SigningKey;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use trusthub_bench_ingest::proc_mib;
use trusthub_core::agent::sign_header;
use trusthub_core::apps::ObservedMap;
use trusthub_hub::{Server, Settings};
use trusthub_monitors::raw::apps;

#[derive(Debug, Parser)]
struct Args {
    /// Agents.
    #[arg(long, default_value_t = 1000)]
    agents: usize,
    /// Tracked apps, spread evenly over the agents.
    #[arg(long, default_value_t = 10_000)]
    apps: usize,
    /// Timed fetches of each page.
    #[arg(long, default_value_t = 100)]
    fetches: usize,
    /// Minutes of samples each agent sent.
    #[arg(long, default_value_t = 60)]
    minutes: i64,
    /// Database (default: SQLite in a temporary data dir).
    #[arg(long)]
    database_url: Option<String>,
}

fn iso(t: time::OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Fetches `path` `n` times in a row; the sorted latencies in ms and the body size.
async fn time_page(
    http: &reqwest::Client,
    base: &str,
    cookie: &str,
    path: &str,
    n: usize,
) -> Result<(Vec<f64>, usize), String> {
    let mut lat = Vec::with_capacity(n);
    let mut size = 0;
    for _ in 0..n {
        let t = Instant::now();
        let r = http
            .get(format!("{base}{path}"))
            .header("cookie", cookie)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if !r.status().is_success() {
            return Err(format!("{path}: {}", r.status()));
        }
        size = r.bytes().await.map_err(|e| e.to_string())?.len();
        lat.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    lat.sort_by(f64::total_cmp);
    Ok((lat, size))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = std::env::temp_dir().join(format!("th-dashboard-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir)?;
    let mut settings = Settings::with_data_dir(dir.join("data"));
    settings.listen = "127.0.0.1:0".parse()?;
    settings.admin_password = Some("bench password".into());
    settings.rate_limits = "off".into();
    settings
        .sections
        .edit(|m: &mut trusthub_hub::sections::Monitors| {
            m.liveness_interval_secs = 86_400;
            m.rule_eval_interval_secs = 86_400;
        });
    settings.db.database_url = args.database_url.clone();
    if args.database_url.is_some() {
        settings.encryption_key =
            Some("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f".into());
    }
    let server = Server::build(settings).await?;
    let state = server.state().clone();
    let root = format!("http://{}", server.local_addr());
    let api = format!("{root}/api/v1");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let hub = tokio::spawn(server.run(async move {
        let _ = stopped.await;
    }));
    let http = reqwest::Client::new();
    let cookie = trusthub_bench_ingest::owner_cookie(&http, &api, "bench password").await?;
    let enroll: Value = http
        .post(format!("{api}/agents/enrollment-tokens"))
        .header("cookie", &cookie)
        .json(&json!({"tags": ["env:bench"]}))
        .send()
        .await?
        .json()
        .await?;
    let enroll = enroll["token"]
        .as_str()
        .ok_or("no enrollment token")?
        .to_owned();

    // Agents register and send their hour of samples, through the real API.
    let setup = Instant::now();
    let now = time::OffsetDateTime::now_utc();
    let mut ids = Vec::with_capacity(args.agents);
    for i in 0..args.agents {
        let key = SigningKey::from_bytes(&trusthub_core::secret::random_bytes::<32>()?);
        let body = json!({"machine_id": format!("dash-{i}"), "hostname": format!("host-{i:04}"),
            "os": "Debian 12", "arch": "x86_64", "agent_version": "0.1.0",
            "signing_pubkey": trusthub_core::secret::hex(key.verifying_key().as_bytes()),
            "tags": [format!("rack:{}", i % 10)]})
        .to_string();
        let r: Value = http
            .post(format!("{api}/agents/register"))
            .bearer_auth(&enroll)
            .header("content-type", "application/json")
            .header("x-service-signature", sign_header(&key, body.as_bytes()))
            .body(body)
            .send()
            .await?
            .json()
            .await?;
        let token = r["agent_token"]
            .as_str()
            .ok_or("registration failed")?
            .to_owned();
        ids.push(uuid::Uuid::parse_str(
            r["agent_id"].as_str().ok_or("no id")?,
        )?);
        let metrics: Vec<Value> = (0..args.minutes)
            .flat_map(|m| {
                let at = iso(now - time::Duration::minutes(m));
                let cpu = ((i as i64 * 7 + m * 3) % 90) as f64 + 2.5;
                [
                    json!({"name": "cpu.percent", "ts": at, "value": cpu}),
                    json!({"name": "mem.used_percent", "ts": at, "value": 40.0 + (m % 7) as f64}),
                ]
            })
            .collect();
        let batch =
            json!({"batch_id": uuid::Uuid::new_v4(), "sent_at": iso(now), "metrics": metrics})
                .to_string();
        let r = http
            .post(format!("{api}/ingest"))
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .header("x-service-signature", sign_header(&key, batch.as_bytes()))
            .body(batch)
            .send()
            .await?;
        if r.status() != 202 {
            return Err(format!("ingest: {}", r.status()).into());
        }
    }
    // Apps straight into the store (the API's validation is not what is measured here), one
    // in ten not in its expected state.
    let tenant = {
        let mut c = state.db.conn().await?;
        trusthub_identity::raw::users::find_by_email_any_tenant(&mut c, "admin@trusthub.local")
            .await?
            .ok_or("no owner")?
            .tenant_id
    };
    let per_agent = args.apps.div_ceil(args.agents.max(1));
    let mut made = 0;
    let mut tx = state.db.begin().await?;
    for (a, id) in ids.iter().enumerate() {
        let mut observed = ObservedMap::new();
        for i in 0..per_agent {
            if made >= args.apps {
                break;
            }
            let unit = format!("app{i}.service");
            let running = (a + i) % 10 != 0;
            observed.insert(
                format!("systemd:{unit}"),
                if running { "running" } else { "stopped" }.into(),
            );
            apps::insert(
                &mut tx,
                tenant,
                &trusthub_bench_ingest::watched_app(*id, &format!("app{i}"), "systemd", &unit),
                trusthub_hub::state::now(),
            )
            .await?;
            made += 1;
        }
        apps::set_live(&mut tx, *id, &observed, trusthub_hub::state::now()).await?;
    }
    tx.commit().await?;
    // Three liveness ticks: observed states, and alerts for the apps that stay stopped.
    for _ in 0..3 {
        trusthub_hub::workers::liveness_tick(&state, trusthub_hub::state::now()).await?;
    }
    println!(
        "engine: {:?}; {} agents with {} min of samples, {made} apps, set up in {:.1} s",
        state.db.backend(),
        args.agents,
        args.minutes,
        setup.elapsed().as_secs_f64()
    );

    // Warm up once, then time each page.
    let pages = [
        ("overview /", "/"),
        ("overview live fragment", "/ui/overview/live"),
        ("agents list", "/ui/agents"),
        ("apps list", "/ui/apps"),
        ("peer: JSON GET /api/v1/agents", "/api/v1/agents"),
    ];
    println!("| page | p50 ms | p95 ms | max ms | KiB |");
    println!("|---|---:|---:|---:|---:|");
    let mut p95 = Vec::new();
    for (name, path) in pages {
        time_page(&http, &root, &cookie, path, 3).await?;
        let (lat, size) = time_page(&http, &root, &cookie, path, args.fetches).await?;
        println!(
            "| {name} | {:.1} | {:.1} | {:.1} | {} |",
            percentile(&lat, 50.0),
            percentile(&lat, 95.0),
            lat.last().copied().unwrap_or_default(),
            size / 1024
        );
        p95.push(percentile(&lat, 95.0));
    }
    println!(
        "agents page / JSON list, p95: {:.2}; hub RSS {} MiB (peak {} MiB)",
        p95[2] / p95[4].max(0.001),
        proc_mib(None, "VmRSS").unwrap_or_default(),
        proc_mib(None, "VmHWM").unwrap_or_default(),
    );
    let _ = stop.send(());
    let _ = tokio::time::timeout(Duration::from_secs(10), hub).await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
