//! `trusthub rules …`: alert rules.

use super::*;

/// `trusthub rules …`.
#[derive(Debug, clap::Subcommand)]
pub enum RulesCmd {
    /// Alert rules with their last evaluation.
    Ls,
    /// Add a rule: the average of --metric over --window compared with --threshold.
    Add {
        /// Its name.
        #[arg(long)]
        name: String,
        /// A metric name (`cpu.percent`).
        #[arg(long)]
        metric: String,
        /// `>`, `>=`, `<`, `<=`, `==`, `!=`.
        #[arg(long, allow_hyphen_values = true)]
        operator: String,
        /// The value compared with.
        #[arg(long, allow_hyphen_values = true)]
        threshold: f64,
        /// `5m`, `1h`, …
        #[arg(long, default_value = "5m")]
        window: String,
        /// info, warning, critical.
        #[arg(long)]
        severity: Option<String>,
    },
    /// Delete a rule.
    Rm {
        /// Rule id.
        id: String,
    },
}

pub(crate) const RULES: &[Column] = &[
    ("id", "/id"),
    ("name", "/name"),
    ("metric", "/metric"),
    ("operator", "/operator"),
    ("threshold", "/threshold"),
    ("window", "/window"),
    ("severity", "/severity"),
];
/// `trusthub rules …`.
pub async fn rules(cmd: RulesCmd, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    match cmd {
        RulesCmd::Ls => print(&c.get("/alert-rules").await?, RULES, g.output),
        RulesCmd::Add {
            name,
            metric,
            operator,
            threshold,
            window,
            severity,
        } => {
            let mut body = json!({"name": name, "metric": metric, "operator": operator,
                "threshold": threshold, "window": window});
            if let Some(s) = severity {
                body["severity"] = json!(s);
            }
            print(
                &c.json(Method::POST, "/alert-rules", &body).await?,
                RULES,
                g.output,
            )
        }
        RulesCmd::Rm { id: r } => {
            delete(
                &c,
                &format!("/alert-rules/{}", id(&r)?),
                format!("deleted rule {r}"),
            )
            .await
        }
    }
}
