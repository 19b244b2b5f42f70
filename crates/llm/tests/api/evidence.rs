//! Evidence packs (SPEC 2.10, Appendix; CONTRACT 8): what a pack holds, checked by an
//! independent implementation written here (flate2 + tar + sha2 + ed25519-dalek, not our
//! verifier) and by the openssl procedure of the README; determinism; a new pack when the
//! data changed; app scope; validation, roles and isolation.

use crate::agents::register;
use crate::apps::create_app;
use crate::harness::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::Read;

crate::dual!(
    packs_are_signed_complete_and_verifiable_independently,
    the_same_request_over_unchanged_data_returns_the_same_pack,
    packs_are_validated_scoped_to_an_app_and_isolated,
    packs_are_removed_only_after_their_retention,
    a_pack_over_many_pages_keeps_every_row_once_in_order,
);

fn sha(s: &[u8]) -> String {
    use sha2::Digest;
    trusthub_core::secret::hex(&sha2::Sha256::digest(s))
}

fn call(span: &str, model: &str, content: Option<&str>) -> Value {
    let mut c = json!({"span_id": span, "model": model, "prompt_tokens": 1000, "completion_tokens": 500,
        "latency_ms": 700, "prompt_sha256": sha(span.as_bytes())});
    if let Some(text) = content {
        c["content_sha256"] = json!(sha(text.as_bytes()));
    }
    c
}

fn trace(id: &str, started: &str, calls: Vec<Value>) -> Value {
    json!({"trace_id": id, "name": "answer", "team": "search", "started_at": started, "ended_at": started, "calls": calls})
}

const NOV: &str = r#"{"period_start": "2026-11-01T00:00:00Z", "period_end": "2026-12-01T00:00:00Z", "include_blobs": true}"#;

/// Sends traces in November (two with content), one in October (outside), as `ingest`.
async fn seed(app: &TestApp, ingest: &str) {
    let batch = json!({
        "traces": [
            trace("t-b", "2026-11-05T09:00:00+01:00", vec![call("s3", "gpt-4o", Some("second [EMAIL]")), call("s2", "in-house", None)]),
            trace("t-a", "2026-11-05T08:00:00Z", vec![call("s1", "gpt-4o", Some("first answer"))]),
            trace("t-c", "2026-11-20T12:00:00Z", vec![call("s4", "gpt-4o-mini", Some("first answer"))]),
            trace("t-old", "2026-10-31T23:59:59Z", vec![call("s0", "gpt-4o", Some("older"))]),
        ],
        "blobs": [
            {"sha256": sha(b"first answer"), "text": "first answer"},
            {"sha256": sha(b"second [EMAIL]"), "text": "second [EMAIL]"},
            {"sha256": sha(b"older"), "text": "older"},
        ]
    });
    let r = app
        .post("/ai/traces", &Auth::Bearer(ingest.into()), batch)
        .await;
    assert_eq!(r.status(), 202);
}

async fn create(app: &TestApp, auth: &Auth, req: &str) -> reqwest::Response {
    app.post(
        "/ai/evidence-packs",
        auth,
        serde_json::from_str(req).expect("json"),
    )
    .await
}

async fn download(app: &TestApp, auth: &Auth, pack: &Value) -> Vec<u8> {
    let url = pack["download_url"]
        .as_str()
        .expect("url")
        .trim_start_matches("/api/v1");
    let r = app.get(url, auth).await;
    let status = r.status();
    if status != 200 {
        panic!("download: {status} {}", r.text().await.unwrap_or_default());
    }
    assert_eq!(r.headers()["content-type"], "application/gzip");
    r.bytes().await.expect("bytes").to_vec()
}

