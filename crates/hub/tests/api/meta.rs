//! Health, Prometheus metrics and the OpenAPI document (SPEC 4.11; CONTRACT 10).

use crate::harness::*;
use serde_json::json;

crate::dual!(
    health_answers_ok_without_credentials,
    metrics_count_requests_per_route_and_status_with_pool_and_process_figures,
    openapi_document_matches_the_snapshot,
);

/// CONTRACT 13 on the served document, independently of the generator: run once (the
/// document does not depend on the engine).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_document_follows_contract_13_and_validates() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let doc: serde_json::Value = app
        .get("/openapi.json", &Auth::None)
        .await
        .json()
        .await
        .expect("json");
    let schemas = &doc["components"]["schemas"];
    let resolve = |s: &serde_json::Value| -> serde_json::Value {
        match s["$ref"].as_str() {
            Some(r) => schemas[r.trim_start_matches("#/components/schemas/")].clone(),
            None => s.clone(),
        }
    };
    let mut ids = std::collections::HashSet::new();
    let mut problems = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("item") {
            let at = format!("{method} {path}");
            let id = op["operationId"].as_str().unwrap_or_default();
            if id.is_empty() || !ids.insert(id.to_owned()) {
                problems.push(format!("{at}: operationId {id:?} missing or repeated"));
            }
            if !id.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
                problems.push(format!("{at}: operationId {id} not <resource>_<verb>"));
            }
            let Some(security) = op["security"].as_array() else {
                problems.push(format!("{at}: no security"));
                continue;
            };
            let responses = op["responses"].as_object().expect("responses");
            for (status, r) in responses {
                if r["description"].as_str().unwrap_or_default().is_empty() {
                    problems.push(format!("{at} {status}: no description"));
                }
                if status.as_str() >= "400" {
                    let content = r["content"].as_object().cloned().unwrap_or_default();
                    let keys: Vec<&String> = content.keys().collect();
                    if keys != ["application/problem+json"]
                        || content["application/problem+json"]["schema"]["$ref"]
                            != "#/components/schemas/Problem"
                    {
                        problems.push(format!("{at} {status}: not the shared Problem: {keys:?}"));
                    }
                }
            }
            let has = |s: &str| responses.contains_key(s);
            if !security.is_empty() && !has("401") {
                problems.push(format!("{at}: authenticated but no 401"));
            }
            if !has("429") {
                problems.push(format!("{at}: no 429"));
            }
            for p in op["parameters"].as_array().into_iter().flatten() {
                let name = p["name"].as_str().unwrap_or_default();
                let placeholder = format!("{{{name}}}");
                match p["in"].as_str() {
                    Some("path") if !path.contains(&placeholder) => {
                        problems.push(format!("{at}: {name} declared in path but not in it"))
                    }
                    Some("path") if !has("404") => problems.push(format!("{at}: path id, no 404")),
                    _ => {}
                }
                if p["in"] == "query" && !has("400") {
                    problems.push(format!("{at}: query without 400"));
                }
            }
            if let Some(body) =
                op["requestBody"]["content"]["application/json"]["schema"].as_object()
            {
                for s in ["400", "415", "422"] {
                    if !has(s) {
                        problems.push(format!("{at}: body without {s}"));
                    }
                }
                let schema = resolve(&serde_json::Value::Object(body.clone()));
                if schema["type"] == "object"
                    && schema["properties"].is_object()
                    && schema["additionalProperties"] != false
                {
                    problems.push(format!("{at}: body accepts unknown fields"));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));

    // The reference validator, where it is installed (CI installs it and makes it mandatory).
    let dir = TempDir::new();
    let file = dir.0.join("openapi.json");
    std::fs::write(&file, serde_json::to_vec(&doc).expect("json")).expect("write");
    match std::process::Command::new("openapi-spec-validator")
        .arg(&file)
        .output()
    {
        Ok(out) => assert!(
            out.status.success(),
            "openapi-spec-validator: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) if std::env::var_os("CI").is_none() => {
            eprintln!("openapi-spec-validator not run ({e}); `pip install openapi-spec-validator`")
        }
        Err(e) => panic!("openapi-spec-validator is mandatory in CI: {e}"),
    }
}

async fn health_answers_ok_without_credentials(b: Backend) {
    let app = TestApp::spawn(b).await;
    let resp = app.get("/health", &Auth::None).await;
    assert_eq!(resp.status(), 200);
    let h = body(resp).await;
    assert_eq!(h["status"], "ok");
    assert_eq!(
        h["database"],
        if b == Backend::Sqlite {
            "sqlite"
        } else {
            "postgres"
        }
    );
}

async fn metrics_count_requests_per_route_and_status_with_pool_and_process_figures(b: Backend) {
    let app = TestApp::spawn(b).await;
    app.get("/me", &app.owner).await;
    app.get("/me", &Auth::None).await;
    let resp = app.get("//metrics", &Auth::None).await;
    assert_eq!(resp.status(), 200);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .expect("ct")
            .starts_with("text/plain")
    );
    let text = resp.text().await.expect("text");
    assert!(
        text.contains(
            r#"trusthub_http_requests_total{method="GET",route="/api/v1/me",status="200"} 1"#
        ),
        "{text}"
    );
    assert!(text.contains(
        r#"trusthub_http_requests_total{method="GET",route="/api/v1/me",status="401"} 1"#
    ));
    assert!(text.contains(
        r#"trusthub_http_requests_total{method="POST",route="/api/v1/auth/login",status="200"} 1"#
    ));
    assert!(text.contains(r#"trusthub_http_request_duration_seconds_bucket{method="GET",route="/api/v1/me",status="200",le="+Inf"} 1"#));
    assert!(text.contains("trusthub_db_pool_connections{backend="));
    assert!(text.contains("trusthub_db_pool_max_connections"));
    assert!(text.contains("process_resident_memory_bytes "));
    assert!(text.contains("process_cpu_seconds_total "));
    assert!(text.contains("process_open_fds "));
    // Every sample line parses as `name{labels} value`.
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let value = line.rsplit(' ').next().expect("value");
        assert!(value.parse::<f64>().is_ok(), "{line}");
    }
}

