//! Vulnerability benchmark (issue 20): generates OSV advisories for npm packages and Debian
//! source packages, imports them with the hub's importer (`trusthub_hub::cve::import_path`,
//! timed), registers hosts whose inventories hold `--packages` packages each (a share of
//! them named by advisories, as on a real host), then times the real scan worker
//! (`workers::cve_scan::scan_due`) over every host and the rescan of one host whose
//! inventory changed. The raw ceiling in the same run: the package look-ups alone (the same
//! queries, no matching, no writes).
//!
//! `cargo run --release -p trusthub-bench-ingest --bin cve -- --advisories 200000 --hosts 1000 --packages 1500`
//! (add `--database-url postgres://...` for PostgreSQL; the database must be empty).

use clap::Parser;
use serde_json::json;
use std::time::Instant;
use trusthub_bench_ingest::{insert_host, owner_tenant, proc_mib, quiet_settings};
use trusthub_hub::Server;

#[derive(Debug, Parser)]
struct Args {
    /// OSV records to generate and import.
    #[arg(long, default_value_t = 200_000)]
    advisories: usize,
    /// Hosts.
    #[arg(long, default_value_t = 1000)]
    hosts: usize,
    /// Packages per host (half OS packages, half npm dependencies).
    #[arg(long, default_value_t = 1500)]
    packages: usize,
    /// Database (default: SQLite in a temporary data dir).
    #[arg(long)]
    database_url: Option<String>,
}

