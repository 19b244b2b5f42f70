//! The topology's settings (CONTRACT 11): flags and environment variables of
//! `trusthub serve`, read with the rest of its command line.

/// What this capability reads from the command line and the environment.
#[derive(Debug, Clone, clap::Args)]
#[group(id = "topology-settings")]
pub struct Settings {
    /// Most topology nodes a tenant holds (50,000), and four times as many edges (422 past
    /// it; CONTRACT 30).
    #[arg(long, env = "TRUSTHUB_TOPOLOGY_MAX_NODES", default_value_t = 50_000,
        value_parser = clap::value_parser!(u32).range(1..=10_000_000))]
    pub topology_max_nodes: u32,
}

/// This capability's settings within the hub's.
pub fn of(settings: &trusthub_platform::settings::Settings) -> std::sync::Arc<Settings> {
    settings.of::<Settings>()
}
