//! Agent WebSocket benchmark (issue 5): N agents registered for real hold their action
//! sockets open to one hub; the hub's RSS is read from /proc; then K TOTP-gated restarts are
//! sent (one admin user per restart, each with TOTP enrolled) and timed from the POST until
//! the action shows the agent's result. Simulated agents verify each EAT with the hub key
//! (trusthub_core::eat) before answering.
//!
//! `cargo run --release -p trusthub-bench-ingest --bin ws -- --hub http://127.0.0.1:8080
//!  --password ... --hub-pid <pid> --agents 10000 --restarts 100`

use clap::Parser;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use trusthub_bench_ingest::proc_mib;

#[derive(Debug, Parser)]
struct Args {
    /// Hub base URL.
    #[arg(long, default_value = "http://127.0.0.1:8080")]
    hub: String,
    /// The owner's password (admin@trusthub.local).
    #[arg(long)]
    password: String,
    /// The hub's pid, for its RSS.
    #[arg(long)]
    hub_pid: Option<u32>,
    /// Agents (sockets).
    #[arg(long, default_value_t = 1000)]
    agents: usize,
    /// Restarts timed.
    #[arg(long, default_value_t = 100)]
    restarts: usize,
}

fn rss_mib(pid: Option<u32>) -> String {
    pid.and_then(|pid| proc_mib(Some(pid), "VmRSS"))
        .map_or("-".into(), |mib| mib.to_string())
}

fn cookie_of(r: &reqwest::Response) -> String {
    r.headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .unwrap_or_default()
        .to_owned()
}

async fn post(
    c: &reqwest::Client,
    url: String,
    cookie: &str,
    body: Value,
) -> Result<reqwest::Response, String> {
    c.post(url)
        .header("cookie", cookie)
        .json(&body)
        .send()
        .await
        .map_err(|e| e.to_string())
}

