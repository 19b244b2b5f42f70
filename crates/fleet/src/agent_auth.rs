//! An agent's own credential on the API: its bearer token (`tha_...`) and, when the request
//! carries a verified client certificate, the cross-check of that certificate (SPEC 5.6, 5.7).

use crate::error::ApiError;
use crate::state::AppState;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use trusthub_core::secret::token_hash;
use trusthub_identity::auth::bearer;

/// An agent, authenticated by its bearer token (`tha_...`). Its tenant is the agent's.
#[derive(Debug, Clone)]
pub struct AgentAuth(pub crate::store::agents::Agent);

impl FromRequestParts<AppState> for AgentAuth {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let token = bearer(&parts.headers)?;
        if !token.starts_with(trusthub_core::agent::AGENT_TOKEN_PREFIX) {
            return Err(ApiError::Unauthenticated(
                "expected an agent token (tha_...)".into(),
            ));
        }
        let agent = {
            let mut c = state.db.conn().await?;
            crate::store::agents::find_by_token(&mut c, &token_hash(token))
                .await?
                .ok_or_else(|| {
                    ApiError::Unauthenticated("unknown, rotated or deleted agent token".into())
                })?
        };
        let header = |name: &str| {
            parts
                .headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        if let Some(fingerprint) = header(trusthub_platform::middleware::CLIENT_VERIFIED) {
            let subject = header(trusthub_platform::middleware::CLIENT_SUBJECT).unwrap_or_default();
            let meta = crate::extract::Meta::from_request_parts(parts, state).await?;
            trusthub_certs::check::cross_check(
                state,
                &meta,
                trusthub_certs::AgentRef {
                    id: agent.id,
                    tenant_id: agent.tenant_id,
                    hostname: &agent.hostname,
                },
                &fingerprint,
                &subject,
            )
            .await?;
        }
        Ok(AgentAuth(agent))
    }
}

trusthub_platform::documented! {
    AgentAuth => |d| { d.schemes = Some(&["bearer"]); d.errors(&[401]) };
}
