//! `trusthub slo …`.

use super::*;

/// `trusthub slo …`.
#[derive(Debug, clap::Subcommand)]
pub enum SloCmd {
    /// An app's SLO: uptime, budget left, burn rates.
    Get {
        /// App id or name.
        app: String,
    },
    /// Set (or replace) an app's SLO.
    Set {
        /// App id or name.
        app: String,
        /// The target, e.g. 0.999.
        #[arg(long)]
        target: f64,
        /// The rolling window in days.
        #[arg(long, default_value_t = 30)]
        window_days: u32,
    },
    /// One CSV row per UTC day (RFC 4180).
    History {
        /// App id or name.
        app: String,
        /// How many days back.
        #[arg(long, default_value_t = 30)]
        days: u32,
    },
}

pub(crate) const SLO: &[Column] = &[
    ("app", "/app_name"),
    ("target", "/target"),
    ("state", "/state"),
    ("uptime %", "/uptime_percent"),
    ("budget left (min)", "/budget_remaining_minutes"),
];
/// `trusthub slo …`.
pub async fn slo(cmd: SloCmd, g: &Global) -> Result<(), Failure> {
    let c = client(g)?;
    match cmd {
        SloCmd::Get { app } => print(
            &c.get(&format!("/apps/{}/slo", named(&c, &app, APP).await?))
                .await?,
            SLO,
            g.output,
        ),
        SloCmd::Set {
            app,
            target,
            window_days,
        } => {
            let v = c
                .json(
                    Method::POST,
                    &format!("/apps/{}/slo", named(&c, &app, APP).await?),
                    &json!({"target": target, "window_days": window_days}),
                )
                .await?;
            print(&v, SLO, g.output)
        }
        SloCmd::History { app, days } => {
            let csv = c
                .bytes(&format!(
                    "/apps/{}/slo/history?days={days}",
                    named(&c, &app, APP).await?
                ))
                .await?;
            std::io::stdout()
                .write_all(&csv)
                .map_err(|e| Failure::error(format!("stdout: {e}")))
        }
    }
}
