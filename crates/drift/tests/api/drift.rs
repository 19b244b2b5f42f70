//! Configuration drift over the API and the dashboard (CONTRACT 20), both engines: the
//! governed watch list, scans in signed batches, baselines, states, a package update that
//! explains a change, alerts, the rebase with its transparency entry and its 422s, the
//! `drift.ticket` webhook after a human rebase (not after an infrastructure service
//! account's), validation that changes nothing, tenants apart, and the pages.

use crate::agents::{Host, register, send, ts};
use crate::harness::*;
use serde_json::{Value, json};
use time::OffsetDateTime;
use uuid::Uuid;

crate::dual!(
    scans_drift_explanations_rebases_and_tickets,
    governance_and_reports_are_validated_and_tenants_apart,
    an_operator_rebases_from_the_host_drift_tab,
    a_glob_added_later_baselines_what_it_finds_at_its_first_scan,
);

pub(crate) fn file(path: &str, fill: char, package: Option<(&str, &str, bool)>) -> Value {
    let mut v = json!({"path": path, "sha256": fill.to_string().repeat(64), "size": 12, "mode": "0644",
        "uid": 0, "gid": 0, "mtime": ts(OffsetDateTime::now_utc()), "kind": "file"});
    if let Some((p, ver, ok)) = package {
        v["package"] = json!(p);
        v["package_version"] = json!(ver);
        v["package_verified"] = json!(ok);
    }
    v
}

/// Pushes a scan; the hub's answer.
pub(crate) async fn scan(app: &TestApp, host: &Host, files: Value) -> Value {
    let b = json!({"batch_id": Uuid::new_v4(), "sent_at": ts(OffsetDateTime::now_utc()), "config_hashes": files});
    let r = send(app, host, b.to_string().as_bytes(), None, true).await;
    assert_eq!(r.status(), 202);
    body(r).await
}

pub(crate) async fn watch(app: &TestApp, auth: &Auth, host: &Host, paths: &[&str]) {
    let r = app
        .send_json(
            reqwest::Method::PUT,
            &format!("/agents/{}/governance", host.id),
            auth,
            json!({"ingest_interval_secs": 60, "inventory_interval_secs": 3600, "tags": [],
                "allowed_actions": [], "config_paths": paths, "config_scan_interval_secs": 600}),
        )
        .await;
    assert_eq!(r.status(), 200);
}

fn row<'a>(list: &'a Value, path: &str) -> &'a Value {
    list.as_array()
        .and_then(|l| l.iter().find(|r| r["path"] == path))
        .unwrap_or_else(|| panic!("{path} in {list}"))
}

async fn drift_alerts(app: &TestApp) -> Vec<Value> {
    let all = body(app.get("/alerts?is_resolved=false", &app.owner).await).await;
    let list = all["items"]
        .as_array()
        .or(all.as_array())
        .cloned()
        .unwrap_or_default();
    list.into_iter()
        .filter(|a| a["source"] == "drift")
        .collect()
}

fn tickets(hook: &Receiver) -> Vec<Received> {
    hook.received()
        .into_iter()
        .filter(|r| r.header("x-service-event") == "drift.ticket")
        .collect()
}

