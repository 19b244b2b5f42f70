//! Vulnerability findings and scans (CONTRACT 15): a host's scan replaces what it found for
//! the host — new findings inserted, known ones refreshed, vanished ones marked fixed — and
//! the tenant's findings are listed with filters and a keyset cursor.

use time::OffsetDateTime;
use trusthub_store::{Exec, StoreResult, TenantId, on};
use uuid::Uuid;

/// A finding row.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Finding {
    /// Id (UUIDv7: the list's order).
    pub id: Uuid,
    /// Tenant.
    pub tenant_id: Uuid,
    /// Host.
    pub agent_id: Uuid,
    /// What the last scan that found it saw.
    #[sqlx(flatten)]
    pub seen: Seen,
    /// First scan that found it.
    pub first_seen_at: OffsetDateTime,
    /// Last scan that found it.
    pub last_seen_at: OffsetDateTime,
    /// The scan that no longer found it.
    pub fixed_at: Option<OffsetDateTime>,
    /// Acknowledged at.
    pub acknowledged_at: Option<OffsetDateTime>,
    /// By whom.
    pub acknowledged_by: Option<String>,
    /// Why.
    pub ack_reason: Option<String>,
    /// The suppression that applies to it (one that has not expired), if any.
    pub suppression_id: Option<Uuid>,
    /// Its reason.
    pub suppression_reason: Option<String>,
    /// Its expiry.
    pub suppression_expires_at: Option<OffsetDateTime>,
}

const INSERT_COLUMNS: &str = "id, tenant_id, agent_id, ecosystem, package, project_path, vuln_id, aliases, \
    installed_version, fixed_versions, severity, severity_rank, cvss_score, summary, first_seen_at, \
    last_seen_at, fixed_at, acknowledged_at, acknowledged_by, ack_reason, binaries, source, source_kind";

/// A finding with the suppression applying to it at `$2` (the query's `now`).
const SELECT: &str = "SELECT f.id, f.tenant_id, f.agent_id, f.ecosystem, f.package, f.binaries, f.project_path, \
    f.source, f.source_kind, f.vuln_id, \
    f.aliases, f.installed_version, f.fixed_versions, f.severity, f.severity_rank, f.cvss_score, f.summary, \
    f.first_seen_at, f.last_seen_at, f.fixed_at, f.acknowledged_at, f.acknowledged_by, f.ack_reason, \
    s.id AS suppression_id, s.reason AS suppression_reason, s.expires_at AS suppression_expires_at \
    FROM cve_findings f LEFT JOIN cve_suppressions s ON s.id = f.suppression_id AND s.expires_at > $2";

/// What a host's scan found for one package and vulnerability.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Seen {
    /// OSV ecosystem.
    pub ecosystem: String,
    /// The package advisories name: the source package for OS packages, the dependency for
    /// application dependencies.
    pub package: String,
    /// The binary packages built from an OS source package that the host has installed, JSON
    /// array of `{"name", "version"}` (`[]` for application dependencies).
    pub binaries: String,
    /// Lockfile folder or `""`.
    pub project_path: String,
    /// Where the package was read (CONTRACT 29): the lockfile, the installed tree's root or
    /// the binary; `""` for OS packages.
    pub source: String,
    /// `lockfile`, `installed`, `binary`; `""` for OS packages.
    pub source_kind: String,
    /// Advisory id.
    pub vuln_id: String,
    /// JSON array.
    pub aliases: String,
    /// Installed version.
    pub installed_version: String,
    /// JSON array.
    pub fixed_versions: String,
    /// Severity label.
    pub severity: String,
    /// Its rank.
    pub severity_rank: i64,
    /// CVSS base score.
    pub cvss_score: Option<f64>,
    /// Summary.
    pub summary: String,
}

/// A finding's identity in a host's scan: ecosystem, package, project, source, version and
/// vulnerability (CONTRACT 29: one finding per project, package, version and source). OS
/// packages (no source) are keyed without their version, so an upgrade that does not fix
/// keeps the finding and its history.
type Key = (String, String, String, String, String, String);

fn key(
    ecosystem: &str,
    package: &str,
    project_path: &str,
    source: &str,
    version: &str,
    vuln_id: &str,
) -> Key {
    (
        ecosystem.to_owned(),
        package.to_owned(),
        project_path.to_owned(),
        source.to_owned(),
        if source.is_empty() {
            String::new()
        } else {
            version.to_owned()
        },
        vuln_id.to_owned(),
    )
}

