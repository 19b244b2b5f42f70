//! Agents (CONTRACT 4): enrollment tokens, registered agents with their pinned signing key
//! and token hash, and the settings the hub governs.

use sqlx::types::Json;
use time::OffsetDateTime;
use trusthub_store::{Exec, StoreResult, TenantId, on};
use uuid::Uuid;

/// An enrollment token as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct EnrollmentToken {
    /// Id.
    pub id: Uuid,
    /// Tenant the agents it enrols join.
    pub tenant_id: Uuid,
    /// Tags given to those agents.
    pub tags: Json<Vec<String>>,
    /// It enrols one host only.
    pub single_use: bool,
}

/// An enrollment token to store.
#[derive(Debug)]
pub struct NewEnrollmentToken<'a> {
    /// The tenant its agents join.
    pub tenant: TenantId,
    /// The token's hash.
    pub token_hash: &'a str,
    /// Tags its agents get.
    pub tags: &'a [String],
    /// Who made it.
    pub created_by: Option<Uuid>,
    /// When.
    pub now: OffsetDateTime,
    /// Until when it enrols.
    pub expires_at: OffsetDateTime,
    /// It enrols one host only.
    pub single_use: bool,
}

/// Stores an enrollment token (its hash).
pub async fn insert_enrollment_token(
    ex: &mut impl Exec,
    t: &NewEnrollmentToken<'_>,
) -> StoreResult<Uuid> {
    let id = Uuid::now_v7();
    on!(ex, c => sqlx::query(
        "INSERT INTO enrollment_tokens (id, tenant_id, token_hash, tags, created_by, created_at, expires_at, single_use) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)")
        .bind(id).bind(t.tenant.0).bind(t.token_hash).bind(Json(t.tags)).bind(t.created_by).bind(t.now).bind(t.expires_at)
        .bind(t.single_use).execute(&mut *c).await?.rows_affected());
    Ok(id)
}

/// The unexpired enrollment token with this hash.
pub async fn find_enrollment_token(
    ex: &mut impl Exec,
    token_hash: &str,
    now: OffsetDateTime,
) -> StoreResult<Option<EnrollmentToken>> {
    Ok(on!(ex, c => sqlx::query_as::<_, EnrollmentToken>(
        "SELECT id, tenant_id, tags, single_use FROM enrollment_tokens WHERE token_hash = $1 AND expires_at > $2 \
         AND used_at IS NULL")
        .bind(token_hash).bind(now).fetch_optional(&mut *c).await?))
}

/// Spends a single-use enrollment token; false when another registration spent it first.
pub async fn spend_enrollment_token(
    ex: &mut impl Exec,
    id: Uuid,
    now: OffsetDateTime,
) -> StoreResult<bool> {
    let n = on!(ex, c => sqlx::query("UPDATE enrollment_tokens SET used_at = $1 WHERE id = $2 AND used_at IS NULL")
        .bind(now).bind(id).execute(&mut *c).await?.rows_affected());
    Ok(n == 1)
}

