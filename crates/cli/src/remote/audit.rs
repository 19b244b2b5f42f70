//! `trusthub audit …`.

use super::*;

/// `trusthub audit …`.
#[derive(Debug, clap::Subcommand)]
pub enum AuditCmd {
    /// The audit log, newest first (admin).
    Ls {
        /// Only this event type (`login_succeeded`).
        #[arg(long)]
        event: Option<String>,
        /// How many rows (1 to 1000).
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
}

pub(crate) const AUDIT: &[Column] = &[
    ("when", "/created_at"),
    ("event", "/event_type"),
    ("who", "/actor_name"),
    ("subject", "/subject_name"),
    ("raw subject", "/subject"),
];
/// `trusthub audit …`.
pub async fn audit(cmd: AuditCmd, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    match cmd {
        AuditCmd::Ls { event, limit } => {
            let path = with_query(
                "/audit-log",
                &[("limit", Some(limit.to_string())), ("event_type", event)],
            );
            print(&c.get(&path).await?, AUDIT, g.output)
        }
    }
}
