//! Hostile inputs against a running hub (issue 27, CONTRACT 18): what each costs the hub in
//! memory and time. For each input the hub's peak RSS is reset (`/proc/<pid>/clear_refs`,
//! the process's own counter), the input is sent, and the peak above the RSS just before is
//! read from `VmHWM`. Goal: < 256 MiB above idle for every input, and a 4xx.
//!
//! `bash bench/hostile.sh` starts the hub (SQLite) and runs this.

use clap::Parser;
use serde_json::{Value, json};
use std::io::Write;
use std::time::Instant;
use trusthub_bench_ingest::proc_mib;

#[derive(Debug, Parser)]
struct Args {
    /// The hub's base URL.
    #[arg(long, default_value = "http://127.0.0.1:18182")]
    hub: String,
    /// The hub's process id (its memory is read from /proc).
    #[arg(long)]
    hub_pid: u32,
    /// The owner's password (admin@trusthub.local).
    #[arg(long)]
    password: String,
    /// Records of the legitimate import measured after the hostile inputs (throughput and
    /// memory of a real upload); 0 for none.
    #[arg(long, default_value_t = 100_000)]
    legit_records: usize,
    /// Only the legitimate import (to run the same upload against another build).
    #[arg(long)]
    only_legit: bool,
}

/// A zip of `entries`, deflated.
fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    {
        let mut w = zip::ZipWriter::new(&mut out);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .large_file(true);
        for (name, data) in entries {
            w.start_file(*name, opts).expect("start");
            w.write_all(data).expect("write");
        }
        w.finish().expect("finish");
    }
    out.into_inner()
}

/// A zip holding one entry of `size` spaces, written in chunks (the entry never in memory).
fn bomb(size: u64) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    {
        let mut w = zip::ZipWriter::new(&mut out);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .large_file(true);
        w.start_file("bomb.json", opts).expect("start");
        let chunk = vec![b' '; 1 << 20];
        let mut left = size;
        while left > 0 {
            let n = left.min(chunk.len() as u64) as usize;
            w.write_all(&chunk[..n]).expect("write");
            left -= n as u64;
        }
        w.finish().expect("finish");
    }
    out.into_inner()
}

fn record(id: &str) -> Value {
    json!({"id": id, "modified": "2024-01-01T00:00:00Z", "affected": [{
        "package": {"ecosystem": "npm", "name": "p"},
        "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "1.0.0"}]}]}]})
}

/// A zip of `n` OSV records of a realistic size (about 1.5 KB each: aliases, a summary,
/// details, a range, ten versions, a CVSS vector), flat.
fn legit(n: usize) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    {
        let mut w = zip::ZipWriter::new(&mut out);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        for i in 0..n {
            let r = json!({
                "schema_version": "1.6.0",
                "id": format!("GHSA-bench-{i:07}"),
                "modified": "2025-03-01T12:00:00Z",
                "published": "2024-01-01T00:00:00Z",
                "aliases": [format!("CVE-2024-{i:05}")],
                "summary": format!("Prototype pollution in pkg-{}", i % 5000),
                "details": "An attacker who controls the input can change the behaviour of every object in the process. ".repeat(6),
                "affected": [{
                    "package": {"ecosystem": "npm", "name": format!("pkg-{}", i % 5000),
                        "purl": format!("pkg:npm/pkg-{}", i % 5000)},
                    "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": format!("1.2.{}", i % 50)}]}],
                    "versions": (0..10).map(|v| format!("1.1.{v}")).collect::<Vec<_>>(),
                    "database_specific": {"source": "bench"}
                }],
                "severity": [{"type": "CVSS_V3", "score": "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H"}],
                "references": [{"type": "ADVISORY", "url": format!("https://example.com/advisories/{i}")}]
            });
            w.start_file(format!("npm/GHSA-bench-{i:07}.json"), opts)
                .expect("start");
            w.write_all(&serde_json::to_vec(&r).expect("json"))
                .expect("write");
        }
        w.finish().expect("finish");
    }
    out.into_inner()
}

fn reset_peak(pid: u32) {
    // Writing 5 resets the process's peak RSS (VmHWM) to its current RSS.
    let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(300))
        .build()?;
    let api = format!("{}/api/v1", args.hub);
    let cookie = trusthub_bench_ingest::owner_cookie(&http, &api, &args.password).await?;

    let good = serde_json::to_vec(&record("GHSA-ok"))?;
    let mut nested = zip_of(&[("GHSA-ok.json", &good)]);
    for level in 0..2500 {
        nested = zip_of(&[(&format!("l{level}.zip"), &nested)]);
    }
    let mut huge = record("GHSA-huge");
    huge["affected"] = Value::Array(vec![json!({}); 1_300_000]);
    let json_bomb = zip_of(&[("huge.json", &serde_json::to_vec(&huge)?)]);
    let deep = format!(
        "{{\"id\":\"X\",\"modified\":\"2024-01-01T00:00:00Z\",\"database_specific\":{}{}}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let deep = zip_of(&[("deep.json", deep.as_bytes())]);
    let mut cases: Vec<(String, Vec<u8>)> = vec![
        ("nested zip, 2,500 levels".into(), nested),
        ("zip bomb, one 1 GiB entry".into(), bomb(1 << 30)),
        (
            "JSON bomb, 1.3 M empty objects in one record".into(),
            json_bomb,
        ),
        ("JSON 100,000 levels deep".into(), deep),
    ];
    if args.only_legit {
        cases.clear();
    }
    if args.legit_records > 0 {
        cases.push((
            format!("a real upload: {} OSV records", args.legit_records),
            legit(args.legit_records),
        ));
    }
    println!("| input | upload | answer | time | peak RSS above the RSS before |");
    println!("|---|---|---|---|---|");
    for (name, body) in cases {
        let records = name
            .strip_prefix("a real upload: ")
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse::<f64>().ok());
        let before = proc_mib(Some(args.hub_pid), "VmRSS").unwrap_or(0);
        reset_peak(args.hub_pid);
        let t = Instant::now();
        let r = http
            .post(format!("{api}/cve/sources/import"))
            .header("cookie", &cookie)
            .header("content-type", "application/zip")
            .body(body.clone())
            .send()
            .await?;
        let status = r.status().as_u16();
        let problem: Value = r.json().await.unwrap_or(Value::Null);
        let secs = t.elapsed().as_secs_f64();
        let peak = proc_mib(Some(args.hub_pid), "VmHWM").unwrap_or(0);
        let code = match records {
            Some(n) => format!("{:.0} records/s", n / secs),
            None => format!("`{}`", problem["code"].as_str().unwrap_or("-")),
        };
        println!(
            "| {name} | {:.2} MB | {status} {code} | {secs:.2} s | {} MiB |",
            body.len() as f64 / 1e6,
            peak.saturating_sub(before)
        );
    }

    let health = http.get(format!("{api}/health")).send().await?.status();
    println!("\nthe hub answers /health afterwards: {health}");
    Ok(())
}
