//! `trusthub drift …` (CONTRACT 20, 28): watched configuration files that are not as in
//! their baseline, and the rebase that adopts their current state with a reason.

use super::{AGENT, Global, Watch, client, list, named, print};
use crate::remote::client::Failure;
use reqwest::Method;
use serde_json::json;

/// `trusthub drift …`.
#[derive(Debug, clap::Subcommand)]
pub enum DriftCmd {
    /// Watched files across hosts (default: those not `ok`), or one host's with `--agent`.
    Ls {
        /// Only this host.
        #[arg(long)]
        agent: Option<String>,
        /// Only this state; `all` lists every watched file.
        #[arg(long, value_parser = ["drifted", "missing", "new", "ok", "all"])]
        status: Option<String>,
        #[command(flatten)]
        watch: Watch,
    },
    /// Adopt the current state of files as their new baseline (operator), with a reason.
    Rebase {
        /// Agent id or hostname.
        agent: String,
        /// A watched, reported path (repeatable).
        #[arg(long = "path", required = true)]
        paths: Vec<String>,
        /// Why (kept with the rebase and in the transparency log).
        #[arg(long)]
        reason: String,
    },
}

const FILES: &[super::Column] = &[
    ("host", "/agent_id"),
    ("path", "/path"),
    ("status", "/status"),
    ("explained by", "/explained_by/package"),
    ("to version", "/explained_by/to_version"),
    ("baseline sha256", "/baseline/sha256"),
    ("current sha256", "/current/sha256"),
    ("changed", "/changed_at"),
];
const REBASED: &[super::Column] = &[
    ("rebase", "/rebase_id"),
    ("host", "/agent_id"),
    ("path", "/paths/0/path"),
    ("paths", "/paths"),
    ("by", "/by/email"),
    ("reason", "/reason"),
    ("at", "/at"),
];

/// `trusthub drift …`.
pub async fn drift(cmd: DriftCmd, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    match cmd {
        DriftCmd::Ls {
            agent,
            status,
            watch,
        } => {
            let mut query = Vec::new();
            if let Some(a) = agent {
                query.push(format!("agent_id={}", named(&c, &a, AGENT).await?));
            }
            match status.as_deref() {
                Some("all") => {}
                Some(s) => query.push(format!("status={s}")),
                None => {}
            }
            let path = if query.is_empty() {
                "/drift".to_owned()
            } else {
                format!("/drift?{}", query.join("&"))
            };
            if status.is_none() && !watch.watch {
                // The default: what needs a look (everything but `ok`).
                let v = c.get(&path).await?;
                let keep: Vec<_> = v
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|r| r["status"] != "ok")
                    .cloned()
                    .collect();
                let mut keep = serde_json::Value::Array(keep);
                if matches!(g.output, super::Format::Table) {
                    super::for_people(&c, &mut keep).await;
                }
                return print(&keep, FILES, g.output);
            }
            list(&c, &path, FILES, g, watch.watch).await
        }
        DriftCmd::Rebase {
            agent,
            paths,
            reason,
        } => {
            let path = format!(
                "/agents/{}/config-hashes/rebase",
                named(&c, &agent, AGENT).await?
            );
            let v = c
                .json(
                    Method::POST,
                    &path,
                    &json!({"paths": paths, "reason": reason}),
                )
                .await?;
            print(&v, REBASED, g.output)
        }
    }
}
