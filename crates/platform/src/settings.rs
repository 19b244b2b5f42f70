//! Settings of `trusthub serve`: every one a flag and an environment variable (CONTRACT 11),
//! with the SPEC section 8 values as defaults.

use std::net::SocketAddr;
use std::path::PathBuf;

/// Where the database is; shared by `serve` and the `admin` commands.
#[derive(Debug, Clone, clap::Args)]
pub struct DbSettings {
    /// Holds the SQLite database, keys and packs.
    #[arg(long, env = "TRUSTHUB_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
    /// `sqlite://...` or `postgres://...`; default the SQLite file in the data dir.
    #[arg(long, env = "TRUSTHUB_DATABASE_URL")]
    pub database_url: Option<String>,
    /// Connections of the database pool.
    #[arg(long, env = "TRUSTHUB_DB_MAX_CONNECTIONS", default_value_t = 10)]
    pub db_max_connections: u32,
}

impl DbSettings {
    /// The database URL to use.
    pub fn url(&self) -> String {
        match &self.database_url {
            Some(u) => u.clone(),
            None => format!("sqlite://{}", self.data_dir.join("trusthub.db").display()),
        }
    }

    /// Whether the URL names PostgreSQL.
    pub fn is_postgres(&self) -> bool {
        self.url().starts_with("postgres")
    }
}

