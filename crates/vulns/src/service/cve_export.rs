//! The services behind [`crate::routes::cve_export`]: what its handlers, the dashboard's
//! pages and other capabilities call.

use crate::auth::Viewer;
use crate::error::{ApiError, ApiResult};
use crate::state::{AppState, now};
use crate::store::cve::{Filter, Finding};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use time::OffsetDateTime;
use trusthub_core::inventory::Inventory;
use utoipa::IntoParams;
use uuid::Uuid;

pub(crate) fn rfc(t: OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

pub(crate) fn json_file(v: &Value, content_type: &str) -> Response {
    (
        [(header::CONTENT_TYPE, content_type.to_owned())],
        serde_json::to_string_pretty(v).unwrap_or_default(),
    )
        .into_response()
}

/// `(project folder, OSV ecosystem)` -> lockfile name, from a host's latest inventory.
pub(crate) fn lockfiles(inventory: Option<&Inventory>) -> HashMap<(String, String), String> {
    let mut out = HashMap::new();
    for d in inventory
        .map(Inventory::app_dependencies)
        .unwrap_or_default()
    {
        if let (Some(p), Some(l), Some(e)) = (
            &d.project_path,
            &d.lockfile,
            d.ecosystem
                .as_deref()
                .and_then(crate::rules::scan::app_ecosystem),
        ) {
            out.insert((p.clone(), e.to_owned()), l.clone());
        }
    }
    out
}

/// Filters of the SARIF export.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct SarifQuery {
    /// One host.
    pub agent_id: Option<Uuid>,
    /// At least this severity: CRITICAL, HIGH, MEDIUM, LOW or UNKNOWN.
    #[param(pattern = "^(CRITICAL|HIGH|MEDIUM|LOW|UNKNOWN)$")]
    pub severity: Option<String>,
}

pub(crate) fn level(severity: &str) -> &'static str {
    match severity {
        "CRITICAL" | "HIGH" => "error",
        "MEDIUM" => "warning",
        _ => "note",
    }
}

/// The SARIF 2.1.0 log of `findings` (open ones).
pub(crate) fn sarif_log(
    findings: &[Finding],
    hosts: &HashMap<Uuid, String>,
    locks: &HashMap<Uuid, HashMap<(String, String), String>>,
    public_url: &str,
) -> Value {
    let mut rules: Vec<Value> = Vec::new();
    let mut rule_index: HashMap<String, usize> = HashMap::new();
    let mut results = Vec::new();
    for f in findings {
        let s = &f.seen;
        let index = *rule_index.entry(s.vuln_id.clone()).or_insert_with(|| {
            let mut rule = json!({
                "id": s.vuln_id,
                "shortDescription": {"text": if s.summary.is_empty() { s.vuln_id.clone() } else { s.summary.clone() }},
                "helpUri": format!("https://osv.dev/vulnerability/{}", s.vuln_id),
                "defaultConfiguration": {"level": level(&s.severity)},
                "properties": {"tags": ["security", "vulnerability"], "severity": s.severity},
            });
            if let Some(score) = s.cvss_score {
                // GitHub code scanning reads this to rank security results.
                rule["properties"]["security-severity"] = json!(format!("{score:.1}"));
            }
            rules.push(rule);
            rules.len() - 1
        });
        let host = hosts.get(&f.agent_id).cloned().unwrap_or_default();
        let fixed: Vec<String> = serde_json::from_str(&s.fixed_versions).unwrap_or_default();
        let uri = if s.project_path.is_empty() {
            "os-packages".to_owned()
        } else {
            let lock = locks
                .get(&f.agent_id)
                .and_then(|m| m.get(&(s.project_path.clone(), s.ecosystem.clone())));
            let path = match lock {
                Some(l) => format!("{}/{l}", s.project_path.trim_end_matches('/')),
                None => s.project_path.clone(),
            };
            if path.starts_with('/') {
                format!("file://{path}")
            } else {
                path
            }
        };
        let message = format!(
            "{} {} {} on {host} is affected by {}{}",
            s.ecosystem,
            s.package,
            s.installed_version,
            s.vuln_id,
            if fixed.is_empty() {
                " (no fixed version published)".to_owned()
            } else {
                format!("; fixed in {}", fixed.join(", "))
            }
        );
        results.push(json!({
            "ruleId": s.vuln_id,
            "ruleIndex": index,
            "level": level(&s.severity),
            "message": {"text": message},
            "locations": [{
                "physicalLocation": {"artifactLocation": {"uri": uri}},
                "logicalLocations": [{"name": s.package, "fullyQualifiedName": format!("{host}/{}", s.package), "kind": "module"}],
            }],
            "partialFingerprints": {"trusthubFinding/v1": f.id.to_string()},
            "properties": {
                "agent_id": f.agent_id, "hostname": host, "ecosystem": s.ecosystem,
                "package": s.package, "installed_version": s.installed_version,
                "fixed_versions": fixed, "purl": crate::rules::purl::of(&s.ecosystem, &s.package, Some(&s.installed_version)),
                "first_seen_at": rfc(f.first_seen_at),
            },
        }));
    }
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "Trusthub",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": public_url,
                "rules": rules,
            }},
            "results": results,
        }],
    })
}

