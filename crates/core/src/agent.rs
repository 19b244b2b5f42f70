//! The agent ↔ hub wire contract (CONTRACT 4; SPEC 1, 2.12, 4.2): request signatures,
//! the ingest batch, metric samples and agent status. Shared by the hub and the agent.

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use time::OffsetDateTime;
use uuid::Uuid;

/// Prefix of agent tokens.
pub const AGENT_TOKEN_PREFIX: &str = "tha_";
/// Prefix of enrollment tokens.
pub const ENROLLMENT_TOKEN_PREFIX: &str = "the_";
/// CONTRACT 4 replay window: a batch whose `sent_at` is further than this from the hub's
/// clock is refused.
pub const REPLAY_WINDOW_SECS: i64 = 600;
/// How long a `batch_id` is remembered for de-duplication.
pub const DEDUPE_WINDOW_SECS: i64 = 24 * 3600;
/// Default push interval of new agents (CONTRACT 11 `--interval-secs`).
pub const DEFAULT_INGEST_INTERVAL_SECS: i64 = 60;
/// Default inventory interval of new agents (SPEC 4.1 rule 3: 6 h).
pub const DEFAULT_INVENTORY_INTERVAL_SECS: i64 = 6 * 3600;

/// Why a signature was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// No `X-Service-Signature` header.
    #[error("missing X-Service-Signature")]
    Missing,
    /// Not `ed25519=<base64 of 64 bytes>`.
    #[error("X-Service-Signature must be ed25519=<base64 signature>")]
    Malformed,
    /// The public key is not 32 hex-encoded bytes of a valid point.
    #[error("signing_pubkey must be 64 hex characters of an Ed25519 public key")]
    BadKey,
    /// The signature does not verify over the body.
    #[error("the signature does not match the request body")]
    Mismatch,
}

/// Parses a hex Ed25519 public key.
pub fn parse_public_key(hex: &str) -> Result<VerifyingKey, SignatureError> {
    crate::keys::ed25519_public(hex).ok_or(SignatureError::BadKey)
}

/// Verifies `X-Service-Signature: ed25519=<base64>` over the exact body bytes
/// (strict verification: no malleable signatures, no small-order keys).
pub fn verify_signature(
    key: &VerifyingKey,
    header: Option<&str>,
    body: &[u8],
) -> Result<(), SignatureError> {
    let header = header.ok_or(SignatureError::Missing)?;
    let b64 = header
        .trim()
        .strip_prefix("ed25519=")
        .ok_or(SignatureError::Malformed)?;
    let raw = data_encoding::BASE64
        .decode(b64.as_bytes())
        .map_err(|_| SignatureError::Malformed)?;
    let arr: [u8; 64] = raw.try_into().map_err(|_| SignatureError::Malformed)?;
    key.verify_strict(body, &Signature::from_bytes(&arr))
        .map_err(|_| SignatureError::Mismatch)
}

/// The header value signing `body` with `key` (what the agent sends).
pub fn sign_header(key: &SigningKey, body: &[u8]) -> String {
    format!(
        "ed25519={}",
        data_encoding::BASE64.encode(&key.sign(body).to_bytes())
    )
}

/// One metric sample (CONTRACT 4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricSample {
    /// Dotted or snake name, e.g. `cpu.percent`.
    pub name: String,
    /// When it was measured.
    #[serde(with = "time::serde::rfc3339")]
    pub ts: OffsetDateTime,
    /// A finite number.
    pub value: f64,
    /// Flat string labels.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

