//! CVE suppressions (SPEC 2.5, CONTRACT 15) and the exports other tools read: suppressions
//! checked per ecosystem at creation, matched against findings (and later scans), expiring by
//! themselves, audited, tenant-scoped; SARIF 2.1.0 checked against the official schema,
//! CycloneDX 1.6 by CycloneDX's own validator, OpenVEX 0.2.0 read by lib4vex with the purls
//! parsed by packageurl-python (`.ci/run` installs them).

use crate::harness::*;
use serde_json::{Value, json};
use std::process::Command;

crate::dual!(
    suppressions_are_checked_applied_expire_by_themselves_and_are_audited,
    exports_pass_the_sarif_cyclonedx_and_openvex_validators,
);

/// A Debian 12 host with lodash and Jinja2 in lockfiles, advisories for openssl (critical),
/// lodash (high) and Jinja2 (medium), scanned: `(host, now)`.
async fn scanned_host(app: &TestApp) -> crate::agents::Host {
    let host = crate::agents::register(app).await;
    let mut inv = crate::cve::inventory("4.17.20");
    inv["inventory"]["app_dependencies"][0]["lockfile"] = json!("package-lock.json");
    let r = crate::agents::send(
        app,
        &host,
        &serde_json::to_vec(&inv).expect("json"),
        None,
        true,
    )
    .await;
    assert_eq!(r.status(), 202);
    let range = |fixed: &str| json!([{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": fixed}]}]);
    let advisories = [
        json!({"id": "DSA-5532-1", "modified": "2024-01-01T00:00:00Z", "aliases": ["CVE-2023-5363"],
            "summary": "openssl: incorrect cipher key",
            "severity": [{"type": "CVSS_V3", "score": "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H"}],
            "affected": [{"package": {"ecosystem": "Debian:12", "name": "openssl"}, "ranges": range("3.0.11-1~deb12u3")}]}),
        json!({"id": "GHSA-35jh-r3h4-6jhm", "modified": "2024-01-01T00:00:00Z", "aliases": ["CVE-2021-23337"],
            "summary": "Command injection in lodash",
            "severity": [{"type": "CVSS_V3", "score": "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:N/A:N"}],
            "affected": [{"package": {"ecosystem": "npm", "name": "lodash"},
                "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "4.17.21"}]}]}]}),
        json!({"id": "GHSA-h5c8-rqwp-cp95", "modified": "2024-01-01T00:00:00Z", "aliases": ["CVE-2024-22195"],
            "summary": "Jinja vulnerable to HTML attribute injection",
            "affected": [{"package": {"ecosystem": "PyPI", "name": "jinja2"}, "ranges": range("3.1.3")}],
            "database_specific": {"severity": "MODERATE"}}),
    ];
    crate::cve::upload_records(app, &advisories).await;
    host
}

async fn scan(app: &TestApp, at: time::OffsetDateTime) -> usize {
    trusthub_hub::workers::cve_scan::scan_due(&app.state, at)
        .await
        .expect("scan")
}

async fn findings(app: &TestApp, query: &str) -> Vec<Value> {
    let page = body(
        app.get(&format!("/inventory/cves{query}"), &app.owner)
            .await,
    )
    .await;
    page["items"].as_array().expect("items").clone()
}

fn by_package<'a>(items: &'a [Value], package: &str) -> &'a Value {
    items
        .iter()
        .find(|f| f["package"] == package)
        .unwrap_or_else(|| panic!("no finding of {package}: {items:?}"))
}

fn in_days(days: i64) -> String {
    (time::OffsetDateTime::now_utc() + time::Duration::days(days))
        .format(&time::format_description::well_known::Rfc3339)
        .expect("format")
}

async fn suppressions_are_checked_applied_expire_by_themselves_and_are_audited(b: Backend) {
    let app = TestApp::spawn(b).await;
    let _host = scanned_host(&app).await;
    // Created before the scan: the lodash finding arrives suppressed and raises no alert.
    let lodash = app
        .post(
            "/cve-suppressions",
            &app.owner,
            json!({"package_name": "lodash", "ecosystem": "npm", "version_range": ">=4.0.0 <4.17.21",
                "vuln_id": "CVE-2021-23337", "reason": "template() is never called with user input",
                "expires_at": in_days(30)}),
        )
        .await;
    assert_eq!(lodash.status(), 201);
    let lodash = body(lodash).await;
    assert_eq!(lodash["ecosystem"], "npm");
    assert_eq!(lodash["active"], true);
    assert_eq!(lodash["findings"], 0);
    assert!(
        lodash["created_by"]
            .as_str()
            .is_some_and(|c| c.starts_with("user:"))
    );
    let now = time::OffsetDateTime::now_utc();
    assert_eq!(scan(&app, now).await, 1);
    let items = findings(&app, "").await;
    let l = by_package(&items, "lodash");
    assert_eq!(l["status"], "suppressed", "{l}");
    // The Trust Score counts open findings only (counted by the database): the suppressed
    // lodash one is not, then neither is an acknowledged one.
    let tenant = body(app.get("/trust-score/v12/tenant", &app.owner).await).await["tenant_id"]
        .as_str()
        .and_then(|t| t.parse().ok())
        .map(trusthub_store::TenantId)
        .expect("tenant");
    let counts = |app: &TestApp| {
        let state = app.state.clone();
        async move {
            let i =
                trusthub_trust::service::inputs(&state, tenant, time::OffsetDateTime::now_utc())
                    .await
                    .expect("inputs");
            i.hosts.iter().map(|h| h.findings).collect::<Vec<_>>()
        }
    };
    assert_eq!(
        counts(&app).await,
        [[1, 0, 1, 0]],
        "openssl critical, jinja2 medium"
    );
    assert_eq!(l["suppression_id"], lodash["id"]);
    assert_eq!(
        l["suppression_reason"],
        "template() is never called with user input"
    );
    assert!(l["suppressed_until"].is_string());
    let alerts = body(app.get("/alerts", &app.owner).await).await;
    let cve: Vec<&Value> = alerts
        .as_array()
        .expect("alerts")
        .iter()
        .filter(|a| a["source"] == "cve")
        .collect();
    assert_eq!(cve.len(), 1, "{alerts}");
    let detail = cve[0]["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("DSA-5532-1") && !detail.contains("lodash"),
        "{detail}"
    );

    // Created after the scan, with SPEC's `pip` and another spelling of the name (PEP 503):
    // applied to the existing finding at once.
    let jinja = app
        .post(
            "/cve-suppressions",
            &app.owner,
            json!({"package_name": "jinja2", "ecosystem": "pip", "version_range": ">=3.0, <3.1.3",
                "reason": "autoescape on, no user-controlled attribute keys", "expires_at": in_days(90)}),
        )
        .await;
    assert_eq!(jinja.status(), 201);
    let jinja = body(jinja).await;
    assert_eq!(jinja["ecosystem"], "PyPI");
    assert_eq!(jinja["findings"], 1);
    let items = findings(&app, "").await;
    assert_eq!(by_package(&items, "Jinja2")["status"], "suppressed");
    assert_eq!(by_package(&items, "openssl")["status"], "open");
    let suppressed = findings(&app, "?status=suppressed").await;
    assert_eq!(suppressed.len(), 2);
    let open = findings(&app, "?status=open").await;
    assert!(open.iter().all(|f| f["status"] == "open"));
    // openssl: one finding for the source package and both binaries the host has.
    assert_eq!(open.len(), 1, "{open:?}");

    // A range that does not include the installed version suppresses nothing.
    let other = app
        .post(
            "/cve-suppressions",
            &app.owner,
            json!({"package_name": "openssl", "ecosystem": "Debian", "version_range": ">= 3.1",
                "reason": "not this version", "expires_at": "2099-01-01"}),
        )
        .await;
    assert_problem(other, 422, "validation_failed").await;
    let other = app
        .post(
            "/cve-suppressions",
            &app.owner,
            json!({"package_name": "openssl", "ecosystem": "Debian", "version_range": ">= 3.1",
                "reason": "not this version", "expires_at": in_days(10)}),
        )
        .await;
    assert_eq!(other.status(), 201);
    assert_eq!(body(other).await["findings"], 0);
    assert_eq!(
        by_package(&findings(&app, "").await, "openssl")["status"],
        "open"
    );
    // A suppression naming one of the binaries covers the source package's finding (the
    // advisory is on the source: every binary built from it has the flaw).
    let binary = app
        .post(
            "/cve-suppressions",
            &app.owner,
            json!({"package_name": "libssl3", "ecosystem": "Debian", "version_range": "<< 3.0.11-1~deb12u3",
                "reason": "no TLS server on this host", "expires_at": in_days(10)}),
        )
        .await;
    assert_eq!(binary.status(), 201);
    let binary = body(binary).await;
    assert_eq!(binary["findings"], 1, "{binary}");
    assert_eq!(
        by_package(&findings(&app, "").await, "openssl")["status"],
        "suppressed"
    );
    let r = app
        .delete(
            &format!("/cve-suppressions/{}", binary["id"].as_str().expect("id")),
            &app.owner,
        )
        .await;
    assert_eq!(r.status(), 204);
    assert_eq!(
        by_package(&findings(&app, "").await, "openssl")["status"],
        "open"
    );

    // Refusals: each names its field, and nothing is stored.
    let before = body(app.get("/cve-suppressions", &app.owner).await).await;
    for (req, field) in [
        (
            json!({"package_name": "lodash", "ecosystem": "npm", "version_range": "^1.2.3.4", "reason": "r", "expires_at": in_days(1)}),
            "version_range",
        ),
        (
            json!({"package_name": "x", "ecosystem": "PyPI", "version_range": "1.0", "reason": "r", "expires_at": in_days(1)}),
            "version_range",
        ),
        (
            json!({"package_name": "x", "ecosystem": "Go", "version_range": ">=banana", "reason": "r", "expires_at": in_days(1)}),
            "version_range",
        ),
        (
            json!({"package_name": "x", "ecosystem": "cargo", "version_range": "*", "reason": "r", "expires_at": in_days(1)}),
            "ecosystem",
        ),
        (
            json!({"package_name": "monolog/monolog", "ecosystem": "composer", "version_range": "~>3.0", "reason": "r", "expires_at": in_days(1)}),
            "version_range",
        ),
        (
            json!({"package_name": "x", "ecosystem": "npm", "version_range": "*", "reason": " ", "expires_at": in_days(1)}),
            "reason",
        ),
        (
            json!({"package_name": "x", "ecosystem": "npm", "version_range": "*", "reason": "r", "expires_at": in_days(-1)}),
            "expires_at",
        ),
        (
            json!({"package_name": "x", "ecosystem": "npm", "version_range": "*", "reason": "r", "expires_at": in_days(400)}),
            "expires_at",
        ),
        (
            json!({"package_name": "x", "ecosystem": "npm", "version_range": "*", "reason": "r", "expires_at": "next week"}),
            "expires_at",
        ),
        (
            json!({"package_name": "x y", "ecosystem": "npm", "version_range": "*", "reason": "r", "expires_at": in_days(1)}),
            "package_name",
        ),
        (
            json!({"package_name": "x", "ecosystem": "npm", "version_range": "*", "reason": "r", "expires_at": in_days(1), "vuln_id": "CVE 1"}),
            "vuln_id",
        ),
    ] {
        let p = assert_problem(
            app.post("/cve-suppressions", &app.owner, req.clone()).await,
            422,
            "validation_failed",
        )
        .await;
        assert!(names_field(&p, field), "{req} -> {p}");
    }
    // A misspelt field is refused, not ignored.
    let r = app
        .post(
            "/cve-suppressions",
            &app.owner,
            json!({"package_name": "x", "ecosystem": "npm", "version_range": "*", "reason": "r", "expires": in_days(1)}),
        )
        .await;
    assert_eq!(r.status(), 422);
    assert_eq!(
        body(app.get("/cve-suppressions", &app.owner).await).await,
        before
    );

    // Roles and tenants.
    let (viewer, _) = app.user_with_role("viewer").await;
    assert_eq!(
        app.post(
            "/cve-suppressions",
            &viewer,
            json!({"package_name": "x", "ecosystem": "npm", "version_range": "*", "reason": "r", "expires_at": in_days(1)})
        )
        .await
        .status(),
        403
    );
    let id = lodash["id"].as_str().expect("id");
    assert_eq!(
        app.get(&format!("/cve-suppressions/{id}"), &viewer)
            .await
            .status(),
        200
    );
    let stranger = app.other_tenant().await;
    assert_eq!(
        app.get(&format!("/cve-suppressions/{id}"), &stranger)
            .await
            .status(),
        404
    );
    assert_eq!(
        app.delete(&format!("/cve-suppressions/{id}"), &stranger)
            .await
            .status(),
        404
    );
    assert_eq!(
        body(app.get("/cve-suppressions", &stranger).await).await,
        json!([])
    );

    // Expiry by itself: nothing runs, the lodash finding is open once the date has passed
    // (the stored expiry moved to the past stands for the time going by).
    let moved = app
        .execute(
            "UPDATE cve_suppressions SET expires_at = '2020-01-01T00:00:00Z' WHERE package_name = 'lodash'",
        )
        .await;
    assert_eq!(moved, 1);
    let items = findings(&app, "").await;
    let l = by_package(&items, "lodash");
    assert_eq!(l["status"], "open", "{l}");
    assert!(l.get("suppression_reason").is_none());
    let listed = body(
        app.get(&format!("/cve-suppressions/{id}"), &app.owner)
            .await,
    )
    .await;
    assert_eq!(listed["active"], false);
    assert_eq!(listed["findings"], 0);

    // Deleting the Jinja2 suppression opens its finding again; both are audited.
    let jid = jinja["id"].as_str().expect("id");
    assert_eq!(
        app.delete(&format!("/cve-suppressions/{jid}"), &app.owner)
            .await
            .status(),
        204
    );
    assert_eq!(
        by_package(&findings(&app, "").await, "Jinja2")["status"],
        "open"
    );
    assert_eq!(
        app.delete(&format!("/cve-suppressions/{jid}"), &app.owner)
            .await
            .status(),
        404
    );
    let created = body(
        app.get("/audit-log?event_type=cve_suppression_created", &app.owner)
            .await,
    )
    .await;
    let deleted = body(
        app.get("/audit-log?event_type=cve_suppression_deleted", &app.owner)
            .await,
    )
    .await;
    let n = |v: &Value| {
        v.as_array()
            .or_else(|| v["items"].as_array())
            .map_or(0, Vec::len)
    };
    assert_eq!(n(&created), 4, "{created}");
    assert_eq!(n(&deleted), 2, "{deleted}");
    // An acknowledged finding is not open for the Trust Score either (lodash's suppression
    // ended above: its finding is open again).
    assert_eq!(counts(&app).await, [[1, 1, 1, 0]], "every finding open");
    let jinja = by_package(&findings(&app, "").await, "Jinja2")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let r = app
        .post(
            &format!("/cve-findings/{jinja}/acknowledge"),
            &app.owner,
            json!({"reason": "templates are ours"}),
        )
        .await;
    assert!(r.status().is_success(), "{}", r.status());
    assert_eq!(
        counts(&app).await,
        [[1, 1, 0, 0]],
        "the acknowledged one is not open"
    );
}

/// Runs `python3 -c script arg`; its stdout, or the failure with stderr.
fn python(script: &str, arg: &str) -> String {
    let out = Command::new("python3")
        .args(["-c", script, arg])
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "validator failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn sarif_schema() -> String {
    std::env::var("TRUSTHUB_SARIF_SCHEMA")
        .unwrap_or_else(|_| "/usr/local/share/trusthub-validators/sarif-schema-2.1.0.json".into())
}

async fn exports_pass_the_sarif_cyclonedx_and_openvex_validators(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = scanned_host(&app).await;
    assert_eq!(scan(&app, time::OffsetDateTime::now_utc()).await, 1);
    let r = app
        .post(
            "/cve-suppressions",
            &app.owner,
            json!({"package_name": "Jinja2", "ecosystem": "PyPI", "version_range": "~=3.1.0",
                "vuln_id": "GHSA-h5c8-rqwp-cp95", "reason": "autoescape on", "expires_at": in_days(30)}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let items = findings(&app, "").await;
    let ssl = by_package(&items, "openssl")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let dir = TempDir::new();

    // SARIF: open findings only (openssl and lodash), against the official schema.
    let r = app.get("/inventory/cves/export.sarif", &app.owner).await;
    assert_eq!(r.status(), 200);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap_or_default()
            .starts_with("application/sarif+json")
    );
    let sarif = body(r).await;
    let path = dir.0.join("findings.sarif");
    std::fs::write(&path, serde_json::to_vec(&sarif).expect("json")).expect("write");
    let schema = sarif_schema();
    let out = python(
        &format!(
            "import json, sys, jsonschema\n\
             schema = json.load(open({schema:?}))\n\
             doc = json.load(open(sys.argv[1]))\n\
             errors = list(jsonschema.Draft4Validator(schema).iter_errors(doc))\n\
             for e in errors: print('ERROR', list(e.path), e.message)\n\
             print('valid' if not errors else 'invalid')"
        ),
        &path.display().to_string(),
    );
    assert!(
        out.trim_end().ends_with("valid") && !out.contains("ERROR"),
        "{out}"
    );
    let results = sarif["runs"][0]["results"].as_array().expect("results");
    let mut rules: Vec<&str> = results
        .iter()
        .map(|r| r["ruleId"].as_str().unwrap_or_default())
        .collect();
    rules.sort();
    assert_eq!(rules, ["DSA-5532-1", "GHSA-35jh-r3h4-6jhm"], "{sarif}");
    let lodash = results
        .iter()
        .find(|r| r["ruleId"] == "GHSA-35jh-r3h4-6jhm")
        .expect("lodash");
    assert_eq!(
        lodash["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "file:///srv/web/package-lock.json"
    );
    assert_eq!(lodash["level"], "error");
    let ssl_result = results
        .iter()
        .find(|r| r["ruleId"] == "DSA-5532-1")
        .expect("openssl");
    assert_eq!(
        ssl_result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "os-packages"
    );
    assert_eq!(
        app.get("/inventory/cves/export.sarif?severity=bad", &app.owner)
            .await
            .status(),
        422
    );

    // Acknowledged from here on: the SBOM and VEX say so.
    assert_eq!(
        app.post(
            &format!("/cve-findings/{ssl}/acknowledge"),
            &app.owner,
            json!({"reason": "replaced next week"})
        )
        .await
        .status(),
        200
    );

    // CycloneDX 1.6: CycloneDX's own strict validator.
    let r = app
        .get(&format!("/agents/{}/sbom.cdx.json", host.id), &app.owner)
        .await;
    assert_eq!(r.status(), 200);
    let bom = body(r).await;
    let path = dir.0.join("host.cdx.json");
    std::fs::write(&path, serde_json::to_vec(&bom).expect("json")).expect("write");
    let out = python(
        "import sys\n\
         from cyclonedx.schema import SchemaVersion\n\
         from cyclonedx.validation.json import JsonStrictValidator\n\
         err = JsonStrictValidator(SchemaVersion.V1_6).validate_str(open(sys.argv[1]).read())\n\
         print('invalid', err) if err else print('valid')",
        &path.display().to_string(),
    );
    assert_eq!(out.trim(), "valid", "{out}");
    assert_eq!(bom["specVersion"], "1.6");
    let comps = bom["components"].as_array().expect("components");
    assert_eq!(comps.len(), 6, "{bom}");
    assert!(
        comps
            .iter()
            .any(|c| c["purl"] == "pkg:deb/debian/libssl3@3.0.11-1~deb12u2?distro=debian-12")
    );
    assert!(comps.iter().any(|c| c["purl"] == "pkg:npm/lodash@4.17.20"));
    let vulns = bom["vulnerabilities"].as_array().expect("vulnerabilities");
    assert_eq!(vulns.len(), 3, "{bom}");
    // The openssl finding affects both binary packages installed from it.
    let ssl_vuln = vulns
        .iter()
        .find(|v| v["id"] == "DSA-5532-1")
        .expect("openssl");
    assert_eq!(
        ssl_vuln["affects"].as_array().map(Vec::len),
        Some(2),
        "{ssl_vuln}"
    );
    let jinja = vulns
        .iter()
        .find(|v| v["id"] == "GHSA-h5c8-rqwp-cp95")
        .expect("jinja");
    assert_eq!(jinja["analysis"]["state"], "not_affected");
    let acked = vulns
        .iter()
        .find(|v| v["id"] == "DSA-5532-1" && v["analysis"]["state"] == "exploitable")
        .expect("acknowledged openssl");
    assert_eq!(acked["analysis"]["response"], json!(["will_not_fix"]));
    let stranger = app.other_tenant().await;
    assert_eq!(
        app.get(&format!("/agents/{}/sbom.cdx.json", host.id), &stranger)
            .await
            .status(),
        404
    );

    // OpenVEX 0.2.0: the suppression as a not_affected statement, read by lib4vex (purls
    // parsed by packageurl-python), and the fields the specification requires.
    let r = app
        .get("/cve-suppressions/export.openvex.json", &app.owner)
        .await;
    assert_eq!(r.status(), 200);
    let vex = body(r).await;
    assert_eq!(vex["@context"], "https://openvex.dev/ns/v0.2.0");
    assert!(
        vex["@id"]
            .as_str()
            .is_some_and(|i| i.starts_with("urn:uuid:"))
    );
    assert!(vex["author"].is_string() && vex["timestamp"].is_string());
    assert_eq!(vex["version"], 1);
    let statements = vex["statements"].as_array().expect("statements");
    assert_eq!(statements.len(), 1, "{vex}");
    let s = &statements[0];
    assert_eq!(s["vulnerability"]["name"], "GHSA-h5c8-rqwp-cp95");
    assert_eq!(s["status"], "not_affected");
    assert_eq!(s["impact_statement"], "autoescape on");
    assert_eq!(s["products"][0]["@id"], "pkg:pypi/jinja2@3.1.2");
    let path = dir.0.join("suppressions.openvex.json");
    std::fs::write(&path, serde_json::to_vec(&vex).expect("json")).expect("write");
    let out = python(
        "import sys, json\n\
         from lib4vex.parser import VEXParser\n\
         p = VEXParser('openvex')\n\
         p.parse(sys.argv[1])\n\
         print(json.dumps({'meta': p.get_metadata(), 'vulns': p.get_vulnerabilities()}, default=str))",
        &path.display().to_string(),
    );
    let read: Value = serde_json::from_str(out.trim()).expect("lib4vex output");
    assert_eq!(read["meta"]["version"], 1, "{read}");
    let vulns = read["vulns"].as_array().expect("vulns");
    assert_eq!(vulns.len(), 1, "{read}");
    assert_eq!(vulns[0]["id"], "GHSA-h5c8-rqwp-cp95", "{read}");
    assert_eq!(vulns[0]["release"], "3.1.2", "{read}");
    assert_eq!(vulns[0]["status"], "not_affected", "{read}");
}