impl Seen {
    /// Its identity among a scan's findings.
    pub fn key(&self) -> Key {
        key(
            &self.ecosystem,
            &self.package,
            &self.project_path,
            &self.source,
            &self.installed_version,
            &self.vuln_id,
        )
    }
}

/// One binary package of a source package's finding.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct Binary {
    /// Its name (`libcurl4`).
    pub name: String,
    /// Its installed version.
    pub version: String,
}

/// The binaries of a finding's JSON column (none when it does not read).
pub fn binaries(json: &str) -> Vec<Binary> {
    serde_json::from_str(json).unwrap_or_default()
}

fn binary_names(json: &str) -> Vec<String> {
    binaries(json).into_iter().map(|b| b.name).collect()
}

/// What a host's last scan read.
#[derive(Debug, Clone)]
pub struct LastScan {
    /// When.
    pub scanned_at: OffsetDateTime,
    /// The inventory snapshot's id.
    pub inventory_id: i64,
    /// The advisory data's generation (`osv::generation`, as [`generation_key`] writes it).
    pub advisories: String,
}

/// An advisory data generation as stored with scans.
pub fn generation_key(g: &(Option<OffsetDateTime>, i64)) -> String {
    format!(
        "{}|{}",
        g.0.map(|t| t.unix_timestamp().to_string())
            .unwrap_or_default(),
        g.1
    )
}

/// Every host's last scan.
pub async fn last_scans(
    ex: &mut impl Exec,
) -> StoreResult<std::collections::HashMap<Uuid, LastScan>> {
    let rows: Vec<(Uuid, OffsetDateTime, i64, String)> = on!(ex, c => sqlx::query_as(
        "SELECT agent_id, scanned_at, inventory_id, advisories FROM cve_scans")
        .fetch_all(&mut *c).await?);
    Ok(rows
        .into_iter()
        .map(|(a, scanned_at, inventory_id, advisories)| {
            (
                a,
                LastScan {
                    scanned_at,
                    inventory_id,
                    advisories,
                },
            )
        })
        .collect())
}

/// The last scan of each host of the tenant: `(agent, scanned_at, packages looked at, JSON
/// array of what could not be checked, JSON array of its sources)`.
pub async fn coverage(
    ex: &mut impl Exec,
    tenant: TenantId,
) -> StoreResult<Vec<(Uuid, OffsetDateTime, i64, String, String)>> {
    Ok(on!(ex, c => sqlx::query_as(
        "SELECT agent_id, scanned_at, packages, not_covered, sources FROM cve_scans WHERE tenant_id = $1")
        .bind(tenant.0).fetch_all(&mut *c).await?))
}

