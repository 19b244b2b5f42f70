//! The SLOs' settings (CONTRACT 11): flags and environment variables of
//! `trusthub serve`, read with the rest of its command line.

/// What this capability reads from the command line and the environment.
#[derive(Debug, Clone, clap::Args)]
#[group(id = "slo-settings")]
pub struct Settings {
    /// Seconds between evaluations of the SLO burn alerts (60).
    #[arg(long, env = "TRUSTHUB_SLO_EVAL_INTERVAL_SECS", default_value_t = 60)]
    pub slo_eval_interval_secs: u64,
}

/// This capability's settings within the hub's.
pub fn of(settings: &trusthub_platform::settings::Settings) -> std::sync::Arc<Settings> {
    settings.of::<Settings>()
}
