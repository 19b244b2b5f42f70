//! `trusthub`: the operator binary. `serve` runs the hub; `up` runs it with a local agent;
//! `admin` administers its database directly, so it works while a hub runs; `login` and the
//! everyday verbs (`agents`, `apps`, `alerts`, …) speak a hub's API from the terminal.
//!
//! Invariant: the everyday verbs use only the public API a token may use (what they show, a
//! script could fetch), and print secrets only where the API itself returns them once.

/// The allocator of the whole process (hub, agent and CLI).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod backup;
mod config_file;
mod database;
mod evidence;
mod global_flags;
mod man;
mod remote;
mod signals;

use clap::{Parser, Subcommand};
use std::process::ExitCode;
use trusthub_hub::{DbSettings, ServeSettings, Server, Settings, admin};

#[derive(Debug, Parser)]
#[command(
    name = "trusthub",
    version,
    about = "Trusthub: self-hosted host monitoring and trust hub",
    long_about = "Trusthub: self-hosted host monitoring and trust hub.\n\n\
        Run a hub with `trusthub up` (with an agent for this host) or `trusthub serve`; then \
        `trusthub login <url>` and work with it from the terminal: `trusthub agents ls`, \
        `trusthub apps ls`, `trusthub alerts ls --open`. Every list takes -o json|yaml|csv.",
    after_help = "Global flags: --context <name> and -o/--output <format> go before or after the verb.\n\
        Exit codes: 0 ok, 1 error, 2 usage, 3 not found, 4 refused (login, role or TOTP)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Save a hub to work with: asks email, password and TOTP code (or takes --token).
    Login {
        /// The hub's address (https://hub.example.com).
        url: String,
        /// Log in with an API token instead of a password.
        #[arg(long, env = "TRUSTHUB_TOKEN", hide_env_values = true)]
        token: Option<String>,
        /// The email to log in with (asked when not given).
        #[arg(long)]
        email: Option<String>,
        /// The name to save it under (default: the hub's host).
        #[arg(long)]
        context: Option<String>,
    },
    /// End the session and forget the saved hub.
    Logout(remote::Global),
    /// Who you are on the hub, and with which role.
    Whoami(remote::Global),
    /// The saved hubs (contexts).
    Context {
        #[command(flatten)]
        g: remote::Global,
        #[command(subcommand)]
        cmd: remote::ContextCmd,
    },
    /// Hosts and their agents.
    Agents {
        #[command(flatten)]
        g: remote::Global,
        #[command(subcommand)]
        cmd: remote::AgentsCmd,
    },
    /// Tracked apps and checks.
    Apps {
        #[command(flatten)]
        g: remote::Global,
        #[command(subcommand)]
        cmd: remote::AppsCmd,
    },
    /// Public status pages (CONTRACT 32).
    StatusPages {
        #[command(flatten)]
        g: remote::Global,
        #[command(subcommand)]
        cmd: remote::StatusPagesCmd,
    },
    /// Incidents on status pages.
    Incidents {
        #[command(flatten)]
        g: remote::Global,
        #[command(subcommand)]
        cmd: remote::IncidentsCmd,
    },
    /// Alerts.
    Alerts {
        #[command(flatten)]
        g: remote::Global,
        #[command(subcommand)]
        cmd: remote::AlertsCmd,
    },
    /// Alert rules.
    Rules {
        #[command(flatten)]
        g: remote::Global,
        #[command(subcommand)]
        cmd: remote::RulesCmd,
    },
    /// Where alerts are sent: Slack, Discord, Teams, Telegram, ntfy, PagerDuty, e-mail, webhooks.
    NotificationChannels {
        #[command(flatten)]
        g: remote::Global,
        #[command(subcommand)]
        cmd: remote::ChannelsCmd,
    },
    /// Your TOTP: set it up, turn it off, new recovery codes.
    Totp {
        #[command(flatten)]
        g: remote::Global,
        #[command(subcommand)]
        cmd: remote::TotpCmd,
    },
    /// Signed webhook endpoints.
    Webhooks {
        #[command(flatten)]
        g: remote::Global,
        #[command(subcommand)]
        cmd: remote::WebhooksCmd,
    },
    /// Service level objectives of apps.
    Slo {
        #[command(flatten)]
        g: remote::Global,
        #[command(subcommand)]
        cmd: remote::SloCmd,
    },
    /// Vulnerabilities: findings and advisories from a hub; import advisory data.
    Cve {
        #[command(flatten)]
        g: remote::Global,
        #[command(subcommand)]
        cmd: CveCommand,
    },
    /// Auto-patch of a host: settings, attempts, a run now.
    Autopatch {
        #[command(flatten)]
        g: remote::Global,
        #[command(subcommand)]
        cmd: remote::autopatch::AutopatchCmd,
    },
    /// An emergency console on a host (admin, TOTP): a recorded shell in this terminal.
    Console {
        #[command(flatten)]
        g: remote::Global,
        /// Agent id.
        agent: String,
        /// Why (in the audit log and the recording's title).
        #[arg(long)]
        reason: String,
        /// The TOTP code; asked for when not given.
        #[arg(long)]
        totp: Option<String>,
    },
    /// Cloud discovery: accounts, runs, resources and their agent coverage, findings.
    Cloud {
        #[command(flatten)]
        g: remote::Global,
        #[command(subcommand)]
        cmd: remote::cloud::CloudCmd,
    },
    /// Topology: nodes, edges and zones, what agents detected, snapshots, the Mermaid export.
    Topology {
        #[command(flatten)]
        g: remote::Global,
        #[command(subcommand)]
        cmd: remote::topology::TopologyCmd,
    },
    /// Diagrams: generated from the topology or from templates, shared by link.
    Diagrams {
        #[command(flatten)]
        g: remote::Global,
        #[command(subcommand)]
        cmd: remote::topology::DiagramsCmd,
    },
    /// What fails with a topology node or a host (agent id): dependents, apps, SLOs.
    BlastRadius {
        #[command(flatten)]
        g: remote::Global,
        /// Node id or agent id.
        id: String,
    },
    /// Compliance: host check results per framework (CIS Debian, ISO 27001, SOC 2, NIS2),
    /// runs, exports for OSCAL tools, Vanta, trustos and CyberDay.
    Compliance {
        #[command(flatten)]
        g: remote::Global,
        #[command(subcommand)]
        cmd: remote::compliance::ComplianceCmd,
    },
    /// The security view: honeypots, host DNA, silent agents.
    Security {
        #[command(flatten)]
        g: remote::Global,
        #[command(subcommand)]
        cmd: remote::compliance::SecurityCmd,
    },
    /// Explain a log line (the hub's language model, or its built-in rules in en and de).
    Explain {
        #[command(flatten)]
        g: remote::Global,
        /// The log line.
        line: String,
        /// The host it comes from (agent id): its OS is given as context.
        #[arg(long)]
        agent: Option<String>,
        /// The language to answer in (`en`, `de`, …).
        #[arg(long)]
        lang: Option<String>,
    },
    /// Configuration drift: watched files not as in their baseline, and rebases.
    Drift {
        #[command(flatten)]
        g: remote::Global,
        #[command(subcommand)]
        cmd: remote::drift::DriftCmd,
    },
    /// The tenant's Trust Score: components, reasons, a gate for scripts.
    Trust {
        #[command(flatten)]
        g: remote::Global,
        #[command(subcommand)]
        cmd: remote::trust::TrustCmd,
    },
    /// The tenant's settings: the public badge and its private networks.
    Tenant {
        #[command(flatten)]
        g: remote::Global,
        #[command(subcommand)]
        cmd: remote::tenant::TenantCmd,
    },
    /// Where the hub forwards metrics (Prometheus remote write): lag and counts.
    RemoteWrite {
        #[command(flatten)]
        g: remote::Global,
        #[command(subcommand)]
        cmd: remote::remote_write::RemoteWriteCmd,
    },
    /// Agents' client certificates, the hub's CA and integrity anomalies.
    Certs {
        #[command(flatten)]
        g: remote::Global,
        #[command(subcommand)]
        cmd: remote::certs::CertsCmd,
    },
    /// Signed actions sent to hosts and what they answered.
    Actions {
        #[command(flatten)]
        g: remote::Global,
        #[command(subcommand)]
        cmd: remote::ActionsCmd,
    },
    /// Evidence packs: create and download from a hub, verify offline.
    Evidence {
        #[command(flatten)]
        g: remote::Global,
        #[command(subcommand)]
        cmd: EvidenceCommand,
    },
    /// API tokens.
    Tokens {
        #[command(flatten)]
        g: remote::Global,
        #[command(subcommand)]
        cmd: remote::TokensCmd,
    },
    /// The audit log.
    Audit {
        #[command(flatten)]
        g: remote::Global,
        #[command(subcommand)]
        cmd: remote::AuditCmd,
    },
    /// Run the hub on its embedded default with an agent watching this host (one process).
    Up(Box<UpArgs>),
    /// Run the hub.
    Serve(Box<ServeSettings>),
    /// Administer the hub's database.
    #[command(subcommand)]
    Admin(AdminCommand),
    /// Back up the hub's database while it runs (`--out`), or check an archive (`verify`).
    Backup(Box<backup::BackupArgs>),
    /// Restore a backup into an empty database of either engine.
    Restore(Box<backup::RestoreArgs>),
    /// The hub's configuration file: check one, or show the effective settings.
    #[command(subcommand)]
    Config(config_file::ConfigCommand),
    /// The transparency log.
    #[command(subcommand)]
    Transparency(TransparencyCommand),
    /// Shell completion: `trusthub completion bash > /etc/bash_completion.d/trusthub`.
    Completion {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Write the man pages (trusthub.1, trusthub-agents.1, …) into a folder.
    Man {
        /// The folder (made if missing), e.g. /usr/local/share/man/man1.
        #[arg(long)]
        out: std::path::PathBuf,
    },
}

