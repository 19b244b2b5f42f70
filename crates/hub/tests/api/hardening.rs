//! CONTRACT 18: hostile and careless input to every path. Each test here is the regression
//! test of a finding of issue 27 (it failed before the fix): the hub answers a 4xx, stores
//! nothing and keeps running.

use crate::cve::{bytes, flat_zip, python_zip, record, upload};
use crate::harness::*;
use serde_json::{Value, json};
use std::io::Write;
use std::process::Command;

crate::dual!(
    hostile_archives_are_refused_and_the_hub_keeps_running,
    an_import_is_all_or_nothing_and_audited,
    records_the_hub_cannot_evaluate_are_stored_and_counted,
    misspelt_ingest_fields_and_duplicate_keys_are_refused_and_store_nothing,
    the_hub_calls_no_loopback_or_private_address_in_any_spelling,
    sign_in_needs_this_site_and_next_stays_local,
    a_read_token_changes_nothing_and_an_ai_ingest_token_reaches_only_the_intake,
    client_request_ids_are_kept_only_when_plain,
    csv_cells_are_never_formulas,
    invitations_never_say_another_tenant_has_an_email,
    passwords_in_outbound_urls_are_sealed_and_never_shown,
    a_name_that_resolves_to_a_refused_address_at_delivery_fails_it,
    a_database_failure_is_503_without_driver_text,
    the_hub_reads_whether_the_database_cleans_up_after_updates,
);

/// Slowloris: headers dripped byte by byte are cut; a connection cap holds the rest back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_clients_are_cut_off_and_connections_are_capped() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = TestApp::spawn_with(Backend::Sqlite, |s| s.max_connections = 3).await;
    let addr = app.base.trim_start_matches("http://").to_owned();
    // Headers that never finish: the hub closes the connection (10 s), without an answer.
    let mut slow = tokio::net::TcpStream::connect(&addr)
        .await
        .expect("connect");
    slow.write_all(b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\n")
        .await
        .expect("partial head");
    let mut buf = [0u8; 256];
    let closed = tokio::time::timeout(std::time::Duration::from_secs(40), slow.read(&mut buf))
        .await
        .expect("the hub closes a connection whose headers never end");
    assert!(matches!(closed, Ok(0) | Err(_)), "{closed:?}");
    // Three idle connections take every slot: the fourth waits until one closes.
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(
            tokio::net::TcpStream::connect(&addr)
                .await
                .expect("connect"),
        );
    }
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let waiting = tokio::spawn({
        let url = app.url("/health");
        async move {
            reqwest::Client::new()
                .get(url)
                .send()
                .await
                .map(|r| r.status())
        }
    });
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert!(
        !waiting.is_finished(),
        "no fourth connection is served while three are open"
    );
    drop(held.pop());
    let status = tokio::time::timeout(std::time::Duration::from_secs(30), waiting)
        .await
        .expect("served once a slot is free")
        .expect("task")
        .expect("request");
    assert_eq!(status, 200);
}

/// A zip written by the `zip` crate, entries stored (not compressed).
fn stored_zip(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    let mut w = zip::ZipWriter::new(&mut out);
    let opts =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (name, data) in entries {
        w.start_file(*name, opts).expect("start");
        w.write_all(data).expect("write");
    }
    w.finish().expect("finish");
    out.into_inner()
}

/// A zip (made by Python's zlib, fast even for a GiB) holding `name` of `size` bytes of `fill`.
fn bomb(name: &str, size: u64, fill: &str) -> Vec<u8> {
    let dir = TempDir::new();
    let path = dir.0.join("bomb.zip");
    let script = r#"
import sys, zipfile
path, name, size, fill = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].encode()
chunk = fill * (1048576 // len(fill))
with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
    with z.open(name, "w", force_zip64=True) as f:
        left = size
        while left > 0:
            n = min(left, len(chunk))
            f.write(chunk[:n])
            left -= n
"#;
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(&path)
        .args([name, &size.to_string(), fill])
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read(path).expect("zip")
}

/// Uploads `zip` and asserts the refusal, its problem naming `name`.
async fn refused_naming(app: &TestApp, zip: Vec<u8>, status: u16, code: &str, name: &str) {
    let p = assert_problem(
        upload(app, &app.owner, zip, "application/zip").await,
        status,
        code,
    )
    .await;
    assert!(
        p["detail"].as_str().is_some_and(|d| d.contains(name)),
        "{p}"
    );
}

