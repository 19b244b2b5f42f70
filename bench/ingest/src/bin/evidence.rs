//! Evidence pack benchmark (issue 6): N LLM calls sent through the real `POST /ai/traces`,
//! then the pack over them built by the real hub (`POST /ai/evidence-packs`, timed), and the
//! bundle verified by the real `trusthub evidence verify` binary, compared in the same run
//! with `sha256sum` over the same bytes (the extracted files the verifier hashes) and over
//! the `.tar.gz` itself.
//!
//! `cargo build --release -p trusthub && cargo run --release -p trusthub-bench-ingest --bin
//! evidence -- --spans 1000000` (add `--database-url postgres://...` for PostgreSQL; the
//! database must be empty).

use clap::Parser;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::Instant;
use trusthub_bench_ingest::proc_mib;
use trusthub_hub::{Server, Settings};

#[derive(Debug, Parser)]
struct Args {
    /// LLM calls (spans) in the period.
    #[arg(long, default_value_t = 1_000_000)]
    spans: usize,
    /// Calls per trace.
    #[arg(long, default_value_t = 4)]
    calls_per_trace: usize,
    /// One call in this many carries content (a blob of its own).
    #[arg(long, default_value_t = 20)]
    content_every: usize,
    /// Database (default: SQLite in a temporary data dir).
    #[arg(long)]
    database_url: Option<String>,
    /// The trusthub binary to verify with.
    #[arg(long, default_value = "target/release/trusthub")]
    trusthub: PathBuf,
}

fn sha(s: &str) -> String {
    trusthub_core::evidence::sha256_hex(s.as_bytes())
}

