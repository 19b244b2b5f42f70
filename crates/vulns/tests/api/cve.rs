//! Advisory data (CONTRACT 15): OSV records uploaded as a zip in the OSV bucket's layout (made
//! by Python's `zipfile`, deflated, with an ecosystem's `all.zip` nested inside), stored by id
//! and `modified`, listed per ecosystem with their freshness, scoped to the tenant that
//! uploaded them; refusals change nothing.

use crate::harness::*;
use serde_json::{Value, json};
use std::process::Command;

crate::dual!(
    osv_zips_are_imported_by_id_and_modified_and_listed_per_ecosystem,
    bad_uploads_are_refused_and_tenants_see_only_their_own_uploads,
    a_scan_finds_packages_by_source_and_lockfiles_and_follows_them_to_the_fix,
    findings_name_their_source_and_the_coverage_lists_every_source,
);

pub(crate) fn record(id: &str, modified: &str, ecosystem: &str, name: &str, extra: Value) -> Value {
    let mut r = json!({
        "schema_version": "1.7.0",
        "id": id,
        "modified": modified,
        "aliases": [format!("CVE-2024-{}", id.len())],
        "summary": format!("{name} is vulnerable"),
        "affected": [{
            "package": {"ecosystem": ecosystem, "name": name},
            "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": "2.0.0"}]}]
        }],
        "severity": [{"type": "CVSS_V3", "score": "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H"}],
    });
    if let (Some(r), Some(extra)) = (r.as_object_mut(), extra.as_object()) {
        r.extend(extra.clone());
    }
    r
}

/// Files of a zip: name and content.
pub(crate) type Files<'a> = [(&'a str, Vec<u8>)];

/// A zip made by Python's zipfile: `files` at the top, `nested` inside `<dir>/all.zip`.
pub(crate) fn python_zip(files: &Files<'_>, nested: Option<(&str, &Files<'_>)>) -> Vec<u8> {
    let dir = TempDir::new();
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.0.join(name);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("dir");
        std::fs::write(p, bytes).expect("write");
    };
    let mut spec = Vec::new();
    for (name, bytes) in files {
        write(name, bytes);
        spec.push(json!(["top", name]));
    }
    if let Some((eco, inner)) = nested {
        for (name, bytes) in inner {
            write(&format!("inner/{name}"), bytes);
            spec.push(json!(["inner", eco, name]));
        }
    }
    let script = r#"
import json, sys, zipfile, os
base, spec = sys.argv[1], json.loads(sys.argv[2])
inner = {}
with zipfile.ZipFile(os.path.join(base, "out.zip"), "w", zipfile.ZIP_DEFLATED) as z:
    for s in spec:
        if s[0] == "top":
            z.write(os.path.join(base, s[1]), s[1])
        else:
            inner.setdefault(s[1], []).append(s[2])
    for eco, names in inner.items():
        path = os.path.join(base, eco + "-all.zip")
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as iz:
            for n in names:
                iz.write(os.path.join(base, "inner", n), n)
        z.write(path, eco + "/all.zip")
"#;
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(&dir.0)
        .arg(json!(spec).to_string())
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read(dir.0.join("out.zip")).expect("zip")
}

pub(crate) fn bytes(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).expect("json")
}

/// A flat zip (made by Python) of files named by owned strings.
pub(crate) fn flat_zip(files: &[(String, Vec<u8>)]) -> Vec<u8> {
    let named: Vec<(&str, Vec<u8>)> = files.iter().map(|(n, b)| (n.as_str(), b.clone())).collect();
    python_zip(&named, None)
}

/// Uploads `records` (one `<id>.json` each, in a zip made by Python) as the owner; 200.
pub(crate) async fn upload_records(app: &TestApp, records: &[Value]) {
    let files: Vec<(String, Vec<u8>)> = records
        .iter()
        .map(|a| (format!("{}.json", a["id"].as_str().expect("id")), bytes(a)))
        .collect();
    let r = upload(app, &app.owner, flat_zip(&files), "application/zip").await;
    assert_eq!(r.status(), 200);
}

pub(crate) async fn upload(
    app: &TestApp,
    auth: &Auth,
    zip: Vec<u8>,
    content_type: &str,
) -> reqwest::Response {
    app.req(reqwest::Method::POST, "/cve/sources/import", auth)
        .header("content-type", content_type)
        .body(zip)
        .send()
        .await
        .expect("upload")
}

