//! `trusthub cloud …` (CONTRACT 23, 28): cloud accounts, discovery runs, resources with
//! their agent coverage, findings, the summary, and the install command of a machine no
//! agent watches. Credentials come from the provider's own environment variables
//! (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `HCLOUD_TOKEN`,
//! `DIGITALOCEAN_TOKEN`, `PM_API_TOKEN_ID`, `PM_API_TOKEN_SECRET`, `OVH_APPLICATION_KEY`,
//! `OVH_APPLICATION_SECRET`, `OVH_CONSUMER_KEY`, `OVH_CLOUD_PROJECT_SERVICE`, `AZURE_TENANT_ID`,
//! `AZURE_CLIENT_ID`, `AZURE_CLIENT_SECRET`, `AZURE_SUBSCRIPTION_ID`, `SCW_ACCESS_KEY`,
//! `SCW_SECRET_KEY`, `SCW_DEFAULT_PROJECT_ID`, `IONOS_TOKEN`; for GCP the key
//! file `GOOGLE_APPLICATION_CREDENTIALS` names) or
//! `--credential name=value`; a missing secret is asked for without echo, never taken from
//! the command line by default.

use super::{ACCOUNT, Global, Watch, client, delete, id, list, named, print, prompt};
use crate::remote::client::Failure;
use reqwest::Method;
use serde_json::{Map, Value, json};

/// `trusthub cloud …`.
#[derive(Debug, clap::Subcommand)]
pub enum CloudCmd {
    /// The cloud accounts.
    Accounts,
    /// Add an account (admin): its credentials are checked live by the provider first.
    Add {
        /// `aws`, `azure`, `gcp`, `hetzner`, `proxmox`, `digitalocean`, `scaleway`, `ovh` or
        /// `ionos`.
        #[arg(value_parser = ["aws", "azure", "gcp", "hetzner", "proxmox", "digitalocean", "scaleway", "ovh", "ionos"])]
        provider: String,
        /// A name for it.
        #[arg(long)]
        name: String,
        /// A region or location to read (repeatable; none: every region).
        #[arg(long = "region")]
        regions: Vec<String>,
        /// The API base URL when not the provider's own.
        #[arg(long)]
        endpoint: Option<String>,
        /// A PEM file of the CA the provider's TLS certificate chains to.
        #[arg(long)]
        ca_file: Option<std::path::PathBuf>,
        /// A credential as `name=value` (repeatable); by default read from the provider's
        /// environment variables, or asked for.
        #[arg(long = "credential")]
        credentials: Vec<String>,
    },
    /// Delete an account with what was discovered through it (admin).
    Rm {
        /// Account id or name.
        account: String,
    },
    /// Run a discovery of an account now (operator).
    Discover {
        /// Account id or name.
        account: String,
        /// Wait for the run to finish and print it.
        #[arg(long)]
        wait: bool,
    },
    /// Discovery runs, newest first.
    Runs {
        /// Only this account.
        #[arg(long)]
        account: Option<String>,
    },
    /// Resources with their agent coverage.
    Resources {
        /// Only this account.
        #[arg(long)]
        account: Option<String>,
        /// Only this type.
        #[arg(long = "type", value_parser = ["vm", "container", "database", "load_balancer", "bucket"])]
        kind: Option<String>,
        /// Only those no agent watches.
        #[arg(long, conflicts_with = "with_agent")]
        without_agent: bool,
        /// Only those an agent watches.
        #[arg(long)]
        with_agent: bool,
        /// Only those with a public address.
        #[arg(long)]
        public: bool,
        /// Removed ones too.
        #[arg(long)]
        include_removed: bool,
        #[command(flatten)]
        watch: Watch,
    },
    /// Findings of the discovery runs (open ones by default).
    Findings {
        /// Only this severity.
        #[arg(long, value_parser = ["CRITICAL", "HIGH", "MEDIUM", "LOW"])]
        severity: Option<String>,
        /// `open` or `resolved`.
        #[arg(long, default_value = "open", value_parser = ["open", "resolved"])]
        status: String,
    },
    /// Coverage and exposure at a glance.
    Summary,
    /// The agent install command of a machine, with a fresh single-use enrollment token
    /// (admin).
    Install {
        /// Resource id.
        resource: String,
        /// Print it as cloud-init user data instead.
        #[arg(long)]
        cloud_init: bool,
    },
}