/// The Appendix, implemented here from the libraries, not with our verifier. Returns the
/// manifest and every file.
fn verify_independently(bundle: &[u8], key_hex: &str) -> (Value, BTreeMap<String, Vec<u8>>) {
    assert_eq!(
        &bundle[..4],
        &[0x1f, 0x8b, 8, 0],
        "gzip without a file name"
    );
    assert_eq!(&bundle[4..8], &[0, 0, 0, 0], "gzip mtime 0");
    let mut tar = Vec::new();
    flate2::read::GzDecoder::new(bundle)
        .read_to_end(&mut tar)
        .expect("gunzip");
    let mut files = BTreeMap::new();
    let mut order = Vec::new();
    for e in tar::Archive::new(tar.as_slice()).entries().expect("tar") {
        let mut e = e.expect("entry");
        let h = e.header().clone();
        assert_eq!(h.mode().expect("mode"), 0o644);
        assert_eq!((h.uid().expect("u"), h.gid().expect("g")), (0, 0));
        let name = e.path().expect("path").to_string_lossy().into_owned();
        let mut content = Vec::new();
        e.read_to_end(&mut content).expect("read");
        order.push(name.clone());
        files.insert(name, content);
    }
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(order, sorted, "entries in sorted order");
    let manifest_bytes = &files["manifest.json"];
    let manifest: Value = serde_json::from_slice(manifest_bytes).expect("manifest");
    assert_eq!(manifest["signing_public_hex"], key_hex);
    let key: [u8; 32] = data_encoding::HEXLOWER
        .decode(key_hex.as_bytes())
        .expect("hex")
        .try_into()
        .expect("32");
    let key = ed25519_dalek::VerifyingKey::from_bytes(&key).expect("key");
    let sig: [u8; 64] = data_encoding::BASE64
        .decode(&files["manifest.sig"])
        .expect("base64")
        .try_into()
        .expect("64");
    key.verify_strict(manifest_bytes, &ed25519_dalek::Signature::from_bytes(&sig))
        .expect("the signature verifies over the manifest bytes");
    assert_eq!(manifest["traces_sha256"], sha(&files["traces.jsonl"]));
    assert_eq!(manifest["spans_sha256"], sha(&files["spans.jsonl"]));
    let index = manifest["blob_index"].as_array().expect("index");
    assert_eq!(
        index.len() as u64,
        manifest["blob_count"].as_u64().expect("n")
    );
    for b in index {
        let file = &files[&format!("blobs/{}.txt", b["hash"].as_str().expect("h"))];
        assert_eq!(b["sha256"], sha(file));
    }
    assert_eq!(files.len(), 4 + index.len(), "nothing unlisted");
    (manifest, files)
}

fn lines(b: &[u8]) -> Vec<Value> {
    std::str::from_utf8(b)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("line"))
        .collect()
}

