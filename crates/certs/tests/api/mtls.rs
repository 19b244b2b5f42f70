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

/// A certificate's PEM percent-encoded, as nginx's `$ssl_client_escaped_cert`.
fn escape_pem(cert: &Value) -> String {
    cert["certificate_pem"]
        .as_str()
        .expect("pem")
        .bytes()
        .map(|c| match c {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' => (c as char).to_string(),
            _ => format!("%{c:02X}"),
        })
        .collect()
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
    let other = register(&app).await;
    let (_, _, b_cert) = certificate(&app, &dir, &other, "b").await;
    let forwarded = |app: &TestApp, host: &Host, value: String| {
        let body_ = b"{}".to_vec();
        let signature = trusthub_core::agent::sign_header(&host.key, &body_);
        app.req(
            reqwest::Method::POST,
            &format!("/agents/{}/heartbeat", host.id),
            &Auth::Bearer(host.token.clone()),
        )
        .header("content-type", "application/json")
        .header("x-service-signature", signature)
        .header("x-service-client-cert", value)
        .body(body_)
        .send()
    };
    let r = forwarded(&app, &a, escape_pem(&b_cert))
        .await
        .expect("send");
    assert_eq!(r.status(), 200, "X-Service-Client-Cert stripped too");
    assert_eq!(
        app.count("SELECT COUNT(*) FROM integrity_anomalies").await,
        0
    );
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
    // The forwarded certificate (nginx's $ssl_client_escaped_cert): the hub derives subject
    // and fingerprint itself; anything that is not a certificate of its CA is 400.
    let r = forwarded(&app, &a, escape_pem(&cert_a))
        .await
        .expect("send");
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap_or_default());
    let r = forwarded(&app, &a, escape_pem(&b_cert))
        .await
        .expect("send");
    assert_problem(r, 400, "bad_request").await;
    let r = forwarded(&app, &a, "%2D%2D%2Dnot a cert".into())
        .await
        .expect("send");
    assert_problem(r, 400, "bad_request").await;
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
    // The proxy's X-Forwarded-For names the client (the last hop not a trusted proxy): the
    // anomaly records that address, not the proxy's.
    let signature = trusthub_core::agent::sign_header(&a.key, b"{}");
    let r = app
        .req(
            reqwest::Method::POST,
            &format!("/agents/{}/heartbeat", a.id),
            &Auth::Bearer(a.token.clone()),
        )
        .header("content-type", "application/json")
        .header("x-service-signature", signature)
        .header("x-forwarded-for", "198.51.100.7, 203.0.113.9, 127.0.0.1")
        .header("x-service-client-subject", format!("CN={},OU=x", other.id))
        .header("x-service-client-verified", "cd".repeat(32))
        .body(b"{}".to_vec())
        .send()
        .await
        .expect("send");
    assert_problem(r, 401, "unauthenticated").await;
    let listed = body(app.get("/integrity-anomalies", &app.owner).await).await;
    assert_eq!(listed[0]["evidence"]["ip"], "203.0.113.9", "{listed}");
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
        app.state.part::<trusthub_hub::ca::HubCa>().cert_pem()
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

/// nginx (Debian's `nginx-light`) terminating TLS in front of the hub with the configuration
/// README.md documents: it verifies client certificates against `GET /agents/ca-cert` and the
/// CRL of `GET /agents/ca.crl`, forwards the verified certificate as `X-Service-Client-Cert`,
/// and the hub (`--trusted-proxy 127.0.0.1/32`) cross-checks it like its own TLS front.
struct Nginx {
    prefix: PathBuf,
    conf: PathBuf,
    child: std::process::Child,
}

