//! API tokens: named, scoped, optionally expiring; stored as SHA-256 of the token.

use crate::store::users::{COLUMNS, User, UserRow};
use time::OffsetDateTime;
use trusthub_core::TokenScope;
use trusthub_store::{Exec, StoreError, StoreResult, TenantId, on};
use uuid::Uuid;

/// An API token as stored (never the token itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiToken {
    /// Its id.
    pub id: Uuid,
    /// Its tenant.
    pub tenant_id: TenantId,
    /// The user it acts for.
    pub user_id: Uuid,
    /// Free label.
    pub name: String,
    /// What it may do.
    pub scope: TokenScope,
    /// The first characters of the token, to recognise it in a list.
    pub token_hint: String,
    /// When it was created.
    pub created_at: OffsetDateTime,
    /// When it stops working, if ever.
    pub expires_at: Option<OffsetDateTime>,
    /// Last use, updated at most once a minute.
    pub last_used_at: Option<OffsetDateTime>,
    /// The service it is for: `infrastructure` (Ansible, Puppet, Terraform runs, CONTRACT
    /// 20), or none.
    pub service: Option<String>,
}

#[derive(sqlx::FromRow)]
struct Row {
    id: Uuid,
    tenant_id: Uuid,
    user_id: Uuid,
    name: String,
    scope: String,
    token_hint: String,
    created_at: OffsetDateTime,
    expires_at: Option<OffsetDateTime>,
    last_used_at: Option<OffsetDateTime>,
    service: Option<String>,
}

impl TryFrom<Row> for ApiToken {
    type Error = StoreError;
    fn try_from(r: Row) -> StoreResult<ApiToken> {
        Ok(ApiToken {
            id: r.id,
            tenant_id: TenantId(r.tenant_id),
            user_id: r.user_id,
            name: r.name,
            scope: r
                .scope
                .parse()
                .map_err(|_| StoreError::Corrupt("api_tokens.scope"))?,
            token_hint: r.token_hint,
            created_at: r.created_at,
            expires_at: r.expires_at,
            last_used_at: r.last_used_at,
            service: r.service,
        })
    }
}

const TOKEN_COLUMNS: &str = "api_tokens.id, api_tokens.tenant_id, api_tokens.user_id, api_tokens.name, \
    api_tokens.scope, api_tokens.token_hint, api_tokens.created_at, api_tokens.expires_at, api_tokens.last_used_at, api_tokens.service";

/// What to store for a new token.
#[derive(Debug)]
pub struct NewToken<'a> {
    /// The user it acts for.
    pub user_id: Uuid,
    /// Label.
    pub name: &'a str,
    /// Scope.
    pub scope: TokenScope,
    /// SHA-256 of the token.
    pub token_hash: &'a str,
    /// Recognisable start of the token.
    pub token_hint: &'a str,
    /// Optional expiry.
    pub expires_at: Option<OffsetDateTime>,
    /// `infrastructure` or none.
    pub service: Option<&'a str>,
}

/// Stores a new token.
pub async fn insert(
    ex: &mut impl Exec,
    tenant: TenantId,
    t: &NewToken<'_>,
    now: OffsetDateTime,
) -> StoreResult<ApiToken> {
    let id = Uuid::now_v7();
    on!(ex, c => sqlx::query(
        "INSERT INTO api_tokens (id, tenant_id, user_id, name, scope, token_hash, token_hint, created_at, expires_at, service) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)")
        .bind(id).bind(tenant.0).bind(t.user_id).bind(t.name).bind(t.scope.as_str()).bind(t.token_hash)
        .bind(t.token_hint).bind(now).bind(t.expires_at).bind(t.service).execute(&mut *c).await?.rows_affected());
    Ok(ApiToken {
        id,
        tenant_id: tenant,
        user_id: t.user_id,
        name: t.name.to_owned(),
        scope: t.scope,
        token_hint: t.token_hint.to_owned(),
        created_at: now,
        expires_at: t.expires_at,
        last_used_at: None,
        service: t.service.map(str::to_owned),
    })
}

