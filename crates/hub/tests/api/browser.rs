//! The dashboard in a real browser: Debian's Chromium, driven over WebDriver by its
//! `chromedriver` (a small client of the W3C protocol over reqwest). Screenshots of every test
//! are kept under `target/browser/` so a failing run can be looked at; JavaScript errors in the
//! browser's log fail the test. `.ci/run` installs `chromium` and `chromium-driver`; without
//! them (outside CI) the browser tests say so and pass.

use crate::harness::*;
use crate::webdriver::Browser;
use serde_json::{Value, json};

crate::dual!(
    a_user_signs_in_and_sees_the_fleet_in_a_browser,
    an_operator_resolves_an_alert_and_a_viewer_sees_no_write_controls,
    an_admin_creates_a_webhook_and_sees_its_secret_once,
    an_app_is_tracked_from_the_discovery_list_changed_and_untracked,
    an_operator_adds_a_check_the_hub_runs_and_sees_why_it_is_down,
    an_admin_adds_a_slack_channel_tests_it_and_follows_an_alert_to_its_page,
    a_user_with_totp_signs_in_with_a_code_or_a_recovery_code,
    an_evidence_pack_is_created_listed_and_downloaded,
    an_admin_makes_an_install_command_that_enrols_a_host,
    an_operator_creates_a_rule_on_a_metric_the_fleet_sends_and_deletes_it,
    an_admin_makes_a_status_page_and_the_public_reads_it_on_a_phone_without_scripts,
);

