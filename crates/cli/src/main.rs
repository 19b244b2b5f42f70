//! `trusthub`: the operator binary. `serve` runs the hub; `admin` administers its database
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
    /// Administer the hub's database.
    #[command(subcommand)]
    Admin(AdminCommand),
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

async fn serve(settings: Settings) -> Result<(), String> {
    let data_dir = settings.db.data_dir.clone();
    let server = Server::build(settings).await.map_err(|e| e.to_string())?;
    let addr = server.local_addr();
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
    println!("Trusthub hub listening on http://{addr}");
    println!("  API:     http://{addr}/api/v1  (OpenAPI: http://{addr}/api/v1/openapi.json)");
    println!(
        "  Log in:  curl -c cookies -H 'content-type: application/json' -d '{{\"email\":\"...\",\"password\":\"...\"}}' http://{addr}/api/v1/auth/login"
    );
    server
        .run(shutdown_signal())
        .await
        .map_err(|e| e.to_string())
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