/// An ingest batch (CONTRACT 4). Strict (CONTRACT 18): an unknown field in the batch, a
/// sample or a check result is refused naming its path; `inventory`, `heartbeat`, `live` and
/// `processes` are the agent's own documents, read by name where the hub uses them.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Batch {
    /// Idempotency key.
    pub batch_id: Uuid,
    /// When the agent sent it (replay window).
    #[serde(with = "time::serde::rfc3339")]
    pub sent_at: OffsetDateTime,
    /// Samples.
    #[serde(default)]
    pub metrics: Vec<MetricSample>,
    /// Liveness facts.
    #[serde(default)]
    pub heartbeat: Option<serde_json::Value>,
    /// A full inventory snapshot.
    #[serde(default)]
    pub inventory: Option<serde_json::Value>,
    /// The process list.
    #[serde(default)]
    pub processes: Option<Vec<serde_json::Value>>,
    /// What runs now, sent with every batch for the liveness check: `{systemd: [{unit,
    /// active_state}], containers: [{name, state, compose_project, compose_service}]}`.
    #[serde(default)]
    pub live: Option<serde_json::Value>,
    /// Results of the HTTP checks the hub asked for.
    #[serde(default)]
    pub app_checks: Vec<AppCheck>,
    /// A full scan of the watched configuration files (CONTRACT 20), when one ran since the
    /// last batch: every path the patterns name or match, content never included.
    #[serde(default)]
    pub config_hashes: Option<Vec<crate::drift::ConfigHash>>,
    /// The patterns that scan ran with (CONTRACT 30), sent with `config_hashes`: a glob's
    /// matches are baselined at the first scan that carries the glob. Absent (an older
    /// agent): the patterns in force at the hub.
    #[serde(default)]
    pub config_patterns: Option<Vec<String>>,
    /// A run of the host compliance checks (CONTRACT 25), when one ran since the last batch.
    #[serde(default)]
    pub compliance: Option<crate::compliance::Report>,
    /// The host's DNA (CONTRACT 25), sent with each inventory.
    #[serde(default)]
    pub dna: Option<crate::compliance::Dna>,
    /// Honeypots touched since the last batch.
    #[serde(default)]
    pub honeypot_events: Vec<crate::compliance::HoneypotEvent>,
    /// Whether each governed honeypot is armed (CONTRACT 30), sent when that changes: the
    /// whole list, which replaces the last one.
    #[serde(default)]
    pub honeypot_states: Option<Vec<crate::compliance::HoneypotState>>,
}

/// One HTTP check of an `http` app, run by the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppCheck {
    /// The app.
    pub app_id: Uuid,
    /// When it ran.
    #[serde(with = "time::serde::rfc3339")]
    pub checked_at: OffsetDateTime,
    /// 2xx or 3xx within the timeout.
    pub ok: bool,
    /// HTTP status, when one came.
    #[serde(default)]
    pub status_code: Option<u16>,
    /// Milliseconds until the answer (or the failure).
    #[serde(default)]
    pub latency_ms: Option<u64>,
    /// Why it failed.
    #[serde(default)]
    pub error: Option<String>,
}

/// A check the hub asks an agent to run (in the answer to each batch), with every option a
/// check the hub runs has (CONTRACT 33), judged by the same rules
/// ([`crate::probe::judge_status`], [`crate::probe::judge_body`], [`crate::dns::matches`]).
/// The endpoint's scheme says which: `http(s)://`, `dns://name?type=&server=` (CONTRACT 32)
/// or `icmp://host`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpCheck {
    /// The app.
    pub app_id: Uuid,
    /// URL.
    pub endpoint: String,
    /// Seconds between checks.
    pub interval_seconds: i64,
    /// Seconds a check may take (10 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i64>,
    /// Accepted statuses (`200-399` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_status: Option<String>,
    /// Text the body must contain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keyword: Option<String>,
    /// An assertion on a JSON body (CONTRACT 32).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_query: Option<crate::json_query::JsonQuery>,
    /// dns: the values the answer must hold (CONTRACT 32).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<Vec<String>>,
}

/// Longest metric name.
pub const MAX_METRIC_NAME: usize = 200;
/// Most labels on a sample.
pub const MAX_LABELS: usize = 32;