/// Settings of the hub server.
#[derive(Debug, Clone, clap::Parser)]
#[command(name = "trusthub serve", about = "Run the Trusthub hub")]
pub struct Settings {
    /// Address to listen on.
    #[arg(long, env = "TRUSTHUB_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Database location.
    #[command(flatten)]
    pub db: DbSettings,
    /// PEM certificate chain for the TLS front; with `--tls-key` the hub speaks HTTPS only.
    #[arg(long, env = "TRUSTHUB_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key for the TLS front.
    #[arg(long, env = "TRUSTHUB_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Serve HTTPS with a server certificate the hub CA issues for itself at each start
    /// (localhost, 127.0.0.1, ::1, the listen address and the `--public-url` host; 90 days); the
    /// CA is written to `<data-dir>/hub-ca.pem` for browsers, curl and agents to trust. For a
    /// first try of mTLS without buying a certificate.
    #[arg(long, env = "TRUSTHUB_TLS_SELF", conflicts_with_all = ["tls_cert", "tls_key"],
        value_parser = clap::builder::BoolishValueParser::new(),
        action = clap::ArgAction::Set, num_args = 0..=1, require_equals = true,
        default_value = "false", default_missing_value = "true")]
    pub tls_self: bool,
    /// Client certificates at the TLS front: `auto` requests one signed by the hub CA without
    /// requiring it (agents roll out certificates gradually); `off` requests none.
    #[arg(long, env = "TRUSTHUB_TLS_CLIENT_CA", default_value = "auto", value_parser = ["auto", "off"])]
    pub tls_client_ca: String,
    /// A reverse proxy (CIDR, repeatable or comma-separated) that terminates TLS and may send
    /// `X-Service-Client-Subject` / `X-Service-Client-Verified`; from anyone else they are
    /// stripped.
    #[arg(
        long = "trusted-proxy",
        env = "TRUSTHUB_TRUSTED_PROXY",
        value_delimiter = ','
    )]
    pub trusted_proxies: Vec<String>,
    /// 64 hex characters; seals secrets at rest. Generated into the data dir when absent on
    /// SQLite; required with PostgreSQL (every hub process needs the same key).
    #[arg(
        long = "encryption-key",
        env = "CLOUD_ENCRYPTION_KEY",
        hide_env_values = true
    )]
    pub encryption_key: Option<String>,
    /// Email of the first owner, created on an empty database.
    #[arg(
        long,
        env = "TRUSTHUB_ADMIN_EMAIL",
        default_value = "admin@trusthub.local"
    )]
    pub admin_email: String,
    /// Password of the first owner; generated, printed once and written to
    /// `<data_dir>/initial-admin.txt` when absent.
    #[arg(long, env = "TRUSTHUB_ADMIN_PASSWORD", hide_env_values = true)]
    pub admin_password: Option<String>,
    /// Rate limits of SPEC section 8; `off` turns them off (load tests only).
    #[arg(long, env = "TRUSTHUB_RATE_LIMITS", default_value = "on", value_parser = parse_switch)]
    pub rate_limits: String,
    /// `smtp://host:port` (add `?tls=required` for STARTTLS) for invitation and reset mail.
    #[arg(long, env = "TRUSTHUB_SMTP_URL", hide_env_values = true)]
    pub smtp_url: Option<String>,
    /// Sender of mail.
    #[arg(
        long,
        env = "TRUSTHUB_SMTP_FROM",
        default_value = "Trusthub <trusthub@trusthub.local>"
    )]
    pub smtp_from: String,
    /// The URL people reach the hub at, for links in mail; default `http://<listen>`.
    #[arg(long, env = "TRUSTHUB_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// The agent binary served at `/downloads/trusthub-agent-linux-<arch>` to hosts that
    /// install the agent; default: `trusthub-agent` beside this binary, else
    /// this binary itself (it runs as the agent when installed under that name).
    #[arg(long, env = "TRUSTHUB_AGENT_BINARY")]
    pub agent_binary: Option<PathBuf>,
    /// Largest request body accepted, in bytes (8 MiB).
    #[arg(long, env = "TRUSTHUB_BODY_LIMIT_BYTES", default_value_t = 8 * 1024 * 1024)]
    pub body_limit_bytes: usize,
    /// Connections open at once; the next ones wait.
    #[arg(long, env = "TRUSTHUB_MAX_CONNECTIONS", default_value_t = 10_000)]
    pub max_connections: usize,
    /// Decompressed bytes one import may read in all (uploads, `TRUSTHUB_OSV_URL`, the CLI);
    /// each JSON record is bounded to 64 MiB besides.
    #[arg(long, env = "TRUSTHUB_IMPORT_MAX_BYTES", default_value_t = crate::archive::DEFAULT_TOTAL_BYTES)]
    pub import_max_bytes: u64,
    /// Lifetime of a login session in seconds (default 7 days).
    #[arg(long, env = "TRUSTHUB_SESSION_TTL_SECS", default_value_t = 7 * 24 * 3600)]
    pub session_ttl_secs: i64,
    /// Hours raw metric points are kept; averaged queries over whole minutes and hours are
    /// served from rollups after that.
    #[arg(long, env = "TRUSTHUB_METRICS_RAW_RETENTION_HOURS", default_value_t = 7 * 24)]
    pub metrics_raw_retention_hours: i64,
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
    /// Days per-minute rollups are kept (per-hour rollups are kept for good).
    #[arg(
        long,
        env = "TRUSTHUB_METRICS_MINUTE_RETENTION_DAYS",
        default_value_t = 30
    )]
    pub metrics_minute_retention_days: i64,
    /// Seconds in-flight requests get to finish after SIGTERM.
    #[arg(long, env = "TRUSTHUB_SHUTDOWN_GRACE_SECS", default_value_t = 30)]
    pub shutdown_grace_secs: u64,
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
    /// Seconds between evaluations of the SLO burn alerts (60).
    #[arg(long, env = "TRUSTHUB_SLO_EVAL_INTERVAL_SECS", default_value_t = 60)]
    pub slo_eval_interval_secs: u64,
    /// Seconds between the discovery runs of each cloud account (3600).
    #[arg(
        long,
        env = "TRUSTHUB_CLOUD_DISCOVER_INTERVAL_SECS",
        default_value_t = 3600
    )]
    pub cloud_discover_interval_secs: u64,
    /// Most topology nodes a tenant holds (50,000), and four times as many edges (422 past
    /// it; CONTRACT 30).
    #[arg(long, env = "TRUSTHUB_TOPOLOGY_MAX_NODES", default_value_t = 50_000,
        value_parser = clap::value_parser!(u32).range(1..=10_000_000))]
    pub topology_max_nodes: u32,
    /// A console session without input this long ends (900).
    #[arg(long, env = "TRUSTHUB_CONSOLE_IDLE_SECS", default_value_t = 900)]
    pub console_idle_secs: u64,
    /// A console session ends after this long whatever happens (3600).
    #[arg(long, env = "TRUSTHUB_CONSOLE_MAX_SECS", default_value_t = 3600)]
    pub console_max_secs: u64,
    /// Record what the operator types too (`"i"` events), not only what the host shows.
    #[arg(long, env = "TRUSTHUB_CONSOLE_RECORD_INPUT",
        value_parser = clap::builder::BoolishValueParser::new(),
        action = clap::ArgAction::Set, num_args = 0..=1, require_equals = true,
        default_value = "false", default_missing_value = "true")]
    pub console_record_input: bool,
    /// Where console recordings are written (default `<data dir>/console`).
    #[arg(long, env = "TRUSTHUB_CONSOLE_RECORDING_DIR")]
    pub console_recording_dir: Option<std::path::PathBuf>,
    /// Seconds after which every host is scanned again for vulnerabilities (3600); a host whose inventory changed, and every host after an import, sooner.
    #[arg(long, env = "TRUSTHUB_CVE_SCAN_INTERVAL_SECS", default_value_t = 3600)]
    pub cve_scan_interval_secs: u64,
    /// Seconds between checks for hosts due a scan (a changed inventory, an import).
    #[arg(
        long,
        env = "TRUSTHUB_CVE_SCAN_CHECK_SECS",
        default_value_t = 30,
        hide = true
    )]
    pub cve_scan_check_secs: u64,
    /// New findings at or above this severity raise an alert per host and scan (HIGH):
    /// CRITICAL, HIGH, MEDIUM, LOW or UNKNOWN.
    #[arg(long, env = "TRUSTHUB_CVE_ALERT_MIN_SEVERITY", default_value = "HIGH", value_parser = parse_severity)]
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
    /// Seconds after the start before the first auto-patch cycle (120).
    #[arg(long, env = "TRUSTHUB_AUTOPATCH_WARMUP_SECS", default_value_t = 120)]
    pub autopatch_warmup_secs: u64,
    /// Seconds between auto-patch cycles (1800).
    #[arg(long, env = "TRUSTHUB_AUTOPATCH_CYCLE_SECS", default_value_t = 1800)]
    pub autopatch_cycle_secs: u64,
    /// Seconds that must pass between two auto-patch runs of one host (1500).
    #[arg(long, env = "TRUSTHUB_AUTOPATCH_MIN_GAP_SECS", default_value_t = 1500)]
    pub autopatch_min_gap_secs: u64,
    /// Waits before each webhook retry (`10s,60s,5m`).
    #[arg(long, env = "TRUSTHUB_WEBHOOK_RETRY_SCHEDULE", default_value = "10s,60s,5m", value_parser = parse_schedule)]
    pub webhook_retry_schedule: Schedule,
    /// Seconds an endpoint rests after a delivery failed for good (600).
    #[arg(long, env = "TRUSTHUB_WEBHOOK_COOLDOWN_SECS", default_value_t = 600)]
    pub webhook_cooldown_secs: u64,
    /// Seconds a webhook attempt may take, connecting and answering together.
    #[arg(long, env = "TRUSTHUB_WEBHOOK_TIMEOUT_SECS", default_value_t = 10)]
    pub webhook_timeout_secs: u64,
    /// Address ranges the hub's own outbound calls may reach besides public addresses
    /// (webhooks, alert-rule webhook URLs, TRUSTHUB_OSV_URL, the npm registry): comma-separated
    /// CIDRs, e.g. `127.0.0.0/8` for a receiver on this machine.
    #[arg(long, env = "TRUSTHUB_OUTBOUND_ALLOW_CIDRS", default_value = "", value_parser = parse_allow_cidrs)]
    pub outbound_allow_cidrs: String,
    /// Days HTTP check results are kept.
    #[arg(long, env = "TRUSTHUB_APP_CHECK_RETENTION_DAYS", default_value_t = 30)]
    pub app_check_retention_days: i64,
    /// A JSON price file applied over the shipped LLM prices for every tenant (see
    /// `GET /ai/prices`); tenants' own overrides go on top.
    #[arg(long, env = "TRUSTHUB_AI_PRICES_FILE")]
    pub ai_prices_file: Option<PathBuf>,
    /// Where evidence packs are kept (default `<data-dir>/evidence`). Several hub processes
    /// on one PostgreSQL database must share it (a network file system), as they share the
    /// database.
    #[arg(long, env = "TRUSTHUB_EVIDENCE_DIR")]
    pub evidence_dir: Option<PathBuf>,
    /// Days an evidence pack is kept on disk (at least 12 months; lower values are
    /// refused at start).
    #[arg(long, env = "TRUSTHUB_EVIDENCE_RETENTION_DAYS", default_value_t = 400)]
    pub evidence_retention_days: i64,
    /// Size of the hub CA's RSA key, made at the first start (4096; 2048 to 8192). Only the
    /// first start reads it: the CA is kept in the database afterwards.
    #[arg(long, env = "TRUSTHUB_CA_KEY_BITS", default_value_t = 4096)]
    pub ca_key_bits: usize,
    /// Days an agent's client certificate is valid (1 to 825). Agents renew within 30 days of
    /// the end.
    #[arg(long, env = "TRUSTHUB_CLIENT_CERT_DAYS", default_value_t = 365)]
    pub client_cert_days: i64,
    /// An OpenAI-compatible chat-completions API for `/ai/explain` (Ollama, llama.cpp, vLLM),
    /// as its base ending in `/v1` (e.g. `http://127.0.0.1:11434/v1`); the hub posts the
    /// redacted log line to `<url>/chat/completions`. Unset: the built-in rules explain.
    #[arg(long, env = "TRUSTHUB_LLM_URL", value_parser = parse_llm_url)]
    pub llm_url: Option<String>,
    /// The model `/ai/explain` asks for.
    #[arg(long, env = "TRUSTHUB_LLM_MODEL", default_value = "llama3.2")]
    pub llm_model: String,
    /// `/ai/explain` calls per minute per user or token (429 with `Retry-After` past it).
    #[arg(long, env = "TRUSTHUB_EXPLAIN_RATE", default_value_t = 20,
        value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub explain_rate: u32,
    /// A bearer token for the LLM API, when it wants one.
    #[arg(long, env = "TRUSTHUB_LLM_API_KEY", hide_env_values = true)]
    pub llm_api_key: Option<String>,
}

