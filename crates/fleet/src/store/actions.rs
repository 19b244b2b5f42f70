//! Agent WebSocket connections, emergency actions (CONTRACT 5) and the hash-chained
//! transparency log (CONTRACT 5a).

use time::OffsetDateTime;
use trusthub_core::canonical::{GENESIS_HASH, LogEntry, entry_hash};
use trusthub_store::{Exec, Handle, StoreResult, TenantId, on};
use uuid::Uuid;

/// Records that `instance` holds the agent's WebSocket.
pub async fn set_connected(
    ex: &mut impl Exec,
    agent_id: Uuid,
    instance: &str,
    now: OffsetDateTime,
) -> StoreResult<()> {
    on!(ex, c => sqlx::query(
        "INSERT INTO agent_connections (agent_id, instance, connected_at) VALUES ($1, $2, $3) \
         ON CONFLICT (agent_id) DO UPDATE SET instance = excluded.instance, connected_at = excluded.connected_at")
        .bind(agent_id).bind(instance).bind(now).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// Forgets the connection if `instance` still holds it.
pub async fn clear_connected(
    ex: &mut impl Exec,
    agent_id: Uuid,
    instance: &str,
) -> StoreResult<()> {
    on!(ex, c => sqlx::query("DELETE FROM agent_connections WHERE agent_id = $1 AND instance = $2")
        .bind(agent_id).bind(instance).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// Forgets every connection of `instance` (at its start and stop).
pub async fn clear_instance(ex: &mut impl Exec, instance: &str) -> StoreResult<()> {
    on!(ex, c => sqlx::query("DELETE FROM agent_connections WHERE instance = $1")
        .bind(instance).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// How long a connection mark stays valid without a refresh (processes refresh theirs
/// every 30 s).
pub const CONNECTION_FRESH_SECS: i64 = 90;

/// The hub process holding the agent's WebSocket, if one refreshed it lately.
pub async fn connected_instance(ex: &mut impl Exec, agent_id: Uuid) -> StoreResult<Option<String>> {
    let since = OffsetDateTime::now_utc() - time::Duration::seconds(CONNECTION_FRESH_SECS);
    Ok(on!(ex, c => sqlx::query_scalar::<_, String>(
        "SELECT instance FROM agent_connections WHERE agent_id = $1 AND connected_at >= $2")
        .bind(agent_id).bind(since).fetch_optional(&mut *c).await?))
}

/// Action states (CONTRACT 5).
pub mod status {
    /// Sent to the agent.
    pub const DISPATCHED: &str = "dispatched";
    /// Ran with exit code 0.
    pub const SUCCEEDED: &str = "succeeded";
    /// Ran with another exit code, or the agent refused it.
    pub const FAILED: &str = "failed";
    /// No result before the token expired.
    pub const EXPIRED: &str = "expired";
}

/// An action as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Action {
    /// The EAT's `jti`.
    pub jti: String,
    /// Tenant.
    pub tenant_id: Uuid,
    /// Agent.
    pub agent_id: Uuid,
    /// App, for restarts.
    pub app_id: Option<Uuid>,
    /// Action kind.
    pub act: String,
    /// State.
    pub status: String,
    /// `user:<id>`.
    pub requested_by: String,
    /// Why.
    pub reason: String,
    /// Exit code.
    pub exit_code: Option<i64>,
    /// Output (bounded by the agent).
    pub stdout: Option<String>,
    /// Errors (bounded by the agent).
    pub stderr: Option<String>,
    /// Why the agent refused it.
    pub refused_reason: Option<String>,
    /// Requested.
    pub created_at: OffsetDateTime,
    /// The token's `exp`.
    pub expires_at: OffsetDateTime,
    /// Result time.
    pub finished_at: Option<OffsetDateTime>,
}

const COLUMNS: &str = "jti, tenant_id, agent_id, app_id, act, status, requested_by, reason, exit_code, stdout, stderr, \
    refused_reason, created_at, expires_at, finished_at";

/// A new action row for [`insert_many`].
#[derive(Debug)]
pub struct NewAction<'a> {
    /// The token's nonce.
    pub jti: &'a str,
    /// The host.
    pub agent_id: Uuid,
    /// The app, for restarts.
    pub app_id: Option<Uuid>,
    /// The action kind.
    pub act: &'a str,
    /// Why.
    pub reason: &'a str,
    /// The token's expiry.
    pub expires_at: OffsetDateTime,
}

/// Inserts actions of one requester, `dispatched` (one statement per hundred).
pub async fn insert_many(
    ex: &mut impl Exec,
    tenant: TenantId,
    rows: &[NewAction<'_>],
    requested_by: &str,
    now: OffsetDateTime,
) -> StoreResult<()> {
    for chunk in rows.chunks(trusthub_store::ROWS_PER_INSERT) {
        let sql = format!(
            "INSERT INTO actions (jti, tenant_id, agent_id, app_id, act, status, requested_by, reason, created_at, expires_at) VALUES {}",
            trusthub_store::values(chunk.len(), 10)
        );
        on!(ex, c => {
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql.clone()));
            for r in chunk {
                q = q.bind(r.jti).bind(tenant.0).bind(r.agent_id).bind(r.app_id).bind(r.act).bind("dispatched")
                    .bind(requested_by).bind(r.reason).bind(now).bind(r.expires_at);
            }
            q.execute(&mut *c).await?.rows_affected()
        });
    }
    Ok(())
}

/// One action of the tenant.
pub async fn get(ex: &mut impl Exec, tenant: TenantId, jti: &str) -> StoreResult<Option<Action>> {
    let sql = format!("SELECT {COLUMNS} FROM actions WHERE tenant_id = $1 AND jti = $2");
    Ok(
        on!(ex, c => sqlx::query_as::<_, Action>(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).bind(jti).fetch_optional(&mut *c).await?),
    )
}

/// The tenant's actions, newest first, optionally of one agent.
pub async fn list(
    ex: &mut impl Exec,
    tenant: TenantId,
    agent_id: Option<Uuid>,
    limit: i64,
) -> StoreResult<Vec<Action>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM actions WHERE tenant_id = $1 AND ($2 IS NULL OR agent_id = $2) \
         ORDER BY created_at DESC, jti DESC LIMIT $3"
    );
    Ok(
        on!(ex, c => sqlx::query_as::<_, Action>(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).bind(agent_id).bind(limit).fetch_all(&mut *c).await?),
    )
}

/// What the agent answered.
#[derive(Debug, Clone)]
pub struct Outcome<'a> {
    /// New state.
    pub status: &'a str,
    /// Exit code.
    pub exit_code: Option<i64>,
    /// Output.
    pub stdout: Option<&'a str>,
    /// Errors.
    pub stderr: Option<&'a str>,
    /// Refusal.
    pub refused_reason: Option<&'a str>,
}

