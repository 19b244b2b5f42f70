//! Emergency action tokens (CONTRACT 5): compact JWS (RFC 7515) signed with EdDSA / Ed25519
//! (RFC 8037), header `{alg: "EdDSA", typ: "eat+jwt", kid}`, claims `{iss, sub, tid, jti, iat,
//! exp, lvl, act, args}` with `exp <= iat + 300`. Building and verifying are pure; whether a
//! `jti` was seen before is the verifier's state.

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use uuid::Uuid;

/// The only issuer.
pub const ISSUER: &str = "trusthub";
/// `typ` of the header.
pub const TYP: &str = "eat+jwt";
/// Longest lifetime of a token in seconds.
pub const MAX_LIFETIME_SECS: i64 = 300;
/// The action kinds.
pub const ACTIONS: [&str; 5] = [
    "restart_app",
    "install_package",
    "update_packages",
    "console_open",
    "emergency",
];

/// The claims of an EAT.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Claims {
    /// Always `trusthub`.
    pub iss: String,
    /// The agent it is for.
    pub sub: Uuid,
    /// The tenant.
    pub tid: Uuid,
    /// Nonce: accepted once.
    pub jti: String,
    /// Issued at (unix seconds).
    pub iat: i64,
    /// Expires at (unix seconds), at most 300 s after `iat`.
    pub exp: i64,
    /// Level (2 for restarts, SPEC 3.1).
    pub lvl: u8,
    /// Action kind.
    pub act: String,
    /// Action arguments.
    pub args: serde_json::Value,
}

#[derive(Debug, Serialize, Deserialize)]
struct Header {
    alg: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    typ: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kid: Option<String>,
}

/// Why a token was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EatError {
    /// Not three base64url parts of JSON.
    #[error("not a compact JWS")]
    Malformed,
    /// Not `EdDSA` / `eat+jwt`, or another key id.
    #[error("wrong algorithm, type or key id")]
    Header,
    /// The signature does not verify.
    #[error("bad signature")]
    Signature,
    /// Another issuer, agent or an unknown action.
    #[error("claims not for this agent or action")]
    Claims,
    /// Expired, not yet valid, or valid for longer than 300 s.
    #[error("expired or over-long lifetime")]
    Expired,
}

fn b64(bytes: &[u8]) -> String {
    data_encoding::BASE64URL_NOPAD.encode(bytes)
}

fn unb64(s: &str) -> Result<Vec<u8>, EatError> {
    data_encoding::BASE64URL_NOPAD
        .decode(s.as_bytes())
        .map_err(|_| EatError::Malformed)
}

/// The key id of a public key: the first 16 hex characters of its SHA-256.
pub fn kid(public: &VerifyingKey) -> String {
    data_encoding::HEXLOWER.encode(&Sha256::digest(public.as_bytes())[..8])
}

/// A compact JWS over `payload` with the given protected header JSON.
pub fn jws(key: &SigningKey, header_json: &[u8], payload: &[u8]) -> String {
    let input = format!("{}.{}", b64(header_json), b64(payload));
    let sig = key.sign(input.as_bytes());
    format!("{input}.{}", b64(&sig.to_bytes()))
}

/// Verifies a compact JWS with `key`; returns (header JSON, payload).
pub fn verify_jws(token: &str, key: &VerifyingKey) -> Result<(Vec<u8>, Vec<u8>), EatError> {
    let mut parts = token.split('.');
    let (Some(h), Some(p), Some(s), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(EatError::Malformed);
    };
    let sig: [u8; 64] = unb64(s)?.try_into().map_err(|_| EatError::Malformed)?;
    key.verify_strict(format!("{h}.{p}").as_bytes(), &Signature::from_bytes(&sig))
        .map_err(|_| EatError::Signature)?;
    Ok((unb64(h)?, unb64(p)?))
}

/// Signs claims as an EAT.
pub fn sign(key: &SigningKey, claims: &Claims) -> Result<String, EatError> {
    let header = Header {
        alg: "EdDSA".into(),
        typ: Some(TYP.into()),
        kid: Some(kid(&key.verifying_key())),
    };
    let h = serde_json::to_vec(&header).map_err(|_| EatError::Malformed)?;
    let p = serde_json::to_vec(claims).map_err(|_| EatError::Malformed)?;
    Ok(jws(key, &h, &p))
}

