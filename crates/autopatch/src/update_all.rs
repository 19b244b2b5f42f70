//! Auto-update-all (CONTRACT 19, SPEC 2.5): every open application-dependency finding with a
//! known fix, on every host (or the hosts and ecosystems asked for), turned into signed
//! `update_packages` actions — one per host per (project, ecosystem) with the combined
//! package list, at most [`MAX_ACTIONS`] per request. Suppressed and acknowledged findings
//! are skipped and the skip recorded with its reason. A dry run answers the same plan and
//! changes nothing: the dashboard's "Update all" shows it before the admin confirms.

use crate::rules::{self, Category, Scope};
use crate::service::{Origin, send};
use crate::store;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::{BTreeSet, HashMap, HashSet};
use time::OffsetDateTime;
use trusthub_fleet::actions::Requester;
use trusthub_identity::auth::Principal;
use trusthub_platform::AppState;
use trusthub_platform::error::{ApiError, ApiResult};
use trusthub_platform::extract::Meta;
use trusthub_store::TenantId;
use utoipa::ToSchema;
use uuid::Uuid;

/// Most signed actions one request sends (SPEC 8).
pub const MAX_ACTIONS: usize = 25;
/// The transparency-log kind of a request (see [`crate::service::kind::UPDATE_ALL`]).
pub const KIND: &str = crate::service::kind::UPDATE_ALL;

/// What to update; absent fields mean all.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateAllRequest {
    /// Only these hosts (1 to 1000 ids of this tenant).
    #[schema(min_items = 1, max_items = 1000)]
    pub agent_ids: Option<Vec<Uuid>>,
    /// Only these ecosystems (1 to 10).
    #[schema(min_items = 1, max_items = 10)]
    pub ecosystems: Option<Vec<EcosystemName>>,
    /// Plan only: answer what would be sent (200), send nothing, record nothing; needs no
    /// TOTP code.
    #[serde(default)]
    pub dry_run: bool,
}

/// An ecosystem, by its manager's name or its OSV name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
pub enum EcosystemName {
    /// npm.
    #[serde(rename = "npm")]
    Npm,
    /// pip.
    #[serde(rename = "pip")]
    Pip,
    /// PyPI (pip).
    PyPI,
    /// composer.
    #[serde(rename = "composer")]
    Composer,
    /// Packagist (composer).
    Packagist,
    /// RubyGems (bundler).
    RubyGems,
    /// bundler.
    #[serde(rename = "bundler")]
    Bundler,
    /// Go.
    Go,
    /// go.
    #[serde(rename = "go")]
    GoLower,
}

impl EcosystemName {
    /// The OSV ecosystem findings carry.
    pub fn osv(self) -> &'static str {
        match self {
            EcosystemName::Npm => "npm",
            EcosystemName::Pip | EcosystemName::PyPI => "PyPI",
            EcosystemName::Composer | EcosystemName::Packagist => "Packagist",
            EcosystemName::RubyGems | EcosystemName::Bundler => "RubyGems",
            EcosystemName::Go | EcosystemName::GoLower => "Go",
        }
    }
}

/// One package an action moves.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UpdateAllPackage {
    /// The package.
    pub name: String,
    /// Installed version.
    pub from: String,
    /// Target version.
    pub to: String,
    /// The advisories it fixes.
    pub vuln_ids: Vec<String>,
}

/// One `update_packages` action (sent, or planned by a dry run).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UpdateAllAction {
    /// The host.
    pub agent_id: Uuid,
    /// Its host name.
    pub hostname: String,
    /// The action's nonce (absent in a dry run); `GET /actions/{jti}` has the host's answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eat_nonce: Option<String>,
    /// The OSV ecosystem.
    pub ecosystem: String,
    /// The project folder (the lockfile's).
    pub project_path: String,
    /// What it updates.
    pub packages: Vec<UpdateAllPackage>,
}

/// A finding not updated, and why.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UpdateAllSkip {
    /// The host.
    pub agent_id: Uuid,
    /// The package.
    pub package: String,
    /// The OSV ecosystem.
    pub ecosystem: String,
    /// `suppressed`, `acknowledged`, `no_fix` (no fixed version above the installed one),
    /// `cap` (over 25 packages on the host or 25 actions in the request: the next request
    /// takes it) or `not_connected` (the host is offline; nothing was sent to it).
    pub reason: String,
    /// The advisories.
    pub vuln_ids: Vec<String>,
    /// The suppression, when suppressed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suppression_id: Option<Uuid>,
    /// Its reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suppression_reason: Option<String>,
}

