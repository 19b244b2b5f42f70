//! CONTRACT 4 agents, hub side: enrollment, registration with key pinning, signed
//! idempotent ingest, the stored data and its queries, rotation, deletion, isolation.

use crate::harness::*;
use ed25519_dalek::SigningKey;
use reqwest::{Method, Response};
use serde_json::{Value, json};
use std::io::Write;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use trusthub_core::agent::sign_header;
use uuid::Uuid;

crate::dual!(
    governance_takes_a_merge_patch_that_keeps_what_it_does_not_name,
    registration_pins_the_key_and_is_idempotent_per_machine,
    registration_needs_a_valid_enrollment_token_and_proof_of_the_key,
    a_signed_batch_is_stored_once_and_queryable,
    unsigned_tampered_stale_and_invalid_batches_are_refused_and_store_nothing,
    compressed_batches_are_verified_over_the_bytes_as_sent,
    ingest_is_limited_to_sixty_batches_a_minute_per_agent,
    rotating_the_token_and_the_signing_key,
    deleting_an_agent_stops_its_token,
    another_tenants_agents_are_404_and_unchanged,
    metric_ranges_raw_and_averaged_per_interval,
    governance_is_validated_and_the_host_allowlist_vetoes,
    only_admins_enrol_and_rotate,
    concurrent_batches_and_concurrent_duplicates_are_each_stored_once,
    points_re_sent_under_a_new_batch_id_are_kept_once_and_counted,
    enrollment_tokens_are_listed_without_secrets_and_revocable,
    an_agent_changed_by_another_process_is_read_again_at_the_next_batch,
    a_purge_or_a_deleted_agent_leaves_nothing_to_fold_into,
    a_purge_deletes_every_agents_older_rows_and_keeps_the_rest,
    rollups_folded_after_a_burst_count_every_point_once,
    a_request_on_its_way_defers_folding_to_its_own_transaction,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn points_left_unfolded_by_a_crash_are_folded_once_at_the_next_start() {
    points_left_unfolded_by_a_crash(Backend::Sqlite).await
}

pub(crate) fn key() -> SigningKey {
    SigningKey::from_bytes(&trusthub_core::secret::random_bytes::<32>().expect("random"))
}

pub(crate) fn hexkey(k: &SigningKey) -> String {
    trusthub_core::secret::hex(k.verifying_key().as_bytes())
}

pub(crate) fn ts(t: OffsetDateTime) -> String {
    t.format(&Rfc3339).expect("fmt")
}

/// A simulated agent: its key and, once registered, its id and token.
pub(crate) struct Host {
    pub key: SigningKey,
    pub machine_id: String,
    pub id: String,
    pub token: String,
}

pub(crate) async fn enrollment_token(app: &TestApp, auth: &Auth) -> String {
    let r = app
        .post(
            "/agents/enrollment-tokens",
            auth,
            json!({"tags": ["env:test"]}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let b = body(r).await;
    assert!(b["token"].as_str().is_some_and(|t| t.starts_with("the_")));
    b["token"].as_str().expect("t").to_owned()
}

pub(crate) async fn register_raw(
    app: &TestApp,
    enroll: &str,
    key: &SigningKey,
    signer: &SigningKey,
    machine_id: &str,
) -> Response {
    let body =
        json!({"machine_id": machine_id, "hostname": "web-1", "os": "Debian 12", "arch": "x86_64",
        "agent_version": "0.1.0", "signing_pubkey": hexkey(key), "tags": ["role:web"]})
        .to_string();
    app.req(
        Method::POST,
        "/agents/register",
        &Auth::Bearer(enroll.into()),
    )
    .header("content-type", "application/json")
    .header("x-service-signature", sign_header(signer, body.as_bytes()))
    .body(body)
    .send()
    .await
    .expect("register")
}

pub(crate) async fn register(app: &TestApp) -> Host {
    let enroll = enrollment_token(app, &app.owner).await;
    let key = key();
    let machine_id = Uuid::new_v4().simple().to_string();
    let r = register_raw(app, &enroll, &key, &key, &machine_id).await;
    assert_eq!(r.status(), 201);
    let b = body(r).await;
    Host {
        key,
        machine_id,
        id: b["agent_id"].as_str().expect("id").into(),
        token: b["agent_token"].as_str().expect("t").into(),
    }
}

pub(crate) async fn send(
    app: &TestApp,
    host: &Host,
    body: &[u8],
    encoding: Option<&str>,
    sign: bool,
) -> Response {
    let mut r = app
        .req(Method::POST, "/ingest", &Auth::Bearer(host.token.clone()))
        .header("content-type", "application/json");
    if let Some(e) = encoding {
        r = r.header("content-encoding", e);
    }
    if sign {
        r = r.header("x-service-signature", sign_header(&host.key, body));
    }
    r.body(body.to_vec()).send().await.expect("ingest")
}

pub(crate) fn batch(metrics: Value) -> Value {
    json!({"batch_id": Uuid::new_v4(), "sent_at": ts(OffsetDateTime::now_utc()), "metrics": metrics})
}

fn full_batch(now: OffsetDateTime) -> Value {
    json!({
        "batch_id": Uuid::new_v4(),
        "sent_at": ts(now),
        "metrics": [
            {"name": "cpu.percent", "ts": ts(now - time::Duration::seconds(30)), "value": 12.5},
            {"name": "cpu.percent", "ts": ts(now), "value": 17.5},
            {"name": "disk.used_bytes", "ts": ts(now), "value": 1024.0, "labels": {"mount": "/"}}
        ],
        "heartbeat": {"uptime_secs": 1234, "allowed_actions": ["restart_app", "install_package"]},
        "inventory": {
            "collected_at": ts(now),
            "os": {"name": "Debian", "version": "12", "kernel": "6.1.0"},
            "systemd": [{"unit": "nginx.service", "active_state": "active", "sub_state": "running", "enabled": true}],
            "containers": [{"id": "abc", "name": "db", "image": "postgres:16", "state": "running", "restart_count": 2, "compose_project": "shop", "compose_service": "db"}],
            "users": [{"name": "root", "uid": 0}],
            "ssh_keys": [{"user": "root", "fingerprint": "SHA256:abc"}]
        },
        "processes": [{"pid": 1, "exe": "/sbin/init", "cmdline": "init", "user": "root"}]
    })
}

async fn count(app: &TestApp, table: &str) -> i64 {
    app.count(&format!("SELECT COUNT(*) FROM {table}")).await
}

async fn registration_pins_the_key_and_is_idempotent_per_machine(b: Backend) {
    let app = TestApp::spawn(b).await;
    let enroll = enrollment_token(&app, &app.owner).await;
    let k = key();
    let first = register_raw(&app, &enroll, &k, &k, "machine-1").await;
    assert_eq!(first.status(), 201);
    let first = body(first).await;
    assert!(
        first["agent_token"]
            .as_str()
            .is_some_and(|t| t.starts_with("tha_"))
    );
    assert_eq!(first["hub_eat_public_key"].as_str().map(str::len), Some(64));
    // The key agents pin is the one the hub publishes, without credentials.
    let published = body(app.get("/agents/eat-public-key", &Auth::None).await).await;
    assert_eq!(published["public_key_hex"], first["hub_eat_public_key"]);
    assert_eq!(published["alg"], "EdDSA");
    let pinned =
        trusthub_core::agent::parse_public_key(published["public_key_hex"].as_str().expect("hex"))
            .expect("key");
    assert_eq!(published["kid"], trusthub_core::eat::kid(&pinned));
    assert_eq!(first["ingest_interval_secs"], 60);
    assert_eq!(first["inventory_interval_secs"], 21600);
    let again = register_raw(&app, &enroll, &k, &k, "machine-1").await;
    assert_eq!(again.status(), 200);
    let again = body(again).await;
    assert_eq!(again["agent_id"], first["agent_id"]);
    assert_ne!(again["agent_token"], first["agent_token"]);
    assert_eq!(again["hub_eat_public_key"], first["hub_eat_public_key"]);
    // The first token stopped working; the new one works.
    let old = Host {
        key: k.clone(),
        machine_id: "machine-1".into(),
        id: String::new(),
        token: first["agent_token"].as_str().expect("t").into(),
    };
    let r = send(
        &app,
        &old,
        batch(json!([])).to_string().as_bytes(),
        None,
        true,
    )
    .await;
    assert_problem(r, 401, "unauthenticated").await;
    let new = Host {
        token: again["agent_token"].as_str().expect("t").into(),
        ..old
    };
    assert_eq!(
        send(
            &app,
            &new,
            batch(json!([])).to_string().as_bytes(),
            None,
            true
        )
        .await
        .status(),
        202
    );
    // Another key for the pinned machine: 409, and nothing changes.
    let other = key();
    let p = assert_problem(
        register_raw(&app, &enroll, &other, &other, "machine-1").await,
        409,
        "conflict",
    )
    .await;
    // It names the agent it collides with and both ways out.
    let detail = p["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains(&new.id)
            && detail.contains("machine-id")
            && detail.contains("rotate-signing-key"),
        "{p}"
    );
    assert_eq!(
        send(
            &app,
            &new,
            batch(json!([])).to_string().as_bytes(),
            None,
            true
        )
        .await
        .status(),
        202
    );
    let agents = body(app.get("/agents", &app.owner).await).await;
    assert_eq!(agents.as_array().map(Vec::len), Some(1));
    assert_eq!(agents[0]["tags"], json!(["env:test", "role:web"]));
    assert_eq!(agents[0]["signing_key_pinned"], true);
    // Tokens are stored hashed.
    let tok = again["agent_token"].as_str().expect("t");
    assert_eq!(
        app.count(&format!(
            "SELECT COUNT(*) FROM agents WHERE token_hash = '{tok}'"
        ))
        .await,
        0
    );
}

async fn registration_needs_a_valid_enrollment_token_and_proof_of_the_key(b: Backend) {
    let app = TestApp::spawn(b).await;
    let enroll = enrollment_token(&app, &app.owner).await;
    let (k, thief) = (key(), key());
    // Knowing the public key and the enrollment token is not enough.
    assert_problem(
        register_raw(&app, &enroll, &k, &thief, "m").await,
        401,
        "unauthenticated",
    )
    .await;
    assert_problem(
        register_raw(&app, "the_forged", &k, &k, "m").await,
        401,
        "unauthenticated",
    )
    .await;
    let (token, _) = app.token(&app.owner, "write").await;
    assert_problem(
        register_raw(&app, &token, &k, &k, "m").await,
        401,
        "unauthenticated",
    )
    .await;
    let unsigned = app.post("/agents/register", &Auth::Bearer(enroll.clone()), json!({"machine_id": "m", "hostname": "h", "os": "o", "arch": "a", "agent_version": "1", "signing_pubkey": hexkey(&k)})).await;
    assert_problem(unsigned, 401, "unauthenticated").await;
    let bad_key = app.post("/agents/register", &Auth::Bearer(enroll.clone()), json!({"machine_id": "m", "hostname": "h", "os": "o", "arch": "a", "agent_version": "1", "signing_pubkey": "zz"})).await;
    assert_problem(bad_key, 422, "validation_failed").await;
    let expired = app
        .post(
            "/agents/enrollment-tokens",
            &app.owner,
            json!({"expires_at": "2020-01-01T00:00:00Z"}),
        )
        .await;
    assert_problem(expired, 422, "validation_failed").await;
    assert_eq!(count(&app, "agents").await, 0);
}

async fn a_signed_batch_is_stored_once_and_queryable(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    let now = OffsetDateTime::now_utc().replace_nanosecond(0).expect("ns");
    let body_bytes = full_batch(now).to_string();
    let r = send(&app, &host, body_bytes.as_bytes(), None, true).await;
    assert_eq!(r.status(), 202);
    let ack = body(r).await;
    assert_eq!(
        (ack["accepted"].clone(), ack["duplicate"].clone()),
        (json!(true), json!(false))
    );
    let r = send(&app, &host, body_bytes.as_bytes(), None, true).await;
    assert_eq!(body(r).await["duplicate"], true);
    assert_eq!(app.stored_points().await, 3, "stored once");
    let prom = exposition(&app).await;
    assert!(
        prom.contains("trusthub_ingest_batches_total{result=\"stored\"} 1"),
        "{prom}"
    );
    assert!(prom.contains("trusthub_ingest_batches_total{result=\"duplicate\"} 1"));
    assert!(prom.contains("trusthub_ingest_samples_total 3"));
    assert_eq!(count(&app, "inventory_snapshots").await, 1);

    let id = &host.id;
    let agent = body(app.get(&format!("/agents/{id}"), &app.owner).await).await;
    assert_eq!(agent["status"], "online");
    assert_eq!(agent["hostname"], "web-1");
    let m = body(
        app.get(
            &format!(
                "/agents/{id}/metrics?name=cpu.percent&from={}",
                ts(now - time::Duration::minutes(5))
            ),
            &app.owner,
        )
        .await,
    )
    .await;
    assert_eq!(m["series"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        m["series"][0]["points"],
        json!([
            [ts(now - time::Duration::seconds(30)), 12.5],
            [ts(now), 17.5]
        ])
    );
    let all = body(
        app.get(
            &format!(
                "/agents/{id}/metrics?from={}&to={}",
                ts(now - time::Duration::minutes(5)),
                ts(now + time::Duration::seconds(1))
            ),
            &app.owner,
        )
        .await,
    )
    .await;
    let disk = all["series"]
        .as_array()
        .expect("a")
        .iter()
        .find(|s| s["name"] == "disk.used_bytes")
        .expect("disk")
        .clone();
    assert_eq!(disk["labels"], json!({"mount": "/"}));

    let inv = body(
        app.get(&format!("/agents/{id}/inventory"), &app.owner)
            .await,
    )
    .await;
    assert_eq!(inv["os"]["kernel"], "6.1.0");
    let containers = body(
        app.get(&format!("/agents/{id}/inventory/containers"), &app.owner)
            .await,
    )
    .await;
    assert_eq!(containers[0]["compose_service"], "db");
    assert_eq!(
        body(
            app.get(&format!("/agents/{id}/inventory/ssh-keys"), &app.owner)
                .await
        )
        .await[0]["fingerprint"],
        "SHA256:abc"
    );
    assert_eq!(
        body(
            app.get(&format!("/agents/{id}/inventory/backups"), &app.owner)
                .await
        )
        .await,
        json!([])
    );
    assert_problem(
        app.get(&format!("/agents/{id}/inventory/passwords"), &app.owner)
            .await,
        404,
        "not_found",
    )
    .await;
    let procs = body(
        app.get(&format!("/agents/{id}/processes"), &app.owner)
            .await,
    )
    .await;
    assert_eq!(procs["processes"][0]["exe"], "/sbin/init");
    let gov = body(
        app.get(&format!("/agents/{id}/governance"), &app.owner)
            .await,
    )
    .await;
    assert_eq!(
        gov["host_allowed_actions"],
        json!(["restart_app", "install_package"])
    );
}

async fn unsigned_tampered_stale_and_invalid_batches_are_refused_and_store_nothing(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    let now = OffsetDateTime::now_utc();
    let good = full_batch(now).to_string();
    assert_problem(
        send(&app, &host, good.as_bytes(), None, false).await,
        401,
        "unauthenticated",
    )
    .await;
    let sig = sign_header(&host.key, good.as_bytes());
    let tampered = good.replace("12.5", "99.5");
    let r = app
        .req(Method::POST, "/ingest", &Auth::Bearer(host.token.clone()))
        .header("content-type", "application/json")
        .header("x-service-signature", sig)
        .body(tampered)
        .send()
        .await
        .expect("r");
    assert_problem(r, 401, "unauthenticated").await;
    let stale = json!({"batch_id": Uuid::new_v4(), "sent_at": ts(now - time::Duration::minutes(11)), "metrics": []}).to_string();
    let p = assert_problem(
        send(&app, &host, stale.as_bytes(), None, true).await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(p["errors"][0]["field"], "sent_at");
    let future = json!({"batch_id": Uuid::new_v4(), "sent_at": ts(now + time::Duration::minutes(11)), "metrics": []}).to_string();
    assert_problem(
        send(&app, &host, future.as_bytes(), None, true).await,
        422,
        "validation_failed",
    )
    .await;
    let bad_metric = batch(json!([{"name": "ok.metric", "ts": ts(now), "value": 1.0}, {"name": "bad name", "ts": ts(now), "value": 1.0}])).to_string();
    let p = assert_problem(
        send(&app, &host, bad_metric.as_bytes(), None, true).await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(p["errors"][0]["field"], "metrics[1]");
    let bad_inventory =
        json!({"batch_id": Uuid::new_v4(), "sent_at": ts(now), "inventory": {"os": {}}})
            .to_string();
    assert_problem(
        send(&app, &host, bad_inventory.as_bytes(), None, true).await,
        422,
        "validation_failed",
    )
    .await;
    assert_problem(
        send(&app, &host, b"{not json", None, true).await,
        400,
        "bad_request",
    )
    .await;
    let no_token = app
        .req(Method::POST, "/ingest", &Auth::None)
        .header("content-type", "application/json")
        .body(good.clone())
        .send()
        .await
        .expect("r");
    assert_problem(no_token, 401, "unauthenticated").await;
    let (user_token, _) = app.token(&app.owner, "write").await;
    let wrong_kind = app
        .req(Method::POST, "/ingest", &Auth::Bearer(user_token))
        .header("content-type", "application/json")
        .body(good)
        .send()
        .await
        .expect("r");
    assert_problem(wrong_kind, 401, "unauthenticated").await;
    for t in [
        "metric_points",
        "metric_series",
        "ingest_batches",
        "inventory_snapshots",
        "agent_processes",
    ] {
        assert_eq!(count(&app, t).await, 0, "{t} empty");
    }
}

async fn compressed_batches_are_verified_over_the_bytes_as_sent(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    let now = OffsetDateTime::now_utc();
    let plain = batch(json!([{"name": "load.1", "ts": ts(now), "value": 0.5}])).to_string();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(plain.as_bytes()).expect("gz");
    let gz = gz.finish().expect("gz");
    assert_eq!(
        send(&app, &host, &gz, Some("gzip"), true).await.status(),
        202
    );
    // A signature over the uncompressed JSON does not cover what was sent.
    let plain2 = batch(json!([{"name": "load.1", "ts": ts(now), "value": 0.7}])).to_string();
    let mut gz2 = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz2.write_all(plain2.as_bytes()).expect("gz");
    let gz2 = gz2.finish().expect("gz");
    let r = app
        .req(Method::POST, "/ingest", &Auth::Bearer(host.token.clone()))
        .header("content-type", "application/json")
        .header("content-encoding", "gzip")
        .header(
            "x-service-signature",
            sign_header(&host.key, plain2.as_bytes()),
        )
        .body(gz2)
        .send()
        .await
        .expect("r");
    assert_problem(r, 401, "unauthenticated").await;
    let plain3 = batch(json!([{"name": "load.5", "ts": ts(now), "value": 0.9}])).to_string();
    let zst = ruzstd::encoding::compress_to_vec(
        plain3.as_bytes(),
        ruzstd::encoding::CompressionLevel::Fastest,
    );
    assert_eq!(
        send(&app, &host, &zst, Some("zstd"), true).await.status(),
        202
    );
    assert_problem(
        send(&app, &host, b"garbage", Some("gzip"), true).await,
        400,
        "bad_request",
    )
    .await;
    assert_problem(
        send(&app, &host, plain.as_bytes(), Some("br"), true).await,
        415,
        "unsupported_media_type",
    )
    .await;
    assert_eq!(app.stored_points().await, 2);
}

async fn ingest_is_limited_to_sixty_batches_a_minute_per_agent(b: Backend) {
    let app = TestApp::spawn_with(b, |s| s.rate_limits = "on".into()).await;
    let host = register(&app).await;
    let other = register(&app).await;
    fresh_minute().await;
    let mut refused = None;
    for i in 0..62 {
        let r = send(
            &app,
            &host,
            batch(json!([])).to_string().as_bytes(),
            None,
            true,
        )
        .await;
        if r.status() == 429 {
            refused = Some((i, r));
            break;
        }
        assert_eq!(r.status(), 202);
    }
    let (i, r) = refused.expect("refused within 62");
    assert!(i >= 60, "refused after {i}");
    assert!(r.headers().contains_key("retry-after"));
    assert_problem(r, 429, "rate_limited").await;
    // Another agent has its own budget.
    assert_eq!(
        send(
            &app,
            &other,
            batch(json!([])).to_string().as_bytes(),
            None,
            true
        )
        .await
        .status(),
        202
    );
}

async fn rotating_the_token_and_the_signing_key(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    // Taken once before, so the hub has read the agent when its token rotates.
    assert_eq!(
        send(
            &app,
            &host,
            batch(json!([])).to_string().as_bytes(),
            None,
            true
        )
        .await
        .status(),
        202
    );
    let r = app
        .post(
            &format!("/agents/{}/rotate-token", host.id),
            &app.owner,
            json!({}),
        )
        .await;
    assert_eq!(r.status(), 200);
    let new_token = body(r).await["agent_token"].as_str().expect("t").to_owned();
    assert_problem(
        send(
            &app,
            &host,
            batch(json!([])).to_string().as_bytes(),
            None,
            true,
        )
        .await,
        401,
        "unauthenticated",
    )
    .await;
    let host = Host {
        token: new_token,
        ..host
    };
    assert_eq!(
        send(
            &app,
            &host,
            batch(json!([])).to_string().as_bytes(),
            None,
            true
        )
        .await
        .status(),
        202
    );

    let r = app
        .post(
            &format!("/agents/{}/rotate-signing-key", host.id),
            &app.owner,
            json!({}),
        )
        .await;
    assert_eq!(body(r).await["signing_key_pinned"], false);
    // Unpinned: unsigned batches pass until the machine registers again with a new key.
    assert_eq!(
        send(
            &app,
            &host,
            batch(json!([])).to_string().as_bytes(),
            None,
            false
        )
        .await
        .status(),
        202
    );
    let enroll = enrollment_token(&app, &app.owner).await;
    let new_key = key();
    let r = register_raw(&app, &enroll, &new_key, &new_key, &host.machine_id).await;
    assert_eq!(r.status(), 200);
    let rb = body(r).await;
    assert_eq!(rb["agent_id"].as_str(), Some(host.id.as_str()));
    let host = Host {
        key: new_key,
        token: rb["agent_token"].as_str().expect("t").into(),
        ..host
    };
    assert_problem(
        send(
            &app,
            &host,
            batch(json!([])).to_string().as_bytes(),
            None,
            false,
        )
        .await,
        401,
        "unauthenticated",
    )
    .await;
    assert_eq!(
        send(
            &app,
            &host,
            batch(json!([])).to_string().as_bytes(),
            None,
            true
        )
        .await
        .status(),
        202
    );
    let log = body(app.get("/audit-log", &app.owner).await).await;
    let kinds: Vec<&str> = log
        .as_array()
        .expect("a")
        .iter()
        .filter_map(|e| e["event_type"].as_str())
        .collect();
    assert!(kinds.contains(&"agent_token_rotated") && kinds.contains(&"agent_signing_key_cleared"));
}

/// Ingest keeps the agents it has read instead of reading one per batch; a change another hub
/// process made in the database (here: made by SQL, so this process is not told) is still in
/// force at the very next batch, which stores nothing when it no longer passes.
async fn an_agent_changed_by_another_process_is_read_again_at_the_next_batch(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    let at = |secs: i64| {
        batch(json!([{"name": "cpu.percent", "ts": ts(OffsetDateTime::now_utc() - time::Duration::seconds(secs)), "value": secs}]))
            .to_string()
    };
    let only_this = format!("WHERE machine_id = '{}'", host.machine_id);
    let r = send(&app, &host, at(50).as_bytes(), None, true).await;
    assert_eq!(body(r).await["ingest_interval_secs"], 60);
    // Settings changed elsewhere: the next answer carries them.
    app.execute(&format!(
        "UPDATE agents SET ingest_interval_secs = 45 {only_this}"
    ))
    .await;
    let r = send(&app, &host, at(40).as_bytes(), None, true).await;
    assert_eq!(body(r).await["ingest_interval_secs"], 45);
    assert_eq!(app.stored_points().await, 2);
    // A new key pinned elsewhere: a batch the old key signed is refused and stores nothing.
    let new_key = key();
    app.execute(&format!(
        "UPDATE agents SET signing_pubkey = '{}' {only_this}",
        hexkey(&new_key)
    ))
    .await;
    assert_problem(
        send(&app, &host, at(30).as_bytes(), None, true).await,
        401,
        "unauthenticated",
    )
    .await;
    assert_eq!(app.stored_points().await, 2);
    let host = Host {
        key: new_key,
        ..host
    };
    assert_eq!(
        send(&app, &host, at(20).as_bytes(), None, true)
            .await
            .status(),
        202
    );
    assert_eq!(app.stored_points().await, 3);
    // The token rotated elsewhere: the old one is refused and stores nothing, also with a
    // batch the hub would refuse anyway (401 first, not its problems).
    app.execute(&format!(
        "UPDATE agents SET token_hash = 'rotated by another hub' {only_this}"
    ))
    .await;
    let bad = batch(json!([{"name": "cpu.percent", "ts": ts(OffsetDateTime::now_utc()), "value": 1, "lables": {}}]))
        .to_string();
    assert_problem(
        send(&app, &host, bad.as_bytes(), None, true).await,
        401,
        "unauthenticated",
    )
    .await;
    assert_problem(
        send(&app, &host, at(10).as_bytes(), None, true).await,
        401,
        "unauthenticated",
    )
    .await;
    // A refusal is not remembered: the token back in force is taken again.
    app.execute(&format!(
        "UPDATE agents SET token_hash = '{}' {only_this}",
        trusthub_core::secret::token_hash(&host.token)
    ))
    .await;
    assert_eq!(
        send(&app, &host, at(5).as_bytes(), None, true)
            .await
            .status(),
        202
    );
    assert_eq!(app.stored_points().await, 4);
}

/// The SQLite writer folds new points into the rollup rows it wrote last without reading
/// them back; rows a purge deleted, or a deleted agent's (whose number the next agent gets),
/// are never folded into again.
async fn a_purge_or_a_deleted_agent_leaves_nothing_to_fold_into(b: Backend) {
    let app = TestApp::spawn(b).await;
    let now = OffsetDateTime::now_utc().unix_timestamp();
    let minute = OffsetDateTime::from_unix_timestamp((now - 600) / 60 * 60).expect("t");
    let at = |second: i64| {
        batch(json!([{"name": "cpu.percent", "ts": ts(minute + time::Duration::seconds(second)), "value": second}]))
            .to_string()
    };
    let taken = |r: Response| assert_eq!(r.status(), 202);
    let first = register(&app).await;
    for second in [1, 2, 3] {
        taken(send(&app, &first, at(second).as_bytes(), None, true).await);
    }
    assert_eq!(app.rolled_up("metric_rollup_1m").await, 3);
    let mut tx = app.db.begin().await.expect("tx");
    trusthub_fleet::maintenance::purge_points(&mut tx, i64::MAX, i64::MAX)
        .await
        .expect("purge");
    tx.commit().await.expect("commit");
    assert_eq!(app.rolled_up("metric_rollup_1m").await, 0);
    taken(send(&app, &first, at(4).as_bytes(), None, true).await);
    assert_eq!(
        app.rolled_up("metric_rollup_1m").await,
        1,
        "only the new point"
    );
    assert_eq!(app.rolled_up("metric_rollup_1h").await, 4, "hours are kept");
    // The agent deleted: the next one registered gets its number.
    assert_eq!(
        app.delete(&format!("/agents/{}", first.id), &app.owner)
            .await
            .status(),
        204
    );
    let second = register(&app).await;
    taken(send(&app, &second, at(5).as_bytes(), None, true).await);
    assert_eq!(app.rolled_up("metric_rollup_1m").await, 1);
    assert_eq!(app.rolled_up("metric_rollup_1h").await, 1);
}

/// The retention purge deletes every agent's points and minute rollups older than its times
/// (found through each agent's key, never by reading the whole table) and keeps the rest.
async fn a_purge_deletes_every_agents_older_rows_and_keeps_the_rest(b: Backend) {
    let app = TestApp::spawn(b).await;
    let now = OffsetDateTime::now_utc().unix_timestamp();
    let old = OffsetDateTime::from_unix_timestamp((now - 1_200) / 60 * 60).expect("t");
    let new = old + time::Duration::minutes(10);
    for _ in 0..2 {
        let host = register(&app).await;
        for at in [old, new] {
            let body = batch(json!([{"name": "cpu.percent", "ts": ts(at), "value": 1}]));
            let r = send(&app, &host, body.to_string().as_bytes(), None, true).await;
            assert_eq!(r.status(), 202);
        }
    }
    settled(&app).await;
    assert_eq!(app.stored_points().await, 4);
    assert_eq!(app.rolled_up("metric_rollup_1m").await, 4);
    let cut = new.unix_timestamp() * 1_000;
    let mut tx = app.db.begin().await.expect("tx");
    let gone = trusthub_fleet::maintenance::purge_points(&mut tx, cut, cut)
        .await
        .expect("purge");
    tx.commit().await.expect("commit");
    assert_eq!(gone, 4, "two points and two minutes");
    assert_eq!(app.stored_points().await, 2);
    assert_eq!(app.rolled_up("metric_rollup_1m").await, 2);
    assert_eq!(app.rolled_up("metric_rollup_1h").await, 4, "hours are kept");
}

/// Waits until nothing stored is left unfolded (`metric_unfolded` empty; a few seconds at most).
async fn settled(app: &TestApp) {
    for _ in 0..100 {
        if count(app, "metric_unfolded").await == 0 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("points were left unfolded for more than 5 s");
}

/// Under load SQLite's writer stores a group's points at once and folds them into the rollups
/// a little later, many groups in one pass (PostgreSQL folds in the ingest transaction): once
/// the burst is over, every point is in its minute and its hour exactly once.
async fn rollups_folded_after_a_burst_count_every_point_once(b: Backend) {
    let app = TestApp::spawn(b).await;
    let mut hosts = Vec::new();
    for _ in 0..8 {
        hosts.push(register(&app).await);
    }
    let now = OffsetDateTime::now_utc().unix_timestamp();
    // A minute into the last whole hour: the burst's two minutes fall in one hour.
    let hour = OffsetDateTime::from_unix_timestamp((now / 3_600 - 1) * 3_600).expect("t");
    let start = hour + time::Duration::minutes(1);
    let mut bodies = Vec::new();
    for (h, host) in hosts.iter().enumerate() {
        for i in 0..25i64 {
            // Two minutes' worth per agent, ten series each, spread over them.
            let at =
                start + time::Duration::seconds(i * 5) + time::Duration::milliseconds(h as i64);
            let metrics: Vec<Value> = (0..10)
                .map(|j| json!({"name": format!("burst.m{j}"), "ts": ts(at), "value": i * 10 + j}))
                .collect();
            bodies.push((host, batch(json!(metrics)).to_string()));
        }
    }
    let answers = futures_join(
        bodies
            .iter()
            .map(|(h, body)| send(&app, h, body.as_bytes(), None, true))
            .collect(),
    )
    .await;
    assert!(answers.iter().all(|r| r.status() == 202));
    settled(&app).await;
    assert_eq!(app.stored_points().await, 2_000);
    assert_eq!(app.rolled_up("metric_rollup_1m").await, 2_000);
    assert_eq!(app.rolled_up("metric_rollup_1h").await, 2_000);
    // Sums are exact too: each agent's series j sums i * 10 + j over the 25 batches.
    let hourly = app
        .get(
            &format!(
                "/agents/{}/metrics?name=burst.m3&from={}&to={}&interval=1h",
                hosts[0].id,
                ts(hour),
                ts(hour + time::Duration::hours(1))
            ),
            &app.owner,
        )
        .await;
    assert_eq!(hourly.status(), 200);
    let v = body(hourly).await;
    let mean = (0..25).map(|i| (i * 10 + 3) as f64).sum::<f64>() / 25.0;
    assert_eq!(v["series"][0]["points"], json!([[ts(hour), mean]]), "{v}");
}

/// The hub's Prometheus exposition (`//metrics`).
async fn exposition(app: &TestApp) -> String {
    app.get("//metrics", &Auth::None)
        .await
        .text()
        .await
        .expect("metrics")
}

/// The hub's gauge of ingest requests on their way to the writer.
async fn arriving(app: &TestApp) -> i64 {
    let text = exposition(app).await;
    text.lines()
        .find_map(|l| l.strip_prefix("trusthub_ingest_requests_arriving "))
        .and_then(|v| v.trim().parse().ok())
        .expect("trusthub_ingest_requests_arriving")
}

/// SQLite folds a group's points into the rollups later while another request is on its way
/// to the writer (its body still arriving), and in that request's own transaction once it
/// comes: nothing is left unfolded at its 202, and every point is counted once. PostgreSQL
/// folds in every ingest transaction.
async fn a_request_on_its_way_defers_folding_to_its_own_transaction(b: Backend) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = TestApp::spawn(b).await;
    let (slow, quick) = (register(&app).await, register(&app).await);
    let now = OffsetDateTime::now_utc();
    let points = |n: i64| -> Value {
        json!(
            (0..n)
                .map(|j| json!({"name": format!("way.m{j}"), "ts": ts(now), "value": j}))
                .collect::<Vec<_>>()
        )
    };
    // The slow agent's request: headers and half its body now, the rest later.
    let slow_body = batch(points(3)).to_string();
    let host = app.base.trim_start_matches("http://").to_owned();
    let mut conn = tokio::net::TcpStream::connect(&host)
        .await
        .expect("connect");
    let head = format!(
        "POST /api/v1/ingest HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nX-Service-Signature: {}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        slow.token,
        sign_header(&slow.key, slow_body.as_bytes()),
        slow_body.len()
    );
    let (first, rest) = slow_body.as_bytes().split_at(slow_body.len() / 2);
    conn.write_all(head.as_bytes()).await.expect("head");
    conn.write_all(first).await.expect("first half");
    let mut waited = 0;
    while arriving(&app).await != 1 {
        waited += 1;
        assert!(waited < 500, "the slow request never counted as arriving");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    // Another agent's batch meanwhile: stored, its folding left to a later transaction.
    let quick_body = batch(points(2)).to_string();
    assert_eq!(
        send(&app, &quick, quick_body.as_bytes(), None, true)
            .await
            .status(),
        202
    );
    assert_eq!(app.stored_points().await, 2);
    let deferred = match b {
        Backend::Sqlite => 1,
        Backend::Postgres => 0,
    };
    assert_eq!(count(&app, "metric_unfolded").await, deferred);
    assert_eq!(
        app.rolled_up("metric_rollup_1m").await,
        2 - 2 * deferred,
        "folded only on PostgreSQL"
    );
    // The rest of the slow body: its own transaction folds everything.
    conn.write_all(rest).await.expect("rest");
    let mut answer = String::new();
    conn.read_to_string(&mut answer).await.expect("answer");
    assert!(answer.starts_with("HTTP/1.1 202"), "{answer}");
    assert_eq!(arriving(&app).await, 0);
    assert_eq!(count(&app, "metric_unfolded").await, 0);
    assert_eq!(app.stored_points().await, 5);
    assert_eq!(app.rolled_up("metric_rollup_1m").await, 5);
    assert_eq!(app.rolled_up("metric_rollup_1h").await, 5);
}

/// SQLite: points a crashed hub stored but had not folded yet (named by `metric_unfolded`
/// rows) are folded by the next start, each once, and the rows are gone; a key named twice,
/// or one whose row went with its agent, changes nothing more.
async fn points_left_unfolded_by_a_crash(b: Backend) {
    let mut app = TestApp::spawn(b).await;
    let host = register(&app).await;
    let now = OffsetDateTime::now_utc().unix_timestamp();
    let minute = OffsetDateTime::from_unix_timestamp((now - 600) / 60 * 60).expect("t");
    let one = batch(json!([{"name": "cpu.percent", "ts": ts(minute), "value": 10.0}]));
    assert_eq!(
        send(&app, &host, one.to_string().as_bytes(), None, true)
            .await
            .status(),
        202
    );
    assert_eq!(app.rolled_up("metric_rollup_1m").await, 1);
    // What a crash between storing and folding leaves: a stored row one second later, named
    // twice, and a key with no row.
    app.execute(
        "INSERT INTO metric_unfolded (keys) SELECT '[[' || agent_seq || ',' || (ts + 1000) || '],[' || agent_seq || ',' || (ts + 9000) || ']]' FROM metric_points",
    )
    .await;
    app.execute("INSERT INTO metric_unfolded (keys) SELECT keys FROM metric_unfolded")
        .await;
    app.execute("INSERT INTO metric_points (agent_seq, ts, points) SELECT agent_seq, ts + 1000, points FROM metric_points").await;
    assert_eq!(app.stored_points().await, 2);
    assert_eq!(count(&app, "metric_unfolded").await, 2);
    app.restart(|_| {}).await;
    settled(&app).await;
    assert_eq!(
        app.rolled_up("metric_rollup_1m").await,
        2,
        "the stored row once"
    );
    assert_eq!(app.rolled_up("metric_rollup_1h").await, 2);
    let next = batch(
        json!([{"name": "cpu.percent", "ts": ts(minute + time::Duration::seconds(2)), "value": 10.0}]),
    );
    assert_eq!(
        send(&app, &host, next.to_string().as_bytes(), None, true)
            .await
            .status(),
        202
    );
    assert_eq!(app.rolled_up("metric_rollup_1m").await, 3);
}

async fn deleting_an_agent_stops_its_token(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    send(
        &app,
        &host,
        full_batch(OffsetDateTime::now_utc()).to_string().as_bytes(),
        None,
        true,
    )
    .await;
    assert_eq!(
        app.delete(&format!("/agents/{}", host.id), &app.owner)
            .await
            .status(),
        204
    );
    assert_problem(
        send(
            &app,
            &host,
            batch(json!([])).to_string().as_bytes(),
            None,
            true,
        )
        .await,
        401,
        "unauthenticated",
    )
    .await;
    assert_problem(
        app.get(&format!("/agents/{}", host.id), &app.owner).await,
        404,
        "not_found",
    )
    .await;
    assert_eq!(app.stored_points().await, 0);
    assert_eq!(count(&app, "inventory_snapshots").await, 0);
}

async fn another_tenants_agents_are_404_and_unchanged(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    send(
        &app,
        &host,
        full_batch(OffsetDateTime::now_utc()).to_string().as_bytes(),
        None,
        true,
    )
    .await;
    let other = app.other_tenant().await;
    let id = &host.id;
    for path in [
        "",
        "/metrics",
        "/inventory",
        "/inventory/containers",
        "/processes",
        "/governance",
    ] {
        assert_problem(
            app.get(&format!("/agents/{id}{path}"), &other).await,
            404,
            "not_found",
        )
        .await;
    }
    assert_problem(
        app.delete(&format!("/agents/{id}"), &other).await,
        404,
        "not_found",
    )
    .await;
    assert_problem(
        app.post(&format!("/agents/{id}/rotate-token"), &other, json!({}))
            .await,
        404,
        "not_found",
    )
    .await;
    assert_problem(
        app.post(
            &format!("/agents/{id}/rotate-signing-key"),
            &other,
            json!({}),
        )
        .await,
        404,
        "not_found",
    )
    .await;
    let gov = json!({"ingest_interval_secs": 10, "inventory_interval_secs": 60, "tags": [], "allowed_actions": []});
    assert_problem(
        app.send_json(
            Method::PUT,
            &format!("/agents/{id}/governance"),
            &other,
            gov,
        )
        .await,
        404,
        "not_found",
    )
    .await;
    assert_eq!(body(app.get("/agents", &other).await).await, json!([]));
    // Still there, unchanged, token working, key pinned.
    assert_eq!(
        send(
            &app,
            &host,
            batch(json!([])).to_string().as_bytes(),
            None,
            true
        )
        .await
        .status(),
        202
    );
    let a = body(app.get(&format!("/agents/{id}"), &app.owner).await).await;
    assert_eq!(
        (
            a["signing_key_pinned"].clone(),
            a["ingest_interval_secs"].clone()
        ),
        (json!(true), json!(60))
    );
    // The other tenant's enrollment token registers the same machine id as a separate agent.
    let enroll = enrollment_token(&app, &other).await;
    let r = register_raw(&app, &enroll, &host.key, &host.key, &host.machine_id).await;
    assert_eq!(r.status(), 201);
    assert_ne!(body(r).await["agent_id"].as_str(), Some(id.as_str()));
}

async fn metric_ranges_raw_and_averaged_per_interval(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    // Six samples one minute apart, aligned on a 5-minute boundary.
    let now = OffsetDateTime::now_utc();
    let base_unix = (now.unix_timestamp() - 3600) / 300 * 300;
    let base = OffsetDateTime::from_unix_timestamp(base_unix).expect("t");
    let samples: Vec<Value> = (0..6).map(|i| json!({"name": "mem.used_bytes", "ts": ts(base + time::Duration::minutes(i)), "value": (i * 10) as f64})).collect();
    assert_eq!(
        send(
            &app,
            &host,
            batch(Value::Array(samples)).to_string().as_bytes(),
            None,
            true
        )
        .await
        .status(),
        202
    );
    let range = format!(
        "from={}&to={}",
        ts(base),
        ts(base + time::Duration::minutes(10))
    );
    let raw = body(
        app.get(&format!("/agents/{}/metrics?{range}", host.id), &app.owner)
            .await,
    )
    .await;
    assert_eq!(raw["series"][0]["points"].as_array().map(Vec::len), Some(6));
    let avg = body(
        app.get(
            &format!("/agents/{}/metrics?{range}&interval=5m", host.id),
            &app.owner,
        )
        .await,
    )
    .await;
    assert_eq!(
        avg["series"][0]["points"],
        json!([
            [ts(base), 20.0],
            [ts(base + time::Duration::minutes(5)), 50.0]
        ])
    );
    let narrow = body(
        app.get(
            &format!(
                "/agents/{}/metrics?from={}&to={}",
                host.id,
                ts(base + time::Duration::minutes(2)),
                ts(base + time::Duration::minutes(4))
            ),
            &app.owner,
        )
        .await,
    )
    .await;
    assert_eq!(
        narrow["series"][0]["points"],
        json!([
            [ts(base + time::Duration::minutes(2)), 20.0],
            [ts(base + time::Duration::minutes(3)), 30.0]
        ])
    );
    // The same samples again in another batch are kept once, in the points and in the rollups.
    let again: Vec<Value> = (0..6).map(|i| json!({"name": "mem.used_bytes", "ts": ts(base + time::Duration::minutes(i)), "value": (i * 10) as f64})).collect();
    assert_eq!(
        send(
            &app,
            &host,
            batch(Value::Array(again)).to_string().as_bytes(),
            None,
            true
        )
        .await
        .status(),
        202
    );
    let hour_start = OffsetDateTime::from_unix_timestamp(base_unix / 3600 * 3600).expect("t");
    let hour_range = format!(
        "from={}&to={}",
        ts(hour_start),
        ts(hour_start + time::Duration::hours(2))
    );
    let hourly = body(
        app.get(
            &format!("/agents/{}/metrics?{hour_range}&interval=1h", host.id),
            &app.owner,
        )
        .await,
    )
    .await;
    let hourly_points = hourly["series"][0]["points"]
        .as_array()
        .expect("points")
        .clone();
    // The six samples fall in one hour unless that hour ends within their five minutes.
    if hourly_points.len() == 1 {
        assert_eq!(
            hourly_points[0],
            json!([ts(hour_start), 25.0]),
            "mean of 0..50 step 10"
        );
    } else {
        assert_eq!(hourly_points.len(), 2, "{hourly}");
    }
    assert_eq!(
        app.rolled_up("metric_rollup_1m").await,
        6,
        "each sample counted once"
    );
    assert_eq!(app.rolled_up("metric_rollup_1h").await, 6);
    // Raw points expire; minute and hour rollups keep serving averaged queries.
    let mut tx = app.db.begin().await.expect("tx");
    trusthub_fleet::maintenance::purge_points(&mut tx, i64::MAX, 0)
        .await
        .expect("purge");
    tx.commit().await.expect("commit");
    let after = body(
        app.get(
            &format!("/agents/{}/metrics?{range}&interval=5m", host.id),
            &app.owner,
        )
        .await,
    )
    .await;
    assert_eq!(
        after["series"][0]["points"],
        json!([
            [ts(base), 20.0],
            [ts(base + time::Duration::minutes(5)), 50.0]
        ])
    );
    let raw_after = body(
        app.get(&format!("/agents/{}/metrics?{range}", host.id), &app.owner)
            .await,
    )
    .await;
    assert_eq!(raw_after, json!({"series": []}));
    let none = body(
        app.get(
            &format!("/agents/{}/metrics?{range}&name=nothing", host.id),
            &app.owner,
        )
        .await,
    )
    .await;
    assert_eq!(none, json!({"series": []}));
    for bad in [
        "interval=5x",
        "from=yesterday",
        "interval=1s&from=2000-01-01T00:00:00Z",
    ] {
        assert_problem(
            app.get(&format!("/agents/{}/metrics?{bad}", host.id), &app.owner)
                .await,
            400,
            "bad_request",
        )
        .await;
    }
    assert_problem(
        app.get(&format!("/agents/{}/metrics", Uuid::new_v4()), &app.owner)
            .await,
        404,
        "not_found",
    )
    .await;
}

async fn governance_is_validated_and_the_host_allowlist_vetoes(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    let path = format!("/agents/{}/governance", host.id);
    let g = body(app.get(&path, &app.owner).await).await;
    assert_eq!(g["allowed_actions"].as_array().map(Vec::len), Some(5));
    assert_eq!(g["host_allowed_actions"], Value::Null);
    let bad = app.send_json(Method::PUT, &path, &app.owner, json!({"ingest_interval_secs": 1, "inventory_interval_secs": 60, "tags": ["bad tag"], "allowed_actions": ["reboot"]})).await;
    let p = assert_problem(bad, 422, "validation_failed").await;
    assert_eq!(p["errors"].as_array().map(Vec::len), Some(3));
    let ok = app.send_json(Method::PUT, &path, &app.owner, json!({"ingest_interval_secs": 30, "inventory_interval_secs": 3600, "tags": ["env:prod"], "allowed_actions": ["restart_app", "console_open"]})).await;
    assert_eq!(ok.status(), 200);
    // The host reports its own allowlist in a heartbeat: console_open is vetoed there.
    let hb = json!({"allowed_actions": ["restart_app", "install_package", "update_packages", "emergency"]}).to_string();
    let r = app
        .req(
            Method::POST,
            &format!("/agents/{}/heartbeat", host.id),
            &Auth::Bearer(host.token.clone()),
        )
        .header("content-type", "application/json")
        .header("x-service-signature", sign_header(&host.key, hb.as_bytes()))
        .body(hb.clone())
        .send()
        .await
        .expect("hb");
    assert_eq!(r.status(), 200);
    let g = body(app.get(&path, &app.owner).await).await;
    assert_eq!(g["effective_actions"], json!(["restart_app"]));
    // The agent learns the governed intervals from every ingest answer.
    let ack = body(
        send(
            &app,
            &host,
            batch(json!([])).to_string().as_bytes(),
            None,
            true,
        )
        .await,
    )
    .await;
    assert_eq!(
        (
            ack["ingest_interval_secs"].clone(),
            ack["inventory_interval_secs"].clone()
        ),
        (json!(30), json!(3600))
    );
    assert_eq!(g["tags"], json!(["env:prod"]));
    assert_eq!(
        body(app.get(&format!("/agents/{}", host.id), &app.owner).await).await["ingest_interval_secs"],
        30
    );
    // A heartbeat for another agent's id is 404.
    let r = app
        .req(
            Method::POST,
            &format!("/agents/{}/heartbeat", Uuid::new_v4()),
            &Auth::Bearer(host.token.clone()),
        )
        .header("content-type", "application/json")
        .header("x-service-signature", sign_header(&host.key, hb.as_bytes()))
        .body(hb)
        .send()
        .await
        .expect("hb");
    assert_problem(r, 404, "not_found").await;
}

async fn only_admins_enrol_and_rotate(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    let gov = json!({"ingest_interval_secs": 30, "inventory_interval_secs": 3600, "tags": [], "allowed_actions": []});
    for role in ["viewer", "operator"] {
        let (s, _) = app.user_with_role(role).await;
        assert_problem(
            app.post("/agents/enrollment-tokens", &s, json!({})).await,
            403,
            "forbidden",
        )
        .await;
        assert_problem(
            app.post(&format!("/agents/{}/rotate-token", host.id), &s, json!({}))
                .await,
            403,
            "forbidden",
        )
        .await;
        assert_problem(
            app.post(
                &format!("/agents/{}/rotate-signing-key", host.id),
                &s,
                json!({}),
            )
            .await,
            403,
            "forbidden",
        )
        .await;
        assert_problem(
            app.delete(&format!("/agents/{}", host.id), &s).await,
            403,
            "forbidden",
        )
        .await;
        // Governance is written by operators (CONTRACT 20).
        let r = app
            .send_json(
                Method::PUT,
                &format!("/agents/{}/governance", host.id),
                &s,
                gov.clone(),
            )
            .await;
        if role == "viewer" {
            assert_problem(r, 403, "forbidden").await;
        } else {
            assert_eq!(r.status(), 200);
        }
        assert_eq!(
            app.get(&format!("/agents/{}", host.id), &s).await.status(),
            200
        );
    }
    for path in [
        "/agents",
        &format!("/agents/{}", host.id),
        &format!("/agents/{}/metrics", host.id),
    ] {
        assert_problem(app.get(path, &Auth::None).await, 401, "unauthenticated").await;
    }
    assert_problem(
        app.post("/agents/enrollment-tokens", &Auth::None, json!({}))
            .await,
        401,
        "unauthenticated",
    )
    .await;
    let (admin, _) = app.user_with_role("admin").await;
    assert_eq!(
        app.post("/agents/enrollment-tokens", &admin, json!({}))
            .await
            .status(),
        201
    );
}

async fn concurrent_batches_and_concurrent_duplicates_are_each_stored_once(b: Backend) {
    let app = TestApp::spawn(b).await;
    let (h1, h2) = (register(&app).await, register(&app).await);
    let now = OffsetDateTime::now_utc();
    // 20 distinct batches, each sent twice at the same moment, from two agents.
    let mut bodies = Vec::new();
    for i in 0..20i64 {
        let metrics: Vec<Value> = (0..5).map(|j| json!({"name": "conc.metric", "ts": ts(now - time::Duration::seconds(i * 5 + j)), "value": 1.0})).collect();
        let body =
            json!({"batch_id": Uuid::new_v4(), "sent_at": ts(now), "metrics": metrics}).to_string();
        bodies.push((if i % 2 == 0 { &h1 } else { &h2 }, body));
    }
    let sends = bodies.iter().flat_map(|(h, body)| {
        [
            send(&app, h, body.as_bytes(), None, true),
            send(&app, h, body.as_bytes(), None, true),
        ]
    });
    let answers = futures_join(sends.collect()).await;
    let mut fresh = 0;
    for r in answers {
        assert_eq!(r.status(), 202);
        if body(r).await["duplicate"] == false {
            fresh += 1;
        }
    }
    assert_eq!(fresh, 20, "each batch stored exactly once");
    assert_eq!(app.stored_points().await, 100);
    assert_eq!(count(&app, "ingest_batches").await, 20);
    assert_eq!(app.rolled_up("metric_rollup_1m").await, 100);
}

/// An agent that lost its spool state re-sends points the hub has, under new batch ids,
/// mixed with new ones: each point is kept once, the rollups count it once, and the repeats
/// are counted in `/metrics`.
async fn points_re_sent_under_a_new_batch_id_are_kept_once_and_counted(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    let now = OffsetDateTime::now_utc();
    let point = |series: i64, secs: i64| json!({"name": format!("resend.m{series}"), "ts": ts(now - time::Duration::seconds(secs)), "value": 2.0});
    let first: Vec<Value> = (0..100).map(|i| point(i, 10)).collect();
    let r = send(
        &app,
        &host,
        batch(json!(first)).to_string().as_bytes(),
        None,
        true,
    )
    .await;
    assert_eq!(r.status(), 202);
    // The same 100 points again, plus 50 new ones (a newer scrape), and one repeated twice.
    let mut again: Vec<Value> = (0..100).map(|i| point(i, 10)).collect();
    again.extend((0..50).map(|i| point(i, 5)));
    again.push(point(3, 5));
    let r = send(
        &app,
        &host,
        batch(json!(again)).to_string().as_bytes(),
        None,
        true,
    )
    .await;
    assert_eq!(r.status(), 202);
    assert_eq!(
        body(r).await["duplicate"],
        false,
        "a new batch id is a new batch"
    );
    assert_eq!(app.stored_points().await, 150);
    assert_eq!(
        app.rolled_up("metric_rollup_1m").await,
        150,
        "rollups count each point once"
    );
    let text = exposition(&app).await;
    assert!(
        text.contains("trusthub_ingest_points_repeated_total 101"),
        "{}",
        text.lines()
            .filter(|l| l.contains("repeated"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Runs the futures concurrently on the runtime and collects their outputs in order.
async fn futures_join<F: std::future::Future<Output = Response> + Send>(
    futs: Vec<F>,
) -> Vec<Response> {
    let mut set = Vec::new();
    // Poll all of them together: send every request before awaiting any answer.
    let mut pinned: Vec<std::pin::Pin<Box<F>>> = futs.into_iter().map(Box::pin).collect();
    let mut done: Vec<Option<Response>> = (0..pinned.len()).map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut all = true;
        for (i, f) in pinned.iter_mut().enumerate() {
            if done[i].is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(r) => done[i] = Some(r),
                    std::task::Poll::Pending => all = false,
                }
            }
        }
        if all {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
    for d in done {
        set.push(d.expect("done"));
    }
    set
}

async fn enrollment_tokens_are_listed_without_secrets_and_revocable(b: Backend) {
    let app = TestApp::spawn(b).await;
    let token = enrollment_token(&app, &app.owner).await;
    let list = body(app.get("/agents/enrollment-tokens", &app.owner).await).await;
    assert_eq!(list.as_array().map(Vec::len), Some(1));
    assert_eq!(list[0]["tags"], json!(["env:test"]));
    assert!(!list.to_string().contains(&token), "never the token");
    let id = list[0]["id"].as_str().expect("id").to_owned();
    let (viewer, _) = app.user_with_role("operator").await;
    assert_problem(
        app.get("/agents/enrollment-tokens", &viewer).await,
        403,
        "forbidden",
    )
    .await;
    assert_problem(
        app.delete(&format!("/agents/enrollment-tokens/{id}"), &viewer)
            .await,
        403,
        "forbidden",
    )
    .await;
    let other = app.other_tenant().await;
    assert_problem(
        app.delete(&format!("/agents/enrollment-tokens/{id}"), &other)
            .await,
        404,
        "not_found",
    )
    .await;
    assert_eq!(
        body(app.get("/agents/enrollment-tokens", &other).await).await,
        json!([])
    );
    // Still enrols after the refused attempts; no more after the revocation.
    let k = key();
    assert_eq!(
        register_raw(&app, &token, &k, &k, "m-1").await.status(),
        201
    );
    assert_eq!(
        app.delete(&format!("/agents/enrollment-tokens/{id}"), &app.owner)
            .await
            .status(),
        204
    );
    assert_problem(
        register_raw(&app, &token, &k, &k, "m-2").await,
        401,
        "unauthenticated",
    )
    .await;
    assert_problem(
        app.delete(&format!("/agents/enrollment-tokens/{id}"), &app.owner)
            .await,
        404,
        "not_found",
    )
    .await;
    // The agent it enrolled keeps working.
    assert_eq!(
        body(app.get("/agents", &app.owner).await)
            .await
            .as_array()
            .map(Vec::len),
        Some(1)
    );
}

/// CONTRACT 33: `PATCH /agents/{id}/governance` is a JSON merge patch: the fields sent
/// replace theirs, the others stay, `null` restores a default; checked as `PUT` is, a
/// misspelt field refused by name, a viewer refused, another tenant's agent 404.
async fn governance_takes_a_merge_patch_that_keeps_what_it_does_not_name(b: Backend) {
    let app = TestApp::spawn(b).await;
    let host = register(&app).await;
    let path = format!("/agents/{}/governance", host.id);
    let before = body(app.get(&path, &app.owner).await).await;
    let r = app
        .patch(
            &path,
            &app.owner,
            json!({"tags": ["env:prod"], "config_paths": ["/etc/app/*.conf"]}),
        )
        .await;
    assert_eq!(r.status(), 200);
    let g = body(r).await;
    assert_eq!(g["tags"], json!(["env:prod"]));
    assert_eq!(g["config_paths"], json!(["/etc/app/*.conf"]));
    for kept in [
        "ingest_interval_secs",
        "inventory_interval_secs",
        "allowed_actions",
        "config_scan_interval_secs",
        "compliance_interval_secs",
        "honeypots",
    ] {
        assert_eq!(g[kept], before[kept], "{kept}");
    }
    // `null` puts the default list back; the tags stay.
    let g = body(
        app.patch(&path, &app.owner, json!({"config_paths": null}))
            .await,
    )
    .await;
    assert_eq!(g["config_paths"], before["config_paths"]);
    assert_eq!(g["tags"], json!(["env:prod"]));
    // The PUT checks, each field named; a misspelt field is refused, nothing changes.
    let p = assert_problem(
        app.patch(&path, &app.owner, json!({"ingest_interval_secs": 1}))
            .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(p["errors"][0]["field"], "ingest_interval_secs");
    let r = app.patch(&path, &app.owner, json!({"tag": ["x"]})).await;
    assert_eq!(r.status(), 422);
    assert!(body(r).await.to_string().contains("tag"));
    assert_eq!(
        body(app.get(&path, &app.owner).await).await["tags"],
        json!(["env:prod"])
    );
    let (viewer, _) = app.user_with_role("viewer").await;
    assert_eq!(
        app.patch(&path, &viewer, json!({"tags": []}))
            .await
            .status(),
        403
    );
    let other = app.other_tenant().await;
    assert_eq!(
        app.patch(&path, &other, json!({"tags": []})).await.status(),
        404
    );
}
