//! `trusthub console <agent>` (CONTRACT 22, 28): the same recorded session the dashboard
//! opens, in the operator's terminal — raw mode, the window size sent on SIGWINCH, the
//! shell's exit code said at the end.

use super::{Global, client, with_totp};
use crate::remote::client::Failure;
use futures_util::{SinkExt, StreamExt};
use reqwest::Method;
use serde_json::{Value, json};
use std::io::Write;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

/// The terminal's state before raw mode, put back however the session ends.
struct Raw(Option<rustix::termios::Termios>);

impl Raw {
    fn on() -> Raw {
        let stdin = std::io::stdin();
        if !rustix::termios::isatty(&stdin) {
            return Raw(None);
        }
        let Ok(before) = rustix::termios::tcgetattr(&stdin) else {
            return Raw(None);
        };
        let mut raw = before.clone();
        raw.make_raw();
        let _ = rustix::termios::tcsetattr(&stdin, rustix::termios::OptionalActions::Now, &raw);
        Raw(Some(before))
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        if let Some(before) = &self.0 {
            let _ = rustix::termios::tcsetattr(
                std::io::stdin(),
                rustix::termios::OptionalActions::Now,
                before,
            );
        }
    }
}

fn size() -> (u16, u16) {
    rustix::termios::tcgetwinsize(std::io::stdout())
        .ok()
        .filter(|w| w.ws_col >= 10 && w.ws_row >= 5)
        .map_or((80, 24), |w| (w.ws_col.min(1000), w.ws_row.min(1000)))
}

trait Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> Io for T {}

async fn dial(url: &str) -> Result<Box<dyn Io>, Failure> {
    let rest = url
        .strip_prefix("wss://")
        .or_else(|| url.strip_prefix("ws://"))
        .ok_or_else(|| Failure::error(format!("unexpected console address {url}")))?;
    let authority = rest.split('/').next().unwrap_or_default();
    let secure = url.starts_with("wss://");
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => (
            h.trim_start_matches('[').trim_end_matches(']').to_owned(),
            p.parse::<u16>()
                .map_err(|_| Failure::error(format!("bad port in {url}")))?,
        ),
        _ => (authority.to_owned(), if secure { 443 } else { 80 }),
    };
    let tcp = tokio::net::TcpStream::connect((host.as_str(), port))
        .await
        .map_err(|e| Failure::error(format!("{authority}: {e}")))?;
    let _ = tcp.set_nodelay(true);
    if !secure {
        return Ok(Box::new(tcp));
    }
    let ca = std::env::var_os("TRUSTHUB_CA_CERT").and_then(|p| std::fs::read(p).ok());
    let config = trusthub_agent::link::mtls::rustls_config(ca.as_deref(), None)?;
    let name =
        rustls_pki_types::ServerName::try_from(host).map_err(|e| Failure::error(e.to_string()))?;
    let tls = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|e| Failure::error(format!("TLS to {authority}: {e}")))?;
    Ok(Box::new(tls))
}