/// The answer: what was sent (or would be), what was skipped, and whether the 25-action cap
/// left actions for another request.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UpdateAllView {
    /// The actions.
    pub dispatched: Vec<UpdateAllAction>,
    /// The skips.
    pub skipped: Vec<UpdateAllSkip>,
    /// More actions were due than one request sends.
    pub capped: bool,
    /// This was a plan only.
    pub dry_run: bool,
}

/// The ecosystems asked for, as the OSV names findings carry.
fn ecosystems(asked: Option<&[EcosystemName]>) -> ApiResult<Option<HashSet<&'static str>>> {
    let Some(list) = asked else {
        return Ok(None);
    };
    if list.is_empty() || list.len() > 10 {
        return Err(ApiError::invalid(
            "ecosystems",
            "must list 1 to 10 ecosystems",
        ));
    }
    Ok(Some(list.iter().map(|e| e.osv()).collect()))
}

fn skip_view(agent: Uuid, s: &rules::Skip) -> UpdateAllSkip {
    UpdateAllSkip {
        agent_id: agent,
        package: s.package.clone(),
        ecosystem: s.ecosystem.clone(),
        reason: s.reason.to_owned(),
        vuln_ids: s.vuln_ids.clone(),
        suppression_id: s.suppression.as_ref().map(|(id, _)| *id),
        suppression_reason: s.suppression.as_ref().map(|(_, r)| r.clone()),
    }
}

fn action_view(agent: Uuid, hostname: &str, d: &rules::Dispatch) -> UpdateAllAction {
    UpdateAllAction {
        agent_id: agent,
        hostname: hostname.to_owned(),
        eat_nonce: None,
        ecosystem: d.ecosystem.clone(),
        project_path: d.project_path.clone(),
        packages: d
            .packages
            .iter()
            .map(|c| UpdateAllPackage {
                name: c.name.clone(),
                from: c.from.clone(),
                to: c.to.clone(),
                vuln_ids: c.vuln_ids.clone(),
            })
            .collect(),
    }
}

