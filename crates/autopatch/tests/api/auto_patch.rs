//! Auto-patch, hub side (CONTRACT 19): the settings and their TOTP rule, the worker's plan at
//! chosen instants (filters, skips recorded once with their attestation, the minimum gap
//! between two runs of a host), runs and attestation chains, roles and tenants. Sending to a
//! connected agent and its answers are in crates/agent/tests/end_to_end.rs, with the real
//! agent and apt.

use crate::actions::enrol;
use crate::agents::{Host, register, send, ts};
use crate::cve::upload_records;
use crate::harness::*;
use reqwest::Method;
use serde_json::{Value, json};
use trusthub_core::totp;

crate::dual!(
    settings_need_totp_to_turn_on_and_each_change_is_attested,
    the_worker_skips_what_it_must_not_patch_once_and_keeps_its_gap,
    an_admin_turns_auto_patch_on_in_the_browser_with_a_totp_code_and_reads_the_chain,
);

fn settings_path(host: &Host) -> String {
    format!("/agents/{}/auto-patch", host.id)
}

async fn patch_with(
    app: &TestApp,
    auth: &Auth,
    host: &Host,
    body: Value,
    code: Option<String>,
) -> reqwest::Response {
    let mut r = app
        .req(Method::PATCH, &settings_path(host), auth)
        .json(&body);
    if let Some(c) = code {
        r = r.header("x-totp-code", c);
    }
    r.send().await.expect("patch")
}

