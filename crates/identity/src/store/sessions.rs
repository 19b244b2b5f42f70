//! Server-side sessions: the cookie carries a random token, the table its SHA-256, so a
//! session is revoked by deleting its row.

use crate::store::users::{COLUMNS, User, UserRow};
use time::OffsetDateTime;
use trusthub_store::{Exec, StoreResult, TenantId, on};
use uuid::Uuid;

/// A session with its user.
#[derive(Debug, Clone)]
pub struct SessionWithUser {
    /// Session id.
    pub session_id: Uuid,
    /// Its user.
    pub user: User,
}

#[derive(sqlx::FromRow)]
struct Row {
    session_id: Uuid,
    #[sqlx(flatten)]
    user: UserRow,
}

/// Records a new session.
#[allow(clippy::too_many_arguments)]
pub async fn insert(
    ex: &mut impl Exec,
    tenant: TenantId,
    user_id: Uuid,
    token_hash: &str,
    now: OffsetDateTime,
    expires_at: OffsetDateTime,
    ip: Option<&str>,
    user_agent: Option<&str>,
) -> StoreResult<Uuid> {
    let id = Uuid::now_v7();
    on!(ex, c => sqlx::query(
        "INSERT INTO sessions (id, tenant_id, user_id, token_hash, created_at, expires_at, ip, user_agent) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)")
        .bind(id).bind(tenant.0).bind(user_id).bind(token_hash).bind(now).bind(expires_at).bind(ip).bind(user_agent)
        .execute(&mut *c).await?.rows_affected());
    Ok(id)
}

/// The live session with this token hash, and its user.
pub async fn find(
    ex: &mut impl Exec,
    token_hash: &str,
    now: OffsetDateTime,
) -> StoreResult<Option<SessionWithUser>> {
    let sql = format!(
        "SELECT sessions.id AS session_id, {COLUMNS} \
         FROM sessions JOIN users ON users.id = sessions.user_id \
         WHERE sessions.token_hash = $1 AND sessions.expires_at > $2"
    );
    let row = on!(ex, c => sqlx::query_as::<_, Row>(sqlx::AssertSqlSafe(sql)).bind(token_hash).bind(now).fetch_optional(&mut *c).await?);
    row.map(|r| {
        Ok(SessionWithUser {
            session_id: r.session_id,
            user: User::try_from(r.user)?,
        })
    })
    .transpose()
}

/// Ends one session.
pub async fn delete(ex: &mut impl Exec, tenant: TenantId, session_id: Uuid) -> StoreResult<bool> {
    let n = on!(ex, c => sqlx::query("DELETE FROM sessions WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.0).bind(session_id).execute(&mut *c).await?.rows_affected());
    Ok(n == 1)
}

/// Ends every session of a user (password reset, role change, removal); returns how many.
pub async fn delete_for_user(
    ex: &mut impl Exec,
    tenant: TenantId,
    user_id: Uuid,
) -> StoreResult<u64> {
    Ok(
        on!(ex, c => sqlx::query("DELETE FROM sessions WHERE tenant_id = $1 AND user_id = $2")
        .bind(tenant.0).bind(user_id).execute(&mut *c).await?.rows_affected()),
    )
}

/// Deletes expired sessions hub-wide (housekeeping).
pub async fn purge_expired(ex: &mut impl Exec, now: OffsetDateTime) -> StoreResult<u64> {
    Ok(
        on!(ex, c => sqlx::query("DELETE FROM sessions WHERE expires_at <= $1")
        .bind(now).execute(&mut *c).await?.rows_affected()),
    )
}
