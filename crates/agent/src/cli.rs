//! `trusthub-agent`: run the agent, install it as a systemd service, or show its state. The
//! agent's own binary runs this, and so does the `trusthub` binary when it is started under
//! the name `trusthub-agent` (the hub serves its own build to hosts that install the agent).

use crate::Options;
use crate::actions::allow;
use crate::link::state::StateDir;
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

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
    /// Register with the hub (`--hub`, `--enroll`) and exit: for install scripts, before
    /// `install` starts the service.
    Enroll(Box<Options>),
    /// Install the agent as a systemd service: copy this binary to `--binary` (unless it is
    /// already there) and write a unit that runs it.
    Install {
        /// State dir the service uses (default: the global `--state-dir`).
        #[arg(long)]
        state_dir: Option<PathBuf>,
        /// Where to write the unit.
        #[arg(long, default_value = "/etc/systemd/system")]
        unit_dir: PathBuf,
        /// Where the service's binary lives; this binary is copied there.
        #[arg(long, default_value = "/usr/local/bin/trusthub-agent")]
        binary: PathBuf,
    },
    /// Patch this host now, as an auto-patch action would: snapshot, install, verify, roll
    /// back when it does not verify (the host's actions.toml applies). Prints the commands'
    /// transcript and the outcome; exits with the patch's exit code.
    Patch {
        /// The package manager (apt), or with `--project` the ecosystem (npm, pip).
        #[arg(long)]
        manager: String,
        /// Update this project's dependencies (`update_packages`) instead of the system's.
        #[arg(long)]
        project: Option<PathBuf>,
        /// `name=version`: the package and the version to reach, one or more.
        #[arg(required = true)]
        packages: Vec<String>,
        /// State dir (snapshots are kept under it; default: the global `--state-dir`).
        #[arg(long)]
        state_dir: Option<PathBuf>,
    },
    /// Run an emergency action here now, as a hub's emergency action would (the host's
    /// actions.toml applies): kill_process, stop_unit, stop_container, lock_user, block_ip.
    /// Prints what it did; exits with the action's exit code.
    Emergency {
        /// The action.
        #[arg(long)]
        action: String,
        /// Its target: a pid, a unit, a container, a login, an address.
        #[arg(long)]
        target: String,
        /// State dir (its actions.toml; default: the global `--state-dir`).
        #[arg(long)]
        state_dir: Option<PathBuf>,
    },
    /// Print the dependencies the agent would report, one JSON object per line (as in the
    /// inventory's `app_dependencies`), then a summary per source on stderr: what
    /// `--project-path`, `--binary-path` and process discovery find on this host now.
    Dependencies {
        /// Directories to search for projects (repeatable).
        #[arg(long = "project-path")]
        project_paths: Vec<PathBuf>,
        /// Directories to search for Go binaries (repeatable; default /usr/local/bin, /opt).
        #[arg(long = "binary-path")]
        binary_paths: Vec<PathBuf>,
        /// Leave out running processes' working directories and executables.
        #[arg(long)]
        no_process_discovery: bool,
        /// Leave out trees npm, pip and gem installed machine-wide.
        #[arg(long)]
        no_system: bool,
    },
    /// Print what the agent knows: registration, spool, allowlist. Only reads: creates no
    /// directory and no key.
    Status {
        /// State dir (default: the global `--state-dir`).
        #[arg(long)]
        state_dir: Option<PathBuf>,
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

/// `trusthub-agent dependencies`: every entry on stdout, a count per source on stderr.
fn dependencies(d: &crate::collect::deps::discover::Discovery) {
    use std::io::Write as _;
    let found = crate::collect::deps::discover::dependencies(d);
    let mut per_source: std::collections::BTreeMap<String, (String, usize, Option<String>)> =
        Default::default();
    let mut out = std::io::stdout().lock();
    for e in &found {
        let _ = writeln!(out, "{e}");
        let s = per_source
            .entry(e["source"].as_str().unwrap_or_default().to_owned())
            .or_insert_with(|| (e["format"].as_str().unwrap_or_default().to_owned(), 0, None));
        match e["error"].as_str() {
            Some(err) => s.2 = Some(err.to_owned()),
            None if e.get("name").is_some() => s.1 += 1,
            // A source without packages.
            None => {}
        }
    }
    for (source, (format, n, error)) in &per_source {
        match error {
            Some(err) => eprintln!("{source} ({format}): cannot be read: {err}"),
            None => eprintln!("{source} ({format}): {n} packages"),
        }
    }
    eprintln!(
        "{} packages from {} sources",
        found.iter().filter(|e| e.get("name").is_some()).count(),
        per_source.len()
    );
}

fn status(state_dir: &std::path::Path) -> Result<(), String> {
    use std::fmt::Write as _;
    let Some(dir) = StateDir::existing(state_dir).map_err(|e| e.to_string())? else {
        return Err(format!(
            "no agent state in {} (not enrolled on this host with that --state-dir)",
            state_dir.display()
        ));
    };
    let mut out = String::new();
    let mut line = |k: &str, v: String| {
        let _ = writeln!(out, "{:<20}{v}", format!("{k}:"));
    };
    line("state dir", dir.path().display().to_string());
    match dir.registration().map_err(|e| e.to_string())? {
        Some(r) => {
            line("hub", r.hub.to_string());
            line("agent id", r.agent_id.to_string());
            line(
                "agent token",
                format!("{}…", r.agent_token.chars().take(8).collect::<String>()),
            );
            line("hub EAT key (pin)", r.hub_eat_public_key.to_string());
            line(
                "intervals",
                format!(
                    "metrics {} s, inventory {} s",
                    r.ingest_interval_secs, r.inventory_interval_secs
                ),
            );
        }
        None => line(
            "registration",
            "none (start with --hub <url> --enroll <token>)".into(),
        ),
    }
    line(
        "signing key",
        match dir.existing_signing_key().map_err(|e| e.to_string())? {
            Some(key) => data_encoding::HEXLOWER.encode(key.verifying_key().as_bytes()),
            None => "none yet (made at the first start)".into(),
        },
    );
    let certs = crate::link::mtls::Mtls::new(dir.path());
    line(
        "client certificate",
        match certs.current() {
            Some(h) => {
                let now = time::OffsetDateTime::now_utc();
                let left = (h.not_after - now).whole_days();
                let when = h
                    .not_after
                    .format(&time::format_description::well_known::Rfc3339)
                    .unwrap_or_default();
                let state = if h.not_after <= now {
                    "EXPIRED, renewed at the next start or check".to_owned()
                } else if h.due(now) {
                    format!("{left} days left, due for renewal")
                } else {
                    format!("{left} days left")
                };
                format!("serial {}, expires {when} ({state})", h.serial)
            }
            None if certs.dir().join("client.crt").exists() => {
                "unreadable or not matching client.key (a new one is requested at the next start)"
                    .into()
            }
            None => "none (requested from a hub reached over https://)".into(),
        },
    );
    if let Some(h) = certs.current() {
        line("  fingerprint", h.fingerprint_sha256);
    }
    let pending = crate::link::spool::Spool::new(dir.spool(), u64::MAX).pending();
    let bytes: u64 = pending
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    line(
        "spooled batches",
        format!("{} ({} bytes)", pending.len(), bytes),
    );
    let spool = crate::link::spool::Spool::new(dir.spool(), u64::MAX);
    let rejected = spool.rejected();
    line(
        "rejected batches",
        match rejected.last() {
            None => "none".into(),
            Some((path, why)) => format!(
                "{} in {} (newest {}: {})",
                rejected.len(),
                spool.rejected_dir().display(),
                path.file_name().unwrap_or_default().to_string_lossy(),
                why.trim()
            ),
        },
    );
    line(
        "accepted actions",
        allow::load(dir.path(), None)?.join(", "),
    );
    print_out(&out)
}

/// Registers (a key is made on first use) and says as whom.
async fn enroll(opts: &crate::Options) -> Result<(), String> {
    if opts.enroll.is_none() || opts.hub.is_none() {
        return Err("enroll needs --hub <url> and --enroll <token>".into());
    }
    let dir = StateDir::open(&opts.state_dir).map_err(|e| e.to_string())?;
    dir.signing_key().map_err(|e| e.to_string())?;
    let reg = crate::ensure_registered(opts, &dir).await?;
    print_out(&format!(
        "registered with {} as agent {}; state in {}\n",
        reg.hub,
        reg.agent_id,
        opts.state_dir.display()
    ))
}

/// Writes to stdout; a closed pipe (`| head`) ends the output quietly instead of panicking.
fn print_out(text: &str) -> Result<(), String> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(format!("stdout: {e}")),
        _ => Ok(()),
    }
}