/// `trusthub console <agent> --reason R [--totp CODE]`.
pub async fn console(
    agent: String,
    reason: String,
    totp: Option<String>,
    g: &Global,
) -> Result<(), Failure> {
    let c = client(g)?;
    let (cols, rows) = size();
    let agent_id = super::named(&c, &agent, super::AGENT).await?;
    let path = format!("/agents/{agent_id}/console/start");
    let body = json!({"reason": reason, "cols": cols, "rows": rows});
    let started = with_totp(&c, Method::POST, &path, Some(&body), totp, "console_start").await?;
    let session = started["session_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    // The hub's address as this context knows it (its public URL may name another).
    let scheme = if c.base().starts_with("https://") {
        "wss"
    } else {
        "ws"
    };
    let host = c
        .base()
        .split_once("://")
        .map(|(_, h)| h)
        .unwrap_or_default()
        .to_owned();
    let url = format!("{scheme}://{host}/api/v1/ws/console/{session}");
    let mut req = url
        .as_str()
        .into_client_request()
        .map_err(|e| Failure::error(e.to_string()))?;
    if let Some((name, value)) = c.auth_header() {
        req.headers_mut().insert(
            name,
            value
                .parse()
                .map_err(|_| Failure::error("a credential that is not a header value"))?,
        );
    }
    let io = dial(&url).await?;
    let (mut ws, _) = match tokio_tungstenite::client_async(req, io).await {
        Ok(ws) => ws,
        Err(e) => {
            // The session may have failed before the socket opened (a host that does not
            // allow consoles answers at once): say why, from the session's record.
            let refused = match &e {
                tokio_tungstenite::tungstenite::Error::Http(r) => r
                    .body()
                    .as_deref()
                    .and_then(|b| serde_json::from_slice::<Value>(b).ok())
                    .and_then(|p| p["detail"].as_str().map(str::to_owned))
                    .unwrap_or_else(|| e.to_string()),
                _ => e.to_string(),
            };
            return Err(match ended(&c, &agent_id, &session).await {
                Some((status, reason)) if status == "failed" => {
                    Failure::error(failed(&session, &reason))
                }
                _ => Failure::error(format!(
                    "console session {session}: the hub refused its socket: {refused}"
                )),
            });
        }
    };
    eprintln!("console session {session} (recorded); it ends when the shell exits\r");
    let raw = Raw::on();
    let mut winch = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::window_change())
        .map_err(|e| Failure::error(e.to_string()))?;
    // Keys are read on a thread of their own: a read blocked on the terminal must not hold
    // the runtime when the session ends.
    let (keys_tx, mut keys) = tokio::sync::mpsc::channel::<Vec<u8>>(64);
    std::thread::Builder::new()
        .name("console-keys".into())
        .spawn(move || {
            let mut stdin = std::io::stdin();
            let mut buf = vec![0u8; 4096];
            loop {
                match std::io::Read::read(&mut stdin, &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if keys_tx.blocking_send(buf[..n].to_vec()).is_err() {
                            break;
                        }
                    }
                }
            }
        })
        .map_err(|e| Failure::error(e.to_string()))?;
    let mut stdin_open = true;
    let mut code: Option<i64> = None;
    let mut end: Option<(String, String)> = None;
    loop {
        tokio::select! {
            msg = ws.next() => {
                let Some(Ok(msg)) = msg else { break };
                let Message::Text(text) = msg else { continue };
                let v: Value = serde_json::from_str(text.as_str()).unwrap_or_default();
                match v["type"].as_str() {
                    Some("output") => {
                        let mut out = std::io::stdout();
                        let _ = out.write_all(v["data"].as_str().unwrap_or_default().as_bytes());
                        let _ = out.flush();
                    }
                    Some("exit") => {
                        code = v["code"].as_i64();
                        if let (Some(s), Some(r)) = (v["status"].as_str(), v["reason"].as_str()) {
                            end = Some((s.to_owned(), r.to_owned()));
                        }
                        break;
                    }
                    _ => {}
                }
            }
            chunk = keys.recv(), if stdin_open => {
                match chunk {
                    None => stdin_open = false,
                    Some(bytes) => {
                        let data = String::from_utf8_lossy(&bytes).into_owned();
                        let frame = json!({"type": "input", "data": data}).to_string();
                        if ws.send(Message::Text(frame.into())).await.is_err() {
                            break;
                        }
                    }
                }
            }
            _ = winch.recv() => {
                let (cols, rows) = size();
                let frame = json!({"type": "resize", "cols": cols, "rows": rows}).to_string();
                let _ = ws.send(Message::Text(frame.into())).await;
            }
        }
    }
    drop(raw);
    if end.is_none() && code.is_none() {
        end = ended(&c, &agent_id, &session).await;
    }
    match (code, end) {
        (_, Some((status, reason))) if status == "failed" => {
            Err(Failure::error(failed(&session, &reason)))
        }
        (Some(c), _) => {
            eprintln!("\nthe session ended (exit code {c})");
            Ok(())
        }
        (None, Some((status, reason))) => {
            eprintln!("\nthe session {status}: {}", ended_because(&reason));
            Ok(())
        }
        (None, None) => Err(Failure::error(format!(
            "console session {session}: the connection to the hub closed before the shell ended"
        ))),
    }
}

/// The session's status and end reason, once it has ended.
async fn ended(c: &client::Client, agent: &str, session: &str) -> Option<(String, String)> {
    let list = c
        .get(&format!(
            "/console/sessions?agent_id={}",
            trusthub_core::encode::component(agent)
        ))
        .await
        .ok()?;
    let s = list.as_array()?.iter().find(|s| s["id"] == session)?;
    Some((
        s["status"].as_str()?.to_owned(),
        s["end_reason"].as_str().unwrap_or_default().to_owned(),
    ))
}

/// Why a session failed, and what to do about it.
fn failed(session: &str, reason: &str) -> String {
    format!(
        "console session {session} failed: {}",
        ended_because(reason)
    )
}

fn ended_because(reason: &str) -> String {
    match reason {
        "console_disabled" => "the host does not allow consoles: start its agent with \
            --allow-console (or TRUSTHUB_AGENT_ALLOW_CONSOLE=1; with `trusthub up`, \
            `trusthub up --allow-console`)"
            .into(),
        "agent_lost" => "the host's agent disconnected".into(),
        "idle" => "no input for too long (TRUSTHUB_CONSOLE_IDLE_SECS)".into(),
        "max" => "it reached its longest time (TRUSTHUB_CONSOLE_MAX_SECS)".into(),
        "admin" => "an admin terminated it".into(),
        "recording_failed" => "the hub could not write its recording".into(),
        "exit" => "the shell exited".into(),
        other => other.to_owned(),
    }
}