/// Package names: advisories name `pkg-0 .. pkg-<names>`; hosts install a mix of those and
/// of names no advisory mentions.
fn name(i: usize) -> String {
    format!("pkg-{i}")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let dir = std::env::temp_dir().join(format!("th-cve-{}", uuid::Uuid::new_v4().simple()));
    let osv = dir.join("osv");
    std::fs::create_dir_all(osv.join("npm"))?;
    std::fs::create_dir_all(osv.join("Debian"))?;
    // Advisories: 4 per package name on average, half npm (SEMVER), half Debian:12.
    let names = (args.advisories / 4).max(1);
    let made = Instant::now();
    for i in 0..args.advisories {
        let n = i % names;
        let (eco, folder, range) = if i.is_multiple_of(2) {
            (
                "npm",
                "npm",
                json!([{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": format!("{}.{}.0", 1 + i % 5, i % 7)}]}]),
            )
        } else {
            (
                "Debian:12",
                "Debian",
                json!([{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": format!("{}.{}-{}+deb12u1", 1 + i % 5, i % 9, 1 + i % 3)}]}]),
            )
        };
        let id = format!("BENCH-{i}");
        let record = json!({"id": id, "modified": "2024-06-01T00:00:00Z", "aliases": [format!("CVE-2024-{i}")],
            "summary": "generated", "affected": [{"package": {"ecosystem": eco, "name": name(n)}, "ranges": range}],
            "severity": [{"type": "CVSS_V3", "score": "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:N/A:N"}]});
        std::fs::write(
            osv.join(folder).join(format!("{id}.json")),
            record.to_string(),
        )?;
    }
    println!(
        "generated {} OSV records over {} package names in {:.1} s",
        args.advisories,
        names,
        made.elapsed().as_secs_f64()
    );

    let settings = quiet_settings(dir.clone(), args.database_url.clone());
    let server = Server::build(settings).await?;
    let state = server.state().clone();
    let db = state.db.clone();

    let started = Instant::now();
    let report = trusthub_hub::cve::import_path(
        &db,
        "",
        &osv,
        trusthub_hub::archive::Limits::default(),
        trusthub_hub::state::now(),
    )
    .await
    .map_err(|e| e.message())?;
    let import_secs = started.elapsed().as_secs_f64();
    println!(
        "import: {} records in {import_secs:.1} s = {:.0} records/s ({} new, {} not fully evaluable)",
        report.files,
        report.files as f64 / import_secs,
        report.inserted,
        report.skipped_count
    );

    let tenant = owner_tenant(&db).await?;
    let now = trusthub_hub::state::now();
    let inventory = |host: usize, bump: bool| {
        let half = args.packages / 2;
        // One package in 20 is named by advisories; the rest are not.
        let pick = |k: usize| {
            if k.is_multiple_of(20) {
                name((host * 31 + k * 7) % names)
            } else {
                format!("other-{k}")
            }
        };
        let packages: Vec<_> = (0..half)
            .map(|k| json!({"manager": "dpkg", "name": pick(k), "version": format!("{}.{}-1", 1 + k % 4, k % 8)}))
            .collect();
        let deps: Vec<_> = (0..args.packages - half)
            .map(|k| {
                json!({"project_path": "/srv/app", "ecosystem": "npm", "name": pick(k + 1),
                "version": format!("{}.{}.{}", 1 + k % 4, k % 8, usize::from(bump))})
            })
            .collect();
        json!({"collected_at": "2026-11-26T00:00:00Z", "os": {"id": "debian", "version": "12"}, "packages": packages, "app_dependencies": deps})
    };
    let setup = Instant::now();
    let mut ids = Vec::new();
    let mut tx = db.begin().await?;
    for h in 0..args.hosts {
        let id = insert_host(&mut tx, tenant, h, now).await?;
        trusthub_fleet::raw::insert_inventory(&mut tx, id, now, &inventory(h, false), now).await?;
        ids.push(id);
    }
    tx.commit().await?;
    println!(
        "{} hosts × {} packages set up in {:.1} s",
        args.hosts,
        args.packages,
        setup.elapsed().as_secs_f64()
    );

    // The raw ceiling: the same look-ups the scan makes (packages some advisory names),
    // nothing else.
    let raw = Instant::now();
    {
        let index = trusthub_hub::cve::NameIndex::load(&db).await?;
        let mut c = db.conn().await?;
        let scope = tenant.0.to_string();
        for h in 0..args.hosts {
            let targets = trusthub_vulns::rules::scan::targets(
                &trusthub_core::inventory::Inventory::parse(&inventory(h, false))
                    .expect("inventory"),
            )
            .targets;
            let mut seen = std::collections::HashSet::new();
            for t in targets {
                if index.contains(&scope, &t.ecosystem, &t.lookup)
                    && seen.insert((t.ecosystem.clone(), t.lookup.clone()))
                {
                    trusthub_vulns::raw::advisories_for_package(
                        &mut c,
                        &scope,
                        &t.ecosystem,
                        &t.lookup,
                    )
                    .await?;
                }
            }
        }
    }
    let raw_secs = raw.elapsed().as_secs_f64();

    let full = Instant::now();
    let scanned = trusthub_hub::workers::cve_scan::scan_due(&state, now).await?;
    let full_secs = full.elapsed().as_secs_f64();
    let findings = {
        let mut c = db.conn().await?;
        trusthub_vulns::raw::findings(&mut c, tenant, &Default::default(), None, i64::MAX, now)
            .await?
            .len()
    };
    println!(
        "full scan: {scanned} hosts in {full_secs:.2} s ({findings} findings); look-ups alone {raw_secs:.2} s; scan/raw {:.2}",
        full_secs / raw_secs.max(1e-9)
    );

    // One host's inventory changes: only it is due.
    let mut tx = db.begin().await?;
    trusthub_fleet::raw::insert_inventory(&mut tx, ids[0], now, &inventory(0, true), now).await?;
    tx.commit().await?;
    let mut times = Vec::new();
    for round in 0..5usize {
        if round > 0 {
            let mut tx = db.begin().await?;
            trusthub_fleet::raw::insert_inventory(
                &mut tx,
                ids[0],
                now,
                &inventory(0, round.is_multiple_of(2)),
                now,
            )
            .await?;
            tx.commit().await?;
        }
        let one = Instant::now();
        let n = trusthub_hub::workers::cve_scan::scan_due(&state, now).await?;
        times.push(one.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(n, 1, "only the changed host is due");
    }
    times.sort_by(f64::total_cmp);
    println!(
        "rescan of one changed host (due check over {} hosts included): median {:.1} ms, max {:.1} ms",
        args.hosts,
        times[times.len() / 2],
        times[times.len() - 1]
    );
    if let Some(rss) = proc_mib(None, "VmHWM") {
        println!("peak RSS (generator, importer, hub and scan in one process): {rss} MiB");
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