async fn osv_zips_are_imported_by_id_and_modified_and_listed_per_ecosystem(b: Backend) {
    let app = TestApp::spawn(b).await;
    assert_eq!(
        body(app.get("/cve/sources", &app.owner).await).await,
        json!([])
    );
    let lodash = record(
        "GHSA-aaaa",
        "2024-01-02T00:00:00Z",
        "npm",
        "lodash",
        json!({}),
    );
    let minimist = record(
        "GHSA-bbbb",
        "2024-03-01T10:00:00Z",
        "npm",
        "minimist",
        json!({}),
    );
    let jinja = record(
        "PYSEC-1",
        "2023-06-01T00:00:00Z",
        "PyPI",
        "jinja2",
        json!({}),
    );
    let gone = record(
        "GHSA-gone",
        "2024-02-01T00:00:00Z",
        "npm",
        "left-pad",
        json!({"withdrawn": "2024-02-02T00:00:00Z"}),
    );
    let zip = python_zip(
        &[
            ("PyPI/PYSEC-1.json", bytes(&jinja)),
            ("README.md", b"not a record".to_vec()),
        ],
        Some((
            "npm",
            &[
                ("GHSA-aaaa.json", bytes(&lodash)),
                ("GHSA-bbbb.json", bytes(&minimist)),
                ("GHSA-gone.json", bytes(&gone)),
            ],
        )),
    );
    let r = upload(&app, &app.owner, zip.clone(), "application/zip").await;
    assert_eq!(r.status(), 200);
    let report = body(r).await;
    assert_eq!(report["files"], 4, "{report}");
    assert_eq!(report["inserted"], 4, "{report}");
    assert_eq!(report["withdrawn"], 1, "{report}");
    assert_eq!(report["skipped_count"], 0, "{report}");
    let sources = body(app.get("/cve/sources", &app.owner).await).await;
    assert_eq!(
        sources,
        json!([
            {"ecosystem": "PyPI", "advisories": 1, "newest_modified": "2023-06-01T00:00:00Z",
             "imported_at": sources[0]["imported_at"]},
            {"ecosystem": "npm", "advisories": 2, "newest_modified": "2024-03-01T10:00:00Z",
             "imported_at": sources[1]["imported_at"]},
        ]),
        "withdrawn records are not counted"
    );
    assert!(sources[0]["imported_at"].is_string());
    // The same again: nothing changes. A newer `modified`: that one is replaced.
    let report = body(upload(&app, &app.owner, zip, "application/zip").await).await;
    assert_eq!(
        (report["inserted"].as_u64(), report["unchanged"].as_u64()),
        (Some(0), Some(4)),
        "{report}"
    );
    let newer = record(
        "GHSA-aaaa",
        "2024-05-05T00:00:00Z",
        "npm",
        "lodash",
        json!({"severity": [{"type": "CVSS_V3", "score": "CVSS:3.1/AV:N/AC:L/PR:N/UI:R/S:C/C:L/I:L/A:N"}]}),
    );
    let older = record(
        "GHSA-bbbb",
        "2020-01-01T00:00:00Z",
        "npm",
        "minimist",
        json!({}),
    );
    let zip = python_zip(
        &[("a.json", bytes(&newer)), ("b.json", bytes(&older))],
        None,
    );
    let report = body(upload(&app, &app.owner, zip, "application/zip").await).await;
    assert_eq!(
        (report["updated"].as_u64(), report["unchanged"].as_u64()),
        (Some(1), Some(1)),
        "{report}"
    );
    let stored = app
        .count("SELECT COUNT(*) FROM osv_advisories WHERE id = 'GHSA-aaaa' AND severity = 'MEDIUM' AND cvss_score = 6.1")
        .await;
    assert_eq!(stored, 1, "the newer record's severity is stored");
    let sources = body(app.get("/cve/sources", &app.owner).await).await;
    assert_eq!(sources[1]["newest_modified"], "2024-05-05T00:00:00Z");
    let audit = body(
        app.get("/audit-log?event_type=cve_import", &app.owner)
            .await,
    )
    .await;
    assert_eq!(audit.as_array().map(Vec::len), Some(3), "{audit}");
}

