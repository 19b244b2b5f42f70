//! Enrolment tokens and the EAT public key.

use super::*;

/// An enrollment token to create.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewEnrollmentToken {
    /// Until when it enrols agents (default 24 h from now).
    #[serde(default, with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub expires_at: Option<OffsetDateTime>,
    /// Tags every agent enrolled with it gets.
    #[serde(default)]
    #[schema(value_type = Vec<crate::openapi::Tag>, max_items = 32)]
    pub tags: Vec<String>,
    /// It enrols one host only (spent by the first registration), as the install command
    /// of a cloud machine without an agent uses.
    #[serde(default)]
    pub single_use: bool,
}

/// A created enrollment token, shown once.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedEnrollmentToken {
    /// Id.
    pub id: Uuid,
    /// `the_...`: pass to `trusthub-agent --enroll`.
    pub token: String,
    /// Expiry.
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    /// Tags given to enrolled agents.
    pub tags: Vec<String>,
}

/// Makes an enrolment token for `p`'s tenant (the API and the dashboard), audited; the
/// token is in this answer only.
pub(crate) async fn new_enrollment_token(
    state: &AppState,
    meta: &Meta,
    p: &crate::auth::Principal,
    req: NewEnrollmentToken,
) -> ApiResult<CreatedEnrollmentToken> {
    let now = now();
    let tags =
        trusthub_core::validate::tags(&req.tags).map_err(|m| ApiError::invalid("tags", m))?;
    let expires_at = match req.expires_at {
        Some(e) if e <= now => {
            return Err(ApiError::invalid("expires_at", "must be in the future"));
        }
        Some(e) => e
            .to_offset(time::UtcOffset::UTC)
            .replace_nanosecond(0)
            .unwrap_or(e),
        None => now + ENROLLMENT_TTL,
    };
    let token =
        new_token(ENROLLMENT_TOKEN_PREFIX).map_err(|e| ApiError::Internal(e.to_string()))?;
    let mut tx = state.db.begin().await?;
    let id = agents::insert_enrollment_token(
        &mut tx,
        &agents::NewEnrollmentToken {
            tenant: p.tenant(),
            token_hash: &token_hash(&token),
            tags: &tags,
            created_by: Some(p.user.id),
            now,
            expires_at,
            single_use: req.single_use,
        },
    )
    .await?;
    meta.record(
        &mut tx,
        p,
        ev::ENROLLMENT_TOKEN_CREATED,
        format!("enrollment_token:{id}"),
        json!({"tags": tags, "expires_at": trusthub_platform::state::rfc3339(expires_at), "single_use": req.single_use}),
    )
    .await?;
    tx.commit().await?;
    Ok(CreatedEnrollmentToken {
        id,
        token,
        expires_at,
        tags,
    })
}

/// An enrollment token as listed (never the token itself).
#[derive(Debug, Serialize, ToSchema)]
pub struct EnrollmentTokenView {
    /// Id.
    pub id: Uuid,
    /// Tags given to enrolled agents.
    pub tags: Vec<String>,
    /// Who created it.
    pub created_by: Option<Uuid>,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Until when it enrols.
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
}

/// The hub's public key for emergency action tokens.
#[derive(Debug, Serialize, ToSchema)]
pub struct EatPublicKey {
    /// `EdDSA` (Ed25519, RFC 8037).
    pub alg: String,
    /// Key id, as in the `kid` header of every token.
    pub kid: String,
    /// The Ed25519 public key, hex.
    pub public_key_hex: String,
}
