//! Auto-patch benchmark (issue 31): one worker cycle over `--hosts` hosts with `--findings`
//! open findings each (half Debian packages, half npm dependencies of one project), every
//! host's agent holding its action socket open, so the cycle plans, records and signs and
//! sends every action (one per OS source package, one per project). The agents only read
//! (their work is not the hub's). The raw ceiling in the same run: reading every host's
//! findings and planning, with no write and no send.
//!
//! `ulimit -n 8192; cargo run --release -p trusthub-bench-ingest --bin autopatch -- --hosts 1000 --findings 20`
//! (add `--database-url postgres://...` for PostgreSQL; the database must be empty).

use clap::Parser;
use futures_util::StreamExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use trusthub_bench_ingest::{
    CVSS_CRITICAL, findings_shape, insert_host_with, owner_tenant, proc_mib, quiet_settings,
};
use trusthub_hub::Server;

#[derive(Debug, Parser)]
struct Args {
    /// Hosts.
    #[arg(long, default_value_t = 1000)]
    hosts: usize,
    /// Open findings per host (half OS packages, half npm dependencies).
    #[arg(long, default_value_t = 20)]
    findings: usize,
    /// Database (default: SQLite in a temporary data dir).
    #[arg(long)]
    database_url: Option<String>,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let dir = std::env::temp_dir().join(format!("th-autopatch-{}", uuid::Uuid::new_v4().simple()));
    let osv = dir.join("osv");
    std::fs::create_dir_all(&osv)?;
    let os = args.findings / 2;
    let deps = args.findings - os;
    let inventory = findings_shape(&osv, os, deps, CVSS_CRITICAL, CVSS_CRITICAL)?;
    let mut settings = quiet_settings(dir.clone(), args.database_url.clone());
    settings
        .sections
        .edit(|v: &mut trusthub_hub::sections::Autopatch| v.autopatch_warmup_secs = 86_400);
    settings.rate_limits = "off".into();
    let server = Server::build(settings).await?;
    let state = server.state().clone();
    let addr = server.local_addr();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.run(async move {
        let _ = stopped.await;
    }));
    let db = state.db.clone();
    trusthub_hub::cve::import_path(
        &db,
        "",
        &osv,
        trusthub_hub::archive::Limits::default(),
        trusthub_hub::state::now(),
    )
    .await
    .map_err(|e| e.message())?;
    let tenant = owner_tenant(&db).await?;
    let now = trusthub_hub::state::now();
    let setup = Instant::now();
    let mut hosts = Vec::new();
    let mut tx = db.begin().await?;
    for h in 0..args.hosts {
        let token = format!("{}bench-{h}", trusthub_core::agent::AGENT_TOKEN_PREFIX);
        let id = insert_host_with(
            &mut tx,
            tenant,
            h,
            &trusthub_core::secret::token_hash(&token),
            &["install_package".to_owned(), "update_packages".to_owned()],
            now,
        )
        .await?;
        trusthub_fleet::raw::insert_inventory(&mut tx, id, now, &inventory, now).await?;
        trusthub_autopatch::raw::put(
            &mut tx,
            &trusthub_autopatch::raw::Settings {
                os_packages: true,
                app_deps: true,
                ..trusthub_autopatch::raw::Settings::default_for(tenant, id)
            },
        )
        .await?;
        hosts.push((id, token));
    }
    tx.commit().await?;
    let scan = Instant::now();
    trusthub_hub::workers::cve_scan::scan_due(&state, now).await?;
    println!(
        "{} hosts × {} findings set up in {:.1} s (scan {:.1} s)",
        args.hosts,
        args.findings,
        setup.elapsed().as_secs_f64(),
        scan.elapsed().as_secs_f64()
    );

    // Every host's agent holds its socket; it reads what comes and counts it.
    let connected = Arc::new(AtomicUsize::new(0));
    let received = Arc::new(AtomicUsize::new(0));
    for (id, token) in &hosts {
        let (connected, received) = (connected.clone(), received.clone());
        let (id, token) = (*id, token.clone());
        tokio::spawn(async move {
            let Ok(mut req) = format!("ws://{addr}/api/v1/ws/agents/{id}").into_client_request()
            else {
                return;
            };
            let Ok(auth) = format!("Bearer {token}").parse() else {
                return;
            };
            req.headers_mut().insert("authorization", auth);
            let tcp = match tokio::net::TcpStream::connect(addr).await {
                Ok(t) => t,
                Err(e) => {
                    eprintln!("connect {addr}: {e}");
                    return;
                }
            };
            let mut ws = match tokio_tungstenite::client_async(req, tcp).await {
                Ok((ws, _)) => ws,
                Err(e) => {
                    eprintln!("socket of {id}: {e}");
                    return;
                }
            };
            connected.fetch_add(1, Ordering::Relaxed);
            while let Some(Ok(msg)) = ws.next().await {
                if msg.is_text() {
                    received.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    }
    let t = Instant::now();
    while connected.load(Ordering::Relaxed) < hosts.len() && t.elapsed() < Duration::from_secs(120)
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Connections are marked in the database as they open.
    tokio::time::sleep(Duration::from_secs(2)).await;
    println!("{} sockets open", connected.load(Ordering::Relaxed));

    // The ceiling: every host's findings read and planned; nothing written or sent.
    let raw = Instant::now();
    let mut planned = 0;
    {
        let mut c = db.conn().await?;
        let scope = trusthub_autopatch::rules::Scope {
            os_packages: true,
            app_deps: true,
            min_rank: 3,
        };
        for (id, _) in &hosts {
            let f = trusthub_vulns::patching::unfixed_findings(&mut c, tenant, *id, now).await?;
            planned += trusthub_autopatch::rules::plan(&f, scope, &Default::default())
                .dispatch
                .len();
        }
    }
    let raw_secs = raw.elapsed().as_secs_f64();

    let cycle = Instant::now();
    let ran = trusthub_autopatch::service::cycle(&state, now).await?;
    let cycle_secs = cycle.elapsed().as_secs_f64();
    let t = Instant::now();
    while received.load(Ordering::Relaxed) < planned && t.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!(
        "cycle: {ran} hosts, {planned} actions planned, {} received by agents, in {cycle_secs:.2} s \
         ({:.2} ms a host); read and plan alone {raw_secs:.2} s; cycle/ceiling {:.1}",
        received.load(Ordering::Relaxed),
        cycle_secs * 1000.0 / ran.max(1) as f64,
        cycle_secs / raw_secs.max(1e-9)
    );
    // A second cycle at once: every host is within the minimum gap.
    let again = Instant::now();
    let ran = trusthub_autopatch::service::cycle(&state, now + time::Duration::seconds(60)).await?;
    println!(
        "cycle within the gap: {ran} hosts in {:.3} s",
        again.elapsed().as_secs_f64()
    );
    println!("peak RSS {} MiB", proc_mib(None, "VmHWM").unwrap_or(0));
    let _ = stop.send(());
    let _ = serving.await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