/// Stores a host's scan: `seen` replaces what the last one found. Returns the findings that
/// are new (or back after being fixed). Call inside a transaction.
#[allow(clippy::too_many_arguments)]
pub async fn record_scan(
    ex: &mut impl Exec,
    tenant: TenantId,
    agent: Uuid,
    seen: &[Seen],
    inventory_id: i64,
    advisories: &str,
    packages: i64,
    not_covered: &str,
    sources: &str,
    now: OffsetDateTime,
) -> StoreResult<Vec<Seen>> {
    /// id, ecosystem, package, project_path, source, installed_version, vuln_id, fixed_at.
    type Row = (
        Uuid,
        String,
        String,
        String,
        String,
        String,
        String,
        Option<OffsetDateTime>,
    );
    let existing: Vec<Row> = on!(ex, c => sqlx::query_as(
        "SELECT id, ecosystem, package, project_path, source, installed_version, vuln_id, fixed_at FROM cve_findings WHERE agent_id = $1")
        .bind(agent).fetch_all(&mut *c).await?);
    let mut known: std::collections::HashMap<Key, (Uuid, bool)> = existing
        .into_iter()
        .map(|(id, e, p, pp, src, v, vuln, fixed)| {
            (key(&e, &p, &pp, &src, &v, &vuln), (id, fixed.is_some()))
        })
        .collect();
    let mut new = Vec::new();
    for s in seen {
        let key = s.key();
        // A row of a former shape becomes this one, keeping its history and
        // acknowledgement: one written before findings named their source (the first source
        // finding the same package and vulnerability in the project adopts it), and one
        // per binary package (merged into the source package's row).
        let mut found = known.remove(&key);
        if found.is_none() && !s.source.is_empty() {
            found = known.remove(&self::key(
                &s.ecosystem,
                &s.package,
                &s.project_path,
                "",
                "",
                &s.vuln_id,
            ));
        }
        for b in binary_names(&s.binaries) {
            let old = self::key(&s.ecosystem, &b, &s.project_path, "", "", &s.vuln_id);
            if old == key {
                continue;
            }
            if let Some((id, was_fixed)) = known.remove(&old) {
                if found.is_none() {
                    found = Some((id, was_fixed));
                } else {
                    on!(ex, c => sqlx::query("DELETE FROM cve_findings WHERE id = $1")
                        .bind(id).execute(&mut *c).await?.rows_affected());
                }
            }
        }
        match found {
            Some((id, was_fixed)) => {
                on!(ex, c => sqlx::query(
                    "UPDATE cve_findings SET aliases = $1, installed_version = $2, fixed_versions = $3, severity = $4, \
                     severity_rank = $5, cvss_score = $6, summary = $7, last_seen_at = $8, fixed_at = NULL, \
                     package = $9, binaries = $10, source = $11, source_kind = $12 WHERE id = $13")
                    .bind(&s.aliases).bind(&s.installed_version).bind(&s.fixed_versions).bind(&s.severity)
                    .bind(s.severity_rank).bind(s.cvss_score).bind(&s.summary).bind(now)
                    .bind(&s.package).bind(&s.binaries).bind(&s.source).bind(&s.source_kind).bind(id)
                    .execute(&mut *c).await?.rows_affected());
                if was_fixed {
                    new.push(s.clone());
                }
            }
            None => {
                let sql = format!(
                    "INSERT INTO cve_findings ({INSERT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15, NULL, NULL, NULL, NULL, $16, $17, $18)"
                );
                on!(ex, c => sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(Uuid::now_v7()).bind(tenant.0).bind(agent).bind(&s.ecosystem).bind(&s.package)
                    .bind(&s.project_path).bind(&s.vuln_id).bind(&s.aliases).bind(&s.installed_version)
                    .bind(&s.fixed_versions).bind(&s.severity).bind(s.severity_rank).bind(s.cvss_score)
                    .bind(&s.summary).bind(now).bind(&s.binaries).bind(&s.source).bind(&s.source_kind)
                    .execute(&mut *c).await?.rows_affected());
                new.push(s.clone());
            }
        }
    }
    // Not seen any more: the installed version moved past the fix, or the package is gone.
    for (id, fixed) in known.into_values() {
        if !fixed {
            on!(ex, c => sqlx::query("UPDATE cve_findings SET fixed_at = $1 WHERE id = $2")
                .bind(now).bind(id).execute(&mut *c).await?.rows_affected());
        }
    }
    on!(ex, c => {
        sqlx::query("DELETE FROM cve_scans WHERE agent_id = $1").bind(agent).execute(&mut *c).await?;
        sqlx::query("INSERT INTO cve_scans (agent_id, tenant_id, scanned_at, inventory_id, packages, not_covered, advisories, sources) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)")
            .bind(agent).bind(tenant.0).bind(now).bind(inventory_id).bind(packages).bind(not_covered).bind(advisories).bind(sources)
            .execute(&mut *c).await?;
    });
    Ok(new)
}

/// One finding of the tenant (with the suppression applying at `now`).
pub async fn get(
    ex: &mut impl Exec,
    tenant: TenantId,
    id: Uuid,
    now: OffsetDateTime,
) -> StoreResult<Option<Finding>> {
    let sql = format!("{SELECT} WHERE f.tenant_id = $1 AND f.id = $3");
    Ok(
        on!(ex, c => sqlx::query_as::<_, Finding>(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).bind(now).bind(id).fetch_optional(&mut *c).await?),
    )
}