impl Nginx {
    fn signal(&self, what: &str) {
        let out = run(
            "nginx",
            &["-p", s(&self.prefix), "-c", s(&self.conf), "-s", what],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM: the master stops its workers too (SIGKILL would leave them running).
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

/// README's nginx server block with this test's paths.
fn nginx_conf(dir: &Path, port: u16, hub: &str, chain: &Path, key: &Path) -> String {
    let d = s(dir);
    format!(
        "worker_processes 1;\nerror_log {d}/error.log;\npid {d}/nginx.pid;\nevents {{ worker_connections 64; }}\n\
         http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n\
         fastcgi_temp_path {d}/fcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n{}\n}}\n",
        include_str!("../../../../docs/nginx-trusthub.conf")
            .replace("/etc/nginx/trusthub/hub-ca.pem", &format!("{d}/hub-ca.pem"))
            .replace("/etc/nginx/trusthub/ca.crl.pem", &format!("{d}/ca.crl.pem"))
            .replace("/etc/ssl/certs/hub.example.pem", s(chain))
            .replace("/etc/ssl/private/hub.example.key", s(key))
            .replace("listen 443 ssl;", &format!("listen 127.0.0.1:{port} ssl;"))
            .replace("127.0.0.1:8080", hub)
    )
}

/// The hub's CRL as the PEM nginx reads.
async fn crl_for_nginx(app: &TestApp, dir: &Path) {
    let der = app
        .req(reqwest::Method::GET, "/agents/ca.crl", &Auth::None)
        .send()
        .await
        .expect("crl")
        .bytes()
        .await
        .expect("bytes");
    std::fs::write(dir.join("ca.crl.der"), &der).expect("write");
    let out = run(
        "openssl",
        &[
            "crl",
            "-inform",
            "DER",
            "-in",
            s(&dir.join("ca.crl.der")),
            "-out",
            s(&dir.join("ca.crl.pem")),
        ],
    );
    assert!(out.status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nginx_in_front_forwards_verified_certificates_and_the_hub_cross_checks_them() {
    let app = TestApp::spawn_with(Backend::Sqlite, |s| {
        s.trusted_proxies = vec!["127.0.0.1/32".into()];
    })
    .await;
    let dir = TempDir::new();
    let (server_ca, chain, key) = server_cert(&dir);
    let ca = app
        .req(reqwest::Method::GET, "/agents/ca-cert", &Auth::None)
        .send()
        .await
        .expect("ca")
        .text()
        .await
        .expect("pem");
    std::fs::write(dir.0.join("hub-ca.pem"), ca).expect("ca");
    crl_for_nginx(&app, &dir.0).await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("port")
        .local_addr()
        .expect("addr")
        .port();
    let hub = app.base.trim_start_matches("http://").to_owned();
    let conf = dir.0.join("nginx.conf");
    std::fs::write(&conf, nginx_conf(&dir.0, port, &hub, &chain, &key)).expect("conf");
    let child = Command::new("nginx")
        .args(["-p", s(&dir.0), "-c", s(&conf), "-g", "daemon off;"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("nginx runs (.ci/run installs Debian's nginx-light)");
    let nginx = Nginx {
        prefix: dir.0.clone(),
        conf,
        child,
    };
    let front = format!("https://127.0.0.1:{port}");
    let mut up = false;
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            up = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        up,
        "nginx listening: {}",
        std::fs::read_to_string(dir.0.join("error.log")).unwrap_or_default()
    );

    let (a, other) = (register(&app).await, register(&app).await);
    let (a_crt, a_key, a_cert) = certificate(&app, &dir, &a, "a").await;
    let (b_crt, b_key, b_cert) = certificate(&app, &dir, &other, "b").await;
    let hb = |host: &Host, cert: Option<(&Path, &Path)>, headers: &[String]| {
        heartbeat(&front, &server_ca, host, cert, headers)
    };
    // No certificate: works. Its own: works and is seen.
    assert_eq!(
        hb(&a, None, &[]),
        Some(200),
        "{}",
        std::fs::read_to_string(dir.0.join("error.log")).unwrap_or_default()
    );
    assert_eq!(hb(&a, Some((&a_crt, &a_key)), &[]), Some(200));
    let listed = body(
        app.get(&format!("/agents/{}/client-certs", a.id), &app.owner)
            .await,
    )
    .await;
    assert!(listed[0]["last_seen_at"].is_string(), "{listed}");
    assert!(refusals(&app).await.is_empty());
    // Another agent's: 401 and a record.
    assert_eq!(hb(&a, Some((&b_crt, &b_key)), &[]), Some(401));
    assert_eq!(refusals(&app).await, ["cert_cn_mismatch"]);
    // Every client-certificate header a client sends is overwritten by nginx: another
    // agent's certificate PEM in X-Service-Client-Cert changes nothing.
    let escaped = escape_pem(&b_cert);
    let spoof = [
        format!("X-Service-Client-Cert: {escaped}"),
        format!("X-Service-Client-Subject: CN={},OU=x", other.id),
        format!(
            "X-Service-Client-Verified: {}",
            b_cert["fingerprint_sha256"].as_str().expect("fp")
        ),
    ];
    assert_eq!(hb(&a, None, &spoof), Some(200));
    assert_eq!(refusals(&app).await.len(), 1);
    // Revoked while nginx still holds the old CRL: the hub refuses it and records it.
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
    assert!(
        refusals(&app)
            .await
            .contains(&"revoked_cert_used".to_owned())
    );
    // With the fresh CRL reloaded, nginx itself turns the certificate away (400).
    crl_for_nginx(&app, &dir.0).await;
    nginx.signal("reload");
    let mut code = None;
    for _ in 0..100 {
        code = hb(&a, Some((&a_crt, &a_key)), &[]);
        if code == Some(400) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(code, Some(400), "nginx refuses a certificate of its CRL");
    assert_eq!(hb(&other, Some((&b_crt, &b_key)), &[]), Some(200));
    nginx.signal("stop");
}
