//! What each host check means in each framework, and the exports auditors' tools read: an
//! OSCAL 1.1 `assessment-results` document, a Vanta custom-resource sync body, and the CSV
//! trustos and CyberDay import (pure: rows in, documents out).
//!
//! Sources of the mappings: CIS Debian Linux 12 Benchmark v1.1.0 (the recommendation
//! numbers ComplianceAsCode's `controls/cis_debian12.yml` uses), ISO/IEC 27001:2022 Annex A,
//! the AICPA 2017 Trust Services Criteria (SOC 2 common criteria) and NIS2 (Directive (EU)
//! 2022/2555) Article 21(2). CIS Debian 12 has no recommendation on SSH password
//! authentication, so that check has no `cis-debian` control (it is listed with an empty
//! `control_ids` there and has no CSV row).

use serde_json::{Value, json};
use time::OffsetDateTime;
use trusthub_platform::state::rfc3339;
use uuid::Uuid;

/// The frameworks, as the API names them.
pub const FRAMEWORKS: [&str; 4] = ["cis-debian", "iso27001", "soc2", "nis2"];

/// The export tools, as the API names them.
pub const TOOLS: [&str; 4] = ["trustos", "vanta", "cyberday", "generic"];

/// A framework's full name.
pub fn framework_title(f: &str) -> &'static str {
    match f {
        "cis-debian" => "CIS Debian Linux 12 Benchmark v1.1.0",
        "iso27001" => "ISO/IEC 27001:2022 Annex A",
        "soc2" => "SOC 2 (AICPA Trust Services Criteria 2017)",
        "nis2" => "NIS2 Directive (EU) 2022/2555, Article 21(2)",
        _ => "",
    }
}

/// `(check, cis-debian, iso27001, soc2, nis2)`.
type Row = (
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
    &'static [&'static str],
    &'static [&'static str],
);

const A: &str = "Art.21(2)(a)";
const B: &str = "Art.21(2)(b)";
const E: &str = "Art.21(2)(e)";
const G: &str = "Art.21(2)(g)";
const I: &str = "Art.21(2)(i)";

const MAP: [Row; 21] = [
    (
        "ssh_permit_root_login",
        &["5.1.20"],
        &["A.8.2", "A.8.5"],
        &["CC6.1"],
        &[I],
    ),
    (
        "ssh_password_authentication",
        &[],
        &["A.5.17", "A.8.5"],
        &["CC6.1"],
        &[I],
    ),
    (
        "ssh_max_auth_tries",
        &["5.1.16"],
        &["A.8.5"],
        &["CC6.1"],
        &[I],
    ),
    (
        "ssh_x11_forwarding",
        &["5.1.8"],
        &["A.8.9", "A.8.20"],
        &["CC6.6"],
        &[G],
    ),
    ("sshd_config_mode", &["5.1.1"], &["A.8.9"], &["CC6.1"], &[I]),
    ("passwd_mode", &["7.1.1"], &["A.8.3"], &["CC6.1"], &[I]),
    (
        "shadow_mode",
        &["7.1.5"],
        &["A.5.17", "A.8.3"],
        &["CC6.1"],
        &[I],
    ),
    ("pass_max_days", &["5.4.1.1"], &["A.5.17"], &["CC6.1"], &[I]),
    ("pass_min_days", &["5.4.1.2"], &["A.5.17"], &["CC6.1"], &[I]),
    (
        "pwquality",
        &["5.3.2.3", "5.3.3.2.2"],
        &["A.5.17", "A.8.5"],
        &["CC6.1"],
        &[G, I],
    ),
    (
        "empty_passwords",
        &["7.2.2"],
        &["A.5.17", "A.8.5"],
        &["CC6.1"],
        &[I],
    ),
    ("uid0_only_root", &["5.4.2.1"], &["A.8.2"], &["CC6.3"], &[I]),
    (
        "world_writable_files",
        &["7.1.11"],
        &["A.8.3", "A.8.9"],
        &["CC6.1"],
        &[G],
    ),
    ("sticky_bits", &["7.1.11"], &["A.8.3"], &["CC6.1"], &[G]),
    (
        "unowned_files",
        &["7.1.12"],
        &["A.5.9", "A.8.9"],
        &["CC6.1"],
        &[I],
    ),
    (
        "auditd",
        &["6.2.1.1", "6.2.1.2"],
        &["A.8.15"],
        &["CC7.2"],
        &[B],
    ),
    (
        "audit_rules",
        &["6.2.3.8"],
        &["A.8.15", "A.8.16"],
        &["CC7.2"],
        &[B],
    ),
    (
        "sysctl_network",
        &["3.3.1", "3.3.2", "3.3.5"],
        &["A.8.20"],
        &["CC6.6"],
        &[E],
    ),
    (
        "sysctl_aslr",
        &["1.5.1"],
        &["A.8.7", "A.8.9"],
        &["CC6.8"],
        &[E],
    ),
    (
        "unused_filesystems",
        &[
            "1.1.1.1", "1.1.1.2", "1.1.1.3", "1.1.1.4", "1.1.1.5", "1.1.1.8",
        ],
        &["A.8.9"],
        &["CC6.8"],
        &[G],
    ),
    (
        "tmp_mount",
        &["1.1.2.1.1", "1.1.2.1.2", "1.1.2.1.3", "1.1.2.1.4"],
        &["A.8.9"],
        &["CC6.8"],
        &[A, G],
    ),
];

