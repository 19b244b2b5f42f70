//! The fleet's (metric retention, the agent download) settings (CONTRACT 11): flags and environment variables of
//! `trusthub serve`, read with the rest of its command line.

/// What this capability reads from the command line and the environment.
#[derive(Debug, Clone, clap::Args)]
#[group(id = "fleet-settings")]
pub struct Settings {
    /// Hours raw metric points are kept; averaged queries over whole minutes and hours are
    /// served from rollups after that (expired rows are deleted every minute, a minute's worth
    /// at a time).
    #[arg(long, env = "TRUSTHUB_METRICS_RAW_RETENTION_HOURS", default_value_t = 7 * 24)]
    pub metrics_raw_retention_hours: i64,
    /// Days per-minute rollups are kept (per-hour rollups are kept for good).
    #[arg(
        long,
        env = "TRUSTHUB_METRICS_MINUTE_RETENTION_DAYS",
        default_value_t = 30
    )]
    pub metrics_minute_retention_days: i64,
    /// The agent binary served at `/downloads/trusthub-agent-linux-<arch>` to hosts that
    /// install the agent; default: `trusthub-agent` beside this binary, else
    /// this binary itself (it runs as the agent when installed under that name).
    #[arg(long, env = "TRUSTHUB_AGENT_BINARY")]
    pub agent_binary: Option<std::path::PathBuf>,
}

/// This capability's settings within the hub's.
pub fn of(settings: &trusthub_platform::settings::Settings) -> std::sync::Arc<Settings> {
    settings.of::<Settings>()
}
