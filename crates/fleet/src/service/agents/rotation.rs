//! Token and signing-key rotation.

use super::*;

/// A new agent token, shown once.
#[derive(Debug, Serialize, ToSchema)]
pub struct RotatedToken {
    /// The agent.
    pub agent_id: Uuid,
    /// `tha_...`: the old token stopped working.
    pub agent_token: String,
}

/// The service behind the `rotate_token` handler, for the API and the dashboard alike.
pub async fn rotate_token(
    state: &AppState,
    meta: &Meta,
    by: &Admin,
    id: Uuid,
) -> ApiResult<RotatedToken> {
    let p = &by.0;
    state
        .limiter
        .hit(
            ratelimit::ROTATE_TOKEN,
            &p.user.id.to_string(),
            now().unix_timestamp(),
        )
        .await?;
    let token = new_token(AGENT_TOKEN_PREFIX).map_err(|e| ApiError::Internal(e.to_string()))?;
    let mut tx = state.db.begin().await?;
    if !agents::set_token(&mut tx, p.tenant(), id, &token_hash(&token)).await? {
        return Err(ApiError::NotFound("agent"));
    }
    meta.record(
        &mut tx,
        p,
        ev::AGENT_TOKEN_ROTATED,
        format!("agent:{id}"),
        json!({}),
    )
    .await?;
    tx.commit().await?;
    Ok(RotatedToken {
        agent_id: id,
        agent_token: token,
    })
}

/// Whether a key is pinned now.
#[derive(Debug, Serialize, ToSchema)]
pub struct SigningKeyState {
    /// The agent.
    pub agent_id: Uuid,
    /// False: the next registration of this machine pins a key again.
    pub signing_key_pinned: bool,
}

/// The service behind the `rotate_signing_key` handler, for the API and the dashboard alike.
pub async fn rotate_signing_key(
    state: &AppState,
    meta: &Meta,
    by: &Admin,
    id: Uuid,
) -> ApiResult<SigningKeyState> {
    let p = &by.0;
    state
        .limiter
        .hit(
            ratelimit::ROTATE_SIGNING_KEY,
            &p.user.id.to_string(),
            now().unix_timestamp(),
        )
        .await?;
    let mut tx = state.db.begin().await?;
    if !agents::clear_signing_key(&mut tx, p.tenant(), id).await? {
        return Err(ApiError::NotFound("agent"));
    }
    meta.record(
        &mut tx,
        p,
        ev::AGENT_SIGNING_KEY_CLEARED,
        format!("agent:{id}"),
        json!({}),
    )
    .await?;
    tx.commit().await?;
    Ok(SigningKeyState {
        agent_id: id,
        signing_key_pinned: false,
    })
}
