//! Liveness tick benchmark (issue 4): N tracked apps over M agents, each agent with a live
//! report, then timed ticks of the real hub worker (`trusthub_hub::workers::liveness_tick`)
//! on SQLite or PostgreSQL. One app in `--mismatch-every` does not run, so ticks write
//! state changes and, on the third, raise alerts; the others are steady.
//!
//! `cargo run --release -p trusthub-bench-ingest --bin liveness -- --apps 100000`
//! (add `--database-url postgres://...` for PostgreSQL; the database must be empty).

use clap::Parser;
use std::time::Instant;
use trusthub_bench_ingest::proc_mib;
use trusthub_core::apps::ObservedMap;
use trusthub_fleet::raw as agents;
use trusthub_hub::{Server, Settings};
use trusthub_monitors::raw::apps;

#[derive(Debug, Parser)]
struct Args {
    /// Tracked apps.
    #[arg(long, default_value_t = 100_000)]
    apps: usize,
    /// Agents they are spread over.
    #[arg(long, default_value_t = 1000)]
    agents: usize,
    /// Timed ticks.
    #[arg(long, default_value_t = 6)]
    ticks: usize,
    /// One app in this many is not running.
    #[arg(long, default_value_t = 10)]
    mismatch_every: usize,
    /// Database (default: SQLite in a temporary data dir).
    #[arg(long)]
    database_url: Option<String>,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let dir = std::env::temp_dir().join(format!("th-liveness-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir)?;
    let mut settings = Settings::with_data_dir(dir.clone());
    settings.listen = "127.0.0.1:0".parse()?;
    settings.admin_password = Some("bench password".into());
    settings
        .sections
        .edit(|v: &mut trusthub_hub::sections::Monitors| v.liveness_interval_secs = 86_400);
    settings
        .sections
        .edit(|v: &mut trusthub_hub::sections::Monitors| v.rule_eval_interval_secs = 86_400);
    settings.db.database_url = args.database_url.clone();
    if args.database_url.is_some() {
        settings.encryption_key =
            Some("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f".into());
    }
    let server = Server::build(settings).await?;
    let state = server.state().clone();
    let db = state.db.clone();
    let now = trusthub_hub::state::now();
    let tenant = {
        let mut c = db.conn().await?;
        let user =
            trusthub_identity::raw::users::find_by_email_any_tenant(&mut c, "admin@trusthub.local")
                .await?
                .ok_or("no owner")?;
        user.tenant_id
    };

    let setup = Instant::now();
    let per_agent = args.apps.div_ceil(args.agents.max(1));
    let mut tx = db.begin().await?;
    let mut made = 0;
    for a in 0..args.agents {
        let tags = vec![format!("rack:{}", a % 10)];
        let id = agents::insert_agent(
            &mut tx,
            tenant,
            &agents::Registration {
                machine_id: &format!("m{a}"),
                hostname: &format!("host-{a}"),
                os: "bench",
                arch: "x86_64",
                agent_version: "bench",
                signing_pubkey: "00",
                tags: &tags,
            },
            &format!("hash-{a}"),
            &[],
            now,
        )
        .await?;
        let mut observed = ObservedMap::new();
        for i in 0..per_agent {
            if made >= args.apps {
                break;
            }
            let path = format!("/opt/app{i}/bin/server");
            if made % args.mismatch_every.max(1) != 0 {
                observed.insert(format!("process:{path}"), "running".into());
            }
            observed.insert(format!("systemd:unit{i}.service"), "running".into());
            apps::insert(
                &mut tx,
                tenant,
                &trusthub_bench_ingest::watched_app(id, &format!("app{i}"), "process", &path),
                now,
            )
            .await?;
            made += 1;
        }
        apps::set_live(&mut tx, id, &observed, now).await?;
    }
    tx.commit().await?;
    println!(
        "engine: {:?}; {made} apps on {} agents set up in {:.1} s",
        db.backend(),
        args.agents,
        setup.elapsed().as_secs_f64()
    );
    {
        let mut c = db.conn().await?;
        let t = Instant::now();
        let rows = apps::liveness_rows(&mut c).await?;
        let read_apps = t.elapsed();
        let t = Instant::now();
        let intervals = trusthub_fleet::ingest_intervals(&mut c).await?;
        let lives = apps::live_of_tracked_agents(&mut c, &intervals).await?;
        println!(
            "reads alone: {} app rows in {:.0} ms, {} live reports in {:.0} ms",
            rows.len(),
            read_apps.as_secs_f64() * 1000.0,
            lives.len(),
            t.elapsed().as_secs_f64() * 1000.0
        );
    }
    println!("| tick | ms | apps | changed | mismatches | alerts raised | RSS MiB |");
    println!("|---|---|---|---|---|---|---|");
    for t in 1..=args.ticks {
        let started = Instant::now();
        let r = trusthub_hub::workers::liveness_tick(&state, trusthub_hub::state::now()).await?;
        println!(
            "| {t} | {:.0} | {} | {} | {} | {} | {} |",
            started.elapsed().as_secs_f64() * 1000.0,
            r.apps,
            r.changed,
            r.mismatches,
            r.raised,
            proc_mib(None, "VmRSS").unwrap_or(0)
        );
    }
    db.close().await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