/// An agent as stored.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct Agent {
    /// Id.
    pub id: Uuid,
    /// Tenant.
    pub tenant_id: Uuid,
    /// Stable machine identity from the host (`/etc/machine-id`).
    pub machine_id: String,
    /// Host name.
    pub hostname: String,
    /// OS name.
    pub os: String,
    /// CPU architecture.
    pub arch: String,
    /// Agent build.
    pub agent_version: String,
    /// Tags (apps inherit them).
    pub tags: Json<Vec<String>>,
    /// Pinned Ed25519 public key (hex); `None` after a signing-key rotation until the next
    /// registration pins again.
    pub signing_pubkey: Option<String>,
    /// When it registered first.
    pub created_at: OffsetDateTime,
    /// When data last arrived.
    pub last_seen_at: Option<OffsetDateTime>,
    /// The last heartbeat's facts.
    pub last_heartbeat: Option<Json<serde_json::Value>>,
    /// Push interval.
    pub ingest_interval_secs: i64,
    /// Inventory interval.
    pub inventory_interval_secs: i64,
    /// Action kinds the hub may push (hub-side policy).
    pub allowed_actions: Json<Vec<String>>,
    /// Action kinds the host's own allowlist accepts, as the agent last reported them.
    pub reported_actions: Option<Json<Vec<String>>>,
    /// Watched configuration paths and globs (`None`: the default list, CONTRACT 20).
    pub config_paths: Option<Json<Vec<String>>>,
    /// Seconds between two configuration scans.
    pub config_scan_interval_secs: i64,
    /// Seconds between two compliance runs of the agent's own (CONTRACT 25).
    pub compliance_interval_secs: i64,
    /// Canary files, users and ports the agent watches.
    pub honeypots: Json<Vec<trusthub_core::compliance::Honeypot>>,
}

impl Agent {
    /// Whether `other` is this agent with the same settings: everything but what ingest
    /// itself records (when it was last seen, its heartbeat and reported allowlist).
    pub fn same_settings(&self, other: &Agent) -> bool {
        // Every field named: one added later is compared unless it is listed as ingest's own.
        let Agent {
            id,
            tenant_id,
            machine_id,
            hostname,
            os,
            arch,
            agent_version,
            tags,
            signing_pubkey,
            created_at,
            last_seen_at: _,
            last_heartbeat: _,
            ingest_interval_secs,
            inventory_interval_secs,
            allowed_actions,
            reported_actions: _,
            config_paths,
            config_scan_interval_secs,
            compliance_interval_secs,
            honeypots,
        } = self;
        *id == other.id
            && *tenant_id == other.tenant_id
            && *machine_id == other.machine_id
            && *hostname == other.hostname
            && *os == other.os
            && *arch == other.arch
            && *agent_version == other.agent_version
            && *tags == other.tags
            && *signing_pubkey == other.signing_pubkey
            && *created_at == other.created_at
            && *ingest_interval_secs == other.ingest_interval_secs
            && *inventory_interval_secs == other.inventory_interval_secs
            && *allowed_actions == other.allowed_actions
            && *config_paths == other.config_paths
            && *config_scan_interval_secs == other.config_scan_interval_secs
            && *compliance_interval_secs == other.compliance_interval_secs
            && *honeypots == other.honeypots
    }

    /// The watched paths in force: governance's, or the default list.
    pub fn watched_paths(&self) -> Vec<String> {
        match &self.config_paths {
            Some(p) => p.0.clone(),
            None => trusthub_core::drift::DEFAULT_CONFIG_PATHS
                .iter()
                .map(|p| (*p).to_owned())
                .collect(),
        }
    }
}

const COLUMNS: &str = "id, tenant_id, machine_id, hostname, os, arch, agent_version, tags, signing_pubkey, created_at, \
    last_seen_at, last_heartbeat, ingest_interval_secs, inventory_interval_secs, allowed_actions, reported_actions, \
    config_paths, config_scan_interval_secs, compliance_interval_secs, honeypots";

/// What a registration says about the host.
#[derive(Debug, Clone)]
pub struct Registration<'a> {
    /// Machine identity.
    pub machine_id: &'a str,
    /// Host name.
    pub hostname: &'a str,
    /// OS.
    pub os: &'a str,
    /// Architecture.
    pub arch: &'a str,
    /// Agent build.
    pub agent_version: &'a str,
    /// Ed25519 public key, hex.
    pub signing_pubkey: &'a str,
    /// Tags.
    pub tags: &'a [String],
}