/// Plans (and unless `dry_run`, sends) an auto-update-all for `p`'s tenant. The caller has
/// checked the admin role, and for a real run the TOTP proof.
pub async fn update_all(
    state: &AppState,
    meta: &Meta,
    p: &Principal,
    req: &UpdateAllRequest,
    now: OffsetDateTime,
) -> ApiResult<UpdateAllView> {
    let tenant: TenantId = p.tenant();
    let only = ecosystems(req.ecosystems.as_deref())?;
    let names = trusthub_fleet::host_names(state, tenant).await?;
    let mut hosts: Vec<(Uuid, String)> = match &req.agent_ids {
        Some(ids) => {
            if ids.is_empty() || ids.len() > 1000 {
                return Err(ApiError::invalid("agent_ids", "must list 1 to 1000 hosts"));
            }
            let ids: BTreeSet<Uuid> = ids.iter().copied().collect();
            let mut out = Vec::new();
            for id in ids {
                let name = names.get(&id).ok_or(ApiError::NotFound("agent"))?;
                out.push((id, name.clone()));
            }
            out
        }
        None => names.iter().map(|(id, n)| (*id, n.clone())).collect(),
    };
    hosts.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(&b.0)));
    let ids: Vec<Uuid> = hosts.iter().map(|h| h.0).collect();
    let (mut findings, mut blocked) = {
        let mut c = state.db.conn().await?;
        (
            trusthub_vulns::patching::unfixed_findings_of(&mut c, &ids, now).await?,
            store::in_flight_all(&mut c, now).await?,
        )
    };
    let scope = Scope {
        os_packages: false,
        app_deps: true,
        min_rank: 0,
    };
    // Each host's plan; the request's cap is taken in host order.
    let mut plans: Vec<(Uuid, String, rules::Plan)> = Vec::new();
    let mut actions = 0usize;
    let mut capped = false;
    for (agent, hostname) in hosts {
        let mut fs = findings.remove(&agent).unwrap_or_default();
        fs.retain(|f| {
            f.tenant == tenant
                && rules::manager_of(&f.ecosystem).is_some_and(|(c, _)| c == Category::AppDeps)
                && only
                    .as_ref()
                    .is_none_or(|o| o.contains(f.ecosystem.split(':').next().unwrap_or_default()))
        });
        if fs.is_empty() {
            continue;
        }
        let mut plan = rules::plan(&fs, scope, &blocked.remove(&agent).unwrap_or_default());
        // The host's own cap (25 packages) leaves packages for the next request too.
        capped |= plan.skipped.iter().any(|s| s.reason == "cap");
        let room = MAX_ACTIONS - actions;
        if plan.dispatch.len() > room {
            capped = true;
            for d in plan.dispatch.drain(room..) {
                for c in &d.packages {
                    plan.skipped.push(rules::Skip {
                        package: c.name.clone(),
                        ecosystem: d.ecosystem.clone(),
                        vuln_ids: c.vuln_ids.clone(),
                        reason: "cap",
                        suppression: None,
                    });
                }
            }
        }
        actions += plan.dispatch.len();
        plans.push((agent, hostname, plan));
    }
    let mut view = UpdateAllView {
        dispatched: Vec::new(),
        skipped: Vec::new(),
        capped,
        dry_run: req.dry_run,
    };
    if req.dry_run {
        for (agent, hostname, plan) in &plans {
            view.dispatched.extend(
                plan.dispatch
                    .iter()
                    .map(|d| action_view(*agent, hostname, d)),
            );
            view.skipped
                .extend(plan.skipped.iter().map(|s| skip_view(*agent, s)));
        }
        return Ok(view);
    }
    {
        let mut tx = state.db.begin().await?;
        meta.record(
            &mut tx,
            p,
            trusthub_core::audit::AUTO_UPDATE_ALL_REQUESTED,
            "cve:auto-update-all".to_owned(),
            json!({"agent_ids": req.agent_ids, "ecosystems": req.ecosystems, "actions": actions, "capped": capped}),
        )
        .await?;
        tx.commit().await?;
    }
    for (agent, hostname, plan) in plans {
        // The request's attestation on the host heads the chain; skips are recorded once.
        let seq = {
            let mut tx = state.db.begin().await?;
            for skip in &plan.skipped {
                crate::service::record_skip(&mut tx, tenant, agent, skip, now).await?;
            }
            let head = trusthub_fleet::append_log(
                &mut tx,
                tenant,
                KIND,
                &agent.to_string(),
                &json!({"requested_by": p.user.id, "ecosystems": req.ecosystems,
                    "actions": plan.dispatch.len(), "turned_on": true}),
                now,
            )
            .await?;
            tx.commit().await?;
            head.seq
        };
        view.skipped
            .extend(plan.skipped.iter().map(|s| skip_view(agent, s)));
        let planned: Vec<UpdateAllAction> = plan
            .dispatch
            .iter()
            .map(|d| action_view(agent, &hostname, d))
            .collect();
        let origin = Origin {
            who: Requester::User(meta, p),
            by: Some(p.user.id.to_string()),
            at: Some(now),
            seq: Some(seq),
            trigger: "auto_update_all",
        };
        let book = crate::service::Bookkeeping {
            skipped: &[],
            ran: false,
        };
        let sent = send(state, tenant, agent, plan.dispatch, book, &origin, now).await?;
        let nonces: HashMap<(String, String), String> = sent
            .into_iter()
            .map(|a| ((a.ecosystem, a.project_path), a.eat_nonce))
            .collect();
        for mut a in planned {
            match nonces.get(&(a.ecosystem.clone(), a.project_path.clone())) {
                Some(n) => {
                    a.eat_nonce = Some(n.clone());
                    view.dispatched.push(a);
                }
                None => view
                    .skipped
                    .extend(a.packages.into_iter().map(|c| UpdateAllSkip {
                        agent_id: agent,
                        package: c.name,
                        ecosystem: a.ecosystem.clone(),
                        reason: "not_connected".into(),
                        vuln_ids: c.vuln_ids,
                        suppression_id: None,
                        suppression_reason: None,
                    })),
            }
        }
    }
    Ok(view)
}
