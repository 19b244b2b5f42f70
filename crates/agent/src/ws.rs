//! The agent's WebSocket to the hub (SPEC 4.2 `/ws/agents/:id`): held open forever, redialled
//! with backoff (1 s doubling to 30 s) and jitter whenever it drops, so an agent is back
//! within seconds of a hub restart. Action tokens arrive on it and their results go back.

use crate::actions::{self, SeenJtis};
use crate::state::Registration;
use futures_util::{SinkExt, StreamExt};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use uuid::Uuid;

trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// Everything the socket needs.
pub struct Socket {
    url: String,
    host: String,
    port: u16,
    secure: bool,
    ca_pem: Option<Vec<u8>>,
    mtls: crate::mtls::Mtls,
    token: String,
    agent_id: Uuid,
    hub_key: ed25519_dalek::VerifyingKey,
    allowed: crate::allow::Allowlist,
    seen: SeenJtis,
    state_dir: std::path::PathBuf,
    /// Answers of actions still running or not sent yet: they survive a redial.
    answers: (
        tokio::sync::mpsc::Sender<actions::Answer>,
        tokio::sync::mpsc::Receiver<actions::Answer>,
    ),
}

impl Socket {
    /// Prepares the socket for a registered agent.
    pub fn new(
        reg: &Registration,
        state_dir: &std::path::Path,
        allowed: crate::allow::Allowlist,
        ca_pem: Option<&[u8]>,
    ) -> Result<Socket, String> {
        let agent_id = Uuid::parse_str(&reg.agent_id).map_err(|e| e.to_string())?;
        let hub_key = trusthub_core::agent::parse_public_key(&reg.hub_eat_public_key)
            .map_err(|e| format!("the pinned hub key: {e}"))?;
        let base = reg.hub.trim_end_matches('/').trim_end_matches("/api/v1");
        let (secure, rest) = if let Some(r) = base.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = base.strip_prefix("http://") {
            (false, r)
        } else {
            return Err(format!(
                "hub URL `{base}` must start with http:// or https://"
            ));
        };
        let authority = rest.split('/').next().unwrap_or_default();
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => (
                h.trim_start_matches('[').trim_end_matches(']').to_owned(),
                p.parse()
                    .map_err(|_| format!("bad port in `{authority}`"))?,
            ),
            _ => (authority.to_owned(), if secure { 443 } else { 80 }),
        };
        // Checked now so a bad --ca-cert fails at start, not at every dial.
        crate::mtls::rustls_config(ca_pem, None)?;
        let scheme = if secure { "wss" } else { "ws" };
        Ok(Socket {
            url: format!("{scheme}://{rest}/api/v1/ws/agents/{agent_id}"),
            host,
            port,
            secure,
            ca_pem: ca_pem.map(<[u8]>::to_vec),
            mtls: crate::mtls::Mtls::new(state_dir),
            token: reg.agent_token.clone(),
            agent_id,
            hub_key,
            allowed,
            seen: SeenJtis::load(state_dir),
            state_dir: state_dir.to_owned(),
            answers: tokio::sync::mpsc::channel(64),
        })
    }

    async fn dial(&self) -> Result<Box<dyn Io>, String> {
        let tcp = tokio::time::timeout(
            Duration::from_secs(10),
            tokio::net::TcpStream::connect((self.host.as_str(), self.port)),
        )
        .await
        .map_err(|_| "connect timed out".to_owned())?
        .map_err(|e| e.to_string())?;
        let _ = tcp.set_nodelay(true);
        match self.secure {
            false => Ok(Box::new(tcp)),
            true => {
                // Built at every dial: a renewed certificate is presented from the next one.
                let held = self.mtls.usable();
                let config = crate::mtls::rustls_config(self.ca_pem.as_deref(), held.as_ref())?;
                let tls = tokio_rustls::TlsConnector::from(Arc::new(config));
                let name = rustls_pki_types::ServerName::try_from(self.host.clone())
                    .map_err(|e| e.to_string())?;
                Ok(Box::new(
                    tls.connect(name, tcp).await.map_err(|e| e.to_string())?,
                ))
            }
        }
    }

    /// One connection until it drops.
    async fn session(&mut self) -> Result<(), String> {
        let mut req = self
            .url
            .as_str()
            .into_client_request()
            .map_err(|e| e.to_string())?;
        req.headers_mut().insert(
            "authorization",
            format!("Bearer {}", self.token)
                .parse()
                .map_err(|_| "bad token".to_owned())?,
        );
        let io = self.dial().await?;
        let (mut ws, _) = tokio_tungstenite::client_async(req, io)
            .await
            .map_err(|e| e.to_string())?;
        tracing::info!("connected to the hub's action socket");
        // Actions run beside the socket, which keeps answering pings while a patch takes
        // minutes; their answers come back through `answers`.
        loop {
            tokio::select! {
                msg = tokio::time::timeout(Duration::from_secs(60), ws.next()) => {
                    let Some(msg) = msg.map_err(|_| "the hub went silent for 60 s".to_owned())? else {
                        return Ok(());
                    };
                    match msg.map_err(|e| e.to_string())? {
                        Message::Text(text) => {
                            let v: serde_json::Value =
                                serde_json::from_str(text.as_str()).unwrap_or_default();
                            if v["type"] == "eat"
                                && let Some(token) = v["token"].as_str()
                            {
                                match actions::accept(token, &self.hub_key, self.agent_id, &self.allowed.kinds, &mut self.seen) {
                                    Ok(claims) => {
                                        let ctx = actions::Context {
                                            allowed: self.allowed.clone(),
                                            state_dir: self.state_dir.clone(),
                                        };
                                        let out = self.answers.0.clone();
                                        tokio::spawn(async move {
                                            let _ = out.send(actions::execute(claims, &ctx).await).await;
                                        });
                                    }
                                    Err(refusal) => {
                                        ws.send(Message::Text(actions::frame(&refusal).into()))
                                            .await
                                            .map_err(|e| e.to_string())?;
                                    }
                                }
                            }
                        }
                        Message::Close(_) => return Ok(()),
                        _ => {}
                    }
                }
                Some(answer) = self.answers.1.recv() => {
                    if let Err(e) = ws.send(Message::Text(actions::frame(&answer).into())).await {
                        // Sent again on the next connection.
                        let _ = self.answers.0.try_send(answer);
                        return Err(e.to_string());
                    }
                }
            }
        }
    }

    /// Holds the socket open forever, redialling with backoff and jitter.
    pub async fn run(mut self) {
        let mut backoff = Duration::from_secs(1);
        loop {
            let started = tokio::time::Instant::now();
            match self.session().await {
                Ok(()) => tracing::info!("the hub closed the action socket; redialling"),
                Err(e) => tracing::warn!(error = %e, "action socket lost; redialling"),
            }
            if started.elapsed() > Duration::from_secs(30) {
                backoff = Duration::from_secs(1);
            }
            let jitter = Duration::from_millis(
                u64::from(
                    trusthub_core::secret::random_bytes::<2>()
                        .map(u16::from_le_bytes)
                        .unwrap_or(0),
                ) % 500,
            );
            tokio::time::sleep(backoff + jitter).await;
            backoff = (backoff * 2).min(Duration::from_secs(30));
        }
    }
}