#[derive(Debug, Subcommand)]
enum CveCommand {
    #[command(flatten)]
    Remote(remote::CveRemote),
    /// Load OSV advisories for every tenant of this hub from a folder (the OSV bucket's
    /// `<Ecosystem>/<ID>.json` or flat), a zip (`all.zip`) or a .tar.gz; safe while the hub
    /// runs. Records are kept by id and `modified`: importing again loads only what changed.
    Import {
        /// The folder, .zip or .tar.gz.
        path: std::path::PathBuf,
        /// Decompressed bytes the import may read in all (each record is bounded to 64 MiB).
        #[arg(long, env = "TRUSTHUB_IMPORT_MAX_BYTES", default_value_t = trusthub_hub::archive::DEFAULT_TOTAL_BYTES)]
        max_bytes: u64,
        #[command(flatten)]
        db: DbSettings,
    },
}

#[derive(Debug, Subcommand)]
enum EvidenceCommand {
    #[command(flatten)]
    Remote(remote::EvidenceRemote),
    /// Check a pack offline, with no account and no network: the manifest's Ed25519
    /// signature, the SHA-256 and line counts of traces.jsonl and spans.jsonl, every blob,
    /// and that nothing unlisted is in it. Exit 0 when everything matches, 1 otherwise.
    Verify {
        /// The pack (pack-<id>.tar.gz).
        pack: std::path::PathBuf,
        /// Print nothing; only the exit code tells.
        #[arg(long, short)]
        quiet: bool,
        /// Refuse a pack signed by any other key (hex Ed25519 public key, from
        /// `GET /ai/evidence-key` or given to you at onboarding).
        #[arg(long)]
        expect_key: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
enum TransparencyCommand {
    /// Check the hash chain and the signed head: fetched from a hub (`--hub`, `--token`), or
    /// from saved files (`--log`, `--head`) with no network at all. Exit 0 when everything
    /// matches, 1 otherwise.
    Verify {
        /// Hub base URL, e.g. https://hub.example.com.
        #[arg(long, env = "TRUSTHUB_URL")]
        hub: Option<String>,
        /// An API token (a `read` token is enough).
        #[arg(long, env = "TRUSTHUB_TOKEN", hide_env_values = true)]
        token: Option<String>,
        /// The entries as `GET /transparency-log` returned them (a JSON array).
        #[arg(long, conflicts_with = "hub")]
        log: Option<std::path::PathBuf>,
        /// The head as `GET /transparency-log/head` returned it.
        #[arg(long, requires = "log")]
        head: Option<std::path::PathBuf>,
        /// Also save what was fetched into this directory (log.json, head.json).
        #[arg(long)]
        save: Option<std::path::PathBuf>,
        /// Refuse a head signed by any other key (hex Ed25519 public key).
        #[arg(long)]
        expect_key: Option<String>,
    },
}

#[derive(Debug, clap::Args)]
struct UpArgs {
    #[command(flatten)]
    settings: ServeSettings,
    /// Seconds between the local agent's metric pushes.
    #[arg(long, env = "TRUSTHUB_AGENT_INTERVAL_SECS", default_value_t = 60)]
    agent_interval_secs: u64,
    /// Directories where the local agent looks for lockfiles (repeatable).
    #[arg(long = "project-path")]
    project_paths: Vec<std::path::PathBuf>,
    /// Let admins open a recorded console on this host from the hub (CONTRACT 22, 33).
    #[arg(long, env = "TRUSTHUB_AGENT_ALLOW_CONSOLE",
        value_parser = clap::builder::BoolishValueParser::new(),
        action = clap::ArgAction::Set, num_args = 0..=1, require_equals = true,
        default_value = "false", default_missing_value = "true")]
    allow_console: bool,
    /// The user whose login shell the local agent's consoles run.
    #[arg(long, env = "TRUSTHUB_AGENT_CONSOLE_USER", default_value = "root")]
    console_user: String,
}