/// Records the result of a dispatched action of `agent_id` — also past its token's expiry:
/// the agent checked the token when it started, and a patch may outlast it; `None` when
/// there is no such action waiting (unknown, another agent's, or already finished).
pub async fn finish(
    ex: &mut impl Exec,
    agent_id: Uuid,
    jti: &str,
    o: &Outcome<'_>,
    now: OffsetDateTime,
) -> StoreResult<Option<Action>> {
    let sql = format!(
        "UPDATE actions SET status = $3, exit_code = $4, stdout = $5, stderr = $6, refused_reason = $7, finished_at = $8 \
         WHERE agent_id = $1 AND jti = $2 AND status IN ('dispatched', 'expired') RETURNING {COLUMNS}"
    );
    Ok(
        on!(ex, c => sqlx::query_as::<_, Action>(sqlx::AssertSqlSafe(sql))
        .bind(agent_id).bind(jti).bind(o.status).bind(o.exit_code).bind(o.stdout).bind(o.stderr)
        .bind(o.refused_reason).bind(now).fetch_optional(&mut *c).await?),
    )
}

/// Marks dispatched actions whose token expired without a result.
pub async fn expire_due(ex: &mut impl Exec, now: OffsetDateTime) -> StoreResult<u64> {
    Ok(on!(ex, c => sqlx::query(
        "UPDATE actions SET status = 'expired' WHERE status = 'dispatched' AND expires_at <= $1")
        .bind(now).execute(&mut *c).await?.rows_affected()))
}