async fn bad_uploads_are_refused_and_tenants_see_only_their_own_uploads(b: Backend) {
    let app = TestApp::spawn(b).await;
    let zip = python_zip(
        &[(
            "x.json",
            bytes(&record(
                "GHSA-x",
                "2024-01-01T00:00:00Z",
                "npm",
                "x",
                json!({}),
            )),
        )],
        None,
    );
    let (viewer, _) = app.user_with_role("viewer").await;
    assert_problem(
        upload(&app, &viewer, zip.clone(), "application/zip").await,
        403,
        "forbidden",
    )
    .await;
    assert_problem(
        upload(&app, &app.owner, zip.clone(), "application/json").await,
        415,
        "unsupported_media_type",
    )
    .await;
    assert_problem(
        upload(
            &app,
            &app.owner,
            b"PK not really".to_vec(),
            "application/zip",
        )
        .await,
        400,
        "bad_request",
    )
    .await;
    assert_eq!(app.count("SELECT COUNT(*) FROM osv_advisories").await, 0);
    // Another tenant's upload is its own.
    let other = app.other_tenant().await;
    assert_eq!(
        upload(&app, &other, zip, "application/zip").await.status(),
        200
    );
    assert_eq!(
        body(app.get("/cve/sources", &app.owner).await).await,
        json!([])
    );
    let theirs = body(app.get("/cve/sources", &other).await).await;
    assert_eq!(theirs[0]["advisories"], 1, "{theirs}");
    // A viewer reads the sources.
    assert_eq!(app.get("/cve/sources", &viewer).await.status(), 200);
}

/// An inventory batch of a Debian 12 host with these lockfile dependencies.
pub(crate) fn inventory(lodash: &str) -> Value {
    batch(
        json!([
            {"manager": "dpkg", "name": "libssl3", "version": "3.0.11-1~deb12u2",
             "source": "openssl"},
            {"manager": "dpkg", "name": "openssl", "version": "3.0.11-1~deb12u2"},
            {"manager": "dpkg", "name": "curl", "version": "7.88.1-10+deb12u8"},
        ]),
        json!([
            {"project_path": "/srv/web", "ecosystem": "npm", "name": "lodash", "version": lodash},
            {"project_path": "/srv/api", "ecosystem": "pip", "name": "Jinja2", "version": "3.1.2"},
            {"project_path": "/srv/php", "ecosystem": "composer", "name": "monolog/monolog", "version": "3.5.0"},
        ]),
    )
}

/// A batch of a Debian 12 host's inventory: these OS packages and dependencies.
fn batch(packages: Value, app_dependencies: Value) -> Value {
    let now = time::OffsetDateTime::now_utc();
    json!({
        "batch_id": uuid::Uuid::new_v4(),
        "sent_at": crate::agents::ts(now),
        "metrics": [],
        "inventory": {
            "collected_at": crate::agents::ts(now),
            "os": {"name": "Debian GNU/Linux", "id": "debian", "version": "12"},
            "packages": packages,
            "app_dependencies": app_dependencies,
        },
    })
}

