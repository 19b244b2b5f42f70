//! The console sessions table.

use time::OffsetDateTime;
use trusthub_store::{Exec, StoreResult, TenantId, on};
use uuid::Uuid;

/// A session as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Session {
    /// Id.
    pub id: Uuid,
    /// Tenant.
    pub tenant_id: Uuid,
    /// The host.
    pub agent_id: Uuid,
    /// Who opened it.
    pub user_id: Uuid,
    /// Why.
    pub reason: String,
    /// `starting`, `active`, `ended`, `terminated` or `failed`.
    pub status: String,
    /// `exit`, `idle`, `max`, `admin`, `console_disabled`, `recording_failed`, `agent_lost`.
    pub end_reason: Option<String>,
    /// Terminal width.
    pub cols: i64,
    /// Terminal height.
    pub rows: i64,
    /// The `console_open` action's nonce.
    pub jti: String,
    /// Whether a WebSocket took it (only the first may).
    pub attached: i64,
    /// When.
    pub started_at: OffsetDateTime,
    /// When it ended.
    pub ended_at: Option<OffsetDateTime>,
    /// The shell's exit code.
    pub exit_code: Option<i64>,
    /// The recording's size.
    pub recording_bytes: i64,
    /// Its SHA-256.
    pub recording_sha256: Option<String>,
    /// The hub process that owns it (writes the recording, keeps the clocks).
    pub instance: String,
}

const COLUMNS: &str = "id, tenant_id, agent_id, user_id, reason, status, end_reason, cols, rows, jti, attached, \
    started_at, ended_at, exit_code, recording_bytes, recording_sha256, instance";

/// Records a new session (`starting`).
pub async fn insert(ex: &mut impl Exec, s: &Session) -> StoreResult<()> {
    on!(ex, c => sqlx::query(
        "INSERT INTO console_sessions (id, tenant_id, agent_id, user_id, reason, status, cols, rows, jti, started_at, instance) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)")
        .bind(s.id).bind(s.tenant_id).bind(s.agent_id).bind(s.user_id).bind(&s.reason).bind(&s.status)
        .bind(s.cols).bind(s.rows).bind(&s.jti).bind(s.started_at).bind(&s.instance).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// Forgets a session that never started (its agent was not connected).
pub async fn delete(ex: &mut impl Exec, id: Uuid) -> StoreResult<()> {
    on!(ex, c => sqlx::query("DELETE FROM console_sessions WHERE id = $1")
        .bind(id).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// A tenant's session.
pub async fn get(ex: &mut impl Exec, tenant: TenantId, id: Uuid) -> StoreResult<Option<Session>> {
    let sql = format!("SELECT {COLUMNS} FROM console_sessions WHERE tenant_id = $1 AND id = $2");
    Ok(
        on!(ex, c => sqlx::query_as::<_, Session>(sqlx::AssertSqlSafe(sql)).bind(tenant.0).bind(id).fetch_optional(&mut *c).await?),
    )
}

/// A session that has not ended, whatever its tenant (for frames routed by session id).
pub async fn open(ex: &mut impl Exec, id: Uuid) -> StoreResult<Option<Session>> {
    let sql = format!("SELECT {COLUMNS} FROM console_sessions WHERE id = $1 AND ended_at IS NULL");
    Ok(
        on!(ex, c => sqlx::query_as::<_, Session>(sqlx::AssertSqlSafe(sql)).bind(id).fetch_optional(&mut *c).await?),
    )
}

/// The sessions of a host that have not ended and that another process owns.
pub async fn open_elsewhere(
    ex: &mut impl Exec,
    agent: Uuid,
    here: &str,
) -> StoreResult<Vec<Session>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM console_sessions WHERE agent_id = $1 AND ended_at IS NULL AND instance <> $2"
    );
    Ok(
        on!(ex, c => sqlx::query_as::<_, Session>(sqlx::AssertSqlSafe(sql)).bind(agent).bind(here).fetch_all(&mut *c).await?),
    )
}

/// A session by its action's nonce.
pub async fn by_jti(ex: &mut impl Exec, jti: &str) -> StoreResult<Option<Session>> {
    let sql = format!("SELECT {COLUMNS} FROM console_sessions WHERE jti = $1");
    Ok(
        on!(ex, c => sqlx::query_as::<_, Session>(sqlx::AssertSqlSafe(sql)).bind(jti).fetch_optional(&mut *c).await?),
    )
}

/// A tenant's sessions, newest first.
pub async fn list(
    ex: &mut impl Exec,
    tenant: TenantId,
    agent: Option<Uuid>,
    status: Option<&str>,
) -> StoreResult<Vec<Session>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM console_sessions WHERE tenant_id = $1 AND ($2 IS NULL OR agent_id = $2) \
         AND ($3 IS NULL OR status = $3) ORDER BY started_at DESC, id DESC LIMIT 500"
    );
    Ok(
        on!(ex, c => sqlx::query_as::<_, Session>(sqlx::AssertSqlSafe(sql)).bind(tenant.0).bind(agent).bind(status)
        .fetch_all(&mut *c).await?),
    )
}

/// Sessions a user opened since `since` (the rate limit counts created sessions only).
pub async fn opened_since(
    ex: &mut impl Exec,
    user: Uuid,
    since: OffsetDateTime,
) -> StoreResult<i64> {
    Ok(on!(ex, c => sqlx::query_scalar::<_, i64>(
        "SELECT COUNT(*) FROM console_sessions WHERE user_id = $1 AND started_at >= $2")
        .bind(user).bind(since).fetch_one(&mut *c).await?))
}

/// Marks the session taken by a WebSocket; false when one took it before.
pub async fn attach(ex: &mut impl Exec, id: Uuid) -> StoreResult<bool> {
    let n = on!(ex, c => sqlx::query("UPDATE console_sessions SET attached = 1 WHERE id = $1 AND attached = 0")
        .bind(id).execute(&mut *c).await?.rows_affected());
    Ok(n == 1)
}

/// Moves a session that has not ended to `status`.
pub async fn set_status(ex: &mut impl Exec, id: Uuid, status: &str) -> StoreResult<bool> {
    let n = on!(ex, c => sqlx::query(
        "UPDATE console_sessions SET status = $1 WHERE id = $2 AND ended_at IS NULL")
        .bind(status).bind(id).execute(&mut *c).await?.rows_affected());
    Ok(n == 1)
}

/// Ends a session that has not ended; false when it had.
pub async fn end(
    ex: &mut impl Exec,
    id: Uuid,
    status: &str,
    reason: &str,
    exit_code: Option<i64>,
    now: OffsetDateTime,
) -> StoreResult<bool> {
    let n = on!(ex, c => sqlx::query(
        "UPDATE console_sessions SET status = $1, end_reason = $2, exit_code = $3, ended_at = $4 \
         WHERE id = $5 AND ended_at IS NULL")
        .bind(status).bind(reason).bind(exit_code).bind(now).bind(id).execute(&mut *c).await?.rows_affected());
    Ok(n == 1)
}

/// Records the recording's size and hash (and the exit code when it came after the end).
pub async fn set_recording(
    ex: &mut impl Exec,
    id: Uuid,
    bytes: i64,
    sha256: &str,
    exit_code: Option<i64>,
) -> StoreResult<()> {
    on!(ex, c => sqlx::query(
        "UPDATE console_sessions SET recording_bytes = $1, recording_sha256 = $2, exit_code = COALESCE(exit_code, $3) WHERE id = $4")
        .bind(bytes).bind(sha256).bind(exit_code).bind(id).execute(&mut *c).await?.rows_affected());
    Ok(())
}
