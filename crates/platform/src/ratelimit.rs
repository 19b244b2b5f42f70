//! Rate limits of SPEC section 8, as fixed windows.
//!
//! On PostgreSQL the counters live in the database (one atomic upsert per hit), so a limit
//! holds across every hub process sharing it. On SQLite the counters live in memory: the
//! hub holds an exclusive lock on the SQLite database's lock file, so exactly one hub process
//! serves a SQLite database and its in-memory count is the whole count.

use crate::error::{ApiError, RateInfo};
use std::collections::HashMap;
use std::sync::Mutex;
use trusthub_store::{Db, rate_limits};

/// One limit of SPEC section 8.
#[derive(Debug, Clone, Copy)]
pub struct Limit {
    /// Key prefix.
    pub name: &'static str,
    /// Hits per window.
    pub max: u32,
    /// Window length in seconds.
    pub window_secs: i64,
}

/// `/auth/login`: 10 per minute per IP.
pub const LOGIN: Limit = Limit::per("login", 10, 60);
/// `/auth/forgot-password`: 5 per hour per IP.
pub const FORGOT_PASSWORD: Limit = Limit::per("forgot", 5, 3600);
/// `/auth/totp/challenge`: 10 per minute per IP.
pub const TOTP_CHALLENGE: Limit = Limit::per("totp_challenge", 10, 60);
/// `POST /invitations`: 20 per hour per tenant.
pub const INVITATIONS: Limit = Limit::per("invitations", 20, 3600);
/// `/ingest`: 60 per minute per agent.
pub const INGEST: Limit = Limit::per("ingest", 60, 60);
/// `/agents/:id/rotate-token`: 10 per hour per user.
pub const ROTATE_TOKEN: Limit = Limit::per("rotate_token", 10, 3600);
/// `/agents/:id/rotate-signing-key`: 10 per hour per user.
pub const ROTATE_SIGNING_KEY: Limit = Limit::per("rotate_signing_key", 10, 3600);
/// `/agents/:id/emergency`: 5 per hour per user; app restarts count against it too.
pub const EMERGENCY: Limit = Limit::per("emergency", 5, 3600);
/// `POST /compliance/run`: 10 per hour per user (accepted runs only).
pub const COMPLIANCE_RUN: Limit = Limit::per("compliance_run", 10, 3600);
/// Every other user endpoint: 1000 per minute per IP.
pub const GENERAL: Limit = Limit::per("general", 1000, 60);

impl Limit {
    /// `max` hits per window of `window_secs`, counted under `name`.
    pub const fn per(name: &'static str, max: u32, window_secs: i64) -> Limit {
        Limit {
            name,
            max,
            window_secs,
        }
    }
}

enum Counter {
    Memory(Mutex<HashMap<String, (i64, u32)>>),
    Database(Db),
}

/// Counts hits and refuses those over a limit.
pub struct RateLimiter {
    enabled: bool,
    counter: Counter,
}

impl std::fmt::Debug for RateLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimiter")
            .field("enabled", &self.enabled)
            .finish_non_exhaustive()
    }
}

impl RateLimiter {
    /// In the database for PostgreSQL, in memory for SQLite (see the module doc).
    pub fn new(db: &Db, enabled: bool) -> RateLimiter {
        let counter = match db.backend() {
            trusthub_store::Backend::Postgres => Counter::Database(db.clone()),
            trusthub_store::Backend::Sqlite => Counter::Memory(Mutex::new(HashMap::new())),
        };
        RateLimiter { enabled, counter }
    }

    /// Whether limits apply.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Counts a hit of `subject` (an IP, a user or tenant id) against `limit` at `unix`.
    /// Answers the figures for the headers, or [`ApiError::RateLimited`] when over.
    pub async fn hit(
        &self,
        limit: Limit,
        subject: &str,
        unix: i64,
    ) -> Result<Option<RateInfo>, ApiError> {
        if !self.enabled {
            return Ok(None);
        }
        let window_start = unix - unix.rem_euclid(limit.window_secs);
        let key = format!("{}:{subject}", limit.name);
        let count: i64 = match &self.counter {
            Counter::Memory(map) => {
                let mut map = map
                    .lock()
                    .map_err(|_| ApiError::Internal("rate limiter lock poisoned".into()))?;
                if map.len() > 100_000 {
                    map.retain(|_, (w, _)| *w + 3600 > unix);
                }
                let entry = map.entry(key).or_insert((window_start, 0));
                if entry.0 != window_start {
                    *entry = (window_start, 0);
                }
                entry.1 = entry.1.saturating_add(1);
                i64::from(entry.1)
            }
            Counter::Database(db) => {
                let mut c = db.conn().await?;
                rate_limits::hit(&mut c, &key, window_start).await?
            }
        };
        let info = RateInfo {
            limit: limit.max,
            remaining: u32::try_from(i64::from(limit.max) - count).unwrap_or(0),
            reset_secs: u32::try_from(window_start + limit.window_secs - unix).unwrap_or(0),
        };
        if count > i64::from(limit.max) {
            return Err(ApiError::RateLimited(info));
        }
        Ok(Some(info))
    }

    /// Forgets windows that ended more than two hours before `unix`.
    pub async fn purge(&self, unix: i64) -> Result<(), ApiError> {
        match &self.counter {
            Counter::Memory(map) => {
                if let Ok(mut m) = map.lock() {
                    m.retain(|_, (w, _)| *w + 7200 > unix);
                }
            }
            Counter::Database(db) => {
                let mut c = db.conn().await?;
                rate_limits::purge(&mut c, unix - 7200).await?;
            }
        }
        Ok(())
    }
}