async fn settings_need_totp_to_turn_on_and_each_change_is_attested(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    let (viewer, _) = app.user_with_role("viewer").await;
    let (operator, _) = app.user_with_role("operator").await;
    let defaults = body(app.get(&settings_path(&host), &viewer).await).await;
    assert_eq!(
        defaults,
        json!({"agent_id": host.id, "os_packages": false, "app_deps": false, "min_severity": "HIGH",
            "enabled_by": null, "enabled_at": null, "last_run_at": null})
    );
    // Another tenant's host, or none: 404.
    let other = app.other_tenant().await;
    assert_problem(
        app.get(&settings_path(&host), &other).await,
        404,
        "not_found",
    )
    .await;
    assert_problem(
        app.get(
            &format!("/agents/{}/auto-patch", uuid::Uuid::new_v4()),
            &app.owner,
        )
        .await,
        404,
        "not_found",
    )
    .await;
    // Only admins change it; turning a flag on needs TOTP, which must be set up.
    assert_problem(
        patch_with(&app, &operator, &host, json!({"os_packages": true}), None).await,
        403,
        "forbidden",
    )
    .await;
    assert_problem(
        patch_with(&app, &app.owner, &host, json!({"os_packages": true}), None).await,
        403,
        "totp_not_enrolled",
    )
    .await;
    let now = fresh_totp_window().await;
    let secret = enrol(&app, &app.owner).await;
    assert_problem(
        patch_with(&app, &app.owner, &host, json!({"os_packages": true}), None).await,
        403,
        "totp_required",
    )
    .await;
    assert_problem(
        patch_with(
            &app,
            &app.owner,
            &host,
            json!({"os_packages": true}),
            Some("000000".into()),
        )
        .await,
        403,
        "totp_invalid",
    )
    .await;
    // Bad values are refused before any code is spent.
    let p = assert_problem(
        patch_with(
            &app,
            &app.owner,
            &host,
            json!({"min_severity": "LOW"}),
            None,
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert!(names_field(&p, "min_severity"), "{p}");
    let p = assert_problem(
        patch_with(&app, &app.owner, &host, json!({"os_package": true}), None).await,
        422,
        "validation_failed",
    )
    .await;
    assert!(names_field(&p, "os_package"), "{p}");
    assert_eq!(
        app.count("SELECT COUNT(*) FROM auto_patch_settings").await,
        0,
        "nothing changed"
    );
    let on = patch_with(
        &app,
        &app.owner,
        &host,
        json!({"os_packages": true, "min_severity": "CRITICAL"}),
        Some(totp::code_at(&secret, now - 30)),
    )
    .await;
    assert_eq!(on.status(), 200);
    let on = body(on).await;
    assert_eq!(on["os_packages"], true);
    assert_eq!(on["min_severity"], "CRITICAL");
    assert!(
        on["enabled_by"].is_string() && on["enabled_at"].is_string(),
        "{on}"
    );
    // Widening the minimum severity while a flag is on needs TOTP too (here another admin's).
    let (admin, _) = app.user_with_role("admin").await;
    assert_problem(
        patch_with(&app, &admin, &host, json!({"min_severity": "HIGH"}), None).await,
        403,
        "totp_not_enrolled",
    )
    .await;
    let admin_secret = enrol(&app, &admin).await;
    let wide = patch_with(
        &app,
        &admin,
        &host,
        json!({"min_severity": "HIGH"}),
        Some(totp::code_at(&admin_secret, now + 30)),
    )
    .await;
    assert_eq!(wide.status(), 200);
    let wide = body(wide).await;
    assert_eq!(wide["min_severity"], "HIGH");
    assert_eq!(
        wide["enabled_at"], on["enabled_at"],
        "only turning on sets it"
    );
    // Turning off needs no code, and leaves enabled_by/at as they were (SPEC 3.5).
    let off = patch_with(&app, &app.owner, &host, json!({"os_packages": false}), None).await;
    assert_eq!(off.status(), 200);
    let off = body(off).await;
    assert_eq!(off["os_packages"], false);
    assert_eq!(off["enabled_by"], on["enabled_by"]);
    // The same values again change nothing and record nothing.
    let same = patch_with(&app, &app.owner, &host, json!({"os_packages": false}), None).await;
    assert_eq!(same.status(), 200);
    // Each change is an attestation in the transparency log, about the host.
    let log = body(app.get("/transparency-log", &viewer).await).await;
    let flags: Vec<&Value> = log
        .as_array()
        .expect("log")
        .iter()
        .filter(|e| e["kind"] == "remediation.auto_flag_set")
        .collect();
    assert_eq!(flags.len(), 3, "{log}");
    assert_eq!(flags[0]["subject_ref"], host.id.as_str());
    assert_eq!(
        flags
            .iter()
            .map(|e| e["payload"]["turned_on"].clone())
            .collect::<Vec<_>>(),
        vec![json!(true), json!(false), json!(false)]
    );
    assert_eq!(flags[0]["payload"]["set_by"], on["enabled_by"]);
    assert_eq!(flags[1]["payload"]["min_severity"], "HIGH");
    assert_eq!(
        app.count(
            "SELECT COUNT(*) FROM audit_log WHERE event_type = 'auto_patch_settings_changed'"
        )
        .await,
        3
    );
    // The chain: the flag turned on, nothing proposed yet.
    let chains = body(
        app.get(&format!("/attestations?agent_id={}", host.id), &viewer)
            .await,
    )
    .await;
    assert_eq!(chains.as_array().map(Vec::len), Some(1), "{chains}");
    assert_eq!(chains[0]["flag_set"]["seq"], flags[0]["seq"]);
    assert_eq!(chains[0]["attempts"], json!([]));
    assert_eq!(
        body(app.get("/attestations", &other).await).await,
        json!([])
    );
    assert_problem(
        app.get(&format!("/attestations?agent_id={}", host.id), &other)
            .await,
        404,
        "not_found",
    )
    .await;
    // A run by hand needs TOTP, and a flag on.
    let run = |auth: &Auth, code: Option<String>| {
        let mut r = app.req(
            Method::POST,
            &format!("/agents/{}/auto-patch/run", host.id),
            auth,
        );
        if let Some(c) = code {
            r = r.header("x-totp-code", c);
        }
        async move { r.send().await.expect("run") }
    };
    assert_problem(run(&app.owner, None).await, 403, "totp_required").await;
    assert_problem(
        run(&app.owner, Some(totp::code_at(&secret, now + 30))).await,
        409,
        "conflict",
    )
    .await;
    assert_problem(
        app.get(
            &format!("/agents/{}/auto-patch/runs?limit=0", host.id),
            &viewer,
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
}

/// Acknowledges the open finding of `package` with `reason` (as the owner).
pub(crate) async fn acknowledge(app: &TestApp, package: &str, reason: &str) {
    let findings = body(app.get("/inventory/cves?limit=100", &app.owner).await).await;
    let id = findings["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|f| f["package"] == package)
        .expect("finding")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let r = app
        .post(
            &format!("/cve-findings/{id}/acknowledge"),
            &app.owner,
            json!({"reason": reason}),
        )
        .await;
    assert_eq!(r.status(), 200);
}

/// A Debian 12 host with OS packages (one a kernel) and npm dependencies.
fn inventory() -> Value {
    let now = time::OffsetDateTime::now_utc();
    json!({
        "batch_id": uuid::Uuid::new_v4(), "sent_at": ts(now), "metrics": [],
        "inventory": {
            "collected_at": ts(now),
            "os": {"name": "Debian GNU/Linux", "id": "debian", "version": "12"},
            "packages": [
                {"manager": "dpkg", "name": "libssl3", "version": "3.0.11-1~deb12u2", "source": "openssl"},
                {"manager": "dpkg", "name": "openssl", "version": "3.0.11-1~deb12u2"},
                {"manager": "dpkg", "name": "linux-image-6.1.0-26-amd64", "version": "6.1.112-1", "source": "linux-signed-amd64"},
                {"manager": "dpkg", "name": "curl", "version": "7.88.1-10+deb12u5"},
            ],
            "app_dependencies": [
                {"project_path": "/srv/web", "ecosystem": "npm", "name": "lodash", "version": "4.17.20"},
                {"project_path": "/srv/web", "ecosystem": "npm", "name": "minimist", "version": "1.2.5"},
                {"project_path": "/srv/web", "ecosystem": "npm", "name": "express", "version": "4.17.0"},
            ],
            "patching": {"managers": ["apt"], "reboot_required": true, "reboot_required_packages": ["linux-image-6.1.0-26-amd64"]},
        },
    })
}

async fn the_worker_skips_what_it_must_not_patch_once_and_keeps_its_gap(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    let r = send(
        &app,
        &host,
        &serde_json::to_vec(&inventory()).expect("json"),
        None,
        true,
    )
    .await;
    assert_eq!(r.status(), 202);
    let range = |fixed: &str| json!([{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": fixed}]}]);
    let semver = |fixed: &str| json!([{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": fixed}]}]);
    let critical =
        json!([{"type": "CVSS_V3", "score": "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H"}]);
    let high =
        json!([{"type": "CVSS_V3", "score": "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:N/A:N"}]);
    upload_records(
        &app,
        &[
            json!({"id": "DSA-5532-1", "modified": "2024-01-01T00:00:00Z", "severity": critical,
                "affected": [{"package": {"ecosystem": "Debian:12", "name": "openssl"}, "ranges": range("3.0.11-1~deb12u3")}]}),
            json!({"id": "DSA-5800-1", "modified": "2024-01-01T00:00:00Z", "severity": critical,
                "affected": [{"package": {"ecosystem": "Debian:12", "name": "linux-signed-amd64"}, "ranges": range("6.1.115-1")}]}),
            json!({"id": "DSA-9000-1", "modified": "2024-01-01T00:00:00Z", "severity": high,
                "affected": [{"package": {"ecosystem": "Debian:12", "name": "curl"}, "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}]}]}]}),
            json!({"id": "GHSA-35jh-r3h4-6jhm", "modified": "2024-01-01T00:00:00Z", "severity": high,
                "affected": [{"package": {"ecosystem": "npm", "name": "lodash"}, "ranges": semver("4.17.21")}]}),
            json!({"id": "GHSA-xvch-5gv4-984h", "modified": "2024-01-01T00:00:00Z", "severity": critical,
                "affected": [{"package": {"ecosystem": "npm", "name": "minimist"}, "ranges": semver("1.2.6")}]}),
            json!({"id": "GHSA-rv95-896h-c2vc", "modified": "2024-01-01T00:00:00Z", "severity": high,
                "affected": [{"package": {"ecosystem": "npm", "name": "express"}, "ranges": semver("4.19.2")}]}),
        ],
    )
    .await;
    let t0 = time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .expect("ns");
    trusthub_hub::workers::cve_scan::scan_due(&app.state, t0)
        .await
        .expect("scan");
    // lodash suppressed, minimist acknowledged.
    let in_30_days = (t0 + time::Duration::days(30))
        .format(&time::format_description::well_known::Rfc3339)
        .expect("fmt");
    let s = app
        .post(
            "/cve-suppressions",
            &app.owner,
            json!({"package_name": "lodash", "ecosystem": "npm", "version_range": ">=4.0.0 <4.17.21",
                "reason": "template() never sees user input", "expires_at": in_30_days}),
        )
        .await;
    assert_eq!(s.status(), 201);
    let suppression = body(s).await;
    acknowledge(&app, "minimist", "only used at build time").await;
    // Both flags on (TOTP), HIGH and above.
    let now = fresh_totp_window().await;
    let secret = enrol(&app, &app.owner).await;
    let r = patch_with(
        &app,
        &app.owner,
        &host,
        json!({"os_packages": true, "app_deps": true}),
        Some(totp::code_at(&secret, now - 30)),
    )
    .await;
    assert_eq!(r.status(), 200);

    // A cycle: the host is not connected, so nothing is sent; what must not be patched is
    // recorded with its reason, and the run is marked.
    let ran = trusthub_autopatch::service::cycle(&app.state, t0)
        .await
        .expect("cycle");
    assert_eq!(ran, 1);
    let settings = body(app.get(&settings_path(&host), &app.owner).await).await;
    assert_eq!(settings["last_run_at"], ts(t0));
    assert_eq!(
        body(
            app.get(&format!("/agents/{}/auto-patch/runs", host.id), &app.owner)
                .await
        )
        .await,
        json!([])
    );
    let skipped = || async {
        let log = body(app.get("/transparency-log", &app.owner).await).await;
        log.as_array()
            .expect("log")
            .iter()
            .filter(|e| e["kind"] == "remediation.skipped")
            .map(|e| e["payload"].clone())
            .collect::<Vec<Value>>()
    };
    let first = skipped().await;
    let reason_of = |package: &str| {
        first
            .iter()
            .find(|p| p["package"] == package)
            .map(|p| p["reason"].clone())
    };
    assert_eq!(reason_of("lodash"), Some(json!("suppressed")), "{first:?}");
    assert_eq!(reason_of("minimist"), Some(json!("acknowledged")));
    assert_eq!(reason_of("linux-signed-amd64"), Some(json!("kernel")));
    assert_eq!(reason_of("curl"), Some(json!("no_fix")));
    assert_eq!(
        reason_of("openssl"),
        None,
        "openssl is patched, not skipped"
    );
    assert_eq!(reason_of("express"), None);
    let lodash = first
        .iter()
        .find(|p| p["package"] == "lodash")
        .expect("lodash");
    assert_eq!(lodash["suppression_id"], suppression["id"]);
    assert_eq!(
        lodash["suppression_reason"],
        "template() never sees user input"
    );
    assert_eq!(lodash["vuln_ids"], json!(["GHSA-35jh-r3h4-6jhm"]));
    // Within the minimum gap the host is not run again; after it, it is, and the same skips
    // are not recorded twice.
    let later = t0 + time::Duration::seconds(60);
    assert_eq!(
        trusthub_autopatch::service::cycle(&app.state, later)
            .await
            .expect("cycle"),
        0
    );
    let after_gap = t0 + time::Duration::seconds(1500);
    assert_eq!(
        trusthub_autopatch::service::cycle(&app.state, after_gap)
            .await
            .expect("cycle"),
        1
    );
    assert_eq!(skipped().await.len(), first.len());
    let settings = body(app.get(&settings_path(&host), &app.owner).await).await;
    assert_eq!(settings["last_run_at"], ts(after_gap));
    // A run by hand: 202, nothing dispatched to a host that is not connected.
    let r = app
        .req(
            Method::POST,
            &format!("/agents/{}/auto-patch/run", host.id),
            &app.owner,
        )
        .header("x-totp-code", totp::code_at(&secret, now + 30))
        .send()
        .await
        .expect("run");
    assert_eq!(r.status(), 202);
    assert_eq!(body(r).await, json!([]));
    // The host's inventory says it waits for a reboot.
    let inv = body(
        app.get(&format!("/agents/{}/inventory", host.id), &app.owner)
            .await,
    )
    .await;
    assert_eq!(inv["patching"]["reboot_required"], true, "{inv}");
}

async fn an_admin_turns_auto_patch_on_in_the_browser_with_a_totp_code_and_reads_the_chain(
    b: Backend,
) {
    let app = TestApp::spawn(b).await;
    let Some(browser) = crate::webdriver::Browser::start(&format!("auto-patch-{b:?}")).await else {
        return;
    };
    let host = register(&app).await;
    let r = send(
        &app,
        &host,
        &serde_json::to_vec(&inventory()).expect("json"),
        None,
        true,
    )
    .await;
    assert_eq!(r.status(), 202);
    let (admin, _) = app
        .invite_and_accept(&app.owner, "patcher@example.com", "admin")
        .await;
    browser
        .sign_in(&app.base, "patcher@example.com", "a fine password")
        .await;
    let now = fresh_totp_window().await;
    let secret = enrol(&app, &admin).await;
    // The host page links to it.
    browser
        .goto(&format!("{}/ui/agents/{}", app.base, host.id))
        .await;
    browser
        .click(&format!("a[href='/ui/agents/{}/auto-patch']", host.id))
        .await;
    let page = browser.wait_text("Patching was never turned on").await;
    assert!(
        page.contains("yes, for linux-image-6.1.0-26-amd64"),
        "the reboot state: {page}"
    );
    // Every page of a host carries the same tab bar (CONTRACT 33), this one marked.
    for tab in [
        "vulnerabilities",
        "drift",
        "emergency",
        "console",
        "settings",
        "processes",
    ] {
        assert!(
            page.contains(&format!("href=\"/ui/agents/{}/{tab}\"", host.id)),
            "{tab}: {page}"
        );
    }
    assert!(
        page.contains(&format!(
            "href=\"/ui/agents/{}/auto-patch\" aria-current=\"page\"",
            host.id
        )),
        "{page}"
    );
    browser
        .click(&format!("a[href='/ui/agents/{}/vulnerabilities']", host.id))
        .await;
    let page = browser.wait_text("— vulnerabilities</h1>").await;
    assert!(
        page.contains(&format!("href=\"/ui/agents/{}/console\"", host.id))
            && page.contains(&format!("href=\"/ui/agents/{}/auto-patch\"", host.id)),
        "{page}"
    );
    browser
        .click(&format!("a[href='/ui/agents/{}/auto-patch']", host.id))
        .await;
    browser.wait_text("Patching was never turned on").await;
    let form = "form#auto-patch-settings";
    // Without a code, turning on is refused and nothing changes.
    browser
        .click(&format!("{form} input[name=os_packages]"))
        .await;
    browser.click(&format!("{form} button[type=submit]")).await;
    let page = browser.wait_text("TOTP").await;
    assert!(
        page.contains("role=\"alert\"") || page.contains("class=\"error\""),
        "{page}"
    );
    let api = body(app.get(&settings_path(&host), &app.owner).await).await;
    assert_eq!(api["os_packages"], false);
    // With the code: on, and the chain begins.
    browser
        .click(&format!("{form} input[name=os_packages]"))
        .await;
    browser
        .type_into(
            &format!("{form} input[name=code]"),
            &totp::code_at(&secret, now + 30),
        )
        .await;
    browser.click(&format!("{form} button[type=submit]")).await;
    let page = browser.wait_text("Saved.").await;
    assert!(page.contains("turned on: OS packages true"), "{page}");
    assert!(page.contains("by patcher@example.com"), "{page}");
    browser.screenshot("auto-patch").await;
    let api = body(app.get(&settings_path(&host), &app.owner).await).await;
    assert_eq!(api["os_packages"], true);
    assert_eq!(api["app_deps"], false);
    // Off again needs no code.
    browser
        .click(&format!("{form} input[name=os_packages]"))
        .await;
    browser.click(&format!("{form} button[type=submit]")).await;
    let page = browser.wait_text("Saved.").await;
    // Off says so, and who last turned it on (CONTRACT 33): never "Turned on" while off.
    assert!(
        page.contains("Off — last turned on") && !page.contains(">Turned on<"),
        "{page}"
    );
    let api = body(app.get(&settings_path(&host), &app.owner).await).await;
    assert_eq!(api["os_packages"], false);
    browser.assert_no_js_errors().await;
}
