//! Secrets: random tokens with scanner-friendly prefixes, their at-rest hashes, and the
//! AES-256-GCM sealing of secrets the hub must read back (CONTRACT 2, 4 and 11).

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use sha2::{Digest, Sha256};

/// Prefix of API tokens.
pub const API_TOKEN_PREFIX: &str = "tht_";
/// Prefix of session tokens (cookie values).
pub const SESSION_PREFIX: &str = "ths_";
/// Prefix of one-time tokens: invitations, password resets, TOTP challenges.
pub const ONE_TIME_PREFIX: &str = "tho_";

/// Errors of this module.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SecretError {
    /// The operating system gave no random bytes.
    #[error("no randomness available from the operating system")]
    Randomness,
    /// An encryption key is not 64 hex characters.
    #[error("an encryption key must be 64 hex characters (32 bytes)")]
    BadKey,
    /// A sealed value was altered, truncated or sealed with another key.
    #[error("sealed value cannot be opened with this key")]
    Unseal,
}

/// Fills a buffer from the operating system's random source.
pub fn random_bytes<const N: usize>() -> Result<[u8; N], SecretError> {
    let mut buf = [0u8; N];
    getrandom::fill(&mut buf).map_err(|_| SecretError::Randomness)?;
    Ok(buf)
}

/// A new random token: the prefix and 32 random bytes in unpadded base64url.
pub fn new_token(prefix: &str) -> Result<String, SecretError> {
    let bytes = random_bytes::<32>()?;
    Ok(format!(
        "{prefix}{}",
        data_encoding::BASE64URL_NOPAD.encode(&bytes)
    ))
}

/// The at-rest form of a high-entropy token: lowercase hex SHA-256.
///
/// Tokens carry 256 random bits, so a fast hash is enough; passwords use argon2id instead.
pub fn token_hash(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

/// Lowercase hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    data_encoding::HEXLOWER.encode(bytes)
}

/// The hub's symmetric key (CONTRACT 11 `CLOUD_ENCRYPTION_KEY`): seals secrets at rest.
#[derive(Clone)]
pub struct SealingKey([u8; 32]);

impl std::fmt::Debug for SealingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealingKey(..)")
    }
}

impl SealingKey {
    /// Parses 64 hex characters (either case, surrounding whitespace ignored).
    pub fn from_hex(s: &str) -> Result<Self, SecretError> {
        let bytes = data_encoding::HEXLOWER_PERMISSIVE
            .decode(s.trim().as_bytes())
            .map_err(|_| SecretError::BadKey)?;
        let key: [u8; 32] = bytes.try_into().map_err(|_| SecretError::BadKey)?;
        Ok(SealingKey(key))
    }

    /// A fresh random key.
    pub fn generate() -> Result<Self, SecretError> {
        Ok(SealingKey(random_bytes::<32>()?))
    }

    /// The key as 64 lowercase hex characters.
    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }

    fn cipher(&self) -> Aes256Gcm {
        // A 32-byte key is exactly what AES-256 takes; this cannot fail.
        Aes256Gcm::new(&self.0.into())
    }

    /// Encrypts `plain`; the output is the 12-byte random nonce followed by the ciphertext.
    /// `context` is bound as associated data so a value sealed for one use cannot be
    /// replayed into another column.
    pub fn seal(&self, context: &str, plain: &[u8]) -> Result<Vec<u8>, SecretError> {
        let nonce_bytes = random_bytes::<12>()?;
        let nonce = Nonce::from(nonce_bytes);
        let ct = self
            .cipher()
            .encrypt(
                &nonce,
                aes_gcm::aead::Payload {
                    msg: plain,
                    aad: context.as_bytes(),
                },
            )
            .map_err(|_| SecretError::Unseal)?;
        let mut out = Vec::with_capacity(12 + ct.len());
        out.extend_from_slice(&nonce_bytes);
        out.extend_from_slice(&ct);
        Ok(out)
    }

    /// Decrypts what [`SealingKey::seal`] produced with the same context.
    pub fn open(&self, context: &str, sealed: &[u8]) -> Result<Vec<u8>, SecretError> {
        if sealed.len() < 12 + 16 {
            return Err(SecretError::Unseal);
        }
        let (nonce_bytes, ct) = sealed.split_at(12);
        let nonce_arr: [u8; 12] = nonce_bytes.try_into().map_err(|_| SecretError::Unseal)?;
        self.cipher()
            .decrypt(
                &Nonce::from(nonce_arr),
                aes_gcm::aead::Payload {
                    msg: ct,
                    aad: context.as_bytes(),
                },
            )
            .map_err(|_| SecretError::Unseal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_carry_their_prefix_and_differ() {
        let a = new_token(API_TOKEN_PREFIX).expect("token");
        let b = new_token(API_TOKEN_PREFIX).expect("token");
        assert!(a.starts_with("tht_"));
        assert_eq!(a.len(), 4 + 43);
        assert_ne!(a, b);
        assert_eq!(token_hash(&a).len(), 64);
        assert_ne!(token_hash(&a), token_hash(&b));
    }

    #[test]
    fn sealed_values_open_only_with_same_key_and_context() {
        let key = SealingKey::generate().expect("key");
        let sealed = key.seal("totp", b"JBSWY3DPEHPK3PXP").expect("seal");
        assert_eq!(
            key.open("totp", &sealed).expect("open"),
            b"JBSWY3DPEHPK3PXP"
        );
        assert_eq!(key.open("other", &sealed), Err(SecretError::Unseal));
        let other = SealingKey::generate().expect("key");
        assert_eq!(other.open("totp", &sealed), Err(SecretError::Unseal));
        let mut tampered = sealed.clone();
        let last = tampered.len() - 1;
        tampered[last] ^= 1;
        assert_eq!(key.open("totp", &tampered), Err(SecretError::Unseal));
        assert_eq!(key.open("totp", &sealed[..10]), Err(SecretError::Unseal));
    }

    #[test]
    fn contract_11_key_is_64_hex_chars() {
        let k = SealingKey::generate().expect("key");
        assert_eq!(SealingKey::from_hex(&k.to_hex()).expect("parse").0, k.0);
        assert_eq!(
            SealingKey::from_hex("abcd").err(),
            Some(SecretError::BadKey)
        );
        assert_eq!(
            SealingKey::from_hex(&"zz".repeat(32)).err(),
            Some(SecretError::BadKey)
        );
    }
}