/// The controls of `framework` a check maps to (none for an unknown check or framework).
pub fn controls(check_id: &str, framework: &str) -> &'static [&'static str] {
    let Some(row) = MAP.iter().find(|r| r.0 == check_id) else {
        return &[];
    };
    match framework {
        "cis-debian" => row.1,
        "iso27001" => row.2,
        "soc2" => row.3,
        "nis2" => row.4,
        _ => &[],
    }
}

/// One host's latest result of one check, with what the exports need.
#[derive(Debug, Clone)]
pub struct Result {
    /// The host.
    pub agent_id: Uuid,
    /// Its name.
    pub hostname: String,
    /// The check.
    pub check_id: String,
    /// The check's statement.
    pub title: String,
    /// Verdict.
    pub status: String,
    /// What was seen.
    pub evidence: String,
    /// What to do.
    pub remediation: String,
    /// When.
    pub checked_at: OffsetDateTime,
}

/// The check's title (its id for a check this hub does not know).
pub fn title(check_id: &str) -> String {
    trusthub_core::compliance::check(check_id)
        .map(|c| c.title.to_owned())
        .unwrap_or_else(|| check_id.to_owned())
}

/// The CSV trustos and CyberDay import: `framework,control_id,check_id,title,hostname,
/// status,evidence,checked_at`, one row per control id of each result in the frameworks
/// asked for.
pub fn csv(results: &[Result], frameworks: &[&str]) -> String {
    let mut out =
        String::from("framework,control_id,check_id,title,hostname,status,evidence,checked_at\r\n");
    for f in frameworks {
        for r in results {
            for c in controls(&r.check_id, f) {
                let fields = [
                    *f,
                    c,
                    &r.check_id,
                    &r.title,
                    &r.hostname,
                    &r.status,
                    &r.evidence,
                    &rfc3339(r.checked_at),
                ];
                let line: Vec<String> =
                    fields.iter().map(|v| trusthub_core::csv::cell(v)).collect();
                out.push_str(&line.join(","));
                out.push_str("\r\n");
            }
        }
    }
    out
}

/// The Vanta custom-resource sync body (`PUT /v1/resources/custom_resource/sync_all`): one
/// resource per host and check, its framework controls and verdict as custom properties
/// (strings and a boolean, the types Vanta's custom properties take).
pub fn vanta(results: &[Result], resource_id: &str, public_url: &str) -> Value {
    let resources: Vec<Value> = results
        .iter()
        .map(|r| {
            let joined = |f: &str| controls(&r.check_id, f).join(", ");
            json!({
                "displayName": format!("{}: {}", r.hostname, r.title),
                "uniqueId": format!("{}:{}", r.agent_id, r.check_id),
                "externalUrl": format!("{}/ui/compliance?agent_id={}", public_url.trim_end_matches('/'), r.agent_id),
                "customProperties": {
                    "hostname": r.hostname,
                    "checkId": r.check_id,
                    "status": r.status,
                    "passing": r.status == "pass",
                    "evidence": r.evidence,
                    "remediation": r.remediation,
                    "checkedAt": rfc3339(r.checked_at),
                    "cisDebian": joined("cis-debian"),
                    "iso27001": joined("iso27001"),
                    "soc2": joined("soc2"),
                    "nis2": joined("nis2"),
                },
            })
        })
        .collect();
    json!({"resourceId": resource_id, "resources": resources})
}

/// An OSCAL control id for a framework's control: OSCAL ids are tokens (a letter or `_`
/// first; letters, digits, `.`, `-`, `_` after), so `5.1.20` of CIS Debian is
/// `cis-debian_5.1.20` and `Art.21(2)(i)` of NIS2 is `nis2_art.21.2.i`.
pub fn oscal_control_id(framework: &str, control: &str) -> String {
    let mut id = format!("{}_", framework);
    let mut last_dot = false;
    for ch in control.to_lowercase().chars() {
        if ch.is_ascii_alphanumeric() || ch == '-' || ch == '_' {
            id.push(ch);
            last_dot = false;
        } else if !last_dot && !id.ends_with('_') {
            id.push('.');
            last_dot = true;
        }
    }
    id.trim_end_matches('.').to_owned()
}

/// Deterministic UUIDs inside one document (v4-shaped, from a hash of the names).
fn uuid_of(parts: &[&str]) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(parts.join("\u{1f}").as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    Uuid::from_bytes(bytes).to_string()
}

