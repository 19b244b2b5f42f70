//! The monitors' (liveness, hub checks, alert rules) settings (CONTRACT 11): flags and environment variables of
//! `trusthub serve`, read with the rest of its command line.

/// What this capability reads from the command line and the environment.
#[derive(Debug, Clone, clap::Args)]
#[group(id = "monitors-settings")]
pub struct Settings {
    /// Seconds between liveness checks of tracked apps (60).
    #[arg(long, env = "TRUSTHUB_LIVENESS_INTERVAL_SECS", default_value_t = 60)]
    pub liveness_interval_secs: u64,
    /// Seconds between looks for due hub checks (each check runs at its own
    /// interval, this is how soon a due one starts).
    #[arg(long, env = "TRUSTHUB_PROBE_TICK_SECS", default_value_t = 1)]
    pub probe_tick_secs: u64,
    /// Seconds between alert-rule evaluations (30).
    #[arg(long, env = "TRUSTHUB_RULE_EVAL_INTERVAL_SECS", default_value_t = 30)]
    pub rule_eval_interval_secs: u64,
    /// Days HTTP check results are kept.
    #[arg(long, env = "TRUSTHUB_APP_CHECK_RETENTION_DAYS", default_value_t = 30)]
    pub app_check_retention_days: i64,
}

/// This capability's settings within the hub's.
pub fn of(settings: &trusthub_platform::settings::Settings) -> std::sync::Arc<Settings> {
    settings.of::<Settings>()
}
