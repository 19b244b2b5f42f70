//! `trusthub webhooks …`.

use super::*;

/// `trusthub webhooks …`.
#[derive(Debug, clap::Subcommand)]
pub enum WebhooksCmd {
    /// Signed webhook endpoints (admin).
    Ls,
    /// Add an endpoint; its secret is shown once.
    Add {
        /// Where deliveries go.
        #[arg(long)]
        url: String,
        /// The lowest severity sent: info, warning, critical.
        #[arg(long)]
        min_severity: Option<String>,
    },
    /// Delete an endpoint.
    Rm {
        /// Webhook id.
        id: String,
    },
}

pub(crate) const WEBHOOKS: &[Column] = &[
    ("id", "/id"),
    ("url", "/url"),
    ("min severity", "/min_severity"),
    ("secret", "/secret"),
];
/// `trusthub webhooks …`.
pub async fn webhooks(cmd: WebhooksCmd, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    match cmd {
        WebhooksCmd::Ls => print(&c.get("/webhooks").await?, WEBHOOKS, g.output),
        WebhooksCmd::Add { url, min_severity } => {
            let mut body = json!({"url": url});
            if let Some(s) = min_severity {
                body["min_severity"] = json!(s);
            }
            print(
                &c.json(Method::POST, "/webhooks", &body).await?,
                WEBHOOKS,
                g.output,
            )
        }
        WebhooksCmd::Rm { id: w } => {
            delete(
                &c,
                &format!("/webhooks/{}", id(&w)?),
                format!("deleted webhook {w}"),
            )
            .await
        }
    }
}