/// Copies this binary to `binary` (unless it runs from there) and writes the unit.
fn install(
    state_dir: &std::path::Path,
    unit_dir: &std::path::Path,
    binary: &std::path::Path,
) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let same = std::fs::canonicalize(&exe).ok() == std::fs::canonicalize(binary).ok();
    if !same {
        if let Some(parent) = binary.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        // Copy beside it, then rename: a running service's binary is never half-written.
        let tmp = binary.with_extension("new");
        std::fs::copy(&exe, &tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| format!("{}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, binary).map_err(|e| format!("{}: {e}", binary.display()))?;
    }
    let path = unit_dir.join("trusthub-agent.service");
    std::fs::write(&path, crate::systemd_unit(binary, state_dir))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    print_out(&format!(
        "installed {}\nwrote {}\nnext: systemctl daemon-reload && systemctl enable --now trusthub-agent\n",
        binary.display(),
        path.display()
    ))
}

/// `trusthub-agent patch`: one `install_package` (or with a project, `update_packages`) run
/// here, its transcript and outcome.
async fn patch(
    manager: &str,
    project: Option<&std::path::Path>,
    packages: &[String],
    state_dir: &std::path::Path,
) -> ExitCode {
    let mut list = Vec::new();
    for p in packages {
        let Some((name, version)) = p.split_once('=') else {
            eprintln!("trusthub-agent: `{p}`: give name=version");
            return ExitCode::from(2);
        };
        list.push(serde_json::json!({"name": name, "version": version}));
    }
    let allowed = match crate::actions::allow::load_all(state_dir, None) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("trusthub-agent: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = std::fs::create_dir_all(state_dir) {
        eprintln!("trusthub-agent: {}: {e}", state_dir.display());
        return ExitCode::FAILURE;
    }
    let jti = format!("manual-{}", uuid::Uuid::new_v4().simple());
    let o = match project {
        Some(p) => {
            let args =
                serde_json::json!({"ecosystem": manager, "project_path": p, "packages": list});
            crate::actions::patch::update_packages(&args, &allowed, state_dir, &jti).await
        }
        None => {
            let args = serde_json::json!({"manager": manager, "packages": list});
            crate::actions::patch::install_package(&args, &allowed, state_dir, &jti).await
        }
    };
    print!("{}", o.stdout);
    eprint!("{}", o.stderr);
    println!(
        "exit code {}{}",
        o.exit_code,
        o.note.map(|n| format!(": {n}")).unwrap_or_default()
    );
    match o.exit_code {
        0 => ExitCode::SUCCESS,
        c => ExitCode::from(u8::try_from(c).ok().filter(|c| *c != 0).unwrap_or(1)),
    }
}

/// `trusthub-agent emergency`: one emergency action run here, its output and exit code.
async fn emergency(action: &str, target: &str, state_dir: &std::path::Path) -> ExitCode {
    let allowed = match crate::actions::allow::load_all(state_dir, None) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("trusthub-agent: {e}");
            return ExitCode::FAILURE;
        }
    };
    let args = serde_json::json!({"action": action, "target": target});
    // By hand on the host: the hub it is registered with, if any, is still never blocked.
    let guard = crate::actions::emergency::Guard {
        hub_url: crate::link::state::StateDir::open(state_dir)
            .ok()
            .and_then(|d| d.registration().ok().flatten())
            .map(|r| r.hub),
        console_user: None,
    };
    let crate::host::command::CommandOutcome {
        code,
        stdout: out,
        stderr: err,
    } = crate::actions::emergency::run(&args, &allowed, &guard).await;
    print!("{out}");
    eprint!("{err}");
    match code {
        0 => ExitCode::SUCCESS,
        c => ExitCode::from(u8::try_from(c).ok().filter(|c| *c != 0).unwrap_or(1)),
    }
}