/// Creates an agent with its key pinned.
pub async fn insert(
    ex: &mut impl Exec,
    tenant: TenantId,
    r: &Registration<'_>,
    token_hash: &str,
    allowed_actions: &[String],
    now: OffsetDateTime,
) -> StoreResult<Uuid> {
    let id = Uuid::now_v7();
    on!(ex, c => sqlx::query(
        "INSERT INTO agents (id, tenant_id, machine_id, hostname, os, arch, agent_version, tags, signing_pubkey, token_hash, \
         created_at, ingest_interval_secs, inventory_interval_secs, allowed_actions) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)")
        .bind(id).bind(tenant.0).bind(r.machine_id).bind(r.hostname).bind(r.os).bind(r.arch).bind(r.agent_version)
        .bind(Json(r.tags)).bind(r.signing_pubkey).bind(token_hash).bind(now)
        .bind(trusthub_core::agent::DEFAULT_INGEST_INTERVAL_SECS).bind(trusthub_core::agent::DEFAULT_INVENTORY_INTERVAL_SECS)
        .bind(Json(allowed_actions)).execute(&mut *c).await?.rows_affected());
    trusthub_alerts::host_changed(ex, tenant, id, r.hostname, r.tags).await?;
    Ok(id)
}

/// Re-registration of a known machine: new facts, new token, and the key pinned again.
pub async fn reregister(
    ex: &mut impl Exec,
    tenant: TenantId,
    id: Uuid,
    r: &Registration<'_>,
    token_hash: &str,
) -> StoreResult<()> {
    on!(ex, c => sqlx::query(
        "UPDATE agents SET hostname = $1, os = $2, arch = $3, agent_version = $4, signing_pubkey = $5, token_hash = $6, tags = $7 \
         WHERE tenant_id = $8 AND id = $9")
        .bind(r.hostname).bind(r.os).bind(r.arch).bind(r.agent_version).bind(r.signing_pubkey).bind(token_hash)
        .bind(Json(r.tags)).bind(tenant.0).bind(id).execute(&mut *c).await?.rows_affected());
    trusthub_alerts::host_changed(ex, tenant, id, r.hostname, r.tags).await?;
    Ok(())
}

/// The tenant's agent on this machine.
pub async fn find_by_machine(
    ex: &mut impl Exec,
    tenant: TenantId,
    machine_id: &str,
) -> StoreResult<Option<Agent>> {
    let sql = format!("SELECT {COLUMNS} FROM agents WHERE tenant_id = $1 AND machine_id = $2");
    Ok(
        on!(ex, c => sqlx::query_as::<_, Agent>(sqlx::AssertSqlSafe(sql)).bind(tenant.0).bind(machine_id).fetch_optional(&mut *c).await?),
    )
}

/// The agent holding this token (the token names its tenant).
pub async fn find_by_token(ex: &mut impl Exec, token_hash: &str) -> StoreResult<Option<Agent>> {
    let sql = format!("SELECT {COLUMNS} FROM agents WHERE token_hash = $1");
    Ok(
        on!(ex, c => sqlx::query_as::<_, Agent>(sqlx::AssertSqlSafe(sql)).bind(token_hash).fetch_optional(&mut *c).await?),
    )
}

/// An agent with the hash of its token.
#[derive(Debug, sqlx::FromRow)]
pub struct Credentialed {
    /// The agent.
    #[sqlx(flatten)]
    pub agent: Agent,
    /// The hash of its current token.
    pub token_hash: String,
}

/// One agent of the tenant.
pub async fn get(ex: &mut impl Exec, tenant: TenantId, id: Uuid) -> StoreResult<Option<Agent>> {
    let sql = format!("SELECT {COLUMNS} FROM agents WHERE tenant_id = $1 AND id = $2");
    Ok(
        on!(ex, c => sqlx::query_as::<_, Agent>(sqlx::AssertSqlSafe(sql)).bind(tenant.0).bind(id).fetch_optional(&mut *c).await?),
    )
}

