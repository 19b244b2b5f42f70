//! `trusthub-agent`: run the agent, install it as a systemd service, or show its state.

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use trusthub_agent::{Options, allow, state::StateDir};

#[derive(Debug, Parser)]
#[command(name = "trusthub-agent", version, about = "Trusthub host agent")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    opts: Options,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the agent (the default).
    Run(Box<Options>),
    /// Write a systemd unit that runs the agent.
    Install {
        /// State dir the service uses.
        #[arg(long, default_value = "/var/lib/trusthub-agent")]
        state_dir: PathBuf,
        /// Where to write the unit.
        #[arg(long, default_value = "/etc/systemd/system")]
        unit_dir: PathBuf,
    },
    /// Print what the agent knows: registration, spool, allowlist.
    Status {
        /// State dir.
        #[arg(long, default_value = "/var/lib/trusthub-agent")]
        state_dir: PathBuf,
    },
}

async fn shutdown_signal() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => return std::future::pending().await,
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {},
        _ = term.recv() => {},
    }
}

fn status(state_dir: &std::path::Path) -> Result<(), String> {
    let dir = StateDir::open(state_dir).map_err(|e| e.to_string())?;
    match dir.registration().map_err(|e| e.to_string())? {
        Some(r) => {
            println!("hub:                {}", r.hub);
            println!("agent id:           {}", r.agent_id);
            println!(
                "agent token:        {}…",
                r.agent_token.chars().take(8).collect::<String>()
            );
            println!("hub EAT key (pin):  {}", r.hub_eat_public_key);
            println!(
                "intervals:          metrics {} s, inventory {} s",
                r.ingest_interval_secs, r.inventory_interval_secs
            );
        }
        None => println!("not registered (start with --hub <url> --enroll <token>)"),
    }
    let key = dir.signing_key().map_err(|e| e.to_string())?;
    println!(
        "signing key:        {}",
        data_encoding::HEXLOWER.encode(key.verifying_key().as_bytes())
    );
    let pending = trusthub_agent::spool::Spool::new(dir.spool(), u64::MAX).pending();
    let bytes: u64 = pending
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    println!("spooled batches:    {} ({} bytes)", pending.len(), bytes);
    println!(
        "accepted actions:   {}",
        allow::load(dir.path(), None)?.join(", ")
    );
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        None => trusthub_agent::run(cli.opts, shutdown_signal()).await,
        Some(Command::Run(opts)) => trusthub_agent::run(*opts, shutdown_signal()).await,
        Some(Command::Status { state_dir }) => status(&state_dir),
        Some(Command::Install { state_dir, unit_dir }) => std::env::current_exe()
            .map_err(|e| e.to_string())
            .and_then(|exe| {
                let path = unit_dir.join("trusthub-agent.service");
                std::fs::write(&path, trusthub_agent::systemd_unit(&exe, &state_dir)).map_err(|e| format!("{}: {e}", path.display()))?;
                println!("wrote {}\nnext: systemctl daemon-reload && systemctl enable --now trusthub-agent", path.display());
                Ok(())
            }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("trusthub-agent: {e}");
            ExitCode::FAILURE
        }
    }
}
