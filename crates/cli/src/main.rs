//! `trusthub`: the operator binary. `serve` runs the hub; `up` runs it with a local agent; `admin` administers its database
//! directly, so it works while a hub runs (CONTRACT 2 and 11).

use clap::{Parser, Subcommand};
use std::process::ExitCode;
use trusthub_hub::{DbSettings, Server, Settings, admin};
use trusthub_store::{Db, DbOptions};

#[derive(Debug, Parser)]
#[command(
    name = "trusthub",
    version,
    about = "Trusthub: self-hosted host monitoring and trust hub"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the hub.
    Serve(Box<Settings>),
    /// Run the hub on its embedded default with an agent watching this host (one process).
    Up(Box<UpArgs>),
    /// Administer the hub's database.
    #[command(subcommand)]
    Admin(AdminCommand),
}

#[derive(Debug, clap::Args)]
struct UpArgs {
    #[command(flatten)]
    settings: Settings,
    /// Seconds between the local agent's metric pushes.
    #[arg(long, env = "TRUSTHUB_AGENT_INTERVAL_SECS", default_value_t = 60)]
    agent_interval_secs: u64,
    /// Directories where the local agent looks for lockfiles (repeatable).
    #[arg(long = "project-path")]
    project_paths: Vec<std::path::PathBuf>,
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

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
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
    }
    println!("Trusthub hub listening on {scheme}://{addr}");
    println!(
        "  API:     {scheme}://{addr}/api/v1  (OpenAPI: {scheme}://{addr}/api/v1/openapi.json)"
    );
    println!(
        "  Log in:  curl -c cookies -H 'content-type: application/json' -d '{{\"email\":\"...\",\"password\":\"...\"}}' {scheme}://{addr}/api/v1/auth/login"
    );
    let host = if addr.ip().is_unspecified() {
        std::net::SocketAddr::from(([127, 0, 0, 1], addr.port()))
    } else {
        addr
    };
    format!("{scheme}://{host}")
}

async fn serve(settings: Settings) -> Result<(), String> {
    let data_dir = settings.db.data_dir.clone();
    let server = Server::build(settings).await.map_err(|e| e.to_string())?;
    announce(&server, &data_dir);
    server
        .run(shutdown_signal())
        .await
        .map_err(|e| e.to_string())
}

/// `trusthub up`: the hub plus an agent for this host, enrolled on first start.
async fn up(args: UpArgs) -> Result<(), String> {
    let data_dir = args.settings.db.data_dir.clone();
    let ca_cert = args.settings.tls_cert.clone();
    let server = Server::build(args.settings)
        .await
        .map_err(|e| e.to_string())?;
    let hub_url = announce(&server, &data_dir);
    let agent_dir = data_dir.join("agent");
    let registered = trusthub_agent::state::StateDir::open(&agent_dir)
        .and_then(|d| d.registration())
        .map_err(|e| e.to_string())?
        .is_some();
    let enroll = if registered {
        None
    } else {
        Some(
            admin::local_enrollment_token(&server.state().db, "default")
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
        spool_max_bytes: 256 * 1024 * 1024,
        ca_cert,
    };
    println!(
        "  Agent:   watching this host, pushing every {} s",
        args.agent_interval_secs
    );
    let agent = tokio::spawn(trusthub_agent::run(opts, stopped(stop_rx)));
    shutdown_signal().await;
    let _ = stop_tx.send(true);
    let agent_result = agent.await.map_err(|e| e.to_string())?;
    hub.await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    agent_result
}

async fn open_db(db: &DbSettings) -> Result<Db, String> {
    let d = Db::connect(&db.url(), &DbOptions::default())
        .await
        .map_err(|e| e.to_string())?;
    d.migrate().await.map_err(|e| e.to_string())?;
    Ok(d)
}

async fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::Serve(settings) => serve(*settings).await,
        Command::Up(args) => up(*args).await,
        Command::Admin(AdminCommand::CreateTenant {
            name,
            owner_email,
            owner_password,
            db,
        }) => {
            let db = open_db(&db).await?;
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
        Command::Admin(AdminCommand::ResetPassword {
            email,
            password,
            db,
        }) => {
            let db = open_db(&db).await?;
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
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    init_logging();
    match run(Cli::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("trusthub: {e}");
            ExitCode::FAILURE
        }
    }
}
