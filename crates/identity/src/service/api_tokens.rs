//! The services behind [`crate::routes::api_tokens`]: what its handlers, the dashboard's
//! pages and other capabilities call.

use crate::auth::{SessionUser, Viewer};
use crate::error::{ApiError, ApiResult, FieldError};
use crate::extract::Meta;
use crate::state::{AppState, now};
use serde::{Deserialize, Serialize};
use serde_json::json;
use time::OffsetDateTime;
use trusthub_core::secret::{API_TOKEN_PREFIX, new_token, token_hash};
use trusthub_core::{Role, TokenScope, audit as ev, validate};

use crate::store::tokens::{self, ApiToken, NewToken};
use utoipa::ToSchema;
use uuid::Uuid;

/// A token to create.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewApiToken {
    /// Label, 1 to 100 characters.
    #[schema(
        pattern = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$",
        min_length = 1,
        max_length = 100
    )]
    pub name: String,
    /// `read` (viewer at most; the CI token), `write` (your role) or `ai_ingest` (AI traces only).
    #[schema(pattern = r"^(read|write|ai_ingest)$")]
    pub scope: String,
    /// Optional expiry, RFC 3339, in the future.
    #[serde(default, with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub expires_at: Option<OffsetDateTime>,
    /// `infrastructure` makes it a service account's token for configuration management
    /// (Ansible, Puppet, Terraform): a drift rebase it makes raises no ticket (CONTRACT 20).
    #[serde(default)]
    #[schema(pattern = r"^infrastructure$")]
    pub service: Option<String>,
}

/// A token as listed (never the secret).
#[derive(Debug, Serialize, ToSchema)]
pub struct ApiTokenView {
    /// Id.
    pub id: Uuid,
    /// Label.
    pub name: String,
    /// Scope.
    #[schema(value_type = String, example = "read")]
    pub scope: TokenScope,
    /// The user it acts for.
    pub user_id: Uuid,
    /// Its first characters, to recognise it.
    pub token_hint: String,
    /// Created.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Expiry, if any.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub expires_at: Option<OffsetDateTime>,
    /// Last use (to the minute).
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_used_at: Option<OffsetDateTime>,
    /// `infrastructure` for a service account's token, else null.
    pub service: Option<String>,
}

impl From<ApiToken> for ApiTokenView {
    fn from(t: ApiToken) -> Self {
        ApiTokenView {
            id: t.id,
            name: t.name,
            scope: t.scope,
            user_id: t.user_id,
            token_hint: t.token_hint,
            created_at: t.created_at,
            expires_at: t.expires_at,
            last_used_at: t.last_used_at,
            service: t.service,
        }
    }
}

/// A created token; `token` is shown this once and stored only as a hash.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedApiToken {
    /// Id.
    pub id: Uuid,
    /// Label.
    pub name: String,
    /// Scope.
    #[schema(value_type = String)]
    pub scope: TokenScope,
    /// `tht_...`: send as `Authorization: Bearer <token>`.
    pub token: String,
    /// Expiry, if any.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub expires_at: Option<OffsetDateTime>,
    /// Created.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// `infrastructure` or null.
    pub service: Option<String>,
}

/// The service behind the `create` handler, for the API and the dashboard alike.
pub async fn create(
    state: &AppState,
    meta: &Meta,
    by: &SessionUser,
    req: NewApiToken,
) -> ApiResult<CreatedApiToken> {
    let p = by.0.clone();
    let now = now();
    let mut errors = Vec::new();
    let name = validate::name(&req.name)
        .map_err(|m| errors.push(FieldError::new("name", m)))
        .ok();
    let scope = req
        .scope
        .parse::<TokenScope>()
        .map_err(|_| errors.push(FieldError::new("scope", "must be read, write or ai_ingest")))
        .ok();
    if req
        .service
        .as_deref()
        .is_some_and(|s| s != "infrastructure")
    {
        errors.push(FieldError::new(
            "service",
            "must be infrastructure (or absent)",
        ));
    }
    // CONTRACT 30: a service account's token silences drift tickets; only admins make one.
    if req.service.is_some() && !p.has_role(trusthub_core::Role::Admin) {
        return Err(ApiError::Forbidden(
            "only admins create infrastructure (service account) tokens".into(),
        ));
    }
    if req.expires_at.is_some_and(|e| e <= now) {
        errors.push(FieldError::new("expires_at", "must be in the future"));
    }
    let (Some(name), Some(scope), true) = (name, scope, errors.is_empty()) else {
        return Err(ApiError::Validation(errors));
    };
    let token = new_token(API_TOKEN_PREFIX).map_err(|e| ApiError::Internal(e.to_string()))?;
    let hint: String = token.chars().take(API_TOKEN_PREFIX.len() + 4).collect();
    let expires_at = req.expires_at.map(|e| {
        e.to_offset(time::UtcOffset::UTC)
            .replace_nanosecond(0)
            .unwrap_or(e)
    });
    let mut tx = state.db.begin().await?;
    let stored = tokens::insert(
        &mut tx,
        p.tenant(),
        &NewToken {
            user_id: p.user.id,
            name: &name,
            scope,
            token_hash: &token_hash(&token),
            token_hint: &hint,
            expires_at,
            service: req.service.as_deref(),
        },
        now,
    )
    .await?;
    meta.record(
        &mut tx,
        &p,
        ev::API_TOKEN_CREATED,
        format!("api_token:{}", stored.id),
        json!({"name": name, "scope": scope, "service": req.service}),
    )
    .await?;
    tx.commit().await?;
    Ok(CreatedApiToken {
        id: stored.id,
        name,
        scope,
        token,
        expires_at,
        created_at: now,
        service: req.service,
    })
}

/// The service behind the `list` handler, for the API and the dashboard alike.
pub async fn list(state: &AppState, by: &Viewer) -> ApiResult<Vec<ApiTokenView>> {
    let p = &by.0;
    let only = (!p.has_role(Role::Admin)).then_some(p.user.id);
    let mut c = state.db.conn().await?;
    let list = tokens::list(&mut c, p.tenant(), only).await?;
    Ok(list.into_iter().map(ApiTokenView::from).collect())
}

/// The service behind the `delete` handler, for the API and the dashboard alike.
pub async fn delete(state: &AppState, meta: &Meta, by: &Viewer, id: Uuid) -> ApiResult<()> {
    let p = &by.0;
    p.may_change()?;
    let only = (!p.has_role(Role::Admin)).then_some(p.user.id);
    let mut tx = state.db.begin().await?;
    if !tokens::delete(&mut tx, p.tenant(), id, only).await? {
        return Err(ApiError::NotFound("API token"));
    }
    meta.record(
        &mut tx,
        p,
        ev::API_TOKEN_DELETED,
        format!("api_token:{id}"),
        json!({}),
    )
    .await?;
    tx.commit().await?;
    Ok(())
}
