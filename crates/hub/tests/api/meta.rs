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

/// Each crate of the workspace with a `src` folder: its folder name, `src`, and its Rust
/// files, in name order.
fn crate_sources() -> Vec<(String, std::path::PathBuf, Vec<std::path::PathBuf>)> {
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
    let mut out: Vec<_> = std::fs::read_dir(&crates)
        .expect("crates")
        .flatten()
        .filter(|c| c.path().join("src").is_dir())
        .map(|c| {
            let src = c.path().join("src");
            let mut list = Vec::new();
            files(&src, &mut list);
            list.sort();
            (c.file_name().to_string_lossy().into_owned(), src, list)
        })
        .collect();
    out.sort();
    out
}

/// One house (issue 60): no source file is over 1,000 lines; a longer one is split by
/// concern (a module's inline tests may move to a `tests.rs` beside it).
#[test]
fn no_source_file_is_over_a_thousand_lines() {
    let long: Vec<String> = crate_sources()
        .into_iter()
        .flat_map(|(_, _, list)| list)
        .filter_map(|f| {
            let n = std::fs::read_to_string(&f).expect("source").lines().count();
            (n > 1000).then(|| format!("{}: {n} lines", f.display()))
        })
        .collect();
    assert!(long.is_empty(), "over 1,000 lines:\n{}", long.join("\n"));
}

/// One house (issue 60): a crate reaches a capability only through its `lib.rs`, never into
/// its `routes` or `web` modules — the hub too, which mounts them through each
/// `Capability`.
#[test]
fn no_capability_reaches_into_anothers_routes_or_web() {
    let mut reaches = Vec::new();
    for (name, _, list) in crate_sources() {
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

/// One house (issue 60): no two modules of a crate import each other, directly or through
/// others. A module's imports are the paths it names (`crate::`, `super::`, `self::`, and a
/// child it declares); a child naming its ancestors is how Rust modules share, not a circle.
#[test]
fn no_module_imports_one_that_imports_it_back() {
    use std::collections::{BTreeMap, BTreeSet};
    type Module = Vec<String>;

    fn ident(s: &str) -> usize {
        s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(s.len())
    }
    /// The paths written at the start of `s` (after `crate::` and the like): `a::b`, or a
    /// group `a::{b, c::{d, e}}` as several.
    fn paths(s: &str) -> Vec<Vec<String>> {
        let mut head = Vec::new();
        let mut rest = s;
        loop {
            let n = ident(rest);
            if n == 0 {
                break;
            }
            head.push(rest[..n].to_owned());
            rest = &rest[n..];
            if let Some(r) = rest.strip_prefix("::") {
                rest = r;
            } else {
                return vec![head];
            }
        }
        let Some(group) = rest.strip_prefix('{') else {
            return vec![head];
        };
        let (mut depth, mut start, mut out) = (0, 0, vec![head.clone()]);
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    for p in paths(group[start..i].trim_start()) {
                        out.push(head.iter().cloned().chain(p).collect());
                    }
                    return out;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    for p in paths(group[start..i].trim_start()) {
                        out.push(head.iter().cloned().chain(p).collect());
                    }
                    start = i + 1;
                }
                _ => {}
            }
        }
        out
    }

    let mut circles = Vec::new();
    for (krate, src, list) in crate_sources() {
        let mut modules: BTreeMap<Module, String> = BTreeMap::new();
        for f in &list {
            let rel = f.strip_prefix(&src).expect("under src").with_extension("");
            let mut m: Module = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if m == ["lib"] || m == ["main"] || m.last().is_some_and(|l| l == "mod") {
                m.pop();
            }
            let mut text = std::fs::read_to_string(f).expect("source");
            if let Some(i) = text.find("#[cfg(test)]\nmod tests {") {
                text.truncate(i);
            }
            let text: String = text
                .lines()
                .map(|l| l.split("//").next().unwrap_or_default())
                .collect::<Vec<_>>()
                .join("\n");
            modules.entry(m).or_default().push_str(&text);
        }
        let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
        for (m, text) in &modules {
            let mut targets = BTreeSet::new();
            for base in ["crate::", "super::", "self::"] {
                for (i, _) in text.match_indices(base) {
                    if text[..i]
                        .chars()
                        .next_back()
                        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
                    {
                        continue;
                    }
                    for p in paths(&text[i + base.len()..]) {
                        let mut full: Module = match base {
                            "crate::" => Vec::new(),
                            "self::" => m.clone(),
                            _ => m[..m.len().saturating_sub(1)].to_vec(),
                        };
                        let mut p = p.as_slice();
                        while p.first().is_some_and(|s| s == "super") {
                            full.pop();
                            p = &p[1..];
                        }
                        full.extend(p.iter().cloned());
                        let target = (0..=full.len())
                            .rev()
                            .map(|k| full[..k].to_vec())
                            .find(|t| modules.contains_key(t))
                            .unwrap_or_default();
                        targets.insert(target);
                    }
                }
            }
            // A child it declares and names.
            for line in text.lines() {
                let l = line.trim_start();
                let l = l
                    .strip_prefix("pub(crate) ")
                    .or_else(|| l.strip_prefix("pub "))
                    .unwrap_or(l);
                if let Some(child) = l.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
                    let mut c = m.clone();
                    c.push(child.trim().to_owned());
                    let named = text
                        .match_indices(&format!("{}::", child.trim()))
                        .any(|(i, _)| {
                            !text[..i]
                                .chars()
                                .next_back()
                                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                        });
                    if modules.contains_key(&c) && named {
                        targets.insert(c);
                    }
                }
            }
            // Not itself, nor an ancestor.
            targets.retain(|t| t != m && !(t.len() < m.len() && m.starts_with(t)));
            edges.insert(m.clone(), targets);
        }
        // Which modules reach which (the graphs are small): a circle is two modules that
        // reach each other.
        let reach = |from: &Module| {
            let mut seen = BTreeSet::new();
            let mut todo = vec![from.clone()];
            while let Some(m) = todo.pop() {
                for t in edges.get(&m).into_iter().flatten() {
                    if seen.insert(t.clone()) {
                        todo.push(t.clone());
                    }
                }
            }
            seen
        };
        let mut done = BTreeSet::new();
        for m in modules.keys() {
            if done.contains(m) {
                continue;
            }
            let from = reach(m);
            if !from.contains(m) {
                continue;
            }
            let circle: Vec<String> = from
                .iter()
                .filter(|o| reach(o).contains(m))
                .inspect(|o| {
                    done.insert((*o).clone());
                })
                .map(|o| {
                    if o.is_empty() {
                        "lib".into()
                    } else {
                        o.join("::")
                    }
                })
                .collect();
            circles.push(format!("{krate}: {}", circle.join(", ")));
        }
    }
    assert!(
        circles.is_empty(),
        "modules that import each other:\n{}",
        circles.join("\n")
    );
}
