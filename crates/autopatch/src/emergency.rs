//! Emergency actions on a host (CONTRACT 19, 30): the request, its check (the rule the agent
//! checks again) and the service behind `POST /agents/{id}/emergency` and the dashboard's
//! emergency menu — a signed action pushed to a connected host, TOTP-gated and rate-limited.

use serde::Deserialize;
use serde_json::json;
use trusthub_fleet::actions::{ActionRequest, Dispatched, Requester, dispatch_as, reachable};
use trusthub_identity::auth::purpose::AgentEmergency;
use trusthub_identity::auth::{Admin, TotpOffer, TotpProof};
use trusthub_platform::AppState;
use trusthub_platform::error::{ApiError, ApiResult};
use trusthub_platform::extract::Meta;
use trusthub_platform::ratelimit;
use utoipa::ToSchema;
use uuid::Uuid;

/// What to stop, and why.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EmergencyRequest {
    /// `kill_process` (target: a pid above 2; the agent also refuses itself, its ancestors
    /// and kernel threads), `stop_unit` (a systemd unit, never `trusthub-agent` or
    /// `trusthub`), `stop_container` (a container name or id), `lock_user` (a login name, not
    /// root: password locked and the account expired; the agent also refuses every UID 0
    /// account and the console user), `block_ip` (one IPv4 or IPv6 address, never loopback,
    /// unspecified, broadcast, multicast or link-local in any spelling, nor the hub's
    /// address as the agent reaches it; dropped with nftables, else iptables). Refused targets
    /// are 422 naming `target`, at the hub and again on the host (CONTRACT 30).
    #[schema(pattern = "^(kill_process|stop_unit|stop_container|lock_user|block_ip)$")]
    pub action: String,
    /// Always a string, checked for the action.
    #[schema(min_length = 1, max_length = 256)]
    pub target: String,
    /// 1 to 500 characters; kept in the action, the audit log and the token.
    #[schema(min_length = 1, max_length = 500)]
    pub reason: String,
}

/// Checks `req` by the rule the agent checks again (`trusthub_core::emergency`), and its
/// reason.
pub fn check(req: &EmergencyRequest) -> Result<(), ApiError> {
    trusthub_core::emergency::parse(&req.action, &req.target)
        .map_err(|r| ApiError::invalid(r.field, r.message))?;
    let reason = req.reason.trim();
    if reason.is_empty() || reason.chars().count() > 500 {
        return Err(ApiError::invalid("reason", "must be 1 to 500 characters"));
    }
    Ok(())
}

/// An emergency action on host `agent` (admin with a TOTP code for `agent_emergency`): the
/// host must be of the tenant and connected, the target pass [`check`]; then signed and sent.
pub async fn emergency(
    state: &AppState,
    meta: &Meta,
    by: &Admin,
    offer: &TotpOffer,
    agent: Uuid,
    req: EmergencyRequest,
) -> ApiResult<Dispatched> {
    let p = &by.0;
    {
        let mut c = state.db.conn().await?;
        trusthub_fleet::agent(&mut c, p.tenant(), agent)
            .await?
            .ok_or(ApiError::NotFound("agent"))?;
    }
    check(&req)?;
    if !reachable(state, agent).await? {
        return Err(ApiError::Conflict(
            "the agent is not connected; nothing was sent".into(),
        ));
    }
    let proof = TotpProof::<AgentEmergency>::from_offer(state, meta, p.clone(), offer).await?;
    let now = trusthub_platform::state::now();
    state
        .limiter
        .hit(
            ratelimit::EMERGENCY,
            &proof.principal.user.id.to_string(),
            now.unix_timestamp(),
        )
        .await?;
    let target = req.target.trim();
    let reason = req.reason.trim();
    dispatch_as(
        state,
        Requester::User(meta, &proof.principal),
        ActionRequest {
            agent_id: agent,
            app_id: None,
            act: "emergency",
            args: json!({"action": req.action, "target": target, "reason": reason}),
            reason,
            subject: format!("agent:{agent}"),
            jti: None,
        },
        now,
    )
    .await
}