#[derive(Debug, Subcommand)]
enum AdminCommand {
    /// Create a tenant with its first owner.
    CreateTenant {
        /// Tenant name (unique).
        #[arg(long)]
        name: String,
        /// The owner's email.
        #[arg(long)]
        owner_email: String,
        /// The owner's password (at least 8 characters).
        #[arg(long, env = "TRUSTHUB_OWNER_PASSWORD", hide_env_values = true)]
        owner_password: String,
        #[command(flatten)]
        db: DbSettings,
    },
    /// Bring the database's schema to this release (`--dry-run`: list what would run).
    Migrate(database::MigrateArgs),
    /// Set a user's password; ends all their sessions. Prints a generated one when
    /// `--password` is not given.
    ResetPassword {
        /// The user's email.
        #[arg(long)]
        email: String,
        /// The new password.
        #[arg(long, env = "TRUSTHUB_NEW_PASSWORD", hide_env_values = true)]
        password: Option<String>,
        #[command(flatten)]
        db: DbSettings,
    },
}

fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn"));
    let json = std::env::var("TRUSTHUB_LOG_FORMAT").is_ok_and(|v| v.eq_ignore_ascii_case("json"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        // Colours only on a terminal: a log file or journal gets plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    if json {
        builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .init();
    } else {
        builder.init();
    }
}

