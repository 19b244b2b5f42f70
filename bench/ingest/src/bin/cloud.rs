//! Cloud discovery benchmark (issue 34): `--instances` machines across `--accounts` Hetzner
//! Cloud projects served by the local Hetzner API of the cloud tests (the one `hcloud` holds
//! true; 50 servers a page, as Hetzner pages), added through the hub's API on a port. Timed
//! from the request to the end of the runs: the first discovery (every resource new) and a
//! steady one (nothing changed), all accounts at once. The process's RSS before and after.
//! Ceiling in the same run: reading the same pages with a plain HTTP client, no hub.
//!
//! `cargo run --release -p trusthub-bench-ingest --bin cloud -- --instances 10000`
//! (add `--database-url postgres://...` for PostgreSQL; the database must be empty).

#[path = "../../../../crates/cloud/tests/fakes/hetzner.rs"]
#[allow(dead_code)]
mod hetzner;

use clap::Parser;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use trusthub_bench_ingest::{owner_cookie, proc_mib, quiet_settings};
use trusthub_hub::Server;

#[derive(Debug, Parser)]
struct Args {
    /// Machines in all.
    #[arg(long, default_value_t = 10_000)]
    instances: u64,
    /// Accounts they are spread over.
    #[arg(long, default_value_t = 3)]
    accounts: u64,
    /// Database (default: SQLite in a temporary data dir).
    #[arg(long)]
    database_url: Option<String>,
}

async fn wait_runs(
    http: &reqwest::Client,
    api: &str,
    cookie: &str,
    ids: &[String],
    runs: usize,
) -> Result<Vec<Value>, Box<dyn std::error::Error>> {
    loop {
        let mut done = Vec::new();
        for id in ids {
            let list: Value = http
                .get(format!("{api}/cloud/runs?account_id={id}"))
                .header("cookie", cookie)
                .send()
                .await?
                .json()
                .await?;
            let a = list.as_array().cloned().unwrap_or_default();
            if a.len() >= runs && a[0]["status"] != "running" {
                done.push(a[0].clone());
            }
        }
        if done.len() == ids.len() {
            return Ok(done);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = std::env::temp_dir().join(format!("th-cloud-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir)?;
    let mut settings = quiet_settings(dir.clone(), args.database_url.clone());
    settings.outbound_allow_cidrs = "127.0.0.0/8".into();
    let server = Server::build(settings).await?;
    let api = format!("http://{}/api/v1", server.local_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.run(async move {
        let _ = stopped.await;
    }));
    let http = reqwest::Client::new();
    let cookie = owner_cookie(&http, &api, "bench password").await?;

    // The projects: machines spread evenly, a private address each, firewalls as in the tests.
    let per = args.instances.div_ceil(args.accounts);
    let mut fakes = Vec::new();
    for a in 0..args.accounts {
        let (_, firewalls) = hetzner::fleet();
        let servers: Vec<Value> = (0..per.min(args.instances - a * per))
            .map(|i| {
                let n = a * per + i;
                let ip = format!("203.0.{}.{}", n / 250, n % 250 + 1);
                let private = format!("10.{}.{}.{}", a, i / 250, i % 250 + 1);
                hetzner::server(
                    100_000 + n,
                    &format!("m-{n}"),
                    &ip,
                    Some(&private),
                    &[1 + n % 2],
                    "running",
                )
            })
            .collect();
        fakes.push(hetzner::Hetzner::start(servers, firewalls).await);
    }
    // The ceiling: every page read with a plain client.
    let t = Instant::now();
    let mut seen = 0;
    for f in &fakes {
        let mut page = 1;
        loop {
            let v: Value = http
                .get(format!("{}/servers?page={page}&per_page=50", f.url))
                .bearer_auth(&f.token)
                .send()
                .await?
                .json()
                .await?;
            seen += v["servers"].as_array().map_or(0, Vec::len);
            match v["meta"]["pagination"]["next_page"].as_u64() {
                Some(n) => page = n,
                None => break,
            }
        }
    }
    let ceiling = t.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let idle = proc_mib(None, "VmRSS").unwrap_or(0);

    // Adding the accounts starts their first runs.
    let t = Instant::now();
    let mut ids = Vec::new();
    for (i, f) in fakes.iter().enumerate() {
        let r: Value = http
            .post(format!("{api}/cloud/accounts"))
            .header("cookie", &cookie)
            .json(
                &json!({"provider": "hetzner", "name": format!("project-{i}"), "endpoint": f.url,
                "credentials": {"token": f.token}}),
            )
            .send()
            .await?
            .json()
            .await?;
        ids.push(
            r["id"]
                .as_str()
                .ok_or(format!("account not added: {r}"))?
                .to_owned(),
        );
    }
    let first = wait_runs(&http, &api, &cookie, &ids, 1).await?;
    let first_s = t.elapsed().as_secs_f64();
    let after_first = proc_mib(None, "VmRSS").unwrap_or(0);
    let added: i64 = first.iter().map(|r| r["added"].as_i64().unwrap_or(0)).sum();
    let summary = |http: reqwest::Client, api: String, cookie: String| async move {
        http.get(format!("{api}/cloud/summary"))
            .header("cookie", &cookie)
            .send()
            .await?
            .json::<Value>()
            .await
    };
    let after_first_findings =
        summary(http.clone(), api.clone(), cookie.clone()).await?["open_findings"].clone();

    // A steady run of every account at once: nothing changed.
    let t = Instant::now();
    for id in &ids {
        http.post(format!("{api}/cloud/accounts/{id}/discover"))
            .header("cookie", &cookie)
            .json(&json!({}))
            .send()
            .await?
            .error_for_status()?;
    }
    let steady = wait_runs(&http, &api, &cookie, &ids, 2).await?;
    let steady_s = t.elapsed().as_secs_f64();
    let peak = proc_mib(None, "VmHWM").unwrap_or(0);
    let unchanged = steady
        .iter()
        .all(|r| r["added"] == 0 && r["changed"] == 0 && r["removed"] == 0);
    let summary = summary(http.clone(), api.clone(), cookie.clone()).await?;
    println!(
        "{} machines over {} accounts ({seen} read by the plain client in {ceiling:.2} s)",
        args.instances, args.accounts
    );
    println!(
        "first discovery (all new, {added} added): {first_s:.2} s; ratio to the plain read {:.1}",
        first_s / ceiling
    );
    println!(
        "steady discovery (nothing changed: {unchanged}): {steady_s:.2} s; ratio {:.1}",
        steady_s / ceiling
    );
    println!(
        "RSS idle {idle} MiB, after the first runs {after_first} MiB (+{}), peak {peak} MiB",
        after_first.saturating_sub(idle)
    );
    println!(
        "summary: {} resources; open findings after the first run {} and after the steady one {}",
        summary["resources"], after_first_findings, summary["open_findings"]
    );
    let _ = stop.send(());
    let _ = serving.await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