const ACCOUNTS: &[super::Column] = &[
    ("id", "/id"),
    ("name", "/name"),
    ("provider", "/provider"),
    ("regions", "/regions"),
    ("status", "/status"),
    ("last run", "/last_run_at"),
];
const RUNS: &[super::Column] = &[
    ("run", "/id"),
    ("account", "/account_id"),
    ("status", "/status"),
    ("started", "/started_at"),
    ("seen", "/resources_seen"),
    ("added", "/added"),
    ("changed", "/changed"),
    ("removed", "/removed"),
    ("errors", "/errors"),
];
const RESOURCES: &[super::Column] = &[
    ("id", "/id"),
    ("name", "/name"),
    ("provider", "/provider"),
    ("type", "/type"),
    ("region", "/region"),
    ("state", "/state"),
    ("public", "/public_ips"),
    ("private", "/private_ips"),
    ("agent", "/agent_id"),
];
const FINDINGS: &[super::Column] = &[
    ("id", "/id"),
    ("severity", "/severity"),
    ("rule", "/rule"),
    ("resource", "/resource_id"),
    ("detail", "/detail"),
    ("first seen", "/first_seen_at"),
];
const SUMMARY: &[super::Column] = &[
    ("accounts", "/accounts"),
    ("resources", "/resources"),
    ("with agent", "/with_agent"),
    ("without agent", "/without_agent"),
    ("public", "/public"),
    ("coverage %", "/coverage_percent"),
    ("critical", "/open_findings/CRITICAL"),
    ("high", "/open_findings/HIGH"),
    ("medium", "/open_findings/MEDIUM"),
    ("low", "/open_findings/LOW"),
];

/// Where a provider's credential comes from when not given: `(name, env var, secret)`.
const FROM_ENV: [(&str, &str, &str, bool); 19] = [
    ("aws", "access_key_id", "AWS_ACCESS_KEY_ID", false),
    ("aws", "secret_access_key", "AWS_SECRET_ACCESS_KEY", true),
    ("aws", "session_token", "AWS_SESSION_TOKEN", true),
    ("hetzner", "token", "HCLOUD_TOKEN", true),
    ("digitalocean", "token", "DIGITALOCEAN_TOKEN", true),
    ("proxmox", "token_id", "PM_API_TOKEN_ID", false),
    ("proxmox", "token_secret", "PM_API_TOKEN_SECRET", true),
    ("ovh", "application_key", "OVH_APPLICATION_KEY", false),
    ("ovh", "application_secret", "OVH_APPLICATION_SECRET", true),
    ("ovh", "consumer_key", "OVH_CONSUMER_KEY", true),
    ("ovh", "project_id", "OVH_CLOUD_PROJECT_SERVICE", false),
    ("azure", "tenant_id", "AZURE_TENANT_ID", false),
    ("azure", "client_id", "AZURE_CLIENT_ID", false),
    ("azure", "client_secret", "AZURE_CLIENT_SECRET", true),
    ("azure", "subscription_id", "AZURE_SUBSCRIPTION_ID", false),
    ("scaleway", "access_key", "SCW_ACCESS_KEY", false),
    ("scaleway", "secret_key", "SCW_SECRET_KEY", true),
    ("scaleway", "project_id", "SCW_DEFAULT_PROJECT_ID", false),
    ("ionos", "token", "IONOS_TOKEN", true),
];

fn credentials(provider: &str, given: &[String]) -> Result<Value, Failure> {
    let mut out = Map::new();
    for c in given {
        let (k, v) = c.split_once('=').ok_or_else(|| Failure {
            code: 3,
            message: format!("--credential `{c}`: expected name=value"),
        })?;
        out.insert(k.to_owned(), Value::String(v.to_owned()));
    }
    // GCP: the key file `GOOGLE_APPLICATION_CREDENTIALS` names.
    if provider == "gcp" && !out.contains_key("service_account_json") {
        let path = match std::env::var("GOOGLE_APPLICATION_CREDENTIALS") {
            Ok(p) if !p.is_empty() => p,
            _ => prompt("service account key file: ", false)?,
        };
        let json =
            std::fs::read_to_string(&path).map_err(|e| Failure::error(format!("{path}: {e}")))?;
        out.insert("service_account_json".into(), Value::String(json));
    }
    for (p, name, env, secret) in FROM_ENV {
        if p != provider || out.contains_key(name) {
            continue;
        }
        let v = match std::env::var(env) {
            Ok(v) if !v.is_empty() => v,
            // Temporary credentials only when the environment has them.
            _ if name == "session_token" => continue,
            _ => prompt(&format!("{name} ({env}): "), secret)?,
        };
        out.insert(name.to_owned(), Value::String(v));
    }
    Ok(Value::Object(out))
}

