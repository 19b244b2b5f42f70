//! `trusthub autopatch …` (CONTRACT 19, 28): a host's auto-patch settings, its attempts, a
//! run now. TOTP is asked for when the hub needs it (turning patching on, a run).

use super::{AGENT, Global, Watch, client, list, named, print, with_totp};
use crate::remote::client::Failure;
use reqwest::Method;
use serde_json::json;

/// `on` or `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Switch {
    /// Turned on (asks for a TOTP code).
    On,
    /// Turned off.
    Off,
}

/// `trusthub autopatch …`.
#[derive(Debug, clap::Subcommand)]
pub enum AutopatchCmd {
    /// A host's auto-patch settings.
    Get {
        /// Agent id or hostname.
        agent: String,
    },
    /// Change a host's settings (admin); turning a flag on asks for a TOTP code.
    Set {
        /// Agent id or hostname.
        agent: String,
        /// Patch OS packages (apt, dnf, apk, zypper).
        #[arg(long, value_enum)]
        os_packages: Option<Switch>,
        /// Patch application dependencies (npm, pip, composer, bundler, go).
        #[arg(long, value_enum)]
        app_deps: Option<Switch>,
        /// CRITICAL or HIGH.
        #[arg(long, value_parser = ["CRITICAL", "HIGH"])]
        min_severity: Option<String>,
        /// The TOTP code; asked for when needed and not given.
        #[arg(long)]
        totp: Option<String>,
    },
    /// Run one cycle for a host now (admin; asks for a TOTP code).
    Run {
        /// Agent id or hostname.
        agent: String,
        /// The TOTP code; asked for when not given.
        #[arg(long)]
        totp: Option<String>,
    },
    /// A host's attempts, newest first, and what the host answered.
    Runs {
        /// Agent id or hostname.
        agent: String,
        #[command(flatten)]
        watch: Watch,
    },
}

const SETTINGS: &[super::Column] = &[
    ("agent", "/agent_id"),
    ("os packages", "/os_packages"),
    ("app deps", "/app_deps"),
    ("min severity", "/min_severity"),
    ("enabled at", "/enabled_at"),
    ("last run", "/last_run_at"),
];
const ATTEMPTS: &[super::Column] = &[
    ("action", "/eat_nonce"),
    ("sent", "/created_at"),
    ("manager", "/manager"),
    ("package", "/packages/0/name"),
    ("from", "/packages/0/from"),
    ("to", "/packages/0/to"),
    ("status", "/status"),
    ("note", "/note"),
];

/// `trusthub autopatch …`.
pub async fn autopatch(cmd: AutopatchCmd, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    match cmd {
        AutopatchCmd::Get { agent } => print(
            &c.get(&format!(
                "/agents/{}/auto-patch",
                named(&c, &agent, AGENT).await?
            ))
            .await?,
            SETTINGS,
            g.output,
        ),
        AutopatchCmd::Set {
            agent,
            os_packages,
            app_deps,
            min_severity,
            totp,
        } => {
            let mut body = json!({});
            if let Some(s) = os_packages {
                body["os_packages"] = json!(s == Switch::On);
            }
            if let Some(s) = app_deps {
                body["app_deps"] = json!(s == Switch::On);
            }
            if let Some(m) = min_severity {
                body["min_severity"] = json!(m);
            }
            if body.as_object().is_some_and(|o| o.is_empty()) {
                return Err(Failure {
                    code: 2,
                    message: "nothing to change: give --os-packages, --app-deps or --min-severity"
                        .into(),
                });
            }
            let path = format!("/agents/{}/auto-patch", named(&c, &agent, AGENT).await?);
            let v = with_totp(
                &c,
                Method::PATCH,
                &path,
                Some(&body),
                totp,
                "agent_auto_patch",
            )
            .await?;
            print(&v, SETTINGS, g.output)
        }
        AutopatchCmd::Run { agent, totp } => {
            let path = format!("/agents/{}/auto-patch/run", named(&c, &agent, AGENT).await?);
            let v = with_totp(&c, Method::POST, &path, None, totp, "agent_auto_patch").await?;
            if v.as_array().is_some_and(Vec::is_empty) {
                eprintln!(
                    "nothing to send now (no patchable finding, or the host is not connected)"
                );
            }
            print(&v, ATTEMPTS, g.output)
        }
        AutopatchCmd::Runs { agent, watch } => {
            let path = format!(
                "/agents/{}/auto-patch/runs",
                named(&c, &agent, AGENT).await?
            );
            list(&c, &path, ATTEMPTS, g, watch.watch).await
        }
    }
}
