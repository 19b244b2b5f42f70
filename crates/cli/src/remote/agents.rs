//! `trusthub agents …`.

use super::*;

/// `trusthub agents …`.
#[derive(Debug, clap::Subcommand)]
pub enum AgentsCmd {
    /// The fleet: status, last seen, version, tags.
    Ls(Watch),
    /// One agent.
    Get {
        /// Agent id or hostname.
        id: String,
    },
    /// Delete an agent (admin): its data goes, its certificate is revoked.
    Rm {
        /// Agent id or hostname.
        id: String,
    },
    /// Give an agent a new token (admin); the new token is shown once.
    RotateToken {
        /// Agent id or hostname.
        id: String,
    },
    /// Stop something on a host now (admin; asks for a TOTP code) and wait for its answer.
    Emergency {
        /// Agent id or hostname.
        id: String,
        /// kill_process, stop_unit, stop_container, lock_user or block_ip.
        #[arg(long, value_parser = ["kill_process", "stop_unit", "stop_container", "lock_user", "block_ip"])]
        action: String,
        /// A pid, a unit, a container, a login name or an IP address.
        #[arg(long)]
        target: String,
        /// Why (kept in the audit log and the signed action).
        #[arg(long)]
        reason: String,
        /// The TOTP code; asked for when not given.
        #[arg(long)]
        totp: Option<String>,
    },
}

pub(crate) const AGENTS: &[Column] = &[
    ("id", "/id"),
    ("hostname", "/hostname"),
    ("status", "/status"),
    ("last seen", "/last_seen_at"),
    ("version", "/agent_version"),
    ("tags", "/tags"),
];
/// `trusthub agents …`.
pub async fn agents(cmd: AgentsCmd, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    match cmd {
        AgentsCmd::Ls(w) => list(&c, "/agents", AGENTS, g, w.watch).await,
        AgentsCmd::Get { id: a } => print(
            &c.get(&format!("/agents/{}", named(&c, &a, AGENT).await?))
                .await?,
            AGENTS,
            g.output,
        ),
        AgentsCmd::Rm { id: a } => {
            delete(
                &c,
                &format!("/agents/{}", named(&c, &a, AGENT).await?),
                format!("deleted agent {a}"),
            )
            .await
        }
        AgentsCmd::Emergency {
            id: a,
            action,
            target,
            reason,
            totp,
        } => {
            let path = format!("/agents/{}/emergency", named(&c, &a, AGENT).await?);
            let body = json!({"action": action, "target": target, "reason": reason});
            let v = with_totp(
                &c,
                Method::POST,
                &path,
                Some(&body),
                totp,
                "agent_emergency",
            )
            .await?;
            let jti = v["jti"].as_str().unwrap_or_default().to_owned();
            eprintln!("dispatched {jti}; waiting for the host's answer…");
            finished(&c, &jti, g).await
        }
        AgentsCmd::RotateToken { id: a } => {
            let v = c
                .send(c.request(
                    Method::POST,
                    &format!("/agents/{}/rotate-token", named(&c, &a, AGENT).await?),
                ))
                .await?;
            print(
                &v,
                &[("agent", "/agent_id"), ("token", "/agent_token")],
                g.output,
            )
        }
    }
}