fn announce(server: &Server, data_dir: &std::path::Path) -> String {
    let addr = server.local_addr();
    let scheme = if server.state().settings.tls_enabled() {
        "https"
    } else {
        "http"
    };
    if let Some(b) = server.bootstrapped() {
        println!(
            "Trusthub: first start — created tenant `default` with owner {}",
            b.email
        );
        if let Some(pw) = &b.generated_password {
            println!("  password: {pw}");
            println!(
                "  (also written to {}, mode 600)",
                data_dir.join("initial-admin.txt").display()
            );
        }
    } else if let Some(file) = server.first_login_pending() {
        println!(
            "Trusthub: nobody has logged in yet — the first owner's email and generated password are in {}",
            file.display()
        );
    }
    println!("Trusthub hub listening on {scheme}://{addr}");
    println!("  Dashboard: {scheme}://{addr}/  (sign in with the owner's email and password)");
    println!(
        "  API:     {scheme}://{addr}/api/v1  (OpenAPI: {scheme}://{addr}/api/v1/openapi.json)"
    );
    println!("  Log in:  trusthub login {scheme}://{addr}  (asks the email and password)");
    let host = if addr.ip().is_unspecified() {
        std::net::SocketAddr::from(([127, 0, 0, 1], addr.port()))
    } else {
        addr
    };
    format!("{scheme}://{host}")
}

