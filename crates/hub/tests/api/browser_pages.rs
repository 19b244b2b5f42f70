//! The dashboard's management pages in a real browser (see `webdriver.rs`): settings (password,
//! TOTP from the QR code the page draws, recovery codes, API tokens), users and invitations,
//! one webhook (edit, test, delivery log, redeliver, delete), rule editing, an agent's
//! inventory, processes, governance, rotation and delete, AI teams and prices, and the
//! transparency log. Every change is checked through the API afterwards.

use crate::harness::*;
use crate::webdriver::Browser;
use serde_json::{Value, json};

crate::dual!(
    settings_change_the_password_turn_totp_on_from_the_qr_code_and_make_tokens_shown_once,
    an_owner_invites_someone_who_accepts_in_the_browser_and_manages_their_role,
    an_admin_edits_tests_redelivers_and_deletes_a_webhook,
    an_operator_edits_a_rule_and_a_viewer_only_reads_it,
    an_agent_shows_its_inventory_and_processes_and_an_admin_governs_rotates_and_deletes_it,
    ai_teams_sort_by_cost_and_p95_and_a_team_page_charts_its_days,
    an_operator_resolves_an_integrity_anomaly_the_overview_counted,
    vulnerability_data_sources_show_what_is_loaded_and_how_fresh,
    an_operator_acknowledges_a_vulnerability_and_reads_its_advisory,
    an_operator_suppresses_a_finding_from_its_row_and_reads_the_host_coverage,
    a_viewer_reads_the_maintainer_changes_of_the_hosts_npm_dependencies,
    an_operator_sets_an_slo_reads_its_budget_and_plans_maintenance,
);

/// The form whose action is `action`: its submit button.
fn submit(action: &str) -> String {
    format!("form[action='{action}'] button[type=submit]")
}

/// Decodes the QR code in a PNG with zbarimg (the oracle); `None` when zbarimg is absent
/// outside CI.
fn decode_qr(png: &std::path::Path) -> Option<String> {
    match std::process::Command::new("zbarimg")
        .args(["--raw", "-q"])
        .arg(png)
        .output()
    {
        Ok(out) => {
            assert!(out.status.success(), "zbarimg read no QR code in {png:?}");
            Some(String::from_utf8_lossy(&out.stdout).trim().to_owned())
        }
        Err(e) if std::env::var_os("CI").is_none() => {
            eprintln!("QR check skipped: zbarimg not found ({e}); apt-get install zbar-tools");
            None
        }
        Err(e) => panic!("zbarimg is mandatory in CI: {e}"),
    }
}

async fn settings_change_the_password_turn_totp_on_from_the_qr_code_and_make_tokens_shown_once(
    b: Backend,
) {
    let app = TestApp::spawn(b).await;
    let Some(browser) = Browser::start(&format!("settings-{b:?}")).await else {
        return;
    };
    browser
        .sign_in(&app.base, OWNER_EMAIL, OWNER_PASSWORD)
        .await;
    browser.goto(&format!("{}/ui/settings", app.base)).await;

    // An API token: shown once, works, then revoked from the list.
    browser.type_into("input[name=name]", "ci deploy").await;
    browser.set_value("select[name=scope]", "read").await;
    browser.click(&submit("/ui/settings/tokens")).await;
    let token = browser.text("#once-secret").await;
    assert!(token.starts_with("tht_"), "{token}");
    browser.screenshot("token-once").await;
    let me = app.get("/me", &Auth::Bearer(token.clone())).await;
    assert_eq!(me.status(), 200);
    browser.goto(&format!("{}/ui/settings", app.base)).await;
    let page = browser.wait_text("ci deploy").await;
    assert!(!page.contains(&token), "the token is never shown again");
    browser.click("tr[id^='token-'] form button").await;
    browser.wait_text("No API token yet.").await;
    assert_eq!(
        app.get("/me", &Auth::Bearer(token)).await.status(),
        401,
        "revoked"
    );

    // The password: a wrong current one changes nothing; the right one ends the session.
    browser
        .type_into("input[name=current_password]", "not my password")
        .await;
    browser
        .type_into("input[name=new_password]", "a brand new password")
        .await;
    browser.click(&submit("/ui/settings/password")).await;
    browser.wait_text("the current password is wrong").await;
    browser
        .type_into("input[name=current_password]", OWNER_PASSWORD)
        .await;
    browser
        .type_into("input[name=new_password]", "a brand new password")
        .await;
    browser.click(&submit("/ui/settings/password")).await;
    browser.wait_text("Your password was changed").await;
    assert!(browser.current_url().await.contains("/login"));
    browser
        .sign_in(&app.base, OWNER_EMAIL, "a brand new password")
        .await;

    // TOTP from the QR code: what the code encodes is what the page says, and a code from
    // that secret turns TOTP on; the recovery codes are shown once.
    browser.goto(&format!("{}/ui/settings", app.base)).await;
    browser.click(&submit("/ui/settings/totp/setup")).await;
    let secret_b32 = browser.text("#totp-secret").await;
    let png = browser.element_png("svg.qr", "totp-qr").await;
    if let Some(uri) = decode_qr(&png) {
        assert!(uri.starts_with("otpauth://totp/"), "{uri}");
        assert!(uri.contains(&format!("secret={secret_b32}")), "{uri}");
    }
    let secret = trusthub_core::totp::secret_from_base32(&secret_b32).expect("secret");
    let now = fresh_totp_window().await;
    browser
        .type_into(
            "input[name=code]",
            &trusthub_core::totp::code_at(&secret, now),
        )
        .await;
    browser.click(&submit("/ui/settings/totp/verify")).await;
    let codes = browser.text("#recovery-codes").await;
    assert_eq!(codes.split_whitespace().count(), 10, "{codes}");
    browser.screenshot("recovery-codes").await;
    // A password alone no longer signs in: TOTP is on.
    let r = app
        .post(
            "/auth/login",
            &Auth::None,
            json!({"email": OWNER_EMAIL, "password": "a brand new password"}),
        )
        .await;
    assert_problem(r, 401, "totp_required").await;
    browser.goto(&format!("{}/ui/settings", app.base)).await;
    let page = browser.wait_text("Turn TOTP off").await;
    let first = codes.split_whitespace().next().expect("a code");
    assert!(!page.contains(first), "recovery codes are shown once");
    // A wrong code does not turn it off.
    browser
        .type_into(
            "form[action='/ui/settings/totp/disable'] input[name=code]",
            "000000",
        )
        .await;
    browser.click(&submit("/ui/settings/totp/disable")).await;
    browser.wait_text("TOTP code is wrong").await;
    browser.assert_no_js_errors().await;
}