/// Sets (`Some((reason, by))`) or clears the acknowledgement of a finding.
pub async fn set_ack(
    ex: &mut impl Exec,
    tenant: TenantId,
    id: Uuid,
    ack: Option<(&str, &str)>,
    now: OffsetDateTime,
) -> StoreResult<()> {
    let (at, reason, by) = match ack {
        Some((r, b)) => (Some(now), Some(r), Some(b)),
        None => (None, None, None),
    };
    on!(ex, c => sqlx::query(
        "UPDATE cve_findings SET acknowledged_at = $1, ack_reason = $2, acknowledged_by = $3 WHERE tenant_id = $4 AND id = $5")
        .bind(at).bind(reason).bind(by).bind(tenant.0).bind(id).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// The tenant's findings of a vulnerability known by any of `ids` (as their id or among
/// their aliases), worst first.
pub async fn of_vulnerability(
    ex: &mut impl Exec,
    tenant: TenantId,
    ids: &[String],
    now: OffsetDateTime,
) -> StoreResult<Vec<Finding>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut clauses = Vec::new();
    let mut binds = Vec::new();
    for id in ids {
        binds.push(id.clone());
        clauses.push(format!("f.vuln_id = ${}", binds.len() + 2));
        binds.push(crate::store::osv::json_member_pattern(id));
        clauses.push(format!("f.aliases LIKE ${} ESCAPE '\\'", binds.len() + 2));
    }
    let sql = format!(
        "{SELECT} WHERE f.tenant_id = $1 AND ({}) ORDER BY f.severity_rank DESC, f.id DESC",
        clauses.join(" OR ")
    );
    Ok(on!(ex, c => {
        let mut q = sqlx::query_as::<_, Finding>(sqlx::AssertSqlSafe(sql)).bind(tenant.0).bind(now);
        for b in &binds { q = q.bind(b.clone()); }
        q.fetch_all(&mut *c).await?
    }))
}

/// Filters of the findings list.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// At least this rank.
    pub min_rank: Option<i64>,
    /// One host.
    pub agent_id: Option<Uuid>,
    /// One ecosystem.
    pub ecosystem: Option<String>,
    /// `open`, `suppressed`, `acknowledged`, `fixed`, or `unfixed` (the first three).
    pub status: Option<String>,
    /// One package.
    pub package: Option<String>,
}

/// The tenant's findings, worst first then newest, after `cursor` (`(rank, id)` of the last
/// row of the previous page); statuses as at `now` (a suppression applies until it expires).
pub async fn list(
    ex: &mut impl Exec,
    tenant: TenantId,
    f: &Filter,
    cursor: Option<(i64, Uuid)>,
    limit: i64,
    now: OffsetDateTime,
) -> StoreResult<Vec<Finding>> {
    let mut sql = format!("{SELECT} WHERE f.tenant_id = $1");
    let mut n = 2;
    let mut arg = |sql: &mut String, clause: &str| {
        n += 1;
        sql.push_str(&clause.replace('?', &format!("${n}")));
    };
    if f.min_rank.is_some() {
        arg(&mut sql, " AND f.severity_rank >= ?");
    }
    if f.agent_id.is_some() {
        arg(&mut sql, " AND f.agent_id = ?");
    }
    if f.ecosystem.is_some() {
        arg(&mut sql, " AND f.ecosystem = ?");
    }
    if f.package.is_some() {
        arg(&mut sql, " AND f.package = ?");
    }
    match f.status.as_deref() {
        Some("open") => {
            sql.push_str(" AND f.fixed_at IS NULL AND s.id IS NULL AND f.acknowledged_at IS NULL")
        }
        Some("suppressed") => sql.push_str(" AND f.fixed_at IS NULL AND s.id IS NOT NULL"),
        Some("acknowledged") => sql
            .push_str(" AND f.fixed_at IS NULL AND s.id IS NULL AND f.acknowledged_at IS NOT NULL"),
        Some("fixed") => sql.push_str(" AND f.fixed_at IS NOT NULL"),
        // Open, suppressed and acknowledged: what is still installed.
        Some("unfixed") => sql.push_str(" AND f.fixed_at IS NULL"),
        _ => {}
    }
    if cursor.is_some() {
        n += 1;
        let r = n;
        n += 1;
        sql.push_str(&format!(
            " AND (f.severity_rank < ${r} OR (f.severity_rank = ${r} AND f.id < ${n}))"
        ));
    }
    n += 1;
    sql.push_str(&format!(
        " ORDER BY f.severity_rank DESC, f.id DESC LIMIT ${n}"
    ));
    Ok(on!(ex, c => {
        let mut q = sqlx::query_as::<_, Finding>(sqlx::AssertSqlSafe(sql)).bind(tenant.0).bind(now);
        if let Some(r) = f.min_rank { q = q.bind(r); }
        if let Some(a) = f.agent_id { q = q.bind(a); }
        if let Some(e) = &f.ecosystem { q = q.bind(e.clone()); }
        if let Some(p) = &f.package { q = q.bind(p.clone()); }
        if let Some((r, id)) = cursor { q = q.bind(r).bind(id); }
        q.bind(limit).fetch_all(&mut *c).await?
    }))
}