/// The agent's command line: parses the arguments, runs the command, and says how it went.
pub fn main() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("trusthub-agent: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(cli())
}

async fn cli() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        // Colours only on a terminal: a log file or journal gets plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        None => crate::run(cli.opts, shutdown_signal()).await,
        Some(Command::Run(opts)) => crate::run(*opts, shutdown_signal()).await,
        Some(Command::Enroll(opts)) => enroll(&opts).await,
        Some(Command::Status { state_dir }) => status(&state_dir.unwrap_or(cli.opts.state_dir)),
        Some(Command::Dependencies {
            project_paths,
            binary_paths,
            no_process_discovery,
            no_system,
        }) => {
            dependencies(&crate::collect::deps::discover::Discovery {
                project_paths,
                binary_paths,
                processes: !no_process_discovery,
                system: !no_system,
                root: PathBuf::from("/"),
            });
            Ok(())
        }
        Some(Command::Install {
            state_dir,
            unit_dir,
            binary,
        }) => install(&state_dir.unwrap_or(cli.opts.state_dir), &unit_dir, &binary),
        Some(Command::Emergency {
            action,
            target,
            state_dir,
        }) => {
            return emergency(&action, &target, &state_dir.unwrap_or(cli.opts.state_dir)).await;
        }
        Some(Command::Patch {
            manager,
            project,
            packages,
            state_dir,
        }) => {
            return patch(
                &manager,
                project.as_deref(),
                &packages,
                &state_dir.unwrap_or(cli.opts.state_dir),
            )
            .await;
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("trusthub-agent: {e}");
            ExitCode::FAILURE
        }
    }
}
