//! `POST /cve/auto-update-all` (CONTRACT 19): the plan (dry run, no TOTP, nothing recorded),
//! the real request's TOTP rule, roles, tenants and validation, skips recorded with their
//! reason, the per-host attestation heading the chain, and the 25-action cap. What a
//! connected agent does with the actions is in crates/agent/tests/end_to_end.rs.

use crate::actions::enrol;
use crate::agents::{Host, register, send, ts};

use crate::cve::upload_records;
use crate::harness::*;
use reqwest::Method;
use serde_json::{Value, json};
use trusthub_core::totp;

crate::dual!(
    update_all_plans_needs_totp_records_skips_and_caps,
    an_admin_previews_update_all_in_the_browser_before_sending,
);

const PATH: &str = "/cve/auto-update-all";

async fn inventory_of(app: &TestApp, host: &Host, deps: Value) {
    let now = time::OffsetDateTime::now_utc();
    let inv = json!({
        "batch_id": uuid::Uuid::new_v4(), "sent_at": ts(now), "metrics": [],
        "inventory": {
            "collected_at": ts(now),
            "os": {"name": "Debian GNU/Linux", "id": "debian", "version": "12"},
            "packages": [{"manager": "dpkg", "name": "openssl", "version": "3.0.11-1~deb12u2"}],
            "app_dependencies": deps,
        },
    });
    let r = send(
        app,
        host,
        &serde_json::to_vec(&inv).expect("json"),
        None,
        true,
    )
    .await;
    assert_eq!(r.status(), 202);
}

