//! The agent's WebSocket to the hub (SPEC 4.2 `/ws/agents/:id`): held open forever, redialled
//! with backoff (1 s doubling to 30 s) and jitter whenever it drops, so an agent is back
//! within seconds of a hub restart. Action tokens arrive on it and their results go back.

use crate::actions::{self, SeenJtis};
use crate::link::state::Registration;
use futures_util::{SinkExt, StreamExt};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use uuid::Uuid;

/// How long consoles outlive a lost hub connection (CONTRACT 30).
pub const CONSOLE_GRACE: Duration = Duration::from_secs(30);

trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// Everything the socket needs.
pub struct Socket {
    url: String,
    host: String,
    port: u16,
    secure: bool,
    ca_pem: Option<Vec<u8>>,
    mtls: crate::link::mtls::Mtls,
    token: String,
    agent_id: Uuid,
    hub_key: ed25519_dalek::VerifyingKey,
    allowed: crate::actions::allow::Allowlist,
    seen: SeenJtis,
    state_dir: std::path::PathBuf,
    /// Console sessions (CONTRACT 22) and the user their shells run as.
    consoles: crate::actions::console::Consoles,
    /// Connections made so far (a console's grace timer knows whether a new one came).
    connections: Arc<std::sync::atomic::AtomicU64>,
    console_user: String,
    /// Console frames for the hub (output, exits).
    console_out: (
        tokio::sync::mpsc::Sender<String>,
        tokio::sync::mpsc::Receiver<String>,
    ),
    /// Told when the hub asks for a push now (`{type: "push"}`: a compliance run was
    /// requested, CONTRACT 33); the push loop holds the other end.
    pub push_now: Arc<tokio::sync::Notify>,
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
        allowed: crate::actions::allow::Allowlist,
        ca_pem: Option<&[u8]>,
        console_user: &str,
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
        crate::link::mtls::rustls_config(ca_pem, None)?;
        let scheme = if secure { "wss" } else { "ws" };
        Ok(Socket {
            url: format!("{scheme}://{rest}/api/v1/ws/agents/{agent_id}"),
            host,
            port,
            secure,
            ca_pem: ca_pem.map(<[u8]>::to_vec),
            mtls: crate::link::mtls::Mtls::new(state_dir),
            token: reg.agent_token.clone(),
            agent_id,
            hub_key,
            allowed,
            seen: SeenJtis::load(state_dir),
            state_dir: state_dir.to_owned(),
            consoles: crate::actions::console::Consoles::default(),
            connections: Arc::default(),
            console_user: console_user.to_owned(),
            console_out: tokio::sync::mpsc::channel(256),
            push_now: Arc::default(),
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
                let config =
                    crate::link::mtls::rustls_config(self.ca_pem.as_deref(), held.as_ref())?;
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
        self.connections
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        // CONTRACT 30: the hub ended every session of this agent when the last connection
        // went; a shell still open here has nobody watching it. End them, and say so.
        for session in self.consoles.end_all() {
            tracing::warn!(%session, "a console left from the last connection is ended");
            let frame = serde_json::json!({"type": "console_ended", "session_id": session, "reason": "reconnect"});
            ws.send(Message::Text(frame.to_string().into()))
                .await
                .map_err(|e| e.to_string())?;
        }
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
                            if self.consoles.on_frame(&v) {
                                continue;
                            }
                            if v["type"] == "push" {
                                // Nothing but a nudge: the push itself is the usual signed
                                // batch, and its answer says what the hub wants.
                                self.push_now.notify_one();
                                continue;
                            }
                            if v["type"] == "eat"
                                && let Some(token) = v["token"].as_str()
                            {
                                match actions::accept(token, &self.hub_key, self.agent_id, &self.allowed.kinds, &mut self.seen) {
                                    Ok(claims) if claims.act == "console_open" => {
                                        let answer = self.open_console(&claims);
                                        ws.send(Message::Text(actions::frame(&answer).into()))
                                            .await
                                            .map_err(|e| e.to_string())?;
                                    }
                                    Ok(claims) => {
                                        let ctx = actions::Context {
                                            allowed: self.allowed.clone(),
                                            state_dir: self.state_dir.clone(),
                                            guard: crate::actions::emergency::Guard {
                                                hub_url: Some(self.url.clone()),
                                                console_user: Some(self.console_user.clone()),
                                            },
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
                Some(out) = self.console_out.1.recv() => {
                    // Console output is live: a frame lost with the connection is not resent.
                    ws.send(Message::Text(out.into())).await.map_err(|e| e.to_string())?;
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

    /// Opens the console an accepted `console_open` token asks for (its `args`: `session_id`,
    /// `cols`, `rows`); the action's answer says whether the shell started.
    fn open_console(&self, claims: &trusthub_core::eat::Claims) -> actions::Answer {
        let session = claims.args["session_id"].as_str().unwrap_or_default();
        let cols = claims.args["cols"].as_u64().unwrap_or(80).clamp(1, 1000) as u16;
        let rows = claims.args["rows"].as_u64().unwrap_or(24).clamp(1, 1000) as u16;
        let now = time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        match self.consoles.open(
            session,
            cols,
            rows,
            &self.console_user,
            self.console_out.0.clone(),
            claims.args["expires_at"].as_i64(),
        ) {
            Ok(shell) => actions::Answer::Result {
                jti: claims.jti.clone(),
                exit_code: 0,
                stdout: serde_json::json!({"user": self.console_user, "shell": shell}).to_string(),
                stderr: String::new(),
                note: None,
                finished_at: now,
            },
            Err(e) => actions::Answer::Result {
                jti: claims.jti.clone(),
                exit_code: -1,
                stdout: String::new(),
                stderr: e,
                note: None,
                finished_at: now,
            },
        }
    }

    /// Holds the socket open forever, redialling with backoff and jitter. Consoles still
    /// open 30 s after the connection went are ended (CONTRACT 30).
    pub async fn run(mut self) {
        let mut backoff = Duration::from_secs(1);
        loop {
            let started = tokio::time::Instant::now();
            match self.session().await {
                Ok(()) => tracing::info!("the hub closed the action socket; redialling"),
                Err(e) => tracing::warn!(error = %e, "action socket lost; redialling"),
            }
            if !self.consoles.sessions().is_empty() {
                let connections = self.connections.clone();
                let (consoles, seen) = (
                    self.consoles.clone(),
                    connections.load(std::sync::atomic::Ordering::SeqCst),
                );
                tokio::spawn(async move {
                    tokio::time::sleep(CONSOLE_GRACE).await;
                    // Still the same lost connection (a new one ends them itself).
                    if connections.load(std::sync::atomic::Ordering::SeqCst) == seen {
                        for session in consoles.end_all() {
                            tracing::warn!(%session, "the hub connection is lost for 30 s; the console is ended");
                        }
                    }
                });
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