/// The tenant's agents by host name.
pub async fn list(ex: &mut impl Exec, tenant: TenantId) -> StoreResult<Vec<Agent>> {
    let sql = format!("SELECT {COLUMNS} FROM agents WHERE tenant_id = $1 ORDER BY hostname, id");
    Ok(
        on!(ex, c => sqlx::query_as::<_, Agent>(sqlx::AssertSqlSafe(sql)).bind(tenant.0).fetch_all(&mut *c).await?),
    )
}

/// An agent as the agents page and the overview list it: what a row shows, without the
/// settings and the heartbeat (issue 63: decoding every column of 1,000 agents cost the
/// overview ~18 ms of its ~40 on SQLite).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Brief {
    /// Id.
    pub id: Uuid,
    /// Host name.
    pub hostname: String,
    /// OS name.
    pub os: String,
    /// Agent build.
    pub agent_version: String,
    /// Tags.
    pub tags: Json<Vec<String>>,
    /// When data last arrived.
    pub last_seen_at: Option<OffsetDateTime>,
    /// Push interval (what "silent" and "offline" are measured against).
    pub ingest_interval_secs: i64,
    /// The unlabelled `cpu.percent` of its newest batch, kept by ingest (`None`: none sent).
    pub cpu_percent: Option<f64>,
}

impl From<Agent> for Brief {
    /// The row of a full agent (without its CPU, which only ingest's column holds).
    fn from(a: Agent) -> Brief {
        Brief {
            id: a.id,
            hostname: a.hostname,
            os: a.os,
            agent_version: a.agent_version,
            tags: a.tags,
            last_seen_at: a.last_seen_at,
            ingest_interval_secs: a.ingest_interval_secs,
            cpu_percent: None,
        }
    }
}

/// The tenant's agents as rows list them, by host name.
pub async fn briefs(ex: &mut impl Exec, tenant: TenantId) -> StoreResult<Vec<Brief>> {
    Ok(on!(ex, c => sqlx::query_as::<_, Brief>(
        "SELECT id, hostname, os, agent_version, tags, last_seen_at, ingest_interval_secs, cpu_percent \
         FROM agents WHERE tenant_id = $1 ORDER BY hostname, id")
        .bind(tenant.0).fetch_all(&mut *c).await?))
}