/// Checks a sample; the message names what is wrong.
pub fn check_sample(s: &MetricSample) -> Result<(), String> {
    let valid_name = !s.name.is_empty()
        && s.name.len() <= MAX_METRIC_NAME
        && s.name
            .starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && s.name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    if !valid_name {
        return Err(format!(
            "metric name `{}` must be dotted or snake_case ASCII, at most 200 characters",
            s.name
        ));
    }
    if !s.value.is_finite() {
        return Err(format!(
            "metric {} has a value that is not a finite number",
            s.name
        ));
    }
    if s.labels.len() > MAX_LABELS {
        return Err(format!(
            "metric {} has more than {MAX_LABELS} labels",
            s.name
        ));
    }
    if s.labels
        .iter()
        .any(|(k, v)| k.is_empty() || k.len() > 100 || v.len() > 256)
    {
        return Err(format!(
            "metric {} has a label key of 1-100 or value of at most 256 characters",
            s.name
        ));
    }
    Ok(())
}

/// The computed status of an agent (CONTRACT 4 agent record).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentStatus {
    /// Data arrived within three push intervals.
    Online,
    /// No data for more than three intervals (but less than a day).
    Silent,
    /// Never reported, or nothing for a day.
    Offline,
}

/// How long without data before an agent counts as offline rather than silent.
pub const OFFLINE_AFTER_SECS: i64 = 24 * 3600;

/// Status from the last time data arrived.
pub fn status(
    last_seen: Option<OffsetDateTime>,
    interval_secs: i64,
    now: OffsetDateTime,
) -> AgentStatus {
    let Some(seen) = last_seen else {
        return AgentStatus::Offline;
    };
    let age = (now - seen).whole_seconds();
    if age <= 3 * interval_secs.max(1) {
        AgentStatus::Online
    } else if age <= OFFLINE_AFTER_SECS {
        AgentStatus::Silent
    } else {
        AgentStatus::Offline
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    /// RFC 8032 section 7.1, TEST 2 (one-byte message 0x72).
    #[test]
    fn rfc8032_test_vector_2_verifies_and_tampering_fails() {
        let secret = data_encoding::HEXLOWER
            .decode(b"4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb")
            .expect("hex");
        let key = SigningKey::from_bytes(&secret.try_into().expect("32"));
        let public = data_encoding::HEXLOWER.encode(key.verifying_key().as_bytes());
        assert_eq!(
            public,
            "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c"
        );
        let header = sign_header(&key, &[0x72]);
        let expected_sig = data_encoding::HEXLOWER
            .decode(b"92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00")
            .expect("hex");
        assert_eq!(
            header,
            format!("ed25519={}", data_encoding::BASE64.encode(&expected_sig))
        );
        let vk = parse_public_key(&public).expect("key");
        assert_eq!(verify_signature(&vk, Some(&header), &[0x72]), Ok(()));
        assert_eq!(
            verify_signature(&vk, Some(&header), &[0x73]),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify_signature(&vk, None, &[0x72]),
            Err(SignatureError::Missing)
        );
        assert_eq!(
            verify_signature(&vk, Some("sha256=abc"), &[0x72]),
            Err(SignatureError::Malformed)
        );
        assert_eq!(parse_public_key("abcd").err(), Some(SignatureError::BadKey));
    }

    #[test]
    fn contract_4_samples_need_a_clean_name_and_a_finite_value() {
        let mut s = MetricSample {
            name: "cpu.percent".into(),
            ts: datetime!(2026-11-21 09:30 UTC),
            value: 12.5,
            labels: BTreeMap::new(),
        };
        assert!(check_sample(&s).is_ok());
        s.value = f64::NAN;
        assert!(check_sample(&s).is_err());
        s.value = 1.0;
        s.name = "cpu percent".into();
        assert!(check_sample(&s).is_err());
        s.name = "9lives".into();
        assert!(check_sample(&s).is_err());
    }

    #[test]
    fn contract_4_status_online_silent_after_three_intervals_offline_after_a_day() {
        let now = datetime!(2026-11-21 12:00 UTC);
        assert_eq!(status(None, 60, now), AgentStatus::Offline);
        assert_eq!(
            status(Some(now - time::Duration::seconds(180)), 60, now),
            AgentStatus::Online
        );
        assert_eq!(
            status(Some(now - time::Duration::seconds(181)), 60, now),
            AgentStatus::Silent
        );
        assert_eq!(
            status(Some(now - time::Duration::hours(25)), 60, now),
            AgentStatus::Offline
        );
    }
}