/// A switch as every boolean setting takes it (CONTRACT 30): `1 0 true false yes no on off`
/// (any case), answered as `on` or `off`.
pub fn parse_switch(s: &str) -> Result<String, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok("on".into()),
        "0" | "false" | "no" | "off" => Ok("off".into()),
        other => Err(format!(
            "`{other}` is not a switch: use one of 1 0 true false yes no on off"
        )),
    }
}

fn parse_llm_url(s: &str) -> Result<String, String> {
    let u = reqwest::Url::parse(s).map_err(|e| format!("`{s}` is not a URL: {e}"))?;
    if !matches!(u.scheme(), "http" | "https") || u.host_str().is_none() {
        return Err(format!("`{s}`: an http(s) URL is needed"));
    }
    if !u.path().trim_end_matches('/').ends_with("/v1") || u.query().is_some() {
        return Err(format!(
            "`{s}`: give the API's base ending in /v1 (e.g. http://127.0.0.1:11434/v1)"
        ));
    }
    Ok(s.trim_end_matches('/').to_owned())
}

/// A webhook retry schedule: the wait before each retry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule(pub Vec<std::time::Duration>);

fn parse_severity(s: &str) -> Result<String, String> {
    trusthub_core::severity::Severity::parse(s)
        .map(|v| v.as_str().to_owned())
        .ok_or_else(|| format!("`{s}`: use CRITICAL, HIGH, MEDIUM, LOW or UNKNOWN"))
}

