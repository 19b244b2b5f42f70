//! Cloud discovery over the API (CONTRACT 23), both engines: AWS against `moto_server` (the
//! EC2 emulator, IAM authentication on: every call signed with SigV4 and checked), Hetzner
//! Cloud against a local server held true by Hetzner's own `hcloud` library; accounts checked
//! live and refused with `credentials_rejected`, runs (every region, two pages, a 429),
//! resources matched to an agent by address, findings opening and resolving, a terminated
//! instance removed, install commands with a single-use token, credentials never in clear,
//! validation that stores nothing, tenants apart.

#[path = "../fakes/azure.rs"]
pub(crate) mod azure;
#[path = "../fakes/digitalocean.rs"]
pub(crate) mod digitalocean;
#[path = "../fakes/gcp.rs"]
pub(crate) mod gcp;
#[path = "../fakes/hetzner.rs"]
pub(crate) mod hetzner;
#[path = "../fakes/ionos.rs"]
pub(crate) mod ionos;
#[path = "../fakes/moto.rs"]
pub(crate) mod moto;
#[path = "../fakes/ovh.rs"]
pub(crate) mod ovh;
#[path = "../fakes/proxmox.rs"]
pub(crate) mod proxmox;
#[path = "../fakes/scaleway.rs"]
pub(crate) mod scaleway;
#[path = "../fakes/serve.rs"]
pub(crate) mod serve;

use crate::agents::{Host, register, send, ts};
use crate::harness::*;
use serde_json::{Value, json};
use time::OffsetDateTime;
use uuid::Uuid;

crate::dual!(
    aws_accounts_are_checked_live_discovered_in_every_region_and_kept_current,
    hetzner_servers_are_listed_over_pages_through_a_429_with_their_firewalls,
    digitalocean_droplets_are_listed_over_https_with_the_accounts_ca,
    proxmox_guests_are_listed_with_their_agents_and_containers_addresses,
    ovh_instances_are_listed_with_signed_requests_on_ovhs_clock,
    gcp_instances_are_listed_with_a_service_accounts_token,
    azure_vms_are_listed_with_a_service_principal,
    scaleway_servers_are_listed_in_every_zone_with_their_security_groups,
    ionos_servers_are_listed_in_every_data_center_with_their_nic_firewalls,
    accounts_are_discovered_again_on_their_interval,
    accounts_are_validated_stored_sealed_and_kept_apart,
    an_admin_adds_an_account_and_installs_an_agent_on_an_uncovered_machine_from_the_pages,
);

/// Whether Python can `import` (a provider's official library); required in CI (`needed`
/// says what to install), elsewhere the test says it skips.
fn python_has(import: &str, needed: &str) -> bool {
    let ok = std::process::Command::new("python3")
        .args(["-c", import])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok || std::env::var_os("CI").is_none(), "{needed}");
    if !ok {
        eprintln!("`{import}` fails: skipping ({needed})");
    }
    ok
}

/// Waits for the account's newest run to finish; the run.
pub(crate) async fn finished_run(app: &TestApp, account: &str) -> Value {
    for _ in 0..300 {
        let runs = body(
            app.get(&format!("/cloud/runs?account_id={account}"), &app.owner)
                .await,
        )
        .await;
        if let Some(r) = runs.as_array().and_then(|a| a.first())
            && r["status"] != "running"
        {
            return r.clone();
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("the run of {account} did not finish in 30 s");
}

/// Adds the account `req` (201): its id and its first run, finished and succeeded.
async fn added(app: &TestApp, req: Value) -> (String, Value) {
    let r = app.post("/cloud/accounts", &app.owner, req).await;
    assert_eq!(r.status(), 201);
    let id = body(r).await["id"].as_str().expect("id").to_owned();
    let run = finished_run(app, &id).await;
    assert_eq!(run["status"], "succeeded", "{run}");
    (id, run)
}

/// The entry of a list whose `key` is `value`.
fn entry<'a>(list: &'a Value, key: &str, value: &str) -> &'a Value {
    list.as_array()
        .and_then(|l| l.iter().find(|r| r[key] == value))
        .unwrap_or_else(|| panic!("{key} {value} in {list}"))
}

/// How many findings of a list are of `rule`.
fn of_rule(findings: &Value, rule: &str) -> usize {
    findings
        .as_array()
        .expect("list")
        .iter()
        .filter(|f| f["rule"] == rule)
        .count()
}

