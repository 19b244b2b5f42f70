//! Emergency console benchmark (issue 33): N admins (each with TOTP) open one console each
//! on a real agent (`--allow-console`), then every session prints 1 MB at once (base64 of
//! random bytes through the real PTY, agent, hub, strict recording, WebSocket) while its
//! operator types a key every 100 ms; the hub's CPU is read from `/proc/<pid>/stat` over the
//! burst and every key's echo is timed. Then the same keys at an idle prompt. Ceiling in the
//! same run: the same N commands in local PTYs (`script`) with nothing in between.
//!
//! `bash bench/console.sh` starts the hub and the agent and runs this.

use clap::Parser;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

#[derive(Debug, Parser)]
struct Args {
    /// Hub base URL.
    #[arg(long, default_value = "http://127.0.0.1:18182")]
    hub: String,
    /// The owner's password (admin@trusthub.local).
    #[arg(long)]
    password: String,
    /// The hub's pid (its CPU time).
    #[arg(long)]
    hub_pid: u32,
    /// The agent's pid (its CPU time).
    #[arg(long)]
    agent_pid: Option<u32>,
    /// Sessions.
    #[arg(long, default_value_t = 50)]
    sessions: usize,
    /// Bytes each session prints.
    #[arg(long, default_value_t = 1_048_576)]
    bytes: usize,
}

/// CPU seconds (user + system) of a process so far.
fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command's closing parenthesis: utime is the 12th, stime the 13th.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(((v.len() as f64 * p).ceil() as usize).saturating_sub(1))
        .copied()
        .unwrap_or(0.0)
}

type Ws = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

async fn send(ws: &mut Ws, v: Value) -> Result<(), String> {
    ws.send(Message::Text(v.to_string().into()))
        .await
        .map_err(|e| e.to_string())
}

/// What one session saw: output bytes, key echo latencies (ms).
struct Seen {
    bytes: usize,
    lat: Vec<f64>,
}