/// The unfixed findings of several hosts (at most 500 ids), statuses as at `now`.
pub async fn unfixed_of_agents(
    ex: &mut impl Exec,
    agents: &[Uuid],
    now: OffsetDateTime,
) -> StoreResult<Vec<Finding>> {
    if agents.is_empty() {
        return Ok(Vec::new());
    }
    // `SELECT` names its instant `$2`; here it is the only parameter before the ids.
    let list: Vec<String> = (0..agents.len()).map(|i| format!("${}", i + 2)).collect();
    let sql = format!(
        "{} WHERE f.fixed_at IS NULL AND f.agent_id IN ({})",
        SELECT.replace("$2", "$1"),
        list.join(", ")
    );
    Ok(on!(ex, c => {
        let mut q = sqlx::query_as::<_, Finding>(sqlx::AssertSqlSafe(sql.clone())).bind(now);
        for a in agents {
            q = q.bind(*a);
        }
        q.fetch_all(&mut *c).await?
    }))
}

/// How many open findings (not fixed, not acknowledged, not under a suppression in force at
/// `now`) each of `tenant`'s `agents` has per severity rank: `(agent, rank, count)`.
pub async fn open_counts_of_agents(
    ex: &mut impl Exec,
    tenant: TenantId,
    agents: &[Uuid],
    now: OffsetDateTime,
) -> StoreResult<Vec<(Uuid, i64, i64)>> {
    if agents.is_empty() {
        return Ok(Vec::new());
    }
    let list: Vec<String> = (0..agents.len()).map(|i| format!("${}", i + 3)).collect();
    let sql = format!(
        "SELECT f.agent_id, f.severity_rank, COUNT(*) FROM cve_findings f \
         LEFT JOIN cve_suppressions s ON s.id = f.suppression_id AND s.expires_at > $1 \
         WHERE f.fixed_at IS NULL AND f.acknowledged_at IS NULL AND s.id IS NULL \
         AND f.tenant_id = $2 AND f.agent_id IN ({}) GROUP BY f.agent_id, f.severity_rank",
        list.join(", ")
    );
    Ok(on!(ex, c => {
        let mut q = sqlx::query_as::<_, (Uuid, i64, i64)>(sqlx::AssertSqlSafe(sql.clone()))
            .bind(now)
            .bind(tenant.0);
        for a in agents {
            q = q.bind(*a);
        }
        q.fetch_all(&mut *c).await?
    }))
}

// ---- suppressions -----------------------------------------------------------------------------

/// A suppression row.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Suppression {
    /// Id.
    pub id: Uuid,
    /// Tenant.
    pub tenant_id: Uuid,
    /// OSV ecosystem (`npm`, `PyPI`, `Debian:12`, or `Debian` for every release).
    pub ecosystem: String,
    /// The package as given.
    pub package_name: String,
    /// As the scan compares names.
    pub package_key: String,
    /// In the ecosystem's range syntax.
    pub version_range: String,
    /// One vulnerability (by id or alias), or every one of the package in the range.
    pub vuln_id: Option<String>,
    /// Why.
    pub reason: String,
    /// Stops applying then.
    pub expires_at: OffsetDateTime,
    /// `user:<id>` or `token:<id>`.
    pub created_by: String,
    /// Created.
    pub created_at: OffsetDateTime,
}

const SUPPRESSION_COLUMNS: &str = "id, tenant_id, ecosystem, package_name, package_key, version_range, \
    vuln_id, reason, expires_at, created_by, created_at";