async fn serve(settings: Settings) -> Result<(), String> {
    let data_dir = settings.db.data_dir.clone();
    let stop = signals::shutdown();
    let server = Server::build(settings).await.map_err(|e| e.to_string())?;
    announce(&server, &data_dir);
    server.run(stop).await.map_err(|e| e.to_string())
}

/// `trusthub up`: the hub plus an agent for this host, enrolled on first start.
async fn up(args: UpArgs) -> Result<(), String> {
    let mut settings = args.settings.0;
    // One owner runs this box: its checks, channels and webhooks reach the private networks
    // unless the operator named other ranges (CONTRACT 33).
    let private = settings.outbound_allow_cidrs.trim().is_empty();
    if private {
        settings.outbound_allow_cidrs = trusthub_hub::outbound::PRIVATE_RANGES.to_owned();
    }
    let data_dir = settings.db.data_dir.clone();
    // The local agent trusts the hub's own CA with `--tls-self`, the given chain otherwise.
    let ca_cert = if settings.tls_self {
        Some(data_dir.join("hub-ca.pem"))
    } else {
        settings.tls_cert.clone()
    };
    let stop = signals::shutdown();
    let server = Server::build(settings).await.map_err(|e| e.to_string())?;
    let hub_url = announce(&server, &data_dir);
    let agent_dir = data_dir.join("agent");
    let registered = trusthub_agent::link::state::StateDir::open(&agent_dir)
        .and_then(|d| d.registration())
        .map_err(|e| e.to_string())?
        .is_some();
    let enroll = if registered {
        None
    } else {
        Some(
            trusthub_fleet::admin::local_enrollment_token(&server.state().db, "default")
                .await
                .map_err(|e| e.to_string())?,
        )
    };
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    let hub = tokio::spawn(server.run(stopped(stop_rx.clone())));
    let opts = trusthub_agent::Options {
        hub: Some(hub_url),
        enroll,
        state_dir: agent_dir,
        interval_secs: Some(args.agent_interval_secs),
        inventory_interval_secs: None,
        allow_actions: None,
        project_paths: args.project_paths,
        binary_paths: Vec::new(),
        no_process_discovery: false,
        spool_max_bytes: 256 * 1024 * 1024,
        ca_cert,
        cert_check_secs: 86_400,
        dpkg_admindir: None,
        rpm_dbpath: None,
        allow_console: args.allow_console,
        console_user: args.console_user,
        auth_log: None,
        compliance_root: "/".into(),
        config_max_file_bytes: trusthub_agent::collect::drift::DEFAULT_MAX_FILE_BYTES,
    };
    println!(
        "  Agent:   watching this host, pushing every {} s{}",
        args.agent_interval_secs,
        if opts.allow_console {
            "; consoles allowed"
        } else {
            ""
        }
    );
    if private {
        println!(
            "  Network: checks, channels and webhooks may reach the private ranges ({})",
            trusthub_hub::outbound::PRIVATE_RANGES.replace(',', ", ")
        );
    }
    let agent = tokio::spawn(trusthub_agent::run(opts, stopped(stop_rx)));
    stop.await;
    let _ = stop_tx.send(true);
    let agent_result = agent.await.map_err(|e| e.to_string())?;
    hub.await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    agent_result
}

async fn fetch_json(
    client: &reqwest::Client,
    url: &str,
    token: &str,
) -> Result<serde_json::Value, String> {
    let r = client
        .get(url)
        .bearer_auth(token)
        .send()
        .await
        .map_err(|e| http_error(url, &e))?;
    let status = r.status();
    if !status.is_success() {
        // The hub's problem document says what is wrong; show its detail.
        let body: serde_json::Value = r.json().await.unwrap_or_default();
        return Err(match body["detail"].as_str() {
            Some(detail) => format!("{url}: HTTP {status}: {detail}"),
            None => format!("{url}: HTTP {status}"),
        });
    }
    r.json().await.map_err(|e| format!("{url}: {e}"))
}

/// A transport error in words an operator acts on.
fn http_error(url: &str, e: &reqwest::Error) -> String {
    let mut cause: Option<&dyn std::error::Error> = Some(e);
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return format!("{url}: connection refused — is the hub running at that address?");
        }
        cause = c.source();
    }
    if e.is_timeout() {
        return format!("{url}: timed out");
    }
    format!("{url}: {e}")
}

