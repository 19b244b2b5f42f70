//! Response shapes shared by several resources.

use crate::store::users::User;
use serde::Serialize;
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

/// A user as the API shows it (never the password hash or TOTP secret).
#[derive(Debug, Serialize, ToSchema)]
pub struct UserView {
    /// Id.
    pub id: Uuid,
    /// Email (lowercase).
    pub email: String,
    /// `viewer`, `operator`, `admin` or `owner`.
    #[schema(value_type = String, example = "admin")]
    pub role: trusthub_core::Role,
    /// Tenant.
    pub tenant_id: Uuid,
    /// Whether login asks for a TOTP code.
    pub totp_enabled: bool,
    /// When the user was created.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

impl From<&User> for UserView {
    fn from(u: &User) -> Self {
        UserView {
            id: u.id,
            email: u.email.clone(),
            role: u.role,
            tenant_id: u.tenant_id.0,
            totp_enabled: u.totp_enabled,
            created_at: u.created_at,
        }
    }
}

/// `{user}`: the answer of login and accept-invite.
#[derive(Debug, Serialize, ToSchema)]
pub struct UserEnvelope {
    /// The user.
    pub user: UserView,
}