/// The OpenAPI document is generated from the handlers; this snapshot makes every API
/// change visible in review. Regenerate with `UPDATE_SNAPSHOTS=1`.
async fn openapi_document_matches_the_snapshot(b: Backend) {
    let app = TestApp::spawn(b).await;
    let resp = app.get("/openapi.json", &Auth::None).await;
    assert_eq!(resp.status(), 200);
    let doc: serde_json::Value = resp.json().await.expect("json");
    assert_eq!(doc["openapi"], "3.1.0");
    for path in [
        "/api/v1/auth/login",
        "/api/v1/api-tokens",
        "/api/v1/users/{id}",
        "/api/v1/audit-log",
        "/api/v1/health",
    ] {
        assert!(doc["paths"].get(path).is_some(), "{path} documented");
    }
    let pretty = serde_json::to_string_pretty(&doc).expect("pretty") + "\n";
    let file =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/openapi.json");
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(file.parent().expect("dir")).expect("mkdir");
        std::fs::write(&file, &pretty).expect("write snapshot");
    }
    let expected =
        std::fs::read_to_string(&file).expect("snapshot exists; run with UPDATE_SNAPSHOTS=1 once");
    assert_eq!(
        pretty, expected,
        "OpenAPI changed: review, then UPDATE_SNAPSHOTS=1"
    );
}

/// CONTRACT 11 TLS front: with `--tls-cert`/`--tls-key` the hub speaks HTTPS, and the
/// session cookie is marked `Secure`. (Checked with the system's openssl and curl.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_front_serves_https_with_secure_cookies() {
    let certs = TempDir::new();
    let (cert, key) = (certs.0.join("hub.crt"), certs.0.join("hub.key"));
    let made = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "1",
        ])
        .args([
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl runs");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let (c, k) = (cert.clone(), key.clone());
    let dir = TempDir::new();
    let (mut settings, _) = TestApp::settings(Backend::Sqlite, &dir).await;
    settings.tls_cert = Some(c);
    settings.tls_key = Some(k);
    let server = trusthub_hub::Server::build(settings)
        .await
        .expect("start with TLS");
    let addr = server.local_addr();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let handle = tokio::spawn(server.run(async move {
        let _ = rx.await;
    }));
    let curl = |args: Vec<String>| {
        let cert = cert.clone();
        async move {
            tokio::task::spawn_blocking(move || {
                std::process::Command::new("curl")
                    .args(["-s", "-i", "--max-time", "10", "--cacert"])
                    .arg(&cert)
                    .args(args)
                    .output()
                    .expect("curl runs")
            })
            .await
            .expect("join")
        }
    };
    let health = curl(vec![format!(
        "https://127.0.0.1:{}/api/v1/health",
        addr.port()
    )])
    .await;
    let text = String::from_utf8_lossy(&health.stdout).to_string();
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains("\"status\":\"ok\""));
    let login = curl(vec![
        "-H".into(),
        "content-type: application/json".into(),
        "-d".into(),
        json!({"email": OWNER_EMAIL, "password": OWNER_PASSWORD}).to_string(),
        format!("https://127.0.0.1:{}/api/v1/auth/login", addr.port()),
    ])
    .await;
    let text = String::from_utf8_lossy(&login.stdout).to_string();
    let cookie_line = text
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("set-cookie:"))
        .expect("cookie");
    assert!(
        cookie_line.contains("; Secure") && cookie_line.contains("HttpOnly"),
        "{cookie_line}"
    );
    // Plain HTTP on the TLS port gets no HTTP answer.
    let plain = curl(vec![format!(
        "http://127.0.0.1:{}/api/v1/health",
        addr.port()
    )])
    .await;
    assert!(!String::from_utf8_lossy(&plain.stdout).contains("\"status\":\"ok\""));
    let _ = tx.send(());
    handle.await.expect("join").expect("clean stop");
}

/// One house (issue 60): a crate reaches a capability only through its `lib.rs`, never into
/// its `routes` or `web` modules — the hub too, which mounts them through each
/// `Capability`.
#[test]
fn no_capability_reaches_into_anothers_routes_or_web() {
    fn files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).expect("dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                files(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut reaches = Vec::new();
    for c in std::fs::read_dir(&crates).expect("crates").flatten() {
        let name = c.file_name().to_string_lossy().into_owned();
        let src = c.path().join("src");
        if !src.is_dir() {
            continue;
        }
        let mut list = Vec::new();
        files(&src, &mut list);
        for f in list {
            let text = std::fs::read_to_string(&f).expect("source");
            for (n, line) in text.lines().enumerate() {
                for module in ["routes", "web"] {
                    let mut rest = line;
                    while let Some(i) = rest.find("trusthub_") {
                        let after = &rest[i + "trusthub_".len()..];
                        let owner: String = after
                            .chars()
                            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                            .collect();
                        if owner != name
                            && after[owner.len()..].starts_with(&format!("::{module}"))
                            && !after[owner.len() + 2 + module.len()..]
                                .starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
                        {
                            reaches.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
                        }
                        rest = after;
                    }
                }
            }
        }
    }
    assert!(
        reaches.is_empty(),
        "reaches into another crate's routes or web:\n{}",
        reaches.join("\n")
    );
}