async fn transparency_verify(
    hub: Option<String>,
    token: Option<String>,
    log: Option<std::path::PathBuf>,
    head: Option<std::path::PathBuf>,
    save: Option<std::path::PathBuf>,
    expect_key: Option<String>,
) -> Result<(), String> {
    let read = |p: &std::path::Path| -> Result<serde_json::Value, String> {
        let bytes = std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))?;
        serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", p.display()))
    };
    let (entries, head) = match (hub, log, head) {
        (Some(hub), None, None) => {
            let token = token.ok_or("--token (or TRUSTHUB_TOKEN) is needed with --hub")?;
            let _ = rustls::crypto::ring::default_provider().install_default();
            let client = reqwest::Client::new();
            let base = format!(
                "{}/api/v1",
                hub.trim_end_matches('/').trim_end_matches("/api/v1")
            );
            // The head first: entries appended meanwhile are simply not covered by it.
            let head =
                fetch_json(&client, &format!("{base}/transparency-log/head"), &token).await?;
            let last = head["seq"].as_i64().unwrap_or(0);
            let mut entries: Vec<serde_json::Value> = Vec::new();
            let mut since = 0;
            while since < last {
                let page = fetch_json(
                    &client,
                    &format!("{base}/transparency-log?since_seq={since}&limit=1000"),
                    &token,
                )
                .await?;
                let page = page.as_array().cloned().unwrap_or_default();
                let Some(max) = page.last().and_then(|e| e["seq"].as_i64()) else {
                    break;
                };
                entries.extend(
                    page.into_iter()
                        .filter(|e| e["seq"].as_i64().is_some_and(|s| s <= last)),
                );
                since = max;
            }
            let entries = serde_json::Value::Array(entries);
            if let Some(dir) = save {
                std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
                std::fs::write(dir.join("log.json"), entries.to_string())
                    .map_err(|e| e.to_string())?;
                std::fs::write(dir.join("head.json"), head.to_string())
                    .map_err(|e| e.to_string())?;
            }
            (entries, head)
        }
        (None, Some(log), Some(head)) => (read(&log)?, read(&head)?),
        _ => return Err("give --hub and --token, or --log and --head".into()),
    };
    let entries: Vec<trusthub_core::canonical::LogEntry> =
        serde_json::from_value(entries).map_err(|e| format!("the entries: {e}"))?;
    let key = head["public_key_hex"].as_str().unwrap_or_default();
    if let Some(expected) = expect_key
        && !expected.trim().eq_ignore_ascii_case(key)
    {
        return Err(format!(
            "the log is signed by {key}, not by the expected key"
        ));
    }
    trusthub_core::canonical::verify_log(
        &entries,
        head["seq"].as_i64().unwrap_or(-1),
        head["entry_hash"].as_str().unwrap_or_default(),
        head["signature"].as_str().unwrap_or_default(),
        key,
    )
    .map_err(|e| format!("verification failed: {e}"))?;
    println!(
        "ok: {} entries, chain intact, head seq {} signed by {key}",
        entries.len(),
        head["seq"]
    );
    Ok(())
}

async fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::Evidence {
            cmd:
                EvidenceCommand::Verify {
                    pack,
                    quiet,
                    expect_key,
                },
            ..
        } => {
            let ok = tokio::task::spawn_blocking(move || {
                evidence::verify(&pack, quiet, expect_key.as_deref())
            })
            .await
            .map_err(|e| e.to_string())?;
            if ok {
                Ok(())
            } else {
                // The report said why (or, quiet, nothing should be said).
                std::process::exit(1)
            }
        }
        Command::Transparency(TransparencyCommand::Verify {
            hub,
            token,
            log,
            head,
            save,
            expect_key,
        }) => transparency_verify(hub, token, log, head, save, expect_key).await,
        Command::Serve(settings) => serve(settings.0).await,
        Command::Backup(args) => backup::backup(*args).await,
        Command::Restore(args) => backup::restore(*args).await,
        Command::Up(args) => up(*args).await,
        Command::Cve {
            cmd:
                CveCommand::Import {
                    path,
                    max_bytes,
                    db,
                },
            ..
        } => {
            let db = database::open(&db).await?;
            let started = std::time::Instant::now();
            // All or nothing: a refusal stored nothing and says why, as the API does.
            let report = trusthub_hub::cve::import_path(
                &db,
                "",
                &path,
                trusthub_hub::archive::Limits::with_total(max_bytes),
                time::OffsetDateTime::now_utc(),
            )
            .await
            .map_err(|e| e.message())?;
            println!(
                "{} files in {:.1} s: {} new, {} updated, {} unchanged ({} withdrawn), {} stored but not fully evaluable",
                report.files,
                started.elapsed().as_secs_f64(),
                report.inserted,
                report.updated,
                report.unchanged,
                report.withdrawn,
                report.skipped_count
            );
            for e in &report.skipped {
                eprintln!("  skipped: {e}");
            }
            Ok(())
        }
        Command::Admin(AdminCommand::CreateTenant {
            name,
            owner_email,
            owner_password,
            db,
        }) => {
            let db = database::open(&db).await?;
            let (tenant, user) = admin::create_tenant(&db, &name, &owner_email, &owner_password)
                .await
                .map_err(|e| e.to_string())?;
            println!(
                "created tenant {} ({}) with owner {} ({})",
                tenant.name, tenant.id, user.email, user.id
            );
            db.close().await;
            Ok(())
        }
        Command::Admin(AdminCommand::Migrate(args)) => database::migrate(args).await,
        Command::Admin(AdminCommand::ResetPassword {
            email,
            password,
            db,
        }) => {
            let db = database::open(&db).await?;
            let generated = password.is_none();
            let password = match password {
                Some(p) => p,
                None => trusthub_core::secret::new_token("")
                    .map_err(|e| e.to_string())?
                    .chars()
                    .take(24)
                    .collect(),
            };
            let user = admin::reset_password(&db, &email, &password)
                .await
                .map_err(|e| e.to_string())?;
            println!("password of {} reset; their sessions ended", user.email);
            if generated {
                println!("new password: {password}");
            }
            db.close().await;
            Ok(())
        }
        // The terminal verbs are run by `hub_main` with their own exit codes.
        _ => Err("not a hub command".into()),
    }
}