#[derive(sqlx::FromRow)]
struct Row {
    seq: i64,
    kind: String,
    subject_ref: String,
    payload: String,
    prev_hash: String,
    entry_hash: String,
    created_at: String,
}

impl From<Row> for LogEntry {
    fn from(r: Row) -> Self {
        LogEntry {
            seq: r.seq,
            kind: r.kind,
            subject_ref: r.subject_ref,
            payload: serde_json::from_str(&r.payload).unwrap_or(serde_json::Value::Null),
            prev_hash: r.prev_hash,
            created_at: r.created_at,
            entry_hash: r.entry_hash,
        }
    }
}

/// Appends an entry to the tenant's log (call it in the transaction of what it records).
pub async fn append_log(
    ex: &mut impl Exec,
    tenant: TenantId,
    kind: &str,
    subject_ref: &str,
    payload: &serde_json::Value,
    now: OffsetDateTime,
) -> StoreResult<LogEntry> {
    if let Handle::Postgres(c) = ex.handle() {
        // Appends of one tenant queue here, so two processes cannot take the same seq.
        let key = i64::from_be_bytes(tenant.0.as_bytes()[..8].try_into().unwrap_or([0; 8]));
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(key)
            .execute(&mut *c)
            .await?;
    }
    let last: Option<(i64, String)> = on!(ex, c => sqlx::query_as(
        "SELECT seq, entry_hash FROM transparency_log WHERE tenant_id = $1 ORDER BY seq DESC LIMIT 1")
        .bind(tenant.0).fetch_optional(&mut *c).await?);
    let (seq, prev) = match last {
        Some((s, h)) => (s + 1, h),
        None => (1, GENESIS_HASH.to_owned()),
    };
    let created_at = now
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    let hash = entry_hash(seq, kind, subject_ref, payload, &prev, &created_at);
    on!(ex, c => sqlx::query(
        "INSERT INTO transparency_log (tenant_id, seq, kind, subject_ref, payload, prev_hash, entry_hash, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)")
        .bind(tenant.0).bind(seq).bind(kind).bind(subject_ref).bind(payload.to_string()).bind(&prev)
        .bind(&hash).bind(&created_at).execute(&mut *c).await?.rows_affected());
    Ok(LogEntry {
        seq,
        kind: kind.to_owned(),
        subject_ref: subject_ref.to_owned(),
        payload: payload.clone(),
        prev_hash: prev,
        created_at,
        entry_hash: hash,
    })
}

/// Appends several entries about one subject in order, reading the chain's end once (call
/// it in the transaction of what they record).
pub async fn append_logs(
    ex: &mut impl Exec,
    tenant: TenantId,
    entries: &[(&str, &str, serde_json::Value)],
    now: OffsetDateTime,
) -> StoreResult<Vec<LogEntry>> {
    let Some(((kind, subject, payload), rest)) = entries.split_first() else {
        return Ok(Vec::new());
    };
    // The first through `append_log` (it takes the tenant's lock on PostgreSQL).
    let first = append_log(&mut *ex, tenant, kind, subject, payload, now).await?;
    let created_at = first.created_at.clone();
    let mut out = vec![first];
    for (kind, subject, payload) in rest {
        let prev = out
            .last()
            .map(|e| (e.seq, e.entry_hash.clone()))
            .unwrap_or_default();
        let seq = prev.0 + 1;
        let hash = entry_hash(seq, kind, subject, payload, &prev.1, &created_at);
        out.push(LogEntry {
            seq,
            kind: (*kind).to_owned(),
            subject_ref: (*subject).to_owned(),
            payload: payload.clone(),
            prev_hash: prev.1,
            created_at: created_at.clone(),
            entry_hash: hash,
        });
    }
    for chunk in out[1..].chunks(100) {
        let mut sql = String::from(
            "INSERT INTO transparency_log (tenant_id, seq, kind, subject_ref, payload, prev_hash, entry_hash, created_at) VALUES ",
        );
        for (i, _) in chunk.iter().enumerate() {
            let b = i * 8;
            if i > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&format!(
                "(${}, ${}, ${}, ${}, ${}, ${}, ${}, ${})",
                b + 1,
                b + 2,
                b + 3,
                b + 4,
                b + 5,
                b + 6,
                b + 7,
                b + 8
            ));
        }
        on!(ex, c => {
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql.clone()));
            for e in chunk {
                q = q.bind(tenant.0).bind(e.seq).bind(&e.kind).bind(&e.subject_ref)
                    .bind(e.payload.to_string()).bind(&e.prev_hash).bind(&e.entry_hash).bind(&e.created_at);
            }
            q.execute(&mut *c).await?.rows_affected()
        });
    }
    Ok(out)
}

