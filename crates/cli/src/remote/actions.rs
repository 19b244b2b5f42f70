//! `trusthub actions …`: signed actions and waiting for their outcome.

use super::*;

/// `trusthub actions …`.
#[derive(Debug, clap::Subcommand)]
pub enum ActionsCmd {
    /// Signed actions sent to hosts (restarts, patches), newest first.
    Ls {
        /// Only this agent's.
        #[arg(long)]
        agent: Option<String>,
        /// How many rows (1 to 500).
        #[arg(long, default_value_t = 50)]
        limit: u32,
        #[command(flatten)]
        watch: Watch,
    },
    /// One action and what the host answered.
    Get {
        /// The action's id (its token's jti).
        jti: String,
    },
}

pub(crate) const ACTIONS: &[Column] = &[
    ("action", "/jti"),
    ("act", "/act"),
    ("host", "/agent_id"),
    ("status", "/status"),
    ("exit", "/exit_code"),
    ("requested", "/created_at"),
    ("reason", "/reason"),
];

/// Follows an action until the host answers or its token expires, prints it (with the host's
/// output on a table), and fails unless it succeeded.
pub(crate) async fn finished(c: &Client, jti: &str, g: &Global) -> Result<(), Failure> {
    let path = format!("/actions/{}", encode(jti));
    let action = loop {
        let a = c.get(&path).await?;
        if a["status"] != "dispatched" {
            break a;
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    };
    print(&action, ACTIONS, g.output)?;
    if g.output == Format::Table {
        for (name, stream) in [("stdout", "/stdout"), ("stderr", "/stderr")] {
            if let Some(t) = action.pointer(stream).and_then(Value::as_str)
                && !t.is_empty()
            {
                eprintln!("--- {name}\n{}", t.trim_end());
            }
        }
    }
    match action["status"].as_str() {
        Some("succeeded") => Ok(()),
        Some("refused") => Err(Failure {
            code: 4,
            message: format!(
                "the host refused it: {}",
                action["refused_reason"]
                    .as_str()
                    .unwrap_or("no reason given")
            ),
        }),
        other => Err(Failure::error(format!(
            "the action {} (exit code {})",
            other.unwrap_or("failed"),
            action["exit_code"]
        ))),
    }
}

/// `trusthub actions …`.
pub async fn actions(cmd: ActionsCmd, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    match cmd {
        ActionsCmd::Ls {
            agent,
            limit,
            watch,
        } => {
            let agent = named_opt(&c, agent, AGENT).await?;
            let path = with_query(
                "/actions",
                &[("agent_id", agent), ("limit", Some(limit.to_string()))],
            );
            list(&c, &path, ACTIONS, g, watch.watch).await
        }
        ActionsCmd::Get { jti } => print(
            &c.get(&format!("/actions/{}", encode(&jti))).await?,
            ACTIONS,
            g.output,
        ),
    }
}
