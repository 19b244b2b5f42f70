//! What auto-patch reads of a host's vulnerabilities (CONTRACT 19): its unfixed findings with
//! their fixes, acknowledgement and suppression, in the advisory's words. Auto-patch decides
//! what to install; this module only tells it what the scan found.

use time::OffsetDateTime;
use trusthub_store::{Exec, StoreResult, TenantId};
use uuid::Uuid;

/// A finding of one host, open, acknowledged or suppressed (not fixed).
#[derive(Debug, Clone)]
pub struct HostFinding {
    /// The finding.
    pub id: Uuid,
    /// Its tenant (the host's).
    pub tenant: TenantId,
    /// OSV ecosystem (`Debian:12`, `npm`).
    pub ecosystem: String,
    /// The package the advisory names: the source package of OS packages.
    pub package: String,
    /// The binary packages of an OS source package installed on the host, `(name,
    /// version)`; empty for application dependencies.
    pub binaries: Vec<(String, String)>,
    /// The lockfile's folder of an application dependency; `""` for OS packages.
    pub project_path: String,
    /// The advisory.
    pub vuln_id: String,
    /// The installed version (the source package's for OS packages).
    pub installed_version: String,
    /// Versions that fix it.
    pub fixed_versions: Vec<String>,
    /// `CRITICAL`, `HIGH`, ...
    pub severity: String,
    /// 0 (unknown) to 4 (critical).
    pub severity_rank: i64,
    /// An operator acknowledged it.
    pub acknowledged: bool,
    /// The suppression in force that matches it: `(id, reason)`.
    pub suppression: Option<(Uuid, String)>,
}

/// Every unfixed finding of `tenant`'s `agent`, as at `now` (a suppression applies until it
/// expires).
pub async fn unfixed_findings(
    ex: &mut impl Exec,
    tenant: TenantId,
    agent: Uuid,
    now: OffsetDateTime,
) -> StoreResult<Vec<HostFinding>> {
    let mut all = unfixed_findings_of(ex, &[agent], now).await?;
    Ok(all
        .remove(&agent)
        .unwrap_or_default()
        .into_iter()
        .filter(|f| f.tenant == tenant)
        .collect())
}

/// The unfixed findings of each of `agents` (of any tenant; each finding is its host's
/// tenant's), read in a few queries: what one auto-patch cycle plans from.
pub async fn unfixed_findings_of(
    ex: &mut impl Exec,
    agents: &[Uuid],
    now: OffsetDateTime,
) -> StoreResult<std::collections::HashMap<Uuid, Vec<HostFinding>>> {
    let mut out: std::collections::HashMap<Uuid, Vec<HostFinding>> = Default::default();
    for chunk in agents.chunks(500) {
        for f in crate::store::cve::unfixed_of_agents(&mut *ex, chunk, now).await? {
            out.entry(f.agent_id).or_default().push(f.into());
        }
    }
    Ok(out)
}

/// How many open findings (not fixed, acknowledged or suppressed) each of `tenant`'s
/// `agents` has, by severity rank: counted by the database, for the Trust Score.
pub async fn open_counts_of(
    ex: &mut impl Exec,
    tenant: TenantId,
    agents: &[Uuid],
    now: OffsetDateTime,
) -> StoreResult<std::collections::HashMap<Uuid, Vec<(i64, u32)>>> {
    let mut out: std::collections::HashMap<Uuid, Vec<(i64, u32)>> = Default::default();
    for chunk in agents.chunks(500) {
        for (agent, rank, n) in
            crate::store::cve::open_counts_of_agents(&mut *ex, tenant, chunk, now).await?
        {
            out.entry(agent)
                .or_default()
                .push((rank, u32::try_from(n).unwrap_or(u32::MAX)));
        }
    }
    Ok(out)
}

impl From<crate::store::cve::Finding> for HostFinding {
    fn from(f: crate::store::cve::Finding) -> Self {
        HostFinding {
            id: f.id,
            tenant: TenantId(f.tenant_id),
            binaries: crate::store::cve::binaries(&f.seen.binaries)
                .into_iter()
                .map(|b| (b.name, b.version))
                .collect(),
            fixed_versions: serde_json::from_str(&f.seen.fixed_versions).unwrap_or_default(),
            acknowledged: f.acknowledged_at.is_some(),
            suppression: f
                .suppression_id
                .map(|id| (id, f.suppression_reason.unwrap_or_default())),
            ecosystem: f.seen.ecosystem,
            package: f.seen.package,
            project_path: f.seen.project_path,
            vuln_id: f.seen.vuln_id,
            installed_version: f.seen.installed_version,
            severity: f.seen.severity,
            severity_rank: f.seen.severity_rank,
        }
    }
}
