//! The remote write's settings (CONTRACT 11): flags and environment variables of
//! `trusthub serve`, read with the rest of its command line.

/// What this capability reads from the command line and the environment.
#[derive(Debug, Clone, clap::Args)]
#[group(id = "remotewrite-settings")]
pub struct Settings {
    /// Prometheus remote-write 1.0 receivers (comma-separated URLs; VictoriaMetrics,
    /// Prometheus, Mimir, Thanos) every stored sample is sent to, at least once, from a
    /// position kept in the database (CONTRACT 26). Basic auth from a URL's userinfo.
    #[arg(
        long = "remote-write-url",
        env = "TRUSTHUB_REMOTE_WRITE_URL",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub remote_write_urls: Vec<String>,
    /// Bearer token sent to remote-write receivers whose URL has no userinfo.
    #[arg(long, env = "TRUSTHUB_REMOTE_WRITE_BEARER", hide_env_values = true)]
    pub remote_write_bearer: Option<String>,
    /// A Prometheus-compatible query API (its root, e.g. `http://vm:8428`; basic auth from
    /// the userinfo) the agent metrics API and the dashboard charts read ranges from, so the
    /// hub's raw retention can be short (CONTRACT 26).
    #[arg(long, env = "TRUSTHUB_METRICS_QUERY_URL", hide_env_values = true)]
    pub metrics_query_url: Option<String>,
}

/// This capability's settings within the hub's.
pub fn of(settings: &trusthub_platform::settings::Settings) -> std::sync::Arc<Settings> {
    settings.of::<Settings>()
}
