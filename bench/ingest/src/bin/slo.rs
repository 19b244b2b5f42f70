//! SLO benchmark (issue 21): `--apps` apps, each with an SLO of 30 days and a verdict timeline
//! of 30 days with `--outages` outages (two spans each, as liveness writes them), then times
//! the status of every SLO (`GET /slos`'s function, `routes::slo::statuses`) and the 365-day
//! CSV of one app with an outage a day. The raw ceiling in the same run: reading the same
//! spans from the database, nothing computed.
//!
//! `cargo run --release -p trusthub-bench-ingest --bin slo -- --apps 10000 --outages 10`
//! (add `--database-url postgres://...` for PostgreSQL; the database must be empty).

use clap::Parser;
use std::time::Instant;
use time::Duration;
use trusthub_bench_ingest::{insert_host, owner_tenant, proc_mib, quiet_settings};
use trusthub_hub::Server;

#[derive(Debug, Parser)]
struct Args {
    /// Apps with an SLO.
    #[arg(long, default_value_t = 10_000)]
    apps: usize,
    /// Outages per app over the 30 days.
    #[arg(long, default_value_t = 10)]
    outages: usize,
    /// Database (default: SQLite in a temporary data dir).
    #[arg(long)]
    database_url: Option<String>,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let dir = std::env::temp_dir().join(format!("th-slo-{}", uuid::Uuid::new_v4().simple()));
    let mut settings = quiet_settings(dir.clone(), args.database_url.clone());
    settings.rate_limits = "off".into();
    let server = Server::build(settings).await?;
    let state = server.state().clone();
    let base = format!("http://{}", server.local_addr());
    tokio::spawn(server.run(std::future::pending::<()>()));
    let db = state.db.clone();
    let tenant = owner_tenant(&db).await?;
    let now = trusthub_hub::state::now();
    let setup = Instant::now();
    let hosts = args.apps.div_ceil(100).max(1);
    let mut apps = Vec::new();
    let mut spans = 0usize;
    let mut tx = db.begin().await?;
    for h in 0..hosts {
        let agent = insert_host(&mut tx, tenant, h, now).await?;
        for k in 0..100.min(args.apps - apps.len()) {
            let app = trusthub_monitors::raw::apps::insert(
                &mut tx,
                tenant,
                &trusthub_bench_ingest::watched_app(
                    agent,
                    &format!("app-{h}-{k}"),
                    "systemd",
                    &format!("svc-{k}.service"),
                ),
                // Tracked for longer than the history read below (days before an app was
                // tracked are not shown).
                now - Duration::days(400),
            )
            .await?
            .ok_or("app")?;
            trusthub_slo::raw::put(
                &mut tx,
                &trusthub_slo::raw::Slo {
                    app_id: app.id,
                    tenant_id: tenant.0,
                    target: 0.999,
                    window_days: 30,
                    minimum_data: 0.95,
                    created_at: now,
                    updated_at: now,
                },
            )
            .await?;
            // 30 days: up, with `outages` outages of 1 to 20 minutes spread over them.
            let start = now - Duration::days(30);
            let step = Duration::days(30) / (args.outages as u32 + 1);
            let mut t = start;
            for o in 0..args.outages {
                let down_at = start + step * (o as u32 + 1);
                let down_for = Duration::minutes(1 + ((h * 7 + k * 3 + o) % 20) as i64);
                trusthub_monitors::timeline::append(&mut tx, app.id, t, down_at, false).await?;
                trusthub_monitors::timeline::append(
                    &mut tx,
                    app.id,
                    down_at,
                    down_at + down_for,
                    true,
                )
                .await?;
                t = down_at + down_for;
                spans += 2;
            }
            trusthub_monitors::timeline::append(&mut tx, app.id, t, now, false).await?;
            spans += 1;
            apps.push(app.id);
        }
    }
    tx.commit().await?;
    println!(
        "{} apps with SLOs, {spans} timeline spans, set up in {:.1} s",
        apps.len(),
        setup.elapsed().as_secs_f64()
    );