async fn assert_alive_and_empty(app: &TestApp) {
    assert_eq!(app.get("/health", &Auth::None).await.status(), 200);
    assert_eq!(app.count("SELECT COUNT(*) FROM osv_advisories").await, 0);
}

async fn hostile_archives_are_refused_and_the_hub_keeps_running(b: Backend) {
    let app = TestApp::spawn_with(b, |s| s.import_max_bytes = 200 * 1024 * 1024).await;
    let good = bytes(&record(
        "GHSA-ok",
        "2024-01-01T00:00:00Z",
        "npm",
        "x",
        json!({}),
    ));

    // 2,500 zips each inside the next (about 270 KB): the process used to die on its stack.
    let mut nested = stored_zip(&[("GHSA-ok.json", &good)]);
    for level in 0..2500 {
        nested = stored_zip(&[(&format!("l{level}.zip"), &nested)]);
    }
    let p = assert_problem(
        upload(&app, &app.owner, nested, "application/zip").await,
        422,
        "validation_failed",
    )
    .await;
    assert!(
        names_field(&p, "upload!l2499.zip!l2498.zip"),
        "the entry is named: {p}"
    );
    assert_alive_and_empty(&app).await;

    // One entry of 1 GiB in a 1 MB zip: stopped at the 64 MiB record bound.
    refused_naming(
        &app,
        bomb("bomb.json", 1 << 30, " "),
        413,
        "payload_too_large",
        "bomb.json",
    )
    .await;
    assert_alive_and_empty(&app).await;

    // Many records under the record bound, over TRUSTHUB_IMPORT_MAX_BYTES (200 MiB here).
    let record_of = |id: &str| {
        let mut r = record(id, "2024-01-01T00:00:00Z", "npm", "x", json!({}));
        r["details"] = json!(" ".repeat(30 * 1024 * 1024));
        bytes(&r)
    };
    let files: Vec<(String, Vec<u8>)> = (0..8)
        .map(|i| (format!("R-{i}.json"), record_of(&format!("R-{i}"))))
        .collect();
    let zip = flat_zip(&files);
    drop(files);
    assert_problem(
        upload(&app, &app.owner, zip, "application/zip").await,
        413,
        "payload_too_large",
    )
    .await;
    assert_alive_and_empty(&app).await;

    // A 4 MB record that parses into a huge structure: refused before parsing.
    let mut huge = record("GHSA-huge", "2024-01-01T00:00:00Z", "npm", "x", json!({}));
    huge["affected"] = Value::Array(vec![json!({}); 1_000_000]);
    refused_naming(
        &app,
        python_zip(&[("huge.json", bytes(&huge))], None),
        413,
        "payload_too_large",
        "huge.json",
    )
    .await;

    // JSON nested deeper than 128, and a duplicate key: 400 naming the file.
    let deep = format!(
        "{{\"id\":\"X\",\"modified\":\"2024-01-01T00:00:00Z\",\"database_specific\":{}{}}}",
        "[".repeat(200),
        "]".repeat(200)
    );
    let dup = br#"{"id": "A", "id": "B", "modified": "2024-01-01T00:00:00Z"}"#.to_vec();
    for (name, body) in [("deep.json", deep.into_bytes()), ("dup.json", dup)] {
        refused_naming(
            &app,
            python_zip(&[(name, body)], None),
            400,
            "bad_request",
            name,
        )
        .await;
    }

    // An entry that decompresses to more than its header declares: a malformed archive.
    let mut lying = python_zip(&[("GHSA-ok.json", good.clone())], None);
    shrink_declared_sizes(&mut lying, 10);
    assert_problem(
        upload(&app, &app.owner, lying, "application/zip").await,
        400,
        "bad_request",
    )
    .await;
    assert_alive_and_empty(&app).await;

    // The hub still imports a good upload afterwards.
    let ok = upload(
        &app,
        &app.owner,
        python_zip(&[("GHSA-ok.json", good)], None),
        "application/zip",
    )
    .await;
    assert_eq!(ok.status(), 200);
    assert_eq!(app.count("SELECT COUNT(*) FROM osv_advisories").await, 1);
}