fn main() -> ExitCode {
    no_transparent_huge_pages();
    // Installed under the name `trusthub-agent` (the hub serves its own build to hosts that
    // install the agent, CONTRACT 27), this binary is the agent.
    if invoked_as_agent(std::env::args_os().next()) {
        return trusthub_agent::cli::main();
    }
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(hub_main()),
        Err(e) => {
            eprintln!("trusthub: cannot start: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Turns transparent huge pages off for this process (`prctl(PR_SET_THP_DISABLE)`, inherited
/// by what it runs; no kernel setting changes) unless `MIMALLOC_ALLOW_THP` is set: with them,
/// mimalloc's arenas kept partly used 2 MiB pages resident, 11–14 % more memory under a
/// 1,000-agent soak (bench/RESULTS.md, "thirty-first session"), as Redis's guide warns.
fn no_transparent_huge_pages() {
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_none() {
        let _ = rustix::thread::disable_transparent_huge_pages(true);
    }
}

/// Whether the program name (`argv[0]`) is `trusthub-agent`.
fn invoked_as_agent(argv0: Option<std::ffi::OsString>) -> bool {
    argv0
        .as_deref()
        .map(std::path::Path::new)
        .and_then(|p| p.file_name())
        .is_some_and(|name| name == "trusthub-agent")
}

async fn hub_main() -> ExitCode {
    let cli = {
        use clap::{CommandFactory as _, FromArgMatches as _};
        let args = global_flags::globals_after_the_verb(std::env::args_os().collect());
        let matches = config_file::matches(Cli::command(), args);
        Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
    };
    // The terminal verbs: their own exit codes (CONTRACT 28), no log lines.
    let remote = match cli.command {
        Command::Login {
            url,
            token,
            email,
            context,
        } => Some(remote::login(&url, token, email, context).await),
        Command::Logout(g) => Some(remote::logout(&g).await),
        Command::Whoami(g) => Some(remote::whoami(&g).await),
        Command::Context { g, cmd } => Some(remote::context(cmd, &g)),
        Command::Agents { g, cmd } => Some(remote::agents(cmd, &g).await),
        Command::Apps { g, cmd } => Some(remote::apps(cmd, &g).await),
        Command::StatusPages { g, cmd } => Some(remote::status_pages(cmd, &g).await),
        Command::Incidents { g, cmd } => Some(remote::incidents(cmd, &g).await),
        Command::Alerts { g, cmd } => Some(remote::alerts(cmd, &g).await),
        Command::Actions { g, cmd } => Some(remote::actions(cmd, &g).await),
        Command::Autopatch { g, cmd } => Some(remote::autopatch::autopatch(cmd, &g).await),
        Command::Certs { g, cmd } => Some(remote::certs::certs(cmd, &g).await),
        Command::Drift { g, cmd } => Some(remote::drift::drift(cmd, &g).await),
        Command::Cloud { g, cmd } => Some(remote::cloud::cloud(cmd, &g).await),
        Command::Topology { g, cmd } => Some(remote::topology::topology(cmd, &g).await),
        Command::Compliance { g, cmd } => Some(remote::compliance::compliance(cmd, &g).await),
        Command::Security { g, cmd } => Some(remote::compliance::security(cmd, &g).await),
        Command::Explain {
            g,
            line,
            agent,
            lang,
        } => Some(remote::compliance::explain(&line, agent, lang, &g).await),
        Command::Diagrams { g, cmd } => Some(remote::topology::diagrams(cmd, &g).await),
        Command::BlastRadius { g, id } => Some(remote::topology::blast_radius(&id, &g).await),
        Command::Console {
            g,
            agent,
            reason,
            totp,
        } => Some(remote::console::console(agent, reason, totp, &g).await),
        Command::Trust { g, cmd } => Some(remote::trust::trust(cmd, &g).await),
        Command::Tenant { g, cmd } => Some(remote::tenant::tenant(cmd, &g).await),
        Command::RemoteWrite { g, cmd } => Some(remote::remote_write::remote_write(cmd, &g).await),
        Command::Tokens { g, cmd } => Some(remote::tokens(cmd, &g).await),
        Command::Audit { g, cmd } => Some(remote::audit(cmd, &g).await),
        Command::Rules { g, cmd } => Some(remote::rules(cmd, &g).await),
        Command::NotificationChannels { g, cmd } => Some(remote::channels(cmd, &g).await),
        Command::Totp { g, cmd } => Some(remote::totp(cmd, &g).await),
        Command::Webhooks { g, cmd } => Some(remote::webhooks(cmd, &g).await),
        Command::Slo { g, cmd } => Some(remote::slo(cmd, &g).await),
        Command::Cve {
            g,
            cmd: CveCommand::Remote(cmd),
        } => Some(remote::cve(cmd, &g).await),
        // With a context (or TRUSTHUB_URL + TRUSTHUB_TOKEN) the import goes over the API;
        // without one it loads the local hub's database (the data-dir form).
        Command::Cve {
            g,
            cmd: CveCommand::Import { path, .. },
        } if g.context.is_some()
            || (std::env::var_os("TRUSTHUB_URL").is_some()
                && std::env::var_os("TRUSTHUB_TOKEN").is_some()) =>
        {
            Some(remote::cve_import(&path, &g).await)
        }
        Command::Evidence {
            g,
            cmd: EvidenceCommand::Remote(cmd),
        } => Some(remote::evidence(cmd, &g).await),
        Command::Man { out } => {
            use clap::CommandFactory as _;
            Some(man::pages(Cli::command(), &out).map_err(remote::client::Failure::error))
        }
        Command::Config(cmd) => {
            use clap::CommandFactory as _;
            Some(config_file::command(cmd, Cli::command()))
        }
        Command::Completion { shell } => {
            use clap::CommandFactory as _;
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "trusthub",
                &mut std::io::stdout(),
            );
            Some(Ok(()))
        }
        command => {
            init_logging();
            return match run(Cli { command }).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("trusthub: {e}");
                    ExitCode::FAILURE
                }
            };
        }
    };
    match remote {
        Some(Ok(())) | None => ExitCode::SUCCESS,
        Some(Err(f)) => {
            eprintln!("trusthub: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}