/// What an agent checks before it runs anything (CONTRACT 5): signature by the pinned hub
/// key, header, issuer, `sub` = itself, a known action, `iat <= now < exp`, `exp - iat <= 300`.
pub fn verify(
    token: &str,
    hub_key: &VerifyingKey,
    agent_id: Uuid,
    now: i64,
) -> Result<Claims, EatError> {
    let (h, p) = verify_jws(token, hub_key)?;
    let header: Header = serde_json::from_slice(&h).map_err(|_| EatError::Malformed)?;
    if header.alg != "EdDSA"
        || header.typ.as_deref() != Some(TYP)
        || header.kid.as_deref() != Some(kid(hub_key).as_str())
    {
        return Err(EatError::Header);
    }
    let claims: Claims = serde_json::from_slice(&p).map_err(|_| EatError::Malformed)?;
    if claims.iss != ISSUER || claims.sub != agent_id || !ACTIONS.contains(&claims.act.as_str()) {
        return Err(EatError::Claims);
    }
    // One minute of clock skew is tolerated at the start, none at the end.
    if claims.exp - claims.iat > MAX_LIFETIME_SECS
        || claims.exp <= claims.iat
        || now >= claims.exp
        || now + 60 < claims.iat
    {
        return Err(EatError::Expired);
    }
    Ok(claims)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 8037 appendix A.1 key and A.4 signature.
    #[test]
    fn contract_5_rfc8037_appendix_a4_vector() {
        let d = data_encoding::BASE64URL_NOPAD
            .decode(b"nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A")
            .expect("d");
        let key = SigningKey::from_bytes(&d.try_into().expect("32"));
        assert_eq!(
            b64(key.verifying_key().as_bytes()),
            "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
        );
        let token = jws(&key, br#"{"alg":"EdDSA"}"#, b"Example of Ed25519 signing");
        assert_eq!(
            token,
            "eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc.hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg"
        );
        let (_, payload) = verify_jws(&token, &key.verifying_key()).expect("verifies");
        assert_eq!(payload, b"Example of Ed25519 signing");
    }

    fn claims(agent: Uuid, iat: i64, exp: i64, act: &str) -> Claims {
        Claims {
            iss: ISSUER.into(),
            sub: agent,
            tid: Uuid::nil(),
            jti: "nonce-1".into(),
            iat,
            exp,
            lvl: 2,
            act: act.into(),
            args: serde_json::json!({"unit": "nginx.service"}),
        }
    }

    #[test]
    fn contract_5_eats_verify_only_for_their_agent_key_and_lifetime() {
        let hub = SigningKey::from_bytes(&[7u8; 32]);
        let agent = Uuid::from_u128(42);
        let c = claims(agent, 1000, 1300, "restart_app");
        let token = sign(&hub, &c).expect("sign");
        assert_eq!(
            verify(&token, &hub.verifying_key(), agent, 1100),
            Ok(c.clone())
        );
        assert_eq!(
            verify(&token, &hub.verifying_key(), Uuid::from_u128(43), 1100),
            Err(EatError::Claims)
        );
        assert_eq!(
            verify(&token, &hub.verifying_key(), agent, 1300),
            Err(EatError::Expired)
        );
        let other = SigningKey::from_bytes(&[8u8; 32]);
        assert_eq!(
            verify(&token, &other.verifying_key(), agent, 1100),
            Err(EatError::Signature)
        );
        let long = sign(&hub, &claims(agent, 1000, 1301, "restart_app")).expect("sign");
        assert_eq!(
            verify(&long, &hub.verifying_key(), agent, 1100),
            Err(EatError::Expired)
        );
        let odd = sign(&hub, &claims(agent, 1000, 1200, "format_disk")).expect("sign");
        assert_eq!(
            verify(&odd, &hub.verifying_key(), agent, 1100),
            Err(EatError::Claims)
        );
        // One changed character of the payload breaks the signature.
        let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
        let forged = sign(&hub, &claims(agent, 1000, 1300, "emergency")).expect("sign");
        parts[1] = forged.split('.').nth(1).expect("payload").to_owned();
        assert_eq!(
            verify(&parts.join("."), &hub.verifying_key(), agent, 1100),
            Err(EatError::Signature)
        );
        assert_eq!(
            verify("a.b", &hub.verifying_key(), agent, 1100),
            Err(EatError::Malformed)
        );
    }
}