async fn packs_are_signed_complete_and_verifiable_independently(b: Backend) {
    let app = TestApp::spawn(b).await;
    let (ingest, _) = app.token(&app.owner, "ai_ingest").await;
    seed(&app, &ingest).await;
    let key = body(app.get("/ai/evidence-key", &Auth::None).await).await;
    assert_eq!(key["algorithm"], "Ed25519");
    let key_hex = key["public_key_hex"].as_str().expect("key").to_owned();
    assert_eq!(
        key["fingerprint_sha256"],
        sha(&data_encoding::HEXLOWER
            .decode(key_hex.as_bytes())
            .expect("hex"))
    );

    let r = create(&app, &app.owner, NOV).await;
    assert_eq!(r.status(), 201);
    let pack = body(r).await;
    assert_eq!(pack["trace_count"], 3);
    assert_eq!(pack["span_count"], 4);
    assert_eq!(pack["blob_count"], 2, "unique content of the period only");
    assert_eq!(pack["unpriced_span_count"], 1);
    assert_eq!(pack["signing_public_hex"], key_hex.as_str());
    let id = pack["pack_id"].as_str().expect("id").to_owned();
    assert!(id.parse::<u64>().is_ok(), "numeric id");
    assert!(
        pack["verify_with"]
            .as_str()
            .expect("v")
            .contains(&format!("--expect-key {key_hex}"))
    );

    let bundle = download(&app, &app.owner, &pack).await;
    assert_eq!(pack["size_bytes"], bundle.len());
    let (manifest, files) = verify_independently(&bundle, &key_hex);
    assert_eq!(pack["manifest_sha256"], sha(&files["manifest.json"]));
    assert_eq!(manifest["schema_version"], 1);
    assert_eq!(manifest["pack_id"], id.as_str());
    assert_eq!(manifest["app_id"], Value::Null);
    assert_eq!(manifest["period_start"], "2026-11-01T00:00:00Z");
    assert_eq!(
        manifest["total_cost_micro_eur"],
        pack["total_cost_micro_eur"]
    );
    assert!(manifest["tenant_id"].is_string());
    // Keys sorted, no insignificant whitespace, in the manifest and in every line.
    let text = std::str::from_utf8(&files["manifest.json"]).expect("utf-8");
    assert_eq!(text, trusthub_core::canonical::canonical_json(&manifest));
    let traces = lines(&files["traces.jsonl"]);
    let ids: Vec<&str> = traces
        .iter()
        .map(|t| t["trace_id"].as_str().expect("id"))
        .collect();
    assert_eq!(
        ids,
        ["t-a", "t-b", "t-c"],
        "by start, then id; times in UTC"
    );
    assert_eq!(traces[1]["started_at"], "2026-11-05T08:00:00Z");
    let spans = lines(&files["spans.jsonl"]);
    let ids: Vec<&str> = spans
        .iter()
        .map(|t| t["span_id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, ["s1", "s2", "s3", "s4"], "equal starts ordered by id");
    for (raw, v) in std::str::from_utf8(&files["spans.jsonl"])
        .expect("u")
        .lines()
        .zip(&spans)
    {
        assert_eq!(raw, trusthub_core::canonical::canonical_json(v));
    }
    assert_eq!(
        spans[1]["cost_micro_eur"],
        Value::Null,
        "unpriced is null, never 0"
    );
    assert!(spans[0]["cost_micro_eur"].as_u64().expect("cost") > 0);
    assert_eq!(
        files[&format!("blobs/{}.txt", sha(b"second [EMAIL]"))],
        b"second [EMAIL]"
    );
    // Our own verifier agrees, and refuses another pinned key.
    assert!(trusthub_core::evidence::verify_gz(bundle.as_slice(), Some(&key_hex)).ok());
    assert!(!trusthub_core::evidence::verify_gz(bundle.as_slice(), Some(&"00".repeat(32))).ok());

    // The auditor's procedure with openssl and sha256sum only: the script and the README.
    let (script, readme) = audit_with_openssl(&bundle, &key_hex);
    assert!(script.contains("blobs: OK (2 files)"), "{script}");
    assert_eq!(readme.matches(": OK").count(), 2 + 2, "{readme}");

    // Recorded in the transparency log and the audit log.
    let log = body(app.get("/transparency-log", &app.owner).await).await;
    let entry = log
        .as_array()
        .expect("log")
        .iter()
        .find(|e| e["kind"] == "evidence_pack_created")
        .expect("entry")
        .clone();
    assert_eq!(entry["payload"]["manifest_sha256"], pack["manifest_sha256"]);
    assert_eq!(entry["seq"], pack["transparency_seq"]);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM audit_log WHERE event_type = 'evidence_pack_created'")
            .await,
        1
    );
    // Without blobs: the same lines, no content.
    let r = create(
        &app,
        &app.owner,
        &NOV.replace("\"include_blobs\": true", "\"include_blobs\": false"),
    )
    .await;
    assert_eq!(r.status(), 201);
    let bare = body(r).await;
    assert_eq!(bare["blob_count"], 0);
    let (m, files) = verify_independently(&download(&app, &app.owner, &bare).await, &key_hex);
    assert_eq!(m["include_blobs"], false);
    assert_eq!(m["spans_sha256"], manifest["spans_sha256"]);
    assert!(files.keys().all(|k| !k.starts_with("blobs/")));
    // The openssl procedure succeeds on a pack without blobs too (it failed in sha256sum on
    // an empty list), and says so.
    let (script, readme) = audit_with_openssl(&download(&app, &app.owner, &bare).await, &key_hex);
    assert!(script.contains("blobs: none in this pack"), "{script}");
    assert!(readme.contains("blobs: none in this pack"), "{readme}");
    assert_eq!(readme.matches(": OK").count(), 2, "{readme}");
}

/// Runs `scripts/audit-evidence-pack.sh` (with the key pinned, and without: it must say the
/// key was not pinned) and the README's procedure as printed, on `bundle`; both must succeed.
/// Returns their outputs.
fn audit_with_openssl(bundle: &[u8], key_hex: &str) -> (String, String) {
    let dir = TempDir::new();
    let file = dir.0.join("pack-audit.tar.gz");
    std::fs::write(&file, bundle).expect("write");
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scripts/audit-evidence-pack.sh"
    );
    let run = |cmd: &mut std::process::Command| {
        let out = cmd.output().expect("bash");
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{said}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(said.contains("Signature Verified Successfully"), "{said}");
        said
    };
    let pinned = run(std::process::Command::new("bash")
        .arg(script)
        .arg(&file)
        .arg(key_hex));
    assert!(pinned.contains("key: pinned"), "{pinned}");
    let unpinned = run(std::process::Command::new("bash").arg(script).arg(&file));
    assert!(unpinned.contains("key: NOT pinned"), "{unpinned}");
    // The same procedure as the README prints it, copied out of the README.
    let readme = include_str!("../../../../README.md");
    let block = readme
        .split("```sh\n")
        .find(|b| b.starts_with("mkdir x && tar -xzf pack.tar.gz"))
        .and_then(|b| b.split("```").next())
        .expect("the auditor's procedure in README.md");
    std::fs::copy(&file, dir.0.join("pack.tar.gz")).expect("copy");
    let printed = run(std::process::Command::new("bash")
        .args(["-euo", "pipefail", "-c", block])
        .current_dir(&dir.0));
    (pinned, printed)
}