async fn scans_drift_explanations_rebases_and_tickets(b: Backend) {
    let app = TestApp::spawn(b).await;
    let hook = Receiver::start(&[]).await;
    let r = app
        .post(
            "/webhooks",
            &app.owner,
            json!({"url": hook.url, "events": ["drift.ticket"]}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let host = register(&app).await;
    let (operator, _) = app.user_with_role("operator").await;
    watch(&app, &operator, &host, &["/etc/app.conf", "/etc/app.d/*"]).await;

    // The first scan is the baseline; the answer says what to watch.
    let ack = scan(
        &app,
        &host,
        json!([
            file("/etc/app.conf", 'a', Some(("app", "1.0", true))),
            file("/etc/app.d/x.conf", 'b', None)
        ]),
    )
    .await;
    assert_eq!(
        ack["config_paths"],
        json!(["/etc/app.conf", "/etc/app.d/*"])
    );
    assert_eq!(ack["config_scan_interval_secs"], 600);
    let list = body(
        app.get(&format!("/agents/{}/config-hashes", host.id), &app.owner)
            .await,
    )
    .await;
    assert_eq!(list.as_array().map(Vec::len), Some(2), "{list}");
    let conf = row(&list, "/etc/app.conf");
    assert_eq!(conf["status"], "ok");
    assert_eq!(conf["baseline"]["sha256"], "a".repeat(64));
    assert_eq!(conf["baseline"]["mode"], "0644");
    assert_eq!(conf["current"]["package"], "app");
    assert!(drift_alerts(&app).await.is_empty());

    // A package update the database vouches for, and a file new under the glob.
    scan(
        &app,
        &host,
        json!([
            file("/etc/app.conf", 'c', Some(("app", "2.0", true))),
            file("/etc/app.d/x.conf", 'b', None),
            file("/etc/app.d/y.conf", 'd', None)
        ]),
    )
    .await;
    let list = body(
        app.get(&format!("/agents/{}/config-hashes", host.id), &app.owner)
            .await,
    )
    .await;
    let conf = row(&list, "/etc/app.conf");
    assert_eq!(conf["status"], "drifted");
    assert_eq!(conf["explained_by"]["package"], "app");
    assert_eq!(conf["explained_by"]["from_version"], "1.0");
    assert_eq!(conf["explained_by"]["to_version"], "2.0");
    let y = row(&list, "/etc/app.d/y.conf");
    assert_eq!(y["status"], "new");
    assert_eq!(y["baseline"], Value::Null);
    let alerts = drift_alerts(&app).await;
    assert_eq!(alerts.len(), 1, "only the unexplained new file: {alerts:?}");
    assert!(
        alerts[0]["title"]
            .as_str()
            .is_some_and(|t| t.contains("/etc/app.d/y.conf"))
    );
    assert_eq!(alerts[0]["severity"], "warning");
    let new = body(app.get("/drift?status=new", &app.owner).await).await;
    assert_eq!(new.as_array().map(Vec::len), Some(1));
    assert_eq!(new[0]["agent_id"], host.id.as_str());

    // The rebase: only watched, reported paths; a viewer cannot.
    let rebase = format!("/agents/{}/config-hashes/rebase", host.id);
    let p = assert_problem(
        app.post(
            &rebase,
            &operator,
            json!({"paths": ["/etc/app.d/y.conf", "/etc/shadow"], "reason": "x"}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert!(names_field(&p, "paths[1]"), "{p}");
    let p = assert_problem(
        app.post(
            &rebase,
            &operator,
            json!({"paths": ["/etc/app.d/z.conf"], "reason": "x"}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert!(p.to_string().contains("not reported"), "{p}");
    let (viewer, _) = app.user_with_role("viewer").await;
    assert_problem(
        app.post(
            &rebase,
            &viewer,
            json!({"paths": ["/etc/app.d/y.conf"], "reason": "x"}),
        )
        .await,
        403,
        "forbidden",
    )
    .await;
    let log_before = body(app.get("/transparency-log", &app.owner).await).await;
    let r = app
        .post(
            &rebase,
            &operator,
            json!({"paths": ["/etc/app.d/y.conf"], "reason": "deployed by hand, ticket OPS-12"}),
        )
        .await;
    assert_eq!(r.status(), 200);
    let rb = body(r).await;
    assert_eq!(rb["agent_id"], host.id.as_str());
    assert_eq!(rb["paths"][0]["path"], "/etc/app.d/y.conf");
    assert_eq!(rb["paths"][0]["previous_sha256"], Value::Null);
    assert_eq!(rb["paths"][0]["sha256"], "d".repeat(64));
    assert_eq!(rb["by"]["type"], "user");
    assert!(rb["by"]["email"].as_str().is_some());
    let log = body(app.get("/transparency-log", &app.owner).await).await;
    let entries = log["entries"]
        .as_array()
        .or(log.as_array())
        .cloned()
        .unwrap_or_default();
    let before = log_before["entries"]
        .as_array()
        .or(log_before.as_array())
        .map_or(0, Vec::len);
    assert_eq!(entries.len(), before + 1, "{log}");
    let entry = entries
        .iter()
        .find(|e| e["kind"] == "drift.rebased")
        .expect("drift.rebased entry");
    assert_eq!(entry["payload"]["rebase_id"], rb["rebase_id"]);
    assert_eq!(
        entry["payload"]["reason"],
        "deployed by hand, ticket OPS-12"
    );
    let list = body(
        app.get(&format!("/agents/{}/config-hashes", host.id), &app.owner)
            .await,
    )
    .await;
    assert_eq!(row(&list, "/etc/app.d/y.conf")["status"], "ok");
    assert!(
        drift_alerts(&app).await.is_empty(),
        "the rebase resolves its alert"
    );

    // A change by hand within 7 days after a person's rebase: an alert and a ticket.
    scan(
        &app,
        &host,
        json!([
            file("/etc/app.conf", 'c', Some(("app", "2.0", true))),
            file("/etc/app.d/x.conf", 'e', None),
            file("/etc/app.d/y.conf", 'd', None)
        ]),
    )
    .await;
    assert_eq!(drift_alerts(&app).await.len(), 1);
    // The Trust Score's drift component loses 10 points for the unexplained file only.
    let score = body(app.get("/trust-score/v12/tenant", &app.owner).await).await;
    let d = score["components"]
        .as_array()
        .and_then(|c| c.iter().find(|x| x["id"] == "drift"))
        .expect("drift component");
    assert_eq!(d["score"], 90.0, "{d}");
    assert_eq!(d["reasons"][0]["code"], "unexplained_drift");
    assert!(
        d["reasons"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("/etc/app.d/x.conf"))
    );
    assert_eq!(d["reasons"][0]["subject_ref"], format!("agent:{}", host.id));
    let got = eventually(15, "a drift.ticket delivery", || async {
        let t = tickets(&hook);
        (!t.is_empty()).then_some(t)
    })
    .await;
    let t = got[0].json();
    assert_eq!(t["event"], "drift.ticket");
    assert_eq!(t["ticket"]["agent"]["id"], host.id.as_str());
    assert_eq!(t["ticket"]["agent"]["hostname"], "web-1");
    assert_eq!(t["ticket"]["path"], "/etc/app.d/x.conf");
    assert_eq!(t["ticket"]["baseline_sha256"], "b".repeat(64));
    assert_eq!(t["ticket"]["current_sha256"], "e".repeat(64));
    assert_eq!(t["ticket"]["rebase"]["rebase_id"], rb["rebase_id"]);
    assert_eq!(
        t["ticket"]["rebase"]["reason"],
        "deployed by hand, ticket OPS-12"
    );
    assert!(got[0].header("x-service-signature").starts_with("sha256="));
    assert!(t["tenant_id"].as_str().is_some() && t["timestamp"].as_str().is_some());
    // The same report again: nothing new.
    scan(
        &app,
        &host,
        json!([
            file("/etc/app.conf", 'c', Some(("app", "2.0", true))),
            file("/etc/app.d/x.conf", 'e', None),
            file("/etc/app.d/y.conf", 'd', None)
        ]),
    )
    .await;

    // An infrastructure service account's rebase raises no ticket after it. Only admins
    // make such tokens (CONTRACT 30).
    assert_eq!(
        app.post(
            "/api-tokens",
            &operator,
            json!({"name": "ansible", "scope": "write", "service": "infrastructure"}),
        )
        .await
        .status(),
        403
    );
    let r = app
        .post(
            "/api-tokens",
            &app.owner,
            json!({"name": "ansible", "scope": "write", "service": "infrastructure"}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let tok = body(r).await;
    assert_eq!(tok["service"], "infrastructure");
    let infra = Auth::Bearer(tok["token"].as_str().expect("token").to_owned());
    let rb2 = body(
        app.post(
            &rebase,
            &infra,
            json!({"paths": ["/etc/app.d/x.conf"], "reason": "ansible run 42"}),
        )
        .await,
    )
    .await;
    assert_eq!(rb2["by"]["type"], "api_token");
    assert_eq!(rb2["by"]["id"], tok["id"]);
    assert_eq!(rb2["paths"][0]["previous_sha256"], "b".repeat(64));
    scan(
        &app,
        &host,
        json!([
            file("/etc/app.conf", 'c', Some(("app", "2.0", true))),
            file("/etc/app.d/x.conf", 'f', None),
            file("/etc/app.d/y.conf", 'd', None)
        ]),
    )
    .await;
    assert_eq!(drift_alerts(&app).await.len(), 1, "the drift still alerts");
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert_eq!(
        tickets(&hook).len(),
        1,
        "no ticket after an infrastructure rebase"
    );

    // A file that goes away from under the glob is missing; a watched file gone is too.
    scan(
        &app,
        &host,
        json!([
            file("/etc/app.conf", 'c', Some(("app", "2.0", true))),
            file("/etc/app.d/y.conf", 'd', None)
        ]),
    )
    .await;
    let list = body(
        app.get(
            &format!("/drift?agent_id={}&status=missing", host.id),
            &app.owner,
        )
        .await,
    )
    .await;
    assert_eq!(list.as_array().map(Vec::len), Some(1), "{list}");
    assert_eq!(list[0]["path"], "/etc/app.d/x.conf");
    assert_eq!(list[0]["current"], Value::Null);
}

async fn governance_and_reports_are_validated_and_tenants_apart(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    // The default list until governance names one.
    let g = body(
        app.get(&format!("/agents/{}/governance", host.id), &app.owner)
            .await,
    )
    .await;
    assert!(
        g["config_paths"]
            .as_array()
            .is_some_and(|p| p.iter().any(|x| x == "/etc/ssh/sshd_config*")),
        "{g}"
    );
    assert_eq!(g["config_scan_interval_secs"], 3600);
    let put = |paths: Value, secs: i64| {
        json!({"ingest_interval_secs": 60, "inventory_interval_secs": 3600, "tags": [], "allowed_actions": [],
            "config_paths": paths, "config_scan_interval_secs": secs})
    };
    let url = format!("/agents/{}/governance", host.id);
    let p = assert_problem(
        app.send_json(
            reqwest::Method::PUT,
            &url,
            &app.owner,
            put(json!(["etc/passwd"]), 600),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert!(names_field(&p, "config_paths[0]"), "{p}");
    // CONTRACT 30: kernel and runtime trees are refused, naming the entry; so is a glob of
    // the first folder, which would reach them.
    for (paths, field) in [
        (json!(["/etc/hosts", "/proc/kmsg"]), "config_paths[1]"),
        (json!(["/sys/kernel/notes"]), "config_paths[0]"),
        (json!(["/etc/*", "/dev/zero"]), "config_paths[1]"),
        (json!(["/run/**"]), "config_paths[0]"),
        (json!(["/*/kmsg"]), "config_paths[0]"),
    ] {
        let p = assert_problem(
            app.send_json(
                reqwest::Method::PUT,
                &url,
                &app.owner,
                put(paths.clone(), 600),
            )
            .await,
            422,
            "validation_failed",
        )
        .await;
        assert!(names_field(&p, field), "{paths}: {p}");
    }
    let p = assert_problem(
        app.send_json(
            reqwest::Method::PUT,
            &url,
            &app.owner,
            put(json!(["/etc/passwd"]), 5),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert!(names_field(&p, "config_scan_interval_secs"), "{p}");
    let g = body(app.get(&url, &app.owner).await).await;
    assert_eq!(g["config_scan_interval_secs"], 3600, "nothing changed");

    // A bad entry in a scan refuses the whole batch, naming it; nothing is stored.
    let mut bad = file("/etc/passwd", 'a', None);
    bad["mode"] = json!("rw-r--r--");
    let b1 = json!({"batch_id": Uuid::new_v4(), "sent_at": ts(OffsetDateTime::now_utc()),
        "config_hashes": [file("/etc/group", 'a', None), bad]});
    let r = send(&app, &host, b1.to_string().as_bytes(), None, true).await;
    let p = assert_problem(r, 422, "validation_failed").await;
    assert!(names_field(&p, "config_hashes[1]"), "{p}");
    let mut unknown = file("/etc/passwd", 'a', None);
    unknown["contents"] = json!("root:x:0:0");
    let b2 = json!({"batch_id": Uuid::new_v4(), "sent_at": ts(OffsetDateTime::now_utc()), "config_hashes": [unknown]});
    assert_eq!(
        send(&app, &host, b2.to_string().as_bytes(), None, true)
            .await
            .status(),
        422
    );
    let list = body(
        app.get(&format!("/agents/{}/config-hashes", host.id), &app.owner)
            .await,
    )
    .await;
    assert_eq!(list, json!([]));
    assert_problem(
        app.get("/drift?status=weird", &app.owner).await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(app.get("/drift?colour=red", &app.owner).await.status(), 400);

    // Another tenant sees nothing of this host.
    scan(&app, &host, json!([file("/etc/passwd", 'a', None)])).await;
    let other = app.other_tenant().await;
    assert_problem(
        app.get(&format!("/agents/{}/config-hashes", host.id), &other)
            .await,
        404,
        "not_found",
    )
    .await;
    assert_eq!(body(app.get("/drift", &other).await).await, json!([]));
    assert_problem(
        app.post(
            &format!("/agents/{}/config-hashes/rebase", host.id),
            &other,
            json!({"paths": ["/etc/passwd"], "reason": "x"}),
        )
        .await,
        404,
        "not_found",
    )
    .await;
    // A service other than infrastructure is refused.
    let p = assert_problem(
        app.post(
            "/api-tokens",
            &app.owner,
            json!({"name": "x", "scope": "write", "service": "terraform"}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert!(names_field(&p, "service"), "{p}");
}

async fn an_operator_rebases_from_the_host_drift_tab(b: Backend) {
    let app = TestApp::spawn(b).await;
    let Some(browser) = crate::webdriver::Browser::start(&format!("drift-{b:?}")).await else {
        return;
    };
    let host = register(&app).await;
    watch(
        &app,
        &app.owner,
        &host,
        &["/etc/ssh/sshd_config", "/etc/nginx/*"],
    )
    .await;
    scan(
        &app,
        &host,
        json!([file(
            "/etc/ssh/sshd_config",
            'a',
            Some(("openssh-server", "1:9.2", true))
        )]),
    )
    .await;
    let mut changed = file(
        "/etc/ssh/sshd_config",
        'b',
        Some(("openssh-server", "1:9.2", false)),
    );
    changed["mode"] = json!("0666");
    scan(&app, &host, json!([changed])).await;
    browser
        .sign_in(&app.base, OWNER_EMAIL, OWNER_PASSWORD)
        .await;
    browser.goto(&format!("{}/", app.base)).await;
    browser.click("a[href='/ui/drift']").await;
    let page = browser.wait_text("Configuration drift").await;
    assert!(
        page.contains("/etc/ssh/sshd_config") && page.contains("unexplained"),
        "{page}"
    );
    browser
        .click(&format!("a[href='/ui/agents/{}/drift']", host.id))
        .await;
    let page = browser.wait_text("configuration drift").await;
    assert!(
        page.contains("0644") && page.contains("0666"),
        "the mode's diff: {page}"
    );
    browser.screenshot("drift-host").await;
    browser
        .click("input[name=path][value='/etc/ssh/sshd_config']")
        .await;
    browser
        .type_into("form#rebase input[name=reason]", "hardened by hand")
        .await;
    browser.click("form#rebase button[type=submit]").await;
    let page = browser.wait_text("Rebased 1 path").await;
    assert!(page.contains("hardened by hand"), "{page}");
    let list = body(
        app.get(&format!("/agents/{}/config-hashes", host.id), &app.owner)
            .await,
    )
    .await;
    assert_eq!(list[0]["status"], "ok");
    assert_eq!(list[0]["baseline"]["mode"], "0666");
    browser.assert_no_js_errors().await;
}

/// CONTRACT 30: a glob's matches are baselined at the first scan that carries the glob
/// (`config_patterns`), not at the first scan after governance named it: a scan made with
/// the old patterns arriving meanwhile does not make the glob known.
async fn a_glob_added_later_baselines_what_it_finds_at_its_first_scan(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    watch(&app, &app.owner, &host, &["/etc/app.conf"]).await;
    let with = |files: Value, patterns: &[&str]| {
        json!({"batch_id": Uuid::new_v4(), "sent_at": ts(OffsetDateTime::now_utc()),
            "config_hashes": files, "config_patterns": patterns})
    };
    let push = |b: Value| {
        let app = &app;
        let host = &host;
        async move {
            let r = send(app, host, b.to_string().as_bytes(), None, true).await;
            assert_eq!(r.status(), 202);
        }
    };
    push(with(
        json!([file("/etc/app.conf", 'a', None)]),
        &["/etc/app.conf"],
    ))
    .await;
    // Governance adds a glob; a scan the agent made before it heard arrives first.
    watch(&app, &app.owner, &host, &["/etc/app.conf", "/etc/app.d/*"]).await;
    push(with(
        json!([file("/etc/app.conf", 'a', None)]),
        &["/etc/app.conf"],
    ))
    .await;
    // The first scan with the glob: what it finds is the baseline, not `new`.
    push(with(
        json!([
            file("/etc/app.conf", 'a', None),
            file("/etc/app.d/old.conf", 'b', None)
        ]),
        &["/etc/app.conf", "/etc/app.d/*"],
    ))
    .await;
    let list = body(
        app.get(&format!("/agents/{}/config-hashes", host.id), &app.owner)
            .await,
    )
    .await;
    let old = row(&list, "/etc/app.d/old.conf");
    assert_eq!(old["status"], "ok", "{list}");
    assert_eq!(old["baseline"]["sha256"], "b".repeat(64));
    // A file appearing under the glob after that is new.
    push(with(
        json!([
            file("/etc/app.conf", 'a', None),
            file("/etc/app.d/old.conf", 'b', None),
            file("/etc/app.d/later.conf", 'c', None)
        ]),
        &["/etc/app.conf", "/etc/app.d/*"],
    ))
    .await;
    let list = body(
        app.get(&format!("/agents/{}/config-hashes", host.id), &app.owner)
            .await,
    )
    .await;
    assert_eq!(
        row(&list, "/etc/app.d/later.conf")["status"],
        "new",
        "{list}"
    );
    // Patterns without a scan, or too many, are refused naming the field.
    let r = send(
        &app,
        &host,
        json!({"batch_id": Uuid::new_v4(), "sent_at": ts(OffsetDateTime::now_utc()),
            "config_patterns": ["/etc/app.conf"]})
        .to_string()
        .as_bytes(),
        None,
        true,
    )
    .await;
    let p = assert_problem(r, 422, "validation_failed").await;
    assert!(names_field(&p, "config_patterns"), "{p}");
    // Special and too-large entries are stored as the agent saw them.
    let mut fifo = file("/etc/app.d/pipe", 'x', None);
    fifo["kind"] = json!("special");
    fifo["sha256"] = Value::Null;
    let mut huge = file("/etc/app.d/huge.img", 'x', None);
    huge["kind"] = json!("too_large");
    huge["sha256"] = Value::Null;
    huge["size"] = json!(42_949_672_960_u64);
    push(with(
        json!([
            file("/etc/app.conf", 'a', None),
            file("/etc/app.d/old.conf", 'b', None),
            fifo,
            huge
        ]),
        &["/etc/app.conf", "/etc/app.d/*"],
    ))
    .await;
    let list = body(
        app.get(&format!("/agents/{}/config-hashes", host.id), &app.owner)
            .await,
    )
    .await;
    assert_eq!(
        row(&list, "/etc/app.d/pipe")["current"]["kind"],
        "special",
        "{list}"
    );
    assert_eq!(
        row(&list, "/etc/app.d/huge.img")["current"]["size"],
        42_949_672_960_u64
    );
}
