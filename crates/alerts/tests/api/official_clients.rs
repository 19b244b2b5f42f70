//! The local Slack and PagerDuty receivers of `channels.rs` held true by the providers' own
//! client libraries: Slack's `@slack/webhook` posts a Block Kit message to the Slack
//! receiver, PagerDuty's `@pagerduty/pdjs` sends an Events API v2 trigger and resolve to the
//! PagerDuty receiver (over HTTPS, as pdjs only speaks it). Each library must take the
//! receiver's answer as success, and the request it sent must pass the same shape check the
//! hub's own messages are held to — so the receivers the channel tests trust speak the real
//! protocol. The libraries come from the npm registry (`.ci/run` installs them in
//! `/usr/local/share/trusthub-validators/node`, or `TRUSTHUB_NODE_MODULES`).

use crate::channels::{Got, pagerduty_shape, receiver, receiver_app, slack_shape};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

/// Where the client libraries are installed, or `None` (with a notice) outside CI.
fn node_modules() -> Option<PathBuf> {
    let dir = std::env::var_os("TRUSTHUB_NODE_MODULES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/local/share/trusthub-validators/node/node_modules"));
    let ok = dir.join("@slack/webhook").is_dir()
        && dir.join("@pagerduty/pdjs").is_dir()
        && std::process::Command::new("node")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
    match ok {
        true => Some(dir),
        false if std::env::var_os("CI").is_some() => {
            panic!("node with @slack/webhook and @pagerduty/pdjs is required in CI ({dir:?})")
        }
        false => {
            eprintln!("NOTICE: node or the provider client libraries are missing; skipping");
            None
        }
    }
}

/// Runs `script` with node, the client libraries on its path; its stdout.
async fn node(modules: &PathBuf, script: &str, envs: &[(&str, String)]) -> String {
    let out = tokio::process::Command::new("node")
        .arg("-e")
        .arg(script)
        .env("NODE_PATH", modules)
        .envs(envs.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .await
        .expect("node");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "node failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[tokio::test]
async fn slacks_own_client_takes_the_slack_receiver_for_slack() {
    let Some(modules) = node_modules() else {
        return;
    };
    let (base, got) = receiver().await;
    let url = format!("{base}/services/T000/B000/XXXX");
    let script = r#"
const { IncomingWebhook } = require("@slack/webhook");
new IncomingWebhook(process.env.URL).send({
  text: "disk full on web-1",
  blocks: [
    { type: "header", text: { type: "plain_text", text: "Disk full on web-1" } },
    { type: "section", text: { type: "mrkdwn", text: "*critical* since 12:00" },
      fields: [{ type: "mrkdwn", text: "*Host*\nweb-1" }] },
    { type: "actions", elements: [{ type: "button", text: { type: "plain_text", text: "Open" },
      url: "https://hub.example.com/ui/alerts/1" }] }
  ]
}).then(r => console.log(JSON.stringify(r)), e => { console.error(e); process.exit(1); });
"#;
    let answer = node(&modules, script, &[("URL", url)]).await;
    // The client read the answer as Slack's: `ok`.
    let answer: Value = serde_json::from_str(answer.trim()).expect("json");
    assert_eq!(answer["text"], "ok", "{answer}");
    let seen = got.lock().expect("lock").clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].0, "/services/T000/B000/XXXX");
    slack_shape(&seen[0].2);
}

#[tokio::test]
async fn pagerdutys_own_client_takes_the_pagerduty_receiver_for_pagerduty() {
    let Some(modules) = node_modules() else {
        return;
    };
    // pdjs speaks HTTPS only: the receiver behind a certificate node is told to trust.
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).expect("cert");
    let dir = std::env::temp_dir().join(format!("trusthub-pdjs-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).expect("dir");
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, cert.cert.pem()).expect("ca");
    let acceptor = trusthub_platform::tls::acceptor_from_pem(
        cert.cert.pem().as_bytes(),
        cert.signing_key.serialize_pem().as_bytes(),
        None,
    )
    .expect("acceptor");
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = tcp.local_addr().expect("addr").port();
    let got: Got = Arc::default();
    let app = receiver_app(got.clone());
    let listener = trusthub_platform::tls::TlsListener::new(tcp, acceptor).expect("tls");
    tokio::spawn(async move { axum::serve(listener, app).await });

    let key = "R0123456789abcdef0123456789ABCDE";
    let script = r#"
const { event } = require("@pagerduty/pdjs");
const server = process.env.SERVER, key = process.env.KEY;
(async () => {
  const trigger = await event({ server, data: {
    routing_key: key, event_action: "trigger", dedup_key: "rule:cpu:web-1",
    payload: { summary: "CPU above 90 % on web-1", source: "web-1", severity: "critical" },
    links: [{ href: "https://hub.example.com/ui/alerts/1", text: "Alert" }] } });
  const resolve = await event({ server, data: {
    routing_key: key, event_action: "resolve", dedup_key: "rule:cpu:web-1" } });
  console.log(JSON.stringify([trigger.status, trigger.data, resolve.status, resolve.data]));
})().catch(e => { console.error(e); process.exit(1); });
"#;
    let answer = node(
        &modules,
        script,
        &[
            ("SERVER", format!("localhost:{port}")),
            ("KEY", key.into()),
            ("NODE_EXTRA_CA_CERTS", ca.display().to_string()),
        ],
    )
    .await;
    let _ = std::fs::remove_dir_all(&dir);
    let answer: Value = serde_json::from_str(answer.trim()).expect("json");
    // The client read both answers as PagerDuty's: 202, success, the dedup key.
    assert_eq!(answer[0], 202, "{answer}");
    assert_eq!(answer[1]["status"], "success", "{answer}");
    assert_eq!(answer[1]["dedup_key"], "rule:cpu:web-1", "{answer}");
    assert_eq!(answer[2], 202, "{answer}");
    let seen = got.lock().expect("lock").clone();
    assert_eq!(seen.len(), 2, "{seen:?}");
    for (path, _, b) in &seen {
        pagerduty_shape(path, b, key);
    }
    assert_eq!(seen[1].2["event_action"], "resolve");
}