async fn a_user_signs_in_and_sees_the_fleet_in_a_browser(b: Backend) {
    let app = TestApp::spawn(b).await;
    let Some(browser) = Browser::start(&format!("sign-in-{b:?}")).await else {
        return;
    };
    let host = crate::agents::register(&app).await;
    let hostname = "web-1";
    // Ten minutes of CPU, memory and network samples, one per minute, as the agent sends them.
    let now = time::OffsetDateTime::now_utc();
    let samples: Vec<Value> = (0..10)
        .flat_map(|m| {
            let at = crate::agents::ts(now - time::Duration::minutes(m));
            [
                json!({"name": "cpu.percent", "ts": at, "value": 20.0 + m as f64 * 5.0}),
                json!({"name": "mem.used_percent", "ts": at, "value": 41.5}),
                json!({"name": "net.rx_bytes_per_sec", "ts": at, "value": 1500.0, "labels": {"interface": "eth0"}}),
            ]
        })
        .collect();
    let r = crate::agents::send(
        &app,
        &host,
        crate::agents::batch(json!(samples)).to_string().as_bytes(),
        None,
        true,
    )
    .await;
    assert_eq!(r.status(), 202);
    browser.goto(&format!("{}/", app.base)).await;
    assert!(
        browser.current_url().await.contains("/login"),
        "sent to sign in"
    );
    browser.screenshot("login").await;
    browser.type_into("input[name=email]", OWNER_EMAIL).await;
    browser
        .type_into("input[name=password]", OWNER_PASSWORD)
        .await;
    browser.click("button[type=submit]").await;
    browser.find("#live").await;
    let page = browser.source().await;
    assert!(page.contains("Overview"), "{page}");
    assert!(page.contains(hostname), "the agent is listed: {page}");
    assert!(
        page.contains("<svg class=\"spark\"") && page.contains("<polyline points=\""),
        "its CPU sparkline is drawn: {page}"
    );
    browser.screenshot("overview").await;
    browser.assert_no_js_errors().await;
    // The menu is grouped (CONTRACT 33): a group opens on a click, one at a time.
    browser.click("details.menu:nth-of-type(1) > summary").await;
    browser
        .find("details.menu[open] a[href='/ui/agents']")
        .await;
    browser.screenshot("menu-monitor").await;
    browser.click("details.menu:nth-of-type(2) > summary").await;
    browser
        .find("details.menu[open] a[href='/ui/vulnerabilities']")
        .await;
    let page = browser.source().await;
    assert_eq!(
        page.matches("<details class=\"menu\" open").count(),
        1,
        "one group open"
    );
    browser.screenshot("menu-security").await;
    browser.click("a[href='/ui/agents']").await;
    browser.find("table").await;
    browser.wait_text(hostname).await;
    browser.screenshot("agents").await;
    browser.assert_no_js_errors().await;
    // The agent's page draws its charts from those samples, for each range.
    browser
        .click(&format!("a[href='/ui/agents/{}']", host.id))
        .await;
    browser.find("svg.chart").await;
    let page = browser.source().await;
    assert!(page.contains("CPU %, last 1h"), "{page}");
    let drawn = page.matches("<polyline class=\"line").count();
    assert!(drawn >= 3, "CPU, memory and network lines drawn: {page}");
    assert!(page.contains("eth0 in"), "{page}");
    // With script, the same data is an interactive chart (uPlot): a time axis…
    browser.find(".chart-card .uplot").await;
    // CPU, memory and network have data; the disk chart, without any, stays the server's
    // drawing that says so.
    assert_eq!(
        browser.eval("return window.trusthubCharts.length").await,
        json!(3)
    );
    assert!(page.contains("no data in this range"), "{page}");
    // (uPlot draws its tick labels on the canvas; the labels it drew are kept on the axis.)
    let x_axis = browser
        .eval("var u = window.trusthubCharts[0]; return [u.scales.x.time, u.axes[0]._values]")
        .await;
    let ticks: Vec<&str> = x_axis[1]
        .as_array()
        .map(|v| v.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert!(
        x_axis[0] == json!(true) && ticks.iter().filter(|t| t.contains(':')).count() >= 2,
        "times on the x axis: {x_axis}"
    );
    // …the values at the pointer, in the legend (the samples are the last 10 minutes of the
    // hour: the right sixth of the chart)…
    let width = browser
        .eval("return document.querySelector('.chart-card .u-over').getBoundingClientRect().width")
        .await
        .as_f64()
        .expect("width");
    let half = (width / 2.0) as i64;
    browser
        .pointer(".chart-card .u-over", (half * 85 / 100, 0), None)
        .await;
    let shown = browser
        .text(".chart-card .u-legend .u-series:nth-child(2) .u-value")
        .await;
    assert!(
        shown.ends_with(" %") && shown.trim_end_matches(" %").parse::<f64>().is_ok(),
        "the CPU at the pointer: {shown:?}"
    );
    browser.screenshot("agent-1h-hover").await;
    // …and a drag across zooms in on that stretch of time.
    let before = browser
        .eval("var s = window.trusthubCharts[0].scales.x; return [s.min, s.max]")
        .await;
    browser
        .pointer(
            ".chart-card .u-over",
            (-half / 2, 0),
            Some((half * 9 / 10, 0)),
        )
        .await;
    let after = browser
        .eval("var s = window.trusthubCharts[0].scales.x; return [s.min, s.max]")
        .await;
    let span = |v: &Value| v[1].as_f64().unwrap_or(0.0) - v[0].as_f64().unwrap_or(0.0);
    assert!(
        span(&after) > 0.0 && span(&after) < span(&before) * 0.8,
        "zoomed in: {before} -> {after}"
    );
    browser.screenshot("agent-1h").await;
    browser.click("nav.ranges a[href$='range=7d']").await;
    browser
        .find("nav.ranges a[aria-current][href$='range=7d']")
        .await;
    browser.wait_text("CPU %, last 7d").await;
    browser.screenshot("agent-7d").await;
    browser.assert_no_js_errors().await;
    // Signing out ends the session: pages send to the sign-in form again.
    browser.click("header form button").await;
    browser.find("input[name=password]").await;
    browser.goto(&format!("{}/ui/agents", app.base)).await;
    assert!(
        browser
            .current_url()
            .await
            .contains("/login?next=/ui/agents")
    );
}

async fn an_operator_resolves_an_alert_and_a_viewer_sees_no_write_controls(b: Backend) {
    let app = TestApp::spawn(b).await;
    let Some(browser) = Browser::start(&format!("alerts-{b:?}")).await else {
        return;
    };
    let host = crate::agents::register(&app).await;
    let at = crate::agents::ts(time::OffsetDateTime::now_utc() - time::Duration::seconds(30));
    let r = crate::agents::send(
        &app,
        &host,
        crate::agents::batch(json!([{"name": "cpu.percent", "ts": at, "value": 97.0}]))
            .to_string()
            .as_bytes(),
        None,
        true,
    )
    .await;
    assert_eq!(r.status(), 202);
    let r = app
        .post(
            "/alert-rules",
            &app.owner,
            json!({"name": "hot cpu", "metric": "cpu.percent", "operator": ">", "threshold": 90,
                "window": "5m", "severity": "critical", "group_by": ["agent_id"]}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let rep = trusthub_hub::workers::evaluate_rules(&app.state, hub_now())
        .await
        .expect("eval");
    assert_eq!(rep.raised, 1);

    // The overview counts it.
    app.invite_and_accept(&app.owner, "watcher@example.com", "viewer")
        .await;
    browser
        .sign_in(&app.base, "watcher@example.com", "a fine password")
        .await;
    let overview = browser.source().await;
    assert!(overview.contains("1 critical"), "{overview}");
    // A viewer sees the alert and no way to change it.
    browser.goto(&format!("{}/ui/alerts", app.base)).await;
    browser.find("table").await;
    let page = browser.source().await;
    assert!(page.contains("hot cpu"), "{page}");
    assert!(
        !page.contains("Resolve</button>"),
        "a viewer has no resolve control: {page}"
    );
    browser.screenshot("viewer-alerts").await;
    browser.click("header form button").await;
    browser.find("input[name=password]").await;

    // An operator resolves it from the list; it leaves the open alerts.
    let (operator, _) = app
        .invite_and_accept(&app.owner, "oncall@example.com", "operator")
        .await;
    drop(operator);
    browser
        .sign_in(&app.base, "oncall@example.com", "a fine password")
        .await;
    browser
        .goto(&format!("{}/ui/alerts?severity=critical", app.base))
        .await;
    browser.find("td form button").await;
    browser.screenshot("operator-alerts").await;
    browser.click("td form button").await;
    browser.wait_text("No alert matches.").await;
    let open = body(app.get("/alerts?is_resolved=false", &app.owner).await).await;
    assert_eq!(open.as_array().map(Vec::len), Some(0), "{open}");
    let all = body(app.get("/alerts", &app.owner).await).await;
    assert!(
        all[0]["resolved_by"]
            .as_str()
            .is_some_and(|b| b.starts_with("user:")),
        "{all}"
    );
    browser
        .goto(&format!("{}/ui/alerts?state=resolved", app.base))
        .await;
    browser.wait_text("hot cpu").await;
    browser.assert_no_js_errors().await;
}

async fn an_admin_creates_a_webhook_and_sees_its_secret_once(b: Backend) {
    let app = TestApp::spawn(b).await;
    let Some(browser) = Browser::start(&format!("webhooks-{b:?}")).await else {
        return;
    };
    browser
        .sign_in(&app.base, OWNER_EMAIL, OWNER_PASSWORD)
        .await;
    browser.click("a[href='/ui/webhooks']").await;
    browser.find("form[action='/ui/webhooks']").await;
    // A refused URL says why and creates nothing.
    browser
        .type_into("input[name=url]", "http://169.254.169.254/latest")
        .await;
    browser.click("form[action='/ui/webhooks'] button").await;
    browser.find("p.error").await;
    browser.wait_text("url:").await;
    assert_eq!(app.count("SELECT COUNT(*) FROM webhooks").await, 0);
    browser
        .type_into("input[name=url]", "http://127.0.0.1:9/hook")
        .await;
    browser.click("form[action='/ui/webhooks'] button").await;
    browser.find("#secret").await;
    let page = browser.source().await;
    let secret = page
        .split("<code id=\"secret\">")
        .nth(1)
        .and_then(|r| r.split('<').next())
        .expect("secret")
        .to_owned();
    assert!(secret.starts_with("whsec_"), "{secret}");
    browser.screenshot("created").await;
    // The API agrees it exists, and never shows the secret again: not on the page either.
    let hooks = body(app.get("/webhooks", &app.owner).await).await;
    assert_eq!(hooks[0]["url"], "http://127.0.0.1:9/hook");
    browser.goto(&format!("{}/ui/webhooks", app.base)).await;
    browser.find("table").await;
    let again = browser.source().await;
    assert!(again.contains("http://127.0.0.1:9/hook"));
    assert!(!again.contains(&secret), "the secret is shown once only");
    assert!(
        again.contains(&secret[..10]),
        "its first characters identify it"
    );
    browser.screenshot("listed").await;
    browser.assert_no_js_errors().await;
}

async fn an_app_is_tracked_from_the_discovery_list_changed_and_untracked(b: Backend) {
    let app = TestApp::spawn(b).await;
    let Some(browser) = Browser::start(&format!("apps-{b:?}")).await else {
        return;
    };
    let host = crate::agents::register(&app).await;
    let mut bt = crate::agents::batch(json!([]));
    bt["inventory"] = json!({
        "collected_at": crate::agents::ts(time::OffsetDateTime::now_utc()),
        "systemd": [{"unit": "nginx.service", "active_state": "active"}],
        "containers": []
    });
    let r = crate::agents::send(&app, &host, bt.to_string().as_bytes(), None, true).await;
    assert_eq!(r.status(), 202);
    browser
        .sign_in(&app.base, OWNER_EMAIL, OWNER_PASSWORD)
        .await;
    browser.click("a[href='/ui/apps']").await;
    browser
        .click(&format!("a[href^='/ui/apps?agent={}']", host.id))
        .await;
    browser.find("#discover").await;
    browser.screenshot("discovery").await;
    browser.click("#discover form button").await;
    browser.find("tr[id^='app-']").await;
    let mut apps = body(app.get("/apps", &app.owner).await).await;
    for _ in 0..50 {
        if apps[0]["identifier"].is_string() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        apps = body(app.get("/apps", &app.owner).await).await;
    }
    assert_eq!(apps[0]["identifier"], "nginx.service", "{apps}");
    assert_eq!(apps[0]["app_type"], "systemd");
    assert_eq!(apps[0]["expected_state"], "running");
    let page = browser.source().await;
    assert!(page.contains("nginx"), "{page}");
    browser.screenshot("tracked").await;
    browser.goto(&format!("{}/", app.base)).await;
    // The overview counts it.
    browser.wait_text("of 1 tracked").await;
    browser.goto(&format!("{}/ui/apps", app.base)).await;
    // Changing what is expected asks first; saying no changes nothing.
    let q = browser
        .click_confirm("form[action$='/expected'] button", false)
        .await;
    assert!(q.contains("Expect nginx") && q.contains("stopped"), "{q}");
    let apps = body(app.get("/apps", &app.owner).await).await;
    assert_eq!(apps[0]["expected_state"], "running", "{apps}");
    browser
        .click_confirm("form[action$='/expected'] button", true)
        .await;
    // The page comes back offering the other state.
    browser
        .find("form[action$='/expected'] input[value=running]")
        .await;
    let apps = body(app.get("/apps", &app.owner).await).await;
    assert_eq!(apps[0]["expected_state"], "stopped", "{apps}");
    let q = browser
        .click_confirm("form[action$='/untrack'] button", true)
        .await;
    assert!(q.contains("Stop tracking nginx"), "{q}");
    browser.wait_gone("tr[id^='app-']").await;
    assert_eq!(body(app.get("/apps", &app.owner).await).await, json!([]));
    browser.wait_text("No app is tracked yet.").await;
    browser.assert_no_js_errors().await;
}

async fn a_user_with_totp_signs_in_with_a_code_or_a_recovery_code(b: Backend) {
    let app = TestApp::spawn(b).await;
    let Some(browser) = Browser::start(&format!("totp-{b:?}")).await else {
        return;
    };
    let now = fresh_totp_window().await;
    let setup = body(
        app.req(reqwest::Method::POST, "/auth/totp/setup", &app.owner)
            .send()
            .await
            .expect("setup"),
    )
    .await;
    let secret =
        trusthub_core::totp::secret_from_base32(setup["secret_base32"].as_str().expect("b32"))
            .expect("secret");
    let r = app
        .post(
            "/auth/totp/verify",
            &app.owner,
            json!({"code": trusthub_core::totp::code_at(&secret, now)}),
        )
        .await;
    let codes = body(r).await["recovery_codes"].clone();
    // Email and password first; the form then asks for the code.
    browser.goto(&format!("{}/login", app.base)).await;
    browser.type_into("input[name=email]", OWNER_EMAIL).await;
    browser
        .type_into("input[name=password]", OWNER_PASSWORD)
        .await;
    browser.click("button[type=submit]").await;
    browser.find("input[name=totp_code]").await;
    browser.screenshot("asks-for-code").await;
    // The code step asks for the code only: the password step is kept, sealed, in the page.
    let step = browser.source().await;
    assert!(
        !step.contains("name=\"password\""),
        "no password field again"
    );
    assert!(!step.contains(OWNER_PASSWORD), "the password is not echoed");
    // The code just spent on enabling TOTP is refused, saying when the next one comes…
    browser
        .type_into(
            "input[name=totp_code]",
            &trusthub_core::totp::code_at(&secret, now),
        )
        .await;
    browser.click("button[type=submit]").await;
    browser.wait_text("was used already").await;
    // …and the step stays: the next code signs in.
    browser
        .type_into(
            "input[name=totp_code]",
            &trusthub_core::totp::code_at(&secret, now + 30),
        )
        .await;
    browser.click("button[type=submit]").await;
    browser.find("#live").await;
    browser.click("header form button").await;
    browser.find("input[name=password]").await;
    // A recovery code works once in place of the code.
    let recovery = codes[0].as_str().expect("code");
    browser.type_into("input[name=email]", OWNER_EMAIL).await;
    browser
        .type_into("input[name=password]", OWNER_PASSWORD)
        .await;
    browser.click("button[type=submit]").await;
    browser.type_into("input[name=totp_code]", recovery).await;
    browser.click("button[type=submit]").await;
    browser.find("#live").await;
    browser.screenshot("signed-in-with-recovery-code").await;
    browser.assert_no_js_errors().await;
}

async fn an_evidence_pack_is_created_listed_and_downloaded(b: Backend) {
    let app = TestApp::spawn(b).await;
    let Some(browser) = Browser::start(&format!("evidence-{b:?}")).await else {
        return;
    };
    let (ingest, _) = app.token(&app.owner, "ai_ingest").await;
    let prompt = "0".repeat(64);
    let r = app
        .post(
            "/ai/traces",
            &Auth::Bearer(ingest),
            json!({"traces": [{"trace_id": "t1", "name": "answer", "team": "search",
                "started_at": "2026-11-01T10:00:00Z", "ended_at": "2026-11-01T10:00:02Z",
                "calls": [{"span_id": "s1", "model": "gpt-4o", "prompt_tokens": 900,
                    "completion_tokens": 200, "latency_ms": 840, "prompt_sha256": prompt}]}]}),
        )
        .await;
    assert_eq!(r.status(), 202);
    browser
        .sign_in(&app.base, OWNER_EMAIL, OWNER_PASSWORD)
        .await;
    browser.click("a[href='/ui/evidence']").await;
    browser.find("form[action='/ui/evidence']").await;
    let key = body(app.get("/ai/evidence-key", &Auth::None).await).await;
    assert!(
        browser
            .source()
            .await
            .contains(key["fingerprint_sha256"].as_str().expect("fp"))
    );
    browser.set_value("input[name=from]", "2026-11-01").await;
    browser.set_value("input[name=to]", "2026-11-02").await;
    browser.click("form[action='/ui/evidence'] button").await;
    browser.find("tr[id^='pack-']").await;
    let page = browser.source().await;
    assert!(page.contains("created."), "{page}");
    browser.screenshot("created").await;
    let href = page
        .split("href=\"/api/v1/ai/evidence-packs/")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("download link");
    // The link downloads a pack that verifies against the published key.
    let bundle = app
        .get(&format!("/ai/evidence-packs/{href}"), &app.owner)
        .await
        .bytes()
        .await
        .expect("bundle");
    assert!(
        trusthub_core::evidence::verify_gz(
            bundle.as_ref(),
            Some(key["public_key_hex"].as_str().expect("hex"))
        )
        .ok()
    );
    browser.assert_no_js_errors().await;
}

async fn an_admin_makes_an_install_command_that_enrols_a_host(b: Backend) {
    let app = TestApp::spawn(b).await;
    let Some(browser) = Browser::start(&format!("enroll-{b:?}")).await else {
        return;
    };
    browser
        .sign_in(&app.base, OWNER_EMAIL, OWNER_PASSWORD)
        .await;
    browser.click("a[href='/ui/enroll']").await;
    browser
        .type_into("input[name=tags]", "env:prod role:db")
        .await;
    browser.click("form[action='/ui/enroll'] button").await;
    browser.find("#install").await;
    let page = browser.source().await;
    browser.screenshot("install-command").await;
    let command = page
        .split("<code id=\"install\">")
        .nth(1)
        .and_then(|r| r.split('<').next())
        .expect("command")
        .replace("&amp;", "&");
    assert!(
        command.starts_with(&format!(
            "curl -fsSL {}/install.sh | sh -s -- --enroll ",
            app.base
        )),
        "{command}"
    );
    let manual = page
        .split("<code id=\"install-manual\">")
        .nth(1)
        .and_then(|r| r.split('<').next())
        .expect("manual command")
        .replace("&amp;", "&");
    assert!(
        manual.contains(&format!("--hub {}", app.base))
            && manual.contains("trusthub-agent install"),
        "{manual}"
    );
    // No public URL in this hub's settings: the page says the address may not be reachable.
    assert!(page.contains("id=\"public-url-warning\""));
    let token = command
        .split_whitespace()
        .find(|w| w.starts_with("the_"))
        .expect("token in the command");
    // The token in the command enrols a host, with the tags given.
    let key = crate::agents::key();
    let r = crate::agents::register_raw(&app, token, &key, &key, "new-host").await;
    assert_eq!(r.status(), 201);
    let agents = body(app.get("/agents", &app.owner).await).await;
    let tags = agents[0]["tags"].as_array().expect("tags");
    assert!(
        tags.contains(&json!("env:prod")) && tags.contains(&json!("role:db")),
        "the enrolment's tags: {agents}"
    );
    // Reloading shows no token again; the audit log page lists what happened.
    browser.goto(&format!("{}/ui/enroll", app.base)).await;
    browser.find("form[action='/ui/enroll']").await;
    assert!(!browser.source().await.contains(token));
    browser.click("a[href='/ui/audit']").await;
    browser.find("table").await;
    let audit = browser.source().await;
    assert!(
        audit.contains("enrollment_token_created") && audit.contains("agent_registered"),
        "{audit}"
    );
    // Names, not ids: the new host links to its page, the owner is their email.
    let host_id = agents[0]["id"].as_str().expect("id");
    let host_name = agents[0]["hostname"].as_str().expect("hostname");
    assert!(
        audit.contains(&format!(
            "href=\"/ui/agents/{host_id}\" title=\"agent:{host_id}\">{host_name}</a>"
        )),
        "{audit}"
    );
    assert!(audit.contains(&format!(">{OWNER_EMAIL}</span>")), "{audit}");
    // The filter keeps one event type.
    browser
        .set_value("input[name=event]", "agent_registered")
        .await;
    browser.click("form.filters button").await;
    let filtered = browser.wait_text("<a href=\"/ui/audit\">Clear</a>").await;
    assert!(
        filtered.contains("agent_registered") && !filtered.contains("enrollment_token_created"),
        "{filtered}"
    );
    browser.assert_no_js_errors().await;
}

async fn an_operator_creates_a_rule_on_a_metric_the_fleet_sends_and_deletes_it(b: Backend) {
    let app = TestApp::spawn(b).await;
    let Some(browser) = Browser::start(&format!("rules-{b:?}")).await else {
        return;
    };
    let host = crate::agents::register(&app).await;
    let at = crate::agents::ts(time::OffsetDateTime::now_utc());
    let r = crate::agents::send(
        &app,
        &host,
        crate::agents::batch(json!([{"name": "disk.used_percent", "ts": at, "value": 71.0, "labels": {"mount": "/"}}]))
            .to_string()
            .as_bytes(),
        None,
        true,
    )
    .await;
    assert_eq!(r.status(), 202);
    browser
        .sign_in(&app.base, OWNER_EMAIL, OWNER_PASSWORD)
        .await;
    browser.click("a[href='/ui/rules']").await;
    browser.find("datalist#metrics").await;
    assert!(
        browser
            .source()
            .await
            .contains("<option value=\"disk.used_percent\">"),
        "the fleet's metric names are offered"
    );
    browser.type_into("input[name=name]", "disk filling").await;
    browser
        .type_into("input[name=metric]", "disk.used_percent")
        .await;
    browser.type_into("input[name=threshold]", "90").await;
    browser.click("form[action='/ui/rules'] button").await;
    browser.find("tr[id^='rule-']").await;
    let page = browser.source().await;
    assert!(
        page.contains("disk filling") && page.contains("avg(disk.used_percent) &gt; 90"),
        "{page}"
    );
    browser.screenshot("rule").await;
    let rules = body(app.get("/alert-rules", &app.owner).await).await;
    assert_eq!(rules[0]["metric_seen"], true);
    assert_eq!(rules[0]["group_by"], json!(["agent_id"]));
    browser.click("form[action$='/delete'] button").await;
    browser.wait_gone("tr[id^='rule-']").await;
    assert_eq!(
        body(app.get("/alert-rules", &app.owner).await).await,
        json!([])
    );
    browser.assert_no_js_errors().await;
}

async fn an_operator_adds_a_check_the_hub_runs_and_sees_why_it_is_down(b: Backend) {
    let app = TestApp::spawn(b).await;
    let Some(browser) = Browser::start(&format!("checks-{b:?}")).await else {
        return;
    };
    let port = {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        l.local_addr().expect("addr").port()
    };
    browser
        .sign_in(&app.base, OWNER_EMAIL, OWNER_PASSWORD)
        .await;
    browser.goto(&format!("{}/ui/apps", app.base)).await;
    browser
        .type_into("#add-check input[name=name]", "shop")
        .await;
    browser
        .type_into(
            "#add-check input[name=endpoint]",
            &format!("http://127.0.0.1:{port}/health"),
        )
        .await;
    browser
        .set_value("#add-check input[name=interval_seconds]", "10")
        .await;
    browser
        .set_value("#add-check input[name=failures]", "1")
        .await;
    browser.click("#add-check button").await;
    browser.find("tr[id^='app-']").await;
    let apps = body(app.get("/apps", &app.owner).await).await;
    assert_eq!(apps[0]["agent_id"], Value::Null, "{apps}");
    assert_eq!(apps[0]["retries"], 0, "{apps}");
    assert_eq!(apps[0]["interval_seconds"], 10, "{apps}");
    // The hub probes it (the test drives the tick): one failure is down with its reason.
    trusthub_monitors::jobs::probes::probe_tick(&app.state, hub_now() + time::Duration::seconds(1))
        .await
        .expect("tick");
    browser.goto(&format!("{}/ui/apps", app.base)).await;
    let row = browser.text("tr[id^='app-']").await;
    assert!(
        row.contains("the hub") && row.contains("stopped") && row.contains("cannot connect"),
        "{row}"
    );
    assert!(row.contains("every 10 s, down after 1 failure ·"), "{row}");
    // A check has nothing to restart: no restart link.
    assert!(!browser.source().await.contains("/restart\""));
    browser.screenshot("check-down").await;
    // A bad target is refused on the page, naming what is wrong.
    browser
        .type_into("#add-check input[name=name]", "bad")
        .await;
    browser
        .type_into("#add-check input[name=endpoint]", "tcp://10.9.9.9:22")
        .await;
    browser
        .click("#add-check select[name=kind] option[value=tcp]")
        .await;
    browser.click("#add-check button").await;
    let page = browser.wait_text("does not call").await;
    assert!(page.contains("or run the check from a host"), "{page}");
    assert_eq!(
        body(app.get("/apps", &app.owner).await)
            .await
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    // Run from a host (CONTRACT 33): its agent reaches that network, with the same options.
    let host = crate::agents::register(&app).await;
    browser.goto(&format!("{}/ui/apps", app.base)).await;
    browser
        .type_into("#add-check input[name=name]", "intranet")
        .await;
    browser
        .type_into("#add-check input[name=endpoint]", "http://10.9.9.9/health")
        .await;
    browser
        .click(&format!(
            "#add-check select[name=run_from] option[value='{}']",
            host.id
        ))
        .await;
    browser
        .type_into("#add-check input[name=keyword]", "ok")
        .await;
    browser.click("#add-check button").await;
    let apps = app_named(&app, "intranet").await;
    let intranet = apps
        .as_array()
        .and_then(|a| a.iter().find(|x| x["name"] == "intranet"))
        .expect("the check run from the host");
    assert_eq!(intranet["agent_id"], host.id.as_str(), "{intranet}");
    assert_eq!(intranet["keyword"], "ok", "{intranet}");
    browser.screenshot("check-from-host").await;
    // A push monitor (CONTRACT 32): its URL shown this once, and it works when called.
    browser.goto(&format!("{}/ui/apps", app.base)).await;
    browser
        .type_into("#add-check input[name=name]", "nightly backup")
        .await;
    browser
        .click("#add-check select[name=kind] option[value=push]")
        .await;
    browser
        .set_value("#add-check input[name=interval_seconds]", "3600")
        .await;
    browser
        .type_into("#add-check input[name=grace_seconds]", "600")
        .await;
    browser.click("#add-check button").await;
    let shown = browser.wait_text("its push URL is shown this once").await;
    let push_url = browser.text("#push-url code").await;
    assert!(push_url.contains("/api/v1/push/thp_"), "{shown}");
    browser.screenshot("push-url").await;
    let r = app.client.get(push_url.trim()).send().await.expect("ping");
    assert_eq!(r.status(), 200);
    browser.goto(&format!("{}/ui/apps", app.base)).await;
    let page = browser.text("main").await;
    assert!(
        page.contains("a ping every 3600 s (+600 s grace), down after 1 missed")
            && !page.contains(push_url.trim()),
        "masked after: {page}"
    );
    // A new URL from the page: shown once, the old one stops answering.
    let question = browser.click_confirm(".new-push-url button", true).await;
    assert!(
        question.contains("The old one stops answering"),
        "{question}"
    );
    browser.wait_text("its push URL is shown this once").await;
    let fresh = browser.text("#push-url code").await;
    assert_ne!(fresh.trim(), push_url.trim());
    let r = app.client.get(push_url.trim()).send().await.expect("old");
    assert_eq!(r.status(), 404);
    browser.goto(&format!("{}/ui/apps", app.base)).await;
    // A JSON assertion from the form.
    browser
        .type_into("#add-check input[name=name]", "api")
        .await;
    browser
        .type_into(
            "#add-check input[name=endpoint]",
            "http://127.0.0.1:9/status",
        )
        .await;
    browser
        .type_into("#add-check input[name=json_path]", "$.db.lag_ms")
        .await;
    browser
        .click("#add-check select[name=json_op] option[value='<']")
        .await;
    browser
        .type_into("#add-check input[name=json_value]", "100")
        .await;
    browser.click("#add-check button").await;
    // Not `wait_text("api")`: the page's source holds "api" before the form is sent.
    let apps = app_named(&app, "api").await;
    let api = apps
        .as_array()
        .and_then(|a| a.iter().find(|x| x["name"] == "api"))
        .expect("the json check");
    assert_eq!(
        api["json_query"],
        json!({"path": "$.db.lag_ms", "op": "<", "value": 100})
    );
    browser.assert_no_js_errors().await;
}

/// The apps once one is named `name` (the form's redirect has been followed).
async fn app_named(app: &TestApp, name: &str) -> Value {
    let mut apps = Value::Null;
    for _ in 0..100 {
        apps = body(app.get("/apps", &app.owner).await).await;
        if apps
            .as_array()
            .is_some_and(|a| a.iter().any(|x| x["name"] == name))
        {
            return apps;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("no app named {name:?} in {apps}");
}

async fn an_admin_adds_a_slack_channel_tests_it_and_follows_an_alert_to_its_page(b: Backend) {
    let app = TestApp::spawn(b).await;
    let Some(browser) = Browser::start(&format!("channels-{b:?}")).await else {
        return;
    };
    let (base, got) = crate::channels::receiver().await;
    browser
        .sign_in(&app.base, OWNER_EMAIL, OWNER_PASSWORD)
        .await;
    browser.click("a[href='/ui/notifications']").await;
    browser.wait_text("No channel yet").await;
    browser
        .type_into("#new-channel input[name=name]", "ops")
        .await;
    browser
        .type_into(
            "#new-channel input[name=url]",
            &format!("{base}/services/T1/B1/sekrit"),
        )
        .await;
    browser.click("#new-channel button").await;
    browser.wait_text("Channel “ops” added").await;
    let page = browser.source().await;
    assert!(!page.contains("sekrit"), "the webhook URL is a credential");
    browser.click("form[action$='/test'] button").await;
    let mut arrived = Vec::new();
    for _ in 0..100 {
        arrived = got.lock().expect("lock").clone();
        if !arrived.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(arrived.len(), 1);
    crate::channels::slack_shape(&arrived[0].2);
    for _ in 0..50 {
        browser
            .goto(&format!("{}/ui/notifications", app.base))
            .await;
        if browser.text("td.last").await.starts_with("succeeded") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert!(browser.text("td.last").await.starts_with("succeeded"));
    browser.screenshot("channel-tested").await;
    // An alert: its title in the list leads to its page, with the probe's error.
    let r = app
        .post(
            "/apps",
            &app.owner,
            json!({"name": "shop", "type": "tcp", "endpoint": "tcp://127.0.0.1:1", "retries": 0}),
        )
        .await;
    assert_eq!(r.status(), 201);
    trusthub_monitors::jobs::probes::probe_tick(&app.state, hub_now() + time::Duration::seconds(1))
        .await
        .expect("tick");
    browser.goto(&format!("{}/ui/alerts", app.base)).await;
    browser.click("a[href^='/ui/alerts/']").await;
    browser.wait_text("shop is down").await;
    let detail = browser.text("#detail").await;
    assert!(detail.contains("cannot connect"), "{detail}");
    assert_eq!(browser.text("#state").await, "open");
    browser.screenshot("alert-page").await;
    // Deleting asks first.
    browser
        .goto(&format!("{}/ui/notifications", app.base))
        .await;
    let q = browser
        .click_confirm("form[action$='/delete'] button", true)
        .await;
    assert!(q.contains("Delete the channel ops"), "{q}");
    browser.wait_text("No channel yet").await;
    // A signed webhook made here gets a secret from the hub, shown this once (CONTRACT 33).
    browser
        .type_into("#new-channel input[name=name]", "own receiver")
        .await;
    browser
        .set_value("#new-channel select[name=kind]", "webhook")
        .await;
    browser
        .type_into("#new-channel input[name=url]", &format!("{base}/hook"))
        .await;
    browser.click("#new-channel button").await;
    let page = browser.wait_text("It is shown this once").await;
    let secret = browser.text("#once-secret").await;
    assert!(secret.starts_with("whsec_"), "{page}");
    browser.screenshot("channel-secret").await;
    browser
        .goto(&format!("{}/ui/notifications", app.base))
        .await;
    assert!(!browser.source().await.contains(&secret), "shown once only");
    browser.assert_no_js_errors().await;
}

async fn an_admin_makes_a_status_page_and_the_public_reads_it_on_a_phone_without_scripts(
    b: Backend,
) {
    let app = TestApp::spawn(b).await;
    let Some(browser) = Browser::start(&format!("status-page-{b:?}")).await else {
        return;
    };
    // Checkout's port is dead, Search's answers.
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let live = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let live_port = live.local_addr().expect("addr").port();
    for (name, port) in [("Checkout", dead), ("Search", live_port)] {
        let r = app
            .post(
                "/apps",
                &app.owner,
                json!({"name": name, "type": "tcp", "endpoint": format!("tcp://127.0.0.1:{port}"),
                    "retries": 0}),
            )
            .await;
        assert_eq!(r.status(), 201);
    }
    trusthub_monitors::jobs::probes::probe_tick(&app.state, hub_now() + time::Duration::seconds(1))
        .await
        .expect("tick");
    browser
        .sign_in(&app.base, OWNER_EMAIL, OWNER_PASSWORD)
        .await;
    browser.click("a[href='/ui/status-pages']").await;
    browser.wait_text("No status page yet").await;
    browser
        .type_into("#new-page input[name=title]", "Acme")
        .await;
    browser
        .type_into("#new-page input[name=slug]", "acme")
        .await;
    for n in [1, 2] {
        browser.click(&format!("#new-page #app-{n}")).await;
    }
    let ticked = browser
        .eval("return Array.from(document.querySelectorAll('#new-page input[name=app_id]')).map(e => e.checked)")
        .await;
    assert_eq!(ticked, json!([true, true]), "both apps ticked");
    browser.click("#new-page button").await;
    browser.wait_text("Status page made").await;
    browser
        .click("#status-pages a[href^='/ui/status-pages/']")
        .await;
    browser
        .type_into("#new-incident input[name=title]", "Checkout errors")
        .await;
    browser
        .type_into(
            "#new-incident input[name=message]",
            "Payments fail for some cards.",
        )
        .await;
    browser
        .click("#new-incident select[name=impact] option[value=major]")
        .await;
    browser.click("#new-incident button").await;
    browser.wait_text("Incident opened").await;
    browser.screenshot("incident").await;
    // An update from the page's form.
    browser
        .type_into(
            ".update-incident input[name=message]",
            "A fix is rolling out.",
        )
        .await;
    browser
        .click(".update-incident select[name=status] option[value=monitoring]")
        .await;
    browser.click(".update-incident button").await;
    browser.wait_text("Update posted").await;
    // A public badge from the apps page: drawn in place, its address shown.
    browser.goto(&format!("{}/ui/apps", app.base)).await;
    browser.click(".badge-switch button").await;
    browser.find(".badge-line img").await;
    let mut drawn = json!(false);
    for _ in 0..50 {
        drawn = browser
            .eval("var i = document.querySelector('.badge-line img'); return i.complete && i.naturalWidth > 0")
            .await;
        if drawn == json!(true) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(drawn, json!(true), "the badge image loads");
    browser.screenshot("badge").await;
    // The public page, signed out, at a phone's width: no script, nothing wider than it.
    browser.goto(&format!("{}/status/acme", app.base)).await;
    browser.resize(390, 844).await;
    let page = browser.wait_text("Checkout errors").await;
    assert!(
        page.contains("Partial outage") && page.contains("A fix is rolling out."),
        "{page}"
    );
    let scripts = browser.eval("return document.scripts.length").await;
    assert_eq!(scripts, json!(0));
    let fits = browser
        .eval("return document.documentElement.scrollWidth <= window.innerWidth")
        .await;
    assert_eq!(
        fits,
        json!(true),
        "readable on a phone without scrolling sideways"
    );
    browser.screenshot("public-phone").await;
    browser.assert_no_js_errors().await;
    drop(live);
}
