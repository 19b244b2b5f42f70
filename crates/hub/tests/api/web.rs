//! The dashboard over HTTP (CONTRACT 17): every page needs a session and carries the security
//! headers, assets are embedded under content-hashed names, sign-in uses the API's checks, and
//! a state-changing form without its CSRF token (or from another origin) is refused.

use crate::harness::*;

crate::dual!(
    dashboard_pages_need_a_session_and_carry_the_contract_17_headers,
    every_state_changing_form_refuses_a_wrong_csrf_token_and_changes_nothing,
    a_form_with_a_misspelt_or_missing_field_is_refused_naming_it,
    the_sign_in_page_names_the_password_file_only_while_nobody_has_signed_in,
    the_overview_ranks_agents_by_the_cpu_of_their_newest_batch_and_draws_it,
);

fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

/// `application/x-www-form-urlencoded`, as a browser sends a form.
fn form(pairs: &[(&str, &str)]) -> String {
    let enc = |s: &str| {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                    (b as char).to_string()
                }
                b' ' => "+".into(),
                _ => format!("%{b:02X}"),
            })
            .collect::<String>()
    };
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn assert_headers(r: &reqwest::Response) {
    let h = r.headers();
    let csp = h["content-security-policy"].to_str().expect("csp");
    assert!(csp.contains("default-src 'self'"), "{csp}");
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert_eq!(h["x-frame-options"], "DENY");
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert_eq!(h["referrer-policy"], "same-origin");
}