async fn the_same_request_over_unchanged_data_returns_the_same_pack(b: Backend) {
    let app = TestApp::spawn(b).await;
    let (ingest, _) = app.token(&app.owner, "ai_ingest").await;
    seed(&app, &ingest).await;
    let first = body(create(&app, &app.owner, NOV).await).await;
    let bundle = download(&app, &app.owner, &first).await;
    let r = create(&app, &app.owner, NOV).await;
    assert_eq!(r.status(), 200, "unchanged data: the existing pack");
    let again = body(r).await;
    assert_eq!(again["pack_id"], first["pack_id"]);
    assert_eq!(again["manifest_sha256"], first["manifest_sha256"]);
    assert_eq!(
        download(&app, &app.owner, &again).await,
        bundle,
        "byte-identical"
    );

    // New data in the period: a new pack, whose manifest differs.
    let more =
        json!({"traces": [trace("t-d", "2026-11-21T00:00:00Z", vec![call("s9", "gpt-4o", None)])]});
    assert_eq!(
        app.post("/ai/traces", &Auth::Bearer(ingest), more)
            .await
            .status(),
        202
    );
    let r = create(&app, &app.owner, NOV).await;
    assert_eq!(r.status(), 201);
    let second = body(r).await;
    assert_ne!(second["pack_id"], first["pack_id"]);
    assert_ne!(second["manifest_sha256"], first["manifest_sha256"]);
    assert_eq!(second["span_count"], 5);

    let list = body(app.get("/ai/evidence-packs", &app.owner).await).await;
    let ids: Vec<&Value> = list
        .as_array()
        .expect("list")
        .iter()
        .map(|p| &p["pack_id"])
        .collect();
    assert_eq!(ids, [&second["pack_id"], &first["pack_id"]], "newest first");
    let page = body(
        app.get(
            &format!(
                "/ai/evidence-packs?limit=1&before={}",
                second["pack_id"].as_str().expect("id")
            ),
            &app.owner,
        )
        .await,
    )
    .await;
    assert_eq!(page[0]["pack_id"], first["pack_id"]);
    let one = body(
        app.get(
            &format!(
                "/ai/evidence-packs/{}",
                first["pack_id"].as_str().expect("id")
            ),
            &app.owner,
        )
        .await,
    )
    .await;
    assert_eq!(one["manifest_sha256"], first["manifest_sha256"]);
    let kept = time::OffsetDateTime::parse(
        one["expires_at"].as_str().expect("e"),
        &time::format_description::well_known::Rfc3339,
    )
    .expect("time");
    assert!(
        kept - hub_now() >= time::Duration::days(365),
        "kept at least 12 months"
    );
}