/// Removes an agent and everything it reported (cascade); its token dies with it.
pub async fn delete(ex: &mut impl Exec, tenant: TenantId, id: Uuid) -> StoreResult<bool> {
    let n = on!(ex, c => sqlx::query("DELETE FROM agents WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.0).bind(id).execute(&mut *c).await?.rows_affected());
    if n == 1 {
        trusthub_alerts::host_removed(ex, tenant, id).await?;
    }
    Ok(n == 1)
}

/// Replaces the agent's token.
pub async fn set_token(
    ex: &mut impl Exec,
    tenant: TenantId,
    id: Uuid,
    token_hash: &str,
) -> StoreResult<bool> {
    let n = on!(ex, c => sqlx::query("UPDATE agents SET token_hash = $1 WHERE tenant_id = $2 AND id = $3")
        .bind(token_hash).bind(tenant.0).bind(id).execute(&mut *c).await?.rows_affected());
    Ok(n == 1)
}

/// Clears the pinned key; the next registration pins again.
pub async fn clear_signing_key(
    ex: &mut impl Exec,
    tenant: TenantId,
    id: Uuid,
) -> StoreResult<bool> {
    let n = on!(ex, c => sqlx::query("UPDATE agents SET signing_pubkey = NULL WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.0).bind(id).execute(&mut *c).await?.rows_affected());
    Ok(n == 1)
}

/// The governed settings.
#[derive(Debug, Clone)]
pub struct Governance {
    /// Push interval, seconds.
    pub ingest_interval_secs: i64,
    /// Inventory interval, seconds.
    pub inventory_interval_secs: i64,
    /// Tags.
    pub tags: Vec<String>,
    /// Action kinds the hub may push.
    pub allowed_actions: Vec<String>,
    /// Watched configuration paths (`None`: the default list).
    pub config_paths: Option<Vec<String>>,
    /// Seconds between configuration scans.
    pub config_scan_interval_secs: i64,
    /// Seconds between compliance runs.
    pub compliance_interval_secs: i64,
    /// Honeypots.
    pub honeypots: Vec<trusthub_core::compliance::Honeypot>,
}

/// Replaces the governed settings.
pub async fn set_governance(
    ex: &mut impl Exec,
    tenant: TenantId,
    id: Uuid,
    g: &Governance,
) -> StoreResult<bool> {
    let n = on!(ex, c => sqlx::query(
        "UPDATE agents SET ingest_interval_secs = $1, inventory_interval_secs = $2, tags = $3, allowed_actions = $4, \
         config_paths = $7, config_scan_interval_secs = $8, compliance_interval_secs = $9, honeypots = $10 WHERE tenant_id = $5 AND id = $6")
        .bind(g.ingest_interval_secs).bind(g.inventory_interval_secs).bind(Json(&g.tags)).bind(Json(&g.allowed_actions))
        .bind(tenant.0).bind(id).bind(g.config_paths.as_ref().map(Json)).bind(g.config_scan_interval_secs)
        .bind(g.compliance_interval_secs).bind(Json(&g.honeypots)).execute(&mut *c).await?.rows_affected());
    if n == 1
        && let Some(a) = get(ex, tenant, id).await?
    {
        trusthub_alerts::host_changed(ex, tenant, id, &a.hostname, &g.tags).await?;
    }
    Ok(n == 1)
}

/// What one ingest group learned about an agent: its heartbeat and reported allowlist
/// (`None` keeps what is stored).
#[derive(Debug, Clone)]
pub struct Seen<'a> {
    /// The agent.
    pub agent_id: Uuid,
    /// Its last heartbeat, when the batch had one.
    pub heartbeat: Option<&'a serde_json::Value>,
    /// Its reported allowlist, when the heartbeat had one.
    pub reported_actions: Option<&'a [String]>,
    /// Its newest unlabelled `cpu.percent`, when the batch had one.
    pub cpu_percent: Option<f64>,
}

/// Records that data arrived from these agents (and their heartbeat facts, when there are
/// some), in one statement; answers the agents as they stand then, with their token hashes
/// (an agent deleted meanwhile is not among them; their heartbeat and reported allowlist left
/// out): in ingest's transaction, what each batch's credential is checked against.
pub async fn seen_many(
    ex: &mut impl Exec,
    rows: &[Seen<'_>],
    now: OffsetDateTime,
) -> StoreResult<Vec<Credentialed>> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let hb: Vec<Option<String>> = rows
        .iter()
        .map(|r| r.heartbeat.map(|h| h.to_string()))
        .collect();
    let ra: Vec<Option<String>> = rows
        .iter()
        .map(|r| {
            r.reported_actions
                .and_then(|a| serde_json::to_string(a).ok())
        })
        .collect();
    let ids: Vec<Uuid> = rows.iter().map(|r| r.agent_id).collect();
    let cpu: Vec<Option<f64>> = rows
        .iter()
        .map(|r| r.cpu_percent.filter(|c| c.is_finite()))
        .collect();
    // What ingest compares (`Agent::same_settings`); the heartbeat and reported allowlist it
    // just wrote are not read back.
    let returning = |null_json: &str| -> String {
        COLUMNS
            .split(", ")
            .chain(["token_hash"])
            .map(|c| match c.trim() {
                c @ ("last_heartbeat" | "reported_actions") => format!("{null_json} AS {c}"),
                c => format!("agents.{c}"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    Ok(match ex.handle() {
        trusthub_store::Handle::Postgres(c) => {
            let sql = format!(
                "UPDATE agents SET last_seen_at = $1, last_heartbeat = COALESCE(v.hb::jsonb, agents.last_heartbeat), \
                 reported_actions = COALESCE(v.ra::jsonb, agents.reported_actions), \
                 cpu_percent = COALESCE(v.cpu, agents.cpu_percent) \
                 FROM UNNEST($2::uuid[], $3::text[], $4::text[], $5::float8[]) AS v(id, hb, ra, cpu) \
                 WHERE agents.id = v.id \
                 RETURNING {}",
                returning("CAST(NULL AS JSONB)")
            );
            sqlx::query_as::<_, Credentialed>(sqlx::AssertSqlSafe(sql))
                .bind(now)
                .bind(&ids)
                .bind(&hb)
                .bind(&ra)
                .bind(&cpu)
                .fetch_all(&mut *c)
                .await?
        }
        trusthub_store::Handle::Sqlite(c) => {
            let mut all = Vec::with_capacity(rows.len());
            for chunk in (0..rows.len()).collect::<Vec<_>>().chunks(500) {
                let mut qb =
                    sqlx::QueryBuilder::<sqlx::Sqlite>::new("UPDATE agents SET last_seen_at = ");
                qb.push_bind(now);
                qb.push(
                    ", last_heartbeat = COALESCE(v.column2, agents.last_heartbeat), \
                     reported_actions = COALESCE(v.column3, agents.reported_actions), \
                     cpu_percent = COALESCE(v.column4, agents.cpu_percent) FROM (",
                );
                qb.push_values(chunk, |mut b, i| {
                    b.push_bind(ids[*i])
                        .push_bind(hb[*i].clone())
                        .push_bind(ra[*i].clone())
                        .push_bind(cpu[*i]);
                });
                qb.push(format!(
                    ") AS v WHERE agents.id = v.column1 RETURNING {}",
                    returning("NULL")
                ));
                all.extend(
                    qb.build_query_as::<Credentialed>()
                        .fetch_all(&mut *c)
                        .await?,
                );
            }
            all
        }
    })
}

/// An enrollment token as listed (never the token).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct EnrollmentTokenRow {
    /// Id.
    pub id: Uuid,
    /// Tags given to enrolled agents.
    pub tags: Json<Vec<String>>,
    /// Who made it.
    pub created_by: Option<Uuid>,
    /// When.
    pub created_at: OffsetDateTime,
    /// Until when it enrols.
    pub expires_at: OffsetDateTime,
}

/// The tenant's enrollment tokens that have not expired, newest first.
pub async fn list_enrollment_tokens(
    ex: &mut impl Exec,
    tenant: TenantId,
    now: OffsetDateTime,
) -> StoreResult<Vec<EnrollmentTokenRow>> {
    Ok(on!(ex, c => sqlx::query_as::<_, EnrollmentTokenRow>(
        "SELECT id, tags, created_by, created_at, expires_at FROM enrollment_tokens \
         WHERE tenant_id = $1 AND expires_at > $2 ORDER BY created_at DESC, id DESC")
        .bind(tenant.0).bind(now).fetch_all(&mut *c).await?))
}

/// Revokes an enrollment token; false when the tenant has no such token.
pub async fn delete_enrollment_token(
    ex: &mut impl Exec,
    tenant: TenantId,
    id: Uuid,
) -> StoreResult<bool> {
    let n = on!(ex, c => sqlx::query("DELETE FROM enrollment_tokens WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.0).bind(id).execute(&mut *c).await?.rows_affected());
    Ok(n == 1)
}

/// Every agent's push interval (seconds), by agent.
pub async fn ingest_intervals(
    ex: &mut impl Exec,
) -> StoreResult<std::collections::HashMap<Uuid, i64>> {
    let rows: Vec<(Uuid, i64)> = on!(ex, c => sqlx::query_as("SELECT id, ingest_interval_secs FROM agents")
        .fetch_all(&mut *c).await?);
    Ok(rows.into_iter().collect())
}
