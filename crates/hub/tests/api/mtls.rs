//! The TLS front with client certificates (SPEC 5.6, 5.7; CONTRACT 14), driven with curl as an
//! agent would: a certificate is requested, never required; the one an agent presents must be
//! its own, issued by this hub and not revoked, or the request is 401 and an integrity
//! anomaly (with its alert) says why; `X-Service-Client-*` headers from anyone but
//! the TLS front or a `--trusted-proxy` are stripped.

use crate::agents::{Host, register};
use crate::harness::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

crate::dual!(
    agents_present_their_own_certificate_at_the_tls_front_and_others_are_refused,
    client_headers_count_only_from_a_trusted_proxy,
    tls_self_serves_https_with_a_certificate_of_the_hub_ca,
);

fn run(cmd: &str, args: &[&str]) -> std::process::Output {
    Command::new(cmd).args(args).output().expect("runs")
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8")
}

/// A server certificate for 127.0.0.1 and the test CA that signed it (the CA is what clients
/// trust; the certificate and its key are what the hub serves).
fn server_cert(dir: &TempDir) -> (PathBuf, PathBuf, PathBuf) {
    let p = |n: &str| dir.0.join(n);
    let ok = |out: std::process::Output| {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    ok(run(
        "openssl",
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=test server CA",
            "-keyout",
            s(&p("sca.key")),
            "-out",
            s(&p("sca.crt")),
        ],
    ));
    ok(run(
        "openssl",
        &[
            "req",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-subj",
            "/CN=localhost",
            "-keyout",
            s(&p("hub.key")),
            "-out",
            s(&p("hub.csr")),
        ],
    ));
    std::fs::write(
        p("ext.cnf"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
    )
    .expect("ext");
    ok(run(
        "openssl",
        &[
            "x509",
            "-req",
            "-in",
            s(&p("hub.csr")),
            "-CA",
            s(&p("sca.crt")),
            "-CAkey",
            s(&p("sca.key")),
            "-CAcreateserial",
            "-days",
            "1",
            "-extfile",
            s(&p("ext.cnf")),
            "-out",
            s(&p("hub.crt")),
        ],
    ));
    // The hub serves the chain; the test client trusts its last certificate, the CA.
    let chain = format!(
        "{}{}",
        std::fs::read_to_string(p("hub.crt")).expect("crt"),
        std::fs::read_to_string(p("sca.crt")).expect("ca")
    );
    std::fs::write(p("chain.pem"), chain).expect("chain");
    (p("sca.crt"), p("chain.pem"), p("hub.key"))
}

/// A key and CSR made by openssl, then the certificate the hub issues for `host`.
async fn certificate(
    app: &TestApp,
    dir: &TempDir,
    host: &Host,
    name: &str,
) -> (PathBuf, PathBuf, Value) {
    let (key, csr, crt) = (
        dir.0.join(format!("{name}.key")),
        dir.0.join(format!("{name}.csr")),
        dir.0.join(format!("{name}.crt")),
    );
    let out = run(
        "openssl",
        &[
            "req",
            "-new",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=x",
            "-keyout",
            s(&key),
            "-out",
            s(&csr),
        ],
    );
    assert!(out.status.success());
    let r = app
        .post(
            "/agents/issue-client-cert",
            &Auth::Bearer(host.token.clone()),
            json!({"csr_pem": std::fs::read_to_string(&csr).expect("csr")}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let got = body(r).await;
    std::fs::write(&crt, got["certificate_pem"].as_str().expect("pem")).expect("write");
    (crt, key, got)
}

/// A signed heartbeat of `host` through curl: the HTTP status, or `None` when the TLS
/// handshake itself failed.
fn heartbeat(
    base: &str,
    ca: &Path,
    host: &Host,
    cert: Option<(&Path, &Path)>,
    headers: &[String],
) -> Option<u16> {
    let signature = trusthub_core::agent::sign_header(&host.key, b"{}");
    let mut args: Vec<String> = vec![
        "-s".into(),
        "-o".into(),
        "/dev/null".into(),
        "-w".into(),
        "%{http_code}".into(),
        "--max-time".into(),
        "10".into(),
        "--cacert".into(),
        s(ca).into(),
        "-H".into(),
        format!("authorization: Bearer {}", host.token),
        "-H".into(),
        "content-type: application/json".into(),
        "-H".into(),
        format!("x-service-signature: {signature}"),
        "--data".into(),
        "{}".into(),
    ];
    if let Some((crt, key)) = cert {
        args.extend([
            "--cert".into(),
            s(crt).into(),
            "--key".into(),
            s(key).into(),
        ]);
    }
    for h in headers {
        args.extend(["-H".into(), h.clone()]);
    }
    args.push(format!("{base}/api/v1/agents/{}/heartbeat", host.id));
    let out = Command::new("curl")
        .args(&args)
        .output()
        .expect("curl runs");
    let code: u16 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0);
    (code != 0).then_some(code)
}

/// The kinds of the open integrity anomalies, oldest first.
async fn refusals(app: &TestApp) -> Vec<String> {
    let list = body(app.get("/integrity-anomalies", &app.owner).await).await;
    let mut kinds: Vec<String> = list
        .as_array()
        .expect("anomalies")
        .iter()
        .map(|e| e["kind"].as_str().unwrap_or_default().to_owned())
        .collect();
    kinds.reverse();
    kinds
}

async fn agents_present_their_own_certificate_at_the_tls_front_and_others_are_refused(b: Backend) {
    let certs = TempDir::new();
    let (server_ca, server_crt, server_key) = server_cert(&certs);
    let (c, k) = (server_crt.clone(), server_key.clone());
    let app = TestApp::spawn_with(b, move |s| {
        s.tls_cert = Some(c);
        s.tls_key = Some(k);
    })
    .await;
    assert!(app.base.starts_with("https://"));
    let base = app.base.clone();
    let (a, other) = (register(&app).await, register(&app).await);
    let (a_crt, a_key, a_cert) = certificate(&app, &certs, &a, "a").await;
    let (b_crt, b_key, _) = certificate(&app, &certs, &other, "b").await;
    let hb = |host: &Host, cert: Option<(&Path, &Path)>, headers: &[String]| {
        heartbeat(&base, &server_ca, host, cert, headers)
    };

    // Requested, not required: no certificate still works.
    assert_eq!(hb(&a, None, &[]), Some(200));
    // Its own certificate: works, and the certificate is seen.
    assert_eq!(hb(&a, Some((&a_crt, &a_key)), &[]), Some(200));
    let listed = body(
        app.get(&format!("/agents/{}/client-certs", a.id), &app.owner)
            .await,
    )
    .await;
    assert!(listed[0]["last_seen_at"].is_string(), "{listed}");
    assert!(refusals(&app).await.is_empty());
    // Another agent's certificate with this agent's token: 401 and a record.
    assert_eq!(hb(&a, Some((&b_crt, &b_key)), &[]), Some(401));
    assert_eq!(refusals(&app).await, ["cert_cn_mismatch"]);
    // A certificate from another CA does not get past the handshake.
    let (stranger_crt, stranger_key) = (certs.0.join("stranger.crt"), certs.0.join("stranger.key"));
    let out = run(
        "openssl",
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            &format!("/CN={}/OU=x", a.id),
            "-keyout",
            s(&stranger_key),
            "-out",
            s(&stranger_crt),
        ],
    );
    assert!(out.status.success());
    assert_eq!(hb(&a, Some((&stranger_crt, &stranger_key)), &[]), None);
    // Headers sent by the client itself are stripped: spoofing another agent's certificate
    // changes nothing.
    let spoof = [
        format!("X-Service-Client-Subject: CN={},OU=x", other.id),
        "X-Service-Client-Verified: 00".to_owned(),
    ];
    assert_eq!(hb(&a, None, &spoof), Some(200));
    // Revoked: refused even though TLS accepts the certificate.
    let serial = a_cert["serial"].as_str().expect("serial");
    let r = app
        .post(
            &format!("/agents/{}/client-certs/{serial}/revoke", a.id),
            &app.owner,
            json!({"reason": "key leaked"}),
        )
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(hb(&a, Some((&a_crt, &a_key)), &[]), Some(401));
    assert_eq!(refusals(&app).await.len(), 2);
    assert!(
        refusals(&app)
            .await
            .contains(&"revoked_cert_used".to_owned())
    );
    // The other agent with its own certificate is fine throughout.
    assert_eq!(hb(&other, Some((&b_crt, &b_key)), &[]), Some(200));
}

async fn client_headers_count_only_from_a_trusted_proxy(b: Backend) {
    let dir = TempDir::new();
    // Without a trusted proxy the headers are stripped, whatever they say.
    let app = TestApp::spawn(b).await;
    let a = register(&app).await;
    let (_, _, cert) = certificate(&app, &dir, &a, "a").await;
    let tenant = body(app.get("/me", &app.owner).await).await["tenant"]["id"]
        .as_str()
        .expect("tenant")
        .to_owned();
    let send = |app: &TestApp, host: &Host, subject: String, fp: String| {
        let body_ = b"{}".to_vec();
        let signature = trusthub_core::agent::sign_header(&host.key, &body_);
        app.req(
            reqwest::Method::POST,
            &format!("/agents/{}/heartbeat", host.id),
            &Auth::Bearer(host.token.clone()),
        )
        .header("content-type", "application/json")
        .header("x-service-signature", signature)
        .header("x-service-client-subject", subject)
        .header("x-service-client-verified", fp)
        .body(body_)
        .send()
    };
    let other_subject = format!("CN={},OU={tenant}", uuid::Uuid::new_v4());
    let r = send(&app, &a, other_subject.clone(), "ab".repeat(32))
        .await
        .expect("send");
    assert_eq!(r.status(), 200, "stripped: not from a trusted proxy");
    drop(app);

    // From a trusted proxy (here: loopback) they are believed.
    let app = TestApp::spawn_with(b, |s| s.trusted_proxies = vec!["127.0.0.1/32".into()]).await;
    let a = register(&app).await;
    let (_, _, cert_a) = certificate(&app, &dir, &a, "a2").await;
    let own = format!(
        "CN={},OU={}",
        a.id,
        body(app.get("/me", &app.owner).await).await["tenant"]["id"]
            .as_str()
            .expect("t")
    );
    let fp = cert_a["fingerprint_sha256"]
        .as_str()
        .expect("fp")
        .to_owned();
    let r = send(&app, &a, own.clone(), fp.clone()).await.expect("send");
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap_or_default());
    let r = send(&app, &a, other_subject, fp.clone())
        .await
        .expect("send");
    assert_problem(r, 401, "unauthenticated").await;
    let r = send(
        &app,
        &a,
        own.clone(),
        cert["fingerprint_sha256"].as_str().expect("fp").to_owned(),
    )
    .await
    .expect("send");
    assert_problem(r, 401, "unauthenticated").await;
    // Expired (the proxy's clock says so before ours would).
    let changed = app
        .execute(&format!(
            "UPDATE client_certs SET not_after = '2020-01-01T00:00:00Z' WHERE fingerprint_sha256 = '{fp}'"
        ))
        .await;
    assert_eq!(changed, 1);
    let r = send(&app, &a, own, fp).await.expect("send");
    assert_problem(r, 401, "unauthenticated").await;
    let kinds = refusals(&app).await;
    for k in ["cert_cn_mismatch", "unknown_cert", "expired_cert_used"] {
        assert!(kinds.contains(&k.to_owned()), "{k}: {kinds:?}");
    }
}

