//! npm maintainer tracking (SPEC 2.7, CONTRACT 15), once per cluster: every pass reads the
//! npm packages the agents' lockfiles name, asks the registry for the packuments that are
//! due (never read, or read more than `TRUSTHUB_SUPPLY_CHAIN_INTERVAL_SECS` ago) — with
//! `If-None-Match`, at most `TRUSTHUB_NPM_REGISTRY_REQUESTS_PER_MINUTE`, backing off on 429
//! and errors — and raises a `supply_chain` alert in every tenant depending on a package whose
//! maintainer set changed. The first read of a package is its baseline (no alert).

use crate::state::AppState;
use crate::store::npm::Package;
use std::collections::{BTreeMap, BTreeSet};
use time::OffsetDateTime;
use trusthub_store::{StoreResult, TenantId};
use uuid::Uuid;

/// The lease and log name of this job.
pub const JOB: &str = "supply_chain";

/// Seconds between passes (`TRUSTHUB_SUPPLY_CHAIN_CHECK_SECS`, 60).
pub fn interval(s: &trusthub_platform::settings::Settings) -> u64 {
    crate::settings::of(s).supply_chain_check_secs.max(1)
}

/// One scheduled run at `now`.
pub async fn tick(state: &AppState, now: OffsetDateTime) -> StoreResult<()> {
    track(state, now).await.map(|_| ())
}

/// Who depends on a package: `(tenant, agent, hostname)`.
pub type Dependents = BTreeMap<String, BTreeSet<(Uuid, Uuid, String)>>;

/// The npm packages each host's latest inventory names.
pub async fn dependents(state: &AppState, tenant: Option<TenantId>) -> StoreResult<Dependents> {
    let mut c = state.db.conn().await?;
    let hosts = trusthub_fleet::inventories(&mut c).await?;
    let mut out = Dependents::new();
    for (t, agent, hostname, inventory) in hosts {
        if tenant.is_some_and(|x| x.0 != t) {
            continue;
        }
        let Some(snapshot) = trusthub_fleet::inventory(&mut c, inventory).await? else {
            continue;
        };
        for d in snapshot.app_dependencies() {
            if d.ecosystem.as_deref() != Some("npm") {
                continue;
            }
            if let Some(name) = d.name.as_deref().filter(|n| valid_name(n)) {
                out.entry(name.to_owned())
                    .or_default()
                    .insert((t, agent, hostname.clone()));
            }
        }
    }
    Ok(out)
}

/// npm's package-name rules, loosely: what may be asked of the registry.
fn valid_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 214
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || "@/._-~".contains(c))
}

/// What one pass did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Report {
    /// Registry requests made.
    pub requests: usize,
    /// Answered 304 Not Modified.
    pub not_modified: usize,
    /// Packages whose maintainer set changed.
    pub changed: Vec<String>,
    /// Whether the registry asked to slow down (429), ending the pass.
    pub throttled: bool,
}

fn backoff(failures: i64, retry_after: Option<u64>) -> time::Duration {
    let secs = retry_after.unwrap_or_else(|| 60u64.saturating_mul(1 << failures.clamp(0, 6)));
    time::Duration::seconds(secs.min(3600) as i64)
}

