//! The vulnerabilities' (CVE scans, the OSV pull, the maintainer tracking) settings (CONTRACT 11): flags and environment variables of
//! `trusthub serve`, read with the rest of its command line.

/// What this capability reads from the command line and the environment.
#[derive(Debug, Clone, clap::Args)]
#[group(id = "vulns-settings")]
pub struct Settings {
    /// Seconds after which every host is scanned again for vulnerabilities (3600); a host whose inventory changed, and every host after an import, sooner.
    #[arg(long, env = "TRUSTHUB_CVE_SCAN_INTERVAL_SECS", default_value_t = 3600)]
    pub cve_scan_interval_secs: u64,
    /// Seconds between checks for hosts due a scan (a changed inventory, an import).
    #[arg(
        long,
        env = "TRUSTHUB_CVE_SCAN_CHECK_SECS",
        default_value_t = 5,
        hide = true
    )]
    pub cve_scan_check_secs: u64,
    /// New findings at or above this severity raise an alert per host and scan (HIGH):
    /// CRITICAL, HIGH, MEDIUM, LOW or UNKNOWN.
    #[arg(long, env = "TRUSTHUB_CVE_ALERT_MIN_SEVERITY", default_value = "HIGH", value_parser = trusthub_platform::settings::parse_severity)]
    pub cve_alert_min_severity: String,
    /// A base URL in the OSV bucket's layout (`<Ecosystem>/all.zip`,
    /// `<Ecosystem>/modified_id.csv`, `<Ecosystem>/<ID>.json`; e.g.
    /// `https://osv-vulnerabilities.storage.googleapis.com`) pulled daily into the hub-wide
    /// advisory data; unset: no pull.
    #[arg(long, env = "TRUSTHUB_OSV_URL")]
    pub osv_url: Option<String>,
    /// The ecosystems (folders of the bucket) the pull reads, comma-separated.
    #[arg(
        long,
        env = "TRUSTHUB_OSV_ECOSYSTEMS",
        default_value = "npm,PyPI,Packagist,RubyGems,Go,Debian,Ubuntu,Alpine,AlmaLinux,Rocky Linux,Red Hat"
    )]
    pub osv_ecosystems: String,
    /// Seconds between two pulls of an ecosystem (daily).
    #[arg(
        long,
        env = "TRUSTHUB_OSV_PULL_INTERVAL_SECS",
        default_value_t = 86_400,
        hide = true
    )]
    pub osv_pull_interval_secs: u64,
    /// Seconds between checks for ecosystems due a pull.
    #[arg(
        long,
        env = "TRUSTHUB_OSV_PULL_CHECK_SECS",
        default_value_t = 3600,
        hide = true
    )]
    pub osv_pull_check_secs: u64,
    /// The npm registry whose packuments tell who maintains the tenants' npm dependencies.
    #[arg(
        long,
        env = "TRUSTHUB_NPM_REGISTRY",
        default_value = "https://registry.npmjs.org"
    )]
    pub npm_registry: String,
    /// Seconds between two reads of one package's packument (86400).
    #[arg(
        long,
        env = "TRUSTHUB_SUPPLY_CHAIN_INTERVAL_SECS",
        default_value_t = 86_400
    )]
    pub supply_chain_interval_secs: u64,
    /// At most this many registry requests per minute (polite polling).
    #[arg(
        long,
        env = "TRUSTHUB_NPM_REGISTRY_REQUESTS_PER_MINUTE",
        default_value_t = 60
    )]
    pub npm_registry_requests_per_minute: u64,
    /// Seconds between passes of the maintainer tracking (packages due are read then).
    #[arg(
        long,
        env = "TRUSTHUB_SUPPLY_CHAIN_CHECK_SECS",
        default_value_t = 60,
        hide = true
    )]
    pub supply_chain_check_secs: u64,
}

/// This capability's settings within the hub's.
pub fn of(settings: &trusthub_platform::settings::Settings) -> std::sync::Arc<Settings> {
    settings.of::<Settings>()
}