async fn dashboard_pages_need_a_session_and_carry_the_contract_17_headers(b: Backend) {
    let app = TestApp::spawn(b).await;
    let web = no_redirects();
    let at = |p: &str| format!("{}{p}", app.base);
    // No session: every page sends to the sign-in page.
    for page in [
        "/",
        "/ui/agents",
        "/ui/overview/live",
        "/ui/cve-sources",
        "/ui/vulnerabilities",
        "/ui/cve-suppressions",
        "/ui/agents/00000000-0000-0000-0000-000000000000/vulnerabilities",
        "/ui/supply-chain",
        "/ui/apps/00000000-0000-0000-0000-000000000000/slo",
    ] {
        let r = web.get(at(page)).send().await.expect("get");
        assert_eq!(r.status(), 303, "{page}");
        let to = r.headers()["location"].to_str().expect("loc").to_owned();
        assert!(to.starts_with("/login"), "{page}: {to}");
        assert_headers(&r);
    }
    // `/ui` is the overview, which lives at the root (CONTRACT 33).
    for ui in ["/ui", "/ui/"] {
        let r = web.get(at(ui)).send().await.expect("ui");
        assert_eq!(r.status(), 308, "{ui}");
        assert_eq!(r.headers()["location"], "/", "{ui}");
    }
    let r = web.get(at("/login")).send().await.expect("login page");
    assert_eq!(r.status(), 200);
    assert_headers(&r);
    let page = r.text().await.expect("html");
    assert!(
        page.contains("<form") && page.contains("name=\"password\""),
        "{page}"
    );
    assert!(!page.contains("<script>"), "no inline scripts");
    // The assets it links, embedded, under content-hashed names.
    for link in page.split('"').filter(|s| s.starts_with("/assets/")) {
        let r = web.get(at(link)).send().await.expect("asset");
        assert_eq!(r.status(), 200, "{link}");
        assert!(
            r.headers()["cache-control"]
                .to_str()
                .expect("cc")
                .contains("immutable"),
            "{link}"
        );
    }
    assert_eq!(
        web.get(at("/assets/app-000000000000.css"))
            .send()
            .await
            .expect("x")
            .status(),
        404
    );

    // A wrong password re-renders the form; the right one signs in and sends to `next`.
    let r = web
        .post(at("/login?next=/ui/agents"))
        .header("origin", app.base.clone())
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[
            ("email", OWNER_EMAIL),
            ("password", "wrong password"),
        ]))
        .send()
        .await
        .expect("login");
    assert_eq!(r.status(), 401);
    assert!(
        r.text()
            .await
            .expect("html")
            .contains("wrong email or password")
    );
    let r = web
        .post(at("/login?next=//evil.example/x"))
        .header("origin", app.base.clone())
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[
            ("email", OWNER_EMAIL),
            ("password", OWNER_PASSWORD),
        ]))
        .send()
        .await
        .expect("login");
    assert_eq!(r.status(), 303);
    assert_eq!(r.headers()["location"], "/", "never an open redirect");
    let cookie = r.headers()["set-cookie"]
        .to_str()
        .expect("cookie")
        .split(';')
        .next()
        .expect("pair")
        .to_owned();
    let r = web
        .get(at("/"))
        .header("cookie", &cookie)
        .send()
        .await
        .expect("overview");
    assert_eq!(r.status(), 200);
    assert_headers(&r);
    let page = r.text().await.expect("html");
    assert!(
        page.contains("Overview") && page.contains(OWNER_EMAIL),
        "{page}"
    );
    let csrf = page
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("csrf field")
        .to_owned();
    assert_eq!(
        web.get(at("/ui/agents"))
            .header("cookie", &cookie)
            .send()
            .await
            .expect("agents")
            .status(),
        200
    );
    // A browser asking for an address nothing answers gets a page, with the page headers;
    // an API client still gets a problem.
    let r = web
        .get(at("/ui/nothing-here"))
        .header("cookie", &cookie)
        .header("accept", "text/html,application/xhtml+xml")
        .send()
        .await
        .expect("unknown page");
    assert_eq!(r.status(), 404);
    assert_headers(&r);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .expect("ct")
            .starts_with("text/html")
    );
    let page = r.text().await.expect("html");
    assert!(page.contains("Page not found"), "{page}");
    let r = web
        .get(at("/api/v1/nothing-here"))
        .header("accept", "text/html")
        .send()
        .await
        .expect("unknown route");
    assert_eq!(r.status(), 404);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .expect("ct")
            .starts_with("application/problem+json")
    );
    // An id in a page's address that is not one reads as such, not as a parser's words.
    let r = web
        .get(at("/ui/apps/not-an-id/slo"))
        .header("cookie", &cookie)
        .send()
        .await
        .expect("bad id");
    assert_eq!(r.status(), 400);
    let page = r.text().await.expect("html");
    assert!(page.contains("holds an id that is not one"), "{page}");
    assert!(!page.contains("UUID parsing"), "{page}");

    // Sign-out: refused without the token and from another origin, done with it.
    let r = web
        .post(at("/logout"))
        .header("cookie", &cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[("csrf", "nope")]))
        .send()
        .await
        .expect("logout");
    assert_eq!(r.status(), 403);
    let r = web
        .post(at("/logout"))
        .header("cookie", &cookie)
        .header("origin", "https://evil.example")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[("csrf", csrf.as_str())]))
        .send()
        .await
        .expect("logout");
    assert_eq!(r.status(), 403);
    assert_eq!(
        web.get(at("/"))
            .header("cookie", &cookie)
            .send()
            .await
            .expect("still in")
            .status(),
        200,
        "refused sign-outs changed nothing"
    );
    let r = web
        .post(at("/logout"))
        .header("cookie", &cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[("csrf", csrf.as_str())]))
        .send()
        .await
        .expect("logout");
    assert_eq!(r.status(), 303);
    let r = web
        .get(at("/"))
        .header("cookie", &cookie)
        .send()
        .await
        .expect("gone");
    assert_eq!(r.status(), 303, "the session ended");
}

