//! An agent's own credential on the API: its bearer token (`tha_...`) and, when the request
//! carries a verified client certificate, the cross-check of that certificate (SPEC 5.6, 5.7).

use crate::error::ApiError;
use crate::ingest::{Ingest, Snapshot};
use crate::state::AppState;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use std::sync::Arc;
use trusthub_core::secret::token_hash;
use trusthub_identity::auth::bearer;

/// An agent, authenticated by its bearer token (`tha_...`). Its tenant is the agent's.
#[derive(Debug, Clone)]
pub struct AgentAuth(pub crate::store::agents::Agent);

impl FromRequestParts<AppState> for AgentAuth {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let hash = token_hash(agent_token(parts)?);
        let agent = read(state, &hash).await?;
        cross_check(parts, state, &agent).await?;
        Ok(AgentAuth(agent))
    }
}

/// An agent authenticated for ingest: from what [`crate::ingest::AgentCache`] holds for its
/// token when it holds it (`cached`), else read. Ingest's writer stores a batch only if the
/// agent still stands as `agent` with this token; when it does not, or a signature fails a
/// cached key, the request reads the agent again with [`IngestAuth::reread`].
#[derive(Debug)]
pub struct IngestAuth {
    /// The agent and its pinned key.
    pub agent: Arc<Snapshot>,
    /// The hash of the token.
    pub token_hash: String,
    /// True: `agent` came from the cache and may be out of date.
    pub cached: bool,
    /// The request counts as on its way to ingest's writer until its batch is queued.
    pub arriving: Option<crate::ingest::Arriving>,
}

impl IngestAuth {
    /// The agent read again (the cache then holds it).
    pub async fn reread(&mut self, state: &AppState) -> Result<(), ApiError> {
        let cache = state.part::<Ingest>().agents();
        cache.forget(&self.token_hash);
        self.agent = snapshot(read(state, &self.token_hash).await?);
        cache.put(&self.token_hash, self.agent.clone());
        self.cached = false;
        Ok(())
    }
}

impl FromRequestParts<AppState> for IngestAuth {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let token_hash = token_hash(agent_token(parts)?);
        let ingest = state.part::<Ingest>();
        let arriving = Some(ingest.arriving());
        let cache = ingest.agents();
        let auth = match cache.get(&token_hash) {
            Some(agent) => IngestAuth {
                agent,
                token_hash,
                cached: true,
                arriving,
            },
            None => {
                let agent = snapshot(read(state, &token_hash).await?);
                cache.put(&token_hash, agent.clone());
                IngestAuth {
                    agent,
                    token_hash,
                    cached: false,
                    arriving,
                }
            }
        };
        cross_check(parts, state, &auth.agent.agent).await?;
        Ok(auth)
    }
}

/// An agent's row with its pinned key read.
fn snapshot(agent: crate::store::agents::Agent) -> Arc<Snapshot> {
    let key = agent
        .signing_pubkey
        .as_deref()
        .and_then(|k| trusthub_core::agent::parse_public_key(k).ok());
    Arc::new(Snapshot { agent, key })
}

/// The request's agent token.
fn agent_token(parts: &Parts) -> Result<&str, ApiError> {
    let token = bearer(&parts.headers)?;
    if !token.starts_with(trusthub_core::agent::AGENT_TOKEN_PREFIX) {
        return Err(ApiError::Unauthenticated(
            "expected an agent token (tha_...)".into(),
        ));
    }
    Ok(token)
}

/// The agent holding a token, read.
async fn read(state: &AppState, hash: &str) -> Result<crate::store::agents::Agent, ApiError> {
    let mut c = state.db.conn().await?;
    crate::store::agents::find_by_token(&mut c, hash)
        .await?
        .ok_or_else(|| ApiError::Unauthenticated("unknown, rotated or deleted agent token".into()))
}

/// With a verified client certificate on the request: the certificate must be this agent's.
async fn cross_check(
    parts: &mut Parts,
    state: &AppState,
    agent: &crate::store::agents::Agent,
) -> Result<(), ApiError> {
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
    Ok(())
}

trusthub_platform::documented! {
    AgentAuth => |d| { d.schemes = Some(&["bearer"]); d.errors(&[401]) };
    IngestAuth => |d| { d.schemes = Some(&["bearer"]); d.errors(&[401]) };
}
