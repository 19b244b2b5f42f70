//! The services behind [`crate::routes::totp`]: what its handlers, the dashboard's
//! pages and other capabilities call.

use crate::auth::{SessionUser, TOTP_SEAL_CONTEXT, check_code};
use crate::error::{ApiError, ApiResult};
use crate::extract::Meta;
use crate::ratelimit;
use crate::state::{AppState, now};
use crate::store::users;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::json;
use time::OffsetDateTime;
use trusthub_core::secret::{ONE_TIME_PREFIX, new_token, random_bytes, token_hash};
use trusthub_core::{TotpPurpose, audit as ev, totp};
use utoipa::ToSchema;

/// Lifetime of a challenge token (CONTRACT 3: 5 minutes).
pub(crate) const CHALLENGE_TTL: time::Duration = time::Duration::minutes(5);

/// A new secret to load into an authenticator app.
#[derive(Debug, Serialize, ToSchema)]
pub struct TotpSetup {
    /// The secret in base32.
    pub secret_base32: String,
    /// `otpauth://totp/...` for a QR code.
    pub otpauth_uri: String,
}

/// The service behind the `setup` handler, for the API and the dashboard alike.
pub async fn setup(state: &AppState, by: &SessionUser) -> ApiResult<TotpSetup> {
    let p = by.0.clone();
    if p.user.totp_enabled {
        return Err(ApiError::Conflict(
            "TOTP is already enabled; disable it first to enrol a new secret".into(),
        ));
    }
    let secret = random_bytes::<20>().map_err(|e| ApiError::Internal(e.to_string()))?;
    let sealed = state
        .key
        .seal(TOTP_SEAL_CONTEXT, &secret)
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    let mut tx = state.db.begin().await?;
    users::set_totp(&mut tx, p.tenant(), p.user.id, Some(&sealed), false).await?;
    tx.commit().await?;
    Ok(TotpSetup {
        secret_base32: totp::secret_base32(&secret),
        otpauth_uri: totp::otpauth_uri("Trusthub", &p.user.email, &secret),
    })
}

/// A TOTP code.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CodeRequest {
    /// Six digits.
    pub code: String,
}

/// Whether TOTP is now on.
#[derive(Debug, Serialize, ToSchema)]
pub struct TotpStatus {
    /// True after verify, false after disable.
    pub totp_enabled: bool,
    /// After verify: ten single-use recovery codes, shown this once (stored hashed). Each
    /// logs in once in place of a TOTP code; keep them offline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery_codes: Option<Vec<String>>,
}

/// New recovery codes.
#[derive(Debug, Serialize, ToSchema)]
pub struct RecoveryCodes {
    /// Ten single-use codes, shown this once; the previous ones no longer work.
    pub recovery_codes: Vec<String>,
}

/// Makes and stores (hashed) a new set of recovery codes for `p`, in `tx`, and audits it.
pub(crate) async fn new_recovery_codes(
    tx: &mut trusthub_store::Tx,
    meta: &Meta,
    p: &crate::auth::Principal,
) -> ApiResult<Vec<String>> {
    let mut codes = Vec::with_capacity(totp::RECOVERY_CODES);
    for _ in 0..totp::RECOVERY_CODES {
        let bytes = random_bytes::<10>().map_err(|e| ApiError::Internal(e.to_string()))?;
        codes.push(totp::recovery_code(&bytes));
    }
    let hashes: Vec<String> = codes
        .iter()
        .filter_map(|c| totp::normalize_recovery_code(c))
        .map(|c| trusthub_core::secret::token_hash(&c))
        .collect();
    crate::store::totp::replace_recovery_codes(tx, p.user.id, &hashes, now()).await?;
    let detail = json!({"count": codes.len()});
    meta.record(tx, p, ev::TOTP_RECOVERY_CODES_CREATED, p.actor(), detail)
        .await?;
    Ok(codes)
}

/// The service behind the `verify` handler, for the API and the dashboard alike.
pub async fn verify(
    state: &AppState,
    meta: &Meta,
    by: &SessionUser,
    req: CodeRequest,
) -> ApiResult<TotpStatus> {
    let p = by.0.clone();
    if p.user.totp_enabled {
        return Err(ApiError::Conflict("TOTP is already enabled".into()));
    }
    let Some(sealed) = p.user.totp_secret_sealed.clone() else {
        return Err(ApiError::Conflict("call /auth/totp/setup first".into()));
    };
    check_code(state, meta, &p.user, &req.code, StatusCode::FORBIDDEN).await?;
    let mut tx = state.db.begin().await?;
    users::set_totp(&mut tx, p.tenant(), p.user.id, Some(&sealed), true).await?;
    meta.record(&mut tx, &p, ev::TOTP_ENABLED, p.actor(), json!({}))
        .await?;
    let codes = new_recovery_codes(&mut tx, meta, &p).await?;
    tx.commit().await?;
    Ok(TotpStatus {
        totp_enabled: true,
        recovery_codes: Some(codes),
    })
}

