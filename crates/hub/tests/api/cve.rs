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
            ("broken.json", b"{\"id\": 1}".to_vec()),
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
    assert_eq!(report["files"], 5, "{report}");
    assert_eq!(report["inserted"], 4, "{report}");
    assert_eq!(report["withdrawn"], 1, "{report}");
    assert_eq!(report["error_count"], 1, "{report}");
    assert!(
        report["errors"][0]
            .as_str()
            .is_some_and(|e| e.contains("broken.json")),
        "{report}"
    );
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
        app.get("/audit-log?event_type=cve_source_imported", &app.owner)
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
