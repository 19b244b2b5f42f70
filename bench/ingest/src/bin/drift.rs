//! Configuration drift benchmark (issue 32): `--hosts` hosts × `--files` watched files each,
//! every host's scan applied the way ingest applies it (`drift::on_config_scan` in one
//! transaction per scan, on the real database) — the first pass (baselines), a steady pass
//! (nothing changed: what almost every scan is), and a pass with one changed file per host
//! (an alert raised per host). In the same run: the pure evaluation of the steady pass in
//! memory (the ceiling of the rule), and reading every host's rows (the ceiling of the
//! database work a pass must do).
//!
//! `cargo run --release -p trusthub-bench-ingest --bin drift -- --hosts 1000 --files 200`
//! (add `--database-url postgres://...` for PostgreSQL; the database must be empty).

use clap::Parser;
use std::collections::HashSet;
use std::time::Instant;
use trusthub_bench_ingest::{insert_host_with, owner_tenant, quiet_settings};
use trusthub_core::drift::{ConfigHash, Kind};
use trusthub_fleet::ingest::ConfigScan;
use trusthub_hub::Server;

#[derive(Debug, Parser)]
struct Args {
    /// Hosts.
    #[arg(long, default_value_t = 1000)]
    hosts: usize,
    /// Watched files per host.
    #[arg(long, default_value_t = 200)]
    files: usize,
    /// Database (default: SQLite in a temporary data dir).
    #[arg(long)]
    database_url: Option<String>,
}

fn file(j: usize, fill: u64) -> ConfigHash {
    ConfigHash {
        path: format!("/etc/bench/{j:04}.conf"),
        sha256: Some(format!("{fill:064x}")),
        size: Some(100 + j as u64),
        mode: Some("0644".into()),
        uid: Some(0),
        gid: Some(0),
        mtime: None,
        kind: Kind::File,
        link_target: None,
        package: j.is_multiple_of(2).then(|| format!("pkg{}", j / 10)),
        package_version: j.is_multiple_of(2).then(|| "1.0-1".into()),
        package_verified: j.is_multiple_of(2).then_some(true),
    }
}

async fn pass(
    db: &trusthub_store::Db,
    scans: &[ConfigScan],
) -> Result<f64, Box<dyn std::error::Error>> {
    let t = Instant::now();
    for s in scans {
        let mut tx = db.begin().await?;
        trusthub_drift::on_config_scan(&mut tx, s, trusthub_hub::state::now()).await?;
        tx.commit().await?;
    }
    Ok(t.elapsed().as_secs_f64())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let dir = std::env::temp_dir().join(format!("th-drift-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir)?;
    let server = Server::build(quiet_settings(dir.clone(), args.database_url.clone())).await?;
    let state = server.state().clone();
    let db = state.db.clone();
    let tenant = owner_tenant(&db).await?;
    let now = trusthub_hub::state::now();
    let mut agents = Vec::new();
    let mut tx = db.begin().await?;
    for h in 0..args.hosts {
        let token = format!("{}bench-{h}", trusthub_core::agent::AGENT_TOKEN_PREFIX);
        agents.push(
            insert_host_with(
                &mut tx,
                tenant,
                h,
                &trusthub_core::secret::token_hash(&token),
                &[],
                now,
            )
            .await?,
        );
    }
    tx.commit().await?;
    let patterns = vec!["/etc/bench/*".to_owned()];
    let scans = |changed: bool| -> Vec<ConfigScan> {
        agents
            .iter()
            .map(|a| ConfigScan {
                tenant,
                agent_id: *a,
                hostname: "bench".into(),
                tags: vec![],
                patterns: patterns.clone(),
                hashes: (0..args.files)
                    .map(|j| file(j, if changed && j == 1 { 7 } else { j as u64 }))
                    .collect(),
            })
            .collect()
    };
    let steady = scans(false);
    let first = pass(&db, &steady).await?;
    let again = pass(&db, &steady).await?;
    let changed = pass(&db, &scans(true)).await?;

    // Ceilings in the same run: the rule alone in memory on the same held rows, and reading
    // every host's rows.
    let mut held = Vec::new();
    for s in &steady {
        let c = trusthub_drift::rules::evaluate(
            s.agent_id,
            &[],
            &HashSet::new(),
            &s.patterns,
            &s.hashes,
            now,
        );
        held.push(c.inserts);
    }
    let known: HashSet<String> = patterns.iter().cloned().collect();
    let t = Instant::now();
    let mut touched = 0;
    for (s, rows) in steady.iter().zip(&held) {
        let c =
            trusthub_drift::rules::evaluate(s.agent_id, rows, &known, &s.patterns, &s.hashes, now);
        touched += c.updates.len() + c.inserts.len();
    }
    let pure = t.elapsed().as_secs_f64();
    assert_eq!(touched, 0);
    let t = Instant::now();
    let mut rows = 0;
    for a in &agents {
        rows += trusthub_drift::service::of_agent(&state, tenant, *a)
            .await?
            .len();
    }
    let read = t.elapsed().as_secs_f64();
    let alerts = {
        let mut c = db.conn().await?;
        trusthub_alerts::open_counts(&mut c, tenant).await?
    };
    println!(
        "{} hosts × {} files ({} rows): first pass {:.2} s, steady pass {:.2} s, one change per host {:.2} s; \
         ceilings: the rule alone {:.3} s, reading every host's rows {:.2} s (steady/read {:.1}); open alerts {:?}",
        args.hosts,
        args.files,
        rows,
        first,
        again,
        changed,
        pure,
        read,
        again / read.max(1e-9),
        alerts
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
