//! The cloud discovery's settings (CONTRACT 11): flags and environment variables of
//! `trusthub serve`, read with the rest of its command line.

/// What this capability reads from the command line and the environment.
#[derive(Debug, Clone, clap::Args)]
#[group(id = "cloud-settings")]
pub struct Settings {
    /// Seconds between the discovery runs of each cloud account (3600).
    #[arg(
        long,
        env = "TRUSTHUB_CLOUD_DISCOVER_INTERVAL_SECS",
        default_value_t = 3600
    )]
    pub cloud_discover_interval_secs: u64,
}

/// This capability's settings within the hub's.
pub fn of(settings: &trusthub_platform::settings::Settings) -> std::sync::Arc<Settings> {
    settings.of::<Settings>()
}