async fn packs_are_validated_scoped_to_an_app_and_isolated(b: Backend) {
    let app = TestApp::spawn(b).await;
    let (ingest, _) = app.token(&app.owner, "ai_ingest").await;
    let host = register(&app).await;
    let nginx = create_app(
        &app,
        &app.owner,
        json!({"agent_id": host.id, "name": "nginx", "app_type": "systemd", "identifier": "nginx"}),
    )
    .await;
    let mut scoped = trace(
        "t-app",
        "2026-11-06T00:00:00Z",
        vec![call("sa", "gpt-4o", None)],
    );
    scoped["app_id"] = nginx["id"].clone();
    let batch = json!({"traces": [scoped, trace("t-none", "2026-11-06T00:00:00Z", vec![call("sn", "gpt-4o", None)])]});
    assert_eq!(
        app.post("/ai/traces", &Auth::Bearer(ingest), batch)
            .await
            .status(),
        202
    );
    let req = json!({"period_start": "2026-11-01T00:00:00Z", "period_end": "2026-12-01T00:00:00Z",
        "app_id": nginx["id"]});
    let r = app
        .post("/ai/evidence-packs", &app.owner, req.clone())
        .await;
    assert_eq!(r.status(), 201);
    let pack = body(r).await;
    assert_eq!(
        (pack["trace_count"].clone(), pack["span_count"].clone()),
        (json!(1), json!(1))
    );
    let key = pack["signing_public_hex"].as_str().expect("k").to_owned();
    let (m, files) = verify_independently(&download(&app, &app.owner, &pack).await, &key);
    assert_eq!(m["app_id"], nginx["id"]);
    assert!(
        std::str::from_utf8(&files["spans.jsonl"])
            .expect("u")
            .contains("\"sa\"")
    );

    let packs_before = app.count("SELECT COUNT(*) FROM evidence_packs").await;
    for (bad, field) in [
        (
            json!({"period_start": "2026-12-01T00:00:00Z", "period_end": "2026-11-01T00:00:00Z"}),
            "period_end",
        ),
        (
            json!({"period_start": "yesterday", "period_end": "2026-11-01T00:00:00Z"}),
            "period_start",
        ),
        (
            json!({"period_start": "2026-11-01T00:00:00.5Z", "period_end": "2026-12-01T00:00:00Z"}),
            "period_start",
        ),
        (
            json!({"period_start": "2000-01-01T00:00:00Z", "period_end": "2026-12-01T00:00:00Z"}),
            "period_end",
        ),
        (
            json!({"period_start": "2026-11-01T00:00:00Z", "period_end": "2026-12-01T00:00:00Z", "app_id": uuid::Uuid::new_v4()}),
            "app_id",
        ),
    ] {
        let p = assert_problem(
            app.post("/ai/evidence-packs", &app.owner, bad.clone())
                .await,
            422,
            "validation_failed",
        )
        .await;
        assert!(names_field(&p, field), "{bad}: {p}");
    }
    assert_problem(
        app.post("/ai/evidence-packs", &app.owner, json!({"period_start": 1}))
            .await,
        422,
        "validation_failed",
    )
    .await;
    let (viewer, _) = app.user_with_role("viewer").await;
    assert_problem(
        app.post("/ai/evidence-packs", &viewer, req.clone()).await,
        403,
        "forbidden",
    )
    .await;
    assert_eq!(
        app.count("SELECT COUNT(*) FROM evidence_packs").await,
        packs_before
    );
    // A viewer reads and downloads; another tenant sees nothing of it.
    assert_eq!(
        download(&app, &viewer, &pack).await.len() as u64,
        pack["size_bytes"].as_u64().expect("n")
    );
    let other = app.other_tenant().await;
    let id = pack["pack_id"].as_str().expect("id");
    for path in [
        format!("/ai/evidence-packs/{id}"),
        format!("/ai/evidence-packs/{id}/download"),
    ] {
        assert_problem(app.get(&path, &other).await, 404, "not_found").await;
    }
    assert_eq!(
        body(app.get("/ai/evidence-packs", &other).await).await,
        json!([])
    );
    let theirs = app
        .post(
            "/ai/evidence-packs",
            &other,
            json!({"period_start": "2026-11-01T00:00:00Z", "period_end": "2026-12-01T00:00:00Z"}),
        )
        .await;
    assert_eq!(
        body(theirs).await["trace_count"],
        0,
        "only their own traces"
    );
    assert_problem(
        app.get("/ai/evidence-packs/nope", &app.owner).await,
        400,
        "bad_request",
    )
    .await;
    assert_problem(
        app.get("/ai/evidence-packs", &Auth::None).await,
        401,
        "unauthenticated",
    )
    .await;
}

