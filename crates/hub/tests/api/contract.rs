//! CONTRACT 13 checked by a client nobody here wrote: Schemathesis generates requests from the
//! served OpenAPI document (`--checks all`: no server errors, only documented statuses and
//! media types, responses that match their schemas, schema-valid requests accepted and
//! schema-violating ones refused), as an owner session and as an API token, on SQLite.
//! Rules a schema cannot state are listed with their reasons in
//! `tests/schemathesis/schemathesis.toml`.

use crate::harness::*;

/// Examples per operation and phase: bounded so the suite stays fast.
const EXAMPLES: &str = "25";

/// Runs Schemathesis with the shared config plus `auth` (a TOML block naming one of the
/// document's security schemes, so Schemathesis knows how to leave it out for its
/// authentication checks).
fn schemathesis(app: &TestApp, auth: &str, exclude_logout: bool) -> Option<(bool, String)> {
    let shared = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/schemathesis/schemathesis.toml"),
    )
    .expect("config");
    let dir = TempDir::new();
    let config = dir.0.join("schemathesis.toml");
    std::fs::write(&config, format!("{shared}\n{auth}\n")).expect("write config");
    let mut cmd = std::process::Command::new("schemathesis");
    // Its caches (and replays of earlier failures) stay in the run's own directory.
    cmd.current_dir(&dir.0);
    cmd.arg("--config-file")
        .arg(&config)
        .arg("run")
        .arg(app.url("/openapi.json"))
        .args([
            "--url", &app.base, "--checks", "all", "-n", EXAMPLES, "--seed", "17",
        ])
        // One worker: this machine's CPython 3.11 races in `ast.parse` across threads
        // (Hypothesis describes its lambdas with it), which with two workers crashed a run
        // now and then ("AST constructor recursion depth mismatch") — the tool, not the hub.
        .args(["--workers", "1", "--no-color"])
        // Credentials come from the config; no random ones in their place.
        .args(["--generation-with-security-parameters", "false"])
        // OTLP bodies are OpenTelemetry's protobuf, which a JSON Schema cannot describe; the
        // OTLP tests send real opentelemetry-proto bodies.
        .args(["--exclude-operation-id", "ai_otlp_traces"])
        // Advisory uploads are zip archives (no JSON Schema describes them, schemathesis has
        // no serializer); the cve tests send zips made by Python's zipfile, and garbage.
        .args(["--exclude-operation-id", "cve_import"]);
    // While working on some operations: `SCHEMATHESIS_INCLUDE=<path regex>` runs only those.
    if let Ok(only) = std::env::var("SCHEMATHESIS_INCLUDE") {
        cmd.args(["--include-path-regex", &only]);
    }
    if exclude_logout {
        // It would end the session the rest of the run uses.
        cmd.args(["--exclude-operation-id", "auth_logout"]);
    }
    match cmd.output() {
        Ok(out) => Some((
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )),
        Err(e) if std::env::var_os("CI").is_none() => {
            eprintln!("schemathesis not run ({e}); `pip install schemathesis`");
            None
        }
        Err(e) => panic!("schemathesis is mandatory in CI: {e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemathesis_finds_nothing_as_a_session_or_a_token() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let Auth::Cookie(cookie) = &app.owner else {
        panic!("the owner logs in with a session");
    };
    let (token, _) = app.token(&app.owner, "write").await;
    let (session, bearer) = (
        format!("[auth.openapi.session]\napi_key = \"{cookie}\""),
        format!("[auth.openapi.bearer]\nbearer = \"{token}\""),
    );
    // Blocking runs of an external program, off the runtime serving the hub.
    let run = |auth: String, logout: bool| {
        let app = &app;
        tokio::task::block_in_place(move || schemathesis(app, &auth, logout))
    };
    for (who, result) in [
        ("session", run(session, true)),
        ("token", run(bearer, false)),
    ] {
        if let Some((ok, output)) = result {
            assert!(ok, "schemathesis as {who}:\n{output}");
            assert!(
                output.contains("Tested:"),
                "schemathesis ran no test as {who}:\n{output}"
            );
        }
    }
}

/// Every operation the Schemathesis config lets refuse schema-valid data names the rule no
/// schema states in its own description ("Beyond the schema: ..."), so a client reading the
/// document learns it too (CONTRACT 30).
#[tokio::test]
async fn every_exception_is_named_in_its_operation() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let doc: serde_json::Value = app
        .get("/openapi.json", &Auth::None)
        .await
        .json()
        .await
        .expect("document");
    let config = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/schemathesis/schemathesis.toml"),
    )
    .expect("config");
    let mut seen = 0;
    for line in config.lines() {
        let Some(name) = line
            .strip_prefix("include-name = \"")
            .and_then(|l| l.strip_suffix('"'))
        else {
            continue;
        };
        let (method, path) = name.split_once(' ').expect("METHOD /path");
        let op = &doc["paths"][path][method.to_lowercase()];
        assert!(op.is_object(), "{name} is not in the document");
        let text = format!(
            "{} {}",
            op["summary"].as_str().unwrap_or_default(),
            op["description"].as_str().unwrap_or_default()
        );
        assert!(
            text.contains("Beyond the schema: "),
            "{name} refuses schema-valid data without saying why in its description"
        );
        seen += 1;
    }
    assert!(seen > 10, "the config lists its exceptions ({seen})");
}
