//! Webhook signatures (CONTRACT 6; SPEC 6.1): `X-Service-Signature: sha256=<hex HMAC-SHA256
//! (secret, body)>` plus the Standard Webhooks `webhook-signature: v1,<base64 HMAC-SHA256(key,
//! "<id>.<timestamp>.<body>")>`, where the key is the base64 part of a `whsec_` secret; and the
//! delivery retry schedule of SPEC 3.3.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use std::time::Duration;

/// Prefix of webhook secrets (Standard Webhooks format).
pub const SECRET_PREFIX: &str = "whsec_";

fn hmac(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    // HMAC accepts keys of any length, so construction cannot fail.
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
    for p in parts {
        mac.update(p);
    }
    mac.finalize().into_bytes().to_vec()
}

/// A new secret: `whsec_` and the base64 of 32 random bytes.
pub fn new_secret() -> Result<String, crate::secret::SecretError> {
    let key = crate::secret::random_bytes::<32>()?;
    Ok(format!(
        "{SECRET_PREFIX}{}",
        data_encoding::BASE64.encode(&key)
    ))
}

/// `sha256=<lowercase hex>` of HMAC-SHA256 keyed with the secret as given.
pub fn service_signature(secret: &str, body: &[u8]) -> String {
    format!(
        "sha256={}",
        data_encoding::HEXLOWER.encode(&hmac(secret.as_bytes(), &[body]))
    )
}

/// The HMAC key of a Standard Webhooks secret: the base64 after `whsec_` (the raw bytes of
/// the secret when it is not base64).
fn standard_key(secret: &str) -> Vec<u8> {
    let b64 = secret.strip_prefix(SECRET_PREFIX).unwrap_or(secret);
    data_encoding::BASE64
        .decode(b64.as_bytes())
        .unwrap_or_else(|_| secret.as_bytes().to_vec())
}

/// The Standard Webhooks `webhook-signature` value.
pub fn standard_signature(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> String {
    let ts = timestamp.to_string();
    let mac = hmac(
        &standard_key(secret),
        &[id.as_bytes(), b".", ts.as_bytes(), b".", body],
    );
    format!("v1,{}", data_encoding::BASE64.encode(&mac))
}

/// Parses `TRUSTHUB_WEBHOOK_RETRY_SCHEDULE` (`10s,60s,5m`): the waits before each retry.
pub fn parse_schedule(s: &str) -> Option<Vec<Duration>> {
    let waits: Option<Vec<Duration>> = s
        .split(',')
        .map(|part| {
            let part = part.trim();
            let split = part.find(|c: char| !c.is_ascii_digit())?;
            let (n, unit) = part.split_at(split);
            let n: u64 = n.parse().ok()?;
            let secs = match unit {
                "s" => n,
                "m" => n.checked_mul(60)?,
                "h" => n.checked_mul(3600)?,
                _ => return None,
            };
            Some(Duration::from_secs(secs))
        })
        .collect();
    waits.filter(|w| !w.is_empty())
}

/// What follows a failed attempt (SPEC 3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterFailure {
    /// Retry after this wait (same delivery id).
    RetryIn(Duration),
    /// Final failure: mark failed, audit `webhook_delivery_failed`, start the cooldown.
    Failed,
}

/// The next step after attempt number `attempt` (1 = the first delivery) failed.
pub fn after_failure(attempt: u32, schedule: &[Duration]) -> AfterFailure {
    match schedule.get(attempt.saturating_sub(1) as usize) {
        Some(wait) => AfterFailure::RetryIn(*wait),
        None => AfterFailure::Failed,
    }
}

/// Whether an endpoint whose cooldown runs until `until` is resting at `now` (SPEC 3.3:
/// deliveries meanwhile are recorded as skipped, not sent).
pub fn in_cooldown(until: Option<time::OffsetDateTime>, now: time::OffsetDateTime) -> bool {
    until.is_some_and(|u| u > now)
}

/// The end of the cooldown that a final failure at `failed_at` starts.
pub fn cooldown_until(failed_at: time::OffsetDateTime, cooldown: Duration) -> time::OffsetDateTime {
    failed_at + cooldown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contract_6_standard_webhooks_published_vector() {
        assert_eq!(
            standard_signature(
                "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                "msg_p5jXN8AQM9LWM0D4loKWxJek",
                1614265330,
                br#"{"test": 2432232314}"#
            ),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn contract_6_service_signature_is_rfc4231_hmac_sha256_in_hex() {
        // RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
        assert_eq!(
            service_signature("Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn new_secrets_are_standard_webhooks_secrets() {
        let s = new_secret().expect("secret");
        assert!(s.starts_with("whsec_"));
        assert_eq!(standard_key(&s).len(), 32);
    }

    #[test]
    fn spec_3_3_retries_at_10s_60s_5m_then_failed() {
        let schedule = parse_schedule("10s,60s,5m").expect("schedule");
        assert_eq!(
            after_failure(1, &schedule),
            AfterFailure::RetryIn(Duration::from_secs(10))
        );
        assert_eq!(
            after_failure(2, &schedule),
            AfterFailure::RetryIn(Duration::from_secs(60))
        );
        assert_eq!(
            after_failure(3, &schedule),
            AfterFailure::RetryIn(Duration::from_secs(300))
        );
        assert_eq!(after_failure(4, &schedule), AfterFailure::Failed);
        for bad in ["", "10", "10x", "5m,", "-1s"] {
            assert_eq!(parse_schedule(bad), None, "{bad}");
        }
    }

    #[test]
    fn spec_3_3_final_failure_starts_a_ten_minute_cooldown() {
        let failed = time::macros::datetime!(2026-01-01 12:00 UTC);
        let until = cooldown_until(failed, Duration::from_secs(600));
        assert_eq!(until, time::macros::datetime!(2026-01-01 12:10 UTC));
        assert!(!in_cooldown(None, failed));
        assert!(in_cooldown(Some(until), failed + Duration::from_secs(599)));
        assert!(!in_cooldown(Some(until), until));
    }
}