async fn packs_are_removed_only_after_their_retention(b: Backend) {
    let app = TestApp::spawn(b).await;
    let (ingest, _) = app.token(&app.owner, "ai_ingest").await;
    seed(&app, &ingest).await;
    let pack = body(create(&app, &app.owner, NOV).await).await;
    let id: i64 = pack["pack_id"].as_str().expect("id").parse().expect("n");
    let file = trusthub_hub::evidence::pack_path(
        &app.state,
        trusthub_store::TenantId(tenant_of(&app).await),
        id,
    );
    assert!(file.exists());
    let purge = |days: i64| {
        let state = app.state.clone();
        async move {
            let mut tx = state.db.begin().await.expect("tx");
            trusthub_hub::evidence::purge(&state, &mut tx, hub_now() + time::Duration::days(days))
                .await
                .expect("purge");
            tx.commit().await.expect("commit");
        }
    };
    purge(364).await;
    assert!(file.exists(), "kept for at least 12 months");
    assert_eq!(
        app.get(&format!("/ai/evidence-packs/{id}"), &app.owner)
            .await
            .status(),
        200
    );
    purge(401).await;
    assert!(
        !file.exists(),
        "removed after TRUSTHUB_EVIDENCE_RETENTION_DAYS (400)"
    );
    assert_problem(
        app.get(&format!("/ai/evidence-packs/{id}"), &app.owner)
            .await,
        404,
        "not_found",
    )
    .await;
    // A retention under a year is refused at start.
    let dir = TempDir::new();
    let (mut settings, _) = TestApp::settings(Backend::Sqlite, &dir).await;
    settings
        .sections
        .edit(|v: &mut trusthub_hub::sections::Llm| v.evidence_retention_days = 300);
    assert!(trusthub_hub::Server::build(settings).await.is_err());
}

async fn tenant_of(app: &TestApp) -> uuid::Uuid {
    let me = body(app.get("/me", &app.owner).await).await;
    me["tenant_id"]
        .as_str()
        .or_else(|| me["user"]["tenant_id"].as_str())
        .expect("tenant")
        .parse()
        .expect("uuid")
}

/// More traces and calls than one page of the builder (5,000) and more blobs than one blob
/// lookup (100), ten traces a second so that page boundaries fall inside equal times.
async fn a_pack_over_many_pages_keeps_every_row_once_in_order(b: Backend) {
    let app = TestApp::spawn(b).await;
    let (ingest, _) = app.token(&app.owner, "ai_ingest").await;
    let (traces, calls_per) = (5_100usize, 2usize);
    let start = time::macros::datetime!(2026-11-02 00:00:00 UTC);
    for chunk in (0..traces).collect::<Vec<_>>().chunks(500) {
        let mut ts = Vec::new();
        let mut blobs = Vec::new();
        for &t in chunk {
            // Ids count down while time goes up: the order must come from the time first.
            let at = (start + time::Duration::seconds((t / 10) as i64))
                .format(&time::format_description::well_known::Rfc3339)
                .expect("time");
            let calls = (0..calls_per)
                .map(|k| {
                    let span = format!("s{:06}", 99_999 - (t * calls_per + k));
                    let text = format!("answer {}", t % 150);
                    let mut c = call(&span, "gpt-4o", None);
                    if k == 0 {
                        c["content_sha256"] = json!(sha(text.as_bytes()));
                        blobs.push(json!({"sha256": sha(text.as_bytes()), "text": text}));
                    }
                    c
                })
                .collect();
            ts.push(trace(&format!("t{:06}", 99_999 - t), &at, calls));
        }
        blobs.sort_by_key(|b| b["sha256"].as_str().unwrap_or_default().to_owned());
        blobs.dedup();
        let r = app
            .post(
                "/ai/traces",
                &Auth::Bearer(ingest.clone()),
                json!({"traces": ts, "blobs": blobs}),
            )
            .await;
        assert_eq!(r.status(), 202);
    }
    let r = create(&app, &app.owner, NOV).await;
    assert_eq!(r.status(), 201);
    let pack = body(r).await;
    assert_eq!(pack["trace_count"], traces);
    assert_eq!(pack["span_count"], traces * calls_per);
    assert_eq!(pack["blob_count"], 150);
    let key = pack["signing_public_hex"].as_str().expect("key").to_owned();
    let (_, files) = verify_independently(&download(&app, &app.owner, &pack).await, &key);
    for (file, id, n) in [
        ("traces.jsonl", "trace_id", traces),
        ("spans.jsonl", "span_id", traces * calls_per),
    ] {
        let rows = lines(&files[file]);
        assert_eq!(rows.len(), n, "{file}: every row");
        let keys: Vec<(String, String)> = rows
            .iter()
            .map(|r| {
                (
                    r["started_at"].as_str().expect("t").to_owned(),
                    r[id].as_str().expect("id").to_owned(),
                )
            })
            .collect();
        let mut sorted = keys.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(keys, sorted, "{file}: in (start, id) order, none twice");
    }
}