/// Stores a suppression.
pub async fn insert_suppression(ex: &mut impl Exec, s: &Suppression) -> StoreResult<()> {
    let sql = format!(
        "INSERT INTO cve_suppressions ({SUPPRESSION_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
    );
    on!(ex, c => sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(s.id).bind(s.tenant_id).bind(&s.ecosystem).bind(&s.package_name).bind(&s.package_key)
        .bind(&s.version_range).bind(&s.vuln_id).bind(&s.reason).bind(s.expires_at)
        .bind(&s.created_by).bind(s.created_at)
        .execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// The tenant's suppressions, newest first, each with how many unfixed findings it
/// suppresses at `now` (0 once expired).
pub async fn suppressions(
    ex: &mut impl Exec,
    tenant: TenantId,
    now: OffsetDateTime,
) -> StoreResult<Vec<(Suppression, i64)>> {
    let sql = format!(
        "SELECT {SUPPRESSION_COLUMNS}, (SELECT COUNT(*) FROM cve_findings f WHERE f.suppression_id = s.id \
         AND f.fixed_at IS NULL AND s.expires_at > $2) AS n FROM cve_suppressions s WHERE tenant_id = $1 \
         ORDER BY created_at DESC, id DESC"
    );
    let rows: Vec<SuppressionCount> = on!(ex, c => sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).bind(now).fetch_all(&mut *c).await?);
    Ok(rows.into_iter().map(|r| (r.s, r.n)).collect())
}

#[derive(sqlx::FromRow)]
struct SuppressionCount {
    #[sqlx(flatten)]
    s: Suppression,
    n: i64,
}

/// One suppression of the tenant.
pub async fn suppression(
    ex: &mut impl Exec,
    tenant: TenantId,
    id: Uuid,
) -> StoreResult<Option<Suppression>> {
    let sql = format!(
        "SELECT {SUPPRESSION_COLUMNS} FROM cve_suppressions WHERE tenant_id = $1 AND id = $2"
    );
    Ok(on!(ex, c => sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).bind(id).fetch_optional(&mut *c).await?))
}

/// Deletes a suppression; the findings it applied to are left for re-evaluation.
pub async fn delete_suppression(ex: &mut impl Exec, tenant: TenantId, id: Uuid) -> StoreResult<()> {
    on!(ex, c => sqlx::query("DELETE FROM cve_suppressions WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.0).bind(id).execute(&mut *c).await?.rows_affected());
    Ok(())
}

/// The tenant's suppressions that have not expired at `now`.
pub async fn active_suppressions(
    ex: &mut impl Exec,
    tenant: TenantId,
    now: OffsetDateTime,
) -> StoreResult<Vec<Suppression>> {
    let sql = format!(
        "SELECT {SUPPRESSION_COLUMNS} FROM cve_suppressions WHERE tenant_id = $1 AND expires_at > $2"
    );
    Ok(on!(ex, c => sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(tenant.0).bind(now).fetch_all(&mut *c).await?))
}

/// What suppression matching reads of an unfixed finding.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Candidate {
    /// Finding id.
    pub id: Uuid,
    /// Ecosystem.
    pub ecosystem: String,
    /// Package as installed.
    pub package: String,
    /// Advisory id.
    pub vuln_id: String,
    /// JSON array.
    pub aliases: String,
    /// Installed version.
    pub installed_version: String,
    /// JSON array of its binary packages.
    pub binaries: String,
    /// The suppression recorded for it.
    pub suppression_id: Option<Uuid>,
}

/// The tenant's unfixed findings (of one host when `agent` is given).
pub async fn candidates(
    ex: &mut impl Exec,
    tenant: TenantId,
    agent: Option<Uuid>,
) -> StoreResult<Vec<Candidate>> {
    let base = "SELECT id, ecosystem, package, vuln_id, aliases, installed_version, binaries, suppression_id \
         FROM cve_findings WHERE tenant_id = $1 AND fixed_at IS NULL";
    Ok(match agent {
        Some(a) => {
            on!(ex, c => sqlx::query_as(sqlx::AssertSqlSafe(format!("{base} AND agent_id = $2")))
            .bind(tenant.0).bind(a).fetch_all(&mut *c).await?)
        }
        None => on!(ex, c => sqlx::query_as(sqlx::AssertSqlSafe(base))
            .bind(tenant.0).fetch_all(&mut *c).await?),
    })
}

/// Records which suppression applies to a finding.
pub async fn set_suppression(
    ex: &mut impl Exec,
    finding: Uuid,
    suppression: Option<Uuid>,
) -> StoreResult<()> {
    on!(ex, c => sqlx::query("UPDATE cve_findings SET suppression_id = $1 WHERE id = $2")
        .bind(suppression).bind(finding).execute(&mut *c).await?.rows_affected());
    Ok(())
}
