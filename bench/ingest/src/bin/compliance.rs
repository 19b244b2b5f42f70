//! Compliance listing benchmark (issue 36): `GET /compliance` for `--hosts` hosts with the 21
//! checks each (one framework: 21 × hosts rows; all four: 84 × hosts), `--runs` requests,
//! p50 and p99, through the hub's API on a port. The results are written straight into the
//! tables as the ingest hook writes them. Ceiling in the same run: the hub's own service
//! function in process (`service::list`: the read, the mappings, no HTTP and no JSON), and
//! the bare read of the rows.
//!
//! `cargo run --release -p trusthub-bench-ingest --bin compliance`
//! (add `--database-url postgres://...` for PostgreSQL; the database must be empty).

use clap::Parser;
use std::time::{Duration, Instant};
use trusthub_bench_ingest::{
    insert_host, owner_cookie, owner_tenant, pct, quiet_settings, timed_get,
};
use trusthub_core::compliance::{CHECKS, CheckResult};
use trusthub_hub::Server;
use uuid::Uuid;

#[derive(Debug, Parser)]
struct Args {
    /// Hosts.
    #[arg(long, default_value_t = 1_000)]
    hosts: usize,
    /// Requests per measure.
    #[arg(long, default_value_t = 30)]
    runs: usize,
    /// Database (default: SQLite in a temporary data dir).
    #[arg(long)]
    database_url: Option<String>,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = std::env::temp_dir().join(format!("th-compliance-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir)?;
    let server = Server::build(quiet_settings(dir.clone(), args.database_url.clone())).await?;
    let state = server.state().clone();
    let db = state.db.clone();
    let tenant = owner_tenant(&db).await?;
    let api = format!("http://{}/api/v1", server.local_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.run(async move {
        let _ = stopped.await;
    }));
    let http = reqwest::Client::new();
    let cookie = owner_cookie(&http, &api, "bench password").await?;

    let now = trusthub_hub::state::now().replace_nanosecond(0)?;
    let mut tx = db.begin().await?;
    for h in 0..args.hosts {
        let agent = insert_host(&mut tx, tenant, h, now).await?;
        let results: Vec<CheckResult> = CHECKS
            .iter()
            .enumerate()
            .map(|(i, c)| CheckResult {
                check_id: c.id.into(),
                status: if (h + i) % 5 == 0 { "fail" } else { "pass" }.into(),
                evidence: format!("{} as seen on host-{h}: mode 0644 owner uid 0 gid 0", c.id),
                remediation: c.remediation.into(),
            })
            .collect();
        trusthub_compliance::raw::put_results(&mut tx, tenant, agent, None, now, &results).await?;
    }
    tx.commit().await?;

    for (what, query, rows) in [
        ("one framework", "?framework=cis-debian", 21),
        ("one framework, failures", "?framework=soc2&status=fail", 0),
        ("all four frameworks", "", 84),
    ] {
        let (api_t, bytes) = timed_get(
            &http,
            &format!("{api}/compliance{query}"),
            &cookie,
            args.runs,
        )
        .await?;
        let filter = trusthub_compliance::service::Filter {
            framework: query
                .split("framework=")
                .nth(1)
                .map(|f| f.split('&').next().unwrap_or(f).to_owned()),
            agent_id: None,
            status: query.contains("status=fail").then(|| "fail".to_owned()),
        };
        let mut inproc = Vec::new();
        let mut n = 0;
        for _ in 0..args.runs {
            let t = Instant::now();
            n = std::hint::black_box(
                trusthub_compliance::service::list(&state, tenant, &filter).await?,
            )
            .len();
            inproc.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        let mut read = Vec::new();
        for _ in 0..args.runs {
            let t = Instant::now();
            std::hint::black_box(
                trusthub_compliance::service::results(&state, tenant, &filter).await?,
            );
            read.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        let expected = if rows == 0 { n } else { rows * args.hosts };
        assert_eq!(n, expected, "{what}");
        println!(
            "GET /compliance{query} ({what}): {} hosts, {n} rows, {bytes} bytes: API p50 {:.1} ms p99 {:.1} ms; service in process p50 {:.1} ms; rows read p50 {:.1} ms",
            args.hosts,
            pct(api_t.clone(), 0.5),
            pct(api_t, 0.99),
            pct(inproc, 0.5),
            pct(read, 0.5),
        );
    }
    let _ = stop.send(());
    let _ = tokio::time::timeout(Duration::from_secs(5), serving).await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
