//! The services behind [`crate::routes::invitations`]: what its handlers, the dashboard's
//! pages and other capabilities call.

use crate::auth::Owner;
use crate::error::{ApiError, ApiResult};
use crate::extract::Meta;
use crate::ratelimit;
use crate::state::{AppState, now};
use crate::store::invitations;
use crate::store::invitations::Invitation;
use crate::store::users;
use serde::{Deserialize, Serialize};
use serde_json::json;
use time::OffsetDateTime;
use trusthub_core::secret::{ONE_TIME_PREFIX, new_token, token_hash};
use trusthub_core::{Role, audit as ev, validate};
use utoipa::ToSchema;
use uuid::Uuid;

/// How long an invitation stays valid.
pub(crate) const INVITATION_TTL: time::Duration = time::Duration::days(7);

/// Whom to invite, with which role.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewInvitation {
    /// Their email.
    #[schema(
        pattern = r"^[^\s@<>\x00-\x1f\x7f-\x9f]+@[^\s@<>.\x00-\x1f\x7f-\x9f]+(\.[^\s@<>.\x00-\x1f\x7f-\x9f]+)+$",
        max_length = 254
    )]
    pub email: String,
    /// `viewer`, `operator`, `admin` or `owner`.
    #[schema(pattern = r"^(viewer|operator|admin|owner)$")]
    pub role: String,
}

/// A created invitation; `token` is shown this once.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedInvitation {
    /// Id.
    pub id: Uuid,
    /// Invitee.
    pub email: String,
    /// Role they get.
    #[schema(value_type = String)]
    pub role: Role,
    /// For `/auth/accept-invite`; also mailed when SMTP is set.
    pub token: String,
    /// Seven days from now.
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
}

/// A pending invitation (never its token).
#[derive(Debug, Serialize, ToSchema)]
pub struct InvitationView {
    /// Id.
    pub id: Uuid,
    /// Invitee.
    pub email: String,
    /// Role they get.
    #[schema(value_type = String)]
    pub role: Role,
    /// Who invited them.
    pub invited_by: Option<Uuid>,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Until when it can be accepted.
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
}

impl From<Invitation> for InvitationView {
    fn from(i: Invitation) -> Self {
        InvitationView {
            id: i.id,
            email: i.email,
            role: i.role,
            invited_by: i.invited_by,
            created_at: i.created_at,
            expires_at: i.expires_at,
        }
    }
}

/// The service behind the `create` handler, for the API and the dashboard alike.
pub async fn create(
    state: &AppState,
    meta: &Meta,
    by: &Owner,
    req: NewInvitation,
) -> ApiResult<CreatedInvitation> {
    let p = &by.0;
    let mut errors = Vec::new();
    let email = validate::email(&req.email)
        .map_err(|m| errors.push(field("email", m)))
        .ok();
    let role = req
        .role
        .parse::<Role>()
        .map_err(|_| errors.push(field("role", "must be viewer, operator, admin or owner")))
        .ok();
    let (Some(email), Some(role)) = (email, role) else {
        return Err(ApiError::Validation(errors));
    };
    state
        .limiter
        .hit(
            ratelimit::INVITATIONS,
            &p.tenant().to_string(),
            now().unix_timestamp(),
        )
        .await?;
    {
        let mut c = state.db.conn().await?;
        // Only this tenant's own users are named (CONTRACT 18): an email another tenant
        // has gets the same answer as an unknown one, and its acceptance is refused then.
        if users::find_by_email_any_tenant(&mut c, &email)
            .await?
            .is_some_and(|u| u.tenant_id == p.tenant())
        {
            return Err(ApiError::Conflict(format!(
                "{email} is already a user of this tenant"
            )));
        }
    }
    let token = new_token(ONE_TIME_PREFIX).map_err(|e| ApiError::Internal(e.to_string()))?;
    let now = now();
    let mut tx = state.db.begin().await?;
    let inv = invitations::insert(
        &mut tx,
        p.tenant(),
        &email,
        role,
        &token_hash(&token),
        p.user.id,
        now,
        now + INVITATION_TTL,
    )
    .await?;
    meta.record(
        &mut tx,
        p,
        ev::INVITATION_CREATED,
        format!("invitation:{}", inv.id),
        json!({"email": email, "role": role}),
    )
    .await?;
    tx.commit().await?;
    if let Some(m) = &state.mailer {
        m.send_later(
            &email,
            "You are invited to Trusthub",
            format!(
                "{inviter} invited you to Trusthub as {role}.\n\n\
                 To accept, open\n{base}/invite?token={token}\n\nor POST {{\"token\": \"{token}\", \"password\": \"...\"}} to\n\
                 {base}/api/v1/auth/accept-invite\n\nToken: {token}\n\nThe invitation expires on {expires}.\n",
                inviter = p.user.email,
                base = state.public_url,
                expires = inv.expires_at,
            ),
        );
    }
    Ok(CreatedInvitation {
        id: inv.id,
        email,
        role,
        token,
        expires_at: inv.expires_at,
    })
}

pub(crate) fn field(name: &str, message: &str) -> crate::error::FieldError {
    crate::error::FieldError::new(name, message)
}

/// The service behind the `list` handler, for the API and the dashboard alike.
pub async fn list(state: &AppState, by: &Owner) -> ApiResult<Vec<InvitationView>> {
    let p = &by.0;
    let mut c = state.db.conn().await?;
    let list = invitations::list_pending(&mut c, p.tenant()).await?;
    Ok(list.into_iter().map(InvitationView::from).collect())
}

/// The service behind the `revoke` handler, for the API and the dashboard alike.
pub async fn revoke(state: &AppState, meta: &Meta, by: &Owner, id: Uuid) -> ApiResult<()> {
    let p = &by.0;
    let mut tx = state.db.begin().await?;
    if !invitations::delete_pending(&mut tx, p.tenant(), id).await? {
        return Err(ApiError::NotFound("invitation"));
    }
    meta.record(
        &mut tx,
        p,
        ev::INVITATION_REVOKED,
        format!("invitation:{id}"),
        json!({}),
    )
    .await?;
    tx.commit().await?;
    Ok(())
}