/// Checks that `p` has TOTP on and `code` is a current, unused code of it (403 otherwise).
pub(crate) async fn current_code(
    state: &AppState,
    meta: &Meta,
    p: &crate::auth::Principal,
    code: &str,
) -> ApiResult<()> {
    if !p.user.totp_enabled {
        return Err(ApiError::Totp {
            status: StatusCode::FORBIDDEN,
            code: "totp_not_enrolled",
            detail: "TOTP is not enabled".into(),
        });
    }
    check_code(state, meta, &p.user, code, StatusCode::FORBIDDEN).await
}

/// The service behind the `disable` handler, for the API and the dashboard alike.
pub async fn disable(
    state: &AppState,
    meta: &Meta,
    by: &SessionUser,
    req: CodeRequest,
) -> ApiResult<TotpStatus> {
    let p = by.0.clone();
    current_code(state, meta, &p, &req.code).await?;
    let mut tx = state.db.begin().await?;
    users::set_totp(&mut tx, p.tenant(), p.user.id, None, false).await?;
    crate::store::totp::replace_recovery_codes(&mut tx, p.user.id, &[], now()).await?;
    meta.record(&mut tx, &p, ev::TOTP_DISABLED, p.actor(), json!({}))
        .await?;
    tx.commit().await?;
    Ok(TotpStatus {
        totp_enabled: false,
        recovery_codes: None,
    })
}

/// The service behind the `recovery_codes` handler, for the API and the dashboard alike.
pub async fn recovery_codes(
    state: &AppState,
    meta: &Meta,
    by: &SessionUser,
    req: CodeRequest,
) -> ApiResult<RecoveryCodes> {
    let p = by.0.clone();
    current_code(state, meta, &p, &req.code).await?;
    let mut tx = state.db.begin().await?;
    let codes = new_recovery_codes(&mut tx, meta, &p).await?;
    tx.commit().await?;
    Ok(RecoveryCodes {
        recovery_codes: codes,
    })
}

/// A code to trade for a purpose-bound token.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChallengeRequest {
    /// Six digits.
    pub code: String,
    /// `app_restart`, `console_start`, `agent_auto_patch`, `auto_update_all` or `agent_emergency`.
    #[schema(
        pattern = r"^(app_restart|console_start|agent_auto_patch|auto_update_all|agent_emergency)$"
    )]
    pub purpose: String,
}

/// A single-use token for one purpose.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChallengeToken {
    /// Send as `X-TOTP-Token`.
    pub totp_token: String,
    /// What it may be spent on.
    pub purpose: String,
    /// Five minutes from now.
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
}

/// The service behind the `challenge` handler, for the API and the dashboard alike.
pub async fn challenge(
    state: &AppState,
    meta: &Meta,
    by: &SessionUser,
    req: ChallengeRequest,
) -> ApiResult<(StatusCode, ChallengeToken)> {
    let p = &by.0;
    state
        .limiter
        .hit(
            ratelimit::TOTP_CHALLENGE,
            &meta.ip.to_string(),
            now().unix_timestamp(),
        )
        .await?;
    let purpose: TotpPurpose = req
        .purpose
        .parse()
        .map_err(|_| ApiError::invalid("purpose", "must be one of app_restart, console_start, agent_auto_patch, auto_update_all, agent_emergency"))?;
    if !p.user.totp_enabled {
        return Err(ApiError::Totp {
            status: StatusCode::FORBIDDEN,
            code: "totp_not_enrolled",
            detail: "TOTP is not enabled for this user".into(),
        });
    }
    check_code(state, meta, &p.user, &req.code, StatusCode::FORBIDDEN).await?;
    let token = new_token(ONE_TIME_PREFIX).map_err(|e| ApiError::Internal(e.to_string()))?;
    let now = now();
    let expires_at = now + CHALLENGE_TTL;
    let mut tx = state.db.begin().await?;
    crate::store::totp::insert_challenge(
        &mut tx,
        p.tenant(),
        p.user.id,
        &token_hash(&token),
        purpose,
        now,
        expires_at,
    )
    .await?;
    meta.record(
        &mut tx,
        p,
        ev::TOTP_CHALLENGE_ISSUED,
        p.actor(),
        json!({"purpose": purpose.as_str()}),
    )
    .await?;
    tx.commit().await?;
    Ok((
        StatusCode::CREATED,
        ChallengeToken {
            totp_token: token,
            purpose: purpose.as_str().to_owned(),
            expires_at,
        },
    ))
}