fn parse_schedule(s: &str) -> Result<Schedule, String> {
    trusthub_core::webhook::parse_schedule(s)
        .map(Schedule)
        .ok_or_else(|| "expected durations like 10s,60s,5m".to_owned())
}

impl Settings {
    /// Whether rate limits apply (off only when set to `off`).
    pub fn rate_limits_enabled(&self) -> bool {
        self.rate_limits != "off"
    }

    /// Where evidence packs are kept.
    pub fn evidence_dir(&self) -> PathBuf {
        self.evidence_dir
            .clone()
            .unwrap_or_else(|| self.db.data_dir.join("evidence"))
    }

    /// Whether the hub serves HTTPS.
    pub fn tls_enabled(&self) -> bool {
        (self.tls_cert.is_some() && self.tls_key.is_some()) || self.tls_self
    }

    /// Base URL for links in mail, without a trailing slash.
    pub fn public_url(&self, bound: SocketAddr) -> String {
        match &self.public_url {
            Some(u) => u.trim_end_matches('/').to_owned(),
            None if self.tls_enabled() => format!("https://{bound}"),
            None => format!("http://{bound}"),
        }
    }

    /// Defaults with the given data dir, as if no flag and no environment were given.
    pub fn with_data_dir(data_dir: PathBuf) -> Settings {
        Settings {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            db: DbSettings {
                data_dir,
                database_url: None,
                db_max_connections: 10,
            },
            tls_cert: None,
            tls_key: None,
            encryption_key: None,
            admin_email: "admin@trusthub.local".into(),
            admin_password: None,
            rate_limits: "on".into(),
            smtp_url: None,
            smtp_from: "Trusthub <trusthub@trusthub.local>".into(),
            public_url: None,
            agent_binary: None,
            body_limit_bytes: 8 * 1024 * 1024,
            max_connections: 10_000,
            import_max_bytes: crate::archive::DEFAULT_TOTAL_BYTES,
            session_ttl_secs: 7 * 24 * 3600,
            shutdown_grace_secs: 30,
            liveness_interval_secs: 60,
            probe_tick_secs: 1,
            rule_eval_interval_secs: 30,
            slo_eval_interval_secs: 60,
            cloud_discover_interval_secs: 3600,
            topology_max_nodes: 50_000,
            console_idle_secs: 900,
            console_max_secs: 3600,
            console_record_input: false,
            console_recording_dir: None,
            cve_scan_interval_secs: 3600,
            cve_scan_check_secs: 30,
            cve_alert_min_severity: "HIGH".into(),
            osv_url: None,
            osv_ecosystems:
                "npm,PyPI,Packagist,RubyGems,Go,Debian,Ubuntu,Alpine,AlmaLinux,Rocky Linux,Red Hat"
                    .into(),
            osv_pull_interval_secs: 86_400,
            osv_pull_check_secs: 3600,
            npm_registry: "https://registry.npmjs.org".into(),
            supply_chain_interval_secs: 86_400,
            npm_registry_requests_per_minute: 60,
            supply_chain_check_secs: 60,
            autopatch_warmup_secs: 120,
            autopatch_cycle_secs: 1800,
            autopatch_min_gap_secs: 1500,
            webhook_retry_schedule: Schedule(vec![
                std::time::Duration::from_secs(10),
                std::time::Duration::from_secs(60),
                std::time::Duration::from_secs(300),
            ]),
            webhook_cooldown_secs: 600,
            webhook_timeout_secs: 10,
            outbound_allow_cidrs: String::new(),
            app_check_retention_days: 30,
            ai_prices_file: None,
            evidence_dir: None,
            evidence_retention_days: 400,
            ca_key_bits: 4096,
            tls_client_ca: "auto".into(),
            tls_self: false,
            trusted_proxies: Vec::new(),
            client_cert_days: 365,
            llm_url: None,
            llm_model: "llama3.2".into(),
            explain_rate: 20,
            llm_api_key: None,
            metrics_raw_retention_hours: 7 * 24,
            metrics_minute_retention_days: 30,
            remote_write_urls: Vec::new(),
            remote_write_bearer: None,
            metrics_query_url: None,
        }
    }
}

