//! Client certificates (SPEC 5; CONTRACT 12, 14), checked with openssl as the oracle: CSRs
//! made by `openssl req` are signed for the agent (CN = agent id, OU = tenant id whatever they
//! asked), `openssl verify` accepts the certificates against `GET /agents/ca-cert`, the CRL of
//! `GET /agents/ca.crl` verifies and revokes, rotation leaves one active certificate even under
//! concurrent requests, and the CA survives restarts, is shared, and is refused under another
//! key.

use crate::agents::{Host, register};
use crate::harness::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

crate::dual!(
    a_csr_is_signed_for_the_agent_and_openssl_verifies_it,
    rotation_and_revocation_reach_the_crl_and_concurrent_requests_leave_one_active,
    bad_requests_are_refused_and_change_nothing,
    the_ca_is_kept_across_starts_shared_and_refused_under_another_key,
);

/// Runs openssl; its stdout (panics with stderr on failure).
fn openssl(args: &[&str]) -> String {
    let out = Command::new("openssl")
        .args(args)
        .output()
        .expect("openssl runs");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// An openssl run that must fail; its combined output.
fn openssl_fails(args: &[&str]) -> String {
    let out = Command::new("openssl")
        .args(args)
        .output()
        .expect("openssl runs");
    assert!(!out.status.success(), "openssl {args:?} should fail");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn path(dir: &TempDir, name: &str) -> PathBuf {
    dir.0.join(name)
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// A CSR made by openssl with a key of `key` (`rsa:2048`, `ec`...) and a subject that lies.
fn csr(dir: &TempDir, name: &str, key: &str) -> String {
    let (k, c) = (
        path(dir, &format!("{name}.key")),
        path(dir, &format!("{name}.csr")),
    );
    let mut args = vec![
        "req",
        "-new",
        "-nodes",
        "-subj",
        "/CN=somebody-else/OU=another-tenant",
    ];
    if key == "ec" {
        args.extend(["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"]);
    } else {
        args.extend(["-newkey", key]);
    }
    args.extend(["-keyout", s(&k), "-out", s(&c)]);
    openssl(&args);
    std::fs::read_to_string(c).expect("csr")
}

async fn issue(app: &TestApp, host: &Host, body: Value) -> reqwest::Response {
    app.post(
        "/agents/issue-client-cert",
        &Auth::Bearer(host.token.clone()),
        body,
    )
    .await
}

async fn ca_pem(app: &TestApp, dir: &TempDir) -> PathBuf {
    let r = app.get("/agents/ca-cert", &Auth::None).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/x-pem-file");
    let p = path(dir, "ca.pem");
    std::fs::write(&p, r.text().await.expect("pem")).expect("write");
    p
}

/// The CRL as openssl reads it (PEM), after checking its signature with the CA.
async fn crl_pem(app: &TestApp, dir: &TempDir, ca: &Path) -> (PathBuf, String) {
    let r = app.get("/agents/ca.crl", &Auth::None).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/pkix-crl");
    let der = path(dir, "crl.der");
    std::fs::write(&der, r.bytes().await.expect("der")).expect("write");
    let pem = path(dir, "crl.pem");
    let out = Command::new("openssl")
        .args([
            "crl",
            "-inform",
            "DER",
            "-in",
            s(&der),
            "-CAfile",
            s(ca),
            "-noout",
        ])
        .output()
        .expect("openssl");
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success() && said.contains("verify OK"), "{said}");
    openssl(&["crl", "-inform", "DER", "-in", s(&der), "-out", s(&pem)]);
    let text = openssl(&["crl", "-in", s(&pem), "-noout", "-text"]);
    (pem, text)
}

fn write(dir: &TempDir, name: &str, text: &str) -> PathBuf {
    let p = path(dir, name);
    std::fs::write(&p, text).expect("write");
    p
}

async fn a_csr_is_signed_for_the_agent_and_openssl_verifies_it(b: Backend) {
    let app = TestApp::spawn(b).await;
    let dir = TempDir::new();
    let host = register(&app).await;
    let request = csr(&dir, "agent", "rsa:2048");
    let r = issue(&app, &host, json!({"csr_pem": request})).await;
    assert_eq!(r.status(), 201);
    let got = body(r).await;
    assert!(
        got.get("private_key_pem").is_none(),
        "the key stayed on the host"
    );
    let cert = write(
        &dir,
        "agent.crt",
        got["certificate_pem"].as_str().expect("pem"),
    );
    let ca = ca_pem(&app, &dir).await;
    assert_eq!(
        std::fs::read_to_string(&ca).expect("ca"),
        got["ca_pem"].as_str().expect("ca_pem")
    );
    assert!(openssl(&["verify", "-CAfile", s(&ca), s(&cert)]).contains(": OK"));
    // The subject is the hub's, not the CSR's.
    let tenant = body(app.get("/me", &app.owner).await).await["tenant"]["id"]
        .as_str()
        .expect("tenant")
        .to_owned();
    let subject = openssl(&[
        "x509",
        "-in",
        s(&cert),
        "-noout",
        "-subject",
        "-nameopt",
        "RFC2253",
    ]);
    assert!(subject.contains(&format!("CN={}", host.id)), "{subject}");
    assert!(subject.contains(&format!("OU={tenant}")), "{subject}");
    assert!(!subject.contains("somebody-else"), "{subject}");
    // The CSR's key, for client authentication only, 365 days.
    let modulus = |args: &[&str]| openssl(args).trim().to_owned();
    assert_eq!(
        modulus(&["x509", "-in", s(&cert), "-noout", "-modulus"]),
        modulus(&[
            "rsa",
            "-in",
            s(&path(&dir, "agent.key")),
            "-noout",
            "-modulus"
        ])
    );
    let text = openssl(&["x509", "-in", s(&cert), "-noout", "-text"]);
    assert!(text.contains("TLS Web Client Authentication"), "{text}");
    assert!(text.contains("CA:FALSE"), "{text}");
    assert!(text.contains("Public-Key: (2048 bit)"), "{text}");
    openssl(&[
        "x509",
        "-in",
        s(&cert),
        "-noout",
        "-checkend",
        &(364 * 86_400).to_string(),
    ]);
    openssl_fails(&[
        "x509",
        "-in",
        s(&cert),
        "-noout",
        "-checkend",
        &(366 * 86_400).to_string(),
    ]);
    // Serial and fingerprint as the API reports them.
    let serial = openssl(&["x509", "-in", s(&cert), "-noout", "-serial"]);
    assert_eq!(
        serial.trim().trim_start_matches("serial=").to_lowercase(),
        got["serial"].as_str().expect("serial")
    );
    let fp = openssl(&["x509", "-in", s(&cert), "-noout", "-fingerprint", "-sha256"]);
    assert_eq!(
        fp.trim()
            .split('=')
            .nth(1)
            .expect("fp")
            .replace(':', "")
            .to_lowercase(),
        got["fingerprint_sha256"].as_str().expect("fp")
    );
    // The CA: RSA (2048 bits under test; 4096 by default), a CA, ten years.
    let ca_text = openssl(&["x509", "-in", s(&ca), "-noout", "-text"]);
    assert!(ca_text.contains("CA:TRUE"), "{ca_text}");
    assert!(ca_text.contains("Certificate Sign, CRL Sign"), "{ca_text}");
    openssl(&[
        "x509",
        "-in",
        s(&ca),
        "-noout",
        "-checkend",
        &(3650 * 86_400).to_string(),
    ]);

    // Without a CSR the hub makes the key and hands it out once.
    let r = issue(&app, &host, json!({})).await;
    assert_eq!(r.status(), 201);
    let got = body(r).await;
    let key = write(
        &dir,
        "hub-made.key",
        got["private_key_pem"].as_str().expect("key"),
    );
    let cert = write(
        &dir,
        "hub-made.crt",
        got["certificate_pem"].as_str().expect("pem"),
    );
    assert!(openssl(&["verify", "-CAfile", s(&ca), s(&cert)]).contains(": OK"));
    assert_eq!(
        modulus(&["x509", "-in", s(&cert), "-noout", "-modulus"]),
        modulus(&["rsa", "-in", s(&key), "-noout", "-modulus"])
    );
    assert!(openssl(&["rsa", "-in", s(&key), "-noout", "-text"]).contains("(2048 bit"));
    let listed = body(
        app.get(&format!("/agents/{}/client-certs", host.id), &app.owner)
            .await,
    )
    .await;
    assert_eq!(listed[0]["key_generated_by_hub"], true, "{listed}");
    assert_eq!(listed[1]["revoke_reason"], "rotated", "{listed}");
    let audit = body(
        app.get("/audit-log?event_type=client_cert_issued", &app.owner)
            .await,
    )
    .await;
    assert_eq!(audit.as_array().map(Vec::len), Some(2), "{audit}");
    assert!(
        !audit.to_string().contains("PRIVATE KEY"),
        "no key in the audit log"
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM client_certs WHERE certificate_pem LIKE '%PRIVATE%'")
            .await,
        0,
        "the hub keeps no private key"
    );
}

async fn rotation_and_revocation_reach_the_crl_and_concurrent_requests_leave_one_active(
    b: Backend,
) {
    let app = TestApp::spawn(b).await;
    let dir = TempDir::new();
    let host = register(&app).await;
    let ca = ca_pem(&app, &dir).await;
    let (_, text) = crl_pem(&app, &dir, &ca).await;
    assert!(text.contains("No Revoked Certificates"), "{text}");
    let record_at = format!("/agents/{}", host.id);
    let record = body(app.get(&record_at, &app.owner).await).await;
    assert_eq!(record["has_client_cert"], false, "{record}");
    assert!(record["client_cert_not_after"].is_null());

    let first =
        body(issue(&app, &host, json!({"csr_pem": csr(&dir, "a", "rsa:2048")})).await).await;
    let second =
        body(issue(&app, &host, json!({"csr_pem": csr(&dir, "b", "rsa:2048")})).await).await;
    let old = write(
        &dir,
        "old.crt",
        first["certificate_pem"].as_str().expect("pem"),
    );
    let new = write(
        &dir,
        "new.crt",
        second["certificate_pem"].as_str().expect("pem"),
    );
    let record = body(app.get(&record_at, &app.owner).await).await;
    assert_eq!(record["has_client_cert"], true, "{record}");
    assert_eq!(record["client_cert_not_after"], second["not_after"]);
    let listed = body(app.get("/agents", &app.owner).await).await;
    assert_eq!(listed[0]["has_client_cert"], true, "{listed}");
    let (crl, text) = crl_pem(&app, &dir, &ca).await;
    let upper = |v: &Value| v.as_str().expect("serial").to_uppercase();
    assert!(text.contains(&upper(&first["serial"])), "{text}");
    assert!(
        text.contains("Superseded"),
        "rotation is 'superseded': {text}"
    );
    assert!(!text.contains(&upper(&second["serial"])), "{text}");
    let refused = openssl_fails(&[
        "verify",
        "-crl_check",
        "-CAfile",
        s(&ca),
        "-CRLfile",
        s(&crl),
        s(&old),
    ]);
    assert!(refused.contains("certificate revoked"), "{refused}");
    assert!(
        openssl(&[
            "verify",
            "-crl_check",
            "-CAfile",
            s(&ca),
            "-CRLfile",
            s(&crl),
            s(&new)
        ])
        .contains(": OK")
    );

    // An admin revokes the current one: in the CRL, listed with the reason; twice is 409.
    let serial = second["serial"].as_str().expect("serial");
    let at = format!("/agents/{}/client-certs/{serial}/revoke", host.id);
    let (viewer, _) = app.user_with_role("viewer").await;
    assert_problem(
        app.post(&at, &viewer, json!({"reason": "x"})).await,
        403,
        "forbidden",
    )
    .await;
    let other = app.other_tenant().await;
    assert_problem(
        app.post(&at, &other, json!({"reason": "x"})).await,
        404,
        "not_found",
    )
    .await;
    let r = app
        .post(&at, &app.owner, json!({"reason": "laptop stolen"}))
        .await;
    assert_eq!(r.status(), 200);
    let row = body(r).await;
    assert_eq!(row["revoke_reason"], "laptop stolen");
    assert!(row["revoked_at"].is_string());
    let record = body(app.get(&record_at, &app.owner).await).await;
    assert_eq!(record["has_client_cert"], false, "revoked: {record}");
    assert_problem(
        app.post(&at, &app.owner, json!({"reason": "again"})).await,
        409,
        "conflict",
    )
    .await;
    let (crl, text) = crl_pem(&app, &dir, &ca).await;
    assert!(text.contains(&upper(&second["serial"])), "{text}");
    let refused = openssl_fails(&[
        "verify",
        "-crl_check",
        "-CAfile",
        s(&ca),
        "-CRLfile",
        s(&crl),
        s(&new),
    ]);
    assert!(refused.contains("certificate revoked"), "{refused}");
    assert_eq!(
        body(
            app.get(&format!("/agents/{}/client-certs", host.id), &other)
                .await
        )
        .await["status"],
        404
    );

    // Eight issuances at once: exactly one certificate stays active.
    let mut set = tokio::task::JoinSet::new();
    for i in 0..8 {
        let request = csr(&dir, &format!("race{i}"), "rsa:2048");
        let (client, url, token) = (
            http_client(),
            app.url("/agents/issue-client-cert"),
            host.token.clone(),
        );
        set.spawn(async move {
            client
                .post(url)
                .bearer_auth(token)
                .json(&json!({"csr_pem": request}))
                .send()
                .await
                .expect("issue")
                .status()
        });
    }
    let mut statuses = Vec::new();
    while let Some(s) = set.join_next().await {
        statuses.push(s.expect("task"));
    }
    assert!(statuses.iter().all(|s| *s == 201), "{statuses:?}");
    assert_eq!(
        app.count("SELECT COUNT(*) FROM client_certs WHERE revoked_at IS NULL")
            .await,
        1
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM client_certs").await, 10);

    // Deleting the agent revokes its certificate; the CRL keeps it.
    let active = body(
        app.get(&format!("/agents/{}/client-certs", host.id), &app.owner)
            .await,
    )
    .await;
    let last = active[0]["serial"].as_str().expect("serial").to_uppercase();
    assert_eq!(
        app.delete(&format!("/agents/{}", host.id), &app.owner)
            .await
            .status(),
        204
    );
    let (_, text) = crl_pem(&app, &dir, &ca).await;
    assert!(text.contains(&last), "{text}");
    assert!(text.contains("Cessation Of Operation"), "{text}");
}

async fn bad_requests_are_refused_and_change_nothing(b: Backend) {
    let app = TestApp::spawn(b).await;
    let dir = TempDir::new();
    let host = register(&app).await;
    let refused = |field: &'static str| move |p: &Value| names_field(p, field);
    for (body_, why) in [
        (json!({"csr_pem": "hello"}), "PEM"),
        (json!({"csr_pem": csr(&dir, "small", "rsa:1024")}), "2048"),
        (json!({"csr_pem": csr(&dir, "ec", "ec")}), "not RSA"),
    ] {
        let p = assert_problem(issue(&app, &host, body_).await, 422, "validation_failed").await;
        assert!(refused("csr_pem")(&p), "{p}");
        assert!(p.to_string().contains(why), "{why}: {p}");
    }
    // A request whose signature does not match its content.
    let good = csr(&dir, "tampered", "rsa:2048");
    let der_path = path(&dir, "tampered.der");
    openssl(&[
        "req",
        "-in",
        s(&path(&dir, "tampered.csr")),
        "-outform",
        "DER",
        "-out",
        s(&der_path),
    ]);
    let mut bytes = std::fs::read(&der_path).expect("der");
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
    let tampered = format!(
        "-----BEGIN CERTIFICATE REQUEST-----\n{}\n-----END CERTIFICATE REQUEST-----\n",
        data_encoding::BASE64.encode(&bytes)
    );
    assert_ne!(tampered, good);
    let p = assert_problem(
        issue(&app, &host, json!({"csr_pem": tampered})).await,
        422,
        "validation_failed",
    )
    .await;
    assert!(p.to_string().contains("does not verify"), "{p}");
    let p = assert_problem(
        issue(&app, &host, json!({"csr": good})).await,
        422,
        "validation_failed",
    )
    .await;
    assert!(names_field(&p, "csr"), "{p}");
    // Only an agent's token: no token, a user, another agent's revoked token.
    assert_problem(
        app.post("/agents/issue-client-cert", &Auth::None, json!({}))
            .await,
        401,
        "unauthenticated",
    )
    .await;
    assert_eq!(
        app.post("/agents/issue-client-cert", &app.owner, json!({}))
            .await
            .status(),
        401
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM client_certs").await, 0);
    assert_problem(
        app.post(
            &format!("/agents/{}/client-certs/00/revoke", host.id),
            &app.owner,
            json!({"reason": ""}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert_problem(
        app.post(
            &format!("/agents/{}/client-certs/00/revoke", host.id),
            &app.owner,
            json!({"reason": "x"}),
        )
        .await,
        404,
        "not_found",
    )
    .await;
}

async fn the_ca_is_kept_across_starts_shared_and_refused_under_another_key(b: Backend) {
    let dir = TempDir::new();
    let (mut settings, pg) = TestApp::settings(b, &dir).await;
    settings.encryption_key = Some(TEST_KEY.into());
    let first = trusthub_hub::Server::build(settings.clone())
        .await
        .expect("first start");
    let ca = first
        .state()
        .part::<trusthub_hub::ca::HubCa>()
        .cert_pem()
        .to_owned();
    assert!(ca.contains("BEGIN CERTIFICATE"));
    if b == Backend::Postgres {
        // A second hub process on the same database uses the same CA.
        let other_dir = TempDir::new();
        let mut other = settings.clone();
        other.db.data_dir = other_dir.0.clone();
        let second = trusthub_hub::Server::build(other)
            .await
            .expect("second hub");
        assert_eq!(
            second.state().part::<trusthub_hub::ca::HubCa>().cert_pem(),
            ca
        );
    }
    drop(first);
    let again = trusthub_hub::Server::build(settings.clone())
        .await
        .expect("restart");
    assert_eq!(
        again.state().part::<trusthub_hub::ca::HubCa>().cert_pem(),
        ca,
        "the same CA after a restart"
    );
    drop(again);
    let mut wrong = settings.clone();
    wrong.encryption_key =
        Some("ff0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f".into());
    let Err(err) = trusthub_hub::Server::build(wrong).await else {
        panic!("another CLOUD_ENCRYPTION_KEY is refused");
    };
    assert!(err.to_string().contains("CLOUD_ENCRYPTION_KEY"), "{err}");
    if let Some(name) = pg {
        drop_pg_database(name);
    }
}