/// `trusthub cloud …`.
pub async fn cloud(cmd: CloudCmd, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    match cmd {
        CloudCmd::Accounts => list(&c, "/cloud/accounts", ACCOUNTS, g, false).await,
        CloudCmd::Add {
            provider,
            name,
            regions,
            endpoint,
            ca_file,
            credentials: given,
        } => {
            let mut body = json!({"provider": provider, "name": name, "regions": regions,
                "credentials": credentials(&provider, &given)?});
            if let Some(e) = endpoint {
                body["endpoint"] = json!(e);
            }
            if let Some(f) = ca_file {
                let pem = std::fs::read_to_string(&f)
                    .map_err(|e| Failure::error(format!("{}: {e}", f.display())))?;
                body["ca_pem"] = json!(pem);
            }
            let v = c.json(Method::POST, "/cloud/accounts", &body).await?;
            eprintln!("the credentials were accepted; a first discovery runs now");
            print(&v, ACCOUNTS, g.output)
        }
        CloudCmd::Rm { account } => {
            let path = format!("/cloud/accounts/{}", named(&c, &account, ACCOUNT).await?);
            delete(&c, &path, format!("deleted account {account}")).await
        }
        CloudCmd::Discover { account, wait } => {
            let account = named(&c, &account, ACCOUNT).await?;
            let v = c
                .json(
                    Method::POST,
                    &format!("/cloud/accounts/{account}/discover"),
                    &json!({}),
                )
                .await?;
            if !wait {
                eprintln!("run {} started", v["run_id"].as_str().unwrap_or_default());
                return Ok(());
            }
            loop {
                let runs = c.get(&format!("/cloud/runs?account_id={account}")).await?;
                let run = runs
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|r| r["id"] == v["run_id"])
                    .cloned()
                    .unwrap_or_default();
                if run["status"] != "running" {
                    print(&run, RUNS, g.output)?;
                    return match run["status"].as_str() {
                        Some("succeeded") => Ok(()),
                        s => Err(Failure::error(format!(
                            "the run ended {}",
                            s.unwrap_or("?")
                        ))),
                    };
                }
                tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            }
        }
        CloudCmd::Runs { account } => {
            let path = match account {
                Some(a) => format!("/cloud/runs?account_id={}", named(&c, &a, ACCOUNT).await?),
                None => "/cloud/runs".into(),
            };
            list(&c, &path, RUNS, g, false).await
        }
        CloudCmd::Resources {
            account,
            kind,
            without_agent,
            with_agent,
            public,
            include_removed,
            watch,
        } => {
            let mut q = Vec::new();
            if let Some(a) = account {
                q.push(format!("account_id={}", named(&c, &a, ACCOUNT).await?));
            }
            if let Some(k) = kind {
                q.push(format!("type={k}"));
            }
            if without_agent || with_agent {
                q.push(format!("has_agent={with_agent}"));
            }
            if public {
                q.push("is_public=true".into());
            }
            if include_removed {
                q.push("include_removed=1".into());
            }
            let path = if q.is_empty() {
                "/cloud/resources".to_owned()
            } else {
                format!("/cloud/resources?{}", q.join("&"))
            };
            list(&c, &path, RESOURCES, g, watch.watch).await
        }
        CloudCmd::Findings { severity, status } => {
            let mut path = format!("/cloud/findings?status={status}");
            if let Some(s) = severity {
                path.push_str(&format!("&severity={s}"));
            }
            list(&c, &path, FINDINGS, g, false).await
        }
        CloudCmd::Summary => {
            let v = c.get("/cloud/summary").await?;
            print(&v, SUMMARY, g.output)
        }
        CloudCmd::Install {
            resource,
            cloud_init,
        } => {
            let v = c
                .get(&format!("/cloud/resources/{}/install", id(&resource)?))
                .await?;
            if !matches!(g.output, crate::remote::output::Format::Table) {
                return print(&v, &[], g.output);
            }
            eprintln!(
                "single-use enrollment token, valid until {}; on the machine, as root:",
                v["expires_at"].as_str().unwrap_or_default()
            );
            let which = if cloud_init { "cloud_init" } else { "shell" };
            println!("{}", v["commands"][which].as_str().unwrap_or_default());
            Ok(())
        }
    }
}
