//! The hub's API as the agent uses it: signed registration and signed, gzip-compressed
//! batch pushes (CONTRACT 4).

use crate::link::state::Registration;
use ed25519_dalek::SigningKey;
use serde_json::{Value, json};
use std::io::Write;
use std::time::Duration;
use trusthub_core::agent::sign_header;

/// The status and JSON body of an answer (errors say whether the hub was reached).
async fn json_answer(
    sent: reqwest::Result<reqwest::Response>,
) -> Result<(reqwest::StatusCode, Value), String> {
    let resp = sent.map_err(|e| format!("cannot reach the hub: {e}"))?;
    let status = resp.status();
    let answer = resp
        .json()
        .await
        .map_err(|e| format!("hub answered {status} with no JSON: {e}"))?;
    Ok((status, answer))
}

/// What the hub asks for in its answer to a batch.
#[derive(Debug, Clone, Default)]
pub struct Ack {
    /// The governed intervals (seconds: push, inventory).
    pub intervals: Option<(u64, u64)>,
    /// The HTTP checks of this host's `http` apps.
    pub http_checks: Option<Vec<trusthub_core::agent::HttpCheck>>,
    /// The watched configuration paths and the scan interval (seconds).
    pub config: Option<(Vec<String>, u64)>,
    /// Seconds between compliance runs.
    pub compliance_interval: Option<u64>,
    /// The honeypots to watch.
    pub honeypots: Option<Vec<trusthub_core::compliance::Honeypot>>,
    /// A compliance run the hub asks for now.
    pub compliance_run: Option<uuid::Uuid>,
}

/// What the hub said to a push.
#[derive(Debug)]
pub enum PushOutcome {
    /// 202: stored (or a duplicate of something stored), with what the hub asks for now.
    Stored(Ack),
    /// The hub refused this batch for good (400/413/415/422): sending it again cannot help.
    Rejected(String),
    /// Not now (network, 5xx, 429, 401): keep the batch and retry after `retry_after`.
    Later {
        /// Why.
        reason: String,
        /// The hub's `Retry-After`, when it sent one.
        retry_after: Option<Duration>,
    },
}

/// An HTTP client for one hub.
#[derive(Debug, Clone)]
pub struct HubClient {
    http: reqwest::Client,
    base: String,
}

