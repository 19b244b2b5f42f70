//! Password hashing with argon2id (m = 19 MiB, t = 2, p = 1: the OWASP recommendation) on a
//! small fixed pool of worker threads, each owning its 19 MiB work area.
//!
//! Why a pool: hashing on tokio's blocking pool allocated 19 MiB per hash, and glibc kept
//! those buffers in per-thread arenas: the hub grew past 1 GiB RSS under login load
//! (bench/RESULTS.md). A fixed pool bounds memory to workers × 19 MiB and CPU to `workers`
//! cores, whatever the login rate; excess requests queue.

use crate::error::ApiError;
use argon2::{Algorithm, Argon2, Block, Params, Version};
use data_encoding::BASE64_NOPAD;
use std::sync::{Arc, Mutex, OnceLock};
use tokio::sync::{mpsc, oneshot};

/// Memory cost in KiB.
const M_COST: u32 = 19 * 1024;
/// Iterations.
const T_COST: u32 = 2;
/// Lanes.
const P_COST: u32 = 1;
/// Hash length in bytes.
const OUT_LEN: usize = 32;

enum Job {
    Hash(String, oneshot::Sender<Result<String, String>>),
    Verify(
        String,
        Option<String>,
        oneshot::Sender<Result<bool, String>>,
    ),
}

fn pool() -> &'static mpsc::Sender<Job> {
    static POOL: OnceLock<mpsc::Sender<Job>> = OnceLock::new();
    POOL.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>(1024);
        let rx = Arc::new(Mutex::new(rx));
        let workers = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, 4);
        for i in 0..workers {
            let rx = rx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("argon2-{i}"))
                .spawn(move || {
                    let mut memory = vec![Block::new(); default_params().block_count()];
                    loop {
                        let job = match rx.lock() {
                            Ok(mut r) => r.blocking_recv(),
                            Err(_) => None,
                        };
                        match job {
                            Some(Job::Hash(pw, reply)) => {
                                let _ = reply.send(hash_with(&mut memory, &pw));
                            }
                            Some(Job::Verify(pw, phc, reply)) => {
                                let _ = reply.send(verify_with(&mut memory, &pw, phc.as_deref()));
                            }
                            None => return,
                        }
                    }
                });
            if let Err(e) = spawned {
                tracing::error!(error = %e, "cannot start a password-hashing thread");
            }
        }
        tx
    })
}

fn default_params() -> Params {
    Params::new(M_COST, T_COST, P_COST, Some(OUT_LEN)).unwrap_or_default()
}

fn internal(e: impl std::fmt::Display) -> ApiError {
    ApiError::Internal(format!("password hashing: {e}"))
}

/// Hashes a password to a PHC string (`$argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>`).
pub async fn hash(password: String) -> Result<String, ApiError> {
    let (tx, rx) = oneshot::channel();
    pool()
        .send(Job::Hash(password, tx))
        .await
        .map_err(internal)?;
    rx.await.map_err(internal)?.map_err(internal)
}

/// Hashes on the current thread (CLI and first start).
pub fn hash_blocking(password: &str) -> Result<String, ApiError> {
    let mut memory = vec![Block::new(); default_params().block_count()];
    hash_with(&mut memory, password).map_err(internal)
}

/// Checks a password against a PHC string. With `None` it checks against a fixed dummy
/// hash and returns false, so an unknown email costs as much time as a wrong password.
pub async fn verify(password: String, phc: Option<String>) -> Result<bool, ApiError> {
    let (tx, rx) = oneshot::channel();
    pool()
        .send(Job::Verify(password, phc, tx))
        .await
        .map_err(internal)?;
    rx.await.map_err(internal)?.map_err(internal)
}

fn hash_with(memory: &mut [Block], password: &str) -> Result<String, String> {
    let salt = trusthub_core::secret::random_bytes::<16>().map_err(|e| e.to_string())?;
    let params = default_params();
    let mut out = [0u8; OUT_LEN];
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
        .hash_password_into_with_memory(password.as_bytes(), &salt, &mut out, memory)
        .map_err(|e| e.to_string())?;
    Ok(format!(
        "$argon2id$v=19$m={M_COST},t={T_COST},p={P_COST}${}${}",
        BASE64_NOPAD.encode(&salt),
        BASE64_NOPAD.encode(&out)
    ))
}

/// The salt, expected hash and parameters of an argon2id PHC string.
fn parse_phc(phc: &str) -> Option<(Vec<u8>, Vec<u8>, Params)> {
    let parts: Vec<&str> = phc.split('$').collect();
    let ["", "argon2id", "v=19", params, salt, hash] = parts.as_slice() else {
        return None;
    };
    let (mut m, mut t, mut p) = (None, None, None);
    for kv in params.split(',') {
        let (k, v) = kv.split_once('=')?;
        let v: u32 = v.parse().ok()?;
        match k {
            "m" => m = Some(v),
            "t" => t = Some(v),
            "p" => p = Some(v),
            _ => {}
        }
    }
    let salt = BASE64_NOPAD.decode(salt.as_bytes()).ok()?;
    let hash = BASE64_NOPAD.decode(hash.as_bytes()).ok()?;
    let params = Params::new(m?, t?, p?, Some(hash.len())).ok()?;
    Some((salt, hash, params))
}

fn verify_with(memory: &mut [Block], password: &str, phc: Option<&str>) -> Result<bool, String> {
    static DUMMY: OnceLock<String> = OnceLock::new();
    let known = phc.is_some();
    let phc = match phc {
        Some(p) => p,
        None => {
            DUMMY.get_or_init(|| hash_with(memory, "trusthub-dummy-password").unwrap_or_default())
        }
    };
    let (salt, expected, params) =
        parse_phc(phc).ok_or("stored password hash is not argon2id v19 PHC")?;
    let mut out = vec![0u8; expected.len()];
    let argon = Argon2::new(Algorithm::Argon2id, Version::V0x13, params.clone());
    if params.block_count() == memory.len() {
        argon.hash_password_into_with_memory(password.as_bytes(), &salt, &mut out, &mut *memory)
    } else {
        argon.hash_password_into_with_memory(
            password.as_bytes(),
            &salt,
            &mut out,
            vec![Block::new(); params.block_count()],
        )
    }
    .map_err(|e| e.to_string())?;
    let same = out.len() == expected.len()
        && out
            .iter()
            .zip(&expected)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0;
    Ok(known && same)
}

#[cfg(test)]
mod tests {
    use super::*;
    use argon2::password_hash::{PasswordVerifier, phc::PasswordHash};

    #[test]
    fn phc_strings_verify_here_and_with_the_reference_verifier() {
        let mut mem = vec![Block::new(); default_params().block_count()];
        let phc = hash_with(&mut mem, "correct horse").expect("hash");
        assert!(phc.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"));
        assert_eq!(verify_with(&mut mem, "correct horse", Some(&phc)), Ok(true));
        assert_eq!(verify_with(&mut mem, "wrong horse", Some(&phc)), Ok(false));
        assert_eq!(verify_with(&mut mem, "correct horse", None), Ok(false));
        // The argon2 crate's own PHC verifier accepts what we wrote.
        let parsed = PasswordHash::new(&phc).expect("parse");
        assert!(
            Argon2::default()
                .verify_password(b"correct horse", &parsed)
                .is_ok()
        );
        assert!(verify_with(&mut mem, "x", Some("$argon2i$bogus")).is_err());
    }
}