fn timed(cmd: &mut std::process::Command) -> Result<f64, String> {
    let t = Instant::now();
    let st = cmd.status().map_err(|e| e.to_string())?;
    if !st.success() {
        return Err(format!("{cmd:?} failed: {st}"));
    }
    Ok(t.elapsed().as_secs_f64())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(
            "warn,trusthub_hub::evidence=info",
        ))
        .init();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = std::env::temp_dir().join(format!("th-evidence-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir)?;
    let mut settings = Settings::with_data_dir(dir.join("data"));
    settings.listen = "127.0.0.1:0".parse()?;
    settings.admin_password = Some("bench password".into());
    settings.rate_limits = "off".into();
    settings.db.database_url = args.database_url.clone();
    if args.database_url.is_some() {
        settings.encryption_key =
            Some("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f".into());
    }
    let server = Server::build(settings).await?;
    let base = format!("http://{}/api/v1", server.local_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let hub = tokio::spawn(server.run(async move {
        let _ = stopped.await;
    }));
    let http = reqwest::Client::new();
    let cookie = trusthub_bench_ingest::owner_cookie(&http, &base, "bench password").await?;
    let token: Value = http
        .post(format!("{base}/api-tokens"))
        .header("cookie", &cookie)
        .json(&json!({"name": "bench", "scope": "ai_ingest"}))
        .send()
        .await?
        .json()
        .await?;
    let token = token["token"].as_str().ok_or("no token")?.to_owned();

    // Load: 500 traces a request, 4 requests in flight, one trace a second of November.
    let load = Instant::now();
    let traces = args.spans.div_ceil(args.calls_per_trace);
    let start = time::macros::datetime!(2026-11-01 00:00:00 UTC);
    let models = ["gpt-4o", "gpt-4o-mini", "claude-sonnet-4", "in-house-llm"];
    let mut requests = Vec::new();
    let mut span = 0usize;
    for chunk in (0..traces).collect::<Vec<_>>().chunks(500) {
        let mut ts = Vec::new();
        let mut blobs = Vec::new();
        for &t in chunk {
            let at = (start + time::Duration::seconds(t as i64))
                .format(&time::format_description::well_known::Rfc3339)?;
            let mut calls = Vec::new();
            for _ in 0..args.calls_per_trace {
                if span >= args.spans {
                    break;
                }
                let mut c = json!({"span_id": format!("s{span:08}"), "model": models[span % 4],
                    "prompt_tokens": 1000 + span % 500, "completion_tokens": 200 + span % 100,
                    "cache_read_tokens": span % 300, "latency_ms": 300 + span % 2000,
                    "prompt_sha256": sha(&format!("prompt {span}")), "refused": span.is_multiple_of(97)});
                if span.is_multiple_of(args.content_every.max(1)) {
                    let text = format!("redacted answer {} for [EMAIL]", span);
                    c["content_sha256"] = json!(sha(&text));
                    blobs.push(json!({"sha256": sha(&text), "text": text}));
                }
                calls.push(c);
                span += 1;
            }
            ts.push(json!({"trace_id": format!("t{t:08}"), "name": "answer", "team": format!("team{}", t % 7),
                "started_at": at, "ended_at": at, "calls": calls}));
        }
        blobs.dedup_by(|a, b| a["sha256"] == b["sha256"]);
        requests.push(json!({"traces": ts, "blobs": blobs}).to_string());
    }
    let sem = std::sync::Arc::new(tokio::sync::Semaphore::new(4));
    let mut tasks = Vec::new();
    for body in requests {
        let (http, url, token, sem) = (
            http.clone(),
            format!("{base}/ai/traces"),
            token.clone(),
            sem.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let _p = sem.acquire().await;
            let r = http
                .post(url)
                .bearer_auth(token)
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await;
            r.map(|r| r.status().as_u16()).unwrap_or(0)
        }));
    }
    for t in tasks {
        let status = t.await?;
        if status != 202 {
            return Err(format!("intake answered {status}").into());
        }
    }
    let load_s = load.elapsed().as_secs_f64();
    println!(
        "loaded {} spans in {} traces through POST /ai/traces: {load_s:.1} s ({:.0} spans/s)",
        args.spans,
        traces,
        args.spans as f64 / load_s
    );

    // Build.
    let rss_before = proc_mib(None, "VmHWM").unwrap_or(0);
    let build = Instant::now();
    let pack: Value = http
        .post(format!("{base}/ai/evidence-packs"))
        .header("cookie", &cookie)
        .json(&json!({"period_start": "2026-11-01T00:00:00Z", "period_end": "2026-12-01T00:00:00Z", "include_blobs": true}))
        .send()
        .await?
        .json()
        .await?;
    let build_s = build.elapsed().as_secs_f64();
    println!(
        "pack {} built in {build_s:.2} s: {} traces, {} spans, {} blobs, {:.1} MB; process peak RSS {} MiB (before the build {} MiB)",
        pack["pack_id"],
        pack["trace_count"],
        pack["span_count"],
        pack["blob_count"],
        pack["size_bytes"].as_f64().unwrap_or(0.0) / 1e6,
        proc_mib(None, "VmHWM").unwrap_or(0),
        rss_before
    );
    let again = Instant::now();
    let same: Value = http
        .post(format!("{base}/ai/evidence-packs"))
        .header("cookie", &cookie)
        .json(&json!({"period_start": "2026-11-01T00:00:00Z", "period_end": "2026-12-01T00:00:00Z", "include_blobs": true}))
        .send()
        .await?
        .json()
        .await?;
    println!(
        "same request again: {:.2} s, same pack: {}",
        again.elapsed().as_secs_f64(),
        same["manifest_sha256"] == pack["manifest_sha256"] && same["pack_id"] == pack["pack_id"]
    );

    // Verify, and hash the same bytes with sha256sum.
    let file = dir.join("pack.tar.gz");
    let bytes = http
        .get(format!(
            "{base}{}",
            pack["download_url"]
                .as_str()
                .unwrap_or_default()
                .trim_start_matches("/api/v1")
        ))
        .header("cookie", &cookie)
        .send()
        .await?
        .bytes()
        .await?;
    std::fs::write(&file, &bytes)?;
    let out = dir.join("x");
    std::fs::create_dir_all(&out)?;
    timed(
        std::process::Command::new("tar")
            .arg("-xzf")
            .arg(&file)
            .arg("-C")
            .arg(&out),
    )?;
    let mut content = 0u64;
    let mut names = vec![
        out.join("traces.jsonl"),
        out.join("spans.jsonl"),
        out.join("manifest.json"),
        out.join("manifest.sig"),
    ];
    for e in std::fs::read_dir(out.join("blobs"))? {
        names.push(e?.path());
    }
    for n in &names {
        content += std::fs::metadata(n)?.len();
    }
    let best = |f: &mut dyn FnMut() -> Result<f64, String>| -> Result<f64, String> {
        let mut b = f64::MAX;
        for _ in 0..3 {
            b = b.min(f()?);
        }
        Ok(b)
    };
    let verify_s = best(&mut || {
        timed(
            std::process::Command::new(&args.trusthub)
                .args(["evidence", "verify", "--quiet"])
                .arg(&file),
        )
    })?;
    // The file list goes through xargs: 50,000 blob files do not fit on one command line.
    let list = dir.join("files.txt");
    let mut listing = Vec::new();
    for n in &names {
        listing.extend_from_slice(n.as_os_str().as_encoded_bytes());
        listing.push(0);
    }
    std::fs::write(&list, listing)?;
    let sha_files_s = best(&mut || {
        timed(
            std::process::Command::new("xargs")
                .args(["-0", "-a"])
                .arg(&list)
                .arg("sha256sum")
                .stdout(std::process::Stdio::null()),
        )
    })?;
    let big = [out.join("traces.jsonl"), out.join("spans.jsonl")];
    let big_mb = big
        .iter()
        .map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .sum::<u64>() as f64
        / 1e6;
    let sha_big_s = best(&mut || {
        timed(
            std::process::Command::new("sha256sum")
                .args(&big)
                .stdout(std::process::Stdio::null()),
        )
    })?;
    let sha_pack_s = best(&mut || {
        timed(
            std::process::Command::new("sha256sum")
                .arg(&file)
                .stdout(std::process::Stdio::null()),
        )
    })?;
    let mb = content as f64 / 1e6;
    println!(
        "bundle: {:.1} MB compressed, {mb:.1} MB of content in {} files",
        bytes.len() as f64 / 1e6,
        names.len()
    );
    println!(
        "trusthub evidence verify: {verify_s:.2} s = {:.0} MB/s of content",
        mb / verify_s
    );
    println!(
        "sha256sum over the same content: {sha_files_s:.2} s = {:.0} MB/s",
        mb / sha_files_s
    );
    println!(
        "sha256sum over traces.jsonl + spans.jsonl only ({big_mb:.1} MB): {sha_big_s:.2} s = {:.0} MB/s",
        big_mb / sha_big_s
    );
    println!("sha256sum over the .tar.gz only: {sha_pack_s:.2} s");
    println!(
        "verify throughput / sha256sum throughput = {:.2}x",
        sha_files_s / verify_s
    );

    let _ = stop.send(());
    let _ = hub.await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