async fn an_owner_invites_someone_who_accepts_in_the_browser_and_manages_their_role(b: Backend) {
    let app = TestApp::spawn(b).await;
    let Some(browser) = Browser::start(&format!("users-{b:?}")).await else {
        return;
    };
    browser
        .sign_in(&app.base, OWNER_EMAIL, OWNER_PASSWORD)
        .await;
    browser.goto(&format!("{}/ui/users", app.base)).await;
    browser
        .type_into("input[name=email]", "newcomer@example.com")
        .await;
    browser
        .set_value(
            "form[action='/ui/users/invitations'] select[name=role]",
            "viewer",
        )
        .await;
    browser.click(&submit("/ui/users/invitations")).await;
    let link = browser.text("#invite-link").await;
    assert!(link.contains("/invite?token="), "{link}");
    browser.screenshot("invited").await;
    // The only owner cannot demote themself.
    let me = body(app.get("/me", &app.owner).await).await;
    let my_id = me["user"]["id"].as_str().expect("id").to_owned();
    browser.set_value(&format!("#role-{my_id}"), "viewer").await;
    browser
        .click(&submit(&format!("/ui/users/{my_id}/role")))
        .await;
    browser.wait_text("owner").await;
    browser.find("p.error").await;
    assert_eq!(
        body(app.get("/me", &app.owner).await).await["user"]["role"],
        "owner"
    );

    // The newcomer opens the link, chooses a password and is signed in as a viewer.
    browser.click("header form button").await;
    browser.find("input[name=password]").await;
    browser.goto(&link).await;
    browser
        .type_into("input[name=password]", "newcomer password")
        .await;
    browser.click("button[type=submit]").await;
    browser.wait_text("newcomer@example.com (viewer)").await;
    let page = browser.source().await;
    assert!(
        !page.contains("href=\"/ui/users\""),
        "viewers have no Users page"
    );
    browser.goto(&format!("{}/ui/users", app.base)).await;
    assert!(!browser.source().await.contains("Invite someone"));
    browser.goto(&format!("{}/", app.base)).await;
    browser.click("header form button").await;
    browser.find("input[name=password]").await;
    // The link works once.
    browser.goto(&link).await;
    browser
        .type_into("input[name=password]", "another password")
        .await;
    browser.click("button[type=submit]").await;
    browser.wait_text("unknown, expired or already used").await;

    // The owner makes them an operator, then removes them.
    browser
        .sign_in(&app.base, OWNER_EMAIL, OWNER_PASSWORD)
        .await;
    browser.goto(&format!("{}/ui/users", app.base)).await;
    let users = body(app.get("/users", &app.owner).await).await;
    let id = users
        .as_array()
        .expect("users")
        .iter()
        .find(|u| u["email"] == "newcomer@example.com")
        .and_then(|u| u["id"].as_str())
        .expect("the newcomer")
        .to_owned();
    browser.set_value(&format!("#role-{id}"), "operator").await;
    browser
        .click(&submit(&format!("/ui/users/{id}/role")))
        .await;
    browser
        .wait_text("newcomer@example.com is now operator.")
        .await;
    let users = body(app.get("/users", &app.owner).await).await;
    assert!(
        users
            .as_array()
            .expect("users")
            .iter()
            .any(|u| u["email"] == "newcomer@example.com" && u["role"] == "operator"),
        "{users}"
    );
    browser
        .click(&submit(&format!("/ui/users/{id}/remove")))
        .await;
    browser.wait_gone(&format!("#user-{id}")).await;
    assert_eq!(
        body(app.get("/users", &app.owner).await)
            .await
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    browser.assert_no_js_errors().await;
}

async fn an_admin_edits_tests_redelivers_and_deletes_a_webhook(b: Backend) {
    let app = TestApp::spawn(b).await;
    let Some(browser) = Browser::start(&format!("webhook-{b:?}")).await else {
        return;
    };
    let receiver = Receiver::start(&[]).await;
    let r = app
        .post("/webhooks", &app.owner, json!({"url": receiver.url}))
        .await;
    assert_eq!(r.status(), 201);
    let id = body(r).await["id"].as_str().expect("id").to_owned();
    browser
        .sign_in(&app.base, OWNER_EMAIL, OWNER_PASSWORD)
        .await;
    browser.goto(&format!("{}/ui/webhooks", app.base)).await;
    browser.click(&format!("a[href='/ui/webhooks/{id}']")).await;
    browser.wait_text("Nothing delivered yet.").await;

    // Edit: critical only, created alerts only, a tag filter.
    browser
        .set_value("select[name=min_severity]", "critical")
        .await;
    browser
        .click("input[name=events][value='alert.resolved']")
        .await;
    browser.type_into("input[name=tag]", "env:prod").await;
    browser.click(&submit(&format!("/ui/webhooks/{id}"))).await;
    browser.wait_text("Saved.").await;
    let w = body(app.get(&format!("/webhooks/{id}"), &app.owner).await).await;
    assert_eq!(w["min_severity"], "critical", "{w}");
    assert_eq!(w["events"], json!(["alert.created", "drift.ticket"]), "{w}");
    assert_eq!(w["agent_filter"]["tag"], "env:prod", "{w}");
    // A bad URL changes nothing.
    browser.set_value("input[name=url]", "ftp://nowhere").await;
    browser.click(&submit(&format!("/ui/webhooks/{id}"))).await;
    browser.find("p.error").await;
    let w = body(app.get(&format!("/webhooks/{id}"), &app.owner).await).await;
    assert_eq!(w["url"], json!(receiver.url));

    // A test delivery arrives signed and shows in the log; redelivery keeps its id.
    browser
        .goto(&format!("{}/ui/webhooks/{id}", app.base))
        .await;
    browser
        .click(&submit(&format!("/ui/webhooks/{id}/test")))
        .await;
    let got = receiver.wait_for(1, 20).await;
    let delivery = got[0].header("x-service-delivery");
    eventually(20, "the test delivery recorded as delivered", || async {
        browser
            .goto(&format!("{}/ui/webhooks/{id}", app.base))
            .await;
        browser.source().await.contains(">succeeded<").then_some(())
    })
    .await;
    browser.screenshot("delivery-log").await;
    browser.click("tr[id^='delivery-'] form button").await;
    browser.wait_text("Queued again").await;
    let got = receiver.wait_for(2, 20).await;
    assert_eq!(got[1].header("x-service-delivery"), delivery);

    browser
        .click(&submit(&format!("/ui/webhooks/{id}/delete")))
        .await;
    browser.wait_text("No webhook yet.").await;
    assert_eq!(
        body(app.get("/webhooks", &app.owner).await).await,
        json!([])
    );
    browser.assert_no_js_errors().await;
}

async fn an_operator_edits_a_rule_and_a_viewer_only_reads_it(b: Backend) {
    let app = TestApp::spawn(b).await;
    let Some(browser) = Browser::start(&format!("rule-{b:?}")).await else {
        return;
    };
    let r = app
        .post(
            "/alert-rules",
            &app.owner,
            json!({"name": "hot cpu", "metric": "cpu.percent", "operator": ">", "threshold": 90,
                "window": "5m", "severity": "warning", "group_by": ["agent_id"]}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let id = body(r).await["id"].as_str().expect("id").to_owned();
    app.invite_and_accept(&app.owner, "oncall@example.com", "operator")
        .await;
    browser
        .sign_in(&app.base, "oncall@example.com", "a fine password")
        .await;
    browser.goto(&format!("{}/ui/rules", app.base)).await;
    browser.click(&format!("a[href='/ui/rules/{id}']")).await;
    browser.find("input[name=threshold]").await;
    browser.set_value("input[name=threshold]", "80").await;
    browser.set_value("select[name=severity]", "critical").await;
    browser.set_value("input[name=window]", "10m").await;
    browser.click(&submit(&format!("/ui/rules/{id}"))).await;
    browser.wait_text("Saved.").await;
    let rule = body(app.get(&format!("/alert-rules/{id}"), &app.owner).await).await;
    assert_eq!(rule["threshold"], 80.0, "{rule}");
    assert_eq!(rule["severity"], "critical");
    assert_eq!(rule["window"], "10m");
    // A window the hub does not read is refused and changes nothing.
    browser.set_value("input[name=window]", "5 parsecs").await;
    browser.click(&submit(&format!("/ui/rules/{id}"))).await;
    browser.wait_text("window").await;
    browser.find("p.error").await;
    let rule = body(app.get(&format!("/alert-rules/{id}"), &app.owner).await).await;
    assert_eq!(rule["window"], "10m");
    browser.click("header form button").await;
    browser.find("input[name=password]").await;

    app.invite_and_accept(&app.owner, "watcher@example.com", "viewer")
        .await;
    browser
        .sign_in(&app.base, "watcher@example.com", "a fine password")
        .await;
    browser.goto(&format!("{}/ui/rules/{id}", app.base)).await;
    let page = browser.wait_text("hot cpu").await;
    assert!(page.contains("<fieldset disabled"), "read only: {page}");
    assert!(!page.contains(">Save</button>"));
    browser.assert_no_js_errors().await;
}

async fn an_agent_shows_its_inventory_and_processes_and_an_admin_governs_rotates_and_deletes_it(
    b: Backend,
) {
    let app = TestApp::spawn(b).await;
    let Some(browser) = Browser::start(&format!("agent-admin-{b:?}")).await else {
        return;
    };
    let host = crate::agents::register(&app).await;
    let mut batch = crate::agents::batch(json!([]));
    batch["inventory"] = json!({
        "collected_at": crate::agents::ts(time::OffsetDateTime::now_utc()),
        "os": {"name": "Debian", "version": "12", "kernel": "6.1.0"},
        "packages": [
            {"name": "openssl", "version": "3.0.15-1~deb12u1", "arch": "amd64", "source": "openssl"},
            {"name": "bash", "version": "5.2.15-2+b7", "arch": "amd64", "source": "bash"}
        ],
        "users": [{"name": "deploy", "uid": 1001, "shell": "/bin/bash"}],
        "listening": [{"proto": "tcp", "address": "0.0.0.0", "port": 22, "process": "sshd"}]
    });
    batch["processes"] = json!([
        {"pid": 1, "name": "systemd", "exe": "/usr/lib/systemd/systemd", "user": "root"},
        {"pid": 812, "name": "nginx", "exe": "/usr/sbin/nginx", "user": "www-data"},
        {"pid": 900, "ppid": 1, "exe": "/usr/bin/redis-check-rdb", "cmdline": "redis-server 127.0.0.1:6379",
         "user": "redis", "paths": ["/usr/bin/redis-server"]}
    ]);
    let r = crate::agents::send(&app, &host, batch.to_string().as_bytes(), None, true).await;
    assert_eq!(r.status(), 202, "{}", body(r).await);

    browser
        .sign_in(&app.base, OWNER_EMAIL, OWNER_PASSWORD)
        .await;
    browser
        .goto(&format!("{}/ui/agents/{}", app.base, host.id))
        .await;
    browser
        .click(&format!(
            "a[href='/ui/agents/{}/inventory/systemd']",
            host.id
        ))
        .await;
    browser.wait_text("Nothing reported").await;
    browser
        .click(&format!(
            "a[href='/ui/agents/{}/inventory/packages']",
            host.id
        ))
        .await;
    let page = browser.wait_text("3.0.15-1~deb12u1").await;
    assert!(page.contains("bash"));
    browser.type_into("input[name=q]", "openssl").await;
    browser.click("form.filters button").await;
    let page = browser.wait_text("1 of 2 rows match").await;
    assert!(!page.contains("5.2.15-2+b7"), "filtered out");
    browser.screenshot("packages").await;
    browser
        .click(&format!(
            "a[href='/ui/agents/{}/inventory/listening']",
            host.id
        ))
        .await;
    browser.wait_text("sshd").await;
    browser
        .click(&format!("a[href='/ui/agents/{}/processes']", host.id))
        .await;
    let page = browser.wait_text("/usr/sbin/nginx").await;
    // A program is shown by the name it was started with, its binary beside it (CONTRACT 33).
    let started = page.find("/usr/bin/redis-server").expect("started as");
    let binary = page.find("/usr/bin/redis-check-rdb").expect("its binary");
    assert!(started < binary, "the started-as name comes first: {page}");
    browser.screenshot("processes").await;

    // Governance.
    browser
        .goto(&format!("{}/ui/agents/{}/settings", app.base, host.id))
        .await;
    browser
        .set_value("input[name=ingest_interval_secs]", "30")
        .await;
    browser
        .set_value("input[name=tags]", "role:web, env:prod")
        .await;
    browser
        .click("input[name=actions][value='restart_app']")
        .await;
    browser
        .click(&submit(&format!("/ui/agents/{}/governance", host.id)))
        .await;
    browser.wait_text("Saved;").await;
    let g = body(
        app.get(&format!("/agents/{}/governance", host.id), &app.owner)
            .await,
    )
    .await;
    assert_eq!(g["ingest_interval_secs"], 30, "{g}");
    assert_eq!(g["tags"], json!(["role:web", "env:prod"]), "{g}");
    // Every kind is allowed by default; the click took restart_app away.
    assert!(
        g["allowed_actions"]
            .as_array()
            .is_some_and(|a| !a.contains(&json!("restart_app")) && a.contains(&json!("emergency"))),
        "{g}"
    );
    browser
        .set_value("input[name=ingest_interval_secs]", "5")
        .await;
    browser
        .click(&submit(&format!("/ui/agents/{}/governance", host.id)))
        .await;
    browser.wait_text("between 10 and 86400").await;

    // The agent's client certificate: listed with its fingerprint, revoked with a reason.
    let r = app
        .post(
            "/agents/issue-client-cert",
            &Auth::Bearer(host.token.clone()),
            json!({}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let cert = body(r).await;
    let serial = cert["serial"].as_str().expect("serial").to_owned();
    browser
        .goto(&format!("{}/ui/agents/{}/settings", app.base, host.id))
        .await;
    let page = browser
        .wait_text(cert["fingerprint_sha256"].as_str().expect("fp"))
        .await;
    assert!(page.contains("✓ active"), "{page}");
    browser
        .type_into(&format!("#reason-{serial}"), "decommissioned disk")
        .await;
    browser
        .click(&submit(&format!(
            "/ui/agents/{}/client-certs/{serial}/revoke",
            host.id
        )))
        .await;
    browser.wait_text("revoked: decommissioned disk").await;
    let certs = body(
        app.get(&format!("/agents/{}/client-certs", host.id), &app.owner)
            .await,
    )
    .await;
    assert_eq!(certs[0]["revoke_reason"], "decommissioned disk", "{certs}");

    // Token rotation: the new token is shown once and the old one stops working.
    browser
        .click(&submit(&format!("/ui/agents/{}/rotate-token", host.id)))
        .await;
    let token = browser.text("#once-secret").await;
    assert!(token.starts_with("tha_"), "{token}");
    let old = crate::agents::send(
        &app,
        &host,
        crate::agents::batch(json!([])).to_string().as_bytes(),
        None,
        true,
    )
    .await;
    assert_eq!(old.status(), 401);
    browser
        .click(&submit(&format!(
            "/ui/agents/{}/rotate-signing-key",
            host.id
        )))
        .await;
    browser.wait_text("not pinned").await;
    browser
        .click(&submit(&format!("/ui/agents/{}/delete", host.id)))
        .await;
    browser.find("h1").await;
    assert!(browser.current_url().await.ends_with("/ui/agents"));
    assert_eq!(
        app.get(&format!("/agents/{}", host.id), &app.owner)
            .await
            .status(),
        404
    );
    browser.assert_no_js_errors().await;
}

async fn ai_teams_sort_by_cost_and_p95_and_a_team_page_charts_its_days(b: Backend) {
    let app = TestApp::spawn(b).await;
    let Some(browser) = Browser::start(&format!("ai-{b:?}")).await else {
        return;
    };
    let (ingest, _) = app.token(&app.owner, "ai_ingest").await;
    let now = time::OffsetDateTime::now_utc();
    let at = |days: i64| crate::agents::ts(now - time::Duration::days(days));
    let call = |span: &str, model: &str, tokens: u64, latency: u64| {
        json!({"span_id": span, "model": model, "prompt_tokens": tokens, "completion_tokens": tokens / 4,
            "latency_ms": latency, "prompt_sha256": "0".repeat(64), "refused": false})
    };
    // "search" costs more; "support" is slower.
    let traces: Vec<Value> = vec![
        json!({"trace_id": "t1", "name": "answer", "team": "search", "started_at": at(2), "ended_at": at(2),
            "calls": [call("s1", "gpt-4o", 400_000, 300)]}),
        json!({"trace_id": "t2", "name": "answer", "team": "search", "started_at": at(1), "ended_at": at(1),
            "calls": [call("s2", "gpt-4o", 200_000, 400)]}),
        json!({"trace_id": "t3", "name": "answer", "team": "support", "started_at": at(1), "ended_at": at(1),
            "calls": [call("s3", "gpt-4o-mini", 1_000, 9_000)]}),
    ];
    let r = app
        .post(
            "/ai/traces",
            &Auth::Bearer(ingest),
            json!({"traces": traces}),
        )
        .await;
    assert_eq!(r.status(), 202, "{}", body(r).await);

    browser
        .sign_in(&app.base, OWNER_EMAIL, OWNER_PASSWORD)
        .await;
    browser.goto(&format!("{}/ui/ai", app.base)).await;
    let page = browser.wait_text("support").await;
    assert!(
        page.find(">search<") < page.find(">support<"),
        "by cost, search first"
    );
    browser.click("a[href$='sort=p95']").await;
    let page = browser.wait_text("p95 latency ▼").await;
    assert!(
        page.find(">support<") < page.find(">search<"),
        "by p95, support first"
    );
    browser.screenshot("teams-by-p95").await;
    browser.click("a[href^='/ui/ai/teams/search']").await;
    let page = browser.wait_text("Team search").await;
    assert!(page.contains("svg class=\"chart\""), "{page}");
    assert!(page.contains("400 ms"), "the day with p95 400 ms: {page}");
    browser.screenshot("team-search").await;

    // A price for an unpriced model, then the team's cost is known.
    browser.goto(&format!("{}/ui/ai/prices", app.base)).await;
    browser.type_into("input[name=model]", "in-house-llm").await;
    browser
        .set_value("input[name=effective_from]", "2026-01-01")
        .await;
    browser.type_into("input[name=input]", "1500").await;
    browser.type_into("input[name=output]", "abc").await;
    browser.click(&submit("/ui/ai/prices")).await;
    browser.wait_text("whole number").await;
    // The form comes back with what was typed; only the wrong field needs fixing.
    browser.set_value("input[name=output]", "6000").await;
    browser.click(&submit("/ui/ai/prices")).await;
    browser.wait_text("Saved;").await;
    let prices = body(app.get("/ai/prices", &app.owner).await).await;
    assert!(
        prices
            .as_array()
            .expect("prices")
            .iter()
            .any(|p| p["model"] == "in-house-llm"
                && p["output"] == 6000
                && p["source"] == "override"),
        "{prices}"
    );
    // The month's CSV is the API's own export, fetched with the session.
    browser.goto(&format!("{}/ui/ai", app.base)).await;
    let page = browser.source().await;
    assert!(page.contains("action=\"/api/v1/ai/teams/export.csv\""));
    browser.assert_no_js_errors().await;
}

async fn an_operator_resolves_an_integrity_anomaly_the_overview_counted(b: Backend) {
    let app = TestApp::spawn(b).await;
    let Some(browser) = Browser::start(&format!("anomalies-{b:?}")).await else {
        return;
    };
    let host = crate::agents::register(&app).await;
    // A batch signed by another key than the pinned one.
    let body_ = crate::agents::batch(json!([])).to_string();
    let r = app
        .req(
            reqwest::Method::POST,
            "/ingest",
            &Auth::Bearer(host.token.clone()),
        )
        .header("content-type", "application/json")
        .header(
            "x-service-signature",
            trusthub_core::agent::sign_header(&crate::agents::key(), body_.as_bytes()),
        )
        .body(body_)
        .send()
        .await
        .expect("ingest");
    assert_eq!(r.status(), 401);
    app.invite_and_accept(&app.owner, "oncall@example.com", "operator")
        .await;
    browser
        .sign_in(&app.base, "oncall@example.com", "a fine password")
        .await;
    let page = browser.wait_text("Open integrity anomalies").await;
    assert!(
        page.contains("<a href=\"/ui/anomalies\">1</a>"),
        "the overview counts it: {page}"
    );
    browser.click("div.big a[href='/ui/anomalies']").await;
    browser.wait_text("bad_ingest_signature").await;
    browser.screenshot("anomalies").await;
    browser.click("tr[id^='anomaly-'] form button").await;
    browser.wait_text("No open anomaly.").await;
    assert_eq!(
        body(app.get("/integrity-anomalies", &app.owner).await).await,
        json!([])
    );
    browser
        .goto(&format!("{}/ui/anomalies?all=1", app.base))
        .await;
    browser.wait_text("resolved").await;
    browser.assert_no_js_errors().await;
}

async fn vulnerability_data_sources_show_what_is_loaded_and_how_fresh(b: Backend) {
    let app = TestApp::spawn(b).await;
    let Some(browser) = Browser::start(&format!("cve-sources-{b:?}")).await else {
        return;
    };
    app.invite_and_accept(&app.owner, "reader@example.com", "viewer")
        .await;
    browser
        .sign_in(&app.base, "reader@example.com", "a fine password")
        .await;
    browser.goto(&format!("{}/ui/cve-sources", app.base)).await;
    browser.wait_text("No advisory data is loaded yet").await;
    use crate::cve::{bytes, python_zip, record, upload};
    let zip = python_zip(
        &[
            (
                "npm/GHSA-1.json",
                bytes(&record(
                    "GHSA-1",
                    "2024-01-01T00:00:00Z",
                    "npm",
                    "a",
                    json!({}),
                )),
            ),
            (
                "npm/GHSA-2.json",
                bytes(&record(
                    "GHSA-2",
                    "2024-02-01T00:00:00Z",
                    "npm",
                    "b",
                    json!({}),
                )),
            ),
            (
                "Debian/DSA-1.json",
                bytes(&record(
                    "DSA-1",
                    "2024-03-01T00:00:00Z",
                    "Debian:12",
                    "openssl",
                    json!({}),
                )),
            ),
        ],
        None,
    );
    assert_eq!(
        upload(&app, &app.owner, zip, "application/zip")
            .await
            .status(),
        200
    );
    browser.goto(&format!("{}/ui/cve-sources", app.base)).await;
    let page = browser.wait_text("Debian:12").await;
    assert!(
        page.contains("<th scope=\"row\">npm</th><td class=\"num\">2</td>"),
        "{page}"
    );
    assert!(page.contains("datetime=\"2024-03-01T00:00:00Z\""), "{page}");
    assert!(page.contains("No daily pull"), "{page}");
    assert!(page.contains("Coverage per host"), "{page}");
    browser.screenshot("cve-sources").await;
    browser.assert_no_js_errors().await;
}

async fn an_operator_acknowledges_a_vulnerability_and_reads_its_advisory(b: Backend) {
    use crate::cve::{bytes, inventory, python_zip, upload};
    let app = TestApp::spawn(b).await;
    let Some(browser) = Browser::start(&format!("vulns-{b:?}")).await else {
        return;
    };
    let host = crate::agents::register(&app).await;
    let batch = serde_json::to_vec(&inventory("4.17.20")).expect("json");
    assert_eq!(
        crate::agents::send(&app, &host, &batch, None, true)
            .await
            .status(),
        202
    );
    let dsa = json!({"id": "DSA-5532-1", "modified": "2024-01-01T00:00:00Z", "aliases": ["CVE-2023-5363"],
        "summary": "openssl: incorrect cipher key", "details": "Tony Battersby found that...",
        "references": [{"type": "ADVISORY", "url": "https://www.debian.org/security/2023/dsa-5532"}],
        "severity": [{"type": "CVSS_V3", "score": "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H"}],
        "affected": [{"package": {"ecosystem": "Debian:12", "name": "openssl"},
            "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": "3.0.11-1~deb12u3"}]}]}]});
    let lodash = json!({"id": "GHSA-35jh-r3h4-6jhm", "modified": "2024-01-01T00:00:00Z",
        "summary": "Command injection in lodash",
        "affected": [{"package": {"ecosystem": "npm", "name": "lodash"},
            "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "4.17.21"}]}]}],
        "database_specific": {"severity": "HIGH"}});
    let zip = python_zip(&[("a.json", bytes(&dsa)), ("b.json", bytes(&lodash))], None);
    assert_eq!(
        upload(&app, &app.owner, zip, "application/zip")
            .await
            .status(),
        200
    );
    trusthub_hub::workers::cve_scan::scan_due(&app.state, time::OffsetDateTime::now_utc())
        .await
        .expect("scan");
    app.invite_and_accept(&app.owner, "oncall@example.com", "operator")
        .await;
    browser
        .sign_in(&app.base, "oncall@example.com", "a fine password")
        .await;
    browser
        .goto(&format!("{}/ui/vulnerabilities", app.base))
        .await;
    let page = browser.wait_text("GHSA-35jh-r3h4-6jhm").await;
    assert!(
        page.contains("DSA-5532-1") && page.contains("CRITICAL"),
        "{page}"
    );
    browser.screenshot("vulnerabilities").await;
    let findings = body(app.get("/inventory/cves?ecosystem=npm", &app.owner).await).await;
    let id = findings["items"][0]["id"].as_str().expect("id").to_owned();
    let form = format!("/ui/vulnerabilities/{id}/acknowledge");
    browser
        .type_into(
            &format!("form[action='{form}'] input[name=reason]"),
            "only used at build time",
        )
        .await;
    browser.click(&submit(&form)).await;
    browser.wait_text("never auto-patched").await;
    let after = body(app.get("/inventory/cves?ecosystem=npm", &app.owner).await).await;
    assert_eq!(after["items"][0]["status"], "acknowledged");
    assert_eq!(after["items"][0]["ack_reason"], "only used at build time");
    // The advisory page: details, references, the hosts.
    browser.click("a[href='/ui/cves/DSA-5532-1']").await;
    let page = browser.wait_text("Tony Battersby").await;
    assert!(
        page.contains("https://www.debian.org/security/2023/dsa-5532"),
        "{page}"
    );
    assert!(
        page.contains("libssl3") && page.contains("3.0.11-1~deb12u3"),
        "{page}"
    );
    browser.assert_no_js_errors().await;
}

async fn an_operator_suppresses_a_finding_from_its_row_and_reads_the_host_coverage(b: Backend) {
    use crate::cve::{bytes, inventory, python_zip, upload};
    let app = TestApp::spawn(b).await;
    let Some(browser) = Browser::start(&format!("suppress-{b:?}")).await else {
        return;
    };
    let host = crate::agents::register(&app).await;
    let batch = serde_json::to_vec(&inventory("4.17.20")).expect("json");
    assert_eq!(
        crate::agents::send(&app, &host, &batch, None, true)
            .await
            .status(),
        202
    );
    let lodash = json!({"id": "GHSA-35jh-r3h4-6jhm", "modified": "2024-01-01T00:00:00Z",
        "summary": "Command injection in lodash",
        "affected": [{"package": {"ecosystem": "npm", "name": "lodash"},
            "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "4.17.21"}]}]}],
        "database_specific": {"severity": "HIGH"}});
    let zip = python_zip(&[("b.json", bytes(&lodash))], None);
    assert_eq!(
        upload(&app, &app.owner, zip, "application/zip")
            .await
            .status(),
        200
    );
    trusthub_hub::workers::cve_scan::scan_due(&app.state, time::OffsetDateTime::now_utc())
        .await
        .expect("scan");
    app.invite_and_accept(&app.owner, "oncall@example.com", "operator")
        .await;
    browser
        .sign_in(&app.base, "oncall@example.com", "a fine password")
        .await;
    browser
        .goto(&format!("{}/ui/vulnerabilities", app.base))
        .await;
    browser.wait_text("GHSA-35jh-r3h4-6jhm").await;
    let findings = body(app.get("/inventory/cves?ecosystem=npm", &app.owner).await).await;
    let id = findings["items"][0]["id"].as_str().expect("id").to_owned();
    let row = format!("#finding-{id}");
    browser.click(&format!("{row} summary")).await;
    let form = format!("{row} form[action='/ui/cve-suppressions']");
    // The range field starts with the installed version alone (node-semver's exact range).
    browser
        .type_into(
            &format!("{form} input[name=reason]"),
            "template() never sees user input",
        )
        .await;
    browser.click(&format!("{form} button[type=submit]")).await;
    let page = browser.wait_text("its findings show as suppressed").await;
    assert!(
        page.contains("template() never sees user input") && page.contains("4.17.20"),
        "{page}"
    );
    browser.screenshot("cve-suppressions").await;
    let after = body(app.get("/inventory/cves?ecosystem=npm", &app.owner).await).await;
    assert_eq!(after["items"][0]["status"], "suppressed");
    let sups = body(app.get("/cve-suppressions", &app.owner).await).await;
    assert_eq!(sups[0]["version_range"], "4.17.20");
    assert_eq!(sups[0]["vuln_id"], "GHSA-35jh-r3h4-6jhm");
    // A refused form is kept, with the reason named.
    browser
        .type_into("form.stack input[name=package_name]", "requests")
        .await;
    browser
        .type_into("form.stack input[name=ecosystem]", "PyPI")
        .await;
    browser
        .type_into("form.stack input[name=version_range]", "1.0")
        .await;
    browser
        .type_into("form.stack input[name=reason]", "vendored copy")
        .await;
    browser.click("form.stack button[type=submit]").await;
    let page = browser.wait_text("not a PEP 440 range").await;
    assert!(page.contains("value=\"requests\""), "{page}");
    // The host's tab: coverage (no Debian or Packagist data loaded), the suppressed count, the SBOM.
    browser
        .goto(&format!(
            "{}/ui/agents/{}/vulnerabilities",
            app.base, host.id
        ))
        .await;
    let page = browser.wait_text("What the last scan checked").await;
    assert!(
        page.contains("Packagist: no advisory data loaded (1 package not checked)"),
        "{page}"
    );
    assert!(
        page.contains("Debian:12: no advisory data loaded"),
        "{page}"
    );
    assert!(page.contains("1 suppressed"), "{page}");
    assert!(page.contains("sbom.cdx.json"), "{page}");
    // Each source with its format, packages and state: the package database and the
    // Packagist project are not covered, with why.
    let sources = browser.text("table.sources").await;
    assert!(sources.contains("/var/lib/dpkg/status"), "{sources}");
    assert!(sources.contains("/srv/php/"), "{sources}");
    assert!(sources.contains("not covered"), "{sources}");
    assert!(
        sources.contains("no advisory data loaded for Packagist"),
        "{sources}"
    );
    browser.screenshot("host-vulnerabilities").await;
    // Delete the suppression: the finding is open again.
    browser
        .goto(&format!("{}/ui/cve-suppressions", app.base))
        .await;
    let sid = sups[0]["id"].as_str().expect("id");
    browser
        .click(&submit(&format!("/ui/cve-suppressions/{sid}/delete")))
        .await;
    browser.wait_text("its findings are open again").await;
    let after = body(app.get("/inventory/cves?ecosystem=npm", &app.owner).await).await;
    assert_eq!(after["items"][0]["status"], "open");
    browser.assert_no_js_errors().await;
}

async fn a_viewer_reads_the_maintainer_changes_of_the_hosts_npm_dependencies(b: Backend) {
    use crate::supply_chain::{Registry, packument, start_registry};
    let reg = std::sync::Arc::new(std::sync::Mutex::new(Registry::default()));
    reg.lock().expect("registry").packuments.insert(
        "lodash".into(),
        packument("lodash", &["jdalton"], "4.17.21", "jdalton", None),
    );
    let url = start_registry(reg.clone()).await;
    let app = TestApp::spawn_with(b, |s| {
        s.sections
            .edit(|v: &mut trusthub_hub::sections::Vulns| v.npm_registry = url.clone())
    })
    .await;
    let Some(browser) = Browser::start(&format!("supply-{b:?}")).await else {
        return;
    };
    let host = crate::agents::register(&app).await;
    let batch = serde_json::to_vec(&crate::cve::inventory("4.17.20")).expect("json");
    assert_eq!(
        crate::agents::send(&app, &host, &batch, None, true)
            .await
            .status(),
        202
    );
    let t0 = time::OffsetDateTime::now_utc() - time::Duration::days(2);
    let track = |at| trusthub_hub::workers::supply_chain::track(&app.state, at);
    track(t0).await.expect("baseline");
    reg.lock().expect("registry").packuments.insert(
        "lodash".into(),
        packument(
            "lodash",
            &["jdalton"],
            "4.17.22",
            "mallory",
            Some("compromised, use 4.17.21"),
        ),
    );
    let report = track(t0 + time::Duration::days(1) + time::Duration::minutes(1))
        .await
        .expect("pass");
    assert_eq!(report.changed, ["lodash"]);
    app.invite_and_accept(&app.owner, "reader@example.com", "viewer")
        .await;
    browser
        .sign_in(&app.base, "reader@example.com", "a fine password")
        .await;
    browser.goto(&format!("{}/ui/supply-chain", app.base)).await;
    let page = browser.wait_text("new: mallory").await;
    assert!(
        page.contains("lodash") && page.contains("deprecated: compromised, use 4.17.21"),
        "{page}"
    );
    assert!(page.contains(&format!("/ui/agents/{}", host.id)), "{page}");
    browser.screenshot("supply-chain").await;
    browser.assert_no_js_errors().await;
}

async fn an_operator_sets_an_slo_reads_its_budget_and_plans_maintenance(b: Backend) {
    use time::Duration;
    let app = TestApp::spawn(b).await;
    let Some(browser) = Browser::start(&format!("slo-{b:?}")).await else {
        return;
    };
    let (_, id) = crate::slo::nginx_app(&app, "checkout").await;
    let now = hub_now();
    let outage = now - Duration::days(2);
    crate::slo::spans(
        &app,
        &id,
        &[
            (now - Duration::days(30), outage, false),
            (outage, outage + Duration::minutes(10), true),
            (outage + Duration::minutes(10), now, false),
        ],
    )
    .await;
    // Tracked since the history begins (the SLO's days count from then on).
    app.execute(&format!(
        "UPDATE apps SET created_at = '{}' WHERE name = 'checkout'",
        (now - Duration::days(30))
            .format(&time::format_description::well_known::Rfc3339)
            .expect("rfc3339")
    ))
    .await;
    app.invite_and_accept(&app.owner, "oncall@example.com", "operator")
        .await;
    browser
        .sign_in(&app.base, "oncall@example.com", "a fine password")
        .await;
    let page_url = format!("{}/ui/apps/{id}/slo", app.base);
    browser.goto(&page_url).await;
    browser.wait_text("No SLO for this app yet").await;
    // The form starts with the defaults (99.9 % over 30 days).
    let form = format!("/ui/apps/{id}/slo");
    browser.click(&submit(&form)).await;
    let page = browser.wait_text("Saved.").await;
    assert!(page.contains("burning"), "{page}");
    assert!(page.contains("33.2 of 43.2 min"), "{page}");
    assert!(page.contains("<svg class=\"chart\""), "{page}");
    assert!(page.contains(&outage.date().to_string()), "{page}");
    browser.screenshot("slo").await;
    let api = body(app.get(&format!("/apps/{id}/slo"), &app.owner).await).await;
    assert_eq!(api["target"], 0.999);
    // A maintenance window over the outage: the budget is whole again.
    let fmt = |t: time::OffsetDateTime| format!("{}T{:02}:{:02}", t.date(), t.hour(), t.minute());
    let wform = format!("/ui/apps/{id}/maintenance-windows");
    browser
        .set_value(
            &format!("form[action='{wform}'] input[name=starts_at]"),
            &fmt(outage - Duration::minutes(5)),
        )
        .await;
    browser
        .set_value(
            &format!("form[action='{wform}'] input[name=ends_at]"),
            &fmt(outage + Duration::minutes(20)),
        )
        .await;
    browser
        .type_into(
            &format!("form[action='{wform}'] input[name=reason]"),
            "kernel upgrade",
        )
        .await;
    browser.click(&submit(&wform)).await;
    let page = browser.wait_text("Planned.").await;
    assert!(
        page.contains("43.2 of 43.2 min") && page.contains("kernel upgrade"),
        "{page}"
    );
    // The apps page lists the SLO; the overview counts it.
    browser.goto(&format!("{}/ui/apps", app.base)).await;
    let page = browser.wait_text("least error budget left first").await;
    assert!(page.contains(&format!("/ui/apps/{id}/slo")), "{page}");
    browser.goto(&format!("{}/", app.base)).await;
    browser.wait_text("SLOs burning or exhausted").await;
    browser.assert_no_js_errors().await;
}
