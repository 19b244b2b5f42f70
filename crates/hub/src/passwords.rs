//! Password hashing with argon2id (OWASP parameters of the argon2 crate's default), run on
//! the blocking pool so a login never stalls the async workers.

use crate::error::ApiError;
use argon2::Argon2;
use argon2::password_hash::{PasswordHasher, PasswordVerifier, phc::PasswordHash};
use std::sync::OnceLock;

/// Hashes a password to a PHC string.
pub async fn hash(password: String) -> Result<String, ApiError> {
    tokio::task::spawn_blocking(move || hash_blocking(&password))
        .await
        .map_err(|e| ApiError::Internal(format!("hashing task: {e}")))?
}

/// Hashes on the current thread (CLI use).
pub fn hash_blocking(password: &str) -> Result<String, ApiError> {
    Argon2::default()
        .hash_password(password.as_bytes())
        .map(|h| h.to_string())
        .map_err(|e| ApiError::Internal(format!("argon2: {e}")))
}

/// Checks a password against a PHC string. With `None` it checks against a fixed dummy
/// hash and returns false, so an unknown email costs as much time as a wrong password.
pub async fn verify(password: String, phc: Option<String>) -> Result<bool, ApiError> {
    tokio::task::spawn_blocking(move || {
        let known = phc.is_some();
        let phc = match phc {
            Some(p) => p,
            None => dummy_hash().to_owned(),
        };
        let parsed =
            PasswordHash::new(&phc).map_err(|e| ApiError::Internal(format!("stored hash: {e}")))?;
        let ok = Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok();
        Ok(known && ok)
    })
    .await
    .map_err(|e| ApiError::Internal(format!("hashing task: {e}")))?
}

fn dummy_hash() -> &'static str {
    static DUMMY: OnceLock<String> = OnceLock::new();
    DUMMY.get_or_init(|| hash_blocking("trusthub-dummy-password").unwrap_or_default())
}
