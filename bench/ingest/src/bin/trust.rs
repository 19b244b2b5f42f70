//! Trust Score benchmark (issue 32): the score of a tenant of `--hosts` hosts, each with an
//! inventory and open findings (half CRITICAL Debian packages, half HIGH npm dependencies),
//! computed through the service (every input read from its capability, the formula, the
//! history check) — against the formula alone on the same inputs (the ceiling); then the
//! public badge answered over HTTP, `--requests` times, p50/p99.
//!
//! `cargo run --release -p trusthub-bench-ingest --bin trust -- --hosts 1000 --findings 20`
//! (add `--database-url postgres://...` for PostgreSQL; the database must be empty).

use clap::Parser;
use serde_json::json;
use std::time::{Duration, Instant};
use trusthub_bench_ingest::{
    CVSS_CRITICAL, CVSS_HIGH, findings_shape, insert_host_with, owner_tenant, quiet_settings,
};
use trusthub_hub::Server;

#[derive(Debug, Parser)]
struct Args {
    /// Hosts.
    #[arg(long, default_value_t = 1000)]
    hosts: usize,
    /// Open findings per host.
    #[arg(long, default_value_t = 20)]
    findings: usize,
    /// Score computations timed.
    #[arg(long, default_value_t = 20)]
    runs: usize,
    /// Badge requests timed.
    #[arg(long, default_value_t = 2000)]
    requests: usize,
    /// Database (default: SQLite in a temporary data dir).
    #[arg(long)]
    database_url: Option<String>,
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i].as_secs_f64() * 1000.0
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let dir = std::env::temp_dir().join(format!("th-trust-{}", uuid::Uuid::new_v4().simple()));
    let osv = dir.join("osv");
    std::fs::create_dir_all(&osv)?;
    let os = args.findings / 2;
    let deps = args.findings - os;
    let inventory = findings_shape(&osv, os, deps, CVSS_CRITICAL, CVSS_HIGH)?;
    let mut settings = quiet_settings(dir.clone(), args.database_url.clone());
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
    let mut inventory = inventory;
    inventory["patching"] =
        json!({"managers": ["apt"], "reboot_required": true, "reboot_required_packages": []});
    let mut tx = db.begin().await?;
    for h in 0..args.hosts {
        let token = format!("{}bench-{h}", trusthub_core::agent::AGENT_TOKEN_PREFIX);
        let id = insert_host_with(
            &mut tx,
            tenant,
            h,
            &trusthub_core::secret::token_hash(&token),
            &[],
            now,
        )
        .await?;
        trusthub_fleet::raw::insert_inventory(&mut tx, id, now, &inventory, now).await?;
    }
    tx.commit().await?;
    trusthub_hub::workers::cve_scan::scan_due(&state, now).await?;

    // The score through the service, and the formula alone on the same inputs.
    let mut service = Vec::new();
    let mut formula = Vec::new();
    let mut last = None;
    for _ in 0..args.runs {
        let t = Instant::now();
        let s = trusthub_trust::service::compute(&state, tenant, trusthub_hub::state::now())
            .await?
            .score;
        service.push(t.elapsed());
        let inputs =
            trusthub_trust::service::inputs_v13(&state, tenant, trusthub_hub::state::now()).await?;
        let t = Instant::now();
        let f = trusthub_trust::score::v13(&inputs);
        formula.push(t.elapsed());
        assert_eq!(f.final_score, s.final_score);
        last = Some(s);
    }
    service.sort();
    formula.sort();
    let s = last.ok_or("no run")?;
    println!(
        "score of {} hosts × {} findings: {} ({}), service p50 {:.1} ms p99 {:.1} ms; formula alone p50 {:.2} ms; ratio {:.0}",
        args.hosts,
        args.findings,
        s.final_score,
        s.band,
        percentile(&service, 0.5),
        percentile(&service, 0.99),
        percentile(&formula, 0.5),
        percentile(&service, 0.5) / percentile(&formula, 0.5).max(1e-6)
    );

    // The badge over HTTP, one connection, after the first answer cached the point.
    let client = reqwest::Client::new();
    let url = format!("http://{addr}/badge/{}.svg", tenant.0);
    let mut badge = Vec::new();
    for _ in 0..args.requests {
        let t = Instant::now();
        let r = client.get(&url).send().await?;
        let ok = r.status().is_success();
        let _ = r.bytes().await?;
        badge.push(t.elapsed());
        assert!(ok);
    }
    badge.sort();
    let health = format!("http://{addr}/api/v1/health");
    let mut ceiling = Vec::new();
    for _ in 0..args.requests {
        let t = Instant::now();
        let _ = client.get(&health).send().await?.bytes().await?;
        ceiling.push(t.elapsed());
    }
    ceiling.sort();
    println!(
        "badge: p50 {:.2} ms p99 {:.2} ms over {} requests; /health in the same run p50 {:.2} ms p99 {:.2} ms",
        percentile(&badge, 0.5),
        percentile(&badge, 0.99),
        args.requests,
        percentile(&ceiling, 0.5),
        percentile(&ceiling, 0.99)
    );
    let _ = stop.send(());
    let _ = serving.await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