    // The ceiling: the spans the statuses read, read and nothing else.
    let mut raw = Vec::new();
    let mut full = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let mut c = db.conn().await?;
        let n =
            trusthub_monitors::timeline::spans_of_tenant(&mut c, tenant, now - Duration::days(90))
                .await?
                .len();
        drop(c);
        raw.push(t.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(n, spans);
        let t = Instant::now();
        let all = trusthub_slo::statuses(&state, tenant, now).await?;
        full.push(t.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(all.len(), apps.len());
    }
    let (raw_ms, full_ms) = (median(raw), median(full));
    println!(
        "status of {} SLOs over 30 days: median {full_ms:.0} ms (goal ≤ 1000 ms); reading their spans alone {raw_ms:.0} ms; status/raw {:.2}",
        apps.len(),
        full_ms / raw_ms.max(1e-9)
    );

    // The overview's live fragment and the apps page read each SLO's last evaluated status
    // (CONTRACT 18): one evaluation pass fills it, then the pages are timed over HTTP.
    let t = Instant::now();
    let evaluated = trusthub_hub::workers::slo::evaluate(&state, now).await?;
    println!(
        "one SLO evaluation pass ({} SLOs, statuses kept): {:.0} ms",
        evaluated.slos,
        t.elapsed().as_secs_f64() * 1000.0
    );
    let http = reqwest::Client::new();
    let cookie =
        trusthub_bench_ingest::owner_cookie(&http, &format!("{base}/api/v1"), "bench password")
            .await?;
    for (path, goal) in [("/ui/overview/live", "≤ 50 ms"), ("/ui/apps", "—")] {
        let mut lat = Vec::new();
        let mut size = 0;
        for _ in 0..21 {
            let t = Instant::now();
            let r = http
                .get(format!("{base}{path}"))
                .header("cookie", &cookie)
                .send()
                .await?;
            assert!(r.status().is_success(), "{path}: {}", r.status());
            size = r.bytes().await?.len();
            lat.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        println!(
            "{path} at {} SLOs: median {:.1} ms ({size} bytes; goal {goal}; computing every status: {full_ms:.0} ms)",
            apps.len(),
            median(lat)
        );
    }

    // The apps page's parts, in process: where its time goes.
    {
        let mut parts: Vec<(&str, Vec<f64>)> = vec![("SLO lines", vec![]), ("app names", vec![])];
        for _ in 0..11 {
            let t = Instant::now();
            let _ = trusthub_slo::app_lines(&state, tenant).await?;
            parts[0].1.push(t.elapsed().as_secs_f64() * 1000.0);
            let t = Instant::now();
            let mut c = db.conn().await?;
            let _ = trusthub_monitors::app_names(&mut c, tenant).await?;
            parts[1].1.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        for (name, lat) in parts {
            println!("  of the apps page, {name}: median {:.1} ms", median(lat));
        }
    }

    // One app with 365 days of history, an outage a day.
    let one = apps[0];
    let mut tx = db.begin().await?;
    let mut t = now - Duration::days(400);
    let mut yearly = 0;
    while t < now - Duration::days(30) {
        let down_at = t + Duration::hours(20);
        trusthub_monitors::timeline::append(&mut tx, one, t, down_at, false).await?;
        trusthub_monitors::timeline::append(
            &mut tx,
            one,
            down_at,
            down_at + Duration::minutes(3),
            true,
        )
        .await?;
        t += Duration::days(1);
        yearly += 2;
    }
    tx.commit().await?;
    let mut raw = Vec::new();
    let mut csv = Vec::new();
    for _ in 0..21 {
        let t = Instant::now();
        let mut c = db.conn().await?;
        let n = trusthub_monitors::timeline::spans(&mut c, one, now - Duration::days(396))
            .await?
            .len();
        drop(c);
        raw.push(t.elapsed().as_secs_f64() * 1000.0);
        assert!(n > 300);
        let t = Instant::now();
        let body = trusthub_slo::history_csv(&state, tenant, one, 365, now).await?;
        csv.push(t.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(body.split("\r\n").filter(|l| !l.is_empty()).count(), 366);
    }
    let (raw_ms, csv_ms) = (median(raw), median(csv));
    println!(
        "365-day CSV of one app ({yearly} spans more): median {csv_ms:.1} ms (goal ≤ 50 ms); reading its spans alone {raw_ms:.1} ms; csv/raw {:.2}",
        csv_ms / raw_ms.max(1e-9)
    );
    if let Some(rss) = proc_mib(None, "VmHWM") {
        println!("peak RSS: {rss} MiB");
    }
    Ok(())
}