impl HubClient {
    /// A client for `hub` (`http(s)://host:port`), trusting the system roots plus `ca_pem`,
    /// presenting the client certificate `identity` (key and certificate PEM) when given.
    pub fn new(
        hub: &str,
        ca_pem: Option<&[u8]>,
        identity: Option<&[u8]>,
    ) -> Result<HubClient, String> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut b = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("trusthub-agent/", env!("CARGO_PKG_VERSION")));
        if let Some(pem) = ca_pem {
            b = b.add_root_certificate(
                reqwest::Certificate::from_pem(pem).map_err(|e| format!("--ca-cert: {e}"))?,
            );
        }
        if let Some(pem) = identity {
            b = b.identity(
                reqwest::Identity::from_pem(pem).map_err(|e| format!("client certificate: {e}"))?,
            );
        }
        Ok(HubClient {
            http: b.build().map_err(|e| e.to_string())?,
            base: hub
                .trim_end_matches('/')
                .trim_end_matches("/api/v1")
                .to_owned(),
        })
    }

    /// The hub's base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// Registers this host with an enrollment token.
    pub async fn register(
        &self,
        enroll: &str,
        key: &SigningKey,
        facts: &Value,
    ) -> Result<Registration, String> {
        let mut body = facts.clone();
        body["signing_pubkey"] =
            json!(data_encoding::HEXLOWER.encode(key.verifying_key().as_bytes()));
        let bytes = serde_json::to_vec(&body).map_err(|e| e.to_string())?;
        let resp = self
            .http
            .post(format!("{}/api/v1/agents/register", self.base))
            .bearer_auth(enroll)
            .header("content-type", "application/json")
            .header("x-service-signature", sign_header(key, &bytes))
            .body(bytes)
            .send()
            .await;
        let (status, answer) = json_answer(resp).await?;
        if !status.is_success() {
            return Err(format!(
                "registration refused ({status}): {}",
                answer["detail"].as_str().unwrap_or("no detail")
            ));
        }
        Ok(Registration {
            hub: self.base.clone(),
            agent_id: answer["agent_id"].as_str().unwrap_or_default().to_owned(),
            agent_token: answer["agent_token"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            hub_eat_public_key: answer["hub_eat_public_key"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            ingest_interval_secs: answer["ingest_interval_secs"].as_i64().unwrap_or(60),
            inventory_interval_secs: answer["inventory_interval_secs"].as_i64().unwrap_or(21600),
        })
    }

    /// Asks the hub to sign a client certificate for `csr_pem` (CONTRACT 12): the
    /// certificate and CA PEM.
    pub async fn issue_client_cert(
        &self,
        reg: &Registration,
        csr_pem: &str,
    ) -> Result<(String, String), String> {
        let resp = self
            .http
            .post(format!("{}/api/v1/agents/issue-client-cert", self.base))
            .bearer_auth(&reg.agent_token)
            .json(&json!({ "csr_pem": csr_pem }))
            .send()
            .await;
        let (status, answer) = json_answer(resp).await?;
        match (
            status.as_u16(),
            answer["certificate_pem"].as_str(),
            answer["ca_pem"].as_str(),
        ) {
            (201, Some(cert), Some(ca)) => Ok((cert.to_owned(), ca.to_owned())),
            _ => Err(format!(
                "certificate refused ({status}): {}",
                answer["detail"].as_str().unwrap_or("no detail")
            )),
        }
    }

    /// Pushes one batch (already with its `sent_at`), gzip-compressed and signed over the
    /// compressed bytes.
    pub async fn push(&self, reg: &Registration, key: &SigningKey, batch: &[u8]) -> PushOutcome {
        let mut gz = flate2::write::GzEncoder::new(
            Vec::with_capacity(batch.len() / 4),
            flate2::Compression::fast(),
        );
        let body = match gz.write_all(batch).and_then(|_| gz.finish()) {
            Ok(b) => b,
            Err(e) => return PushOutcome::Rejected(format!("cannot compress: {e}")),
        };
        let sent = self
            .http
            .post(format!("{}/api/v1/ingest", self.base))
            .bearer_auth(&reg.agent_token)
            .header("content-type", "application/json")
            .header("content-encoding", "gzip")
            .header("x-service-signature", sign_header(key, &body))
            .body(body)
            .send()
            .await;
        let resp = match sent {
            Ok(r) => r,
            Err(e) => {
                return PushOutcome::Later {
                    reason: format!("hub unreachable: {e}"),
                    retry_after: None,
                };
            }
        };
        let status = resp.status();
        let retry_after = resp
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
            .map(Duration::from_secs);
        if status.as_u16() == 202 {
            let ack: Value = resp.json().await.unwrap_or(Value::Null);
            let intervals = ack["ingest_interval_secs"]
                .as_u64()
                .zip(ack["inventory_interval_secs"].as_u64());
            let http_checks = serde_json::from_value(ack["http_checks"].clone()).ok();
            let config = serde_json::from_value::<Vec<String>>(ack["config_paths"].clone())
                .ok()
                .zip(ack["config_scan_interval_secs"].as_u64());
            return PushOutcome::Stored(Ack {
                intervals,
                http_checks,
                config,
                compliance_interval: ack["compliance_interval_secs"].as_u64(),
                honeypots: serde_json::from_value(ack["honeypots"].clone()).ok(),
                compliance_run: ack["compliance_run_id"]
                    .as_str()
                    .and_then(|s| s.parse().ok()),
            });
        }
        let detail = resp.text().await.unwrap_or_default();
        match status.as_u16() {
            400 | 413 | 415 | 422 => PushOutcome::Rejected(format!("{status}: {detail}")),
            401 => PushOutcome::Later {
                reason: format!(
                    "the hub refused this agent's token or signature ({detail}); if the token was rotated or \
                     the agent deleted, start it once with --enroll <token>"
                ),
                retry_after,
            },
            _ => PushOutcome::Later {
                reason: format!("{status}: {detail}"),
                retry_after,
            },
        }
    }
}