/// A component of the SBOM: `(ecosystem or manager, name, version, project)`.
pub(crate) type Component = (String, String, String, String);

/// The packages of an inventory as SBOM components: OS packages (with the distribution's
/// purl when the release is known) and lockfile dependencies.
pub(crate) fn components(inventory: Option<&Inventory>) -> Vec<Component> {
    let Some(inventory) = inventory else {
        return Vec::new();
    };
    let os = crate::rules::scan::os_ecosystem(inventory.os.as_ref()).ok();
    let mut out = Vec::new();
    for p in inventory.packages() {
        let (Some(n), Some(v)) = (&p.name, &p.version) else {
            continue;
        };
        let eco = match (&os, p.manager.as_deref()) {
            (Some(e), Some(m))
                if matches!(
                    (e.split(':').next().unwrap_or_default(), m),
                    ("Debian" | "Ubuntu", "dpkg")
                        | ("Alpine", "apk")
                        | ("Red Hat" | "AlmaLinux" | "Rocky Linux", "rpm")
                ) =>
            {
                e.clone()
            }
            (_, m) => m.unwrap_or("os").to_owned(),
        };
        out.push((eco, n.clone(), v.clone(), String::new()));
    }
    for d in inventory.app_dependencies() {
        let (Some(n), Some(v)) = (&d.name, &d.version) else {
            continue;
        };
        let raw = d.ecosystem.as_deref().unwrap_or_default();
        let eco = crate::rules::scan::app_ecosystem(raw).unwrap_or(raw);
        out.push((
            eco.to_owned(),
            n.clone(),
            v.clone(),
            d.project_path.clone().unwrap_or_default(),
        ));
    }
    out.sort();
    out.dedup();
    out
}

pub(crate) fn cdx_severity(s: &str) -> &'static str {
    match s {
        "CRITICAL" => "critical",
        "HIGH" => "high",
        "MEDIUM" => "medium",
        "LOW" => "low",
        _ => "unknown",
    }
}

