//! Users: members of one tenant with a role, an argon2id password hash and optional TOTP.

use time::OffsetDateTime;
use trusthub_core::Role;
use trusthub_store::{Exec, StoreError, StoreResult, TenantId, on};
use uuid::Uuid;

/// A user as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// Its id.
    pub id: Uuid,
    /// Its tenant.
    pub tenant_id: TenantId,
    /// Lowercased, unique across the hub (login takes no tenant).
    pub email: String,
    /// argon2id PHC string.
    pub password_hash: String,
    /// Role in the tenant.
    pub role: Role,
    /// TOTP secret, AES-256-GCM sealed with the hub key; set from setup on.
    pub totp_secret_sealed: Option<Vec<u8>>,
    /// Whether TOTP was verified and is required at login.
    pub totp_enabled: bool,
    /// When it was created.
    pub created_at: OffsetDateTime,
    /// When the password last changed.
    pub password_changed_at: OffsetDateTime,
}

/// The row as the database returns it.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct UserRow {
    id: Uuid,
    tenant_id: Uuid,
    email: String,
    password_hash: String,
    role: String,
    totp_secret_sealed: Option<Vec<u8>>,
    totp_enabled: bool,
    created_at: OffsetDateTime,
    password_changed_at: OffsetDateTime,
}

impl TryFrom<UserRow> for User {
    type Error = StoreError;
    fn try_from(r: UserRow) -> StoreResult<User> {
        Ok(User {
            id: r.id,
            tenant_id: TenantId(r.tenant_id),
            email: r.email,
            password_hash: r.password_hash,
            role: r
                .role
                .parse()
                .map_err(|_| StoreError::Corrupt("users.role"))?,
            totp_secret_sealed: r.totp_secret_sealed,
            totp_enabled: r.totp_enabled,
            created_at: r.created_at,
            password_changed_at: r.password_changed_at,
        })
    }
}

pub(crate) const COLUMNS: &str = "users.id, users.tenant_id, users.email, users.password_hash, users.role, \
    users.totp_secret_sealed, users.totp_enabled, users.created_at, users.password_changed_at";

/// Creates a user; a taken email is a [`StoreError::Conflict`].
pub async fn insert(
    ex: &mut impl Exec,
    tenant: TenantId,
    email: &str,
    password_hash: &str,
    role: Role,
    now: OffsetDateTime,
) -> StoreResult<User> {
    let u = User {
        id: Uuid::now_v7(),
        tenant_id: tenant,
        email: email.to_owned(),
        password_hash: password_hash.to_owned(),
        role,
        totp_secret_sealed: None,
        totp_enabled: false,
        created_at: now,
        password_changed_at: now,
    };
    on!(ex, c => sqlx::query(
        "INSERT INTO users (id, tenant_id, email, password_hash, role, totp_enabled, created_at, password_changed_at) \
         VALUES ($1, $2, $3, $4, $5, FALSE, $6, $6)")
        .bind(u.id).bind(tenant.0).bind(&u.email).bind(&u.password_hash).bind(role.as_str()).bind(now)
        .execute(&mut *c).await?.rows_affected());
    Ok(u)
}

/// One user of the tenant.
pub async fn get(ex: &mut impl Exec, tenant: TenantId, id: Uuid) -> StoreResult<Option<User>> {
    let sql = format!("SELECT {COLUMNS} FROM users WHERE tenant_id = $1 AND id = $2");
    let row = on!(ex, c => sqlx::query_as::<_, UserRow>(sqlx::AssertSqlSafe(sql)).bind(tenant.0).bind(id).fetch_optional(&mut *c).await?);
    row.map(User::try_from).transpose()
}

/// The user with this email in any tenant. Only login and password-reset requests use it:
/// they are the one place where the caller names no tenant, and emails are unique hub-wide.
pub async fn find_by_email_any_tenant(
    ex: &mut impl Exec,
    email: &str,
) -> StoreResult<Option<User>> {
    let sql = format!("SELECT {COLUMNS} FROM users WHERE email = $1");
    let row = on!(ex, c => sqlx::query_as::<_, UserRow>(sqlx::AssertSqlSafe(sql)).bind(email).fetch_optional(&mut *c).await?);
    row.map(User::try_from).transpose()
}

/// The users of a tenant, oldest first.
pub async fn list(ex: &mut impl Exec, tenant: TenantId) -> StoreResult<Vec<User>> {
    let sql = format!("SELECT {COLUMNS} FROM users WHERE tenant_id = $1 ORDER BY created_at, id");
    let rows = on!(ex, c => sqlx::query_as::<_, UserRow>(sqlx::AssertSqlSafe(sql)).bind(tenant.0).fetch_all(&mut *c).await?);
    rows.into_iter().map(User::try_from).collect()
}

/// How many owners the tenant has.
pub async fn count_owners(ex: &mut impl Exec, tenant: TenantId) -> StoreResult<i64> {
    Ok(
        on!(ex, c => sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM users WHERE tenant_id = $1 AND role = 'owner'")
        .bind(tenant.0).fetch_one(&mut *c).await?),
    )
}

/// Changes a user's role; false when no such user in the tenant.
pub async fn set_role(
    ex: &mut impl Exec,
    tenant: TenantId,
    id: Uuid,
    role: Role,
) -> StoreResult<bool> {
    let n = on!(ex, c => sqlx::query("UPDATE users SET role = $1 WHERE tenant_id = $2 AND id = $3")
        .bind(role.as_str()).bind(tenant.0).bind(id).execute(&mut *c).await?.rows_affected());
    Ok(n == 1)
}

/// Removes a user with its sessions, tokens and pending one-time tokens (cascade).
pub async fn delete(ex: &mut impl Exec, tenant: TenantId, id: Uuid) -> StoreResult<bool> {
    let n = on!(ex, c => sqlx::query("DELETE FROM users WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.0).bind(id).execute(&mut *c).await?.rows_affected());
    Ok(n == 1)
}

/// Replaces the password hash.
pub async fn set_password(
    ex: &mut impl Exec,
    tenant: TenantId,
    id: Uuid,
    password_hash: &str,
    now: OffsetDateTime,
) -> StoreResult<bool> {
    let n = on!(ex, c => sqlx::query("UPDATE users SET password_hash = $1, password_changed_at = $2 WHERE tenant_id = $3 AND id = $4")
        .bind(password_hash).bind(now).bind(tenant.0).bind(id).execute(&mut *c).await?.rows_affected());
    Ok(n == 1)
}

/// Sets the sealed TOTP secret and whether it is enabled (`None` clears it).
pub async fn set_totp(
    ex: &mut impl Exec,
    tenant: TenantId,
    id: Uuid,
    sealed: Option<&[u8]>,
    enabled: bool,
) -> StoreResult<bool> {
    let n = on!(ex, c => sqlx::query("UPDATE users SET totp_secret_sealed = $1, totp_enabled = $2 WHERE tenant_id = $3 AND id = $4")
        .bind(sealed).bind(enabled).bind(tenant.0).bind(id).execute(&mut *c).await?.rows_affected());
    Ok(n == 1)
}