#[tokio::main]
async fn main() -> Result<(), String> {
    let args = Args::parse();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let api = format!("{}/api/v1", args.hub.trim_end_matches('/'));
    let http = reqwest::Client::new();
    let login = post(
        &http,
        format!("{api}/auth/login"),
        "",
        json!({"email": "admin@trusthub.local", "password": args.password}),
    )
    .await?;
    let owner = cookie_of(&login);
    let enroll: Value = post(
        &http,
        format!("{api}/agents/enrollment-tokens"),
        &owner,
        json!({}),
    )
    .await?
    .json()
    .await
    .map_err(|e| e.to_string())?;
    let enroll = enroll["token"]
        .as_str()
        .ok_or("no enrollment token")?
        .to_owned();
    let hub_key: Value = http
        .get(format!("{api}/agents/eat-public-key"))
        .send()
        .await
        .map_err(|e| e.to_string())?
        .json()
        .await
        .map_err(|e| e.to_string())?;
    let hub_key = trusthub_core::agent::parse_public_key(
        hub_key["public_key_hex"].as_str().unwrap_or_default(),
    )
    .map_err(|e| e.to_string())?;
    println!("hub RSS before: {} MiB", rss_mib(args.hub_pid));

    // Register N agents.
    let t = Instant::now();
    let mut registered: Vec<(String, String)> = Vec::with_capacity(args.agents);
    let mut set = tokio::task::JoinSet::new();
    for i in 0..args.agents {
        let (http, api, enroll) = (http.clone(), api.clone(), enroll.clone());
        set.spawn(async move {
            let key = ed25519_dalek::SigningKey::from_bytes(&trusthub_core::secret::random_bytes::<32>().expect("rand"));
            let body = json!({"machine_id": format!("ws-{i}-{}", uuid::Uuid::new_v4().simple()), "hostname": format!("ws-{i}"),
                "os": "bench", "arch": "x86_64", "agent_version": "bench",
                "signing_pubkey": trusthub_core::secret::hex(key.verifying_key().as_bytes())}).to_string();
            let r: Value = http.post(format!("{api}/agents/register")).bearer_auth(&enroll)
                .header("content-type", "application/json")
                .header("x-service-signature", trusthub_core::agent::sign_header(&key, body.as_bytes()))
                .body(body).send().await.ok()?.json().await.ok()?;
            Some((r["agent_id"].as_str()?.to_owned(), r["agent_token"].as_str()?.to_owned()))
        });
        if set.len() >= 32
            && let Some(Ok(Some(r))) = set.join_next().await
        {
            registered.push(r);
        }
    }
    while let Some(r) = set.join_next().await {
        if let Ok(Some(r)) = r {
            registered.push(r);
        }
    }
    println!(
        "registered {} agents in {:.1} s",
        registered.len(),
        t.elapsed().as_secs_f64()
    );

    // Open their sockets; each answers EATs after verifying them.
    let connected = Arc::new(AtomicUsize::new(0));
    let t = Instant::now();
    let host = args
        .hub
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    for (id, token) in &registered {
        let (connected, host) = (connected.clone(), host.clone());
        let (id, token) = (id.clone(), token.clone());
        let agent_id = uuid::Uuid::parse_str(&id).map_err(|e| e.to_string())?;
        tokio::spawn(async move {
            let mut req = format!("ws://{host}/api/v1/ws/agents/{id}")
                .into_client_request()
                .expect("req");
            req.headers_mut().insert(
                "authorization",
                format!("Bearer {token}").parse().expect("h"),
            );
            let Ok(tcp) = tokio::net::TcpStream::connect(&host).await else {
                return;
            };
            let Ok((mut ws, _)) = tokio_tungstenite::client_async(req, tcp).await else {
                return;
            };
            connected.fetch_add(1, Ordering::Relaxed);
            while let Some(Ok(msg)) = ws.next().await {
                if let Message::Text(text) = msg {
                    let v: Value = serde_json::from_str(text.as_str()).unwrap_or_default();
                    let token = v["token"].as_str().unwrap_or_default();
                    let now = time::OffsetDateTime::now_utc().unix_timestamp();
                    let answer = match trusthub_core::eat::verify(token, &hub_key, agent_id, now) {
                        Ok(c) => {
                            json!({"type": "result", "jti": c.jti, "exit_code": 0, "stdout": "", "stderr": "",
                            "finished_at": ""})
                        }
                        Err(e) => json!({"type": "refused", "jti": "", "reason": e.to_string()}),
                    };
                    if ws
                        .send(Message::Text(answer.to_string().into()))
                        .await
                        .is_err()
                    {
                        break;
                    }
                }
            }
        });
    }
    while connected.load(Ordering::Relaxed) < registered.len()
        && t.elapsed() < Duration::from_secs(120)
    {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!(
        "{} sockets open after {:.1} s; hub RSS {} MiB",
        connected.load(Ordering::Relaxed),
        t.elapsed().as_secs_f64(),
        rss_mib(args.hub_pid)
    );
    tokio::time::sleep(Duration::from_secs(20)).await;
    println!(
        "after 20 s idle (pings): hub RSS {} MiB",
        rss_mib(args.hub_pid)
    );

    // K admins with TOTP, one restart each.
    let mut lat = Vec::new();
    for (i, (agent_id, _)) in registered.iter().take(args.restarts).enumerate() {
        let (user, secret, now) = trusthub_bench_ingest::admin_with_totp(&http, &api, &owner)
            .await
            .map_err(|e| e.to_string())?;
        let app: Value = post(
            &http,
            format!("{api}/apps"),
            &owner,
            json!({"agent_id": agent_id, "name": "b",
            "app_type": "process", "identifier": "/bin/sleep", "restart_command": "/bin/true"}),
        )
        .await?
        .json()
        .await
        .map_err(|e| e.to_string())?;
        let started = Instant::now();
        let r = http
            .post(format!(
                "{api}/apps/{}/restart",
                app["id"].as_str().unwrap_or_default()
            ))
            .header("cookie", &user)
            .header(
                "x-totp-code",
                trusthub_core::totp::code_at(&secret, now + 30),
            )
            .json(&json!({"reason": "bench"}))
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if r.status() != 202 {
            println!("restart {i}: HTTP {}", r.status());
            continue;
        }
        let jti = r.json::<Value>().await.map_err(|e| e.to_string())?["jti"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        loop {
            let a: Value = http
                .get(format!("{api}/actions/{jti}"))
                .header("cookie", &owner)
                .send()
                .await
                .map_err(|e| e.to_string())?
                .json()
                .await
                .map_err(|e| e.to_string())?;
            if a["status"] != "dispatched" {
                lat.push(started.elapsed().as_secs_f64() * 1000.0);
                break;
            }
            if started.elapsed() > Duration::from_secs(10) {
                println!("restart {i}: no result in 10 s");
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
    lat.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| {
        lat.get(((lat.len() as f64 * p).ceil() as usize).saturating_sub(1))
            .copied()
            .unwrap_or(0.0)
    };
    println!(
        "EAT round trip (POST /restart → result recorded) over {} restarts with {} sockets open: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; hub RSS {} MiB",
        lat.len(),
        connected.load(Ordering::Relaxed),
        pct(0.5),
        pct(0.99),
        lat.last().copied().unwrap_or(0.0),
        rss_mib(args.hub_pid)
    );
    Ok(())
}