/// The CycloneDX 1.6 SBOM of a host.
pub(crate) fn cyclonedx(
    hostname: &str,
    agent: Uuid,
    inventory: Option<&Inventory>,
    collected_at: Option<OffsetDateTime>,
    findings: &[Finding],
    now: OffsetDateTime,
) -> Value {
    let comps = components(inventory);
    let mut refs: BTreeMap<(String, String, String, String), String> = BTreeMap::new();
    let mut out = Vec::new();
    for (i, (eco, name, version, project)) in comps.iter().enumerate() {
        let bom_ref = format!("component-{i}");
        let mut c = json!({
            "type": "library",
            "bom-ref": bom_ref,
            "name": name,
        });
        // An unpinned requirement has no version: the component is listed without one.
        let pinned = Some(version.as_str()).filter(|v| !v.is_empty());
        if let Some(v) = pinned {
            c["version"] = json!(v);
        }
        if let Some(purl) = crate::rules::purl::of(eco, name, pinned) {
            c["purl"] = json!(purl);
        }
        let mut props = vec![json!({"name": "trusthub:ecosystem", "value": eco})];
        if !project.is_empty() {
            props.push(json!({"name": "trusthub:project_path", "value": project}));
        }
        c["properties"] = json!(props);
        refs.insert(
            (eco.clone(), name.clone(), version.clone(), project.clone()),
            bom_ref,
        );
        out.push(c);
    }
    let mut vulns = Vec::new();
    for f in findings.iter().filter(|f| f.fixed_at.is_none()) {
        let s = &f.seen;
        // What the host has installed: an OS finding's binary packages, or the dependency.
        let binaries = crate::store::cve::binaries(&s.binaries);
        let installed: Vec<(String, String)> = if binaries.is_empty() {
            vec![(s.package.clone(), s.installed_version.clone())]
        } else {
            binaries.into_iter().map(|b| (b.name, b.version)).collect()
        };
        let affects: Vec<Value> = installed
            .into_iter()
            .filter_map(|(name, version)| {
                refs.get(&(s.ecosystem.clone(), name, version, s.project_path.clone()))
                    .map(|r| json!({"ref": r}))
            })
            .collect();
        if affects.is_empty() {
            continue;
        }
        let fixed: Vec<String> = serde_json::from_str(&s.fixed_versions).unwrap_or_default();
        let aliases: Vec<String> = serde_json::from_str(&s.aliases).unwrap_or_default();
        let mut rating = json!({"severity": cdx_severity(&s.severity), "source": {"name": "OSV"}});
        if let Some(score) = s.cvss_score {
            // CVSS v4.0 or v3.x (the finding keeps the score, not which version gave it).
            rating["score"] = json!(score);
        }
        let mut v = json!({
            "bom-ref": format!("finding-{}", f.id),
            "id": s.vuln_id,
            "source": {"name": "OSV", "url": format!("https://osv.dev/vulnerability/{}", s.vuln_id)},
            "references": aliases.iter().map(|a| json!({"id": a, "source": {"name": "OSV", "url": format!("https://osv.dev/vulnerability/{a}")}})).collect::<Vec<_>>(),
            "ratings": [rating],
            "description": s.summary,
            "created": rfc(f.first_seen_at),
            "affects": affects,
        });
        if !fixed.is_empty() {
            v["recommendation"] = json!(format!("Upgrade {} to {}", s.package, fixed.join(" or ")));
        }
        if f.suppression_id.is_some() {
            v["analysis"] = json!({"state": "not_affected",
                "detail": format!("Suppressed until {}: {}", f.suppression_expires_at.map(rfc).unwrap_or_default(), f.suppression_reason.clone().unwrap_or_default())});
        } else if f.acknowledged_at.is_some() {
            v["analysis"] = json!({"state": "exploitable", "response": ["will_not_fix"],
                "detail": format!("Acknowledged: {}", f.ack_reason.clone().unwrap_or_default())});
        }
        vulns.push(v);
    }
    let mut metadata = json!({
        "timestamp": rfc(now),
        "tools": {"components": [{"type": "application", "name": "Trusthub", "version": env!("CARGO_PKG_VERSION")}]},
        "component": {"type": "device", "bom-ref": format!("host-{agent}"), "name": hostname},
    });
    if let Some(t) = collected_at {
        metadata["properties"] =
            json!([{"name": "trusthub:inventory_collected_at", "value": rfc(t)}]);
    }
    json!({
        "$schema": "http://cyclonedx.org/schema/bom-1.6.schema.json",
        "bomFormat": "CycloneDX",
        "specVersion": "1.6",
        "serialNumber": format!("urn:uuid:{}", Uuid::new_v4()),
        "version": 1,
        "metadata": metadata,
        "components": out,
        "vulnerabilities": vulns,
    })
}

/// The service behind the `sarif` handler, for the API and the dashboard alike.
pub async fn sarif(state: &AppState, by: &Viewer, q: SarifQuery) -> ApiResult<Response> {
    let p = &by.0;
    let min_rank = match q.severity.as_deref() {
        None => None,
        Some(s) => match crate::rules::osv::Severity::parse(s) {
            Some(v) if v.as_str() == s => Some(v.rank()),
            _ => {
                return Err(ApiError::invalid(
                    "severity",
                    "use CRITICAL, HIGH, MEDIUM, LOW or UNKNOWN",
                ));
            }
        },
    };
    let mut c = state.db.conn().await?;
    let filter = Filter {
        min_rank,
        agent_id: q.agent_id,
        status: Some("open".into()),
        ..Default::default()
    };
    let findings =
        crate::store::cve::list(&mut c, p.tenant(), &filter, None, i64::MAX, now()).await?;
    let hosts = super::cve::hostnames(&mut c, p.tenant()).await?;
    let mut locks = HashMap::new();
    let mut agents: Vec<Uuid> = findings
        .iter()
        .filter(|f| !f.seen.project_path.is_empty())
        .map(|f| f.agent_id)
        .collect();
    agents.sort();
    agents.dedup();
    for agent in agents {
        let inv = trusthub_fleet::latest_inventory(&mut c, p.tenant(), agent).await?;
        locks.insert(agent, lockfiles(inv.as_ref().map(|r| &r.inventory)));
    }
    let log = sarif_log(&findings, &hosts, &locks, &state.public_url);
    Ok(json_file(&log, "application/sarif+json"))
}