async fn tls_self_serves_https_with_a_certificate_of_the_hub_ca(b: Backend) {
    // The harness trusts only `<data-dir>/hub-ca.pem`: every request below checks the chain.
    let app = TestApp::spawn_with(b, |s| s.tls_self = true).await;
    assert!(app.base.starts_with("https://"));
    let dir = TempDir::new();
    let host = register(&app).await;
    let (crt, key, _) = certificate(&app, &dir, &host, "self").await;
    // curl trusts the same CA file; the agent's certificate works through this front.
    let ca = app.state.settings.db.data_dir.join("hub-ca.pem");
    assert_eq!(
        std::fs::read_to_string(&ca).expect("hub-ca.pem"),
        app.state.ca.cert_pem()
    );
    assert_eq!(
        heartbeat(&app.base, &ca, &host, Some((&crt, &key)), &[]),
        Some(200)
    );
    // openssl sees a server certificate of the hub CA for 127.0.0.1, for TLS servers only.
    let port = app.base.rsplit(':').next().expect("port").to_owned();
    let out = Command::new("openssl")
        .args([
            "s_client",
            "-connect",
            &format!("127.0.0.1:{port}"),
            "-CAfile",
            s(&ca),
            "-verify_return_error",
            "-verify_ip",
            "127.0.0.1",
            "-brief",
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("openssl");
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(said.contains("Verification: OK"), "{said}");
    let cookie_secure = app
        .post(
            "/auth/login",
            &Auth::None,
            json!({"email": OWNER_EMAIL, "password": OWNER_PASSWORD}),
        )
        .await
        .headers()["set-cookie"]
        .to_str()
        .expect("cookie")
        .contains("Secure");
    assert!(cookie_secure, "HTTPS sessions get Secure cookies");
}
