//! The auto-patch worker's settings (CONTRACT 11): flags and environment variables of
//! `trusthub serve`, read with the rest of its command line.

/// What this capability reads from the command line and the environment.
#[derive(Debug, Clone, clap::Args)]
#[group(id = "autopatch-settings")]
pub struct Settings {
    /// Seconds after the start before the first auto-patch cycle (120).
    #[arg(long, env = "TRUSTHUB_AUTOPATCH_WARMUP_SECS", default_value_t = 120)]
    pub autopatch_warmup_secs: u64,
    /// Seconds between auto-patch cycles (1800).
    #[arg(long, env = "TRUSTHUB_AUTOPATCH_CYCLE_SECS", default_value_t = 1800)]
    pub autopatch_cycle_secs: u64,
    /// Seconds that must pass between two auto-patch runs of one host (1500).
    #[arg(long, env = "TRUSTHUB_AUTOPATCH_MIN_GAP_SECS", default_value_t = 1500)]
    pub autopatch_min_gap_secs: u64,
}

/// This capability's settings within the hub's.
pub fn of(settings: &trusthub_platform::settings::Settings) -> std::sync::Arc<Settings> {
    settings.of::<Settings>()
}