/// Sets the uncompressed size of every entry (local header and central directory) to `size`.
fn shrink_declared_sizes(zip: &mut [u8], size: u32) {
    let mut i = 0;
    while i + 4 <= zip.len() {
        match &zip[i..i + 4] {
            [0x50, 0x4b, 0x03, 0x04] => {
                zip[i + 22..i + 26].copy_from_slice(&size.to_le_bytes());
                i += 30;
            }
            [0x50, 0x4b, 0x01, 0x02] => {
                zip[i + 24..i + 28].copy_from_slice(&size.to_le_bytes());
                i += 46;
            }
            _ => i += 1,
        }
    }
}

async fn an_import_is_all_or_nothing_and_audited(b: Backend) {
    let app = TestApp::spawn(b).await;
    // 601 records, the 501st and the last of them broken: nothing stored, both named.
    let mut files: Vec<(String, Vec<u8>)> = (0..601)
        .map(|i| {
            let id = format!("GHSA-{i:04}");
            (
                format!("{id}.json"),
                bytes(&record(
                    &id,
                    "2024-01-01T00:00:00Z",
                    "npm",
                    &format!("p{i}"),
                    json!({}),
                )),
            )
        })
        .collect();
    files[500].1 = br#"{"id": 1}"#.to_vec();
    files[600].1 = br#"{"id": "GHSA-0600", "modified": "yesterday"}"#.to_vec();
    let p = assert_problem(
        upload(&app, &app.owner, flat_zip(&files), "application/zip").await,
        422,
        "validation_failed",
    )
    .await;
    let errors = p["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 2, "{p}");
    assert!(names_field(&p, "upload!GHSA-0500.json"), "{p}");
    assert!(names_field(&p, "upload!GHSA-0600.json"), "{p}");
    assert_eq!(app.count("SELECT COUNT(*) FROM osv_advisories").await, 0);
    assert_eq!(app.count("SELECT COUNT(*) FROM osv_packages").await, 0);
    let audit = body(
        app.get("/audit-log?event_type=cve_import_failed", &app.owner)
            .await,
    )
    .await;
    assert_eq!(audit.as_array().map(Vec::len), Some(1), "{audit}");
    assert_eq!(audit[0]["details"]["reason"], "invalid_records", "{audit}");
    // Fixed, the same upload stores all 601, audited with its counts.
    files[500].1 = bytes(&record(
        "GHSA-0500",
        "2024-01-01T00:00:00Z",
        "npm",
        "p500",
        json!({}),
    ));
    files[600].1 = bytes(&record(
        "GHSA-0600",
        "2024-01-01T00:00:00Z",
        "npm",
        "p600",
        json!({}),
    ));
    let r = upload(&app, &app.owner, flat_zip(&files), "application/zip").await;
    assert_eq!(r.status(), 200);
    assert_eq!(body(r).await["inserted"], 601);
    let audit = body(
        app.get("/audit-log?event_type=cve_import", &app.owner)
            .await,
    )
    .await;
    assert_eq!(audit[0]["details"]["inserted"], 601, "{audit}");
}

async fn records_the_hub_cannot_evaluate_are_stored_and_counted(b: Backend) {
    let app = TestApp::spawn(b).await;
    let hackage = record(
        "HSEC-1",
        "2024-01-01T00:00:00Z",
        "Hackage",
        "aeson",
        json!({}),
    );
    let bad_range = record(
        "GHSA-r",
        "2024-01-01T00:00:00Z",
        "npm",
        "y",
        json!({"affected": [{"package": {"ecosystem": "npm", "name": "y"},
            "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "one.two"}]}]}]}),
    );
    let good = record("GHSA-g", "2024-01-01T00:00:00Z", "npm", "z", json!({}));
    let r = upload(
        &app,
        &app.owner,
        python_zip(
            &[
                ("HSEC-1.json", bytes(&hackage)),
                ("GHSA-r.json", bytes(&bad_range)),
                ("GHSA-g.json", bytes(&good)),
            ],
            None,
        ),
        "application/zip",
    )
    .await;
    assert_eq!(r.status(), 200);
    let report = body(r).await;
    assert_eq!(report["inserted"], 3, "{report}");
    assert_eq!(report["skipped_count"], 2, "{report}");
    let skipped = report["skipped"].to_string();
    assert!(
        skipped.contains("HSEC-1.json") && skipped.contains("Hackage"),
        "{report}"
    );
    assert!(
        skipped.contains("GHSA-r.json") && skipped.contains("one.two"),
        "{report}"
    );
}

async fn misspelt_ingest_fields_and_duplicate_keys_are_refused_and_store_nothing(b: Backend) {
    use crate::agents::{register, send, ts};
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    let now = time::OffsetDateTime::now_utc();
    let id = uuid::Uuid::new_v4();
    let typos = json!({
        "batch_id": id,
        "sent_at": ts(now),
        "metrics": [
            {"name": "cpu.percent", "ts": ts(now), "value": 1.0},
            {"name": "disk.used_bytes", "ts": ts(now), "value": 2.0, "lables": {"mount": "/"}}
        ],
        "inventroy": {"collected_at": ts(now)},
        "app_checks": [{"app_id": uuid::Uuid::new_v4(), "checked_at": ts(now), "ok": false, "statuscode": 500}],
    });
    let p = assert_problem(
        send(&app, &host, typos.to_string().as_bytes(), None, true).await,
        422,
        "validation_failed",
    )
    .await;
    for field in ["metrics[1].lables", "inventroy", "app_checks[0].statuscode"] {
        assert!(names_field(&p, field), "{field} is named: {p}");
    }
    let top = json!({"batch_id": uuid::Uuid::new_v4(), "sent_at": ts(now), "metircs": []});
    let p = assert_problem(
        send(&app, &host, top.to_string().as_bytes(), None, true).await,
        422,
        "validation_failed",
    )
    .await;
    assert!(names_field(&p, "metircs"), "{p}");
    // The inventory is read into the hub's types once, at ingest: a field the hub reads
    // with the wrong type is named by its path, and nothing of the batch is kept.
    let wrong = json!({
        "batch_id": uuid::Uuid::new_v4(),
        "sent_at": ts(now),
        "metrics": [{"name": "cpu.percent", "ts": ts(now), "value": 1.0}],
        "inventory": {"collected_at": ts(now), "listening": [{"proto": "tcp", "port": "ssh"}],
                      "packages": {"name": "curl"}},
        "live": {"systemd": [{"unit": 7}]},
    });
    let p = assert_problem(
        send(&app, &host, wrong.to_string().as_bytes(), None, true).await,
        422,
        "validation_failed",
    )
    .await;
    for field in [
        "inventory.listening[0].port",
        "inventory.packages",
        "live.systemd[0].unit",
    ] {
        assert!(names_field(&p, field), "{field} is named: {p}");
    }
    assert_eq!(
        app.count("SELECT COUNT(*) FROM inventory_snapshots").await,
        0
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM metric_points").await, 0);
    // A duplicate key: which one a parser keeps differs, so neither is taken.
    let dup = format!(
        r#"{{"batch_id": "{}", "sent_at": "{}", "metrics": [{{"name": "cpu.percent", "ts": "{}", "value": 1.0, "value": 99.0}}]}}"#,
        uuid::Uuid::new_v4(),
        ts(now),
        ts(now)
    );
    let p = assert_problem(
        send(&app, &host, dup.as_bytes(), None, true).await,
        400,
        "bad_request",
    )
    .await;
    assert!(
        p["detail"]
            .as_str()
            .is_some_and(|d| d.contains("duplicate key `value`") && d.contains("$.metrics[0]")),
        "{p}"
    );
    // Too deep on every JSON path.
    let deep = format!("{{\"a\": {}{}}}", "[".repeat(200), "]".repeat(200));
    assert_problem(
        send(&app, &host, deep.as_bytes(), None, true).await,
        400,
        "bad_request",
    )
    .await;
    assert_problem(
        app.req(reqwest::Method::POST, "/api-tokens", &app.owner)
            .header("content-type", "application/json")
            .body(r#"{"name": "a", "name": "b", "scope": "read"}"#)
            .send()
            .await
            .expect("r"),
        400,
        "bad_request",
    )
    .await;
    assert_eq!(app.count("SELECT COUNT(*) FROM metric_points").await, 0);
    // The good batch still goes in.
    let good = json!({"batch_id": uuid::Uuid::new_v4(), "sent_at": ts(now),
        "metrics": [{"name": "cpu.percent", "ts": ts(now), "value": 1.0, "labels": {"core": "0"}}]});
    assert_eq!(
        send(&app, &host, good.to_string().as_bytes(), None, true)
            .await
            .status(),
        202
    );
}

/// The hub was a port scanner: webhooks and alert-rule URLs reached loopback and private
/// addresses, and http apps sent agents to the cloud metadata service.
async fn the_hub_calls_no_loopback_or_private_address_in_any_spelling(b: Backend) {
    let app = TestApp::spawn_with(b, |s| s.outbound_allow_cidrs = String::new()).await;
    let refused = [
        "http://127.0.0.1:9/hook",
        "http://2130706433/hook",
        "http://0177.0.0.1/hook",
        "http://0x7f000001/hook",
        "http://10.0.0.5/hook",
        "http://192.168.1.1/hook",
        "http://100.64.0.1/hook",
        "http://0.0.0.0/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://[fc00::1]/hook",
        "http://localhost:9/hook",
    ];
    for url in refused {
        let p = assert_problem(
            app.post("/webhooks", &app.owner, json!({"url": url})).await,
            422,
            "validation_failed",
        )
        .await;
        assert!(names_field(&p, "url"), "{url}: {p}");
        let rule = json!({"name": "r", "metric": "cpu.percent", "operator": ">", "threshold": 1,
            "window": "5m", "webhook_url": url});
        let p = assert_problem(
            app.post("/alert-rules", &app.owner, rule).await,
            422,
            "validation_failed",
        )
        .await;
        assert!(names_field(&p, "webhook_url"), "{url}: {p}");
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM webhooks").await, 0);
    assert_eq!(app.count("SELECT COUNT(*) FROM alert_rules").await, 0);

    // Agents may check their own networks, never the metadata service.
    let host = crate::agents::register(&app).await;
    for url in [
        "http://169.254.169.254/latest/meta-data",
        "http://2852039166/latest/meta-data",
        "http://[fd00:ec2::254]/",
        "http://[::ffff:169.254.169.254]/",
    ] {
        let p = assert_problem(
            app.post(
                "/apps",
                &app.owner,
                json!({"agent_id": host.id, "name": "meta", "type": "http", "endpoint": url, "interval_seconds": 30}),
            )
            .await,
            422,
            "validation_failed",
        )
        .await;
        assert!(names_field(&p, "endpoint"), "{url}: {p}");
    }
    let r = app
        .post(
            "/apps",
            &app.owner,
            json!({"agent_id": host.id, "name": "local", "type": "http", "endpoint": "http://127.0.0.1:8080/health", "interval_seconds": 30}),
        )
        .await;
    assert_eq!(r.status(), 201, "an agent's own loopback is its to check");

    // With the range allowed by the operator, a local receiver is fine.
    let open = TestApp::spawn_with(b, |s| s.outbound_allow_cidrs = "127.0.0.0/8".into()).await;
    let r = open
        .post(
            "/webhooks",
            &open.owner,
            json!({"url": "http://2130706433:9/hook"}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let p = assert_problem(
        open.post(
            "/webhooks",
            &open.owner,
            json!({"url": "http://10.0.0.5/hook"}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert!(names_field(&p, "url"), "{p}");
}

fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

async fn sign_in_needs_this_site_and_next_stays_local(b: Backend) {
    let app = TestApp::spawn(b).await;
    let web = no_redirects();
    let form = format!(
        "email={}&password={}",
        OWNER_EMAIL.replace('@', "%40"),
        OWNER_PASSWORD.replace(' ', "+")
    );
    let post = |next: &str, origin: Option<String>, referer: Option<String>| {
        let mut r = web
            .post(format!("{}/login?next={next}", app.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form.clone());
        if let Some(o) = origin {
            r = r.header("origin", o);
        }
        if let Some(f) = referer {
            r = r.header("referer", f);
        }
        r.send()
    };
    // Login CSRF: no Origin or Referer, or another site's, is 403 and no session.
    for (origin, referer) in [
        (None, None),
        (Some("https://evil.example".to_owned()), None),
        (None, Some("https://evil.example/login".to_owned())),
        (Some("null".to_owned()), None),
    ] {
        let r = post("/", origin.clone(), referer.clone())
            .await
            .expect("post");
        assert_eq!(r.status(), 403, "{origin:?} {referer:?}");
        assert!(r.headers().get("set-cookie").is_none(), "no session");
    }
    // From this site (Origin, or only a Referer): signed in, sent to a local `next` only.
    let here = app.base.clone();
    for (next, to) in [
        ("/ui/agents", "/ui/agents"),
        ("//evil.example/x", "/"),
        ("/%5Cevil.example", "/"),
        ("/%5C/evil.example", "/"),
        ("/%09/evil.example", "/"),
        ("/ui%0D%0ASet-Cookie:%20x=1", "/"),
        ("https://evil.example", "/"),
    ] {
        let r = post(next, Some(here.clone()), None).await.expect("post");
        assert_eq!(r.status(), 303, "{next}");
        assert_eq!(r.headers()["location"], to, "{next}");
    }
    let r = post("/ui/agents", None, Some(format!("{here}/login")))
        .await
        .expect("post");
    assert_eq!(r.status(), 303);
}

async fn a_read_token_changes_nothing_and_an_ai_ingest_token_reaches_only_the_intake(b: Backend) {
    let app = TestApp::spawn(b).await;
    let (_, write_id) = app.token(&app.owner, "write").await;
    let (read, _) = app.token(&app.owner, "read").await;
    let read = Auth::Bearer(read);
    // Refused as what it is (CONTRACT 33), not as a role the user lacks.
    let p = assert_problem(
        app.delete(&format!("/api-tokens/{write_id}"), &read).await,
        403,
        "token_read_only",
    )
    .await;
    assert!(
        p["detail"]
            .as_str()
            .is_some_and(|d| d.contains("this token can only read")),
        "{p}"
    );
    let p = assert_problem(
        app.post("/alert-rules", &read, json!({"name": "x"})).await,
        403,
        "token_read_only",
    )
    .await;
    assert!(
        !p["detail"].as_str().unwrap_or_default().contains("role"),
        "{p}"
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM api_tokens").await,
        2,
        "the write token is still there"
    );
    assert_eq!(
        app.get("/me", &read).await.status(),
        200,
        "a read token reads"
    );
    let (ai, _) = app.token(&app.owner, "ai_ingest").await;
    let ai = Auth::Bearer(ai);
    for path in ["/me", "/agents", "/api-tokens", "/audit-log"] {
        assert_problem(app.get(path, &ai).await, 403, "forbidden").await;
    }
    let r = app.post("/ai/traces", &ai, json!({"traces": []})).await;
    assert_ne!(r.status(), 403, "the intake is open to it");
}

async fn client_request_ids_are_kept_only_when_plain(b: Backend) {
    let app = TestApp::spawn(b).await;
    let id_of = |r: &reqwest::Response| {
        r.headers()
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .expect("every answer carries x-request-id")
    };
    let plain = app
        .req(reqwest::Method::GET, "/me", &app.owner)
        .header("x-request-id", "ci-run_42.7")
        .send()
        .await
        .expect("r");
    assert_eq!(id_of(&plain), "ci-run_42.7");
    for bad in [
        "has space",
        "<script>",
        &"x".repeat(65),
        "a\u{7f}b",
        "\"quoted\"",
    ] {
        let Ok(value) = reqwest::header::HeaderValue::from_str(bad) else {
            continue;
        };
        let r = app
            .req(reqwest::Method::POST, "/api-tokens", &app.owner)
            .header("x-request-id", value)
            .json(&json!({"name": "t", "scope": "read"}))
            .send()
            .await
            .expect("r");
        let id = id_of(&r);
        assert_ne!(id, bad, "{bad}");
        assert!(uuid::Uuid::parse_str(&id).is_ok(), "the hub's own: {id}");
    }
    let audit = body(
        app.get("/audit-log?event_type=api_token_created", &app.owner)
            .await,
    )
    .await;
    for row in audit.as_array().expect("rows") {
        let id = row["request_id"].as_str().unwrap_or_default();
        assert!(uuid::Uuid::parse_str(id).is_ok(), "{row}");
    }
}

async fn csv_cells_are_never_formulas(b: Backend) {
    let app = TestApp::spawn(b).await;
    let (ingest, _) = app.token(&app.owner, "ai_ingest").await;
    let t0 = "2026-11-05T08:00:00Z";
    let mut traces = Vec::new();
    for (i, team) in [
        "=HYPERLINK(\"http://evil.example\",\"x\")",
        "+1",
        "-1+2",
        "@SUM(A1)",
        "plain",
    ]
    .iter()
    .enumerate()
    {
        traces.push(json!({"trace_id": format!("t{i}"), "name": "answer", "team": team,
            "started_at": t0, "ended_at": t0, "calls": [{"span_id": format!("s{i}"), "model": "gpt-4o",
            "prompt_tokens": 1, "completion_tokens": 1, "latency_ms": 1,
            "prompt_sha256": "0".repeat(64), "refused": false}]}));
    }
    let r = app
        .post(
            "/ai/traces",
            &Auth::Bearer(ingest),
            json!({"traces": traces}),
        )
        .await;
    assert_eq!(r.status(), 202);
    let csv = app
        .get("/ai/teams/export.csv?month=2026-11", &app.owner)
        .await
        .text()
        .await
        .expect("csv");
    for line in csv.split("\r\n").skip(1).filter(|l| !l.is_empty()) {
        let first = line.trim_start_matches('"');
        assert!(
            !first.starts_with(['=', '+', '-', '@']),
            "a cell that a spreadsheet would run: {line}"
        );
    }
    assert!(csv.contains("\"'=HYPERLINK("), "{csv}");
    assert!(csv.contains("'+1,") && csv.contains("'@SUM(A1),"), "{csv}");
}

async fn invitations_never_say_another_tenant_has_an_email(b: Backend) {
    let app = TestApp::spawn(b).await;
    let other = app.other_tenant().await;
    let theirs = body(app.get("/me", &other).await).await["user"]["email"]
        .as_str()
        .expect("email")
        .to_owned();
    let invite = |email: String| {
        app.post(
            "/invitations",
            &app.owner,
            json!({"email": email, "role": "viewer"}),
        )
    };
    let unknown = invite("nobody-anywhere@example.org".into()).await;
    let known_elsewhere = invite(theirs.clone()).await;
    assert_eq!(unknown.status(), 201);
    assert_eq!(
        known_elsewhere.status(),
        201,
        "the same answer as for an unknown email"
    );
    let (a, b2) = (body(unknown).await, body(known_elsewhere).await);
    let keys = |v: &Value| {
        let mut k: Vec<String> = v.as_object().expect("object").keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(keys(&a), keys(&b2));
    // Accepting it is refused to the invitee, who knows their own account.
    let r = app
        .post(
            "/auth/accept-invite",
            &Auth::None,
            json!({"token": b2["token"], "password": "a long enough password"}),
        )
        .await;
    assert_problem(r, 409, "conflict").await;
    // This tenant's own user is named, as before.
    assert_problem(invite(OWNER_EMAIL.into()).await, 409, "conflict").await;
}

async fn passwords_in_outbound_urls_are_sealed_and_never_shown(b: Backend) {
    let app = TestApp::spawn(b).await;
    let rx = Receiver::start(&[]).await;
    let secret_url = rx.url.replace("http://", "http://hookuser:s3cret-pass@");
    let shown = rx.url.replace("http://", "http://***@");
    let r = app
        .post("/webhooks", &app.owner, json!({"url": secret_url}))
        .await;
    assert_eq!(r.status(), 201);
    let w = body(r).await;
    assert_eq!(w["url"], shown.as_str(), "{w}");
    let id = w["id"].as_str().expect("id").to_owned();
    // A change that leaves the URL keeps its password.
    let r = app
        .patch(
            &format!("/webhooks/{id}"),
            &app.owner,
            json!({"min_severity": "info"}),
        )
        .await;
    assert_eq!(r.status(), 200);
    let r = app
        .post(&format!("/webhooks/{id}/test"), &app.owner, json!({}))
        .await;
    assert_eq!(r.status(), 202);
    assert_eq!(
        body(r).await["target_url"]
            .as_str()
            .unwrap_or(shown.as_str()),
        shown.as_str()
    );
    // Delivered with the password (HTTP basic authentication from the URL's userinfo).
    trusthub_hub::workers::deliver_due(&app.state, &reqwest::Client::new())
        .await
        .expect("deliver");
    let got = rx.wait_for(1, 10).await;
    let auth = got[0].header("authorization");
    assert_eq!(
        auth,
        format!(
            "Basic {}",
            data_encoding::BASE64.encode(b"hookuser:s3cret-pass")
        )
    );
    // A rule's webhook URL too.
    let rule = json!({"name": "r", "metric": "cpu.percent", "operator": ">", "threshold": 1,
        "window": "5m", "webhook_url": secret_url});
    let r = app.post("/alert-rules", &app.owner, rule).await;
    assert_eq!(r.status(), 201);
    assert_eq!(body(r).await["webhook_url"], shown.as_str());
    // Nowhere in clear: answers, the audit log, the tables.
    for path in ["/webhooks", "/alert-rules", "/audit-log"] {
        let text = app.get(path, &app.owner).await.text().await.expect("text");
        assert!(!text.contains("s3cret-pass"), "{path}: {text}");
    }
    for sql in [
        "SELECT COUNT(*) FROM webhooks WHERE url LIKE '%s3cret%'",
        "SELECT COUNT(*) FROM alert_rules WHERE webhook_url LIKE '%s3cret%'",
        "SELECT COUNT(*) FROM webhook_deliveries WHERE target_url LIKE '%s3cret%'",
        "SELECT COUNT(*) FROM audit_log WHERE CAST(details AS TEXT) LIKE '%s3cret%'",
    ] {
        assert_eq!(app.count(sql).await, 0, "{sql}");
    }
}

/// Names are judged again when a delivery connects: a name that resolves to a refused address
/// then fails the delivery, whatever it resolved to when the endpoint was saved. (The endpoint
/// is saved by a hub that allows loopback; the hub is then restarted on the default policy, and
/// its own deliverer makes the attempt. Calling the deliverer from the test raced the running
/// hub's, which still allowed loopback.)
async fn a_name_that_resolves_to_a_refused_address_at_delivery_fails_it(b: Backend) {
    let mut app = TestApp::spawn(b).await;
    let rx = Receiver::start(&[]).await;
    let by_name = rx.url.replace("127.0.0.1", "localhost");
    let w = body(
        app.post("/webhooks", &app.owner, json!({"url": by_name}))
            .await,
    )
    .await;
    let id = w["id"].as_str().expect("id").to_owned();
    app.restart(|s| s.outbound_allow_cidrs = String::new())
        .await;
    let r = app
        .post(&format!("/webhooks/{id}/test"), &app.owner, json!({}))
        .await;
    assert_eq!(r.status(), 202);
    let mut log = json!(null);
    for _ in 0..100 {
        log = body(
            app.get(&format!("/webhooks/{id}/deliveries"), &app.owner)
                .await,
        )
        .await;
        if log[0]["last_error"].is_string() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let error = log[0]["last_error"].as_str().unwrap_or_default().to_owned();
    assert!(error.contains("special-use"), "{log}");
    assert!(
        rx.received().is_empty(),
        "nothing reached the refused address"
    );
}

/// `/health` used to answer the driver's own words; a database failure is 503 problem+json
/// saying only that the database does not answer (the words go to the log).
async fn a_database_failure_is_503_without_driver_text(b: Backend) {
    let app = TestApp::spawn(b).await;
    // Ready (CONTRACT 31): the database answers and has every migration of this release, at
    // `/api/v1/ready` and at `/ready`, without credentials.
    let schema = app.state.db.schema().await.expect("schema");
    let r = body(app.get("/ready", &Auth::None).await).await;
    assert_eq!(r["status"], "ready", "{r}");
    assert_eq!(r["schema_version"], schema.binary, "{r}");
    let root = app
        .client
        .get(format!("{}/ready", app.base))
        .send()
        .await
        .expect("ready");
    assert_eq!(root.status(), 200);
    app.state.db.close().await;
    let r = app
        .client
        .get(format!("{}/ready", app.base))
        .send()
        .await
        .expect("ready");
    assert_eq!(r.status(), 503);
    for path in ["/health", "/ready", "/agents", "/cve/sources"] {
        let p = assert_problem(app.get(path, &app.owner).await, 503, "unavailable").await;
        let detail = p["detail"]
            .as_str()
            .unwrap_or_default()
            .to_ascii_lowercase();
        for word in [
            "pool",
            "sqlx",
            "closed",
            "connection refused",
            "error returned",
        ] {
            assert!(!detail.contains(word), "{path}: {p}");
        }
    }
}

/// At start the hub warns when PostgreSQL's autovacuum is off (rows it updates in place would
/// grow the database without bound): what it reads is the server's own setting; SQLite reuses
/// freed pages by itself.
async fn the_hub_reads_whether_the_database_cleans_up_after_updates(b: Backend) {
    let app = TestApp::spawn(b).await;
    let expected = match b {
        Backend::Sqlite => true,
        Backend::Postgres => {
            app.count(
                "SELECT CASE WHEN current_setting('autovacuum') = 'off' THEN 0 ELSE 1 END::BIGINT",
            )
            .await
                == 1
        }
    };
    assert_eq!(app.db.autovacuum().await.expect("read"), expected);
}