/// Types `%` (one key at a time: the next 100 ms after the previous one's echo) until
/// `marker` shows in the output (after `command` was sent, if any) or `keys` keys were typed
/// and echoed; times each key's echo (the first `%` in the output after it was sent).
async fn drive(
    ws: &mut Ws,
    command: Option<&str>,
    marker: &str,
    keys: usize,
) -> Result<Seen, String> {
    if let Some(c) = command {
        send(ws, json!({"type": "input", "data": c})).await?;
    }
    let mut out = String::new();
    let (mut bytes, mut typed) = (0usize, 0usize);
    let mut pending: Option<Instant> = None;
    let mut lat = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        tokio::select! {
            _ = tick.tick() => {
                if pending.is_none() && typed < keys {
                    send(ws, json!({"type": "input", "data": "%"})).await?;
                    pending = Some(Instant::now());
                    typed += 1;
                } else if pending.is_none() && marker.is_empty() {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(format!("no `{marker}` after 300 s ({bytes} bytes)"));
                }
            }
            msg = ws.next() => {
                let Some(Ok(Message::Text(t))) = msg else {
                    return Err("the socket closed".into());
                };
                let v: Value = serde_json::from_str(t.as_str()).unwrap_or_default();
                let Some(d) = v["data"].as_str() else { continue };
                bytes += d.len();
                if d.contains('%') && let Some(at) = pending.take() {
                    lat.push(at.elapsed().as_secs_f64() * 1000.0);
                }
                if !marker.is_empty() {
                    out.push_str(d);
                    if out.contains(marker) {
                        break;
                    }
                    // Keep only a tail long enough to hold the marker.
                    if out.len() > 4096 {
                        let cut = out.len() - 64;
                        let cut = (cut..out.len()).find(|&i| out.is_char_boundary(i)).unwrap_or(0);
                        out.drain(..cut);
                    }
                }
            }
        }
    }
    Ok(Seen { bytes, lat })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let root = args.hub.trim_end_matches('/').to_owned();
    let api = format!("{root}/api/v1");
    let http = reqwest::Client::new();
    let owner = trusthub_bench_ingest::owner_cookie(&http, &api, &args.password).await?;
    let mut agent = String::new();
    for _ in 0..100 {
        let list: Value = http
            .get(format!("{api}/agents"))
            .header("cookie", &owner)
            .send()
            .await?
            .json()
            .await?;
        if list[0]["connected"] == true {
            agent = list[0]["id"].as_str().unwrap_or_default().to_owned();
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    if agent.is_empty() {
        return Err("no agent connected".into());
    }

    // N admins, one console each.
    let mut socks = Vec::new();
    for _ in 0..args.sessions {
        let (user, secret, now) =
            trusthub_bench_ingest::admin_with_totp(&http, &api, &owner).await?;
        let r = http
            .post(format!("{api}/agents/{agent}/console/start"))
            .header("cookie", &user)
            .header(
                "x-totp-code",
                trusthub_core::totp::code_at(&secret, now + 30),
            )
            .json(&json!({"reason": "bench", "cols": 120, "rows": 40}))
            .send()
            .await?;
        if r.status() != 201 {
            return Err(format!("start: HTTP {}: {}", r.status(), r.text().await?).into());
        }
        let id = r.json::<Value>().await?["session_id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let mut req = format!(
            "{}/api/v1/ws/console/{id}",
            root.replacen("http://", "ws://", 1)
        )
        .into_client_request()?;
        req.headers_mut().insert("cookie", user.parse()?);
        req.headers_mut().insert("origin", root.parse()?);
        let tcp = tokio::net::TcpStream::connect(root.trim_start_matches("http://")).await?;
        let (mut ws, _) = tokio_tungstenite::client_async(req, tcp).await?;
        send(
            &mut ws,
            json!({"type": "input", "data": "PS1='$ '; echo READY-$((1+1))\n"}),
        )
        .await?;
        drive(&mut ws, None, "READY-2", 0).await?;
        socks.push(ws);
    }
    println!("{} sessions open", socks.len());

    // The burst: every session prints its megabyte while its operator types.
    let raw = args.bytes * 3 / 4;
    let command = format!("head -c {raw} /dev/urandom | base64 -w 76; echo DONE-$((40+2))\n");
    let (hub0, agent0) = (cpu_secs(args.hub_pid), args.agent_pid.map(cpu_secs));
    let t = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for mut ws in socks {
        let command = command.clone();
        set.spawn(async move {
            let seen = drive(&mut ws, Some(&command), "DONE-42", usize::MAX).await;
            // Clear what was typed during the burst from the shell's line.
            let _ = send(&mut ws, json!({"type": "input", "data": "\u{15}"})).await;
            (ws, seen)
        });
    }
    let (mut socks, mut lat, mut bytes) = (Vec::new(), Vec::new(), Vec::new());
    while let Some(r) = set.join_next().await {
        let (ws, seen) = r?;
        let seen = seen?;
        lat.extend(seen.lat);
        bytes.push(seen.bytes);
        socks.push(ws);
    }
    let wall = t.elapsed().as_secs_f64();
    let hub_cpu = cpu_secs(args.hub_pid) - hub0;
    let agent_cpu = args.agent_pid.map(|p| cpu_secs(p) - agent0.unwrap_or(0.0));
    let least = bytes.iter().min().copied().unwrap_or(0);
    println!(
        "burst: {} sessions × {} bytes printed in {wall:.2} s; least output one session received {least} bytes",
        bytes.len(),
        args.bytes
    );
    println!(
        "hub CPU {hub_cpu:.2} s over {wall:.2} s = {:.2} cores; agent CPU {}",
        hub_cpu / wall,
        agent_cpu.map_or("-".into(), |a| format!("{a:.2} s = {:.2} cores", a / wall))
    );
    println!(
        "key echo during the burst ({} keys): p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        lat.len(),
        pct(&mut lat, 0.5),
        pct(&mut lat, 0.99),
        pct(&mut lat, 1.0)
    );

    // Keys at an idle prompt: 50 keys per session, all sessions at once.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let hub0 = cpu_secs(args.hub_pid);
    let t = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for mut ws in socks {
        set.spawn(async move { drive(&mut ws, None, "", 50).await });
    }
    let mut idle = Vec::new();
    while let Some(r) = set.join_next().await {
        idle.extend(r??.lat);
    }
    let wall = t.elapsed().as_secs_f64();
    println!(
        "key echo at an idle prompt ({} keys, {} sessions typing): p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; hub CPU {:.2} cores",
        idle.len(),
        args.sessions,
        pct(&mut idle, 0.5),
        pct(&mut idle, 0.99),
        pct(&mut idle, 1.0),
        (cpu_secs(args.hub_pid) - hub0) / wall
    );

    // Ceiling: the same commands in local PTYs, nothing in between.
    let t = Instant::now();
    let mut kids = Vec::new();
    for _ in 0..args.sessions {
        kids.push(
            tokio::process::Command::new("script")
                .args([
                    "-qfc",
                    &format!("head -c {raw} /dev/urandom | base64 -w 76"),
                    "/dev/null",
                ])
                .stdout(std::process::Stdio::piped())
                .spawn()?,
        );
    }
    let mut least = usize::MAX;
    for k in kids {
        least = least.min(k.wait_with_output().await?.stdout.len());
    }
    println!(
        "ceiling: the same {} commands in local PTYs (script): {:.2} s (least output {least} bytes)",
        args.sessions,
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
