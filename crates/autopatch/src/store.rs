//! Auto-patch tables: per-host settings, attempts, recorded skips (CONTRACT 19).

use time::OffsetDateTime;
use trusthub_store::{Exec, StoreResult, TenantId, on};
use uuid::Uuid;

/// A host's settings row (SPEC 2.8).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Settings {
    /// The host.
    pub agent_id: Uuid,
    /// Its tenant.
    pub tenant_id: Uuid,
    /// OS packages patched.
    pub os_packages: bool,
    /// Application dependencies patched.
    pub app_deps: bool,
    /// `CRITICAL` or `HIGH`.
    pub min_severity: String,
    /// Who last turned a flag on.
    pub enabled_by: Option<Uuid>,
    /// When.
    pub enabled_at: Option<OffsetDateTime>,
    /// The `remediation.auto_flag_set` entry of that.
    pub flag_seq: Option<i64>,
    /// The worker's last run for the host.
    pub last_run_at: Option<OffsetDateTime>,
}

impl Settings {
    /// The defaults of a host never configured.
    pub fn default_for(tenant: TenantId, agent: Uuid) -> Settings {
        Settings {
            agent_id: agent,
            tenant_id: tenant.0,
            os_packages: false,
            app_deps: false,
            min_severity: "HIGH".into(),
            enabled_by: None,
            enabled_at: None,
            flag_seq: None,
            last_run_at: None,
        }
    }
}

const SETTINGS: &str = "agent_id, tenant_id, os_packages, app_deps, min_severity, enabled_by, enabled_at, flag_seq, last_run_at";

/// A host's settings, if ever set.
pub async fn settings(
    ex: &mut impl Exec,
    tenant: TenantId,
    agent: Uuid,
) -> StoreResult<Option<Settings>> {
    let sql = format!(
        "SELECT {SETTINGS} FROM auto_patch_settings WHERE tenant_id = $1 AND agent_id = $2"
    );
    Ok(
        on!(ex, c => sqlx::query_as::<_, Settings>(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).bind(agent).fetch_optional(&mut *c).await?),
    )
}

/// Every host with a flag on, of every tenant.
pub async fn enabled(ex: &mut impl Exec) -> StoreResult<Vec<Settings>> {
    let sql = format!(
        "SELECT {SETTINGS} FROM auto_patch_settings WHERE os_packages OR app_deps ORDER BY agent_id"
    );
    Ok(
        on!(ex, c => sqlx::query_as::<_, Settings>(sqlx::AssertSqlSafe(sql))
        .fetch_all(&mut *c).await?),
    )
}