/// Runs one pass at `now`.
pub async fn track(state: &AppState, now: OffsetDateTime) -> StoreResult<Report> {
    let deps = dependents(state, None).await?;
    let known: BTreeMap<String, Package> = {
        let mut c = state.db.conn().await?;
        crate::store::npm::all(&mut c)
            .await?
            .into_iter()
            .map(|p| (p.name.clone(), p))
            .collect()
    };
    let every = time::Duration::seconds(
        crate::settings::of(&state.settings)
            .supply_chain_interval_secs
            .max(1) as i64,
    );
    let mut due: Vec<(Option<OffsetDateTime>, &String)> = deps
        .keys()
        .filter_map(|name| match known.get(name) {
            None => Some((None, name)),
            Some(p) => {
                let waiting = p.retry_at.is_some_and(|r| r > now);
                let fresh = p.fetched_at.is_some_and(|f| f + every > now);
                (!waiting && !fresh).then_some((p.fetched_at, name))
            }
        })
        .collect();
    // Never read first, then the longest unread.
    due.sort();
    // At most a minute's worth of requests per pass (passes are at least the check interval
    // apart, so never more than the cap per minute).
    let budget = (crate::settings::of(&state.settings).npm_registry_requests_per_minute
        * crate::settings::of(&state.settings)
            .supply_chain_check_secs
            .clamp(1, 60))
    .div_ceil(60)
    .max(1) as usize;
    let policy = crate::outbound::Policy::of(&state.settings);
    if let Err(e) = policy.check_target(&crate::settings::of(&state.settings).npm_registry) {
        tracing::warn!(error = %e, "TRUSTHUB_NPM_REGISTRY is refused by the outbound policy");
        return Ok(Report::default());
    }
    let client = match policy
        .client()
        .timeout(std::time::Duration::from_secs(30))
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(error = %e, "no HTTP client for the npm registry");
            return Ok(Report::default());
        }
    };
    let base = crate::settings::of(&state.settings)
        .npm_registry
        .trim_end_matches('/')
        .to_owned();
    let mut report = Report::default();
    for (_, name) in due.into_iter().take(budget) {
        let mut p = known.get(name).cloned().unwrap_or_else(|| Package {
            name: name.clone(),
            maintainers: "[]".into(),
            previous_maintainers: "[]".into(),
            ..Default::default()
        });
        let mut req = client
            .get(format!(
                "{base}/{}",
                crate::rules::supply_chain::registry_path(name)
            ))
            // The full packument: the abbreviated one has no maintainers.
            .header("accept", "application/json");
        if let Some(e) = &p.etag {
            req = req.header("if-none-match", e);
        }
        report.requests += 1;
        let answer = req.send().await;
        let mut change = None;
        match answer {
            Ok(r) if r.status() == reqwest::StatusCode::NOT_MODIFIED => {
                report.not_modified += 1;
                p.fetched_at = Some(now);
                p.failures = 0;
                p.retry_at = None;
                p.last_error = None;
            }
            Ok(r) if r.status() == reqwest::StatusCode::TOO_MANY_REQUESTS => {
                let after = r
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<u64>().ok());
                p.retry_at = Some(now + backoff(p.failures, after));
                p.failures += 1;
                p.last_error = Some("429 Too Many Requests".into());
                report.throttled = true;
            }
            Ok(r) if r.status() == reqwest::StatusCode::NOT_FOUND => {
                // Unpublished or private: asked again after the interval.
                p.fetched_at = Some(now);
                p.failures = 0;
                p.retry_at = None;
                p.last_error = Some("not in the registry".into());
            }
            Ok(r) if r.status().is_success() => {
                let etag = r
                    .headers()
                    .get("etag")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let facts = r
                    .json::<serde_json::Value>()
                    .await
                    .ok()
                    .as_ref()
                    .and_then(crate::rules::supply_chain::facts);
                match facts {
                    Some(f) => {
                        let now_set = serde_json::to_string(&f.maintainers).unwrap_or_default();
                        if p.fetched_at.is_some() && p.maintainers != now_set {
                            change = Some((p.maintainers.clone(), f.maintainers.clone()));
                            p.previous_maintainers = p.maintainers.clone();
                            p.changed_at = Some(now);
                            p.registry_modified_at = f.modified.as_deref().and_then(|m| {
                                OffsetDateTime::parse(
                                    m,
                                    &time::format_description::well_known::Rfc3339,
                                )
                                .ok()
                                .map(|t| t.replace_nanosecond(0).unwrap_or(t))
                            });
                        }
                        p.maintainers = now_set;
                        p.deprecated = f.deprecated;
                        p.latest_version = f.latest;
                        p.etag = etag;
                        p.fetched_at = Some(now);
                        p.failures = 0;
                        p.retry_at = None;
                        p.last_error = None;
                    }
                    None => {
                        p.retry_at = Some(now + backoff(p.failures, None));
                        p.failures += 1;
                        p.last_error = Some("the registry's answer is not a packument".into());
                    }
                }
            }
            Ok(r) => {
                p.retry_at = Some(now + backoff(p.failures, None));
                p.failures += 1;
                p.last_error = Some(format!("HTTP {}", r.status().as_u16()));
            }
            Err(e) => {
                p.retry_at = Some(now + backoff(p.failures, None));
                p.failures += 1;
                p.last_error = Some(format!("the registry could not be read: {e}"));
            }
        }
        let mut tx = state.db.begin().await?;
        crate::store::npm::save(&mut tx, &p).await?;
        if let Some((before, after)) = change {
            let before: Vec<String> = serde_json::from_str(&before).unwrap_or_default();
            let tenants: BTreeSet<Uuid> = deps
                .get(name)
                .into_iter()
                .flatten()
                .map(|(t, _, _)| *t)
                .collect();
            for t in tenants {
                let hosts: Vec<String> = deps
                    .get(name)
                    .into_iter()
                    .flatten()
                    .filter(|(x, _, _)| *x == t)
                    .map(|(_, _, h)| h.clone())
                    .collect();
                let title = format!("npm package {name} changed maintainers");
                let detail = format!(
                    "now {}; before {}; used on {}",
                    after.join(", "),
                    before.join(", "),
                    hosts.join(", ")
                );
                let warning = trusthub_core::alerting::Severity::Warning;
                crate::alerting::Notifier::default()
                    .raise(
                        &mut tx,
                        TenantId(t),
                        &trusthub_alerts::NewAlert {
                            severity: warning.as_str(),
                            severity_rank: warning.rank(),
                            category: "supply_chain",
                            title: &title,
                            detail: Some(&detail),
                            source: trusthub_core::alerting::source::SUPPLY_CHAIN,
                            fingerprint: &format!(
                                "supply_chain:npm:{name}:{}",
                                now.unix_timestamp()
                            ),
                            agent_id: None,
                            app_id: None,
                            rule_id: None,
                        },
                        now,
                    )
                    .await?;
            }
            report.changed.push(name.clone());
        }
        tx.commit().await?;
        if report.throttled {
            break;
        }
    }
    Ok(report)
}
