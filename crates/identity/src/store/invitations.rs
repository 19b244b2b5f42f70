//! Invitations: an owner invites an email with a role; the token (hashed here) lets the
//! invitee choose a password once before it expires.

use time::OffsetDateTime;
use trusthub_core::Role;
use trusthub_store::{Exec, StoreError, StoreResult, TenantId, on};
use uuid::Uuid;

/// An invitation as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invitation {
    /// Its id.
    pub id: Uuid,
    /// Its tenant.
    pub tenant_id: TenantId,
    /// Who is invited (lowercased).
    pub email: String,
    /// The role they will get.
    pub role: Role,
    /// Who invited them.
    pub invited_by: Option<Uuid>,
    /// When it was made.
    pub created_at: OffsetDateTime,
    /// When it stops working.
    pub expires_at: OffsetDateTime,
    /// When it was used.
    pub accepted_at: Option<OffsetDateTime>,
}

#[derive(sqlx::FromRow)]
struct Row {
    id: Uuid,
    tenant_id: Uuid,
    email: String,
    role: String,
    invited_by: Option<Uuid>,
    created_at: OffsetDateTime,
    expires_at: OffsetDateTime,
    accepted_at: Option<OffsetDateTime>,
}

impl TryFrom<Row> for Invitation {
    type Error = StoreError;
    fn try_from(r: Row) -> StoreResult<Invitation> {
        Ok(Invitation {
            id: r.id,
            tenant_id: TenantId(r.tenant_id),
            email: r.email,
            role: r
                .role
                .parse()
                .map_err(|_| StoreError::Corrupt("invitations.role"))?,
            invited_by: r.invited_by,
            created_at: r.created_at,
            expires_at: r.expires_at,
            accepted_at: r.accepted_at,
        })
    }
}

const COLUMNS: &str = "id, tenant_id, email, role, invited_by, created_at, expires_at, accepted_at";

/// Stores an invitation.
#[allow(clippy::too_many_arguments)]
pub async fn insert(
    ex: &mut impl Exec,
    tenant: TenantId,
    email: &str,
    role: Role,
    token_hash: &str,
    invited_by: Uuid,
    now: OffsetDateTime,
    expires_at: OffsetDateTime,
) -> StoreResult<Invitation> {
    let inv = Invitation {
        id: Uuid::now_v7(),
        tenant_id: tenant,
        email: email.to_owned(),
        role,
        invited_by: Some(invited_by),
        created_at: now,
        expires_at,
        accepted_at: None,
    };
    on!(ex, c => sqlx::query(
        "INSERT INTO invitations (id, tenant_id, email, role, token_hash, invited_by, created_at, expires_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)")
        .bind(inv.id).bind(tenant.0).bind(&inv.email).bind(role.as_str()).bind(token_hash).bind(invited_by)
        .bind(now).bind(expires_at).execute(&mut *c).await?.rows_affected());
    Ok(inv)
}

/// The tenant's invitations that were not accepted yet, newest first.
pub async fn list_pending(ex: &mut impl Exec, tenant: TenantId) -> StoreResult<Vec<Invitation>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM invitations WHERE tenant_id = $1 AND accepted_at IS NULL ORDER BY created_at DESC, id DESC"
    );
    let rows = on!(ex, c => sqlx::query_as::<_, Row>(sqlx::AssertSqlSafe(sql)).bind(tenant.0).fetch_all(&mut *c).await?);
    rows.into_iter().map(Invitation::try_from).collect()
}

/// Revokes an invitation that was not accepted yet.
pub async fn delete_pending(ex: &mut impl Exec, tenant: TenantId, id: Uuid) -> StoreResult<bool> {
    let n = on!(ex, c => sqlx::query("DELETE FROM invitations WHERE tenant_id = $1 AND id = $2 AND accepted_at IS NULL")
        .bind(tenant.0).bind(id).execute(&mut *c).await?.rows_affected());
    Ok(n == 1)
}

/// Marks the unexpired, unused invitation with this token hash as accepted and returns it.
/// The token names its tenant: the caller has no session yet.
pub async fn accept(
    ex: &mut impl Exec,
    token_hash: &str,
    now: OffsetDateTime,
) -> StoreResult<Option<Invitation>> {
    let sql = format!(
        "UPDATE invitations SET accepted_at = $1 WHERE token_hash = $2 AND accepted_at IS NULL AND expires_at > $1 RETURNING {COLUMNS}"
    );
    let row = on!(ex, c => sqlx::query_as::<_, Row>(sqlx::AssertSqlSafe(sql)).bind(now).bind(token_hash).fetch_optional(&mut *c).await?);
    row.map(Invitation::try_from).transpose()
}