async fn a_scan_finds_packages_by_source_and_lockfiles_and_follows_them_to_the_fix(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = crate::agents::register(&app).await;
    let push = |lodash: &'static str| {
        let app = &app;
        let host = &host;
        async move {
            let body_ = serde_json::to_vec(&inventory(lodash)).expect("json");
            let r = crate::agents::send(app, host, &body_, None, true).await;
            assert_eq!(r.status(), 202);
        }
    };
    push("4.17.20").await;
    let range = |fixed: &str| json!([{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": fixed}]}]);
    let critical =
        json!([{"type": "CVSS_V3", "score": "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H"}]);
    let high =
        json!([{"type": "CVSS_V3", "score": "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:N/A:N"}]);
    let advisories = [
        // Debian's own fix of openssl, by source package: both binary packages are affected.
        json!({"id": "DSA-5532-1", "modified": "2024-01-01T00:00:00Z", "aliases": ["CVE-2023-5363"],
            "summary": "openssl: incorrect cipher key", "severity": critical,
            "affected": [{"package": {"ecosystem": "Debian:12", "name": "openssl"}, "ranges": range("3.0.11-1~deb12u3")}]}),
        // Fixed in an older Debian build than the one installed: not a finding.
        json!({"id": "DSA-1", "modified": "2024-01-01T00:00:00Z",
            "affected": [{"package": {"ecosystem": "Debian:12", "name": "curl"}, "ranges": range("7.88.1-10+deb12u5")}]}),
        // Another release: not this host's.
        json!({"id": "DSA-2", "modified": "2024-01-01T00:00:00Z",
            "affected": [{"package": {"ecosystem": "Debian:11", "name": "curl"}, "ranges": range("9.0")}]}),
        json!({"id": "GHSA-35jh-r3h4-6jhm", "modified": "2024-01-01T00:00:00Z", "aliases": ["CVE-2021-23337"],
            "summary": "Command injection in lodash", "severity": high,
            "affected": [{"package": {"ecosystem": "npm", "name": "lodash"},
                "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "4.17.21"}]}]}]}),
        // The same Jinja2 vulnerability from two databases: one finding.
        json!({"id": "GHSA-h5c8-rqwp-cp95", "modified": "2024-01-01T00:00:00Z", "aliases": ["CVE-2024-22195"],
            "summary": "Jinja vulnerable to HTML attribute injection",
            "affected": [{"package": {"ecosystem": "PyPI", "name": "jinja2"}, "ranges": range("3.1.3")}],
            "database_specific": {"severity": "MODERATE"}}),
        json!({"id": "PYSEC-2024-1", "modified": "2024-01-01T00:00:00Z", "aliases": ["CVE-2024-22195"],
            "affected": [{"package": {"ecosystem": "PyPI", "name": "Jinja2"}, "ranges": range("3.1.3")}]}),
    ];
    upload_records(&app, &advisories).await;
    let now = time::OffsetDateTime::now_utc();
    let scan = |at: time::OffsetDateTime| trusthub_hub::workers::cve_scan::scan_due(&app.state, at);
    assert_eq!(scan(now).await.expect("scan"), 1);
    let page = body(app.get("/inventory/cves", &app.owner).await).await;
    let items = page["items"].as_array().expect("items");
    let summary: Vec<(String, String, String)> = items
        .iter()
        .map(|f| {
            (
                f["vuln_id"].as_str().unwrap_or_default().to_owned(),
                f["package"].as_str().unwrap_or_default().to_owned(),
                f["severity"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(items.len(), 3, "{page}");
    // Worst first: openssl (CRITICAL: one finding for the source package, naming both of its
    // binaries this host has), lodash (HIGH), Jinja2 (MEDIUM, once).
    assert_eq!(summary[0].1, "openssl");
    assert_eq!(summary[0].2, "CRITICAL");
    assert_eq!(
        items[0]["binary_packages"],
        json!([{"name": "libssl3", "version": "3.0.11-1~deb12u2"},
               {"name": "openssl", "version": "3.0.11-1~deb12u2"}])
    );
    assert_eq!(
        summary[1],
        ("GHSA-35jh-r3h4-6jhm".into(), "lodash".into(), "HIGH".into())
    );
    assert_eq!(items[1]["binary_packages"], json!([]));
    assert_eq!(
        summary[2],
        (
            "GHSA-h5c8-rqwp-cp95".into(),
            "Jinja2".into(),
            "MEDIUM".into()
        )
    );
    let jinja = &items[2];
    assert_eq!(jinja["aliases"], json!(["CVE-2024-22195", "PYSEC-2024-1"]));
    assert_eq!(jinja["project_path"], "/srv/api");
    assert_eq!(jinja["status"], "open");
    let ssl = &items[0];
    assert_eq!(ssl["fixed_versions"], json!(["3.0.11-1~deb12u3"]));
    assert_eq!(ssl["ecosystem"], "Debian:12");
    assert_eq!(ssl["agent_id"], host.id.as_str());
    assert!(ssl.get("project_path").is_none(), "{ssl}");
    assert!(
        ssl["cvss_score"]
            .as_f64()
            .is_some_and(|s| (s - 9.8).abs() < 1e-9)
    );
    // One alert for the host and scan (CRITICAL and HIGH are at or above the default HIGH).
    let alerts = body(app.get("/alerts", &app.owner).await).await;
    let cve_alerts: Vec<&Value> = alerts
        .as_array()
        .expect("alerts")
        .iter()
        .filter(|a| a["source"] == "cve")
        .collect();
    assert_eq!(cve_alerts.len(), 1, "{alerts}");
    assert_eq!(cve_alerts[0]["severity"], "critical");
    assert!(
        cve_alerts[0]["title"]
            .as_str()
            .is_some_and(|t| t.starts_with("2 new vulnerabilities")),
        "{}",
        cve_alerts[0]["title"]
    );

    // Not due again until the interval passes; then nothing new, no new alert.
    assert_eq!(scan(now).await.expect("scan"), 0);
    assert_eq!(
        scan(now + time::Duration::seconds(3601))
            .await
            .expect("scan"),
        1
    );
    let alerts = body(app.get("/alerts", &app.owner).await).await;
    assert_eq!(
        alerts
            .as_array()
            .expect("alerts")
            .iter()
            .filter(|a| a["source"] == "cve")
            .count(),
        1
    );
    // The host upgrades lodash past the fix: its finding is fixed at the next scan.
    push("4.17.21").await;
    assert_eq!(
        scan(now + time::Duration::seconds(3602))
            .await
            .expect("scan"),
        1
    );
    let open = body(app.get("/inventory/cves?status=open", &app.owner).await).await;
    assert_eq!(open["items"].as_array().map(Vec::len), Some(2), "{open}");
    let fixed = body(app.get("/inventory/cves?status=fixed", &app.owner).await).await;
    assert_eq!(fixed["items"][0]["package"], "lodash");
    assert!(fixed["items"][0]["fixed_at"].is_string());
    // An inventory without any package list (the agent could not read them) fixes nothing.
    let bare = json!({"batch_id": uuid::Uuid::new_v4(), "sent_at": crate::agents::ts(time::OffsetDateTime::now_utc()),
        "metrics": [], "inventory": {"collected_at": crate::agents::ts(time::OffsetDateTime::now_utc()),
        "os": {"id": "debian", "version": "12"}}});
    let r = crate::agents::send(
        &app,
        &host,
        &serde_json::to_vec(&bare).expect("json"),
        None,
        true,
    )
    .await;
    assert_eq!(r.status(), 202);
    scan(now + time::Duration::seconds(3603))
        .await
        .expect("scan");
    let still = body(app.get("/inventory/cves?status=open", &app.owner).await).await;
    assert_eq!(still["items"].as_array().map(Vec::len), Some(2), "{still}");
    // Filters and pages.
    let crit = body(
        app.get("/inventory/cves?severity=CRITICAL", &app.owner)
            .await,
    )
    .await;
    assert_eq!(crit["items"].as_array().map(Vec::len), Some(1));
    let npm = body(app.get("/inventory/cves?ecosystem=npm", &app.owner).await).await;
    assert_eq!(npm["items"].as_array().map(Vec::len), Some(1));
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let at = match &cursor {
            Some(c) => format!("/inventory/cves?limit=1&cursor={c}"),
            None => "/inventory/cves?limit=1".into(),
        };
        let page = body(app.get(&at, &app.owner).await).await;
        seen.extend(
            page["items"]
                .as_array()
                .expect("items")
                .iter()
                .map(|f| f["id"].clone()),
        );
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(seen.len(), 3, "paging visits every finding once: {seen:?}");
    // A misspelt parameter is refused by name, never ignored.
    let r = app.get("/inventory/cves?statsu=open", &app.owner).await;
    let problem = assert_problem(r, 400, "bad_request").await;
    assert!(
        problem["detail"]
            .as_str()
            .is_some_and(|d| d.contains("statsu")),
        "{problem}"
    );
    let r = app
        .get("/inventory/cves?severity=SEVERE&limit=0", &app.owner)
        .await;
    let problem = body(r).await;
    assert_eq!(
        problem["errors"].as_array().map(Vec::len),
        Some(2),
        "{problem}"
    );
    // The advisory, by id or by alias, with this tenant's findings of it.
    let dsa = body(app.get("/cves/DSA-5532-1", &app.owner).await).await;
    assert_eq!(dsa["severity"], "CRITICAL");
    assert_eq!(dsa["source"], "tenant");
    assert_eq!(dsa["record"]["affected"][0]["package"]["name"], "openssl");
    assert_eq!(dsa["findings"].as_array().map(Vec::len), Some(1), "{dsa}");
    // A finding of the former shape (one row per binary package) is merged into its source
    // package's at the next scan, keeping its acknowledgement; the group's other rows go.
    let ssl_id = dsa["findings"][0]["id"].as_str().expect("id").to_owned();
    app.execute(
        "UPDATE cve_findings SET package = 'libssl3', binaries = '[]', ack_reason = 'kept' \
         WHERE package = 'openssl'",
    )
    .await;
    assert_eq!(
        app.count("SELECT COUNT(*) FROM cve_findings WHERE package = 'libssl3'")
            .await,
        1
    );
    push("4.17.21").await;
    scan(now + time::Duration::seconds(7300))
        .await
        .expect("scan");
    let dsa = body(app.get("/cves/DSA-5532-1", &app.owner).await).await;
    assert_eq!(dsa["findings"].as_array().map(Vec::len), Some(1), "{dsa}");
    assert_eq!(dsa["findings"][0]["id"], ssl_id.as_str());
    assert_eq!(dsa["findings"][0]["package"], "openssl");
    assert_eq!(
        app.count("SELECT COUNT(*) FROM cve_findings WHERE package = 'libssl3' OR ack_reason = 'kept' AND package <> 'openssl'")
            .await,
        0
    );
    let by_alias = body(app.get("/cves/CVE-2024-22195", &app.owner).await).await;
    assert_eq!(by_alias["id"], "GHSA-h5c8-rqwp-cp95");
    assert_eq!(by_alias["findings"][0]["package"], "Jinja2");
    let pysec = body(app.get("/cves/PYSEC-2024-1", &app.owner).await).await;
    assert_eq!(
        pysec["findings"].as_array().map(Vec::len),
        Some(1),
        "merged into the GHSA finding: {pysec}"
    );
    assert_problem(
        app.get("/cves/CVE-1999-0001", &app.owner).await,
        404,
        "not_found",
    )
    .await;

    // Acknowledging: operators, with a reason; shown as acknowledged; taken back.
    let finding = items[2]["id"].as_str().expect("id").to_owned();
    let at = format!("/cve-findings/{finding}/acknowledge");
    let (viewer, _) = app.user_with_role("viewer").await;
    assert_problem(
        app.post(&at, &viewer, json!({"reason": "x"})).await,
        403,
        "forbidden",
    )
    .await;
    assert_problem(
        app.post(&at, &app.owner, json!({"reason": "  "})).await,
        422,
        "validation_failed",
    )
    .await;
    assert_problem(
        app.post(&at, &app.owner, json!({"reasn": "x"})).await,
        422,
        "validation_failed",
    )
    .await;
    let r = app
        .post(&at, &app.owner, json!({"reason": "templates are trusted"}))
        .await;
    assert_eq!(r.status(), 200);
    let acked = body(r).await;
    assert_eq!(acked["status"], "acknowledged");
    assert_eq!(acked["ack_reason"], "templates are trusted");
    assert!(
        acked["acknowledged_by"]
            .as_str()
            .is_some_and(|a| a.starts_with("user:"))
    );
    assert_problem(
        app.post(&at, &app.owner, json!({"reason": "again"})).await,
        409,
        "conflict",
    )
    .await;
    let listed = body(
        app.get("/inventory/cves?status=acknowledged", &app.owner)
            .await,
    )
    .await;
    assert_eq!(listed["items"][0]["id"], finding.as_str());
    let r = app.delete(&at, &app.owner).await;
    assert_eq!(r.status(), 200);
    let back = body(r).await;
    assert_eq!(back["status"], "open");
    assert!(back.get("ack_reason").is_none(), "{back}");
    assert_problem(app.delete(&at, &app.owner).await, 409, "conflict").await;
    let audit = body(
        app.get("/audit-log?event_type=cve_finding_acknowledged", &app.owner)
            .await,
    )
    .await;
    assert_eq!(audit.as_array().map(Vec::len), Some(1), "{audit}");

    // Another tenant sees none of it.
    let other = app.other_tenant().await;
    let theirs = body(app.get("/inventory/cves", &other).await).await;
    assert_eq!(theirs["items"], json!([]));
    assert_problem(app.get("/cves/DSA-5532-1", &other).await, 404, "not_found").await;
    assert_problem(
        app.post(&at, &other, json!({"reason": "x"})).await,
        404,
        "not_found",
    )
    .await;
}

/// An inventory whose dependencies name their sources (CONTRACT 29).
fn inventory_with_sources(deps: Value) -> Value {
    batch(
        json!([{"manager": "dpkg", "name": "curl", "version": "7.88.1-10+deb12u8"}]),
        deps,
    )
}

async fn findings_name_their_source_and_the_coverage_lists_every_source(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = crate::agents::register(&app).await;
    let send = |inv: Value| {
        let app = &app;
        let host = &host;
        async move {
            let r = crate::agents::send(
                app,
                host,
                &serde_json::to_vec(&inv).expect("json"),
                None,
                true,
            )
            .await;
            assert_eq!(r.status(), 202);
        }
    };
    upload_records(
        &app,
        &[json!({"id": "GHSA-35jh-r3h4-6jhm", "modified": "2024-01-01T00:00:00Z",
            "aliases": ["CVE-2021-23337"], "summary": "Command injection in lodash",
            "affected": [{"package": {"ecosystem": "npm", "name": "lodash"},
                "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "4.17.21"}]}]}]})],
    )
    .await;
    let now = time::OffsetDateTime::now_utc();
    let scan = |at: time::OffsetDateTime| trusthub_hub::workers::cve_scan::scan_due(&app.state, at);
    // An older agent names no source; its finding is acknowledged.
    send(inventory_with_sources(json!([
        {"project_path": "/srv/web", "lockfile": "package-lock.json", "ecosystem": "npm", "name": "lodash", "version": "4.17.20"}
    ])))
    .await;
    assert_eq!(scan(now).await.expect("scan"), 1);
    let page = body(app.get("/inventory/cves", &app.owner).await).await;
    let old_id = page["items"][0]["id"].as_str().expect("id").to_owned();
    // Named by its project and lockfile.
    assert_eq!(
        page["items"][0]["source"], "/srv/web/package-lock.json",
        "{page}"
    );
    assert_eq!(page["items"][0]["source_kind"], "lockfile");
    // As a row written before findings named their source (migration 0037) would be.
    app.execute("UPDATE cve_findings SET source = '', source_kind = ''")
        .await;
    let r = app
        .post(
            &format!("/cve-findings/{old_id}/acknowledge"),
            &app.owner,
            json!({"reason": "reviewed"}),
        )
        .await;
    assert_eq!(r.status(), 200);

    // The upgraded agent: the installed tree has lodash twice (a nested older copy), the
    // lockfile of another project the same version, a binary, and sources that cannot be
    // checked for three different reasons.
    let nm = "/srv/web/node_modules";
    send(inventory_with_sources(json!([
        {"project_path": "/srv/web", "source": nm, "source_kind": "installed", "format": "node-modules",
         "ecosystem": "npm", "name": "lodash", "version": "4.17.20"},
        {"project_path": "/srv/web", "source": nm, "source_kind": "installed", "format": "node-modules",
         "ecosystem": "npm", "name": "lodash", "version": "4.17.15"},
        {"project_path": "/srv/web", "source": nm, "source_kind": "installed", "format": "node-modules",
         "ecosystem": "npm", "name": "express", "version": "4.21.2"},
        {"project_path": "/srv/admin", "lockfile": "yarn.lock", "source": "/srv/admin/yarn.lock",
         "source_kind": "lockfile", "format": "yarn-v1", "ecosystem": "npm", "name": "lodash", "version": "4.17.20"},
        {"project_path": "/srv/api", "lockfile": "uv.lock", "source": "/srv/api/uv.lock",
         "source_kind": "lockfile", "format": "uv-lock", "ecosystem": "pip", "name": "jinja2", "version": "3.1.2"},
        {"project_path": "/srv/broken", "lockfile": "pnpm-lock.yaml", "source": "/srv/broken/pnpm-lock.yaml",
         "source_kind": "lockfile", "format": "pnpm-lock", "error": "line 3: not a package key"},
        {"project_path": "/srv/rs", "lockfile": "Cargo.lock", "source": "/srv/rs/Cargo.lock",
         "source_kind": "lockfile", "format": "cargo-lock", "ecosystem": "cargo", "name": "serde", "version": "1.0.0"},
    ])))
    .await;
    assert_eq!(
        scan(now + time::Duration::seconds(3601))
            .await
            .expect("scan"),
        1
    );
    let page = body(app.get("/inventory/cves?status=unfixed", &app.owner).await).await;
    let mut found: Vec<(String, String, String, String)> = page["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|f| {
            (
                f["source"].as_str().unwrap_or_default().to_owned(),
                f["source_kind"].as_str().unwrap_or_default().to_owned(),
                f["installed_version"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                f["project_path"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    found.sort();
    // One finding per (project, package, version, source).
    assert_eq!(
        found,
        [
            (
                "/srv/admin/yarn.lock".into(),
                "lockfile".into(),
                "4.17.20".into(),
                "/srv/admin".into()
            ),
            (
                nm.into(),
                "installed".into(),
                "4.17.15".into(),
                "/srv/web".into()
            ),
            (
                nm.into(),
                "installed".into(),
                "4.17.20".into(),
                "/srv/web".into()
            ),
        ],
        "{page}"
    );
    // The finding written before sources were named is adopted by the first source that
    // finds the same package in the project, keeping its history and acknowledgement.
    let adopted: Vec<&Value> = page["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|f| f["id"] == old_id.as_str())
        .collect();
    assert_eq!(adopted.len(), 1, "{page}");
    assert_eq!(adopted[0]["source"], nm);
    assert_eq!(adopted[0]["status"], "acknowledged");
    assert_eq!(adopted[0]["ack_reason"], "reviewed");

    // The coverage: every source with its format, packages and state.
    let cov = body(app.get("/inventory/cves/coverage", &app.owner).await).await;
    let rows: Vec<(String, String, String, i64, String)> = cov
        .as_array()
        .expect("rows")
        .iter()
        .map(|s| {
            assert_eq!(s["agent_id"], host.id.as_str());
            assert!(s["scanned_at"].is_string());
            (
                s["source"].as_str().unwrap_or_default().to_owned(),
                s["source_kind"].as_str().unwrap_or_default().to_owned(),
                s["format"].as_str().unwrap_or_default().to_owned(),
                s["packages"].as_i64().unwrap_or(-1),
                s["status"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let row = |a: &str, b: &str, c: &str, n: i64, st: &str| {
        (a.to_owned(), b.to_owned(), c.to_owned(), n, st.to_owned())
    };
    assert_eq!(
        rows,
        [
            row(
                "/var/lib/dpkg/status",
                "installed",
                "dpkg",
                1,
                "not_covered"
            ),
            row(nm, "installed", "node-modules", 3, "covered"),
            row("/srv/admin/yarn.lock", "lockfile", "yarn-v1", 1, "covered"),
            row("/srv/api/uv.lock", "lockfile", "uv-lock", 1, "not_covered"),
            row(
                "/srv/broken/pnpm-lock.yaml",
                "lockfile",
                "pnpm-lock",
                0,
                "not_covered"
            ),
            row(
                "/srv/rs/Cargo.lock",
                "lockfile",
                "cargo-lock",
                1,
                "not_covered"
            ),
        ],
        "{cov}"
    );
    let reason = |i: usize| cov[i]["reason"].as_str().unwrap_or_default().to_owned();
    assert!(
        reason(0).contains("no advisory data loaded for Debian:12"),
        "{cov}"
    );
    assert!(cov[1].get("reason").is_none(), "{cov}");
    assert!(
        reason(3).contains("no advisory data loaded for PyPI"),
        "{cov}"
    );
    assert!(reason(4).contains("line 3: not a package key"), "{cov}");
    assert!(reason(5).contains("version order not implemented"), "{cov}");
    // Filters: one host, one state; misspelt or unknown values are refused by name.
    let bad = body(
        app.get(
            &format!(
                "/inventory/cves/coverage?status=not_covered&agent_id={}",
                host.id
            ),
            &app.owner,
        )
        .await,
    )
    .await;
    assert_eq!(bad.as_array().map(Vec::len), Some(4), "{bad}");
    let r = app
        .get("/inventory/cves/coverage?state=covered", &app.owner)
        .await;
    assert_problem(r, 400, "bad_request").await;
    let r = app
        .get("/inventory/cves/coverage?status=clean", &app.owner)
        .await;
    let p = assert_problem(r, 422, "validation_failed").await;
    assert!(names_field(&p, "status"), "{p}");
    let r = app
        .get(
            &format!("/inventory/cves/coverage?agent_id={}", uuid::Uuid::now_v7()),
            &app.owner,
        )
        .await;
    assert_problem(r, 404, "not_found").await;
    // The dashboard's host page lists the sources with their state.
    let page = app
        .get(
            &format!("//ui/agents/{}/vulnerabilities", host.id),
            &app.owner,
        )
        .await;
    assert_eq!(page.status(), 200);
    let html = page.text().await.expect("html");
    assert!(html.contains("/srv/broken/pnpm-lock.yaml"), "{html}");
    assert!(html.contains("line 3: not a package key"));
    assert!(html.contains("node-modules"));
    // Another tenant sees none of it, and this host is not theirs.
    let other = app.other_tenant().await;
    assert_eq!(
        body(app.get("/inventory/cves/coverage", &other).await).await,
        json!([])
    );
    let r = app
        .get(
            &format!("/inventory/cves/coverage?agent_id={}", host.id),
            &other,
        )
        .await;
    assert_problem(r, 404, "not_found").await;
}
