//! The identity's (sessions) settings (CONTRACT 11): flags and environment variables of
//! `trusthub serve`, read with the rest of its command line.

/// What this capability reads from the command line and the environment.
#[derive(Debug, Clone, clap::Args)]
#[group(id = "identity-settings")]
pub struct Settings {
    /// Lifetime of a login session in seconds (default 7 days).
    #[arg(long, env = "TRUSTHUB_SESSION_TTL_SECS", default_value_t = 7 * 24 * 3600)]
    pub session_ttl_secs: i64,
}

/// This capability's settings within the hub's.
pub fn of(settings: &trusthub_platform::settings::Settings) -> std::sync::Arc<Settings> {
    settings.of::<Settings>()
}
