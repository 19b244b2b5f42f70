//! Hub CA benchmark (issue 19): the time to make the CA at a first start (`--bits`, 4096 by
//! default, a fresh SQLite database each run, key generation, self-signing, sealing and
//! storing), to restore it at a later start, to sign a client certificate for an openssl CSR,
//! and to make the CRL with N revoked entries. `openssl req` (run once) makes the CSR. The
//! peers in the same run: `openssl genpkey` making an RSA key of the same size (the CA's cost
//! is almost all key generation), and `openssl speed` signing with RSA-4096 (one signature
//! per certificate).
//!
//! `cargo run --release -p trusthub-bench-ingest --bin ca -- --runs 5`

use clap::Parser;
use std::time::Instant;
use trusthub_core::secret::SealingKey;
use trusthub_hub::ca::HubCa;
use trusthub_store::{Db, DbOptions};

#[derive(Debug, Parser)]
struct Args {
    /// CA key size.
    #[arg(long, default_value_t = 4096)]
    bits: usize,
    /// First starts measured (each on a new database).
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Certificates signed.
    #[arg(long, default_value_t = 200)]
    certs: usize,
    /// Revoked entries in the CRL.
    #[arg(long, default_value_t = 10_000)]
    revoked: usize,
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let key =
        SealingKey::from_hex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")?;
    let dir = std::env::temp_dir().join(format!("th-ca-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir)?;
    let mut first = Vec::new();
    let mut last = None;
    for i in 0..args.runs {
        let db = Db::connect(
            &format!("sqlite://{}/run{i}.db?mode=rwc", dir.display()),
            &DbOptions::default(),
        )
        .await?;
        db.migrate().await?;
        let t = Instant::now();
        let ca = HubCa::load_or_create(&db, &key, args.bits).await?;
        first.push(ms(t));
        let t = Instant::now();
        let again = HubCa::load_or_create(&db, &key, args.bits).await?;
        if i == 0 {
            println!("restore at a later start: {:.1} ms", ms(t));
        }
        assert_eq!(again.cert_pem(), ca.cert_pem());
        last = Some(ca);
    }
    first.sort_by(f64::total_cmp);
    println!(
        "CA creation at first start (RSA-{}), {} runs: min {:.0} ms, median {:.0} ms, max {:.0} ms",
        args.bits,
        first.len(),
        first[0],
        first[first.len() / 2],
        first[first.len() - 1]
    );
    // Peer: openssl making the same key, the same number of times.
    let mut peer = Vec::new();
    for _ in 0..args.runs {
        let t = Instant::now();
        let ok = std::process::Command::new("openssl")
            .args(["genpkey", "-algorithm", "RSA", "-pkeyopt"])
            .arg(format!("rsa_keygen_bits:{}", args.bits))
            .args(["-out", "/dev/null"])
            .stderr(std::process::Stdio::null())
            .status()?
            .success();
        if !ok {
            return Err("openssl genpkey failed".into());
        }
        peer.push(ms(t));
    }
    peer.sort_by(f64::total_cmp);
    println!(
        "peer: openssl genpkey RSA-{}, {} runs: min {:.0} ms, median {:.0} ms, max {:.0} ms (hub/openssl median {:.2})",
        args.bits,
        peer.len(),
        peer[0],
        peer[peer.len() / 2],
        peer[peer.len() - 1],
        first[first.len() / 2] / peer[peer.len() / 2]
    );
    let ca = last.ok_or("no run")?;
    let (k, c) = (dir.join("agent.key"), dir.join("agent.csr"));
    let ok = std::process::Command::new("openssl")
        .args([
            "req", "-new", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=x", "-keyout",
        ])
        .arg(&k)
        .arg("-out")
        .arg(&c)
        .output()?
        .status
        .success();
    if !ok {
        return Err("openssl req failed".into());
    }
    let csr = std::fs::read_to_string(&c)?;
    let (agent, tenant) = (uuid::Uuid::new_v4(), uuid::Uuid::new_v4());
    let t = Instant::now();
    for _ in 0..args.certs {
        ca.issue_for_csr(&csr, agent, tenant, 365)?;
    }
    let per = ms(t) / args.certs as f64;
    println!(
        "client certificate from a CSR (verify, sign): {per:.2} ms each ({:.0}/s on one core)",
        1000.0 / per
    );
    let speed = std::process::Command::new("openssl")
        .args(["speed", "-seconds", "3", &format!("rsa{}", args.bits)])
        .output()?;
    let said = String::from_utf8_lossy(&speed.stdout).into_owned();
    if let Some(line) = said.lines().find(|l| {
        l.trim_start()
            .starts_with(&format!("rsa {} bits", args.bits))
    }) {
        println!("peer: openssl speed (sign/s, verify/s): {}", line.trim());
    }
    let t = Instant::now();
    let n = 20;
    for _ in 0..n {
        ca.issue_with_key(agent, tenant, 365)?;
    }
    println!(
        "client certificate with a hub-made RSA-2048 key: {:.0} ms each",
        ms(t) / n as f64
    );
    let now = time::OffsetDateTime::now_utc();
    let revoked: Vec<(String, time::OffsetDateTime, Option<String>)> = (0..args.revoked)
        .map(|i| {
            (
                format!(
                    "{:032x}",
                    0x4000_0000_0000_0000_0000_0000_0000_0000u128 + i as u128
                ),
                now,
                Some("rotated".into()),
            )
        })
        .collect();
    let t = Instant::now();
    let crl = ca.crl(&revoked, now)?;
    println!(
        "CRL with {} revoked certificates: {:.1} ms, {} KiB",
        args.revoked,
        ms(t),
        crl.len() / 1024
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