/// The tenant's tokens, newest first; only `user_id`'s when given.
pub async fn list(
    ex: &mut impl Exec,
    tenant: TenantId,
    user_id: Option<Uuid>,
) -> StoreResult<Vec<ApiToken>> {
    let sql = format!(
        "SELECT {TOKEN_COLUMNS} FROM api_tokens WHERE tenant_id = $1 AND ($2 IS NULL OR user_id = $2) \
         ORDER BY created_at DESC, id DESC"
    );
    let rows = on!(ex, c => sqlx::query_as::<_, Row>(sqlx::AssertSqlSafe(sql)).bind(tenant.0).bind(user_id).fetch_all(&mut *c).await?);
    rows.into_iter().map(ApiToken::try_from).collect()
}

/// Deletes a token of the tenant (only `user_id`'s when given); false when there is none.
pub async fn delete(
    ex: &mut impl Exec,
    tenant: TenantId,
    id: Uuid,
    user_id: Option<Uuid>,
) -> StoreResult<bool> {
    let n = on!(ex, c => sqlx::query("DELETE FROM api_tokens WHERE tenant_id = $1 AND id = $2 AND ($3 IS NULL OR user_id = $3)")
        .bind(tenant.0).bind(id).bind(user_id).execute(&mut *c).await?.rows_affected());
    Ok(n == 1)
}

#[derive(sqlx::FromRow)]
struct PrincipalRow {
    t_id: Uuid,
    t_tenant_id: Uuid,
    t_user_id: Uuid,
    t_name: String,
    t_scope: String,
    t_token_hint: String,
    t_created_at: OffsetDateTime,
    t_expires_at: Option<OffsetDateTime>,
    t_last_used_at: Option<OffsetDateTime>,
    t_service: Option<String>,
    #[sqlx(flatten)]
    user: UserRow,
}

/// The unexpired token with this hash, and its user.
pub async fn find(
    ex: &mut impl Exec,
    token_hash: &str,
    now: OffsetDateTime,
) -> StoreResult<Option<(ApiToken, User)>> {
    let sql = format!(
        "SELECT api_tokens.id AS t_id, api_tokens.tenant_id AS t_tenant_id, api_tokens.user_id AS t_user_id, \
         api_tokens.name AS t_name, api_tokens.scope AS t_scope, api_tokens.token_hint AS t_token_hint, \
         api_tokens.created_at AS t_created_at, api_tokens.expires_at AS t_expires_at, \
         api_tokens.last_used_at AS t_last_used_at, api_tokens.service AS t_service, {COLUMNS} \
         FROM api_tokens JOIN users ON users.id = api_tokens.user_id \
         WHERE api_tokens.token_hash = $1 AND (api_tokens.expires_at IS NULL OR api_tokens.expires_at > $2)"
    );
    let row = on!(ex, c => sqlx::query_as::<_, PrincipalRow>(sqlx::AssertSqlSafe(sql)).bind(token_hash).bind(now).fetch_optional(&mut *c).await?);
    let Some(r) = row else { return Ok(None) };
    let token = ApiToken::try_from(Row {
        id: r.t_id,
        tenant_id: r.t_tenant_id,
        user_id: r.t_user_id,
        name: r.t_name,
        scope: r.t_scope,
        token_hint: r.t_token_hint,
        created_at: r.t_created_at,
        expires_at: r.t_expires_at,
        last_used_at: r.t_last_used_at,
        service: r.t_service,
    })?;
    Ok(Some((token, User::try_from(r.user)?)))
}

/// Records a use of the token, unless one was recorded after `stale_before`.
pub async fn touch(
    ex: &mut impl Exec,
    id: Uuid,
    now: OffsetDateTime,
    stale_before: OffsetDateTime,
) -> StoreResult<()> {
    on!(ex, c => sqlx::query("UPDATE api_tokens SET last_used_at = $1 WHERE id = $2 AND (last_used_at IS NULL OR last_used_at < $3)")
        .bind(now).bind(id).bind(stale_before).execute(&mut *c).await?.rows_affected());
    Ok(())
}
