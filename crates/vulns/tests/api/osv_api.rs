//! The OSV-compatible query API (CONTRACT 15) at the root, with a bearer API token: the
//! shapes of api.osv.dev's `/v1/query` and `/v1/querybatch` over the imported data, purls,
//! every vulnerability of a package without a version, withdrawn records never, refusals
//! named, the tenant's own uploads only for itself.

use crate::harness::*;
use serde_json::{Value, json};

crate::dual!(osv_clients_query_the_imported_data_by_package_version_and_purl);

async fn osv(app: &TestApp, path: &str, token: Option<&str>, q: Value) -> (u16, Value) {
    let mut r = http_client().post(format!("{}/osv/v1/{path}", app.base));
    if let Some(t) = token {
        r = r.bearer_auth(t);
    }
    let resp = r.json(&q).send().await.expect("osv request");
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

async fn osv_clients_query_the_imported_data_by_package_version_and_purl(b: Backend) {
    let app = TestApp::spawn(b).await;
    let range = |fixed: &str| json!([{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": fixed}]}]);
    let advisories = [
        json!({"id": "GHSA-35jh-r3h4-6jhm", "modified": "2024-01-02T00:00:00Z", "aliases": ["CVE-2021-23337"],
            "summary": "Command injection in lodash", "details": "kept as imported",
            "affected": [{"package": {"ecosystem": "npm", "name": "lodash"},
                "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "4.17.21"}]}]}]}),
        json!({"id": "GHSA-old", "modified": "2024-01-01T00:00:00Z", "withdrawn": "2024-02-01T00:00:00Z",
            "affected": [{"package": {"ecosystem": "npm", "name": "lodash"}, "ranges": range("9.0.0")}]}),
        json!({"id": "GHSA-h5c8-rqwp-cp95", "modified": "2024-01-01T00:00:00Z", "aliases": ["CVE-2024-22195"],
            "affected": [{"package": {"ecosystem": "PyPI", "name": "jinja2"}, "ranges": range("3.1.3")}]}),
        json!({"id": "PYSEC-2024-1", "modified": "2024-01-01T00:00:00Z", "aliases": ["CVE-2024-22195"],
            "affected": [{"package": {"ecosystem": "PyPI", "name": "Jinja2"}, "ranges": range("3.1.3")}]}),
        json!({"id": "GHSA-monolog", "modified": "2024-01-01T00:00:00Z",
            "affected": [{"package": {"ecosystem": "Packagist", "name": "monolog/monolog"}, "ranges": range("3.5.1")}]}),
        json!({"id": "DSA-5532-1", "modified": "2024-01-01T00:00:00Z",
            "affected": [{"package": {"ecosystem": "Debian:12", "name": "openssl"}, "ranges": range("3.0.11-1~deb12u3")}]}),
    ];
    crate::cve::upload_records(&app, &advisories).await;
    let (token, _) = app.token(&app.owner, "read").await;
    let t = Some(token.as_str());
    let ids = |v: &Value| -> Vec<String> {
        let mut out: Vec<String> = v["vulns"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| r["id"].as_str().unwrap_or_default().to_owned())
            .collect();
        out.sort();
        out
    };

    let (s, v) = osv(
        &app,
        "query",
        t,
        json!({"package": {"name": "lodash", "ecosystem": "npm"}, "version": "4.17.20"}),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(ids(&v), ["GHSA-35jh-r3h4-6jhm"]);
    // The full record as imported.
    assert_eq!(v["vulns"][0]["details"], "kept as imported");
    assert_eq!(v["vulns"][0]["aliases"], json!(["CVE-2021-23337"]));
    // Past the fix: nothing (an empty object, as api.osv.dev answers).
    let (s, v) = osv(
        &app,
        "query",
        t,
        json!({"package": {"name": "lodash", "ecosystem": "npm"}, "version": "4.17.21"}),
    )
    .await;
    assert_eq!((s, v), (200, json!({})));
    // A purl carries ecosystem, name and version.
    let (_, v) = osv(
        &app,
        "query",
        t,
        json!({"package": {"purl": "pkg:npm/lodash@4.17.20"}}),
    )
    .await;
    assert_eq!(ids(&v), ["GHSA-35jh-r3h4-6jhm"]);
    // PyPI names by PEP 503; both databases' records of the same CVE are returned.
    let (_, v) = osv(
        &app,
        "query",
        t,
        json!({"package": {"name": "JINJA2", "ecosystem": "PyPI"}, "version": "3.1.2"}),
    )
    .await;
    assert_eq!(ids(&v), ["GHSA-h5c8-rqwp-cp95", "PYSEC-2024-1"]);
    // Without a version: every (not withdrawn) record naming the package.
    let (_, v) = osv(
        &app,
        "query",
        t,
        json!({"package": {"name": "lodash", "ecosystem": "npm"}}),
    )
    .await;
    assert_eq!(ids(&v), ["GHSA-35jh-r3h4-6jhm"]);
    let (_, v) = osv(
        &app,
        "query",
        t,
        json!({"package": {"purl": "pkg:deb/debian/openssl@3.0.11-1~deb12u2?distro=debian-12"}}),
    )
    .await;
    assert_eq!(ids(&v), ["DSA-5532-1"]);

    // Composer's order: `v3.5.0` is 3.5.0.0, before the fix; 3.5.1-RC1 too; 3.5.1 is not.
    for (version, hit) in [
        ("v3.5.0", true),
        ("3.5.1-RC1", true),
        ("3.5.1", false),
        ("3.10.0", false),
    ] {
        let (_, v) = osv(&app, "query", t, json!({"package": {"name": "monolog/monolog", "ecosystem": "Packagist"}, "version": version})).await;
        assert_eq!(ids(&v).len(), usize::from(hit), "{version}: {v}");
    }

    // The batch: answers in order, id and modified only.
    let (s, v) = osv(
        &app,
        "querybatch",
        t,
        json!({"queries": [
            {"package": {"name": "lodash", "ecosystem": "npm"}, "version": "4.17.21"},
            {"package": {"purl": "pkg:pypi/jinja2@3.1.2"}},
            {"package": {"name": "lodash", "ecosystem": "npm"}, "version": "1.0.0"},
        ]}),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    let results = v["results"].as_array().expect("results");
    assert_eq!(results.len(), 3);
    assert_eq!(results[0], json!({}));
    assert_eq!(results[1]["vulns"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        results[2],
        json!({"vulns": [{"id": "GHSA-35jh-r3h4-6jhm", "modified": "2024-01-02T00:00:00Z"}]})
    );

    // Refusals, each named.
    for (path, q, field) in [
        (
            "query",
            json!({"commit": "6879efc2c1596d11a6a6ad296f80063b558d5e0f"}),
            "commit",
        ),
        ("query", json!({"version": "1.0.0"}), "package"),
        ("query", json!({"package": {"name": "lodash"}}), "package"),
        (
            "query",
            json!({"package": {"purl": "pkg:cargo/serde@1.0.0"}}),
            "package.purl",
        ),
        (
            "query",
            json!({"package": {"purl": "pkg:npm/lodash@1.0.0"}, "version": "1.0.0"}),
            "version",
        ),
        (
            "query",
            json!({"package": {"name": "lodash", "ecosystem": "npm"}, "version": "not.a.version"}),
            "version",
        ),
        (
            "querybatch",
            json!({"queries": [{"package": {"purl": "pkg:npm/a@1.0.0"}}, {"commit": "abc"}]}),
            "queries[1].commit",
        ),
    ] {
        let (s, v) = osv(&app, path, t, q.clone()).await;
        assert_eq!(s, 422, "{q} -> {v}");
        assert!(names_field(&v, field), "{q} -> {v}");
    }
    let (s, _) = osv(
        &app,
        "query",
        t,
        json!({"package": {"name": "lodash", "ecosystem": "npm"}, "versoin": "1"}),
    )
    .await;
    assert_eq!(s, 422);
    let too_many: Vec<Value> = (0..1001)
        .map(|_| json!({"package": {"purl": "pkg:npm/a@1.0.0"}}))
        .collect();
    let (s, v) = osv(&app, "querybatch", t, json!({"queries": too_many})).await;
    assert_eq!(s, 422, "{v}");

    // No token: 401. Another tenant does not see this tenant's upload.
    let (s, _) = osv(
        &app,
        "query",
        None,
        json!({"package": {"purl": "pkg:npm/lodash@4.17.20"}}),
    )
    .await;
    assert_eq!(s, 401);
    let stranger = app.other_tenant().await;
    let (their, _) = app.token(&stranger, "read").await;
    let (s, v) = osv(
        &app,
        "query",
        Some(&their),
        json!({"package": {"purl": "pkg:npm/lodash@4.17.20"}}),
    )
    .await;
    assert_eq!((s, v), (200, json!({})));
}