fn parse_allow_cidrs(s: &str) -> Result<String, String> {
    crate::outbound::parse_cidrs(s).map(|_| s.to_owned())
}

impl crate::outbound::Policy {
    /// The policy of these settings (`TRUSTHUB_OUTBOUND_ALLOW_CIDRS`, checked at start).
    pub fn of(settings: &Settings) -> crate::outbound::Policy {
        crate::outbound::Policy::allowing(
            crate::outbound::parse_cidrs(&settings.outbound_allow_cidrs).unwrap_or_default(),
        )
    }
}

#[cfg(test)]
mod switch_tests {
    use super::*;
    use clap::Parser;

    /// CONTRACT 30: every boolean setting takes `1 0 true false yes no on off`, as a flag's
    /// value and as `TRUSTHUB_RATE_LIMITS`; anything else is refused by name.
    #[test]
    fn boolean_settings_take_every_usual_spelling() {
        for (word, on) in [
            ("1", true),
            ("0", false),
            ("true", true),
            ("false", false),
            ("yes", true),
            ("no", false),
            ("on", true),
            ("off", false),
            ("ON", true),
        ] {
            let s = Settings::try_parse_from([
                "hub".to_owned(),
                format!("--console-record-input={word}"),
                format!("--rate-limits={word}"),
            ])
            .unwrap_or_else(|e| panic!("{word}: {e}"));
            assert_eq!(s.console_record_input, on, "{word}");
            assert_eq!(s.rate_limits_enabled(), on, "{word}");
        }
        assert!(Settings::try_parse_from(["hub", "--rate-limits=maybe"]).is_err());
        assert!(Settings::try_parse_from(["hub", "--console-record-input=maybe"]).is_err());
        assert!(
            Settings::try_parse_from(["hub", "--console-record-input"])
                .expect("a bare flag")
                .console_record_input
        );
    }
}