/// The tenant's entries after `since_seq`, oldest first, at most `limit`.
pub async fn log_since(
    ex: &mut impl Exec,
    tenant: TenantId,
    since_seq: i64,
    limit: i64,
) -> StoreResult<Vec<LogEntry>> {
    let rows = on!(ex, c => sqlx::query_as::<_, Row>(
        "SELECT seq, kind, subject_ref, payload, prev_hash, entry_hash, created_at FROM transparency_log \
         WHERE tenant_id = $1 AND seq > $2 ORDER BY seq LIMIT $3")
        .bind(tenant.0).bind(since_seq).bind(limit).fetch_all(&mut *c).await?);
    Ok(rows.into_iter().map(LogEntry::from).collect())
}

/// The tenant's entries whose kind starts with `kind_prefix`, about `subject_ref` when
/// given, oldest first.
pub async fn log_of_subject(
    ex: &mut impl Exec,
    tenant: TenantId,
    subject_ref: Option<&str>,
    kind_prefix: &str,
) -> StoreResult<Vec<LogEntry>> {
    let rows = on!(ex, c => sqlx::query_as::<_, Row>(
        "SELECT seq, kind, subject_ref, payload, prev_hash, entry_hash, created_at FROM transparency_log \
         WHERE tenant_id = $1 AND ($2 IS NULL OR subject_ref = $2) AND substr(kind, 1, CAST($3 AS INTEGER)) = $4 ORDER BY seq")
        .bind(tenant.0).bind(subject_ref).bind(kind_prefix.len() as i64).bind(kind_prefix)
        .fetch_all(&mut *c).await?);
    Ok(rows.into_iter().map(LogEntry::from).collect())
}

/// The tenant's newest entry.
pub async fn log_head(ex: &mut impl Exec, tenant: TenantId) -> StoreResult<Option<LogEntry>> {
    let row = on!(ex, c => sqlx::query_as::<_, Row>(
        "SELECT seq, kind, subject_ref, payload, prev_hash, entry_hash, created_at FROM transparency_log \
         WHERE tenant_id = $1 ORDER BY seq DESC LIMIT 1")
        .bind(tenant.0).fetch_optional(&mut *c).await?);
    Ok(row.map(LogEntry::from))
}

/// Refreshes every connection `instance` holds (a liveness mark for other processes).
pub async fn touch_instance(
    ex: &mut impl Exec,
    instance: &str,
    now: OffsetDateTime,
) -> StoreResult<()> {
    on!(ex, c => sqlx::query("UPDATE agent_connections SET connected_at = $2 WHERE instance = $1")
        .bind(instance).bind(now).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// The tenant's agents whose WebSocket some hub process held at or after `fresh_since`.
pub async fn connected_agents(
    ex: &mut impl Exec,
    tenant: TenantId,
    fresh_since: OffsetDateTime,
) -> StoreResult<std::collections::HashSet<Uuid>> {
    let ids: Vec<Uuid> = on!(ex, c => sqlx::query_scalar(
        "SELECT c.agent_id FROM agent_connections c JOIN agents a ON a.id = c.agent_id \
         WHERE a.tenant_id = $1 AND c.connected_at >= $2")
        .bind(tenant.0).bind(fresh_since).fetch_all(&mut *c).await?);
    Ok(ids.into_iter().collect())
}

/// Forgets every connection mark (at the start of the only process of a SQLite database).
pub async fn clear_all_connections(ex: &mut impl Exec) -> StoreResult<()> {
    on!(ex, c => sqlx::query("DELETE FROM agent_connections").execute(&mut *c).await?.rows_affected());
    Ok(())
}
