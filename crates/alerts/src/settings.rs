//! The webhook deliveries' settings (CONTRACT 11): flags and environment variables of
//! `trusthub serve`, read with the rest of its command line.

/// What this capability reads from the command line and the environment.
#[derive(Debug, Clone, clap::Args)]
#[group(id = "alerts-settings")]
pub struct Settings {
    /// Waits before each webhook retry (`10s,60s,5m`).
    #[arg(long, env = "TRUSTHUB_WEBHOOK_RETRY_SCHEDULE", default_value = "10s,60s,5m", value_parser = trusthub_platform::settings::parse_schedule)]
    pub webhook_retry_schedule: trusthub_platform::settings::Schedule,
    /// Seconds an endpoint rests after a delivery failed for good (600).
    #[arg(long, env = "TRUSTHUB_WEBHOOK_COOLDOWN_SECS", default_value_t = 600)]
    pub webhook_cooldown_secs: u64,
    /// Seconds a webhook attempt may take, connecting and answering together.
    #[arg(long, env = "TRUSTHUB_WEBHOOK_TIMEOUT_SECS", default_value_t = 10)]
    pub webhook_timeout_secs: u64,
}

/// This capability's settings within the hub's.
pub fn of(settings: &trusthub_platform::settings::Settings) -> std::sync::Arc<Settings> {
    settings.of::<Settings>()
}