/// The OSCAL 1.1 `assessment-results` document of the results (in the frameworks asked
/// for): the hosts as inventory items, one observation per host and check with its
/// evidence, one finding per host, check and control with `satisfied` / `not-satisfied`
/// (a check that does not apply or could not run is an observation without a finding).
pub fn oscal(results: &[Result], frameworks: &[&str], tenant: Uuid, now: OffsetDateTime) -> Value {
    let ns = "https://trusthub.dev/ns/oscal";
    let stamp = rfc3339(now);
    let doc_uuid = Uuid::new_v4().to_string();
    let mut hosts: Vec<(Uuid, &str)> = results
        .iter()
        .map(|r| (r.agent_id, r.hostname.as_str()))
        .collect();
    hosts.sort();
    hosts.dedup();
    let items: Vec<Value> = hosts
        .iter()
        .map(|(id, name)| {
            json!({
                "uuid": uuid_of(&["host", &id.to_string()]),
                "description": format!("Host {name}, watched by a Trusthub agent"),
                "props": [
                    {"name": "fqdn", "value": name},
                    {"name": "asset-id", "value": id.to_string()},
                ],
            })
        })
        .collect();
    let mut observations = Vec::new();
    let mut findings = Vec::new();
    let mut reviewed: Vec<String> = Vec::new();
    for r in results {
        let host = uuid_of(&["host", &r.agent_id.to_string()]);
        let obs = uuid_of(&["observation", &r.agent_id.to_string(), &r.check_id]);
        observations.push(json!({
            "uuid": obs,
            "title": r.title,
            "description": format!("{} on {}: {}", r.check_id, r.hostname, r.status),
            "props": [
                {"name": "check-id", "ns": ns, "value": r.check_id},
                {"name": "result", "ns": ns, "value": r.status},
            ],
            "methods": ["TEST"],
            "types": ["finding"],
            "subjects": [{"subject-uuid": host, "type": "inventory-item"}],
            "collected": rfc3339(r.checked_at),
            "relevant-evidence": [{"description": if r.evidence.is_empty() { "No evidence recorded.".to_owned() } else { r.evidence.clone() }}],
        }));
        let state = match r.status.as_str() {
            "pass" => "satisfied",
            "fail" => "not-satisfied",
            _ => continue,
        };
        for f in frameworks {
            for c in controls(&r.check_id, f) {
                let control = oscal_control_id(f, c);
                if !reviewed.contains(&control) {
                    reviewed.push(control.clone());
                }
                findings.push(json!({
                    "uuid": uuid_of(&["finding", &r.agent_id.to_string(), &r.check_id, &control]),
                    "title": format!("{} {c}: {}", framework_title(f), r.title),
                    "description": format!("{} on {} is {}; remediation: {}", r.check_id, r.hostname, r.status, r.remediation),
                    "target": {
                        "type": "objective-id",
                        "target-id": control,
                        "status": {"state": state},
                    },
                    "related-observations": [{"observation-uuid": obs}],
                }));
            }
        }
    }
    reviewed.sort();
    let include: Vec<Value> = reviewed.iter().map(|c| json!({"control-id": c})).collect();
    let mut result = json!({
        "uuid": uuid_of(&["result", &tenant.to_string(), &stamp]),
        "title": "Trusthub host compliance checks",
        "description": format!("The latest result of each host check on each host, mapped to {}.", frameworks.iter().map(|f| framework_title(f)).collect::<Vec<_>>().join("; ")),
        "start": results.iter().map(|r| r.checked_at).min().map(rfc3339).unwrap_or_else(|| stamp.clone()),
        "end": stamp,
        "reviewed-controls": {
            "description": "The controls the host checks map to.",
            "control-selections": [if include.is_empty() { json!({"include-all": {}}) } else { json!({"include-controls": include}) }],
        },
    });
    if !items.is_empty() {
        result["local-definitions"] = json!({"inventory-items": items});
    }
    if !observations.is_empty() {
        result["observations"] = json!(observations);
    }
    if !findings.is_empty() {
        result["findings"] = json!(findings);
    }
    json!({
        "assessment-results": {
            "uuid": doc_uuid,
            "metadata": {
                "title": "Trusthub compliance assessment results",
                "last-modified": stamp,
                "version": stamp,
                "oscal-version": "1.1.2",
            },
            "import-ap": {"href": format!("urn:trusthub:assessment-plan:{tenant}")},
            "results": [result],
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_check_maps_to_every_framework_but_one_named_gap() {
        for c in trusthub_core::compliance::CHECKS {
            for f in FRAMEWORKS {
                let n = controls(c.id, f).len();
                if c.id == "ssh_password_authentication" && f == "cis-debian" {
                    assert_eq!(n, 0);
                } else {
                    assert!(n > 0, "{} has no {f} control", c.id);
                }
            }
        }
        assert_eq!(controls("nope", "soc2").len(), 0);
    }

    #[test]
    fn oscal_control_ids_are_tokens() {
        assert_eq!(
            oscal_control_id("cis-debian", "5.1.20"),
            "cis-debian_5.1.20"
        );
        assert_eq!(oscal_control_id("nis2", "Art.21(2)(i)"), "nis2_art.21.2.i");
        assert_eq!(oscal_control_id("iso27001", "A.8.5"), "iso27001_a.8.5");
        assert_eq!(oscal_control_id("soc2", "CC6.1"), "soc2_cc6.1");
    }
}
