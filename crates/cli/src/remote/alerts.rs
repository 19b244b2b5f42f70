//! `trusthub alerts …`.

use super::*;

/// `trusthub alerts …`.
#[derive(Debug, clap::Subcommand)]
pub enum AlertsCmd {
    /// Alerts, newest first.
    Ls {
        /// Only unresolved ones.
        #[arg(long)]
        open: bool,
        /// At least this severity: info, warning, critical.
        #[arg(long)]
        severity: Option<String>,
        /// Only hosts with this tag (`env:prod`).
        #[arg(long)]
        tag: Option<String>,
        #[command(flatten)]
        watch: Watch,
    },
    /// Resolve an alert (operator).
    Resolve {
        /// Alert id.
        id: String,
    },
}

pub(crate) const ALERTS: &[Column] = &[
    ("id", "/id"),
    ("severity", "/severity"),
    ("title", "/title"),
    ("host", "/agent"),
    ("created", "/created_at"),
    ("resolved", "/resolved_at"),
];
/// `trusthub alerts …`.
pub async fn alerts(cmd: AlertsCmd, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    match cmd {
        AlertsCmd::Ls {
            open,
            severity,
            tag,
            watch,
        } => {
            let path = with_query(
                "/alerts",
                &[
                    ("is_resolved", open.then(|| "false".to_owned())),
                    ("severity", severity),
                    ("tag", tag),
                ],
            );
            list(&c, &path, ALERTS, g, watch.watch).await
        }
        AlertsCmd::Resolve { id: a } => {
            let v = c
                .send(c.request(Method::PATCH, &format!("/alerts/{}/resolve", id(&a)?)))
                .await?;
            print(&v, ALERTS, g.output)
        }
    }
}