/// A host with an npm project (lodash, minimist, express) and a pip one (requests), advisories
/// for each and for openssl, scanned; minimist acknowledged.
async fn fleet(app: &TestApp) -> Host {
    let host = register(app).await;
    inventory_of(
        app,
        &host,
        json!([
            {"project_path": "/srv/web", "ecosystem": "npm", "name": "lodash", "version": "4.17.20"},
            {"project_path": "/srv/web", "ecosystem": "npm", "name": "minimist", "version": "1.2.5"},
            {"project_path": "/srv/web", "ecosystem": "npm", "name": "express", "version": "4.17.0"},
            {"project_path": "/srv/api", "ecosystem": "pip", "name": "requests", "version": "2.31.0"},
        ]),
    )
    .await;
    let semver = |fixed: &str| json!([{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": fixed}]}]);
    let eco = |fixed: &str| json!([{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": fixed}]}]);
    let medium =
        json!([{"type": "CVSS_V3", "score": "CVSS:3.1/AV:N/AC:H/PR:N/UI:R/S:U/C:L/I:L/A:N"}]);
    upload_records(
        app,
        &[
            json!({"id": "DSA-5532-1", "modified": "2024-01-01T00:00:00Z",
                "affected": [{"package": {"ecosystem": "Debian:12", "name": "openssl"}, "ranges": eco("3.0.11-1~deb12u3")}]}),
            json!({"id": "GHSA-35jh-r3h4-6jhm", "modified": "2024-01-01T00:00:00Z",
                "affected": [{"package": {"ecosystem": "npm", "name": "lodash"}, "ranges": semver("4.17.21")}]}),
            json!({"id": "GHSA-xvch-5gv4-984h", "modified": "2024-01-01T00:00:00Z",
                "affected": [{"package": {"ecosystem": "npm", "name": "minimist"}, "ranges": semver("1.2.6")}]}),
            json!({"id": "GHSA-rv95-896h-c2vc", "modified": "2024-01-01T00:00:00Z", "severity": medium,
                "affected": [{"package": {"ecosystem": "npm", "name": "express"}, "ranges": semver("4.19.2")}]}),
            json!({"id": "GHSA-9wx4-h78v-vm56", "modified": "2024-01-01T00:00:00Z",
                "affected": [{"package": {"ecosystem": "PyPI", "name": "requests"}, "ranges": eco("2.32.0")}]}),
        ],
    )
    .await;
    trusthub_hub::workers::cve_scan::scan_due(&app.state, time::OffsetDateTime::now_utc())
        .await
        .expect("scan");
    crate::auto_patch::acknowledge(app, "minimist", "only used at build time").await;
    host
}

fn remediation_kinds(log: &Value) -> Vec<String> {
    log.as_array()
        .expect("log")
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .filter(|k| k.starts_with("remediation."))
        .map(str::to_owned)
        .collect()
}

async fn update_all_plans_needs_totp_records_skips_and_caps(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = fleet(&app).await;

    // The plan: every application dependency with a fix, one action per (project,
    // ecosystem), never an OS package; the acknowledged one skipped. Nothing is recorded.
    let plan = app.post(PATH, &app.owner, json!({"dry_run": true})).await;
    assert_eq!(plan.status(), 200);
    let plan = body(plan).await;
    assert_eq!(plan["dry_run"], true);
    assert_eq!(plan["capped"], false);
    let dispatched = plan["dispatched"].as_array().expect("dispatched");
    assert_eq!(dispatched.len(), 2, "{plan}");
    let web = dispatched
        .iter()
        .find(|d| d["project_path"] == "/srv/web")
        .expect("web");
    assert_eq!(web["ecosystem"], "npm");
    assert_eq!(web["agent_id"], json!(host.id));
    assert!(web.get("eat_nonce").is_none());
    let mut pkgs: Vec<(String, String, String)> = web["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap_or_default().to_owned(),
                p["from"].as_str().unwrap_or_default().to_owned(),
                p["to"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    pkgs.sort();
    assert_eq!(
        pkgs,
        vec![
            ("express".into(), "4.17.0".into(), "4.19.2".into()),
            ("lodash".into(), "4.17.20".into(), "4.17.21".into()),
        ],
        "every severity, one action"
    );
    let api = dispatched
        .iter()
        .find(|d| d["project_path"] == "/srv/api")
        .expect("api");
    assert_eq!(api["ecosystem"], "PyPI");
    assert_eq!(api["packages"][0]["to"], "2.32.0");
    let skipped = plan["skipped"].as_array().expect("skipped");
    assert_eq!(skipped.len(), 1, "{plan}");
    assert_eq!(skipped[0]["package"], "minimist");
    assert_eq!(skipped[0]["reason"], "acknowledged");
    assert_eq!(skipped[0]["vuln_ids"], json!(["GHSA-xvch-5gv4-984h"]));
    let log = body(app.get("/transparency-log", &app.owner).await).await;
    assert!(remediation_kinds(&log).is_empty(), "a plan records nothing");
    // Filters: one ecosystem (either name), one host.
    for name in ["pip", "PyPI"] {
        let only = body(
            app.post(
                PATH,
                &app.owner,
                json!({"dry_run": true, "ecosystems": [name], "agent_ids": [host.id]}),
            )
            .await,
        )
        .await;
        assert_eq!(only["dispatched"].as_array().map(Vec::len), Some(1));
        assert_eq!(only["dispatched"][0]["project_path"], "/srv/api");
    }

    // Bad input changes nothing: 422 for an unknown ecosystem or field, 404 for a host of
    // another tenant, 403 for roles below admin.
    assert_problem(
        app.post(
            PATH,
            &app.owner,
            json!({"dry_run": true, "ecosystems": ["cargo"]}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert_problem(
        app.post(
            PATH,
            &app.owner,
            json!({"dry_run": true, "ecosytems": ["npm"]}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    let other = app.other_tenant().await;
    let theirs = register_for(&app, &other).await;
    assert_problem(
        app.post(
            PATH,
            &app.owner,
            json!({"dry_run": true, "agent_ids": [theirs]}),
        )
        .await,
        404,
        "not_found",
    )
    .await;
    let (operator, _) = app.user_with_role("operator").await;
    let r = app.post(PATH, &operator, json!({"dry_run": true})).await;
    assert_eq!(r.status(), 403);
    // Another tenant's admin plans over its own hosts only: nothing of ours.
    let theirs_plan = body(app.post(PATH, &other, json!({"dry_run": true})).await).await;
    assert_eq!(theirs_plan["dispatched"], json!([]));

    // The real request needs TOTP: not enrolled, then no code.
    assert_problem(
        app.post(PATH, &app.owner, json!({})).await,
        403,
        "totp_not_enrolled",
    )
    .await;
    let now = fresh_totp_window().await;
    let secret = enrol(&app, &app.owner).await;
    let r = app.post(PATH, &app.owner, json!({})).await;
    let p = assert_problem(r, 403, "totp_required").await;
    assert!(
        p["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("auto_update_all"),
        "{p}"
    );
    let r = app
        .req(Method::POST, PATH, &app.owner)
        .header("x-totp-code", totp::code_at(&secret, now - 30))
        .json(&json!({}))
        .send()
        .await
        .expect("update all");
    assert_eq!(r.status(), 202);
    let sent = body(r).await;
    assert_eq!(sent["dry_run"], false);
    // The host is not connected: nothing is sent, and the answer says so per package.
    assert_eq!(sent["dispatched"], json!([]));
    let mut reasons: Vec<(String, String)> = sent["skipped"]
        .as_array()
        .expect("skipped")
        .iter()
        .map(|s| {
            (
                s["package"].as_str().unwrap_or_default().to_owned(),
                s["reason"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    reasons.sort();
    assert_eq!(
        reasons,
        vec![
            ("express".into(), "not_connected".into()),
            ("lodash".into(), "not_connected".into()),
            ("minimist".into(), "acknowledged".into()),
            ("requests".into(), "not_connected".into()),
        ]
    );
    // Recorded: the request's attestation on the host, the skip with its reason, the audit row.
    let log = body(app.get("/transparency-log", &app.owner).await).await;
    let kinds = remediation_kinds(&log);
    assert!(
        kinds.contains(&"remediation.auto_update_all".to_owned()),
        "{kinds:?}"
    );
    let skip = log
        .as_array()
        .expect("log")
        .iter()
        .find(|e| e["kind"] == "remediation.skipped")
        .expect("skip");
    assert_eq!(skip["payload"]["package"], "minimist");
    assert_eq!(skip["payload"]["reason"], "acknowledged");
    let head = log
        .as_array()
        .expect("log")
        .iter()
        .find(|e| e["kind"] == "remediation.auto_update_all")
        .expect("head");
    assert_eq!(head["subject_ref"], host.id.to_string());
    let audit = body(
        app.get(
            "/audit-log?event_type=auto_update_all_requested",
            &app.owner,
        )
        .await,
    )
    .await;
    assert_eq!(audit.as_array().map(Vec::len), Some(1), "{audit}");
    // The chain lists the request as its head, with no attempts (nothing was sent).
    let chains = body(
        app.get(&format!("/attestations?agent_id={}", host.id), &app.owner)
            .await,
    )
    .await;
    assert_eq!(
        chains[0]["flag_set"]["kind"], "remediation.auto_update_all",
        "{chains}"
    );

    // The cap: 30 projects on one host, 25 actions per request, the rest skipped as `cap`.
    let big = register(&app).await;
    let deps: Vec<Value> = (0..30)
        .map(|i| json!({"project_path": format!("/srv/p{i:02}"), "ecosystem": "npm", "name": "lodash", "version": "4.17.20"}))
        .collect();
    inventory_of(&app, &big, Value::Array(deps)).await;
    trusthub_hub::workers::cve_scan::scan_due(&app.state, time::OffsetDateTime::now_utc())
        .await
        .expect("scan");
    let plan = body(
        app.post(
            PATH,
            &app.owner,
            json!({"dry_run": true, "agent_ids": [big.id]}),
        )
        .await,
    )
    .await;
    assert_eq!(plan["capped"], true);
    assert_eq!(plan["dispatched"].as_array().map(Vec::len), Some(25));
    let capped = plan["skipped"]
        .as_array()
        .expect("skipped")
        .iter()
        .filter(|s| s["reason"] == "cap")
        .count();
    assert_eq!(capped, 5);
}

/// Registers a host in the tenant `auth` belongs to: its id.
async fn register_for(app: &TestApp, auth: &Auth) -> String {
    let enroll = crate::agents::enrollment_token(app, auth).await;
    let key = crate::agents::key();
    let machine = uuid::Uuid::new_v4().simple().to_string();
    let r = crate::agents::register_raw(app, &enroll, &key, &key, &machine).await;
    assert_eq!(r.status(), 201);
    body(r).await["agent_id"].as_str().expect("id").to_owned()
}

async fn an_admin_previews_update_all_in_the_browser_before_sending(b: Backend) {
    let app = TestApp::spawn(b).await;
    let Some(browser) = crate::webdriver::Browser::start(&format!("update-all-{b:?}")).await else {
        return;
    };
    fleet(&app).await;
    let (admin, _) = app
        .invite_and_accept(&app.owner, "updater@example.com", "admin")
        .await;
    browser
        .sign_in(&app.base, "updater@example.com", "a fine password")
        .await;
    let now = fresh_totp_window().await;
    let secret = enrol(&app, &admin).await;
    // The preview: what each action would update, what is skipped and why; nothing sent.
    browser
        .goto(&format!("{}/ui/vulnerabilities", app.base))
        .await;
    browser
        .click("form#update-all-preview button[type=submit]")
        .await;
    let page = browser.wait_text("Update all: the plan").await;
    assert!(page.contains("lodash 4.17.20 → 4.17.21"), "{page}");
    assert!(page.contains("requests 2.31.0 → 2.32.0"), "{page}");
    assert!(
        page.contains("/srv/web") && page.contains("web-1"),
        "{page}"
    );
    assert!(
        page.contains("minimist") && page.contains("acknowledged"),
        "{page}"
    );
    assert!(
        !page.contains("openssl 3.0.11"),
        "OS packages are not in it: {page}"
    );
    let log = body(app.get("/transparency-log", &app.owner).await).await;
    assert!(
        remediation_kinds(&log).is_empty(),
        "a preview records nothing"
    );
    // A wrong code is refused and nothing is sent; the right one sends (the host is
    // offline, so each package says so).
    browser
        .type_into(
            "form#update-all-send input[name=code]",
            &totp::code_at(&secret, now - 3600),
        )
        .await;
    browser
        .click("form#update-all-send button[type=submit]")
        .await;
    let page = browser.wait_text("TOTP").await;
    assert!(
        page.contains("Update all: the plan") && page.contains("error"),
        "{page}"
    );
    browser
        .type_into(
            "form#update-all-send input[name=code]",
            &totp::code_at(&secret, now + 30),
        )
        .await;
    browser
        .click("form#update-all-send button[type=submit]")
        .await;
    let page = browser.wait_text("Update all: sent").await;
    assert!(page.contains("not connected"), "{page}");
    browser.screenshot("update-all").await;
    let audit = body(
        app.get(
            "/audit-log?event_type=auto_update_all_requested",
            &app.owner,
        )
        .await,
    )
    .await;
    assert_eq!(audit.as_array().map(Vec::len), Some(1));
    browser.assert_no_js_errors().await;
}