/// Every POST route of the dashboard, with records for its path parameters to exist: a form
/// with a wrong CSRF token (and every field a form could want, well-formed) is 403 and
/// nothing is written (the audit log and the tables stay as they were).
async fn every_state_changing_form_refuses_a_wrong_csrf_token_and_changes_nothing(b: Backend) {
    let app = TestApp::spawn(b).await;
    let Auth::Cookie(cookie) = &app.owner else {
        panic!("the owner signs in with a session");
    };
    let host = crate::agents::register(&app).await;
    let id = |v: serde_json::Value| v["id"].as_str().expect("id").to_owned();
    let hook = id(body(
        app.post(
            "/webhooks",
            &app.owner,
            serde_json::json!({"url": "http://127.0.0.1:9/h"}),
        )
        .await,
    )
    .await);
    let rule = id(body(
        app.post(
            "/alert-rules",
            &app.owner,
            serde_json::json!({"name": "r",
        "metric": "cpu.percent", "operator": ">", "threshold": 1, "window": "5m"}),
        )
        .await,
    )
    .await);
    let tracked = crate::apps::create_app(
        &app,
        &app.owner,
        serde_json::json!({"agent_id": host.id,
        "name": "api", "type": "http", "endpoint": "http://127.0.0.1:9/", "interval_seconds": 30}),
    )
    .await;
    let tracked = id(tracked);
    let (_, token_id) = app.token(&app.owner, "read").await;
    let (_, user) = app.user_with_role("viewer").await;
    let invite = id(body(
        app.post(
            "/invitations",
            &app.owner,
            serde_json::json!({"email": "x@example.com", "role": "viewer"}),
        )
        .await,
    )
    .await);
    let none = "00000000-0000-0000-0000-000000000000";
    let routes = [
        "/ui/apps".to_owned(),
        format!("/ui/apps/{tracked}/expected"),
        format!("/ui/apps/{tracked}/untrack"),
        format!("/ui/apps/{tracked}/restart"),
        "/ui/evidence".into(),
        "/ui/enroll".into(),
        "/ui/rules".into(),
        format!("/ui/rules/{rule}"),
        format!("/ui/rules/{rule}/delete"),
        format!("/ui/alerts/{none}/resolve"),
        format!("/ui/vulnerabilities/{none}/acknowledge"),
        format!("/ui/vulnerabilities/{none}/unacknowledge"),
        "/ui/cve-suppressions".into(),
        format!("/ui/cve-suppressions/{none}/delete"),
        format!("/ui/apps/{tracked}/slo"),
        format!("/ui/apps/{tracked}/slo/delete"),
        format!("/ui/apps/{tracked}/maintenance-windows"),
        format!("/ui/maintenance-windows/{none}/delete"),
        "/ui/webhooks".into(),
        format!("/ui/webhooks/{hook}"),
        format!("/ui/webhooks/{hook}/delete"),
        format!("/ui/webhooks/{hook}/test"),
        format!("/ui/webhooks/{hook}/deliveries/{none}/redeliver"),
        "/ui/settings/password".into(),
        "/ui/settings/totp/setup".into(),
        "/ui/settings/totp/verify".into(),
        "/ui/settings/totp/disable".into(),
        "/ui/settings/totp/recovery-codes".into(),
        "/ui/settings/tokens".into(),
        format!("/ui/settings/tokens/{token_id}/delete"),
        format!("/ui/users/{user}/role"),
        format!("/ui/users/{user}/remove"),
        "/ui/users/invitations".into(),
        format!("/ui/users/invitations/{invite}/revoke"),
        format!("/ui/agents/{}/governance", host.id),
        format!("/ui/agents/{}/rotate-token", host.id),
        format!("/ui/agents/{}/rotate-signing-key", host.id),
        format!("/ui/agents/{}/delete", host.id),
        format!("/ui/agents/{}/client-certs/00/revoke", host.id),
        "/ui/ai/prices".into(),
        format!("/ui/anomalies/{none}/resolve"),
        format!("/ui/agents/{}/auto-patch", host.id),
        format!("/ui/agents/{}/auto-patch/run", host.id),
        format!("/ui/agents/{}/emergency", host.id),
        "/ui/vulnerabilities/update-all".into(),
        format!("/ui/agents/{}/drift/rebase", host.id),
        "/ui/status-pages".into(),
        format!("/ui/status-pages/{none}"),
        "/ui/topology".into(),
        "/ui/diagrams".into(),
        format!("/ui/diagrams/{none}"),
        "/logout".into(),
    ];
    let fields = form(&[
        ("csrf", "0123456789abcdef"),
        ("agent_id", &host.id),
        ("app_type", "systemd"),
        ("identifier", "nginx.service"),
        ("name", "x"),
        ("expected_state", "stopped"),
        ("reason", "x"),
        ("code", "123456"),
        ("from", "2026-11-01"),
        ("to", "2026-11-02"),
        ("tags", "env:x"),
        ("metric", "cpu.percent"),
        ("operator", ">"),
        ("threshold", "5"),
        ("window", "5m"),
        ("severity", "critical"),
        ("url", "http://127.0.0.1:9/other"),
        ("min_severity", "critical"),
        ("current_password", OWNER_PASSWORD),
        ("new_password", "another fine password"),
        ("scope", "read"),
        ("role", "admin"),
        ("email", "y@example.com"),
        ("ingest_interval_secs", "30"),
        ("inventory_interval_secs", "3600"),
        ("model", "m"),
        ("effective_from", "2026-01-01"),
        ("input", "1"),
        ("output", "1"),
        ("package_name", "lodash"),
        ("ecosystem", "npm"),
        ("version_range", "*"),
        ("expires_at", "2026-12-31"),
        ("target", "0.99"),
        ("window_days", "30"),
        ("minimum_data", "0.5"),
        ("starts_at", "2026-12-01T10:00"),
        ("ends_at", "2026-12-01T11:00"),
        ("app", &tracked),
    ]);
    let audit = app.audit_count().await;
    let web = no_redirects();
    for route in &routes {
        let r = web
            .post(format!("{}{route}", app.base))
            .header("cookie", format!("trusthub_session={cookie}"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(fields.clone())
            .send()
            .await
            .expect("post");
        assert_eq!(r.status(), 403, "{route}");
        let page = r.text().await.expect("body");
        assert!(page.contains("CSRF"), "{route}: {page}");
    }
    assert_eq!(app.audit_count().await, audit, "nothing was written");
    assert_eq!(app.count("SELECT COUNT(*) FROM agents").await, 1);
    assert_eq!(app.count("SELECT COUNT(*) FROM webhooks").await, 1);
    assert_eq!(app.count("SELECT COUNT(*) FROM alert_rules").await, 1);
    assert_eq!(app.count("SELECT COUNT(*) FROM apps").await, 1);
    assert_eq!(app.count("SELECT COUNT(*) FROM api_tokens").await, 1);
    assert_eq!(
        body(app.get("/me", &app.owner).await).await["user"]["totp_enabled"],
        false
    );
}

/// Issue 60: a page's form is read as strictly as the API reads JSON — a field the form does
/// not have, or one it needs and lacks, is 422 naming it (after the CSRF token and the role),
/// never read as empty; the right form then works.
async fn a_form_with_a_misspelt_or_missing_field_is_refused_naming_it(b: Backend) {
    let app = TestApp::spawn(b).await;
    let Auth::Cookie(cookie) = &app.owner else {
        panic!("the owner signs in with a session");
    };
    let web = no_redirects();
    let cookie = format!("trusthub_session={cookie}");
    let page = web
        .get(format!("{}/ui/users", app.base))
        .header("cookie", &cookie)
        .send()
        .await
        .expect("users")
        .text()
        .await
        .expect("html");
    let csrf = page
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("csrf field")
        .to_owned();
    let post = |fields: String| {
        web.post(format!("{}/ui/users/invitations", app.base))
            .header("cookie", &cookie)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(fields)
            .send()
    };
    let invitations = "SELECT COUNT(*) FROM invitations";
    for (fields, named) in [
        (
            form(&[
                ("csrf", &csrf),
                ("emial", "a@example.com"),
                ("role", "viewer"),
            ]),
            "emial",
        ),
        (form(&[("csrf", &csrf), ("role", "viewer")]), "email"),
    ] {
        let r = post(fields).await.expect("post");
        assert_eq!(r.status(), 422, "{named}");
        let page = r.text().await.expect("html");
        assert!(page.contains(named), "{named}: {page}");
    }
    assert_eq!(app.count(invitations).await, 0, "nothing was written");
    let r = post(form(&[
        ("csrf", &csrf),
        ("email", "a@example.com"),
        ("role", "viewer"),
    ]))
    .await
    .expect("post");
    assert_eq!(r.status(), 201);
    assert_eq!(app.count(invitations).await, 1);

    // Every other form reads the same way: a TOTP code's, auto-patch's and the emergency
    // menu's (read by `Act`), forms of repeated names (topology's, a status page's: only
    // their own names), and the forms that need no session (sign-in, a reset token's).
    let host = crate::agents::register(&app).await;
    let audit = app.audit_count().await;
    let zones = "SELECT COUNT(*) FROM topology_zones";
    let csrf = csrf.as_str();
    let session_forms = [
        (
            "/ui/settings/totp/verify".to_owned(),
            form(&[("csrf", csrf), ("cod", "123456")]),
            "cod",
        ),
        (
            format!("/ui/agents/{}/auto-patch", host.id),
            form(&[("csrf", csrf), ("min_severty", "high")]),
            "min_severty",
        ),
        (
            format!("/ui/agents/{}/emergency", host.id),
            form(&[
                ("csrf", csrf),
                ("action", "block_ip"),
                ("target", "203.0.113.7"),
                ("reason", "r"),
            ]),
            "code",
        ),
        (
            "/ui/topology".into(),
            form(&[
                ("csrf", csrf),
                ("action", "add_zone"),
                ("nmae", "z"),
                ("kind", "vpc"),
            ]),
            "nmae",
        ),
        (
            "/ui/status-pages".into(),
            form(&[("csrf", csrf), ("slgu", "x"), ("title", "t")]),
            "slgu",
        ),
    ];
    // Without a session: sign-in (from this site) and a reset token's form.
    let sessionless = [
        (
            "/login".to_owned(),
            form(&[("emial", OWNER_EMAIL), ("password", OWNER_PASSWORD)]),
            "emial",
        ),
        (
            "/reset-password".into(),
            form(&[("tokn", "x"), ("password", "a fine password")]),
            "tokn",
        ),
    ];
    let forms = session_forms.into_iter().map(|f| (f, true));
    for ((path, fields, named), signed_in) in forms.chain(sessionless.map(|f| (f, false))) {
        let post = web
            .post(format!("{}{path}", app.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(fields);
        let r = match signed_in {
            true => post.header("cookie", &cookie),
            false => post.header("origin", app.base.clone()),
        }
        .send()
        .await
        .expect("post");
        assert_eq!(r.status(), 422, "{path}");
        assert!(
            signed_in || r.headers().get("set-cookie").is_none(),
            "{path}: no session"
        );
        let page = r.text().await.expect("html");
        assert!(page.contains(&format!("{named}: ")), "{path}: {page}");
    }
    assert_eq!(app.audit_count().await, audit, "nothing was written");
    assert_eq!(app.count(zones).await, 0);
}

/// CONTRACT 33: the sign-in page says where the first start's generated password is only
/// while that file is there and nobody has signed in (the hub removes it at the next start
/// after a sign-in), naming the file where it really is.
async fn the_sign_in_page_names_the_password_file_only_while_nobody_has_signed_in(b: Backend) {
    // A hub nobody has signed in to, with the first start's file.
    let dir = TempDir::new();
    let (settings, _pg) = TestApp::settings(b, &dir).await;
    let file = settings.db.data_dir.join("initial-admin.txt");
    let server = trusthub_hub::Server::build(settings)
        .await
        .expect("hub starts");
    std::fs::write(&file, "email: admin@trusthub.local\npassword: x\n").expect("file");
    let base = format!("http://{}", server.local_addr());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(server.run(async move {
        let _ = rx.await;
    }));
    let page = no_redirects()
        .get(format!("{base}/login"))
        .send()
        .await
        .expect("login page")
        .text()
        .await
        .expect("html");
    assert!(
        page.contains(&*file.to_string_lossy()) && page.contains("Nobody has signed in yet"),
        "{page}"
    );
    let _ = tx.send(());
    let _ = running.await;

    // Someone has signed in (the harness's owner): the page says nothing of the file, even
    // while it is still there.
    let app = TestApp::spawn(b).await;
    let file = app.state.settings.db.data_dir.join("initial-admin.txt");
    std::fs::write(&file, "email: admin@trusthub.local\npassword: x\n").expect("file");
    let page = no_redirects()
        .get(format!("{}/login", app.base))
        .send()
        .await
        .expect("login page")
        .text()
        .await
        .expect("html");
    assert!(!page.contains("initial-admin.txt"), "{page}");
}

/// Issue 63: the overview ranks the fleet by the CPU ingest keeps on each agent (its newest
/// unlabelled `cpu.percent`), not by reading every agent's metric rows, and draws the shown
/// agents' minutes of that one series out of rows holding others.
async fn the_overview_ranks_agents_by_the_cpu_of_their_newest_batch_and_draws_it(b: Backend) {
    use crate::agents::{batch, register, send, ts};
    use serde_json::json;
    let app = TestApp::spawn(b).await;
    let quiet = register(&app).await;
    let busy = register(&app).await;
    let now = time::OffsetDateTime::now_utc();
    for (host, older, newest) in [(&quiet, 90.0, 5.0), (&busy, 10.0, 70.0)] {
        let mut samples = vec![
            json!({"name": "cpu.percent", "ts": ts(now - time::Duration::minutes(2)), "value": older}),
            json!({"name": "cpu.percent", "ts": ts(now), "value": newest}),
            json!({"name": "cpu.percent", "ts": ts(now), "value": 99.0, "labels": {"cpu": "0"}}),
        ];
        // Rows holding other series too, as agents send them.
        samples.extend(
            (0..40).map(|i| json!({"name": format!("other.{i}"), "ts": ts(now), "value": i})),
        );
        let r = send(
            &app,
            host,
            batch(json!(samples)).to_string().as_bytes(),
            None,
            true,
        )
        .await;
        assert_eq!(r.status(), 202);
    }
    // A batch without CPU keeps what the agent's last one said.
    let r = send(
        &app,
        &busy,
        batch(json!([{"name": "mem.used_percent", "ts": ts(now), "value": 3}]))
            .to_string()
            .as_bytes(),
        None,
        true,
    )
    .await;
    assert_eq!(r.status(), 202);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM agents WHERE cpu_percent IN (5, 70)")
            .await,
        2
    );
    let r = app.get("//", &app.owner).await;
    assert_eq!(r.status(), 200);
    let page = r.text().await.expect("html");
    let at = |h: &crate::agents::Host| {
        page.find(&format!("/ui/agents/{}", h.id))
            .unwrap_or_else(|| panic!("{} is listed: {page}", h.id))
    };
    assert!(
        at(&busy) < at(&quiet),
        "the busiest now comes first: {page}"
    );
    // Both drawn: 70 % now is y = 30 - 70 * 0.3 = 9.0 (the unlabelled series, not cpu 0's 99).
    assert!(page.contains("70 %") && page.contains("5 %"), "{page}");
    assert!(page.contains(",9.0"), "{page}");
    // Drawn again, the newest minutes are read again (older ones are kept in memory): a
    // second sample in the same minute moves its average to (70 + 40) / 2.
    let later = ts(now + time::Duration::milliseconds(1));
    let again = batch(json!([{"name": "cpu.percent", "ts": later, "value": 40.0}]));
    let r = send(&app, &busy, again.to_string().as_bytes(), None, true).await;
    assert_eq!(r.status(), 202);
    let page = app.get("//", &app.owner).await.text().await.expect("html");
    assert!(page.contains("55 %"), "{page}");
}