/// Writes a host's settings.
pub async fn put(ex: &mut impl Exec, s: &Settings) -> StoreResult<()> {
    on!(ex, c => sqlx::query(
        "INSERT INTO auto_patch_settings (agent_id, tenant_id, os_packages, app_deps, min_severity, enabled_by, enabled_at, flag_seq, last_run_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (agent_id) DO UPDATE SET os_packages = $3, app_deps = $4, \
         min_severity = $5, enabled_by = $6, enabled_at = $7, flag_seq = $8, last_run_at = $9")
        .bind(s.agent_id).bind(s.tenant_id).bind(s.os_packages).bind(s.app_deps).bind(&s.min_severity)
        .bind(s.enabled_by).bind(s.enabled_at).bind(s.flag_seq).bind(s.last_run_at)
        .execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// Marks a host's run.
pub async fn ran(ex: &mut impl Exec, agent: Uuid, now: OffsetDateTime) -> StoreResult<()> {
    on!(ex, c => sqlx::query("UPDATE auto_patch_settings SET last_run_at = $2 WHERE agent_id = $1")
        .bind(agent).bind(now).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// An attempt row.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Attempt {
    /// The action's nonce.
    pub eat_nonce: String,
    /// Tenant.
    pub tenant_id: Uuid,
    /// Host.
    pub agent_id: Uuid,
    /// `os_packages` or `app_deps`.
    pub category: String,
    /// `apt`, `npm`, ...
    pub manager: String,
    /// OSV ecosystem.
    pub ecosystem: String,
    /// Lockfile folder or `""`.
    pub project_path: String,
    /// What identifies its packages (the no-retry rule).
    pub package_key: String,
    /// Its advisories, comma-separated and sorted.
    pub advisories: String,
    /// JSON array of `rules::Change`.
    pub packages: String,
    /// `proposed`, `applied` or `rolled_back`.
    pub status: String,
    /// The agent's exit code.
    pub exit_code: Option<i64>,
    /// The agent's note.
    pub note: Option<String>,
    /// Dispatched.
    pub created_at: OffsetDateTime,
    /// The token's expiry.
    pub expires_at: OffsetDateTime,
    /// The answer's time.
    pub finished_at: Option<OffsetDateTime>,
}

const ATTEMPT: &str = "eat_nonce, tenant_id, agent_id, category, manager, ecosystem, project_path, package_key, \
    advisories, packages, status, exit_code, note, created_at, expires_at, finished_at";

/// Records attempts (one statement per hundred).
pub async fn insert_attempts(ex: &mut impl Exec, all: &[Attempt]) -> StoreResult<()> {
    for chunk in all.chunks(trusthub_store::ROWS_PER_INSERT) {
        let sql = format!(
            "INSERT INTO auto_patch_attempts ({ATTEMPT}) VALUES {}",
            trusthub_store::values(chunk.len(), 16)
        );
        on!(ex, c => {
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql.clone()));
            for a in chunk {
                q = q.bind(&a.eat_nonce).bind(a.tenant_id).bind(a.agent_id).bind(&a.category).bind(&a.manager)
                    .bind(&a.ecosystem).bind(&a.project_path).bind(&a.package_key).bind(&a.advisories).bind(&a.packages)
                    .bind(&a.status).bind(a.exit_code).bind(&a.note).bind(a.created_at).bind(a.expires_at).bind(a.finished_at);
            }
            q.execute(&mut *c).await?.rows_affected()
        });
    }
    Ok(())
}

/// The tenant's attempts rolled back at or after `since`: `(nonce, agent, packages JSON)`.
pub async fn rolled_back_since(
    ex: &mut impl Exec,
    tenant: TenantId,
    since: OffsetDateTime,
) -> StoreResult<Vec<(String, Uuid, String)>> {
    Ok(on!(ex, c => sqlx::query_as::<_, (String, Uuid, String)>(
        "SELECT eat_nonce, agent_id, packages FROM auto_patch_attempts \
         WHERE tenant_id = $1 AND status = 'rolled_back' AND finished_at >= $2 ORDER BY eat_nonce")
        .bind(tenant.0).bind(since).fetch_all(&mut *c).await?))
}

/// A host's attempts, newest first.
pub async fn attempts(
    ex: &mut impl Exec,
    tenant: TenantId,
    agent: Uuid,
    limit: i64,
) -> StoreResult<Vec<Attempt>> {
    let sql = format!(
        "SELECT {ATTEMPT} FROM auto_patch_attempts WHERE tenant_id = $1 AND agent_id = $2 \
         ORDER BY created_at DESC, eat_nonce DESC LIMIT $3"
    );
    Ok(
        on!(ex, c => sqlx::query_as::<_, Attempt>(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).bind(agent).bind(limit).fetch_all(&mut *c).await?),
    )
}

/// One attempt of an agent, by nonce.
pub async fn attempt(ex: &mut impl Exec, agent: Uuid, nonce: &str) -> StoreResult<Option<Attempt>> {
    let sql =
        format!("SELECT {ATTEMPT} FROM auto_patch_attempts WHERE agent_id = $1 AND eat_nonce = $2");
    Ok(
        on!(ex, c => sqlx::query_as::<_, Attempt>(sqlx::AssertSqlSafe(sql))
        .bind(agent).bind(nonce).fetch_optional(&mut *c).await?),
    )
}

/// Records an attempt's answer; false when it had one already.
pub async fn finish(
    ex: &mut impl Exec,
    agent: Uuid,
    nonce: &str,
    status: &str,
    exit_code: Option<i64>,
    note: Option<&str>,
    now: OffsetDateTime,
) -> StoreResult<bool> {
    Ok(on!(ex, c => sqlx::query(
        "UPDATE auto_patch_attempts SET status = $3, exit_code = $4, note = $5, finished_at = $6 \
         WHERE agent_id = $1 AND eat_nonce = $2 AND status = 'proposed'")
        .bind(agent).bind(nonce).bind(status).bind(exit_code).bind(note).bind(now)
        .execute(&mut *c).await?.rows_affected())
        == 1)
}

/// The keys a host's next cycle must not send: attempts in flight (by package key),
/// rolled-back ones (by package key and advisories) unless `retry_rolled_back` (a forced
/// run), and applied ones while the installed version is still the one they upgraded (by
/// package key, advisories and that version).
pub async fn blocked(
    ex: &mut impl Exec,
    agent: Uuid,
    now: OffsetDateTime,
    retry_rolled_back: bool,
) -> StoreResult<std::collections::HashSet<String>> {
    Ok(blocked_of(ex, Some(agent), now, retry_rolled_back)
        .await?
        .remove(&agent)
        .unwrap_or_default())
}

/// [`blocked`] for every host at once (one cycle reads it once).
pub async fn blocked_all(
    ex: &mut impl Exec,
    now: OffsetDateTime,
) -> StoreResult<std::collections::HashMap<Uuid, std::collections::HashSet<String>>> {
    blocked_of(ex, None, now, false).await
}

/// [`blocked`] for every host, keeping only what is in flight or just applied (an
/// auto-update-all request tries rolled-back targets again).
pub async fn in_flight_all(
    ex: &mut impl Exec,
    now: OffsetDateTime,
) -> StoreResult<std::collections::HashMap<Uuid, std::collections::HashSet<String>>> {
    blocked_of(ex, None, now, true).await
}

/// How long an applied attempt holds back its package: until the host's next inventory
/// shows the new version, which is hours at most; a week covers a host that was away.
const APPLIED_HOLD_DAYS: i64 = 7;

async fn blocked_of(
    ex: &mut impl Exec,
    agent: Option<Uuid>,
    now: OffsetDateTime,
    retry_rolled_back: bool,
) -> StoreResult<std::collections::HashMap<Uuid, std::collections::HashSet<String>>> {
    let rows: Vec<(Uuid, String, String, String, OffsetDateTime)> = on!(ex, c => sqlx::query_as(
        "SELECT agent_id, package_key, packages, status, expires_at FROM auto_patch_attempts \
         WHERE ($1 IS NULL OR agent_id = $1) AND ((status = 'proposed' AND expires_at > $2) \
         OR status = 'rolled_back' OR (status = 'applied' AND created_at > $3))")
        .bind(agent).bind(now).bind(now - time::Duration::days(APPLIED_HOLD_DAYS))
        .fetch_all(&mut *c).await?);
    let mut out: std::collections::HashMap<Uuid, std::collections::HashSet<String>> =
        Default::default();
    for (agent, key, packages, status, _) in rows {
        let set = out.entry(agent).or_default();
        let prefix = key.rsplit_once('|').map(|(p, _)| p).unwrap_or_default();
        let changes =
            || -> Vec<crate::rules::Change> { serde_json::from_str(&packages).unwrap_or_default() };
        match status.as_str() {
            // Keys of merged dependency actions name the packages after the first with `+`.
            "proposed" => set.extend(split_key(&key)),
            "rolled_back" if !retry_rolled_back => {
                for c in changes() {
                    let package = c.source.unwrap_or(c.name);
                    set.insert(format!("{prefix}|{package}|{}", c.vuln_ids.join(",")));
                }
            }
            // Applied, and the host's inventory still shows the version it had before:
            // the next scan will see the fix; sending it again would do nothing.
            "applied" => {
                for c in changes() {
                    let from = c.from.clone();
                    let package = c.source.unwrap_or(c.name);
                    set.insert(format!(
                        "{prefix}|{package}|{}|{from}",
                        c.vuln_ids.join(",")
                    ));
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

/// The package keys of an attempt's key (`eco|project|a+b+c`).
fn split_key(key: &str) -> Vec<String> {
    let mut parts = key.rsplitn(2, '|');
    let names = parts.next().unwrap_or_default();
    let prefix = parts.next().unwrap_or_default();
    names.split('+').map(|n| format!("{prefix}|{n}")).collect()
}

/// Records a skip; false when that (package, advisory, reason, detail) was recorded before.
#[allow(clippy::too_many_arguments)]
pub async fn record_skip(
    ex: &mut impl Exec,
    tenant: TenantId,
    agent: Uuid,
    package: &str,
    vuln_id: &str,
    reason: &str,
    detail: &str,
    now: OffsetDateTime,
) -> StoreResult<bool> {
    Ok(on!(ex, c => sqlx::query(
        "INSERT INTO auto_patch_skips (agent_id, tenant_id, package, vuln_id, reason, detail, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING")
        .bind(agent).bind(tenant.0).bind(package).bind(vuln_id).bind(reason).bind(detail).bind(now)
        .execute(&mut *c).await?.rows_affected())
        == 1)
}

#[cfg(test)]
mod tests {
    #[test]
    fn merged_keys_name_each_package() {
        assert_eq!(
            super::split_key("npm|/srv/app|express+qs"),
            vec!["npm|/srv/app|express", "npm|/srv/app|qs"]
        );
        assert_eq!(
            super::split_key("Debian:12||openssl"),
            vec!["Debian:12||openssl"]
        );
    }
}