/// Sends an inventory whose interfaces hold `addrs`, and waits until it is stored.
pub(crate) async fn report_addrs(app: &TestApp, host: &Host, addrs: &[&str]) {
    let inv = json!({"collected_at": ts(OffsetDateTime::now_utc()),
        "network": {"interfaces": [{"name": "lo", "addrs": ["127.0.0.1"]}, {"name": "eth0", "addrs": addrs}]}});
    let b = json!({"batch_id": Uuid::new_v4(), "sent_at": ts(OffsetDateTime::now_utc()), "inventory": inv});
    let r = send(app, host, b.to_string().as_bytes(), None, true).await;
    assert_eq!(r.status(), 202);
    for _ in 0..100 {
        let v = body(
            app.get(&format!("/agents/{}/inventory", host.id), &app.owner)
                .await,
        )
        .await;
        if v.to_string().contains(addrs[0]) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the inventory was not stored");
}

fn ids(list: &Value) -> Vec<String> {
    let mut v: Vec<String> = list
        .as_array()
        .expect("list")
        .iter()
        .map(|r| r["provider_id"].as_str().expect("id").to_owned())
        .collect();
    v.sort();
    v
}

async fn aws_accounts_are_checked_live_discovered_in_every_region_and_kept_current(b: Backend) {
    if !moto::available() {
        return;
    }
    let m = moto::Moto::start().await;
    let app = TestApp::spawn(b).await;
    let creds = |secret: &str| {
        json!({"provider": "aws", "name": "prod", "endpoint": m.url,
            "credentials": {"access_key_id": m.access_key_id, "secret_access_key": secret}})
    };
    // A wrong secret: moto's IAM refuses the signature; nothing is stored.
    let r = app
        .post("/cloud/accounts", &app.owner, creds("wrong secret"))
        .await;
    assert_eq!(r.status(), 422);
    let p = body(r).await;
    assert_eq!(p["code"], "credentials_rejected", "{p}");
    assert!(
        p["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("AuthFailure"),
        "{p}"
    );
    assert_eq!(
        body(app.get("/cloud/accounts", &app.owner).await).await,
        json!([])
    );
    // An unreachable endpoint is refused as unreached, not as refused credentials.
    let mut down = creds(&m.secret_access_key);
    down["endpoint"] = json!("http://127.0.0.1:9");
    let r = app.post("/cloud/accounts", &app.owner, down).await;
    let p = body(r).await;
    assert_eq!(p["code"], "provider_unreachable", "{p}");
    assert!(
        p["detail"].as_str().is_some_and(
            |d| d.starts_with("cannot reach") && !d.contains("refused the credentials")
        ),
        "{p}"
    );

    // The host of one instance runs an agent: its private address is on its interface.
    let host = register(&app).await;
    let r = app
        .post("/cloud/accounts", &app.owner, creds(&m.secret_access_key))
        .await;
    assert_eq!(r.status(), 201);
    let account = body(r).await;
    assert!(!account.to_string().contains(&m.secret_access_key));
    assert_eq!(account["provider"], "aws");
    let id = account["id"].as_str().expect("id").to_owned();
    let run = finished_run(&app, &id).await;
    assert_eq!(run["status"], "succeeded", "{run}");
    assert_eq!(run["resources_seen"], 5, "every region read: {run}");
    assert_eq!(run["added"], 5);
    let all = body(app.get("/cloud/resources", &app.owner).await).await;
    let mut want: Vec<String> = ["us-east-1", "eu-west-1"]
        .iter()
        .flat_map(|r| m.instances[r].as_array().expect("ids").iter())
        .map(|i| i.as_str().expect("id").to_owned())
        .collect();
    want.sort();
    assert_eq!(ids(&all), want);
    let first = m.instances["us-east-1"][0].as_str().expect("id");
    let vm = all
        .as_array()
        .expect("list")
        .iter()
        .find(|r| r["provider_id"] == first)
        .expect("the instance")
        .clone();
    assert_eq!(vm["name"], "us-east-1-vm-0", "the Name tag names it");
    assert_eq!(vm["region"], "us-east-1");
    assert_eq!(vm["type"], "vm");
    assert_eq!(vm["state"], "running");
    assert_eq!(vm["tags"]["team"], "ops");
    assert_eq!(vm["is_public"], true);
    assert_eq!(vm["has_agent"], false);
    let private = vm["private_ips"][0]
        .as_str()
        .expect("private ip")
        .to_owned();
    report_addrs(&app, &host, &[&private]).await;
    let vm = body(
        app.get(
            &format!("/cloud/resources/{}", vm["id"].as_str().expect("id")),
            &app.owner,
        )
        .await,
    )
    .await;
    assert_eq!(
        vm["has_agent"], true,
        "matched by its private address: {vm}"
    );
    assert_eq!(vm["agent_id"], json!(host.id));
    let covered = body(app.get("/cloud/resources?has_agent=1", &app.owner).await).await;
    assert_eq!(ids(&covered), vec![first.to_owned()]);

    // Findings: SSH open to the world in us-east-1, unencrypted disks there, no agent.
    let findings = body(app.get("/cloud/findings?status=open", &app.owner).await).await;
    let count = |rule: &str| of_rule(&findings, rule);
    assert_eq!(count("ssh_open_to_world"), 3, "{findings}");
    assert_eq!(
        count("unencrypted_disk"),
        3,
        "eu-west-1's disks are encrypted: {findings}"
    );
    assert_eq!(
        count("no_agent"),
        5,
        "the agent appeared after the run: {findings}"
    );
    assert_eq!(count("rdp_open_to_world"), 0);
    // The next run sees the agent: its machine's no_agent finding resolves.
    let r = app
        .post(
            &format!("/cloud/accounts/{id}/discover"),
            &app.owner,
            json!({}),
        )
        .await;
    assert_eq!(r.status(), 202);
    let run = finished_run(&app, &id).await;
    assert_eq!(
        (
            run["added"].clone(),
            run["changed"].clone(),
            run["removed"].clone()
        ),
        (json!(0), json!(0), json!(0)),
        "{run}"
    );
    let findings = body(app.get("/cloud/findings?status=open", &app.owner).await).await;
    assert_eq!(
        findings
            .as_array()
            .expect("list")
            .iter()
            .filter(|f| f["rule"] == "no_agent")
            .count(),
        4
    );

    // A terminated instance counts as removed; its findings resolve.
    let gone = m.instances["eu-west-1"][1].as_str().expect("id");
    m.terminate("eu-west-1", gone).await;
    app.post(
        &format!("/cloud/accounts/{id}/discover"),
        &app.owner,
        json!({}),
    )
    .await;
    let run = finished_run(&app, &id).await;
    assert_eq!(run["removed"], 1, "{run}");
    let live = body(app.get("/cloud/resources", &app.owner).await).await;
    assert!(!ids(&live).contains(&gone.to_owned()));
    let with_removed = body(
        app.get("/cloud/resources?include_removed=1", &app.owner)
            .await,
    )
    .await;
    let removed = with_removed
        .as_array()
        .expect("list")
        .iter()
        .find(|r| r["provider_id"] == gone)
        .expect("kept");
    assert!(removed["removed_at"].is_string(), "{removed}");
    let resolved = body(app.get("/cloud/findings?status=resolved", &app.owner).await).await;
    assert!(
        resolved
            .as_array()
            .expect("list")
            .iter()
            .any(|f| f["resource_id"] == removed["id"]),
        "{resolved}"
    );
    let summary = body(app.get("/cloud/summary", &app.owner).await).await;
    assert_eq!(summary["resources"], 4, "{summary}");
    assert_eq!(summary["with_agent"], 1);
    assert_eq!(summary["without_agent"], 3);
    assert_eq!(summary["coverage_percent"], 25.0);
    assert_eq!(
        summary["by_provider"]["aws"],
        json!({"resources": 4, "with_agent": 1})
    );
    assert_eq!(
        summary["open_findings"]["HIGH"], 6,
        "3 ssh + 3 public without agent: {summary}"
    );

    // The install command of an uncovered machine: a single-use token.
    let other = live
        .as_array()
        .expect("list")
        .iter()
        .find(|r| r["has_agent"] == false)
        .expect("uncovered");
    let inst = body(
        app.get(
            &format!(
                "/cloud/resources/{}/install",
                other["id"].as_str().expect("id")
            ),
            &app.owner,
        )
        .await,
    )
    .await;
    let token = inst["enrollment_token"].as_str().expect("token");
    assert!(
        inst["commands"]["shell"]
            .as_str()
            .expect("shell")
            .contains(&format!("--enroll {token}")),
        "{inst}"
    );
    assert!(
        inst["commands"]["cloud_init"]
            .as_str()
            .expect("ci")
            .starts_with("#cloud-config\nruncmd:"),
        "{inst}"
    );
    let key = crate::agents::key();
    let r = crate::agents::register_raw(&app, token, &key, &key, "cloud-machine-1").await;
    assert_eq!(r.status(), 201);
    let r = crate::agents::register_raw(&app, token, &key, &key, "cloud-machine-2").await;
    assert_eq!(r.status(), 401, "a spent single-use token");

    // The secret is nowhere in clear: not in the account row, the audit log, any answer.
    let secret = m.secret_access_key.as_str();
    let audit = app
        .get("/audit-log?limit=200", &app.owner)
        .await
        .text()
        .await
        .expect("text");
    assert!(!audit.contains(secret) && audit.contains("cloud_account_added"));
    let accounts = app
        .get("/cloud/accounts", &app.owner)
        .await
        .text()
        .await
        .expect("text");
    assert!(!accounts.contains(secret));
    let sealed: Vec<Vec<u8>> = match &app.db {
        trusthub_store::Db::Sqlite { read, .. } => {
            sqlx::query_scalar("SELECT credentials_sealed FROM cloud_accounts")
                .fetch_all(read)
                .await
                .expect("read")
        }
        trusthub_store::Db::Postgres(pool) => {
            sqlx::query_scalar("SELECT credentials_sealed FROM cloud_accounts")
                .fetch_all(pool)
                .await
                .expect("read")
        }
    };
    assert_eq!(sealed.len(), 1);
    assert!(
        !sealed[0]
            .windows(secret.len())
            .any(|w| w == secret.as_bytes()),
        "sealed at rest"
    );
    let sql =
        format!("SELECT COUNT(*) FROM cloud_runs WHERE CAST(errors AS TEXT) LIKE '%{secret}%'");
    assert_eq!(app.count(&sql).await, 0, "{sql}");
    assert_eq!(
        app.count(&format!(
            "SELECT COUNT(*) FROM audit_log WHERE CAST(details AS TEXT) LIKE '%{secret}%'"
        ))
        .await,
        0
    );

    // Deleting the account takes its resources with it.
    let r = app
        .delete(&format!("/cloud/accounts/{id}"), &app.owner)
        .await;
    assert_eq!(r.status(), 204);
    assert_eq!(
        body(
            app.get("/cloud/resources?include_removed=1", &app.owner)
                .await
        )
        .await,
        json!([])
    );
}

async fn hetzner_servers_are_listed_over_pages_through_a_429_with_their_firewalls(b: Backend) {
    let (servers, firewalls) = hetzner::fleet();
    let fake = hetzner::Hetzner::start(servers.clone(), firewalls).await;
    let app = TestApp::spawn(b).await;
    let r = app
        .post(
            "/cloud/accounts",
            &app.owner,
            json!({"provider": "hetzner", "name": "fsn",
            "endpoint": fake.url, "credentials": {"token": "not the token"}}),
        )
        .await;
    assert_eq!(r.status(), 422);
    let p = body(r).await;
    assert_eq!(p["code"], "credentials_rejected");
    assert!(
        p["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("unable to authenticate"),
        "{p}"
    );
    fake.throttle_once();
    let (id, run) = added(
        &app,
        json!({"provider": "hetzner", "name": "fsn",
            "endpoint": fake.url, "credentials": {"token": fake.token}}),
    )
    .await;
    assert_eq!(run["resources_seen"], 60, "both pages: {run}");
    assert_eq!(fake.throttled(), 1, "the 429 was waited out");
    let all = body(
        app.get(
            &format!("/cloud/resources?account_id={id}&type=vm"),
            &app.owner,
        )
        .await,
    )
    .await;
    let one = entry(&all, "provider_id", "1001");
    assert_eq!(one["name"], "hz-1");
    assert_eq!(one["region"], "fsn1");
    assert_eq!(one["private_ips"], json!(["10.0.0.1"]));
    assert_eq!(
        one["public_ips"],
        json!(["203.0.113.1", "2a01:4f8:c0c:3e9::1"])
    );
    assert_eq!(one["tags"], json!({"env": "prod", "team": "ops"}));
    // SSH open to the world: no firewall (i % 3 == 0) or the ssh-open one (i % 3 == 1).
    let findings = body(
        app.get("/cloud/findings?severity=HIGH&status=open", &app.owner)
            .await,
    )
    .await;
    let ssh = findings
        .as_array()
        .expect("list")
        .iter()
        .filter(|f| f["rule"] == "ssh_open_to_world")
        .count();
    assert_eq!(ssh, 40, "web-only servers do not count");
    let rdp = body(
        app.get("/cloud/findings?severity=CRITICAL", &app.owner)
            .await,
    )
    .await;
    assert_eq!(
        rdp.as_array().map(Vec::len),
        Some(20),
        "no firewall: RDP too"
    );
    // A server deleted at Hetzner is removed at the next run.
    fake.set_servers(servers[1..].to_vec());
    app.post(
        &format!("/cloud/accounts/{id}/discover"),
        &app.owner,
        json!({}),
    )
    .await;
    let run = finished_run(&app, &id).await;
    assert_eq!(
        (run["resources_seen"].clone(), run["removed"].clone()),
        (json!(59), json!(1)),
        "{run}"
    );
}

async fn accounts_are_validated_stored_sealed_and_kept_apart(b: Backend) {
    let (servers, firewalls) = hetzner::fleet();
    let fake = hetzner::Hetzner::start(servers, firewalls).await;
    let app = TestApp::spawn(b).await;
    let bad = [
        (
            json!({"provider": "vultr", "name": "x", "credentials": {"token": "t"}}),
            "provider",
        ),
        (
            json!({"provider": "ionos", "name": "x", "credentials": {"token": ""}}),
            "credentials.token",
        ),
        (
            json!({"provider": "hetzner", "name": "x", "credentials": {}}),
            "credentials.token",
        ),
        (
            json!({"provider": "hetzner", "name": "x", "credentials": {"token": "t", "tokn": "t"}}),
            "credentials.tokn",
        ),
        (
            json!({"provider": "hetzner", "name": "", "credentials": {"token": "t"}}),
            "name",
        ),
        (
            json!({"provider": "hetzner", "name": "x", "credentials": {"token": "t"}, "regions": ["fsn 1"]}),
            "regions[0]",
        ),
        (
            json!({"provider": "hetzner", "name": "x", "credentials": {"token": "t"}, "endpoint": "ftp://x"}),
            "endpoint",
        ),
        // CONTRACT 30: credentials never ride in the URL.
        (
            json!({"provider": "hetzner", "name": "x", "credentials": {"token": "t"}, "endpoint": "http://user:s3cr3t-in-url@127.0.0.1:9/v1"}),
            "endpoint",
        ),
    ];
    for (req, field) in bad {
        let r = app.post("/cloud/accounts", &app.owner, req.clone()).await;
        assert_eq!(r.status(), 422, "{req}");
        let p = body(r).await;
        assert!(!p.to_string().contains("s3cr3t-in-url"), "{p}");
        assert!(
            p["errors"].to_string().contains(&format!("\"{field}\"")),
            "{req}: {p}"
        );
    }
    let r = app
        .post("/cloud/accounts", &app.owner, json!({"provider": "hetzner", "name": "x", "credentials": {"token": "t"}, "regoins": []}))
        .await;
    assert_eq!(r.status(), 422, "a misspelt field is refused");
    assert_eq!(
        body(app.get("/cloud/accounts", &app.owner).await).await,
        json!([])
    );
    for q in [
        "/cloud/resources?has_agent=maybe",
        "/cloud/resources?type=vps",
        "/cloud/findings?severity=high",
        "/cloud/runs?acount_id=x",
    ] {
        let r = app.get(q, &app.owner).await;
        assert!(
            r.status() == 400 || r.status() == 422,
            "{q}: {}",
            r.status()
        );
    }
    // Roles: a viewer reads, an operator discovers, only an admin adds.
    let (viewer, _) = app.user_with_role("viewer").await;
    let (operator, _) = app.user_with_role("operator").await;
    let req = json!({"provider": "hetzner", "name": "fsn", "endpoint": fake.url, "credentials": {"token": fake.token}});
    assert_eq!(
        app.post("/cloud/accounts", &viewer, req.clone())
            .await
            .status(),
        403
    );
    assert_eq!(
        app.post("/cloud/accounts", &operator, req.clone())
            .await
            .status(),
        403
    );
    let r = app.post("/cloud/accounts", &app.owner, req).await;
    assert_eq!(r.status(), 201);
    let id = body(r).await["id"].as_str().expect("id").to_owned();
    finished_run(&app, &id).await;
    let one = body(app.get(&format!("/cloud/accounts/{id}"), &viewer).await).await;
    assert_eq!(
        (one["id"].as_str(), one["provider"].as_str()),
        (Some(id.as_str()), Some("hetzner")),
        "{one}"
    );
    assert!(one.get("credentials").is_none(), "{one}");
    let r = app
        .post(
            &format!("/cloud/accounts/{id}/discover"),
            &operator,
            json!({}),
        )
        .await;
    assert_eq!(r.status(), 202);
    finished_run(&app, &id).await;
    assert_eq!(app.get("/cloud/summary", &viewer).await.status(), 200);
    let resource = body(app.get("/cloud/resources", &viewer).await).await[0]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    assert_eq!(
        app.get(&format!("/cloud/resources/{resource}/install"), &operator)
            .await
            .status(),
        403
    );
    // Another tenant sees none of it.
    let other = app.other_tenant().await;
    assert_eq!(
        body(app.get("/cloud/accounts", &other).await).await,
        json!([])
    );
    assert_eq!(
        app.get(&format!("/cloud/resources/{resource}"), &other)
            .await
            .status(),
        404
    );
    assert_eq!(
        app.delete(&format!("/cloud/accounts/{id}"), &other)
            .await
            .status(),
        404
    );
    assert_eq!(
        app.get(&format!("/cloud/accounts/{id}"), &other)
            .await
            .status(),
        404
    );
    assert_eq!(
        app.post(&format!("/cloud/accounts/{id}/discover"), &other, json!({}))
            .await
            .status(),
        404
    );
    assert_eq!(
        body(app.get("/cloud/summary", &other).await).await["resources"],
        0
    );
}

/// The Hetzner fake held true: Hetzner's official Python library (`hcloud`) lists every
/// server over both pages, reads their addresses, location, labels and firewalls, reads the
/// firewalls' rules, and takes a wrong token as Hetzner's `unauthorized` error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hetzner_fake_speaks_the_api_hetzners_own_library_reads() {
    if !python_has(
        "import hcloud",
        "hcloud is required in CI (pip install hcloud)",
    ) {
        return;
    }
    let (servers, firewalls) = hetzner::fleet();
    let fake = hetzner::Hetzner::start(servers, firewalls).await;
    let script = r#"
import json, sys
from hcloud import Client, APIException
url, token = sys.argv[1], sys.argv[2]
c = Client(token=token, api_endpoint=url)
out = {"servers": [], "firewalls": []}
for s in c.servers.get_all():
    out["servers"].append({"id": s.id, "name": s.name, "status": s.status,
        "ipv4": s.public_net.ipv4.ip, "ipv6": s.public_net.ipv6.ip,
        "private": [n.ip for n in s.private_net], "location": s.location.name,
        "labels": s.labels, "firewalls": [f.firewall.id for f in s.public_net.firewalls],
        "type": s.server_type.name, "image": s.image.name})
for f in c.firewalls.get_all():
    out["firewalls"].append({"id": f.id, "rules": [[r.direction, r.protocol, r.port, r.source_ips] for r in f.rules],
        "applied": [a.server.id for a in f.applied_to]})
try:
    Client(token="wrong", api_endpoint=url).servers.get_all()
    out["wrong"] = None
except APIException as e:
    out["wrong"] = e.code
print(json.dumps(out))
"#;
    let out = tokio::process::Command::new("python3")
        .args(["-c", script, &fake.url, &fake.token])
        .output()
        .await
        .expect("python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let servers = v["servers"].as_array().expect("servers");
    assert_eq!(servers.len(), 60, "both pages");
    let s = servers
        .iter()
        .find(|s| s["id"] == 1003)
        .expect("server 1003");
    assert_eq!(s["name"], "hz-3");
    assert_eq!(s["status"], "running");
    assert_eq!(s["ipv4"], "203.0.113.3");
    assert_eq!(s["ipv6"], "2a01:4f8:c0c:3eb::/64");
    assert_eq!(s["private"], json!(["10.0.0.3"]));
    assert_eq!(s["location"], "fsn1");
    assert_eq!(s["labels"], json!({"env": "prod", "team": "ops"}));
    assert_eq!(s["firewalls"], json!([]));
    assert_eq!(s["type"], "cx22");
    assert_eq!(s["image"], "ubuntu-24.04");
    let s1 = servers
        .iter()
        .find(|s| s["id"] == 1001)
        .expect("server 1001");
    assert_eq!(s1["firewalls"], json!([1]));
    let fw = v["firewalls"].as_array().expect("firewalls");
    assert_eq!(fw.len(), 2);
    assert_eq!(
        fw[0]["rules"][0],
        json!(["in", "tcp", "22", ["0.0.0.0/0", "::/0"]])
    );
    assert_eq!(fw[0]["applied"].as_array().map(Vec::len), Some(20));
    assert_eq!(v["wrong"], "unauthorized");
}

async fn an_admin_adds_an_account_and_installs_an_agent_on_an_uncovered_machine_from_the_pages(
    b: Backend,
) {
    let app = TestApp::spawn(b).await;
    let Some(browser) = crate::webdriver::Browser::start(&format!("cloud-{b:?}")).await else {
        return;
    };
    let (servers, firewalls) = hetzner::fleet();
    let fake = hetzner::Hetzner::start(servers, firewalls).await;
    // One server's address is on an agent's interface.
    let host = register(&app).await;
    report_addrs(&app, &host, &["10.0.0.7"]).await;
    browser
        .sign_in(&app.base, OWNER_EMAIL, OWNER_PASSWORD)
        .await;
    browser.goto(&format!("{}/", app.base)).await;
    browser.click("a[href='/ui/cloud']").await;
    let page = browser.wait_text("No cloud account yet").await;
    // Nothing is not full coverage (CONTRACT 33).
    assert!(
        page.contains("No machines seen yet")
            && !page.contains("0 of 0")
            && !page.contains("Every machine the accounts hold has an agent"),
        "{page}"
    );
    let summary = body(app.get("/cloud/summary", &app.owner).await).await;
    assert_eq!(summary["coverage_percent"], Value::Null, "{summary}");
    browser.screenshot("cloud-empty").await;
    let add = |token: String| {
        let browser = &browser;
        let url = fake.url.clone();
        async move {
            browser.click("details#add-hetzner summary").await;
            browser
                .type_into("details#add-hetzner input[name=name]", "Falkenstein")
                .await;
            browser
                .type_into("details#add-hetzner input[name=hetzner_token]", &token)
                .await;
            browser
                .type_into("details#add-hetzner input[name=endpoint]", &url)
                .await;
            browser
                .click("details#add-hetzner button[type=submit]")
                .await;
        }
    };
    add("a wrong token".into()).await;
    let page = browser.wait_text("refused the credentials").await;
    assert!(page.contains("unable to authenticate"), "{page}");
    add(fake.token.clone()).await;
    browser.wait_text("Account added").await;
    let id = body(app.get("/cloud/accounts", &app.owner).await).await[0]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    finished_run(&app, &id).await;
    browser.goto(&format!("{}/ui/cloud", app.base)).await;
    let page = browser.wait_text("machines have an agent").await;
    assert!(page.contains("1 of 60"), "{page}");
    assert!(
        !page.contains("hz-7 "),
        "the covered machine is not in the list: {page}"
    );
    browser.screenshot("cloud-coverage").await;
    browser
        .click("table#uncovered tbody tr:first-child button[type=submit]")
        .await;
    let page = browser.wait_text("Install the agent on").await;
    let shell = browser.text("#install-shell").await;
    assert!(
        shell.contains("install.sh | sh -s -- --enroll the_"),
        "{shell}: {page}"
    );
    // The token it shows enrols exactly one machine.
    let token = shell.rsplit(' ').next().expect("token").trim().to_owned();
    let key = crate::agents::key();
    assert_eq!(
        crate::agents::register_raw(&app, &token, &key, &key, "from-page-1")
            .await
            .status(),
        201
    );
    assert_eq!(
        crate::agents::register_raw(&app, &token, &key, &key, "from-page-2")
            .await
            .status(),
        401
    );
    browser.click("table#accounts button[type=submit]").await;
    browser.wait_text("Discovery started").await;
    finished_run(&app, &id).await;
    browser
        .goto(&format!("{}/ui/cloud/resources?has_agent=true", app.base))
        .await;
    let page = browser.text("table#resources").await;
    assert!(page.contains("hz-7") && !page.contains("hz-8"), "{page}");
    browser
        .goto(&format!("{}/ui/cloud/findings", app.base))
        .await;
    let page = browser.text("table#findings").await;
    assert!(
        page.contains("ssh_open_to_world") && page.contains("rdp_open_to_world"),
        "{page}"
    );
    browser.goto(&format!("{}/ui/cloud/runs", app.base)).await;
    let page = browser.text("table#runs").await;
    assert!(
        page.contains("succeeded") && page.contains("Falkenstein"),
        "{page}"
    );
    browser.assert_no_js_errors().await;
}

async fn digitalocean_droplets_are_listed_over_https_with_the_accounts_ca(b: Backend) {
    let fake = digitalocean::DigitalOcean::start().await;
    let app = TestApp::spawn(b).await;
    let req = |token: &str, ca: bool| {
        let mut r = json!({"provider": "digitalocean", "name": "fra", "endpoint": fake.served.base,
            "credentials": {"token": token}});
        if ca {
            r["ca_pem"] = json!(fake.served.ca_pem);
        }
        r
    };
    // Without the CA the hub does not trust the API's certificate: not reached, said why.
    let r = app
        .post("/cloud/accounts", &app.owner, req(&fake.token, false))
        .await;
    assert_eq!(r.status(), 422);
    let p = body(r).await;
    assert_eq!(p["code"], "provider_unreachable");
    assert!(
        p["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("certificate"),
        "{p}"
    );
    let r = app
        .post("/cloud/accounts", &app.owner, req("dop_v1_wrong", true))
        .await;
    let p = body(r).await;
    assert!(
        p["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("Unable to authenticate you"),
        "{p}"
    );
    let (_, run) = added(&app, req(&fake.token, true)).await;
    assert_eq!(run["resources_seen"], 250, "two pages of 200: {run}");
    let one = body(app.get("/cloud/resources?is_public=true", &app.owner).await).await;
    let d = entry(&one, "provider_id", "5002");
    assert_eq!(d["name"], "do-2");
    assert_eq!(d["region"], "fra1");
    assert_eq!(d["private_ips"], json!(["10.114.0.3"]));
    assert_eq!(
        d["public_ips"],
        json!(["198.51.0.3", "2a03:b0c0:3:d0::138a"])
    );
    assert_eq!(d["tags"], json!({"env": "prod", "web": ""}));
    let findings = body(app.get("/cloud/findings?status=open", &app.owner).await).await;
    let count = |rule: &str| of_rule(&findings, rule);
    assert_eq!(
        count("ssh_open_to_world"),
        125,
        "no firewall, or the open-ssh one"
    );
    assert_eq!(count("rdp_open_to_world"), 124, "no firewall at all");
}

/// The DigitalOcean fake held true: DigitalOcean's official Python library (`pydo`) reads the
/// account, pages through the droplets by their links, lists the firewalls, and takes a wrong
/// token as a 401 — over HTTPS with the fake's certificate trusted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_digitalocean_fake_speaks_the_api_pydo_reads() {
    if !python_has("import pydo", "pydo is required in CI (pip install pydo)") {
        return;
    }
    let fake = digitalocean::DigitalOcean::start().await;
    let script = r#"
import json, sys
from pydo import Client
from azure.core.exceptions import HttpResponseError
url, token, ca = sys.argv[1], sys.argv[2], sys.argv[3]
c = Client(token=token, endpoint=url, connection_verify=ca)
out = {"account": c.account.get()["account"]["status"], "droplets": [], "pages": 0}
page = 1
while True:
    r = c.droplets.list(per_page=100, page=page)
    out["pages"] += 1
    out["droplets"] += [{"id": d["id"], "name": d["name"], "region": d["region"]["slug"],
        "v4": [[n["type"], n["ip_address"]] for n in d["networks"]["v4"]], "tags": d["tags"]} for d in r["droplets"]]
    if "next" not in r["links"].get("pages", {}):
        break
    page += 1
out["total"] = r["meta"]["total"]
out["firewalls"] = [[f["name"], f["droplet_ids"], f["tags"], f["inbound_rules"][0]["sources"]["addresses"]]
    for f in c.firewalls.list()["firewalls"]]
try:
    Client(token="dop_v1_wrong", endpoint=url, connection_verify=ca).droplets.list()
    out["wrong"] = None
except HttpResponseError as e:
    out["wrong"] = e.status_code
print(json.dumps(out))
"#;
    let ca = fake.served.ca_file.as_ref().expect("ca");
    let out = tokio::process::Command::new("python3")
        .args([
            "-c",
            script,
            &fake.served.base,
            &fake.token,
            ca.to_str().expect("path"),
        ])
        .output()
        .await
        .expect("python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["account"], "active");
    assert_eq!(v["pages"], 3);
    assert_eq!(v["total"], 250);
    let droplets = v["droplets"].as_array().expect("droplets");
    assert_eq!(droplets.len(), 250);
    assert_eq!(
        droplets[1],
        json!({"id": 5002, "name": "do-2", "region": "fra1",
            "v4": [["private", "10.114.0.3"], ["public", "198.51.0.3"]], "tags": ["env:prod", "web"]})
    );
    assert_eq!(
        v["firewalls"][0],
        json!(["web", [], ["web"], ["198.51.100.0/24"]])
    );
    assert_eq!(
        v["firewalls"][1],
        json!(["open-ssh", [5001], [], ["0.0.0.0/0", "::/0"]])
    );
    assert_eq!(v["wrong"], 401);
}

async fn proxmox_guests_are_listed_with_their_agents_and_containers_addresses(b: Backend) {
    let fake = proxmox::Proxmox::start().await;
    let app = TestApp::spawn(b).await;
    let req = |secret: &str, endpoint: bool| {
        let mut r = json!({"provider": "proxmox", "name": "lab", "ca_pem": fake.served.ca_pem,
            "credentials": {"token_id": fake.token_id, "token_secret": secret}});
        if endpoint {
            r["endpoint"] = json!(format!("{}/", fake.served.base));
        }
        r
    };
    let r = app
        .post("/cloud/accounts", &app.owner, req(&fake.secret, false))
        .await;
    assert_eq!(r.status(), 422);
    assert!(body(r).await["errors"].to_string().contains("\"endpoint\""));
    let r = app
        .post("/cloud/accounts", &app.owner, req("not-the-secret", true))
        .await;
    assert_eq!(r.status(), 422);
    assert!(
        body(r).await["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("HTTP 401")
    );
    let (_, run) = added(&app, req(&fake.secret, true)).await;
    assert_eq!(
        run["resources_seen"], 31,
        "20 + 1 VMs and 10 containers, not the template: {run}"
    );
    let all = body(app.get("/cloud/resources", &app.owner).await).await;
    let by = |pid: &str| {
        all.as_array()
            .expect("list")
            .iter()
            .find(|r| r["provider_id"] == pid)
            .unwrap_or_else(|| panic!("{pid} in {all}"))
            .clone()
    };
    let vm = by("qemu/102");
    assert_eq!(
        (
            vm["name"].clone(),
            vm["region"].clone(),
            vm["state"].clone()
        ),
        (json!("vm-102"), json!("pve1"), json!("running"))
    );
    assert_eq!(vm["private_ips"], json!(["192.168.1.12"]));
    assert_eq!(vm["public_ips"], json!(["203.0.113.12"]));
    assert_eq!(vm["tags"], json!({"prod": "", "web": ""}));
    assert_eq!(
        by("qemu/103")["private_ips"],
        json!([]),
        "no guest agent, no addresses"
    );
    assert_eq!(by("qemu/120")["state"], "stopped");
    let ct = by("lxc/203");
    assert_eq!(ct["type"], "vm");
    assert_eq!(ct["private_ips"], json!(["10.10.0.24", "fd00:10::15"]));
    // The container's host runs an agent: matched by its address.
    let host = register(&app).await;
    report_addrs(&app, &host, &["10.10.0.24"]).await;
    let covered = body(app.get("/cloud/resources?has_agent=true", &app.owner).await).await;
    assert_eq!(ids(&covered), vec!["lxc/203".to_owned()]);
}

/// The Proxmox fake held true: `proxmoxer` (the Python client Proxmox users script with)
/// reads the version, the guests, a VM's guest-agent interfaces and a container's, over
/// HTTPS with an API token, and a wrong secret is its 401.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_proxmox_fake_speaks_the_api_proxmoxer_reads() {
    if !python_has(
        "import proxmoxer, requests",
        "proxmoxer is required in CI (pip install proxmoxer requests)",
    ) {
        return;
    }
    let fake = proxmox::Proxmox::start().await;
    let script = r#"
import json, sys
from proxmoxer import ProxmoxAPI
from proxmoxer.core import ResourceException
port, token_id, secret, ca = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
user, name = token_id.split("!")
px = ProxmoxAPI("localhost", port=int(port), user=user, token_name=name, token_value=secret, verify_ssl=ca)
out = {"version": px.version.get()["version"]}
guests = px.cluster.resources.get(type="vm")
out["guests"] = len(guests)
out["first"] = {k: guests[0][k] for k in ("id", "type", "vmid", "name", "node", "status", "template", "tags")}
out["agent"] = [[i["name"], [a["ip-address"] for a in i["ip-addresses"]]]
    for i in px.nodes("pve1").qemu(102).agent("network-get-interfaces").get()["result"]]
out["lxc"] = [[i["name"], i.get("inet")] for i in px.nodes("pve2").lxc(203).interfaces.get()]
try:
    px.nodes("pve1").qemu(103).agent("network-get-interfaces").get()
    out["no_agent"] = None
except ResourceException as e:
    out["no_agent"] = e.status_code
try:
    ProxmoxAPI("localhost", port=int(port), user=user, token_name=name, token_value="wrong", verify_ssl=ca).version.get()
    out["wrong"] = None
except ResourceException as e:
    out["wrong"] = e.status_code
print(json.dumps(out))
"#;
    let port = fake
        .served
        .base
        .rsplit(':')
        .next()
        .expect("port")
        .to_owned();
    let ca = fake.served.ca_file.as_ref().expect("ca");
    let out = tokio::process::Command::new("python3")
        .args([
            "-c",
            script,
            &port,
            &fake.token_id,
            &fake.secret,
            ca.to_str().expect("path"),
        ])
        .output()
        .await
        .expect("python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["version"], "8.2.4");
    assert_eq!(v["guests"], 32);
    assert_eq!(
        v["first"],
        json!({"id": "qemu/100", "type": "qemu", "vmid": 100, "name": "vm-100", "node": "pve1",
            "status": "running", "template": 0, "tags": "prod;web"})
    );
    assert_eq!(
        v["agent"][1],
        json!(["eth0", ["192.168.1.12", "fe80::be24:11ff:fe00:1"]])
    );
    assert_eq!(v["lxc"][1], json!(["eth0", "10.10.0.24/24"]));
    assert_eq!(v["no_agent"], 500);
    assert_eq!(v["wrong"], 401);
}

async fn ovh_instances_are_listed_with_signed_requests_on_ovhs_clock(b: Backend) {
    let fake = ovh::Ovh::start().await;
    let app = TestApp::spawn(b).await;
    let req = |secret: &str| {
        json!({"provider": "ovh", "name": "gra", "endpoint": fake.url, "credentials": {
            "application_key": fake.application_key, "application_secret": secret,
            "consumer_key": fake.consumer_key, "project_id": fake.project}})
    };
    let r = app
        .post("/cloud/accounts", &app.owner, req("not the secret"))
        .await;
    assert_eq!(r.status(), 422);
    assert!(
        body(r).await["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("Invalid signature")
    );
    let (_, run) = added(&app, req(&fake.application_secret)).await;
    assert_eq!(
        (run["resources_seen"].clone(), run["added"].clone()),
        (json!(12), json!(11)),
        "one is being deleted: {run}"
    );
    let all = body(app.get("/cloud/resources", &app.owner).await).await;
    assert_eq!(all.as_array().map(Vec::len), Some(11));
    let one = entry(&all, "name", "ovh-2");
    assert_eq!(one["region"], "SBG5");
    assert_eq!(
        one["public_ips"],
        json!(["51.75.0.3", "2001:41d0:304:200::2"])
    );
    assert_eq!(one["private_ips"], json!(["10.1.0.3"]));
    assert_eq!(one["state"], "ACTIVE");
}

/// The OVH fake held true: OVHcloud's own Python library (`ovh`) reads OVH's clock, signs
/// its calls, and the fake takes them — so the signature the fake checks (and the hub's
/// client must make) is OVH's; a wrong secret is its signature error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ovh_fake_checks_the_signature_ovhs_own_library_makes() {
    if !python_has("import ovh", "ovh is required in CI (pip install ovh)") {
        return;
    }
    let fake = ovh::Ovh::start().await;
    let script = r#"
import json, sys
import ovh, ovh.client
url, ak, secret, ck, project = sys.argv[1:6]
ovh.client.ENDPOINTS["trusthub-test"] = url
c = ovh.Client(endpoint="trusthub-test", application_key=ak, application_secret=secret, consumer_key=ck)
out = {"project": c.get(f"/cloud/project/{project}")["status"]}
out["instances"] = [[i["name"], i["region"], i["status"], [a["ip"] for a in i["ipAddresses"] if a["type"] == "private"]]
    for i in c.get(f"/cloud/project/{project}/instance")]
try:
    ovh.Client(endpoint="trusthub-test", application_key=ak, application_secret="wrong", consumer_key=ck).get(f"/cloud/project/{project}")
    out["wrong"] = None
except ovh.exceptions.APIError as e:
    out["wrong"] = str(e).split(" \n")[0]
print(json.dumps(out))
"#;
    let out = tokio::process::Command::new("python3")
        .args([
            "-c",
            script,
            &fake.url,
            &fake.application_key,
            &fake.application_secret,
            &fake.consumer_key,
            &fake.project,
        ])
        .env_remove("OVH_ENDPOINT")
        .output()
        .await
        .expect("python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["project"], "ok");
    assert_eq!(v["instances"].as_array().map(Vec::len), Some(12));
    assert_eq!(
        v["instances"][1],
        json!(["ovh-2", "SBG5", "ACTIVE", ["10.1.0.3"]])
    );
    assert!(
        v["wrong"]
            .as_str()
            .is_some_and(|w| w.contains("Invalid signature")),
        "{v}"
    );
}

async fn gcp_instances_are_listed_with_a_service_accounts_token(b: Backend) {
    let fake = gcp::Gcp::start().await;
    let app = TestApp::spawn(b).await;
    // A key that is not the service account's: its assertion is refused at the token endpoint.
    let mut other: Value = serde_json::from_str(&fake.key_json).expect("key");
    let second = gcp::Gcp::start().await;
    other["private_key"] =
        serde_json::from_str::<Value>(&second.key_json).expect("key")["private_key"].clone();
    let r = app
        .post(
            "/cloud/accounts",
            &app.owner,
            json!({"provider": "gcp", "name": "prod", "endpoint": fake.url,
            "credentials": {"service_account_json": other.to_string()}}),
        )
        .await;
    assert_eq!(r.status(), 422);
    assert!(
        body(r).await["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("Invalid JWT Signature")
    );
    let (_, run) = added(
        &app,
        json!({"provider": "gcp", "name": "prod", "endpoint": fake.url,
            "credentials": {"service_account_json": fake.key_json}, "regions": ["europe-west1"]}),
    )
    .await;
    assert_eq!(
        run["resources_seen"], 400,
        "europe-west1's zones only, over both pages: {run}"
    );
    let all = body(app.get("/cloud/resources", &app.owner).await).await;
    let one = entry(&all, "name", "gce-2");
    assert_eq!(one["region"], "europe-west1-b");
    assert_eq!(one["provider_id"], "7000000000000000002");
    assert_eq!(one["private_ips"], json!(["10.132.0.4"]));
    assert_eq!(one["public_ips"], json!(["34.76.0.4"]));
    assert_eq!(one["tags"], json!({"env": "prod"}));
    let findings = body(app.get("/cloud/findings?status=open", &app.owner).await).await;
    let count = |rule: &str| of_rule(&findings, rule);
    assert_eq!(count("ssh_open_to_world"), 200, "the ssh tag's instances");
    assert_eq!(
        count("rdp_open_to_world"),
        0,
        "a disabled rule opens nothing"
    );
    // The key is sealed: its private key is in no answer or audit row.
    let audit = app
        .get("/audit-log?limit=100", &app.owner)
        .await
        .text()
        .await
        .expect("text");
    assert!(!audit.contains("PRIVATE KEY"));
}

/// The GCP fake held true: Google's own `google-cloud-compute` (with `google-auth` making
/// and exchanging the service account's assertion) reads the project, pages through every
/// zone's instances and lists the firewalls; a key that is not the account's is refused at
/// the token endpoint.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gcp_fake_speaks_the_api_google_cloud_compute_reads() {
    if !python_has(
        "import google.cloud.compute_v1, google.oauth2.service_account",
        "google-cloud-compute is required in CI",
    ) {
        return;
    }
    let fake = gcp::Gcp::start().await;
    let other = gcp::Gcp::start().await;
    let script = r#"
import json, sys
from google.cloud import compute_v1
from google.api_core.client_options import ClientOptions
from google.oauth2 import service_account
url, key, other_key = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
scopes = ["https://www.googleapis.com/auth/compute.readonly"]
creds = service_account.Credentials.from_service_account_info(key, scopes=scopes)
opts = ClientOptions(api_endpoint=url)
project = key["project_id"]
# The OAuth 2.0 JWT bearer exchange at the key's token_uri, as google-auth makes it.
import google.auth.transport.requests
creds.refresh(google.auth.transport.requests.Request())
out_token = creds.token
creds = service_account.Credentials.from_service_account_info(key, scopes=scopes)
out = {"project": compute_v1.ProjectsClient(credentials=creds, client_options=opts, transport="rest").get(project=project).name,
    "token": out_token}
zones = {}
for zone, scoped in compute_v1.InstancesClient(credentials=creds, client_options=opts, transport="rest").aggregated_list(
        request={"project": project, "max_results": 500}):
    for i in scoped.instances:
        zones.setdefault(zone, []).append(i)
out["zones"] = {z: len(v) for z, v in zones.items()}
i = zones["zones/europe-west1-b"][1]
out["second"] = [i.name, str(i.id), i.status, i.network_interfaces[0].network_i_p,
    i.network_interfaces[0].access_configs[0].nat_i_p, list(i.tags.items), dict(i.labels)]
out["firewalls"] = [[f.name, list(f.source_ranges), list(f.target_tags), [[a.I_p_protocol, list(a.ports)] for a in f.allowed], f.disabled]
    for f in compute_v1.FirewallsClient(credentials=creds, client_options=opts, transport="rest").list(project=project)]
other_key["project_id"] = project
other_key["client_email"] = key["client_email"]
other_key["token_uri"] = key["token_uri"]
bad = service_account.Credentials.from_service_account_info(other_key, scopes=scopes)
try:
    bad.refresh(google.auth.transport.requests.Request())
    out["wrong"] = None
except Exception as e:
    out["wrong"] = str(e)
print(json.dumps(out))
"#;
    let out = tokio::process::Command::new("python3")
        .args(["-c", script, &fake.url, &fake.key_json, &other.key_json])
        .output()
        .await
        .expect("python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["project"], fake.project.as_str());
    assert_eq!(
        v["zones"],
        json!({"zones/europe-west1-b": 400, "zones/us-central1-a": 220})
    );
    assert_eq!(
        v["second"],
        json!(["gce-2", "7000000000000000002", "RUNNING", "10.132.0.4", "34.76.0.4", ["ssh", "web"], {"env": "prod"}])
    );
    assert_eq!(
        v["firewalls"][0],
        json!([
            "allow-ssh-world",
            ["0.0.0.0/0"],
            ["ssh"],
            [["tcp", ["22"]]],
            false
        ])
    );
    assert_eq!(v["firewalls"][2][4], true);
    assert!(
        v["wrong"]
            .as_str()
            .is_some_and(|w| w.contains("Invalid JWT Signature")),
        "{v}"
    );
}

async fn azure_vms_are_listed_with_a_service_principal(b: Backend) {
    let fake = azure::Azure::start().await;
    let app = TestApp::spawn(b).await;
    let req = |secret: &str| {
        json!({"provider": "azure", "name": "prod", "endpoint": fake.served.base, "ca_pem": fake.served.ca_pem,
            "credentials": {"tenant_id": fake.tenant, "client_id": fake.client_id, "client_secret": secret,
                "subscription_id": fake.subscription, "authority_host": fake.served.base}})
    };
    let r = app
        .post("/cloud/accounts", &app.owner, req("not the secret"))
        .await;
    assert_eq!(r.status(), 422);
    assert!(
        body(r).await["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("AADSTS7000215")
    );
    let (_, run) = added(&app, req(&fake.secret)).await;
    assert_eq!(run["resources_seen"], 60, "two pages: {run}");
    let all = body(app.get("/cloud/resources", &app.owner).await).await;
    let vm = entry(&all, "name", "vm-6");
    assert_eq!(
        vm["provider_id"], "6a3b5c2e-0000-4000-8000-000000000006",
        "the vmId"
    );
    assert_eq!(vm["region"], "westeurope");
    assert_eq!(vm["state"], "running");
    assert_eq!(vm["private_ips"], json!(["10.0.0.10"]));
    assert_eq!(vm["public_ips"], json!(["20.71.0.7"]));
    let stopped = entry(&all, "name", "vm-10");
    assert_eq!(stopped["state"], "deallocated");
    let findings = body(app.get("/cloud/findings?rule=x", &app.owner).await).await;
    assert!(
        findings["status"] == 400 || findings["status"] == 422,
        "an unknown filter is refused"
    );
    let findings = body(app.get("/cloud/findings?severity=HIGH", &app.owner).await).await;
    let ssh = findings
        .as_array()
        .expect("list")
        .iter()
        .filter(|f| f["rule"] == "ssh_open_to_world")
        .count();
    assert_eq!(ssh, 10, "public and behind the ssh-open group");
}

/// The Azure fake held true: Microsoft's own `azure-identity` (MSAL inside) gets a token
/// with the client secret, `azure-mgmt-compute` and `azure-mgmt-network` page through the
/// subscription's VMs, NICs, public addresses and security groups; a wrong secret is
/// Entra ID's `invalid_client`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_azure_fake_speaks_the_api_azures_own_libraries_read() {
    if !python_has(
        "import azure.identity, azure.mgmt.compute, azure.mgmt.network",
        "azure-identity, azure-mgmt-compute and azure-mgmt-network are required in CI",
    ) {
        return;
    }
    let fake = azure::Azure::start().await;
    let script = r#"
import json, sys
from azure.identity import ClientSecretCredential
from azure.core.exceptions import ClientAuthenticationError
from azure.mgmt.compute import ComputeManagementClient
from azure.mgmt.network import NetworkManagementClient
url, tenant, client, secret, sub = sys.argv[1:6]
cred = ClientSecretCredential(tenant, client, secret, authority=url, disable_instance_discovery=True)
scopes = [url + "/.default"]
compute = ComputeManagementClient(cred, sub, base_url=url, credential_scopes=scopes)
vms = list(compute.virtual_machines.list_all(status_only="true"))
v = vms[5]
out = {"vms": len(vms), "vm": [v.name, v.vm_id, v.location, v.network_profile.network_interfaces[0].id.rsplit("/", 1)[1],
    [s.code for s in v.instance_view.statuses], v.tags]}
network = NetworkManagementClient(cred, sub, base_url=url, credential_scopes=scopes)
nics = list(network.network_interfaces.list_all())
n = nics[5]
out["nics"] = len(nics)
out["nic"] = [n.name, n.ip_configurations[0].private_ip_address, n.ip_configurations[0].public_ip_address.id.rsplit("/", 1)[1],
    n.network_security_group.id.rsplit("/", 1)[1]]
out["pips"] = sorted(p.ip_address for p in network.public_ip_addresses.list_all())[:2]
out["nsgs"] = [[g.name, [[r.direction, r.access, r.protocol, r.source_address_prefix, r.destination_port_range] for r in g.security_rules]]
    for g in network.network_security_groups.list_all()]
try:
    ClientSecretCredential(tenant, client, "wrong", authority=url, disable_instance_discovery=True).get_token(scopes[0])
    out["wrong"] = None
except ClientAuthenticationError as e:
    out["wrong"] = "AADSTS7000215" in str(e)
print(json.dumps(out))
"#;
    let ca = fake.served.ca_file.as_ref().expect("ca");
    let out = tokio::process::Command::new("python3")
        .args([
            "-c",
            script,
            &fake.served.base,
            &fake.tenant,
            &fake.client_id,
            &fake.secret,
            &fake.subscription,
        ])
        .env("REQUESTS_CA_BUNDLE", ca)
        .env("SSL_CERT_FILE", ca)
        .env_remove("AZURE_AUTHORITY_HOST")
        .output()
        .await
        .expect("python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["vms"], 60, "both pages");
    assert_eq!(
        v["vm"],
        json!(["vm-6", "6a3b5c2e-0000-4000-8000-000000000006", "westeurope", "nic-6",
            ["ProvisioningState/succeeded", "PowerState/running"], {"env": "prod"}])
    );
    assert_eq!(v["nics"], 60);
    assert_eq!(v["nic"], json!(["nic-6", "10.0.0.10", "pip-6", "ssh-open"]));
    assert_eq!(v["pips"], json!(["20.71.0.11", "20.71.0.13"]));
    assert_eq!(
        v["nsgs"][0],
        json!(["ssh-open", [["Inbound", "Allow", "Tcp", "Internet", "22"]]])
    );
    assert_eq!(v["wrong"], true);
}

async fn scaleway_servers_are_listed_in_every_zone_with_their_security_groups(b: Backend) {
    let fake = scaleway::Scaleway::start().await;
    let app = TestApp::spawn(b).await;
    let req = |secret: &str| {
        json!({"provider": "scaleway", "name": "par", "endpoint": fake.url,
            "credentials": {"access_key": "SCWAAAAAAAAAAAAAAAAA", "secret_key": secret, "project_id": fake.project}})
    };
    let r = app
        .post(
            "/cloud/accounts",
            &app.owner,
            req("00000000-0000-4000-8000-000000000000"),
        )
        .await;
    assert_eq!(r.status(), 422);
    assert!(
        body(r).await["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("authentication is denied")
    );
    let (_, run) = added(&app, req(&fake.secret)).await;
    assert_eq!(
        run["resources_seen"], 180,
        "every zone, two pages in fr-par-1: {run}"
    );
    let all = body(app.get("/cloud/resources", &app.owner).await).await;
    let s = entry(&all, "name", "scw-151");
    assert_eq!(s["region"], "nl-ams-1");
    assert_eq!(s["public_ips"], json!(["51.15.0.152"]));
    assert_eq!(s["tags"], json!({"env": "prod", "web": ""}));
    let findings = body(app.get("/cloud/findings?status=open", &app.owner).await).await;
    let count = |rule: &str| of_rule(&findings, rule);
    assert_eq!(
        count("ssh_open_to_world"),
        120,
        "the open group and the ssh group"
    );
    assert_eq!(
        count("rdp_open_to_world"),
        60,
        "the open group only: a drop rule comes first in the locked one"
    );
}

/// The Scaleway fake held true: Scaleway's own Python SDK (`scaleway`) pages through a zone's
/// servers by `total_count`, lists the security groups and a group's rules, and a wrong
/// secret is its 401.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scaleway_fake_speaks_the_api_scaleways_own_sdk_reads() {
    if !python_has(
        "import scaleway.instance.v1",
        "the scaleway SDK is required in CI (pip install scaleway)",
    ) {
        return;
    }
    let fake = scaleway::Scaleway::start().await;
    let script = r#"
import json, sys
from scaleway import Client, ScalewayException
from scaleway.instance.v1 import InstanceV1API
url, secret, project = sys.argv[1:4]
def client(secret):
    return Client(access_key="SCWAAAAAAAAAAAAAAAAA", secret_key=secret, default_project_id=project,
        default_organization_id=project, default_region="fr-par", default_zone="fr-par-1", api_url=url)
api = InstanceV1API(client(secret))
servers = api.list_servers_all(zone="fr-par-1", project=project)
s = servers[0]
out = {"servers": len(servers), "first": [s.id, s.name, str(s.state), [ip.address for ip in s.public_ips], s.tags,
    s.security_group.id, s.zone],
    "ams": len(api.list_servers_all(zone="nl-ams-1", project=project))}
groups = api.list_security_groups(zone="fr-par-1", project=project).security_groups
out["groups"] = [[g.id, str(g.inbound_default_policy)] for g in groups]
rules = api.list_security_group_rules(zone="fr-par-1", security_group_id="sg-locked").rules
out["rules"] = [[str(r.direction), str(r.action), str(r.protocol), r.ip_range, r.dest_port_from, r.position] for r in rules]
try:
    InstanceV1API(client("00000000-0000-4000-8000-000000000000")).list_servers(zone="fr-par-1")
    out["wrong"] = None
except ScalewayException as e:
    out["wrong"] = e.status_code
print(json.dumps(out))
"#;
    let out = tokio::process::Command::new("python3")
        .args(["-c", script, &fake.url, &fake.secret, &fake.project])
        .env_remove("SCW_ACCESS_KEY")
        .env_remove("SCW_SECRET_KEY")
        .output()
        .await
        .expect("python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["servers"], 150, "both pages");
    assert_eq!(v["ams"], 30);
    assert_eq!(
        v["first"],
        json!([
            "11111111-2222-4333-8444-000000000001",
            "scw-1",
            "running",
            ["51.15.0.2"],
            ["env=prod", "web"],
            "sg-locked",
            "fr-par-1"
        ])
    );
    assert_eq!(
        v["groups"],
        json!([
            ["sg-open", "accept"],
            ["sg-locked", "accept"],
            ["sg-ssh", "drop"]
        ])
    );
    assert_eq!(
        v["rules"][0],
        json!(["inbound", "drop", "TCP", "0.0.0.0/0", 22, 1])
    );
    assert_eq!(v["wrong"], 401);
}

async fn ionos_servers_are_listed_in_every_data_center_with_their_nic_firewalls(b: Backend) {
    let fake = ionos::Ionos::start().await;
    let app = TestApp::spawn(b).await;
    let req = |token: &str| json!({"provider": "ionos", "name": "fra", "endpoint": fake.url, "credentials": {"token": token}});
    let r = app
        .post("/cloud/accounts", &app.owner, req("not the token"))
        .await;
    assert_eq!(r.status(), 422);
    assert!(
        body(r).await["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("HTTP 401")
    );
    let (_, run) = added(&app, req(&fake.token)).await;
    assert_eq!(
        run["resources_seen"], 130,
        "both data centers, two pages in de/fra: {run}"
    );
    let all = body(app.get("/cloud/resources", &app.owner).await).await;
    let s = entry(&all, "name", "ionos-121");
    assert_eq!(s["region"], "de/txl");
    assert_eq!(s["public_ips"], json!(["85.215.0.122"]));
    assert_eq!(s["private_ips"], json!(["10.7.0.122"]));
    assert_eq!(
        all.as_array()
            .expect("list")
            .iter()
            .find(|r| r["name"] == "ionos-11")
            .expect("11")["state"],
        "SHUTOFF"
    );
    let findings = body(app.get("/cloud/findings?status=open", &app.owner).await).await;
    let count = |rule: &str| of_rule(&findings, rule);
    assert_eq!(
        count("ssh_open_to_world"),
        87,
        "firewall off, or SSH allowed"
    );
    assert_eq!(count("rdp_open_to_world"), 43, "firewall off");
}

/// The IONOS fake held true: IONOS's own Python SDK (`ionoscloud`) reads the data centers,
/// a data center's LANs and its servers with their NICs and firewall rules, page by page,
/// and a wrong token is its 401.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ionos_fake_speaks_the_api_ionos_own_sdk_reads() {
    if !python_has(
        "import ionoscloud",
        "ionoscloud is required in CI (pip install ionoscloud)",
    ) {
        return;
    }
    let fake = ionos::Ionos::start().await;
    let script = r#"
import json, sys
import ionoscloud
from ionoscloud.rest import ApiException
url, token = sys.argv[1:3]
def client(token):
    return ionoscloud.ApiClient(ionoscloud.Configuration(host=url, token=token))
c = client(token)
dcs = ionoscloud.DataCentersApi(c).datacenters_get(depth=1)
dc = dcs.items[0]
out = {"dcs": [[d.id, d.properties.location] for d in dcs.items]}
servers, offset = [], 0
while True:
    page = ionoscloud.ServersApi(c).datacenters_servers_get(dc.id, depth=3, offset=offset, limit=100)
    servers += page.items
    if page.links is None or page.links.next is None:
        break
    offset += len(page.items)
s = servers[0]
nic = s.entities.nics.items[0]
out["servers"] = len(servers)
out["first"] = [s.properties.name, s.properties.vm_state, nic.properties.ips, nic.properties.lan, nic.properties.firewall_active,
    [[r.properties.protocol, r.properties.port_range_start, r.properties.source_ip] for r in nic.entities.firewallrules.items]]
out["lans"] = [[l.id, l.properties.public] for l in ionoscloud.LANsApi(c).datacenters_lans_get(dc.id, depth=1).items]
try:
    ionoscloud.DataCentersApi(client("wrong")).datacenters_get()
    out["wrong"] = None
except ApiException as e:
    out["wrong"] = e.status
print(json.dumps(out))
"#;
    let out = tokio::process::Command::new("python3")
        .args(["-c", script, &fake.url, &fake.token])
        .output()
        .await
        .expect("python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["dcs"][1][1], "de/txl");
    assert_eq!(v["servers"], 120, "both pages");
    assert_eq!(
        v["first"],
        json!([
            "ionos-1",
            "RUNNING",
            ["85.215.0.2"],
            1,
            true,
            [["TCP", 22, null], ["TCP", 443, null]]
        ])
    );
    assert_eq!(v["lans"], json!([["1", true], ["2", false]]));
    assert_eq!(v["wrong"], 401);
}

/// The periodic job (under the cluster lease): every account is discovered again once its
/// last run is `TRUSTHUB_CLOUD_DISCOVER_INTERVAL_SECS` old, without anyone asking.
async fn accounts_are_discovered_again_on_their_interval(b: Backend) {
    let (servers, firewalls) = hetzner::fleet();
    let fake = hetzner::Hetzner::start(servers.clone(), firewalls).await;
    let app = TestApp::spawn_with(b, |s| {
        s.sections
            .edit(|v: &mut trusthub_hub::sections::Cloud| v.cloud_discover_interval_secs = 2)
    })
    .await;
    let r = app
        .post(
            "/cloud/accounts",
            &app.owner,
            json!({"provider": "hetzner", "name": "fsn",
            "endpoint": fake.url, "credentials": {"token": fake.token}}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let id = body(r).await["id"].as_str().expect("id").to_owned();
    finished_run(&app, &id).await;
    // The next runs come by themselves; one of them sees the servers Hetzner deleted.
    fake.set_servers(servers[..50].to_vec());
    let mut runs = Value::Null;
    for _ in 0..200 {
        runs = body(
            app.get(&format!("/cloud/runs?account_id={id}"), &app.owner)
                .await,
        )
        .await;
        if runs
            .as_array()
            .is_some_and(|a| a.iter().any(|r| r["removed"] == 10))
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let list = runs.as_array().expect("runs");
    assert!(list.len() >= 2, "{runs}");
    assert!(
        list.iter().any(|r| r["removed"] == 10),
        "a periodic run saw the deletions: {runs}"
    );
    assert_eq!(
        body(app.get("/cloud/summary", &app.owner).await).await["resources"],
        50
    );
}
