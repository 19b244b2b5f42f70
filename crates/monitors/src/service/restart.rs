//! The services behind [`crate::routes::restart`]: what its handlers, the dashboard's
//! pages and other capabilities call.

use crate::auth::TotpProof;
use crate::auth::purpose::AppRestart;
use crate::error::{ApiError, ApiResult};
use crate::extract::{Meta, Path};
use crate::ratelimit;
use crate::state::{AppState, now};
use crate::store::apps;
use serde::Deserialize;
use serde_json::json;
use trusthub_core::Role;
use trusthub_fleet::actions::{ActionRequest, Dispatched};
use utoipa::ToSchema;
use uuid::Uuid;

/// Whether `id` is an app of `tenant` a restart can work on: an agent's unit, container,
/// compose service, or a process with a `restart_command` (404, 409 or 422 otherwise).
pub async fn restartable(
    state: &AppState,
    tenant: trusthub_store::TenantId,
    id: Uuid,
) -> ApiResult<apps::App> {
    let app = {
        let mut c = state.db.conn().await?;
        apps::get(&mut c, tenant, id)
            .await?
            .ok_or(ApiError::NotFound("app"))?
    };
    let kind = trusthub_core::apps::AppKind::parse(&app.app_type);
    if app.agent_id.is_none() || kind.is_some_and(|k| k.is_check()) {
        return Err(ApiError::Conflict(format!(
            "a {} check has nothing to restart",
            app.app_type
        )));
    }
    if kind == Some(trusthub_core::apps::AppKind::Process) && app.restart_command.is_none() {
        return Err(ApiError::invalid(
            "restart_command",
            "this process app has no restart command, so its agent cannot restart it; set one \
             (PATCH /apps/{id} with restart_command) first",
        ));
    }
    Ok(app)
}

/// The app a restart is for, checked before the TOTP code is looked at: a code is never
/// spent on a restart that cannot work (CONTRACT 27).
#[derive(Debug)]
pub struct RestartTarget(pub apps::App);

impl axum::extract::FromRequestParts<AppState> for RestartTarget {
    type Rejection = ApiError;
    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &AppState,
    ) -> Result<Self, ApiError> {
        let crate::auth::Viewer(p) = crate::auth::Viewer::from_request_parts(parts, state).await?;
        let Path(id) = Path::<Uuid>::from_request_parts(parts, state).await?;
        restartable(state, p.tenant(), id).await.map(RestartTarget)
    }
}

impl trusthub_platform::openapi::Documented for RestartTarget {
    fn document(d: &mut trusthub_platform::openapi::OpDoc) {
        // It reads the path's id, as the `Path` extractor it replaces did.
        <Path<Uuid> as trusthub_platform::openapi::Documented>::document(d);
    }
}

/// Why a restart is asked for.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RestartRequest {
    /// 1 to 500 characters; recorded in the action, the audit log and the token.
    pub reason: String,
}

/// The service behind the `restart` handler, for the API and the dashboard alike: `app` is what
/// [`restartable`] answered for the caller's tenant, `proof` the caller's spent TOTP code.
pub async fn restart(
    state: &AppState,
    meta: &Meta,
    proof: &TotpProof<AppRestart>,
    app: apps::App,
    req: RestartRequest,
) -> ApiResult<Dispatched> {
    let p = proof.principal.clone();
    if !p.has_role(Role::Admin) {
        return Err(ApiError::Forbidden(
            "restarting an app needs the admin role".into(),
        ));
    }
    let reason = req.reason.trim();
    if reason.is_empty() || reason.chars().count() > 500 {
        return Err(ApiError::invalid("reason", "must be 1 to 500 characters"));
    }
    let now = now();
    state
        .limiter
        .hit(
            ratelimit::EMERGENCY,
            &p.user.id.to_string(),
            now.unix_timestamp(),
        )
        .await?;
    if app.tenant_id != p.tenant().0 {
        return Err(ApiError::NotFound("app"));
    }
    let Some(agent_id) = app.agent_id else {
        return Err(ApiError::Conflict(
            "an app without an agent has nothing to restart".into(),
        ));
    };
    let dispatched = trusthub_fleet::actions::dispatch(
        state,
        meta,
        &p,
        ActionRequest {
            agent_id,
            app_id: Some(app.id),
            act: "restart_app",
            args: json!({"app_id": app.id, "app_type": app.app_type, "identifier": app.identifier,
                "restart_command": app.restart_command, "reason": reason}),
            reason,
            subject: format!("app:{}", app.id),
            jti: None,
        },
        now,
    )
    .await?;
    Ok(dispatched)
}
